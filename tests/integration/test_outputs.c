/* test_outputs.c — output files end to end with a real cairn-server, real
 * cairn-workers running cairn-app-outfiles, and the cairn command: three
 * files (one of 50 MiB) uploaded and downloaded with `cairn results --dir`
 * (digests checked, the master's and the worker's resident memory printed
 * and bounded), a child reading its parent's file, a worker that alters a
 * file out-voted under replication 2 / quorum 2, the stderr tail of a
 * failed task, and a parent's file offered to its child by a master
 * restarted after kill -9. */
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

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define BIG (50ll * 1024 * 1024)
#define MIB (1024.0 * 1024.0)

typedef server_fixture fixture;

static int setup(void **state) {
  /* Under AddressSanitizer freed memory waits in a quarantine (256 MiB)
   * instead of being reused, so resident memory grows with every request
   * served, whatever its size; a small quarantine keeps the figures below
   * about the uploads (other builds ignore the variable). */
  const char *asan = getenv("ASAN_OPTIONS");
  char opts[1024];
  snprintf(opts, sizeof opts, "%s%squarantine_size_mb=1", asan ? asan : "", asan && *asan ? ":" : "");
  setenv("ASAN_OPTIONS", opts, 1);
  return server_fixture_setup(state);
}

/* Starts a worker named name running app "of" as program app. */
static pid_t start_worker(fixture *f, const char *name, const char *app, const char *more) {
  char appflag[4400];
  snprintf(appflag, sizeof appflag, "of=%s", app);
  char bin[4096]; /* a script app execs the built cairn-app-outfiles: shown in the sandbox */
  harness_bin_dir(bin, sizeof bin);
  const char *args[] = {"--app", appflag, "--log-level", "info", "--sandbox-bind", bin,
                        more ? "--max-tasks" : NULL, more, NULL};
  pid_t pid = server_fixture_worker(f, name, args);
  assert_true(pid > 0);
  return pid;
}

static long long submit(fixture *f, const char *job) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  if (st != 201)
    fail_msg("submit: HTTP %ld: %s", st, r ? json_dumps(r, 0) : "");
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* Polls the job until it is done or failed (timeout: a failure). */
static const char *wait_job(fixture *f, long long job, double timeout) {
  static char state[32];
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  double end = harness_now() + timeout;
  while (harness_now() < end) {
    json_t *r = NULL;
    harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL);
    snprintf(state, sizeof state, "%s", json_string_value(json_object_get(r, "state")));
    json_decref(r);
    if (strcmp(state, "running") != 0)
      return state;
    usleep(250 * 1000);
  }
  fail_msg("job %lld not finished after %.0f s", job, timeout);
  return NULL;
}

static json_t *task_of(fixture *f, long long job, const char *id) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(r, "tasks"), i, t) {
    if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0) {
      json_incref(t);
      json_decref(r);
      return t;
    }
  }
  fail_msg("no task %s", id);
  return NULL;
}

/* VmRSS or VmHWM of pid in bytes. */
static double mem_of(pid_t pid, const char *field) {
  char path[64], line[256];
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *fp = fopen(path, "r");
  double kib = -1;
  while (fp && fgets(line, sizeof line, fp))
    if (strncmp(line, field, strlen(field)) == 0 && line[strlen(field)] == ':')
      kib = atof(line + strlen(field) + 1);
  if (fp)
    fclose(fp);
  assert_true(kib > 0);
  return kib * 1024.0;
}

/* The sha256 of a file on disk. */
static void file_sha(const char *path, char hex[65]) {
  FILE *fp = fopen(path, "rb");
  assert_non_null(fp);
  static char buf[65536];
  cairn__sha256 h;
  cairn__sha256_init(&h);
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, fp)) > 0)
    cairn__sha256_update(&h, buf, n);
  fclose(fp);
  cairn__sha256_final_hex(&h, hex);
}

/* The digest the app printed for name ("NAME SHA256" lines of output). */
static void printed_sha(const char *output, const char *name, char hex[65]) {
  char key[300];
  snprintf(key, sizeof key, "%s ", name);
  const char *p = strstr(output, key);
  assert_non_null(p);
  memcpy(hex, p + strlen(key), 64);
  hex[64] = '\0';
}

static void test_files_and_child(void **state) {
  fixture *f = *state;
  char app[4096];
  harness_bin(app, sizeof app, "cairn-app-outfiles");
  char job[2048];
  snprintf(job, sizeof job, /* the master keeps every file: cairn results --dir gets them */
           "{\"app\": \"of\", \"keep\": \"master\", \"tasks\": ["
           "{\"id\": \"gen\", \"args\": [\"write\", \"small.txt\", \"1000\", \"big.bin\", \"%lld\","
           " \"sub/part.dat\", \"70000\"], \"outputs\": [\"*.txt\", \"big.bin\", \"sub/*.dat\"]},"
           "{\"id\": \"use\", \"args\": [\"digest\", \"inputs/gen/big.bin\"],"
           " \"inputs\": [\"gen/big.bin\"], \"after\": [\"gen\"]}]}",
           BIG);
  pid_t w = start_worker(f, "w1", app, NULL);
  /* a small job first, so that both processes have served uploads, work
   * and results (threads started, pools and caches warm): the sizes below
   * are those right before the large upload */
  long long warm = submit(f, "{\"app\": \"of\", \"tasks\": [{\"id\": \"w\", \"args\": "
                             "[\"write\", \"w.bin\", \"300000\"], \"outputs\": [\"w.bin\"]}]}");
  assert_string_equal(wait_job(f, warm, 60), "done");
  double m_rss0 = mem_of(f->srv.pid, "VmRSS"), w_rss0 = mem_of(w, "VmRSS");
  long long id = submit(f, job);
  assert_string_equal(wait_job(f, id, 240), "done");
  double m_hwm = mem_of(f->srv.pid, "VmHWM"), w_hwm = mem_of(w, "VmHWM");
  fprintf(stderr, "outputs: 3 files (%.1f MiB in all) uploaded\n",
          (BIG + 71000) / MIB);
  fprintf(stderr, "outputs: master VmRSS before %.1f MiB, VmHWM after %.1f MiB (+%.1f MiB)\n",
          m_rss0 / MIB, m_hwm / MIB, (m_hwm - m_rss0) / MIB);
  fprintf(stderr, "outputs: worker VmRSS before %.1f MiB, VmHWM after %.1f MiB (+%.1f MiB)\n",
          w_rss0 / MIB, w_hwm / MIB, (w_hwm - w_rss0) / MIB);
  assert_true(m_hwm - m_rss0 < 16 * MIB);
  assert_true(w_hwm - w_rss0 < 16 * MIB);

  /* cairn results --dir: every file, digests verified by the command and here */
  json_t *gen = task_of(f, id, "gen");
  char *out = strdup(json_string_value(json_object_get(gen, "output")));
  assert_non_null(out);
  assert_int_equal(json_array_size(json_object_get(gen, "outputs")), 3);
  char cli[4096], outdir[4300];
  harness_bin(cli, sizeof cli, "cairn");
  snprintf(outdir, sizeof outdir, "%s/out", f->dir);
  char jid[32];
  snprintf(jid, sizeof jid, "%lld", id);
  const char *argv[] = {cli, "results", jid, "--dir", outdir, "--server", f->srv.url,
                        "--token", ADMIN, NULL};
  char *listing = NULL;
  assert_int_equal(harness_run(argv, &listing), 0);
  free(listing);
  static const char *const names[] = {"small.txt", "big.bin", "sub/part.dat"};
  char big_sha[65] = "";
  for (int i = 0; i < 3; i++) {
    char path[4600], want[65], got[65];
    struct stat st;
    snprintf(path, sizeof path, "%s/gen/%s", outdir, names[i]);
    printed_sha(out, names[i], want);
    assert_int_equal(stat(path, &st), 0);
    file_sha(path, got);
    fprintf(stderr, "outputs: %s/gen/%s %lld bytes sha256 %.12s… %s\n", "OUT", names[i],
            (long long)st.st_size, got, strcmp(got, want) == 0 ? "matches" : "DIFFERS");
    assert_string_equal(got, want);
    if (i == 1) {
      assert_int_equal(st.st_size, BIG);
      memcpy(big_sha, got, 65);
    }
  }
  json_decref(gen);

  /* the child read its parent's file at inputs/gen/big.bin */
  json_t *use = task_of(f, id, "use");
  const char *uout = json_string_value(json_object_get(use, "output"));
  assert_non_null(uout);
  assert_memory_equal(uout, big_sha, 64);
  fprintf(stderr, "outputs: child \"use\" read its parent's big.bin: sha256 %.12s…\n", uout);
  json_decref(use);

  /* the admin route serves one file */
  char path[300], *raw = NULL, hex[65];
  size_t rawlen = 0;
  snprintf(path, sizeof path, "/v1/jobs/%lld/output?task=gen&name=sub/part.dat", id);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, NULL, &raw, &rawlen),
                   200);
  assert_int_equal(rawlen, 70000);
  cairn__sha256_hex(raw, rawlen, hex);
  free(raw);
  char want[65];
  printed_sha(out, "sub/part.dat", want);
  assert_string_equal(hex, want);
  free(out);
}

/* A worker whose app alters its files is out-voted by two that agree. */
static void test_replication_outvotes_altered_file(void **state) {
  fixture *f = *state;
  char app[4096], script[4300];
  harness_bin(app, sizeof app, "cairn-app-outfiles");
  snprintf(script, sizeof script, "%s/corrupt.sh", f->dir);
  FILE *fp = fopen(script, "w");
  assert_non_null(fp);
  fprintf(fp, "#!/bin/sh\nexec '%s' --corrupt \"$@\"\n", app);
  fclose(fp);
  chmod(script, 0755);
  long long id = submit(f, "{\"app\": \"of\", \"replication\": 2, \"quorum\": 2, "
                           "\"tasks\": [{\"id\": \"t\", \"args\": [\"write\", \"r.bin\", \"100000\"], "
                           "\"outputs\": [\"r.bin\"]}]}");
  /* the altering worker computes one copy first, then stops */
  pid_t bad = start_worker(f, "bad", script, "1");
  int st = harness_wait(bad, 60);
  if (st != -1)
    server_fixture_reaped(f, bad);
  assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  start_worker(f, "good1", app, NULL);
  start_worker(f, "good2", app, NULL);
  assert_string_equal(wait_job(f, id, 120), "done");
  json_t *t = task_of(f, id, "t");
  json_t *file = json_array_get(json_object_get(t, "outputs"), 0);
  char want[65];
  printed_sha(json_string_value(json_object_get(t, "output")), "r.bin", want);
  assert_string_equal(json_string_value(json_object_get(file, "sha256")), want);
  json_decref(t);
  json_t *vols = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &vols, NULL,
                                NULL), 200);
  size_t i;
  json_t *v;
  int seen = 0;
  json_array_foreach(json_object_get(vols, "volunteers"), i, v) {
    const char *name = json_string_value(json_object_get(v, "name"));
    long long valid = json_integer_value(json_object_get(v, "valid"));
    long long invalid = json_integer_value(json_object_get(v, "invalid"));
    if (strcmp(name, "bad") == 0) {
      fprintf(stderr, "outputs: altering worker: %lld valid, %lld invalid\n", valid, invalid);
      assert_int_equal(invalid, 1);
      assert_int_equal(valid, 0);
      seen++;
    } else if (strncmp(name, "good", 4) == 0) {
      assert_int_equal(invalid, 0);
      seen++;
    }
  }
  assert_int_equal(seen, 3);
  json_decref(vols);
}

/* A failed task keeps the last 64 KiB of its larger stderr. */
static void test_failed_stderr_tail(void **state) {
  fixture *f = *state;
  char app[4096];
  harness_bin(app, sizeof app, "cairn-app-outfiles");
  long long id = submit(f, "{\"app\": \"of\", \"max_attempts\": 1, \"tasks\": "
                           "[{\"id\": \"boom\", \"args\": [\"fail\", \"300000\"]}]}");
  start_worker(f, "w9", app, NULL);
  assert_string_equal(wait_job(f, id, 60), "failed");
  json_t *t = task_of(f, id, "boom");
  const char *err = json_string_value(json_object_get(t, "stderr"));
  assert_non_null(err);
  size_t n = strlen(err);
  fprintf(stderr, "outputs: failed task: exit status %lld, stderr tail %zu bytes, ends \"%.*s\"\n",
          (long long)json_integer_value(json_object_get(t, "exit_status")), n, 20,
          err + n - 21);
  assert_int_equal(json_integer_value(json_object_get(t, "exit_status")), 3);
  assert_int_equal(n, 64 * 1024);
  /* 21-byte lines up to 300000 bytes: the last is line 14285 */
  assert_string_equal(err + n - 21, "stderr line 00014285\n");
  json_decref(t);
}

/* The declared outputs and the accepted files outlive a master killed with
 * -9: the restarted master offers the child its parent's file. */
static void test_restart_keeps_files(void **state) {
  fixture *f = *state;
  char app[4096];
  harness_bin(app, sizeof app, "cairn-app-outfiles");
  long long id = submit(f, "{\"app\": \"of\", \"tasks\": ["
                           "{\"id\": \"gen\", \"args\": [\"write\", \"p.bin\", \"5000\"], "
                           "\"outputs\": [\"*.bin\"]},"
                           "{\"id\": \"use\", \"args\": [\"digest\", \"inputs/gen/p.bin\"], "
                           "\"inputs\": [\"gen/p.bin\"], \"after\": [\"gen\"]}]}");
  pid_t a = start_worker(f, "a", app, "1");
  int st = harness_wait(a, 60);
  if (st != -1)
    server_fixture_reaped(f, a);
  assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  json_t *gen = task_of(f, id, "gen");
  assert_string_equal(json_string_value(json_object_get(gen, "state")), "done");
  char want[65];
  printed_sha(json_string_value(json_object_get(gen, "output")), "p.bin", want);
  json_decref(gen);
  server_fixture_stop(f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  start_worker(f, "b", app, NULL);
  assert_string_equal(wait_job(f, id, 60), "done");
  json_t *use = task_of(f, id, "use");
  const char *out = json_string_value(json_object_get(use, "output"));
  assert_non_null(out);
  assert_memory_equal(out, want, 64);
  fprintf(stderr, "outputs: after kill -9 and restart the child read p.bin: sha256 %.12s…\n", out);
  json_decref(use);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_files_and_child, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_replication_outvotes_altered_file, setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_failed_stderr_tail, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_restart_keeps_files, setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
