/* test_credit.c — credit with real processes: three cairn-workers (teams
 * "red", "red" and "blue") run a job of replication 2 / quorum 2 whose app
 * is a shell script that waits for a child burning 0.3 s of CPU (so the
 * worker's measure must count a waited-for grandchild); "cyd"'s script
 * burns 0.2 s more in a second child first, with the same output. Each
 * result's cpu_seconds is within a sensible range of what its script
 * burned; each task's granted credit is the lower of its two claims (cyd's
 * never counts when it is the higher), given to both valid results;
 * GET /v1/stats (no token, and no token in it) and `cairn stats` show per
 * volunteer and per team the sums of the credits granted; all of it
 * survives a kill -9 and a restart. Then "bob" moves from red to blue: red
 * keeps what bob earned in it (the team ledger) and blue gains nothing,
 * with bob counted among blue's members, through another kill -9; and
 * `cairn audit verify --db` finds the ledger what the chain says, and a
 * tampered team row or a forged team. Bad
 * "cpu_seconds" and "team" get 400s naming the field. Prints the claims it
 * saw. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NTASKS 6
#define BURN 0.3
#define EXTRA 0.2

typedef server_fixture fixture;

static json_t *get(const char *url, const char *path, const char *token) {
  json_t *r = NULL;
  long st = harness_http(url, "GET", path, token, NULL, 0, &r, NULL, NULL);
  if (st != 200)
    fail_msg("GET %s: HTTP %ld", path, st);
  return r;
}

/* 1 when a and b differ by at most 1e-6 (sums of doubles in another order). */
static int near(double a, double b) { return fabs(a - b) <= 1e-6 * (1 + fabs(a)); }

/* ---- bad input ---- */

static void expect_400(const char *url, const char *method, const char *path, const char *token,
                       const char *body, const char *field) {
  json_t *r = NULL;
  long st = harness_http(url, method, path, token, body, strlen(body), &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  if (st != 400 || !msg || !strstr(msg, field))
    fail_msg("%s %s %s: HTTP %ld, %s (wanted 400 naming %s)", method, path, body, st,
             msg ? msg : "no message", field);
  json_decref(r);
}

static void test_bad_input(void **state) {
  fixture *f = *state;
  static const char *const teams[] = {
    "{\"apps\": [\"a\"], \"team\": \"\"}",
    "{\"apps\": [\"a\"], \"team\": 7}",
    "{\"apps\": [\"a\"], \"team\": \"tab\\there\"}",
    "{\"apps\": [\"a\"], \"team\": \"quo\\\"te\"}",
    "{\"apps\": [\"a\"], \"team\": \"caf\\u00e9\"}",
    "{\"apps\": [\"a\"], \"team\": "
    "\"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\"}", /* 65 */
  };
  for (size_t i = 0; i < sizeof teams / sizeof *teams; i++)
    expect_400(f->srv.url, "POST", "/v1/volunteers", NULL, teams[i], "\"team\"");
  char token[65];
  assert_true(harness_register(f->srv.url, "probe", "burn", token) > 0);
  static const char *const cpus[] = {
    "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": -1}",
    "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": 604801}",
    "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": 1e300}",
    "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": \"1.5\"}",
    "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": null}",
  };
  for (size_t i = 0; i < sizeof cpus / sizeof *cpus; i++)
    expect_400(f->srv.url, "PUT", "/v1/results/1", token, cpus[i], "\"cpu_seconds\"");
  /* nothing changed: no volunteer but the probe, no credit */
  json_t *s = get(f->srv.url, "/v1/stats", NULL);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "total"), "volunteers")),
                   1);
  assert_true(json_real_value(json_object_get(json_object_get(s, "total"), "credit")) == 0);
  json_decref(s);
  expect_400(f->srv.url, "GET", "/v1/stats?limit=0", NULL, "", "\"limit\"");
  expect_400(f->srv.url, "GET", "/v1/stats?limit=1001", NULL, "", "\"limit\"");
  expect_400(f->srv.url, "GET", "/v1/stats?limit=x", NULL, "", "\"limit\"");
}

/* ---- the job ---- */

static pid_t start_worker(fixture *f, const char *name, const char *team, const char *script) {
  char app[4400];
  snprintf(app, sizeof app, "burn=%s/%s", f->dir, script);
  char bin[4096]; /* the script runs the built cairn-app-limits: shown in the sandbox */
  harness_bin_dir(bin, sizeof bin);
  const char *args[] = {"--team", team, "--app", app, "--slots", "1", "--exit-when-idle", "3",
                        "--log-level", "info", "--sandbox-bind", bin, NULL};
  pid_t pid = harness_worker(f->srv.url, f->dir, name, args);
  assert_true(pid > 0);
  return pid;
}

/* Each task's claims and granted credit (GET /v1/jobs/{id}/tasks/{key});
 * adds the credit, CPU seconds and valid results granted to each volunteer
 * into credit[], cpu[], results[] (by id, < 8). */
static void check_tasks(fixture *f, long long job, const char *const name_of[8],
                        double credit[8], double cpu[8], long long results[8]) {
  char path[128];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  json_t *tasks = get(f->srv.url, path, ADMIN), *t;
  size_t i;
  assert_int_equal(json_array_size(json_object_get(tasks, "tasks")), NTASKS);
  json_array_foreach(json_object_get(tasks, "tasks"), i, t) {
    snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", job,
             (long long)json_integer_value(json_object_get(t, "key")));
    json_t *one = get(f->srv.url, path, ADMIN), *a;
    double low = 1e9, high = 0, granted = -1;
    int slow = 0;
    int valid = 0;
    size_t k;
    json_array_foreach(json_object_get(one, "history"), k, a) {
      const char *outcome = json_string_value(json_object_get(a, "outcome"));
      if (!outcome || strcmp(outcome, "valid") != 0)
        continue;
      double claim = json_real_value(json_object_get(a, "cpu_seconds"));
      double got = json_real_value(json_object_get(a, "credit"));
      long long vol = (long long)json_integer_value(json_object_get(a, "volunteer"));
      fprintf(stderr, "task %s: volunteer %lld claims %.4f s, granted %.4f\n",
              json_string_value(json_object_get(t, "id")), vol, claim, got);
      assert_true(vol >= 1 && vol < 8);
      int is_slow = name_of[vol] && strcmp(name_of[vol], "cyd") == 0;
      slow |= is_slow;
      /* sensible: the burn, plus a shell and the app's start, on a busy machine */
      double burned = BURN + (is_slow ? EXTRA : 0);
      assert_true(claim >= burned * 0.95 && claim < burned + 2.0);
      high = claim > high ? claim : high;
      assert_true(granted < 0 || near(granted, got)); /* both valid ones get the same */
      granted = got;
      low = claim < low ? claim : low;
      valid++;
      credit[vol] += got;
      cpu[vol] += claim;
      results[vol]++;
    }
    assert_int_equal(valid, 2);
    assert_true(near(granted, low)); /* the lower claim of the quorum */
    if (slow) /* cyd's claim was the higher one: it did not count */
      assert_true(high - low > EXTRA / 2 && granted < high - EXTRA / 2);
    json_decref(one);
  }
  json_decref(tasks);
}

/* /v1/stats (no token) against the sums: each volunteer's credit, CPU
 * seconds and results; each team's, summed over the volunteers that earned
 * in it (earned_in), and its members (team_of: the team of each now). */
static void check_stats(const char *url, const double credit[8], const double cpu[8],
                        const long long results[8], const char *const team_of[8],
                        const char *const earned_in[8]) {
  json_t *s = NULL;
  char *raw = NULL;
  size_t rawlen = 0;
  double until = harness_now() + 10; /* the snapshot is at most 2 s old */
  for (;;) {
    json_decref(s);
    free(raw);
    s = NULL;
    raw = NULL;
    assert_int_equal(harness_http(url, "GET", "/v1/stats", NULL, NULL, 0, &s, &raw, &rawlen),
                     200);
    double total = json_real_value(json_object_get(json_object_get(s, "total"), "credit"));
    double want = 0;
    for (int v = 0; v < 8; v++)
      want += credit[v];
    if (near(total, want) || harness_now() > until)
      break;
    usleep(200 * 1000);
  }
  assert_null(strstr(raw, "token")); /* no secrets: no token, no address */
  assert_null(strstr(raw, "127.0.0.1"));
  double red[3] = {0, 0, 0}, blue[3] = {0, 0, 0}, all = 0;
  long long members_red = 0, members_blue = 0;
  for (int v = 1; v < 8; v++) {
    double *t = earned_in[v] && strcmp(earned_in[v], "red") == 0    ? red
                : earned_in[v] && strcmp(earned_in[v], "blue") == 0 ? blue
                                                                    : NULL;
    if (t)
      t[0] += credit[v], t[1] += cpu[v], t[2] += (double)results[v];
    all += credit[v];
    members_red += team_of[v] && strcmp(team_of[v], "red") == 0;
    members_blue += team_of[v] && strcmp(team_of[v], "blue") == 0;
  }
  size_t i;
  json_t *e;
  int seen = 0;
  json_array_foreach(json_object_get(s, "volunteers"), i, e) {
    long long id = (long long)json_integer_value(json_object_get(e, "id"));
    assert_true(id >= 1 && id < 8);
    assert_true(near(json_real_value(json_object_get(e, "credit")), credit[id]));
    assert_true(near(json_real_value(json_object_get(e, "cpu_seconds")), cpu[id]));
    assert_int_equal(json_integer_value(json_object_get(e, "results")), results[id]);
    assert_int_equal(json_integer_value(json_object_get(e, "rank")), (json_int_t)i + 1);
    if (team_of[id])
      assert_string_equal(json_string_value(json_object_get(e, "team")), team_of[id]);
    if (i > 0) /* by credit, highest first */
      assert_true(json_real_value(json_object_get(json_array_get(json_object_get(s, "volunteers"),
                                                                 i - 1), "credit")) >=
                  json_real_value(json_object_get(e, "credit")));
    seen++;
  }
  assert_true(seen >= 3);
  json_array_foreach(json_object_get(s, "teams"), i, e) {
    const char *name = json_string_value(json_object_get(e, "team"));
    double *t = strcmp(name, "red") == 0 ? red : blue;
    assert_true(near(json_real_value(json_object_get(e, "credit")), t[0]));
    assert_true(near(json_real_value(json_object_get(e, "cpu_seconds")), t[1]));
    assert_int_equal(json_integer_value(json_object_get(e, "results")), (json_int_t)t[2]);
    assert_int_equal(json_integer_value(json_object_get(e, "members")),
                     strcmp(name, "red") == 0 ? members_red : members_blue);
  }
  assert_int_equal(json_array_size(json_object_get(s, "teams")), 2);
  assert_true(near(json_real_value(json_object_get(json_object_get(s, "total"), "credit")), all));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "total"), "teams")), 2);
  /* ?limit= bounds both lists */
  json_t *one = get(url, "/v1/stats?limit=1", NULL);
  assert_int_equal(json_array_size(json_object_get(one, "volunteers")), 1);
  assert_int_equal(json_array_size(json_object_get(one, "teams")), 1);
  json_decref(one);
  json_decref(s);
  free(raw);
}

/* `cairn stats` without a token: a row per volunteer with its credit. */
static void check_cli(const char *url, const double credit[8], const char *const name_of[8]) {
  char cli[4096];
  harness_bin(cli, sizeof cli, "cairn");
  const char *argv[] = {cli, "stats", "--server", url, NULL};
  char *out = NULL;
  unsetenv("CAIRN_ADMIN_TOKEN");
  assert_int_equal(harness_run(argv, &out), 0);
  fprintf(stderr, "%s", out);
  assert_non_null(strstr(out, "CREDIT"));
  for (int v = 1; v < 8; v++) {
    if (!name_of[v])
      continue;
    char want[128];
    snprintf(want, sizeof want, " %-20s", name_of[v]);
    const char *line = strstr(out, want);
    assert_non_null(line);
    char cred[32];
    snprintf(cred, sizeof cred, " %.2f ", credit[v]);
    const char *eol = strchr(line, '\n');
    const char *at = strstr(line, cred);
    assert_true(at && eol && at < eol);
  }
  assert_non_null(strstr(out, "blue"));
  assert_non_null(strstr(out, "TOTAL 4 volunteers, 2 teams"));
  free(out);
}

/* Waits (at most 10 s) until the standings, read every 2 s, list
 * volunteer id in team. */
static void wait_team(const char *url, long long id, const char *team) {
  const char *seen = NULL;
  for (double until = harness_now() + 10; harness_now() < until; usleep(200 * 1000)) {
    json_t *s = get(url, "/v1/stats", NULL), *e;
    size_t i;
    seen = NULL;
    json_array_foreach(json_object_get(s, "volunteers"), i, e)
      if (json_integer_value(json_object_get(e, "id")) == id)
        seen = json_string_value(json_object_get(e, "team"));
    int done = seen && strcmp(seen, team) == 0;
    json_decref(s);
    if (done)
      return;
  }
  fail_msg("volunteer %lld is not listed in team %s", id, team);
}

/* A copy of the database with text run on it: `cairn audit verify --db`
 * fails naming want. */
static void tampered_team(fixture *f, const char *text, const char *want) {
  char copy[4200], cmd[20000], cli[4096], *out = NULL;
  snprintf(copy, sizeof copy, "%s/tampered.db", f->dir);
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s.audit-key' '%s.audit-key'", f->db, copy,
           f->db, copy);
  assert_int_equal(system(cmd), 0);
  sqlite3 *h = NULL;
  assert_int_equal(sqlite3_open(copy, &h), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, text, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);
  harness_bin(cli, sizeof cli, "cairn");
  const char *verify[] = {cli, "audit", "verify", "--db", copy, NULL};
  int rc = harness_run(verify, &out);
  fprintf(stderr, "tampered (%s): exit %d\n%s", text, rc, out ? out : "");
  assert_int_equal(rc, 1);
  assert_non_null(strstr(out, want));
  free(out);
  snprintf(cmd, sizeof cmd, "rm -f '%s' '%s.audit-key'", copy, copy);
  assert_int_equal(system(cmd), 0);
}

/* bob moves from red to blue: red keeps bob's credit, blue gains none of
 * it; the same after a kill -9; the audit chain agrees with the ledger. */
static void move_bob(fixture *f, const double credit[8], const double cpu[8],
                     const long long results[8], const char *const name_of[8],
                     const char *const team_of[8]) {
  const char *now_in[8];
  long long bob = 0;
  for (int v = 0; v < 8; v++) {
    now_in[v] = team_of[v];
    if (name_of[v] && strcmp(name_of[v], "bob") == 0)
      bob = v, now_in[v] = "blue";
  }
  assert_true(bob > 0 && results[bob] > 0);
  char path[64];
  const char body[] = "{\"team\": \"blue\"}";
  snprintf(path, sizeof path, "/v1/volunteers/%lld", bob);
  assert_int_equal(harness_http(f->srv.url, "PATCH", path, ADMIN, body, strlen(body), NULL, NULL,
                                NULL), 200);
  wait_team(f->srv.url, bob, "blue");
  check_stats(f->srv.url, credit, cpu, results, now_in, team_of);
  int st = server_fixture_stop(f, SIGKILL);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  check_stats(f->srv.url, credit, cpu, results, now_in, team_of);
  assert_int_equal(server_fixture_stop(f, SIGTERM), 0);
  char cli[4096], *out = NULL;
  harness_bin(cli, sizeof cli, "cairn");
  const char *verify[] = {cli, "audit", "verify", "--db", f->db, NULL};
  int rc = harness_run(verify, &out);
  fprintf(stderr, "cairn audit verify --db: exit %d\n%s", rc, out ? out : "");
  assert_int_equal(rc, 0);
  assert_non_null(strstr(out, " volunteers, 2 teams"));
  assert_non_null(strstr(out, "\nOK\n"));
  free(out);
  /* a team's totals raised, a team forged: found */
  tampered_team(f, "UPDATE team_credit SET credit = credit + 1 WHERE team = 'red'",
                "(team_credit): team \"red\" has credit totals");
  tampered_team(f, "INSERT INTO team_credit VALUES ('forged', 5, 5, 1)",
                "seq - (team_credit): a team has credit");
  assert_int_equal(server_fixture_restart(f, NULL), 0); /* for the teardown */
}

static void test_credit_end_to_end(void **state) {
  fixture *f = *state;
  char limits[4096], script[4300], text[9000];
  harness_bin(limits, sizeof limits, "cairn-app-limits");
  snprintf(script, sizeof script, "%s/burn.sh", f->dir);
  /* not exec: the burner is the app's child, waited for */
  snprintf(text, sizeof text, "#!/bin/sh\n\"%s\" \"$@\"\nexit $?\n", limits);
  assert_int_equal(harness_write_file(script, text), 0);
  chmod(script, 0755);
  snprintf(script, sizeof script, "%s/burn_more.sh", f->dir);
  snprintf(text, sizeof text, "#!/bin/sh\n\"%s\" burn %.2f >/dev/null\n\"%s\" \"$@\"\nexit $?\n",
           limits, EXTRA, limits);
  assert_int_equal(harness_write_file(script, text), 0);
  chmod(script, 0755);
  json_t *job = json_pack("{s:s, s:i, s:i, s:[]}", "app", "burn", "replication", 2, "quorum", 2,
                          "tasks");
  for (int i = 0; i < NTASKS; i++) {
    char id[16], secs[16];
    snprintf(id, sizeof id, "t%d", i);
    snprintf(secs, sizeof secs, "%.2f", BURN);
    json_array_append_new(json_object_get(job, "tasks"),
                          json_pack("{s:s, s:[s, s]}", "id", id, "args", "burn", secs));
  }
  json_t *r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  json_decref(job);
  pid_t w[3] = {start_worker(f, "ann", "red", "burn.sh"), start_worker(f, "bob", "red", "burn.sh"),
                start_worker(f, "cyd", "blue", "burn_more.sh")};
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  double until = harness_now() + 120;
  const char *state_now = "";
  json_t *jr = NULL;
  while (harness_now() < until) {
    json_decref(jr);
    jr = get(f->srv.url, path, ADMIN);
    state_now = json_string_value(json_object_get(jr, "state"));
    if (strcmp(state_now, "running") != 0)
      break;
    usleep(200 * 1000);
  }
  assert_string_equal(state_now, "done");
  json_decref(jr);
  harness_stop_all(w, 3, 20);

  /* which volunteer is which (the probe of test_bad_input is volunteer 1) */
  const char *team_of[8] = {0}, *name_of[8] = {0};
  json_t *vols = get(f->srv.url, "/v1/volunteers", ADMIN), *v;
  size_t i;
  json_array_foreach(json_object_get(vols, "volunteers"), i, v) {
    long long vid = (long long)json_integer_value(json_object_get(v, "id"));
    assert_true(vid >= 1 && vid < 8);
    const char *n = json_string_value(json_object_get(v, "name"));
    name_of[vid] = strcmp(n, "ann") == 0 ? "ann" : strcmp(n, "bob") == 0 ? "bob"
                   : strcmp(n, "cyd") == 0 ? "cyd" : NULL;
    team_of[vid] = strcmp(n, "cyd") == 0 ? "blue" : name_of[vid] ? "red" : NULL;
  }
  json_decref(vols);

  double credit[8] = {0}, cpu[8] = {0};
  long long results[8] = {0};
  check_tasks(f, id, name_of, credit, cpu, results);
  check_stats(f->srv.url, credit, cpu, results, team_of, team_of);
  check_cli(f->srv.url, credit, name_of);

  /* kill -9, restart: the same standings, from the store */
  int st = server_fixture_stop(f, SIGKILL);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  double credit2[8] = {0}, cpu2[8] = {0};
  long long results2[8] = {0};
  check_tasks(f, id, name_of, credit2, cpu2, results2);
  for (int k = 0; k < 8; k++)
    assert_true(near(credit[k], credit2[k]) && results[k] == results2[k]);
  check_stats(f->srv.url, credit, cpu, results, team_of, team_of);
  /* the admin's list agrees too */
  vols = get(f->srv.url, "/v1/volunteers", ADMIN);
  json_array_foreach(json_object_get(vols, "volunteers"), i, v) {
    long long vid = (long long)json_integer_value(json_object_get(v, "id"));
    assert_true(near(json_real_value(json_object_get(v, "credit")), credit[vid]));
  }
  json_decref(vols);
  move_bob(f, credit, cpu, results, name_of, team_of);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bad_input),
    cmocka_unit_test(test_credit_end_to_end),
  };
  return cmocka_run_group_tests(tests, server_fixture_setup, server_fixture_teardown);
}
