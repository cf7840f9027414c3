/* test_trust_e2e.c — adaptive replication with real processes: three honest
 * workers and a liar run adaptive jobs (replication 2, quorum 2) on a
 * master with --trust-threshold 3 --spot-check 0.25. A warm-up job makes
 * every worker trusted, the liar answering right; then the liar answers
 * every task of the main job (chains of tasks) wrong. Its tasks run once; a spot
 * check catches the liar within a bounded number of its lies (printed), its
 * trust resets, its unreplicated results are computed again, and every
 * task's accepted output is right. /metrics, GET /v1/volunteers and
 * `cairn volunteers` show it; trust survives a kill -9 and a restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NCHAINS 8 /* the main job: chains of tasks, each after the one before */
#define CHAIN 30
#define NTASKS (NCHAINS * CHAIN)
#define WARMUP 24
#define SPOT 0.25

static char bin_cli[4096];

static int setup(void **state) {
  (void)state;
  harness_bin(bin_cli, sizeof bin_cli, "cairn");
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  return 0;
}

/* The value of metric name (a line "name VALUE") in /metrics, or -1. */
static long long metric(const char *url, const char *name) {
  char *raw = NULL, key[128];
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  snprintf(key, sizeof key, "\n%s ", name);
  const char *p = raw ? strstr(raw, key) : NULL;
  long long v = p ? atoll(p + strlen(key)) : -1;
  free(raw);
  return v;
}

/* GET /v1/volunteers: each worker's trust by name w0..w3 (-1: absent),
 * and whether it is trusted. */
static void trusts(const char *url, long long trust[4], int trusted[4], long long id[4]) {
  json_t *r = NULL, *v;
  size_t k;
  assert_int_equal(harness_http(url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  for (int i = 0; i < 4; i++)
    trust[i] = -1, trusted[i] = 0, id[i] = 0;
  json_array_foreach(json_object_get(r, "volunteers"), k, v) {
    int i = -1;
    if (sscanf(json_string_value(json_object_get(v, "name")), "w%d", &i) != 1 || i < 0 || i > 3)
      continue;
    assert_true(json_is_integer(json_object_get(v, "trust")));
    trust[i] = (long long)json_integer_value(json_object_get(v, "trust"));
    trusted[i] = json_is_true(json_object_get(v, "trusted"));
    id[i] = (long long)json_integer_value(json_object_get(v, "id"));
  }
  json_decref(r);
}

static pid_t worker(const char *url, const char *dir, int i, const char *script) {
  char app[4300], name[16]; /* "sq=" and a script path of up to 4,199 bytes */
  snprintf(app, sizeof app, "sq=%s", script);
  snprintf(name, sizeof name, "w%d", i);
  /* the liar's script reads its switch file and writes its log in the
   * test's folder: shown read-write in the sandbox */
  char rw[4300];
  snprintf(rw, sizeof rw, "%s:rw", dir);
  const char *args[] = {"--app", app, "--slots", "1", "--exit-when-idle", "6",
                        "--sandbox-bind", rw, NULL};
  pid_t p = harness_worker(url, dir, name, args);
  assert_true(p > 0);
  return p;
}

/* The 1-based position among the liar's lies (its log, in the order it ran
 * them) of its answer to task name, or 0 when it told no lie there. */
static int lie_number(const char *log, const char *name) {
  FILE *f = fopen(log, "r");
  assert_non_null(f);
  char line[256], task[128], what[16];
  int lies = 0, found = 0;
  while (!found && fgets(line, sizeof line, f))
    if (sscanf(line, "%127s %15s", task, what) == 2 && strcmp(what, "lie") == 0) {
      lies++;
      found = strcmp(task, name) == 0;
    }
  fclose(f);
  return found ? lies : 0;
}

/* The liar's first result judged invalid, from its audit (allocations in
 * order): the task's name (static), or NULL. */
static const char *first_invalid(const char *url, long long id) {
  static char name[128];
  char path[64];
  snprintf(path, sizeof path, "/v1/audit/volunteers/%lld", id);
  json_t *r = NULL, *a;
  size_t k;
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  const char *found = NULL;
  json_array_foreach(json_object_get(r, "allocations"), k, a) {
    json_t *res = json_object_get(a, "result");
    const char *o = json_string_value(json_object_get(res, "outcome"));
    if (o && strcmp(o, "invalid") == 0) {
      snprintf(name, sizeof name, "%s", json_string_value(json_object_get(a, "task")));
      found = name;
      break;
    }
  }
  json_decref(r);
  return found;
}

/* Submits a job of n tasks "tK" (K squared) in chains of chain
 * tasks (1: independent ones); its id. Chains keep few tasks eligible, so
 * that a spot check's second copy goes out soon after the first. */
static long long submit_squares(const char *url, const char *dir, const char *name, int n,
                                int chain, int adaptive) {
  json_t *tasks = json_array();
  for (int k = 0; k < n; k++) {
    char id[16], arg[16], parent[16];
    snprintf(id, sizeof id, "t%d", k);
    snprintf(arg, sizeof arg, "%d", k);
    snprintf(parent, sizeof parent, "t%d", k - 1);
    json_t *t = json_pack("{s:s, s:[s]}", "id", id, "args", arg);
    if (k % chain)
      json_object_set_new(t, "after", json_pack("[s]", parent));
    json_array_append_new(tasks, t);
  }
  json_t *job = json_pack("{s:s, s:s, s:i, s:i, s:b, s:i, s:s, s:o}", "name", name, "app", "sq",
                          "replication", 2, "quorum", 2, "adaptive", adaptive, "max_attempts", 8,
                          "policy", "fifo", "tasks", tasks);
  char path[4300];
  snprintf(path, sizeof path, "%s/%s.json", dir, name);
  assert_int_equal(json_dump_file(job, path, JSON_COMPACT), 0);
  json_decref(job);
  const char *submit[] = {bin_cli, "submit", path, "--server", url, NULL};
  char *out = NULL;
  assert_int_equal(harness_run(submit, &out), 0);
  long long jid = atoll(out);
  free(out);
  assert_true(jid > 0);
  return jid;
}

/* Waits (240 s at most) until job is no longer running: its state. */
static const char *wait_job(const char *url, long long jid) {
  double until = harness_now() + 240;
  static char state_now[16];
  snprintf(state_now, sizeof state_now, "timeout");
  char jpath[64];
  snprintf(jpath, sizeof jpath, "/v1/jobs/%lld", jid);
  while (harness_now() < until) {
    json_t *j = NULL;
    assert_int_equal(harness_http(url, "GET", jpath, ADMIN, NULL, 0, &j, NULL, NULL), 200);
    const char *s = json_string_value(json_object_get(j, "state"));
    int running = strcmp(s, "running") == 0;
    if (!running)
      snprintf(state_now, sizeof state_now, "%s", s);
    json_decref(j);
    if (!running)
      break;
    usleep(100000);
  }
  return state_now;
}

/* Every task of job is done with the right output. */
static void check_squares(const char *url, long long jid, int n) {
  char tpath[64];
  snprintf(tpath, sizeof tpath, "/v1/jobs/%lld/tasks", jid);
  json_t *resp = NULL, *t;
  size_t k;
  assert_int_equal(harness_http(url, "GET", tpath, ADMIN, NULL, 0, &resp, NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(resp, "tasks")), n);
  json_array_foreach(json_object_get(resp, "tasks"), k, t) {
    int x = -1;
    assert_int_equal(sscanf(json_string_value(json_object_get(t, "id")), "t%d", &x), 1);
    char want[64];
    snprintf(want, sizeof want, "%d squared is %d\n", x, x * x);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    assert_string_equal(json_string_value(json_object_get(t, "output")), want);
  }
  json_decref(resp);
}

static void test_liar_caught_by_spot_checks(void **state) {
  (void)state;
  char honest[4200], liar[4200], lielog[4200], liefile[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir, *db = sf.db;
  const char *const extra[] = {"--trust-threshold", "3", "--spot-check", "0.25", NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  /* the app: task k answers k squared */
  snprintf(honest, sizeof honest, "%s/sq.sh", dir);
  harness_write_file(honest, "#!/bin/sh\necho \"$1 squared is $(($1 * $1))\"\n");
  chmod(honest, 0755);
  snprintf(lielog, sizeof lielog, "%s/liar.log", dir);
  snprintf(liefile, sizeof liefile, "%s/lie-now", dir);
  /* the liar lies once the file liefile exists */
  char text[20000];
  snprintf(text, sizeof text,
           "#!/bin/sh\nif [ ! -e '%s' ]; then echo \"t$1 ok\" >> '%s';"
           " echo \"$1 squared is $(($1 * $1))\";\n"
           "else echo \"t$1 lie\" >> '%s'; echo \"$1 squared is $(($1 * $1 + 1))\"; fi\n",
           liefile, lielog, lielog);
  snprintf(liar, sizeof liar, "%s/liar.sh", dir);
  harness_write_file(liar, text);
  chmod(liar, 0755);
  pid_t w[4];
  w[0] = worker(sf.srv.url, dir, 0, liar);
  for (int i = 1; i < 4; i++)
    w[i] = worker(sf.srv.url, dir, i, honest);
  /* warm-up: everyone honest, replicated, until everyone is trusted (a
   * worker that started late may need a second job) */
  long long trust[4], id[4];
  int trusted[4], all = 0;
  for (int round = 0; round < 5 && !all; round++) {
    char name[32];
    snprintf(name, sizeof name, "warm-up-%d", round);
    long long wid = submit_squares(sf.srv.url, dir, name, WARMUP, 1, 0);
    assert_string_equal(wait_job(sf.srv.url, wid), "done");
    check_squares(sf.srv.url, wid, WARMUP);
    trusts(sf.srv.url, trust, trusted, id);
    all = trusted[0] && trusted[1] && trusted[2] && trusted[3];
  }
  assert_true(all);
  harness_write_file(liefile, "lie\n");
  long long jid = submit_squares(sf.srv.url, dir, "squares", NTASKS, CHAIN, 1);
  assert_string_equal(wait_job(sf.srv.url, jid), "done");
  harness_stop_all(w, 4, 30);
  check_squares(sf.srv.url, jid, NTASKS);

  /* the liar was caught, within 10/p of its lies */
  trusts(sf.srv.url, trust, trusted, id);
  const char *caught = first_invalid(sf.srv.url, id[0]);
  assert_non_null(caught);
  int lies = lie_number(lielog, caught);
  long long unrepl = metric(sf.srv.url, "cairn_tasks_unreplicated_total");
  long long spots = metric(sf.srv.url, "cairn_spot_checks_total");
  long long resets = metric(sf.srv.url, "cairn_trust_resets_total");
  long long rechecks = metric(sf.srv.url, "cairn_trust_rechecks_total");
  fprintf(stderr, "liar caught at its lie number %d (task %s; bound %d); %lld tasks accepted "
          "unreplicated, %lld spot checks, %lld trust resets, %lld re-checked; trust "
          "%lld %lld %lld %lld\n", lies, caught, (int)(10 / SPOT), unrepl, spots, resets,
          rechecks, trust[0], trust[1], trust[2], trust[3]);
  assert_true(lies >= 1 && lies <= (int)(10 / SPOT));
  assert_true(unrepl > 0);
  assert_true(spots > 0);
  assert_true(resets >= 1);
  if (lies > 1) /* lies before the caught one were accepted alone: re-checked */
    assert_true(rechecks >= 1);
  assert_false(trusted[0]);
  assert_true(trust[0] < 3);
  for (int i = 1; i < 4; i++)
    assert_true(trusted[i] && trust[i] >= 3);

  /* kill -9 and restart: trust is kept */
  int st = server_fixture_stop(&sf, SIGKILL);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  long long trust2[4], id2[4];
  int trusted2[4];
  trusts(sf.srv.url, trust2, trusted2, id2);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(trust2[i], trust[i]);
    assert_int_equal(trusted2[i], trusted[i]);
  }
  char *out = NULL;
  const char *list[] = {bin_cli, "volunteers", "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(list, &out), 0);
  assert_non_null(strstr(out, "TRUSTED"));
  const char *line = strstr(out, " w1 ");
  assert_non_null(line);
  const char *eol = strchr(line, '\n');
  assert_non_null(eol);
  assert_true(eol - line > 4 && strncmp(eol - 4, " yes", 4) == 0); /* TRUSTED column */
  free(out);
  /* the audit's copy of each volunteer carries the same trust */
  for (int i = 0; i < 4; i++) {
    char path[64];
    json_t *a = NULL;
    snprintf(path, sizeof path, "/v1/audit/volunteers/%lld", id2[i]);
    assert_int_equal(harness_http(sf.srv.url, "GET", path, ADMIN, NULL, 0, &a, NULL, NULL), 200);
    json_t *v = json_object_get(a, "volunteer");
    assert_int_equal(json_integer_value(json_object_get(v, "trust")), trust2[i]);
    assert_int_equal(json_is_true(json_object_get(v, "trusted")), trusted2[i]);
    assert_true(json_is_boolean(json_object_get(v, "quarantined")));
    json_decref(a);
  }
  char ids[32], want[64];
  snprintf(ids, sizeof ids, "%lld", id2[1]);
  snprintf(want, sizeof want, "): trust %lld, trusted\n", trust2[1]);
  const char *audit[] = {bin_cli, "audit", "volunteer", ids, "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(audit, &out), 0);
  assert_non_null(strstr(out, want));
  free(out);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  /* trust resets, re-checks (re-queued, tainted results) and the kill -9
   * left the live tables what the audit chain says */
  const char *verify[] = {bin_cli, "audit", "verify", "--db", db, NULL};
  int vrc = harness_run(verify, &out);
  fprintf(stderr, "cairn audit verify --db: exit %d\n%s", vrc, out ? out : "");
  assert_int_equal(vrc, 0);
  assert_non_null(strstr(out, "live rows checked: "));
  assert_non_null(strstr(out, "\nOK\n"));
  free(out);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_liar_caught_by_spot_checks),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
