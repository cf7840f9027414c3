/* test_people.c — teams of accounts on a real cairn-server with real
 * workers over loopback (docs/protocol.md, "Teams of accounts";
 * docs/accountability.md, "Teams of accounts"): an account makes a team
 * and is its founder and first member; another joins and leaves it; only
 * the founder renames it; a name taken by a team, by a team's first name
 * (its key in the ledger) or by a volunteer's team of the ledger is 409;
 * bad fields are 400 naming the field; a host of an account may not pick
 * its own team (409) and a volunteer may not take a team of accounts'
 * name; a real worker's host earns for its account's team only after the
 * account joined (what it earned before stays out of it), and nothing
 * after it left; a rename moves no credit; all of it survives a kill -9;
 * `cairn team create|join|leave|rename|show` do the same from the command
 * line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static const char *err_message(json_t *r) {
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  return m ? m : "";
}

/* Signs up name/email: its id, its key in key (65 bytes). */
static long long sign_up(const char *url, const char *name, const char *email, char key[65]) {
  json_t *b = json_pack("{s:s, s:s, s:s}", "name", name, "email", email, "password",
                        "correct horse"),
         *r = NULL;
  long st = harness_http_json(url, "POST", "/v1/accounts", NULL, b, &r);
  json_decref(b);
  if (st != 201)
    fail_msg("sign-up of %s: %ld %s", email, st, err_message(r));
  snprintf(key, 65, "%s", json_string_value(json_object_get(r, "account_key")));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* method path body with token: the status, wanted want (fail otherwise);
 * the answer in *out when out, else dropped. */
static long call(const char *url, const char *method, const char *path, const char *token,
                 const char *body, long want, json_t **out) {
  json_t *r = NULL;
  long st = harness_http(url, method, path, token, body, body ? strlen(body) : 0, &r, NULL, NULL);
  if (st != want)
    fail_msg("%s %s %s: %ld (wanted %ld) %s", method, path, body ? body : "", st, want,
             err_message(r));
  if (out)
    *out = r;
  else
    json_decref(r);
  return st;
}

/* As call, wanting a 4xx whose message holds needle. */
static void refused(const char *url, const char *method, const char *path, const char *token,
                    const char *body, long want, const char *needle) {
  json_t *r = NULL;
  call(url, method, path, token, body, want, &r);
  if (!strstr(err_message(r), needle))
    fail_msg("%s %s %s: \"%s\" does not name %s", method, path, body ? body : "",
             err_message(r), needle);
  json_decref(r);
}

static json_t *team(const char *url, long long id) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/teams/%lld", id);
  call(url, "GET", path, NULL, NULL, 200, &r);
  return r;
}

static long long make_team(const char *url, const char *key, const char *body) {
  json_t *r = NULL;
  call(url, "POST", "/v1/teams", key, body, 201, &r);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* PATCH /v1/accounts/{account} {"team": team (0: null)} with key. */
static long join(const char *url, long long account, long long t, const char *key, long want) {
  char path[64], body[64] = "{\"team\": null}";
  snprintf(path, sizeof path, "/v1/accounts/%lld", account);
  if (t)
    snprintf(body, sizeof body, "{\"team\": %lld}", t);
  return call(url, "PATCH", path, key, body, want, NULL);
}

static void test_team_rules(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  char ann[65], bob[65], vtok[65], path[64];
  long long a = sign_up(url, "Ann", "ann@example.org", ann);
  long long b = sign_up(url, "Bob", "bob@example.org", bob);
  const char reg[] = "{\"name\": \"free\", \"apps\": [\"sh\"], \"team\": \"red\"}";
  json_t *r = NULL;
  call(url, "POST", "/v1/volunteers", NULL, reg, 201, &r);
  snprintf(vtok, sizeof vtok, "%s", json_string_value(json_object_get(r, "token")));
  long long free_vol = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);

  /* who may make one, and what it may be called */
  call(url, "POST", "/v1/teams", NULL, "{\"name\": \"x\"}", 401, NULL);
  call(url, "POST", "/v1/teams", vtok, "{\"name\": \"x\"}", 401, NULL);
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"red\"}", 409, "ledger");
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"\"}", 400, "name");
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"a\\u0007b\"}", 400, "name");
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"x\\u202ey\"}", 400, "name");
  char long_name[128], ok_name[200], body[512];
  memset(long_name, 'n', 65);
  long_name[65] = '\0';
  snprintf(body, sizeof body, "{\"name\": \"%s\"}", long_name);
  refused(url, "POST", "/v1/teams", ann, body, 400, "name");
  ok_name[0] = '\0';
  for (int i = 0; i < 64; i++)
    strcat(ok_name, "\xc3\xa9"); /* 64 characters, 128 bytes */
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"u\", \"url\": \"javascript:alert(1)\"}",
          400, "url");
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"u\", \"founder\": 2}", 400, "founder");
  refused(url, "POST", "/v1/teams", ann, "{\"description\": \"no name\"}", 400, "name");
  refused(url, "POST", "/v1/teams", ann, "{\"name\": \"u\", \"country\": 7}", 400, "country");
  snprintf(body, sizeof body, "{\"name\": \"%s\"}", ok_name);
  long long wide = make_team(url, ann, body);
  json_t *t = team(url, wide);
  assert_string_equal(json_string_value(json_object_get(t, "name")), ok_name);
  json_decref(t);

  /* Ann makes Blue (leaving her first), Bob may not take its name, joins it */
  long long blue = make_team(url, ann, "{\"name\": \"Blue\", \"description\": \"We fold.\\nAt "
                                       "night.\", \"url\": \"https://blue.example\", "
                                       "\"country\": \"Ireland\"}");
  t = team(url, wide);
  assert_int_equal(json_integer_value(json_object_get(t, "members")), 0);
  json_decref(t);
  refused(url, "POST", "/v1/teams", bob, "{\"name\": \"Blue\"}", 409, "Blue");
  join(url, b, blue, bob, 200);
  t = team(url, blue);
  assert_int_equal(json_integer_value(json_object_get(t, "members")), 2);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "founder"), "id")), a);
  assert_string_equal(json_string_value(json_object_get(t, "description")), "We fold.\nAt night.");
  assert_string_equal(json_string_value(json_object_get(t, "url")), "https://blue.example");
  assert_string_equal(json_string_value(json_object_get(t, "country")), "Ireland");
  assert_int_equal(json_array_size(json_object_get(t, "members_top")), 2);
  json_decref(t);
  snprintf(path, sizeof path, "/v1/accounts/%lld", b);
  call(url, "GET", path, bob, NULL, 200, &r);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "team"), "id")), blue);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "team"), "name")),
                      "Blue");
  json_decref(r);

  /* only the founder changes it; only the account itself joins or leaves */
  snprintf(path, sizeof path, "/v1/teams/%lld", blue);
  refused(url, "PATCH", path, bob, "{\"name\": \"Bob's\"}", 403, "founder");
  join(url, a, 0, bob, 403);
  call(url, "PATCH", path, ann, "{}", 400, NULL);
  call(url, "PATCH", path, ann, "{\"name\": \"Azure\"}", 200, &r);
  assert_string_equal(json_string_value(json_object_get(r, "name")), "Azure");
  assert_string_equal(json_string_value(json_object_get(r, "url")), "https://blue.example");
  json_decref(r);
  /* its first name stays its own: no other team takes it, it may go back to it */
  refused(url, "POST", "/v1/teams", bob, "{\"name\": \"Blue\"}", 409, "ledger");
  call(url, "PATCH", path, ann, "{\"name\": \"Blue\", \"country\": \"\"}", 200, &r);
  assert_string_equal(json_string_value(json_object_get(r, "name")), "Blue");
  assert_string_equal(json_string_value(json_object_get(r, "country")), "");
  json_decref(r);
  call(url, "PATCH", "/v1/teams/99", ann, "{\"name\": \"Q\"}", 404, NULL);
  join(url, b, 99, bob, 404);
  snprintf(path, sizeof path, "/v1/accounts/%lld", b);
  call(url, "PATCH", path, bob, "{\"team\": \"Blue\"}", 400, NULL);
  call(url, "PATCH", path, bob, "{\"team\": 0}", 400, NULL);
  call(url, "PATCH", path, bob, "{\"team\": null, \"name\": \"B\"}", 400, NULL);

  /* a volunteer of no account may not take a team of accounts' name */
  snprintf(path, sizeof path, "/v1/volunteers/%lld", free_vol);
  refused(url, "PATCH", path, vtok, "{\"team\": \"Blue\"}", 409, "team of accounts");
  refused(url, "POST", "/v1/volunteers", NULL,
          "{\"name\": \"v2\", \"apps\": [\"sh\"], \"team\": \"Blue\"}", 409, "team of accounts");

  /* Bob leaves; everything survives a kill -9 */
  join(url, b, 0, bob, 200);
  assert_true(server_fixture_stop(f, SIGKILL) >= 0);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  url = f->srv.url;
  t = team(url, blue);
  assert_string_equal(json_string_value(json_object_get(t, "name")), "Blue");
  assert_int_equal(json_integer_value(json_object_get(t, "members")), 1);
  json_decref(t);
  snprintf(path, sizeof path, "/v1/accounts/%lld", b);
  call(url, "GET", path, bob, NULL, 200, &r);
  assert_true(json_is_null(json_object_get(r, "team")));
  json_decref(r);
  refused(url, "POST", "/v1/teams", bob, "{\"name\": \"Blue\"}", 409, "Blue");
  snprintf(path, sizeof path, "/v1/teams/%lld", blue);
  refused(url, "PATCH", path, bob, "{\"name\": \"Bob's\"}", 403, "founder");
}

/* The volunteer list's entry of volunteer id. */
static json_t *volunteer(const char *url, long long id) {
  json_t *r = NULL;
  call(url, "GET", "/v1/volunteers", ADMIN, NULL, 200, &r);
  json_t *v = json_incref(json_array_get(json_object_get(r, "volunteers"), (size_t)(id - 1)));
  json_decref(r);
  assert_non_null(v);
  return v;
}

static double credit_of(json_t *o) { return json_number_value(json_object_get(o, "credit")); }

/* A job of one task that spins a while, run to its end by the real worker
 * "cyhost" (its folder kept: the same volunteer each time) with key. */
static void run_job(server_fixture *f, const char *key) {
  const char job[] = "{\"app\": \"sh\", \"tasks\": [{\"id\": \"t\", \"args\": [\"-c\", "
                     "\"i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo done\"]}]}";
  long long id = server_fixture_submit(f, job);
  const char *args[] = {"--app", "sh=/bin/sh", "--account-key", key, "--exit-when-idle", "2",
                        "--no-sandbox", NULL};
  pid_t w = server_fixture_worker(f, "cyhost", args);
  assert_true(w > 0);
  int status = harness_wait(w, 120);
  server_fixture_reaped(f, w);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  json_t *r = server_fixture_get(f, path);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "done");
  json_decref(r);
}

/* Runs the cairn command with args (NULL-terminated, after "cairn"): its
 * exit status, its standard output in *out (caller frees). */
static int cli(const char *const *args, char **out) {
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn");
  const char *argv[24] = {bin};
  int n = 1;
  for (int i = 0; args[i] && n < 23; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  *out = NULL;
  return harness_run(argv, out);
}

static void test_credit_follows_team(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  char ann[65], cy[65], *out = NULL, cyid[32], tid[32];
  sign_up(url, "Ann", "ann@example.org", ann);
  long long c = sign_up(url, "Cy", "cy@example.org", cy);
  snprintf(cyid, sizeof cyid, "%lld", c);

  /* Ann makes Owls with the command */
  const char *mk[] = {"team", "create", "Owls", "--description", "Night folk", "--account-key",
                      ann, "--server", url, NULL};
  assert_int_equal(cli(mk, &out), 0);
  long long owls = atoll(out ? out : "0");
  free(out);
  assert_true(owls > 0);
  snprintf(tid, sizeof tid, "%lld", owls);

  /* Cy's host earns before Cy joins: none of it is the team's */
  run_job(f, cy);
  json_t *v = volunteer(url, 1);
  double c1 = credit_of(v);
  assert_true(c1 > 0);
  assert_int_equal(json_integer_value(json_object_get(v, "account")), c);
  assert_true(json_is_null(json_object_get(v, "team")));
  json_decref(v);
  /* a host of an account does not pick its own team */
  refused(url, "PATCH", "/v1/volunteers/1", ADMIN, "{\"team\": \"red\"}", 409,
          "account's team decides");

  /* Cy joins with the command: its host's team is the team's key */
  const char *jn[] = {"team", "join", cyid, tid, "--account-key", cy, "--server", url, NULL};
  assert_int_equal(cli(jn, &out), 0);
  if (!out || !strstr(out, "Owls"))
    fail_msg("cairn team join: %s", out ? out : "(nothing)");
  free(out);
  v = volunteer(url, 1);
  assert_string_equal(json_string_value(json_object_get(v, "team")), "Owls");
  json_decref(v);
  json_t *t = team(url, owls);
  assert_true(credit_of(t) == 0); /* the past stays where it was */
  json_decref(t);

  /* what the host earns now counts for the team */
  run_job(f, cy);
  v = volunteer(url, 1);
  double c2 = credit_of(v);
  json_decref(v);
  assert_true(c2 > c1);
  t = team(url, owls);
  assert_true(fabs(credit_of(t) - (c2 - c1)) < 1e-9);
  assert_true(json_number_value(json_object_get(t, "expavg_credit")) > 0);
  assert_int_equal(json_integer_value(json_object_get(t, "members")), 2);
  json_t *top = json_array_get(json_object_get(t, "members_top"), 0); /* the most credit first */
  assert_int_equal(json_integer_value(json_object_get(top, "id")), c);
  assert_true(fabs(credit_of(top) - c2) < 1e-9);
  json_decref(t);

  /* a rename moves nothing: the ledger keeps the team's first name */
  const char *rn[] = {"team", "rename", tid, "Night Owls", "--account-key", ann, "--server", url,
                      NULL};
  assert_int_equal(cli(rn, &out), 0);
  free(out);
  const char *rn_cy[] = {"team", "rename", tid, "Cy's", "--account-key", cy, "--server", url,
                         NULL};
  assert_int_equal(cli(rn_cy, &out), 1); /* not its founder */
  free(out);
  t = team(url, owls);
  assert_string_equal(json_string_value(json_object_get(t, "name")), "Night Owls");
  assert_true(fabs(credit_of(t) - (c2 - c1)) < 1e-9);
  json_decref(t);
  json_t *stats = server_fixture_get(f, "/v1/stats");
  json_t *row = json_array_get(json_object_get(stats, "teams"), 0);
  assert_string_equal(json_string_value(json_object_get(row, "team")), "Owls");
  assert_true(fabs(credit_of(row) - (c2 - c1)) < 1e-9);
  json_decref(stats);

  /* Cy leaves: its host is in no team, and what it earns next is not the team's */
  const char *lv[] = {"team", "leave", cyid, "--account-key", cy, "--server", url, NULL};
  assert_int_equal(cli(lv, &out), 0);
  if (!out || !strstr(out, "no team"))
    fail_msg("cairn team leave: %s", out ? out : "(nothing)");
  free(out);
  run_job(f, cy);
  v = volunteer(url, 1);
  double c3 = credit_of(v);
  assert_true(c3 > c2);
  assert_true(json_is_null(json_object_get(v, "team")));
  json_decref(v);
  t = team(url, owls);
  assert_true(fabs(credit_of(t) - (c2 - c1)) < 1e-9);
  assert_int_equal(json_integer_value(json_object_get(t, "members")), 1);
  json_decref(t);

  /* the public page of Cy: its host and its results, newest first, no e-mail */
  char path[64];
  snprintf(path, sizeof path, "/v1/public/accounts/%lld", c);
  json_t *p = NULL;
  call(url, "GET", path, NULL, NULL, 200, &p);
  assert_null(json_object_get(p, "email"));
  assert_true(fabs(credit_of(p) - c3) < 1e-9);
  json_t *res = json_object_get(p, "results");
  assert_int_equal(json_array_size(res), 3);
  for (size_t i = 0; i < 3; i++) {
    json_t *x = json_array_get(res, i);
    assert_string_equal(json_string_value(json_object_get(x, "outcome")), "valid");
    assert_string_equal(json_string_value(json_object_get(x, "task")), "t");
    assert_int_equal(json_integer_value(json_object_get(x, "job")), 3 - (json_int_t)i);
    assert_true(credit_of(x) > 0);
    assert_true(json_integer_value(json_object_get(x, "idx")) > 0);
  }
  assert_string_equal(
    json_string_value(json_object_get(json_array_get(json_object_get(p, "hosts"), 0), "name")),
    "cyhost");
  json_decref(p);

  /* `cairn team show` prints it; all of it survives a kill -9 */
  assert_true(server_fixture_stop(f, SIGKILL) >= 0);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  url = f->srv.url;
  const char *sh[] = {"team", "show", tid, "--server", url, NULL};
  assert_int_equal(cli(sh, &out), 0);
  if (!out || !strstr(out, "Night Owls") || !strstr(out, "Night folk") || !strstr(out, "Ann"))
    fail_msg("cairn team show: %s", out ? out : "(nothing)");
  free(out);
  t = team(url, owls);
  assert_true(fabs(credit_of(t) - (c2 - c1)) < 1e-9);
  assert_int_equal(json_integer_value(json_object_get(t, "members")), 1);
  json_decref(t);
  v = volunteer(url, 1);
  assert_true(json_is_null(json_object_get(v, "team")));
  json_decref(v);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_team_rules, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_credit_follows_team, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
