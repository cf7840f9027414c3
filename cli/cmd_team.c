/* cmd_team.c — `cairn team`: teams of accounts (docs/protocol.md, "Teams
 * of accounts"; docs/accountability.md): create one, join or leave one,
 * rename one, show one, each with the account's key; and, with a
 * volunteer's id first, a volunteer's own team of the ledger (cmd_stats.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/termsafe.h"

static const char usage[] =
  "usage: cairn team create NAME [--description TEXT] [--url URL] [--country C] KEY\n"
  "       cairn team join ACCOUNT TEAM KEY\n"
  "       cairn team leave ACCOUNT KEY\n"
  "       cairn team rename TEAM NAME [--description TEXT] [--url URL] [--country C] KEY\n"
  "       cairn team show TEAM\n"
  "       cairn team V NAME | cairn team V --none\n"
  "where KEY is --account-key KEY or --account-key-file PATH (the account's key).\n"
  "Teams of accounts: create makes a team (its founder's account joins it) and\n"
  "prints its id; join and leave move account ACCOUNT into team TEAM or out of\n"
  "its team (its hosts' credit counts for the team from then on; what they earned\n"
  "before stays where it was); rename changes a team's name (or its description,\n"
  "url, country), its founder only; show prints a team, its credit and its\n"
  "members with the most credit (no key needed).\n"
  "A volunteer's own team (no account): cairn team V NAME moves volunteer V to\n"
  "team NAME (1 to 64 printable ASCII characters, without quotes or backslashes)\n"
  "or out of any (--none), with the admin token or the volunteer's own token\n"
  "(--token); a host of an account takes its account's team instead.";

/* A team as GET /v1/teams/{id} answers it, on stdout. */
static void print_team(json_t *t) {
  char name[CAIRN_TERMSAFE_NAME], text[CAIRN_TERMSAFE_NAME];
  json_t *f = json_object_get(t, "founder");
  printf("team %lld: %s\n", (long long)json_integer_value(json_object_get(t, "id")),
         cairn__termsafe(json_string_value(json_object_get(t, "name")), name, sizeof name));
  printf("founder: account %lld (%s)\n", (long long)json_integer_value(json_object_get(f, "id")),
         cairn__termsafe(json_string_value(json_object_get(f, "name")), text, sizeof text));
  const char *keys[] = {"description", "url", "country"};
  for (int i = 0; i < 3; i++) {
    const char *v = json_string_value(json_object_get(t, keys[i]));
    if (v && *v)
      printf("%s: %s\n", keys[i], cairn__termsafe(v, text, sizeof text));
  }
  printf("%lld members, credit %.2f, recent average %.2f a day\n",
         (long long)json_integer_value(json_object_get(t, "members")),
         json_number_value(json_object_get(t, "credit")),
         json_number_value(json_object_get(t, "expavg_credit")));
  printf("%-8s %-32s %14s %14s\n", "ACCOUNT", "NAME", "CREDIT", "RECENT/DAY");
  json_t *m;
  size_t i;
  json_array_foreach(json_object_get(t, "members_top"), i, m) {
    printf("%-8lld %-32s %14.2f %14.2f\n", (long long)json_integer_value(json_object_get(m, "id")),
           cairn__termsafe(json_string_value(json_object_get(m, "name")), name, sizeof name),
           json_number_value(json_object_get(m, "credit")),
           json_number_value(json_object_get(m, "expavg_credit")));
  }
}

/* s as a positive id, or 0 after printing that it is not one of what. */
static long long id_of(const char *s, const char *what) {
  char *end = NULL;
  long long id = s[0] >= '1' && s[0] <= '9' ? strtoll(s, &end, 10) : 0;
  if (id > 0 && end && !*end)
    return id;
  cairn__cli_fail("\"%s\" is not %s id", s, what);
  return 0;
}

/* The body of create and rename: name (NULL: none) and the options given;
 * its JSON text (malloc'd), or NULL after printing why. */
static char *team_body(const char *name, const char *description, const char *url,
                       const char *country) {
  json_t *b = json_object();
  const char *keys[] = {"name", "description", "url", "country"};
  const char *vals[] = {name, description, url, country};
  for (int i = 0; b && i < 4; i++)
    if (vals[i] && json_object_set_new(b, keys[i], json_string(vals[i]))) {
      cairn__cli_fail("%s \"%s\" is not UTF-8 text", keys[i], vals[i]);
      json_decref(b);
      return NULL;
    }
  char *text = b ? json_dumps(b, JSON_COMPACT) : NULL;
  json_decref(b);
  return text;
}

/* Sends method path body (taken) with h; on 200/201 prints the team (GET
 * /v1/teams/{id} after a create) or the account's team. Exit status. */
static int send(cairn__http *h, const char *method, const char *path, char *body) {
  json_t *r = NULL;
  long st = body ? cairn__client_json(h, method, path, body, &r, 0) : 0;
  free(body);
  int ok = st == 200 || st == 201;
  if (ok && !strcmp(path, "/v1/teams")) { /* created: show it */
    long long id = (long long)json_integer_value(json_object_get(r, "id"));
    printf("%lld\n", id);
    fprintf(stderr, "team %lld made; your account is its founder and in it\n", id);
  } else if (ok && !strncmp(path, "/v1/teams/", 10))
    print_team(r);
  else if (ok) {
    char name[CAIRN_TERMSAFE_NAME];
    json_t *t = json_object_get(r, "team");
    if (json_is_object(t))
      printf("account %lld is in team %lld (%s)\n",
             (long long)json_integer_value(json_object_get(r, "id")),
             (long long)json_integer_value(json_object_get(t, "id")),
             cairn__termsafe(json_string_value(json_object_get(t, "name")), name, sizeof name));
    else
      printf("account %lld is in no team\n",
             (long long)json_integer_value(json_object_get(r, "id")));
  }
  json_decref(r);
  return ok ? 0 : 1;
}

int cairn__cmd_team(int argc, char **argv) {
  if (argc < 2 || cairn__cli_wants_help(argc, argv)) {
    puts(usage);
    return argc < 2;
  }
  const char *sub = argv[1];
  int create = !strcmp(sub, "create"), join = !strcmp(sub, "join"), leave = !strcmp(sub, "leave"),
      rename = !strcmp(sub, "rename"), show = !strcmp(sub, "show");
  if (!create && !join && !leave && !rename && !show)
    return cairn__cmd_team_volunteer(argc, argv); /* cairn team V NAME */
  const char *desc = cairn__cli_take_opt(&argc, argv, "--description");
  const char *url = cairn__cli_take_opt(&argc, argv, "--url");
  const char *country = cairn__cli_take_opt(&argc, argv, "--country");
  const char *key = NULL;
  char keybuf[256], path[64];
  cairn__client_opts o = {0};
  if (cairn__cli_account_key(&argc, argv, keybuf, sizeof keybuf, &key) ||
      cairn__client_parse(&argc, argv, &o))
    return 1;
  int want = create || leave || show ? 3 : 4;
  if (argc != want || ((desc || url || country) && !create && !rename))
    return cairn__cli_fail("usage: cairn team create NAME | join ACCOUNT TEAM | leave ACCOUNT | "
                           "rename TEAM NAME | show TEAM (cairn team --help)");
  if (!show && !key)
    return cairn__cli_fail("%s needs the account's key: --account-key KEY or "
                           "--account-key-file PATH", sub);
  long long a = create ? 1 : id_of(argv[2], join || leave ? "an account" : "a team");
  long long t = join ? id_of(argv[3], "a team") : 1;
  if (!a || !t)
    return 1;
  o.token = key; /* the account's key, never the admin token */
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  int rc;
  if (show) {
    json_t *r = NULL;
    snprintf(path, sizeof path, "/v1/teams/%lld", a);
    rc = cairn__client_json(h, "GET", path, NULL, &r, 0) == 200 ? (print_team(r), 0) : 1;
    json_decref(r);
  } else if (create)
    rc = send(h, "POST", "/v1/teams", team_body(argv[2], desc, url, country));
  else if (rename) {
    snprintf(path, sizeof path, "/v1/teams/%lld", a);
    rc = send(h, "PATCH", path, team_body(argv[3], desc, url, country));
  } else {
    snprintf(path, sizeof path, "/v1/accounts/%lld", a);
    char body[64] = "{\"team\": null}";
    if (join)
      snprintf(body, sizeof body, "{\"team\": %lld}", t);
    rc = send(h, "PATCH", path, strdup(body));
  }
  cairn__http_delete(h);
  return rc;
}
