/* test_audit_projects.c — the audit log with a worker of several projects
 * (docs/worker.md, "Several projects" and "Receipts and the audit log"),
 * with real processes on loopback: two cairn-server masters and one
 * cairn-worker run with --project URL1 --project URL2.
 *
 * Each project's receipts are kept and proved in its own state directory
 * (DIR/projects/<id>/audit/receipts). The first master's database is then
 * edited while it is stopped (its newest entries removed) and the master
 * started again: the worker finds that master's log inconsistent (the log
 * line, DIR/projects/<id1>/audit/inconsistent), asks it for no more work
 * and goes on with the second, whose new job it finishes while the first
 * master's new job gains nothing more. Started again, the worker still
 * takes no work from the first (its mark found at start-up) and computes
 * for the second. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/files.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

static long long submit(server_fixture *f, const char *name, int n) {
  char text[16384];
  size_t k = (size_t)snprintf(text, sizeof text, "{\"name\": \"%s\", \"app\": \"nap\", "
                              "\"policy\": \"fifo\", \"lease_seconds\": 3, \"tasks\": [", name);
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "%s{\"id\": \"t%d\", \"args\": [\"0.2\"]}",
                          i ? ", " : "", i);
  snprintf(text + k, sizeof text - k, "]}");
  return server_fixture_submit(f, text);
}

/* Tasks of job done. */
static long long done(server_fixture *f, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  json_t *j = server_fixture_get(f, path);
  long long n = json_integer_value(json_object_get(json_object_get(j, "counts"), "done"));
  json_decref(j);
  return n;
}

static void wait_done(server_fixture *f, long long job, int n) {
  for (double until = harness_now() + 120; harness_now() < until; usleep(200000))
    if (done(f, job) == n)
      return;
  fail_msg("job %lld: %lld of %d tasks done", job, done(f, job), n);
}

/* The audit folder of project url in worker folder wdir. */
static void audit_dir(const char *wdir, const char *url, char *out, size_t len) {
  char hex[65];
  cairn__sha256_hex(url, strlen(url), hex);
  hex[16] = '\0';
  snprintf(out, len, "%s/projects/%s/audit", wdir, hex);
}

/* Receipts in audit folder dir that hold a head and proof; *hi their
 * largest leaf. */
static int proved(const char *dir, long long *hi) {
  char rdir[4400];
  snprintf(rdir, sizeof rdir, "%s/receipts", dir);
  DIR *d = opendir(rdir);
  struct dirent *de;
  int n = 0;
  *hi = -1;
  while (d && (de = readdir(d))) {
    if (strncmp(de->d_name, "receipt-", 8) != 0)
      continue;
    char path[4700];
    snprintf(path, sizeof path, "%s/%s", rdir, de->d_name);
    json_t *o = json_load_file(path, 0, NULL);
    n += json_object_get(o, "sth") != NULL;
    json_decref(o);
    long long leaf = atoll(de->d_name + 8);
    *hi = leaf > *hi ? leaf : *hi;
  }
  if (d)
    closedir(d);
  return n;
}

static int wait_proved(const char *dir, int want, long long *hi) {
  for (double until = harness_now() + 90; harness_now() < until; usleep(250000))
    if (proved(dir, hi) >= want)
      return 1;
  return 0;
}

static pid_t start_worker(server_fixture *f1, server_fixture *f2, const char *dir,
                          const char *log) {
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn-worker");
  const char *argv[] = {bin, "--project", f1->srv.url, "--project", f2->srv.url,
                        "--app", "nap=/bin/sleep", "--slots", "1", "--dir", dir,
                        "--name", "w", "--peer-listen", "off", "--log-level", "info", NULL};
  pid_t w = server_fixture_track(f1, harness_spawn(argv, log));
  assert_true(w > 0);
  return w;
}

static void test_one_project_distrusted(void **state) {
  (void)state;
  server_fixture f1, f2;
  char port[32];
  snprintf(port, sizeof port, "127.0.0.1:%u", harness_unused_port(0));
  const char *extra[] = {"--listen", port, NULL};
  assert_int_equal(server_fixture_open(&f1, extra, 1), 0);
  assert_int_equal(server_fixture_open(&f2, NULL, 1), 0);
  char dir[4200], log[4300], a1[4400], a2[4400];
  snprintf(dir, sizeof dir, "%s/w", f1.dir);
  snprintf(log, sizeof log, "%s/w.log", f1.dir);
  audit_dir(dir, f1.srv.url, a1, sizeof a1);
  audit_dir(dir, f2.srv.url, a2, sizeof a2);

  long long j1 = submit(&f1, "one", 4), j2 = submit(&f2, "one", 4);
  pid_t w = start_worker(&f1, &f2, dir, log);
  wait_done(&f1, j1, 4);
  wait_done(&f2, j2, 4);
  long long hi1 = -1, hi2 = -1;
  assert_true(wait_proved(a1, 4, &hi1)); /* each project's receipts in its own folder */
  assert_true(wait_proved(a2, 4, &hi2));
  fprintf(stderr, "receipts proved: 4 for each project (newest leaves %lld and %lld)\n", hi1,
          hi2);

  /* the first project's operator removes the newest entries of its log */
  assert_int_equal(server_fixture_stop(&f1, SIGTERM), 0);
  sqlite3 *h = NULL;
  char text[128];
  snprintf(text, sizeof text, "DELETE FROM audit_chain WHERE seq > %lld", hi1);
  assert_int_equal(sqlite3_open(f1.db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, text, NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);
  assert_int_equal(server_fixture_restart(&f1, extra), 0);
  long long k1 = submit(&f1, "two", 150); /* 30 s at least: longer than a head takes */
  assert_true(files_wait_line(log, "audit log inconsistent", 90));
  assert_true(files_wait_line(log, "asked for no more work", 5));
  char mark[4500];
  snprintf(mark, sizeof mark, "%s/inconsistent", a1);
  assert_int_equal(access(mark, R_OK), 0);
  assert_int_equal(waitpid(w, NULL, WNOHANG), 0); /* the worker goes on */
  usleep(1500000); /* a task it had begun ends */
  long long frozen = done(&f1, k1);
  long long k2 = submit(&f2, "two", 6);
  wait_done(&f2, k2, 6);
  fprintf(stderr, "the first project distrusted with %lld of 150 tasks done; the second's 6 "
          "done since\n", frozen);
  assert_true(frozen < 150);
  assert_int_equal(done(&f1, k1), frozen);

  /* started again: the mark keeps the first project out, the second is served */
  kill(w, SIGTERM);
  assert_true(harness_wait(w, 60) != -1);
  server_fixture_reaped(&f1, w);
  char log2[4300];
  snprintf(log2, sizeof log2, "%s/w2.log", f1.dir);
  w = start_worker(&f1, &f2, dir, log2);
  assert_true(files_wait_line(log2, "an earlier run found", 30));
  long long k3 = submit(&f2, "three", 4);
  wait_done(&f2, k3, 4);
  assert_int_equal(done(&f1, k1), frozen);
  assert_int_equal(server_fixture_close(&f2), 0);
  assert_int_equal(server_fixture_close(&f1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_one_project_distrusted),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
