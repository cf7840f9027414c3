/* cmd_account.c — `cairn account`: a person's account on the master
 * (docs/protocol.md, "Accounts"; docs/accountability.md, "Accounts"):
 * create one, log in (a new account key), show one with its hosts. A
 * password is read from --password-file or from the first line of standard
 * input, never from the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/termsafe.h"

static const char usage[] =
  "usage: cairn account create NAME EMAIL [--password-file PATH]\n"
  "       cairn account login EMAIL [--password-file PATH]\n"
  "       cairn account show ID [--account-key KEY | --account-key-file PATH]\n"
  "create makes an account (POST /v1/accounts; on a master registering by\n"
  "invitation, --invitation CODE) and prints its id and account key; login\n"
  "prints the id and a NEW account key (the old one stops working; hosts\n"
  "attached stay attached). The password is the first line of PATH, or of\n"
  "standard input. show prints the account, its credit and its hosts, with\n"
  "the admin token or the account's own key. Give the key to your workers:\n"
  "cairn-worker --account-key-file PATH.";

/* The password: --password-file's first line, or stdin's. */
static int password(const char *file, char *out, size_t cap) {
  FILE *f = file ? fopen(file, "r") : stdin;
  int rc = cairn__cli_first_line(f, out, cap);
  if (f && f != stdin)
    fclose(f);
  if (rc)
    return cairn__cli_fail("no password: give it on the first line of %s",
                           file ? file : "standard input"), -1;
  return 0;
}

/* POSTs body (taken) to path; on 200 or 201 prints "account ID" and the key. */
static int post_key(cairn__http *h, const char *path, json_t *body) {
  char *text = body ? json_dumps(body, JSON_COMPACT) : NULL;
  json_decref(body);
  if (!text)
    return cairn__cli_fail("the name, e-mail or password is not valid UTF-8");
  json_t *r = NULL;
  long st = cairn__client_json(h, "POST", path, text, &r, 0);
  free(text);
  int ok = (st == 200 || st == 201) && json_string_value(json_object_get(r, "account_key"));
  if (ok) {
    printf("%s\n", json_string_value(json_object_get(r, "account_key")));
    fprintf(stderr, "account %lld; its account key is on stdout (shown only now)\n",
            (long long)json_integer_value(json_object_get(r, "id")));
  }
  json_decref(r);
  return ok ? 0 : 1;
}

static void print_account(json_t *a) {
  char name[CAIRN_TERMSAFE_NAME], email[CAIRN_TERMSAFE_NAME];
  const char *e = json_string_value(json_object_get(a, "email"));
  printf("account %lld: %s%s%s%s\n", (long long)json_integer_value(json_object_get(a, "id")),
         cairn__termsafe(json_string_value(json_object_get(a, "name")), name, sizeof name),
         e ? " <" : "", e ? cairn__termsafe(e, email, sizeof email) : "", e ? ">" : "");
  json_t *t = json_object_get(a, "team");
  if (json_is_object(t))
    printf("team %lld: %s\n", (long long)json_integer_value(json_object_get(t, "id")),
           cairn__termsafe(json_string_value(json_object_get(t, "name")), email, sizeof email));
  printf("credit %.2f, CPU seconds %.2f, %lld results, recent average %.2f a day\n",
         json_number_value(json_object_get(a, "credit")),
         json_number_value(json_object_get(a, "cpu_seconds")),
         (long long)json_integer_value(json_object_get(a, "results")),
         json_number_value(json_object_get(a, "expavg_credit")));
  json_t *hosts = json_object_get(a, "hosts"), *v;
  size_t i;
  printf("%-8s %-24s %14s %14s %12s  %s\n", "HOST", "NAME", "CREDIT", "RECENT/DAY", "LAST_SEEN",
         "PLATFORM");
  json_array_foreach(hosts, i, v) {
    char plat[CAIRN_TERMSAFE_NAME];
    const char *p = json_string_value(json_object_get(v, "platform"));
    printf("%-8lld %-24s %14.2f %14.2f %12lld  %s\n",
           (long long)json_integer_value(json_object_get(v, "id")),
           cairn__termsafe(json_string_value(json_object_get(v, "name")), name, sizeof name),
           json_number_value(json_object_get(v, "credit")),
           json_number_value(json_object_get(v, "expavg_credit")),
           (long long)json_integer_value(json_object_get(v, "last_seen")),
           p ? cairn__termsafe(p, plat, sizeof plat) : "-");
  }
}

int cairn__cmd_account(int argc, char **argv) {
  if (argc < 2 || cairn__cli_wants_help(argc, argv)) {
    puts(usage);
    return argc < 2;
  }
  const char *pwfile = cairn__cli_take_opt(&argc, argv, "--password-file");
  const char *invitation = cairn__cli_take_opt(&argc, argv, "--invitation");
  const char *key = NULL;
  char keybuf[256], pw[1030];
  if (cairn__cli_account_key(&argc, argv, keybuf, sizeof keybuf, &key))
    return 1;
  cairn__client_opts o = {0};
  if (cairn__client_parse(&argc, argv, &o))
    return 1;
  const char *sub = argv[1];
  int create = strcmp(sub, "create") == 0 && argc == 4, login = strcmp(sub, "login") == 0 &&
                                                                 argc == 3;
  int show = strcmp(sub, "show") == 0 && argc == 3;
  if (!create && !login && !show)
    return cairn__cli_fail("%s", "usage: cairn account create NAME EMAIL | login EMAIL | show ID "
                                 "(cairn account --help)");
  if ((create || login) && password(pwfile, pw, sizeof pw))
    return 1;
  if (show && key)
    o.token = key; /* the account's own key instead of the admin token */
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  int rc = 1;
  if (create) {
    json_t *b = json_pack("{s:s, s:s, s:s}", "name", argv[2], "email", argv[3], "password", pw);
    if (b && invitation)
      json_object_set_new(b, "invitation", json_string(invitation));
    rc = post_key(h, "/v1/accounts", b);
  } else if (login)
    rc = post_key(h, "/v1/accounts/login",
                  json_pack("{s:s, s:s}", "email", argv[2], "password", pw));
  else {
    char *end = NULL, path[64];
    long long id = strtoll(argv[2], &end, 10);
    if (id <= 0 || !end || *end)
      rc = cairn__cli_fail("\"%s\" is not an account id", argv[2]);
    else {
      snprintf(path, sizeof path, "/v1/accounts/%lld", id);
      json_t *a = NULL;
      if (cairn__client_json(h, "GET", path, NULL, &a, 0) == 200) {
        print_account(a);
        rc = 0;
      }
      json_decref(a);
    }
  }
  memset(pw, 0, sizeof pw);
  cairn__http_delete(h);
  return rc;
}
