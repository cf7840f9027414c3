/* test_team_change.c — PATCH /v1/volunteers/{id} {"team"} on a real
 * cairn-server over loopback: a volunteer moves itself (its own token) from
 * team "red" to "blue"; what it earned in red stays red's in GET /v1/stats
 * (the team ledger) and what it earns next counts for blue, through a
 * kill -9 of the master; the admin may move anyone, and null leaves any
 * team; the change survives a restart; another volunteer's token, no token, a bad name, an unknown
 * field, malformed JSON, a bad or unknown id are refused with a 4xx naming
 * the problem and change nothing; `cairn team` does the same from the
 * command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static long long register_team(const char *url, const char *name, const char *team,
                               char tok[65]) {
  char body[256];
  int n = team ? snprintf(body, sizeof body, "{\"name\": \"%s\", \"apps\": [\"x\"], \"team\": \"%s\"}",
                          name, team)
               : snprintf(body, sizeof body, "{\"name\": \"%s\", \"apps\": [\"x\"]}", name);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/volunteers", NULL, body, (size_t)n, &r, NULL,
                                NULL), 201);
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* tok runs the one task of a new job and claims 2 CPU seconds. */
static void earn(const char *url, const char *tok) {
  const char job[] = "{\"app\": \"x\", \"tasks\": [{\"id\": \"t\"}]}";
  assert_int_equal(harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), NULL, NULL,
                                NULL), 201);
  json_t *w = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/work", tok, NULL, 0, &w, NULL, NULL), 200);
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld",
           (long long)json_integer_value(json_object_get(w, "index")));
  json_decref(w);
  const char res[] = "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": 2}";
  assert_int_equal(harness_http(url, "PUT", path, tok, res, strlen(res), NULL, NULL, NULL), 200);
}

static long patch(const char *url, long long id, const char *tok, const char *body,
                  json_t **resp) {
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld", id);
  return harness_http(url, "PATCH", path, tok, body, strlen(body), resp, NULL, NULL);
}

static void expect_refused(const char *url, const char *path, const char *tok, const char *body,
                           long want, const char *needle) {
  json_t *r = NULL;
  long st = harness_http(url, "PATCH", path, tok, body, strlen(body), &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  if (st != want || !msg || !strstr(msg, needle))
    fail_msg("PATCH %s %s: status %ld message \"%s\" (wanted %ld naming \"%s\")", path, body, st,
             msg ? msg : "", want, needle);
  json_decref(r);
}

/* Volunteer id's team in GET /v1/volunteers ("" when none). */
static void team_of(const char *url, long long id, char *out, size_t len) {
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *v = json_array_get(json_object_get(r, "volunteers"), (size_t)(id - 1));
  assert_int_equal(json_integer_value(json_object_get(v, "id")), id);
  const char *t = json_string_value(json_object_get(v, "team"));
  snprintf(out, len, "%s", t ? t : "");
  json_decref(r);
}

/* The credit of team name in GET /v1/stats (-1: not listed), once the
 * standings (read every 2 s) show want, or after 10 s. */
static double team_credit(const char *url, const char *name, double want) {
  double got = -1;
  for (double until = harness_now() + 10; harness_now() < until; usleep(200000)) {
    json_t *r = NULL, *t;
    size_t i;
    assert_int_equal(harness_http(url, "GET", "/v1/stats", NULL, NULL, 0, &r, NULL, NULL), 200);
    got = -1;
    json_array_foreach(json_object_get(r, "teams"), i, t)
      if (strcmp(json_string_value(json_object_get(t, "team")), name) == 0)
        got = json_number_value(json_object_get(t, "credit"));
    json_decref(r);
    if (got == want)
      break;
  }
  return got;
}

static void test_team_change(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  char a[65], b[65], team[80];
  long long va = register_team(url, "a", "red", a), vb = register_team(url, "b", NULL, b);
  earn(url, a);
  assert_true(team_credit(url, "red", 2) == 2);

  /* the volunteer itself */
  json_t *r = NULL;
  assert_int_equal(patch(url, va, a, "{\"team\": \"blue\"}", &r), 200);
  assert_string_equal(json_string_value(json_object_get(r, "team")), "blue");
  json_decref(r);
  team_of(url, va, team, sizeof team);
  assert_string_equal(team, "blue");
  assert_true(team_credit(url, "blue", 0) == 0); /* listed, with none of red's credit */
  assert_true(team_credit(url, "red", 2) == 2);  /* red keeps what it earned there */
  earn(url, a);
  assert_true(team_credit(url, "blue", 2) == 2); /* what it earns now counts for blue */
  assert_true(team_credit(url, "red", 2) == 2);
  int ks = server_fixture_stop(f, SIGKILL);
  assert_true(WIFSIGNALED(ks) && WTERMSIG(ks) == SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  url = f->srv.url;
  assert_true(team_credit(url, "red", 2) == 2); /* the ledger survives a kill -9 */
  assert_true(team_credit(url, "blue", 2) == 2);

  /* refused, changing nothing */
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld", va);
  expect_refused(url, path, b, "{\"team\": \"green\"}", 403, "only its own team");
  expect_refused(url, path, NULL, "{\"team\": \"green\"}", 401, "token");
  expect_refused(url, path, "0123456789012345678901234567890123456789012345678901234567890123",
                 "{\"team\": \"green\"}", 401, "unknown volunteer token");
  expect_refused(url, path, a, "{\"team\": \"\"}", 400, "\"team\" must be 1 to 64");
  expect_refused(url, path, a, "{\"team\": \"a\\\"b\"}", 400, "\"team\" must be 1 to 64");
  expect_refused(url, path, a, "{\"team\": \"a\\u0000b\"}", 400, "malformed JSON");
  expect_refused(url, path, a,
                 "{\"team\": \"0123456789012345678901234567890123456789012345678901234567890123"
                 "4\"}", 400, "\"team\" must be 1 to 64");
  expect_refused(url, path, a, "{\"team\": 7}", 400, "\"team\" must be 1 to 64");
  expect_refused(url, path, a, "{\"team\": \"green\", \"name\": \"x\"}", 400,
                 "unknown field \"name\"");
  expect_refused(url, path, a, "{}", 400, "missing \"team\"");
  expect_refused(url, path, a, "{\"team\": ", 400, "malformed JSON");
  expect_refused(url, "/v1/volunteers/abc", ADMIN, "{\"team\": \"green\"}", 400,
                 "not a volunteer id");
  expect_refused(url, "/v1/volunteers/99", ADMIN, "{\"team\": \"green\"}", 404, "no volunteer 99");
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, NULL, NULL, NULL), 405);
  team_of(url, va, team, sizeof team);
  assert_string_equal(team, "blue");

  /* the admin moves b; null leaves a team; both survive a restart */
  assert_int_equal(patch(url, vb, ADMIN, "{\"team\": \"blue\"}", NULL), 200);
  assert_int_equal(patch(url, va, ADMIN, "{\"team\": null}", NULL), 200);
  assert_int_equal(server_fixture_stop(f, SIGTERM), 0);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  url = f->srv.url;
  team_of(url, va, team, sizeof team);
  assert_string_equal(team, "");
  team_of(url, vb, team, sizeof team);
  assert_string_equal(team, "blue");
  assert_true(team_credit(url, "blue", 2) == 2); /* a left; what it earned in blue stays */
  assert_true(team_credit(url, "red", 2) == 2);

  /* the command line */
  char bin[4096], id[32], *out = NULL;
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(id, sizeof id, "%lld", va);
  const char *argv[] = {bin, "team", id, "green", "--server", url, "--token", ADMIN, NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  assert_non_null(strstr(out, "is in team green"));
  free(out);
  out = NULL;
  const char *none[] = {bin, "team", id, "--none", "--server", url, "--token", a, NULL};
  assert_int_equal(harness_run(none, &out), 0);
  assert_non_null(strstr(out, "is in no team"));
  free(out);
  team_of(url, va, team, sizeof team);
  assert_string_equal(team, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_team_change),
  };
  return cmocka_run_group_tests(tests, server_fixture_setup, server_fixture_teardown);
}
