/* cmd_stats.c — cairn stats: the credit standings of GET /v1/stats as
 * tables (no admin token needed); cairn stats export: the XML statistics
 * for statistics sites, made by the master (POST /v1/stats/export) or from
 * a database file (--db, server/store/xmlstats.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/termsafe.h"
#include "server/store/xmlstats.h"

static const char usage_text[] =
  "usage: cairn stats [--limit N] [--page P] [--json]\n"
  "The credit standings (GET /v1/stats; no admin token needed): the volunteers\n"
  "and teams with the most credit (top N of each, default 100, at most 1000;\n"
  "--page P: those ranked (P-1)*N+1 to P*N, within the top 1000), and the\n"
  "project's totals. Credit is CPU seconds agreed by the validator\n"
  "(docs/accountability.md, \"Credit\"). --json prints the answer as is.\n"
  "cairn stats export: the XML statistics for statistics sites (--help there).";

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

static const char export_usage[] =
  "usage: cairn stats export [--no-wait] [--timeout S]\n"
  "       cairn stats export --db PATH [--out DIR]\n"
  "The XML statistics for statistics sites (BOINC's format: tables.xml, user.gz,\n"
  "team.gz, host.gz; docs/project.md, \"Statistics exports\"). Without --db, asks\n"
  "the master for an export now (POST /v1/stats/export, admin token) and waits\n"
  "until it ended (at most S seconds, default 600; --no-wait: not at all); the\n"
  "master serves the files at /stats/. With --db, makes them from the database\n"
  "file PATH, read-only, beside a running master or not, into DIR (default\n"
  "PATH.stats, the master's own folder).";

static void print_export(long long n, long long users, long long teams, long long hosts,
                         double credit, double seconds, const char *dir) {
  printf("export %lld: %lld users, %lld teams, %lld hosts, total credit %.2f, in %.3f s "
         "(%s)\n", n, users, teams, hosts, credit, seconds, dir);
}

/* --db PATH [--out DIR]: the export, here. */
static int export_offline(const char *db, const char *out) {
  char dflt[4200];
  if (!out) {
    snprintf(dflt, sizeof dflt, "%s.stats", db);
    out = dflt;
  }
  cairn__xmlstats_summary s;
  cairn_error err = {0};
  if (cairn__xmlstats_export(db, out, NULL, &s, &err) != CAIRN_OK)
    return cairn__cli_fail("stats export: %s", err.text);
  print_export(1, (long long)s.users, (long long)s.teams, (long long)s.hosts, s.total_credit,
               s.seconds, out);
  return 0;
}

/* Waits until the master's export n ended (GET /v1/stats/export every
 * 0.2 s, at most timeout seconds) and prints how it went. */
static int export_wait(cairn__http *h, long long n, double timeout) {
  struct timespec t0, now, nap = {0, 200000000L};
  clock_gettime(CLOCK_MONOTONIC, &t0);
  for (;;) {
    json_t *r = NULL;
    if (cairn__client_json(h, "GET", "/v1/stats/export", NULL, &r, 0) != 200)
      return 1;
    json_t *last = json_object_get(r, "last"), *e = json_object_get(r, "error");
    long long ended = json_integer_value(json_object_get(r, "exports"));
    long long ok = json_integer_value(json_object_get(last, "export"));
    int rc = -1;
    if (ended >= n && ok >= n) {
      print_export(ok, json_integer_value(json_object_get(last, "users")),
                   json_integer_value(json_object_get(last, "teams")),
                   json_integer_value(json_object_get(last, "hosts")),
                   json_number_value(json_object_get(last, "total_credit")),
                   json_number_value(json_object_get(last, "seconds")),
                   json_string_value(json_object_get(r, "folder")));
      rc = 0;
    } else if (ended >= n) {
      rc = cairn__cli_fail("stats export %lld failed: %s", n,
                           json_string_value(json_object_get(e, "message")));
    }
    json_decref(r);
    if (rc >= 0)
      return rc;
    clock_gettime(CLOCK_MONOTONIC, &now);
    if ((double)(now.tv_sec - t0.tv_sec) + (double)(now.tv_nsec - t0.tv_nsec) / 1e9 > timeout)
      return cairn__cli_fail("stats export %lld has not ended after %.0f s (it goes on at the "
                             "master: GET /v1/stats/export)", n, timeout);
    nanosleep(&nap, NULL);
  }
}

static int cmd_export(int argc, char **argv) {
  cairn__client_opts o = {0};
  if (cairn__cli_wants_help(argc, argv)) {
    puts(export_usage);
    return 0;
  }
  int offline = 0; /* --db: no master, no token */
  for (int i = 1; i < argc; i++)
    offline |= strcmp(argv[i], "--db") == 0;
  if (!offline && cairn__client_parse(&argc, argv, &o))
    return 1;
  const char *db = NULL, *out = NULL;
  int wait = 1;
  double timeout = 600;
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      db = argv[++i];
    else if (strcmp(argv[i], "--out") == 0 && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--no-wait") == 0)
      wait = 0;
    else if (strcmp(argv[i], "--timeout") == 0 && i + 1 < argc &&
             (timeout = strtod(argv[++i], &end)) > 0 && timeout <= 86400 && end && !*end)
      continue;
    else
      return cairn__cli_fail("usage: cairn stats export [--no-wait] [--timeout S (1 to 86400)] "
                             "| --db PATH [--out DIR]");
  }
  if (out && !db)
    return cairn__cli_fail("stats export: --out goes with --db (the master writes into its "
                           "own folder, --stats-dir)");
  if (db)
    return export_offline(db, out);
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  json_t *r = NULL;
  long st = cairn__client_json(h, "POST", "/v1/stats/export", "{}", &r, 0);
  long long n = json_integer_value(json_object_get(r, "export"));
  json_decref(r);
  int rc = st == 202 ? 0 : 1;
  if (rc == 0 && !wait)
    printf("export %lld asked\n", n);
  else if (rc == 0)
    rc = export_wait(h, n, timeout);
  cairn__http_delete(h);
  return rc;
}

int cairn__cmd_stats(int argc, char **argv) {
  cairn__client_opts o = {0};
  long limit = 100, page = 1;
  int json = 0;
  if (argc >= 2 && strcmp(argv[1], "export") == 0)
    return cmd_export(argc - 1, argv + 1);
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
