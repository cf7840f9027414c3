/* test_ban_slices_e2e.c — a ban in slices against a real cairn-server on
 * loopback (docs/accountability.md, "Banning a volunteer"): a volunteer
 * with thousands of results (taken and reported in batches over HTTP) is
 * banned one result a slice (--ban-slice 1); while the ban runs, GET
 * /healthz and another volunteer's work request are answered, and the
 * answer of the ban reports every result once it is done. Then a master
 * killed with SIGKILL in the middle of a ban finishes it when it starts
 * again: every result of the volunteer invalid, every task re-queued, its
 * ban no longer pending, and `cairn audit verify --db` passes. A master
 * with one HTTP thread answers health checks during a ban (it runs on the
 * slow lane, server/conn/slow.h); a full lane answers 429 and `cairn ban`
 * retries; a master stopped with SIGTERM mid-ban ends it after its slice
 * and finishes it at its next start. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/files.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

/* Registers name for app with slots task slots; its id, token in tok. */
static long long reg(const char *url, const char *name, int slots, char tok[65]) {
  json_t *body = json_pack("{s:s, s:[s], s:i}", "name", name, "apps", "noop", "slots", slots);
  json_t *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/volunteers", NULL, body, &r), 201);
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(body);
  json_decref(r);
  return id;
}

static void submit(const char *url, int n) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s}", "id", id));
  }
  json_t *job = json_pack("{s:s, s:s, s:o}", "app", "noop", "policy", "fifo", "tasks", tasks);
  json_t *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  json_decref(job);
  json_decref(r);
}

/* tok takes and reports every task of the job, 64 a request (batches). */
static void compute_all(const char *url, const char *tok, int n) {
  int done = 0;
  while (done < n) {
    static const char take[] = "{\"max\": 64}";
    json_t *r = NULL;
    assert_int_equal(harness_http(url, "POST", "/v1/work", tok, take, strlen(take), &r, NULL,
                                  NULL), 200);
    json_t *tasks = json_object_get(r, "tasks"), *res = json_array();
    for (size_t i = 0; i < json_array_size(tasks); i++)
      json_array_append_new(res, json_pack("{s:O, s:i, s:s}", "index",
                                           json_object_get(json_array_get(tasks, i), "index"),
                                           "exit_status", 0, "output", "ok\n"));
    size_t got = json_array_size(tasks);
    assert_true(got > 0);
    json_t *body = json_pack("{s:o}", "results", res), *a = NULL;
    assert_int_equal(harness_http_json(url, "POST", "/v1/results", tok, body, &a), 200);
    json_decref(body);
    json_decref(a);
    json_decref(r);
    done += (int)got;
  }
}

/* Polls /metrics until cairn_ban_slices_total reaches at least want; 0,
 * or -1 after 30 s. */
static int slices_reach(const char *url, long long want) {
  double until = harness_now() + 30;
  while (harness_metric(url, "cairn_ban_slices_total ") < want)
    if (harness_now() > until)
      return -1;
  return 0;
}

typedef struct ban_call {
  const char *url;
  long long id;
  long status;
  json_t *report;
  int done; /* set (atomically) once the ban's answer came */
} ban_call;

static void *ban_thread(void *p) {
  ban_call *b = p;
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", b->id);
  static const char body[] = "{\"reason\": \"forged results\"}";
  b->status = harness_http(b->url, "POST", path, ADMIN, body, strlen(body), &b->report, NULL, NULL);
  __atomic_store_n(&b->done, 1, __ATOMIC_SEQ_CST);
  return NULL;
}

/* f: a fresh folder and a master on its database with one result a slice
 * (and the extra options given, or NULL). */
static void start_with(server_fixture *f, const char *const *more) {
  const char *extra[8] = {"--ban-slice", "1"};
  for (int i = 0; more && more[i] && i < 5; i++)
    extra[2 + i] = more[i];
  assert_int_equal(server_fixture_open(f, extra, 1), 0);
}

static void start(server_fixture *f) { start_with(f, NULL); }

/* Registers "liar" (token in tok), gives it a job of n results, and starts
 * its ban in *th (*b filled): the ban's answer comes in b->status. */
static void ban_liar_of(const char *url, int n, char tok[65], ban_call *b, pthread_t *th) {
  long long liar = reg(url, "liar", 64, tok);
  submit(url, n);
  compute_all(url, tok, n);
  *b = (ban_call){url, liar, 0, NULL, 0};
  assert_int_equal(pthread_create(th, NULL, ban_thread, b), 0);
}

static void test_requests_answered_during_ban(void **state) {
  (void)state;
  enum { N = 3000 };
  char tok[65], honest[65];
  server_fixture sf;
  start(&sf);
  reg(sf.srv.url, "honest", 1, honest);
  ban_call b;
  pthread_t th;
  ban_liar_of(sf.srv.url, N, tok, &b, &th);
  double t0 = harness_now(); /* the ban has just been sent */
  /* once the ban has begun re-queueing, the master answers others
   * meanwhile: health checks, and the honest volunteer's work requests
   * (each gets a task the ban re-queued) */
  assert_int_equal(slices_reach(sf.srv.url, 1), 0);
  int during = 0, works = 0;
  while (!__atomic_load_n(&b.done, __ATOMIC_SEQ_CST)) {
    json_t *r = NULL;
    assert_int_equal(harness_http(sf.srv.url, "GET", "/healthz", NULL, NULL, 0, &r, NULL, NULL),
                     200);
    json_decref(r);
    static const char take[] = "{}";
    long st =
      harness_http(sf.srv.url, "POST", "/v1/work", honest, take, strlen(take), &r, NULL, NULL);
    assert_true(st == 200 || st == 204 || st == 429); /* 429: it holds its lease bound */
    works += st == 200;
    json_decref(r);
    during += !__atomic_load_n(&b.done, __ATOMIC_SEQ_CST); /* answered before the ban's end */
  }
  fprintf(stderr, "ban of %d results, one a slice: %.2f s; %d health checks and work requests "
          "answered meanwhile (%d with a task)\n", N, harness_now() - t0, during, works);
  assert_true(during >= 1);
  assert_true(works >= 1);
  pthread_join(th, NULL);
  assert_int_equal(b.status, 200);
  assert_int_equal(json_integer_value(json_object_get(b.report, "results_invalidated")), N);
  assert_int_equal(json_integer_value(json_object_get(b.report, "tasks_requeued")), N);
  json_decref(b.report);
  assert_int_equal(harness_metric(sf.srv.url, "cairn_ban_slices_total "), N);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(files_sql_int(sf.db, "SELECT COUNT(*) FROM results WHERE outcome <> 'invalid'"), 0);
  assert_int_equal(files_sql_int(sf.db, "SELECT ban_pending FROM volunteers WHERE name = 'liar'"), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* A master on a fresh folder with a liar of n results, stopped by sig
 * once its ban has done two slices; *b the ban's answer (joined); the
 * master's exit status. */
static int stopped_mid_ban(int sig, int n, server_fixture *f, ban_call *b) {
  char tok[65];
  start(f);
  pthread_t th;
  ban_liar_of(f->srv.url, n, tok, b, &th);
  /* a second slice begins only once the first is durable */
  assert_int_equal(slices_reach(f->srv.url, 2), 0);
  int st = server_fixture_stop(f, sig);
  pthread_join(th, NULL);
  return st;
}

static void test_kill9_mid_ban_finishes_at_start(void **state) {
  (void)state;
  enum { N = 3000 };
  server_fixture sf;
  ban_call b;
  stopped_mid_ban(SIGKILL, N, &sf, &b);
  assert_int_not_equal(b.status, 200); /* no answer: the master died */
  json_decref(b.report);
  /* the store has the ban begun, not finished: some results still valid */
  assert_int_equal(
    files_sql_int(sf.db, "SELECT banned + ban_pending FROM volunteers WHERE name = 'liar'"), 2);
  long long left = files_sql_int(sf.db, "SELECT COUNT(*) FROM results WHERE outcome = 'valid'");
  assert_true(left > 0 && left < N);

  assert_int_equal(server_fixture_restart(&sf, (const char *const[]){"--ban-slice", "1", NULL}), 0);
  assert_int_equal(files_sql_int(sf.db, "SELECT ban_pending FROM volunteers WHERE name = 'liar'"), 0);
  assert_int_equal(files_sql_int(sf.db, "SELECT COUNT(*) FROM results WHERE outcome <> 'invalid'"), 0);
  assert_int_equal(
    files_sql_int(sf.db, "SELECT COUNT(*) FROM tasks WHERE state = 'eligible' AND round = 1"), N);
  json_t *j = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/1", ADMIN, NULL, 0, &j, NULL, NULL),
                   200);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "counts"), "eligible")), N);
  json_decref(j);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  char cli[4096], *out = NULL;
  harness_bin(cli, sizeof cli, "cairn");
  const char *verify[] = {cli, "audit", "verify", "--db", sf.db, NULL};
  int rc = harness_run(verify, &out);
  if (rc != 0)
    fail_msg("cairn audit verify --db: exit %d: %s", rc, out ? out : "");
  free(out);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* With one HTTP thread, the ban still leaves it free: the ban runs on the
 * slow lane (server/conn/slow.h), so health checks are answered meanwhile. */
static void test_one_http_thread_answers_during_ban(void **state) {
  (void)state;
  enum { N = 1000 };
  char tok[65];
  server_fixture sf;
  start_with(&sf, (const char *const[]){"--threads", "1", NULL});
  ban_call b;
  pthread_t th;
  ban_liar_of(sf.srv.url, N, tok, &b, &th);
  assert_int_equal(slices_reach(sf.srv.url, 1), 0);
  int during = 0;
  while (!__atomic_load_n(&b.done, __ATOMIC_SEQ_CST)) {
    json_t *r = NULL;
    assert_int_equal(harness_http(sf.srv.url, "GET", "/healthz", NULL, NULL, 0, &r, NULL, NULL),
                     200);
    json_decref(r);
    during += !__atomic_load_n(&b.done, __ATOMIC_SEQ_CST);
  }
  pthread_join(th, NULL);
  fprintf(stderr, "one HTTP thread: %d health checks answered during the ban\n", during);
  assert_true(during >= 1);
  assert_int_equal(b.status, 200);
  assert_int_equal(json_integer_value(json_object_get(b.report, "results_invalidated")), N);
  json_decref(b.report);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* The slow lane takes at most CAIRN__SLOW_CAP (4) requests: with one
 * long ban running and three short ones queued behind it, a fifth gets 429
 * with Retry-After and a message naming the lane, and changes nothing;
 * `cairn ban` retries such a 429 after Retry-After and succeeds once the
 * long ban is done (within the 60 s its retries may wait: a few thousand
 * results, one a slice, take seconds, more under ThreadSanitizer). */
static void test_full_lane_429_then_cli_retries(void **state) {
  (void)state;
  enum { LIARS = 6, N = 2000 };
  char tok[LIARS][65];
  server_fixture sf;
  start(&sf);
  long long id[LIARS];
  for (int i = 0; i < LIARS; i++) {
    char name[16];
    snprintf(name, sizeof name, "liar%d", i);
    id[i] = reg(sf.srv.url, name, 64, tok[i]);
  }
  submit(sf.srv.url, N);
  compute_all(sf.srv.url, tok[0], N); /* liar0's ban is the long one; the others have none */
  ban_call b[4];
  pthread_t th[4];
  for (int i = 0; i < 4; i++) {
    b[i] = (ban_call){sf.srv.url, id[i], 0, NULL, 0};
    assert_int_equal(pthread_create(&th[i], NULL, ban_thread, &b[i]), 0);
    if (i == 0) /* running before the three short ones are queued behind it */
      assert_int_equal(slices_reach(sf.srv.url, 1), 0);
  }
  usleep(200 * 1000); /* the other three reach the lane's queue meanwhile */
  char path[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", id[4]);
  static const char body[] = "{\"reason\": \"x\"}";
  json_t *r = NULL;
  assert_int_equal(
    harness_http(sf.srv.url, "POST", path, ADMIN, body, strlen(body), &r, NULL, NULL), 429);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "slow requests"));
  json_decref(r);
  assert_int_equal(files_sql_int(sf.db, "SELECT banned FROM volunteers WHERE name = 'liar4'"), 0);
  /* the CLI, while the lane is still full, waits and asks again */
  char cli[4096], cmd[9000], *out = NULL;
  harness_bin(cli, sizeof cli, "cairn");
  snprintf(cmd, sizeof cmd, "'%s' ban %lld --server '%s' --token '%s' 2>&1", cli, id[5], sf.srv.url,
           ADMIN);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  int rc = harness_run(argv, &out);
  for (int i = 0; i < 4; i++) /* joined before any check can end the test */
    pthread_join(th[i], NULL);
  if (rc != 0)
    fail_msg("cairn ban: exit %d: %s", rc, out ? out : "");
  assert_non_null(strstr(out, "retrying in 1 s"));
  assert_non_null(strstr(out, "banned"));
  free(out);
  for (int i = 0; i < 4; i++) {
    assert_int_equal(b[i].status, 200);
    json_decref(b[i].report);
  }
  assert_int_equal(files_sql_int(sf.db, "SELECT banned FROM volunteers WHERE name = 'liar5'"), 1);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* A master stopped (SIGTERM) in the middle of a ban does not wait for
 * the ban's end: the ban ends after its slice, its answer is 503 saying
 * so, the store has it pending, and the next start finishes it. */
static void test_sigterm_mid_ban_ends_after_slice(void **state) {
  (void)state;
  enum { N = 3000 };
  server_fixture sf;
  ban_call b;
  assert_int_equal(stopped_mid_ban(SIGTERM, N, &sf, &b), 0);
  assert_int_equal(b.status, 503);
  const char *msg =
    json_string_value(json_object_get(json_object_get(b.report, "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "finished when it starts again"));
  json_decref(b.report);
  assert_int_equal(files_sql_int(sf.db, "SELECT ban_pending FROM volunteers WHERE name = 'liar'"), 1);
  long long left = files_sql_int(sf.db, "SELECT COUNT(*) FROM results WHERE outcome = 'valid'");
  assert_true(left > 0 && left < N);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  assert_int_equal(files_sql_int(sf.db, "SELECT ban_pending FROM volunteers WHERE name = 'liar'"), 0);
  assert_int_equal(files_sql_int(sf.db, "SELECT COUNT(*) FROM results WHERE outcome <> 'invalid'"), 0);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_sigterm_mid_ban_ends_after_slice),
      cmocka_unit_test(test_full_lane_429_then_cli_retries),
      cmocka_unit_test(test_one_http_thread_answers_during_ban),
      cmocka_unit_test(test_requests_answered_during_ban),
      cmocka_unit_test(test_kill9_mid_ban_finishes_at_start),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
