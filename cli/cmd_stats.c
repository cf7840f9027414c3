/* cmd_stats.c — cairn stats: the credit standings of GET /v1/stats as
 * tables (no admin token needed). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/termsafe.h"

static const char usage_text[] =
  "usage: cairn stats [--limit N] [--page P] [--json]\n"
  "The credit standings (GET /v1/stats; no admin token needed): the volunteers\n"
  "and teams with the most credit (top N of each, default 100, at most 1000;\n"
  "--page P: those ranked (P-1)*N+1 to P*N, within the top 1000), and the\n"
  "project's totals. Credit is CPU seconds agreed by the validator\n"
  "(docs/accountability.md, \"Credit\"). --json prints the answer as is.";

static void print_tables(json_t *resp) {
  size_t i;
  json_t *v;
  char name[CAIRN_TERMSAFE_NAME], team[CAIRN_TERMSAFE_NAME];
  printf("%-5s %-6s %-20s %-20s %14s %14s %8s\n", "RANK", "ID", "NAME", "TEAM", "CREDIT",
         "CPU_SECONDS", "RESULTS");
  json_array_foreach(json_object_get(resp, "volunteers"), i, v) {
    const char *t = json_string_value(json_object_get(v, "team"));
    printf("%-5lld %-6lld %-20s %-20s %14.2f %14.2f %8lld\n",
           (long long)json_integer_value(json_object_get(v, "rank")),
           (long long)json_integer_value(json_object_get(v, "id")),
           cairn__termsafe(json_string_value(json_object_get(v, "name")), name, sizeof name),
           t ? cairn__termsafe(t, team, sizeof team) : "-",
           json_number_value(json_object_get(v, "credit")),
           json_number_value(json_object_get(v, "cpu_seconds")),
           (long long)json_integer_value(json_object_get(v, "results")));
  }
  printf("\n%-5s %-27s %8s %14s %14s %8s\n", "RANK", "TEAM", "MEMBERS", "CREDIT", "CPU_SECONDS",
         "RESULTS");
  json_array_foreach(json_object_get(resp, "teams"), i, v) {
    printf("%-5lld %-27s %8lld %14.2f %14.2f %8lld\n",
           (long long)json_integer_value(json_object_get(v, "rank")),
           cairn__termsafe(json_string_value(json_object_get(v, "team")), team, sizeof team),
           (long long)json_integer_value(json_object_get(v, "members")),
           json_number_value(json_object_get(v, "credit")),
           json_number_value(json_object_get(v, "cpu_seconds")),
           (long long)json_integer_value(json_object_get(v, "results")));
  }
  json_t *t = json_object_get(resp, "total");
  printf("\nTOTAL %lld volunteers, %lld teams, credit %.2f, CPU seconds %.2f, %lld results\n",
         (long long)json_integer_value(json_object_get(t, "volunteers")),
         (long long)json_integer_value(json_object_get(t, "teams")),
         json_number_value(json_object_get(t, "credit")),
         json_number_value(json_object_get(t, "cpu_seconds")),
         (long long)json_integer_value(json_object_get(t, "results")));
}

int cairn__cmd_stats(int argc, char **argv) {
  cairn__client_opts o = {0};
  long limit = 100, page = 1;
  int json = 0;
  if (cairn__cli_wants_help(argc, argv)) {
    puts(usage_text);
    return 0;
  }
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (strcmp(argv[i], "--json") == 0)
      json = 1;
    else if (strcmp(argv[i], "--limit") == 0 && i + 1 < argc &&
             (limit = strtol(argv[++i], &end, 10)) >= 1 && limit <= 1000 && end && !*end)
      continue;
    else if (strcmp(argv[i], "--page") == 0 && i + 1 < argc &&
             (page = strtol(argv[++i], &end, 10)) >= 1 && page <= 1000 && end && !*end)
      continue;
    else
      return cairn__cli_fail("usage: cairn stats [--limit N] [--page P] [--json] (N from 1 to "
                            "1000, (P-1)*N below 1000)");
  }
  if ((page - 1) * limit >= 1000)
    return cairn__cli_fail("cairn stats: --page %ld of %ld lies past the top 1000", page, limit);
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[64];
  if (page > 1)
    snprintf(path, sizeof path, "/v1/stats?limit=%ld&page=%ld", limit, page);
  else
    snprintf(path, sizeof path, "/v1/stats?limit=%ld", limit);
  json_t *resp = NULL;
  long st = cairn__client_json(h, "GET", path, NULL, &resp, 0);
  int rc = st == 200 ? 0 : 1;
  if (st == 200 && json) {
    char *text = json_dumps(resp, JSON_INDENT(2));
    if (text)
      puts(text);
    free(text);
  } else if (st == 200)
    print_tables(resp);
  json_decref(resp);
  cairn__http_delete(h);
  return rc;
}

int cairn__cmd_team_volunteer(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  char *end = NULL;
  long long id = argc == 3 && argv[1][0] >= '1' && argv[1][0] <= '9' ? strtoll(argv[1], &end, 10)
                                                                     : 0;
  if (id <= 0 || !end || *end)
    return cairn__cli_fail("usage: cairn team V NAME | cairn team V --none");
  int none = strcmp(argv[2], "--none") == 0;
  json_t *body = json_pack("{s:o}", "team", none ? json_null() : json_string(argv[2]));
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (!text) /* not UTF-8, or out of memory */
    return cairn__cli_fail("team \"%s\" is not a valid name", argv[2]);
  cairn__http *h = cairn__client_connect(&o);
  if (!h) {
    free(text);
    return 1;
  }
  char path[64], name[CAIRN_TERMSAFE_NAME];
  snprintf(path, sizeof path, "/v1/volunteers/%lld", id);
  json_t *r = NULL;
  long st = cairn__client_json(h, "PATCH", path, text, &r, 0);
  free(text);
  if (st == 200) {
    const char *t = json_string_value(json_object_get(r, "team"));
    if (t)
      printf("volunteer %lld is in team %s\n", id, cairn__termsafe(t, name, sizeof name));
    else
      printf("volunteer %lld is in no team\n", id);
  }
  json_decref(r);
  cairn__http_delete(h);
  return st == 200 ? 0 : 1;
}
