/* test_job_life.c — a job's life against a real cairn-server, real cairn-worker
 * processes and the real `cairn` command, on SQLite files: cancel in the
 * middle of a 2,000-task job (no allocation after the acknowledgement, the
 * running apps and their children killed within 2 s, timed from the apps'
 * own records), delete (file store and database + WAL sizes before and
 * after, the audit kept without --purge and gone with it), priority (a
 * later high-priority job finishes first), retention (--keep-finished with
 * a fraction of a day), kill -9 after each acknowledgement, and bad
 * requests that change nothing. Prints the figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static void start_server(fixture *f, const char *const *extra) {
  if (server_fixture_restart(f, extra))
    fail_msg("server did not start");
}

/* kill -9 and start again on the same database. */
static void crash_restart(fixture *f) {
  server_fixture_stop(f, SIGKILL);
  start_server(f, NULL);
}

static double wall(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Submits job (taken). */
static long long submit(const char *url, json_t *job) {
  json_t *r = NULL;
  long st = harness_http_json(url, "POST", "/v1/jobs", ADMIN, job, &r);
  json_decref(job);
  if (st != 201)
    fail_msg("submit: HTTP %ld", st);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* A job of n tasks of app sh, each running script (task i's id is "t<i>"). */
static json_t *sh_job(const char *name, int n, const char *script, int lease_seconds) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    char id[32];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s, s:[s, s]}", "id", id, "args", "-c", script));
  }
  return json_pack("{s:s, s:s, s:s, s:i, s:i, s:o}", "name", name, "app", "sh", "policy", "fifo",
                   "lease_seconds", lease_seconds, "max_attempts", 3, "tasks", tasks);
}

static json_t *job_get(const char *url, long long id, long *status) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  *status = harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL);
  return r;
}

static const char *state_of(const char *url, long long id, char buf[32]) {
  long st;
  json_t *r = job_get(url, id, &st);
  snprintf(buf, 32, "%s", st == 200 ? json_string_value(json_object_get(r, "state")) : "(gone)");
  json_decref(r);
  return buf;
}

static long long count_of(const char *url, long long id, const char *state) {
  long st;
  json_t *r = job_get(url, id, &st);
  long long n = (long long)json_integer_value(json_object_get(json_object_get(r, "counts"), state));
  json_decref(r);
  return n;
}

/* cairn_allocations_total from /metrics. */
static long long allocations_total(const char *url) {
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  const char *p = strstr(raw, "\ncairn_allocations_total ");
  long long n = p ? atoll(p + 25) : -1;
  free(raw);
  return n;
}

static pid_t start_worker(fixture *f, const char *name, int slots, const char *idle) {
  char s[16];
  snprintf(s, sizeof s, "%d", slots);
  const char *args[] = {"--app", "sh=/bin/sh", "--slots", s, "--exit-when-idle", idle,
                        "--log-level", "info", NULL};
  pid_t pid = harness_worker(f->srv.url, f->dir, name, args);
  assert_true(pid > 0);
  return pid;
}

static void reap(pid_t pid, double timeout) {
  if (harness_wait(pid, timeout) == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    fail_msg("worker %d did not exit within %.0f s", (int)pid, timeout);
  }
}

/* Runs the cairn command with args; returns its exit status, output in *out. */
static int cairn(fixture *f, const char *const *args, char **out) {
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn");
  const char *argv[16] = {bin};
  int n = 1;
  for (; args[n - 1]; n++)
    argv[n] = args[n - 1];
  argv[n] = NULL;
  setenv("CAIRN_SERVER", f->srv.url, 1);
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  return harness_run(argv, out);
}

/* ---- cancel ---- */

typedef struct start_rec {
  double at;
  int sh, child;
} start_rec;

/* The apps' own records: "START <time> <sh pid> <sleep pid>" lines. */
static size_t read_starts(const char *path, start_rec *out, size_t max) {
  FILE *fp = fopen(path, "r");
  size_t n = 0;
  char line[256];
  while (fp && n < max && fgets(line, sizeof line, fp)) {
    start_rec r;
    if (sscanf(line, "START %lf %d %d", &r.at, &r.sh, &r.child) == 3)
      out[n++] = r;
  }
  if (fp)
    fclose(fp);
  return n;
}

/* 1 while process pid runs (a zombie has ended). */
static int alive(int pid) {
  char path[64], buf[512];
  snprintf(path, sizeof path, "/proc/%d/stat", pid);
  FILE *fp = fopen(path, "r");
  if (!fp)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, fp);
  fclose(fp);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

static void test_cancel_midway(void **state) {
  fixture *f = *state;
  start_server(f, NULL);
  char starts[4300], script[4600];
  snprintf(starts, sizeof starts, "%s/starts", f->dir);
  /* each app notes when it started (its shell and its child), then sleeps */
  snprintf(script, sizeof script,
           "sleep 4 & echo \"START $(date +%%s.%%N) $$ $!\" >> '%s'; wait; echo done", starts);
  long long id = submit(f->srv.url, sh_job("long", 2000, script, 3));
  pid_t w[3];
  for (int i = 0; i < 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "w%d", i);
    w[i] = start_worker(f, name, 2, "3");
  }
  /* in the middle: some tasks done, six running */
  double until = harness_now() + 60;
  while (count_of(f->srv.url, id, "done") < 6 && harness_now() < until)
    usleep(100000);
  assert_true(count_of(f->srv.url, id, "done") >= 6);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", id);
  json_t *r = NULL;
  double before = wall();
  assert_int_equal(harness_http(f->srv.url, "POST", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  double acked = wall();
  long long allocs = allocations_total(f->srv.url);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "cancelled");
  long long out = json_integer_value(json_object_get(r, "leases_out"));
  json_decref(r);
  /* every app running at the acknowledgement (and its child) ends within 2 s */
  start_rec rec[2100];
  size_t n = read_starts(starts, rec, 2100);
  double last_end = acked;
  int running = 0;
  for (;;) {
    running = 0;
    for (size_t i = 0; i < n; i++)
      running += alive(rec[i].sh) || alive(rec[i].child);
    if (!running || wall() > acked + 5)
      break;
    usleep(20000);
    last_end = wall();
  }
  assert_int_equal(running, 0);
  /* no task started after the acknowledgement (beyond an offer already on its way) */
  for (int i = 0; i < 3; i++)
    reap(w[i], 30);
  size_t n2 = read_starts(starts, rec, 2100), late = 0, inflight = 0;
  for (size_t i = 0; i < n2; i++) {
    late += rec[i].at > acked + 0.5;
    inflight += rec[i].at > before && rec[i].at <= acked + 0.5;
  }
  char buf[32];
  long long done = count_of(f->srv.url, id, "done");
  fprintf(stderr, "cancel: %lld of 2000 tasks done, %lld leases out at the cancel; apps started "
          "%zu (%zu within 0.5 s of the acknowledgement, %zu later); last app ended %.2f s after "
          "the acknowledgement; allocations after it: %lld\n", done, out, n2, inflight, late,
          last_end - acked, allocations_total(f->srv.url) - allocs);
  assert_int_equal(late, 0);
  assert_true(last_end - acked < 2.0);
  assert_int_equal(allocations_total(f->srv.url), allocs);
  assert_true(done < 2000);
  assert_string_equal(state_of(f->srv.url, id, buf), "cancelled");
  /* the cancelled apps' results were not recorded */
  assert_int_equal(count_of(f->srv.url, id, "done"), done);
  /* journaled: kill -9 after the acknowledgement loses nothing */
  crash_restart(f);
  assert_string_equal(state_of(f->srv.url, id, buf), "cancelled");
  assert_int_equal(count_of(f->srv.url, id, "done"), done);
  /* idempotent; a finished job is refused, through the command */
  char *txt = NULL;
  char ids[32];
  snprintf(ids, sizeof ids, "%lld", id);
  assert_int_equal(cairn(f, (const char *const[]){"cancel", ids, NULL}, &txt), 0);
  assert_non_null(strstr(txt, "already cancelled"));
  free(txt);
}

/* ---- delete ---- */

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

static long long dir_size(const char *path) {
  DIR *d = opendir(path);
  long long n = 0;
  struct dirent *e;
  char p[4400];
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    if (snprintf(p, sizeof p, "%s/%s", path, e->d_name) >= (int)sizeof p)
      continue; /* no such long name in a test's folder */
    n += file_size(p);
  }
  if (d)
    closedir(d);
  return n;
}

static void sizes(fixture *f, long long *files, long long *db) {
  char p[4400];
  snprintf(p, sizeof p, "%s.files", f->db);
  *files = dir_size(p);
  snprintf(p, sizeof p, "%s-wal", f->db);
  *db = file_size(f->db) + file_size(p);
}

/* Uploads n random bytes; sha gets their digest. */
static void upload_random(const char *url, size_t n, char sha[65]) {
  char *data = malloc(n);
  FILE *fp = fopen("/dev/urandom", "rb");
  assert_true(fp && fread(data, 1, n, fp) == n);
  fclose(fp);
  cairn__sha256_hex(data, n, sha);
  char path[128];
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  long st = harness_http(url, "PUT", path, ADMIN, data, n, NULL, NULL, NULL);
  assert_true(st == 200 || st == 201);
  free(data);
}

/* Runs a job of n tasks reading file sha and printing 48 KiB of it (as
 * hex) to the end with one worker; returns its id and the index of its
 * first task in *idx. */
static long long run_file_job(fixture *f, const char *sha, int n, long long *idx) {
  json_t *job = sh_job("bulky", n, "od -An -tx1 -N 16384 inputs/big", 60);
  json_object_set_new(job, "files", json_pack("[{s:s, s:s}]", "name", "big", "sha256", sha));
  json_t *t;
  size_t i;
  json_array_foreach(json_object_get(job, "tasks"), i, t)
    json_object_set_new(t, "inputs", json_pack("[s]", "big"));
  long long id = submit(f->srv.url, job);
  pid_t w = start_worker(f, "wd", 2, "2");
  reap(w, 120);
  char buf[32];
  assert_string_equal(state_of(f->srv.url, id, buf), "done");
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  *idx = json_integer_value(json_object_get(json_array_get(json_object_get(r, "tasks"), 0), "index"));
  json_decref(r);
  return id;
}

/* The job the audit names for index idx, 0 when it knows no allocation. */
static long long audit_job(const char *url, long long idx) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/audit/index/%lld", idx);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  long long job = json_is_true(json_object_get(r, "allocated"))
                    ? (long long)json_integer_value(json_object_get(r, "job"))
                    : 0;
  json_decref(r);
  return job;
}

static void test_delete_frees_disk(void **state) {
  fixture *f = *state;
  start_server(f, NULL);
  char sha1[65], sha2[65];
  upload_random(f->srv.url, 8 << 20, sha1);
  upload_random(f->srv.url, 4 << 20, sha2);
  long long idx1 = 0, idx2 = 0;
  long long j1 = run_file_job(f, sha1, 200, &idx1);
  long long j2 = run_file_job(f, sha2, 20, &idx2);
  long long files0, db0, files1, db1, files2, db2;
  sizes(f, &files0, &db0);
  char ids[32], *txt = NULL;
  snprintf(ids, sizeof ids, "%lld", j1);
  double t0 = harness_now();
  assert_int_equal(cairn(f, (const char *const[]){"delete", ids, NULL}, &txt), 0);
  double took = harness_now() - t0;
  sizes(f, &files1, &db1);
  fprintf(stderr, "delete: %s", txt);
  fprintf(stderr, "delete of job %lld (200 tasks, 8 MiB input) in %.2f s: file store %lld -> %lld "
          "bytes, database + WAL %lld -> %lld bytes\n", j1, took, files0, files1, db0, db1);
  assert_non_null(strstr(txt, "1 files (8388608 bytes)"));
  free(txt);
  assert_int_equal(files0 - files1, 8 << 20);
  assert_true(db1 < db0 - 200 * 16384); /* the results' pages went back */
  assert_int_equal(audit_job(f->srv.url, idx1), j1); /* the audit still answers */
  long st;
  json_decref(job_get(f->srv.url, j1, &st));
  assert_int_equal(st, 404);
  /* journaled: kill -9 after the acknowledgement */
  crash_restart(f);
  json_decref(job_get(f->srv.url, j1, &st));
  assert_int_equal(st, 404);
  assert_int_equal(audit_job(f->srv.url, idx1), j1);
  /* --purge: the allocations go too */
  snprintf(ids, sizeof ids, "%lld", j2);
  assert_int_equal(cairn(f, (const char *const[]){"delete", ids, "--purge", NULL}, &txt), 0);
  fprintf(stderr, "delete --purge: %s", txt);
  assert_non_null(strstr(txt, "20 allocations"));
  free(txt);
  sizes(f, &files2, &db2);
  fprintf(stderr, "delete --purge of job %lld: file store %lld -> %lld bytes, database + WAL "
          "%lld -> %lld bytes; audit: index %lld (deleted job %lld) allocated in job %lld, index "
          "%lld (purged job %lld) in job %lld (0: none)\n", j2, files1, files2, db1, db2, idx1, j1,
          audit_job(f->srv.url, idx1), idx2, j2, audit_job(f->srv.url, idx2));
  assert_int_equal(files2, 0);
  assert_int_equal(audit_job(f->srv.url, idx2), 0);
  /* a new job gets a new id and runs */
  char again[65];
  upload_random(f->srv.url, 1024, again);
  long long idx3 = 0;
  long long j3 = run_file_job(f, again, 2, &idx3);
  assert_int_equal(j3, j2 + 1);
  assert_true(idx3 != idx1 && idx3 != idx2);
}

/* ---- priority ---- */

static void test_priority_first(void **state) {
  fixture *f = *state;
  start_server(f, NULL);
  long long low = submit(f->srv.url, sh_job("low", 60, "sleep 0.1; echo low", 60));
  pid_t w = start_worker(f, "wp", 1, "2");
  double until = harness_now() + 30;
  while (count_of(f->srv.url, low, "done") < 3 && harness_now() < until)
    usleep(50000);
  json_t *job = sh_job("high", 5, "echo high", 60);
  json_object_set_new(job, "priority", json_integer(10));
  long long high = submit(f->srv.url, job);
  char buf[32];
  until = harness_now() + 60;
  while (strcmp(state_of(f->srv.url, high, buf), "done") != 0 && harness_now() < until)
    usleep(20000);
  long long low_done = count_of(f->srv.url, low, "done");
  fprintf(stderr, "priority: job %lld (priority 10, 5 tasks) done while job %lld (priority 0, "
          "submitted first) had %lld of 60 tasks done\n", high, low, low_done);
  assert_string_equal(state_of(f->srv.url, high, buf), "done");
  assert_string_equal(state_of(f->srv.url, low, buf), "running");
  assert_true(low_done < 60);
  /* cairn priority while it runs; journaled */
  char ids[32], *txt = NULL;
  snprintf(ids, sizeof ids, "%lld", low);
  assert_int_equal(cairn(f, (const char *const[]){"priority", ids, "-3", NULL}, &txt), 0);
  assert_non_null(strstr(txt, "priority -3"));
  free(txt);
  kill(w, SIGTERM);
  reap(w, 30);
  crash_restart(f);
  long st;
  json_t *r = job_get(f->srv.url, low, &st);
  assert_int_equal(json_integer_value(json_object_get(r, "priority")), -3);
  json_decref(r);
}

/* ---- retention ---- */

static void test_retention(void **state) {
  fixture *f = *state;
  char log[4300];
  snprintf(log, sizeof log, "%s/server.log", f->dir);
  int saved = dup(2), fd = open(log, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(saved >= 0 && fd >= 0);
  dup2(fd, 2); /* the server's log */
  /* 0.00002 days = 1.7 s */
  int rc = server_fixture_restart(f, (const char *const[]){"--keep-finished", "0.00002", NULL});
  dup2(saved, 2);
  close(saved);
  close(fd);
  assert_int_equal(rc, 0);
  long long id = submit(f->srv.url, sh_job("short", 3, "echo ok", 60));
  long long cancelled = submit(f->srv.url, sh_job("never", 3, "echo no", 60));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", cancelled);
  assert_int_equal(harness_http(f->srv.url, "POST", path, ADMIN, NULL, 0, NULL, NULL, NULL), 200);
  pid_t w = start_worker(f, "wr", 1, "1");
  reap(w, 30);
  double t0 = harness_now(), until = t0 + 20;
  long st = 200, st2 = 200;
  while ((st != 404 || st2 != 404) && harness_now() < until) {
    json_decref(job_get(f->srv.url, id, &st));
    json_decref(job_get(f->srv.url, cancelled, &st2));
    usleep(100000);
  }
  char grep[4500];
  snprintf(grep, sizeof grep, "grep -c 'retention: job' '%s' >&2", log);
  fprintf(stderr, "retention (--keep-finished 0.00002 = 1.7 s): jobs gone %.1f s after the "
          "worker left; log lines: ", harness_now() - t0);
  int found = system(grep);
  assert_int_equal(st, 404);
  assert_int_equal(st2, 404);
  assert_int_equal(found, 0);
}

/* ---- bad requests ---- */

static void test_bad_requests(void **state) {
  fixture *f = *state;
  start_server(f, NULL);
  char vol[65];
  harness_register(f->srv.url, "w", "sh", vol);
  long long id = submit(f->srv.url, sh_job("j", 2, "echo", 60));
  static const struct {
    const char *method, *path, *body, *token;
    long status;
    const char *says;
  } cases[] = {
    {"POST", "/v1/jobs/1/cancel", NULL, NULL, 401, "admin token"},
    {"POST", "/v1/jobs/1/cancel", NULL, "vol", 403, "admin token"},
    {"DELETE", "/v1/jobs/1", NULL, "vol", 403, "admin token"},
    {"POST", "/v1/jobs/1/priority", "{\"priority\": 2}", NULL, 401, "admin token"},
    {"POST", "/v1/jobs/x/cancel", NULL, ADMIN, 400, "not a job id"},
    {"POST", "/v1/jobs/1/cancel", "{\"now\": 1}", ADMIN, 400, "unknown field"},
    {"POST", "/v1/jobs/9/cancel", NULL, ADMIN, 404, "no job 9"},
    {"POST", "/v1/jobs/1/priority", "{\"priority\": \"high\"}", ADMIN, 400, "must be an integer"},
    {"POST", "/v1/jobs/1/priority", "{\"priority\": 1e3}", ADMIN, 400, "must be an integer"},
    {"POST", "/v1/jobs/1/priority", "{\"priority\": 9999999999}", ADMIN, 400, "must be an integer"},
    {"POST", "/v1/jobs/1/priority", "{}", ADMIN, 400, "must be an integer"},
    {"POST", "/v1/jobs/1/priority", "[1]", ADMIN, 400, "JSON object"},
    {"DELETE", "/v1/jobs/1?purge=maybe", NULL, ADMIN, 400, "must be 1, 0"},
    {"DELETE", "/v1/jobs/0", NULL, ADMIN, 400, "not a job id"},
    {"GET", "/v1/jobs/1/cancel", NULL, ADMIN, 405, "not allowed"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *raw = NULL;
    size_t len = 0;
    const char *tok = cases[i].token && strcmp(cases[i].token, "vol") == 0 ? vol : cases[i].token;
    long st = harness_http(f->srv.url, cases[i].method, cases[i].path, tok, cases[i].body,
                           cases[i].body ? strlen(cases[i].body) : 0, NULL, &raw, &len);
    if (st != cases[i].status || !raw || !strstr(raw, cases[i].says))
      fail_msg("%s %s: HTTP %ld %s, wanted %ld naming %s", cases[i].method, cases[i].path, st,
               raw ? raw : "", cases[i].status, cases[i].says);
    free(raw);
  }
  char buf[32];
  long st;
  json_t *r = job_get(f->srv.url, id, &st);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "running");
  assert_int_equal(json_integer_value(json_object_get(r, "priority")), 0);
  json_decref(r);
  /* the command says what is wrong */
  char *txt = NULL;
  assert_int_equal(cairn(f, (const char *const[]){"priority", "1", "lots", NULL}, &txt), 1);
  free(txt);
  assert_int_equal(cairn(f, (const char *const[]){"delete", "7", NULL}, &txt), 1);
  free(txt);
  assert_string_equal(state_of(f->srv.url, id, buf), "running");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_cancel_midway, server_fixture_setup_stopped,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_delete_frees_disk, server_fixture_setup_stopped,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_priority_first, server_fixture_setup_stopped,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_retention, server_fixture_setup_stopped,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_bad_requests, server_fixture_setup_stopped,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
