/* test_kept_outputs.c — outputs stay where they were made (docs/jobs.md,
 * "Where outputs stay"): a real cairn-server and 8 real cairn-workers
 * serving peers on loopback in two clusters run a 3-level DAG whose every
 * task writes an 8 MiB file that its children read.
 *   1. The same DAG with "keep": "master" and with "keep": "workers": the
 *      master's bytes served (cairn_file_bytes_served_total{source=
 *      "master"}) with the outputs on the workers are at most 10% of those
 *      with every output at the master; both byte counts are printed; every
 *      file every task wrote and read has the digest computed here.
 *   2. A holder killed with SIGKILL after the first level is done and before
 *      the second starts: its outputs are recomputed (new allocations, in the
 *      audit and cairn_outputs_recomputed_total) and the job completes with
 *      the right digests. */
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
#include "tests/support/editdist.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define NWORKERS 8
#define NTASKS 10
#define OUT_BYTES (8u * 1024 * 1024)

/* The DAG: a0..a3; b_i reads a_i and a_(i+1)%4; c0 reads b0, b1; c1 reads
 * b2, b3 (the sinks). */
static const char *const ids[NTASKS] = {"a0", "a1", "a2", "a3", "b0", "b1", "b2", "b3", "c0", "c1"};
static const int parents[NTASKS][2] = {{-1, -1}, {-1, -1}, {-1, -1}, {-1, -1}, {0, 1},
                                       {1, 2},   {2, 3},   {3, 0},   {4, 5},   {6, 7}};

/* The master and its NWORKERS workers, wI in W.workers[I]. */
static server_fixture W;

static int setup(void **state) {
  (void)state;
  e2e_init();
  assert_int_equal(server_fixture_open(&W, NULL, 1), 0);
  for (int i = 0; i < NWORKERS; i++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", i);
    /* a gate task waits for DIR/TAG/go: the test folder is shown read-only
     * in the task sandbox */
    const char *args[] = {"--app", "sum=/bin/sh", "--cluster", i % 2 ? "b" : "a",
                          "--peer-listen", "127.0.0.1:0", "--exit-when-idle", "300",
                          "--stall-timeout", "10", "--log-level", "debug",
                          "--sandbox-bind", W.dir, NULL};
    assert_true(server_fixture_worker(&W, name, args) > 0);
  }
  return 0;
}

static int teardown(void **state) {
  (void)state;
  return server_fixture_close(&W); /* about 1 GB of files, caches and store */
}

/* The sha256 of task k's out.bin in run tag: 8 MiB of the line
 * "TAG ID SHA  - " repeated (newline-terminated), SHA the digest of its
 * parents' files one after the other (of nothing for a source); as the
 * task's script writes it. out[k] for every k, in order. */
static void expected(const char *tag, char out[NTASKS][65]) {
  unsigned char *keep[NTASKS] = {0};
  for (int k = 0; k < NTASKS; k++) {
    cairn__sha256 h;
    char seed[65], line[256];
    cairn__sha256_init(&h);
    /* the script reads its inputs in the order of their folders' names */
    int a = parents[k][0], b = parents[k][1];
    if (a >= 0 && strcmp(ids[a], ids[b]) > 0) {
      a = parents[k][1];
      b = parents[k][0];
    }
    if (a >= 0) {
      cairn__sha256_update(&h, keep[a], OUT_BYTES);
      cairn__sha256_update(&h, keep[b], OUT_BYTES);
    }
    cairn__sha256_final_hex(&h, seed);
    int n = snprintf(line, sizeof line, "%s %s %s  - \n", tag, ids[k], seed);
    keep[k] = malloc(OUT_BYTES);
    assert_non_null(keep[k]);
    for (size_t at = 0; at < OUT_BYTES; at += (size_t)n)
      memcpy(keep[k] + at, line, at + (size_t)n <= OUT_BYTES ? (size_t)n : OUT_BYTES - at);
    cairn__sha256_hex(keep[k], OUT_BYTES, out[k]);
  }
  for (int k = 0; k < NTASKS; k++)
    free(keep[k]);
}

/* Writes DIR/TAG/job.json: the DAG, keep as given, g (when gate) a task
 * that waits for DIR/TAG/go and that the second level also waits for. */
static void make_job(const char *tag, const char *keep, int gate, char *jobdir) {
  char text[16384], script[2048];
  snprintf(jobdir, 4200, "%s/%s", W.dir, tag);
  assert_int_equal(mkdir(jobdir, 0755), 0);
  size_t n = (size_t)snprintf(text, sizeof text,
                              "{\"name\": \"%s\", \"app\": \"sum\", \"policy\": \"fifo\", "
                              "\"keep\": \"%s\", \"lease_seconds\": 30, \"max_attempts\": 10, "
                              "\"outputs\": [\"out.bin\"], \"tasks\": [",
                              tag, keep);
  if (gate)
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "{\"id\": \"g\", \"outputs\": [], \"args\": [\"-c\", \"n=0; while [ ! -e "
                          "%s/go ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done\"]}, ",
                          jobdir);
  for (int k = 0; k < NTASKS; k++) {
    /* inputs first (sorted by folder), then the seed, the file and its digest */
    snprintf(script, sizeof script,
             "for f in inputs/*/out.bin; do [ -e \\\"$f\\\" ] && sha256sum \\\"$f\\\"; done; "
             "s=$(cat inputs/*/out.bin 2>/dev/null | sha256sum); "
             "yes \\\"%s %s $s \\\" | head -c %u > out.bin; sha256sum out.bin",
             tag, ids[k], OUT_BYTES);
    n += (size_t)snprintf(text + n, sizeof text - n, "%s{\"id\": \"%s\", \"args\": [\"-c\", \"%s\"]",
                          k ? ", " : "", ids[k], script);
    if (parents[k][0] >= 0) {
      const char *p0 = ids[parents[k][0]], *p1 = ids[parents[k][1]];
      n += (size_t)snprintf(text + n, sizeof text - n,
                            ", \"inputs\": [\"%s/out.bin\", \"%s/out.bin\"], \"after\": [\"%s\", "
                            "\"%s\"%s]",
                            p0, p1, p0, p1, gate && k < 8 ? ", \"g\"" : "");
    }
    n += (size_t)snprintf(text + n, sizeof text - n, "}");
  }
  snprintf(text + n, sizeof text - n, "]}\n");
  char path[4300];
  snprintf(path, sizeof path, "%s/job.json", jobdir);
  assert_int_equal(harness_write_file(path, text), 0);
}

/* GET /v1/jobs/{id}/tasks (caller frees). */
static json_t *tasks_of(long long job) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(W.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL,
                                NULL), 200);
  return r;
}

static json_t *task_named(json_t *r, const char *id) {
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(r, "tasks"), i, t)
    if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0)
      return t;
  return NULL;
}

/* Every task of job is done; each printed its parents' files' digests and
 * its own file's, and each is the one computed here. */
static void check_digests(long long job, const char *tag) {
  char want[NTASKS][65];
  expected(tag, want);
  json_t *r = tasks_of(job);
  for (int k = 0; k < NTASKS; k++) {
    json_t *t = task_named(r, ids[k]);
    assert_non_null(t);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    const char *out = json_string_value(json_object_get(t, "output"));
    assert_non_null(out);
    char line[160];
    snprintf(line, sizeof line, "%.64s  out.bin\n", want[k]);
    assert_non_null(strstr(out, line));
    for (int p = 0; p < 2 && parents[k][p] >= 0; p++) {
      snprintf(line, sizeof line, "%.64s  inputs/%.8s/out.bin\n", want[parents[k][p]],
               ids[parents[k][p]]);
      assert_non_null(strstr(out, line));
    }
  }
  json_decref(r);
}

static long long served_master(void) {
  return harness_metric(W.srv.url, "cairn_file_bytes_served_total{source=\"master\"}");
}

/* Runs the DAG with keep; *served and *received: the master's bytes sent and
 * taken during the run. */
static void run(const char *tag, const char *keep, long long *served, long long *received,
                double *secs) {
  char jobdir[4200];
  make_job(tag, keep, 0, jobdir);
  long long s0 = served_master(), r0 = harness_metric(W.srv.url, "cairn_file_bytes_received_total ");
  double t0 = harness_now();
  long long job = e2e_submit(W.srv.url, jobdir);
  assert_string_equal(e2e_wait(W.srv.url, job, 400), "done");
  *secs = harness_now() - t0;
  check_digests(job, tag);
  *served = served_master() - s0;
  *received = harness_metric(W.srv.url, "cairn_file_bytes_received_total ") - r0;
}

static void test_master_bytes(void **state) {
  (void)state;
  long long sm, rm, sw, rw;
  double tm, tw;
  char load[128] = "";
  FILE *f = fopen("/proc/loadavg", "r");
  if (f && !fgets(load, sizeof load, f))
    load[0] = '\0';
  if (f)
    fclose(f);
  run("m", "master", &sm, &rm, &tm);
  run("w", "workers", &sw, &rw, &tw);
  fprintf(stderr, "kept outputs: 3-level DAG, %d tasks of %u MiB each, 8 workers in 2 clusters "
          "(load %.14s)\n", NTASKS, OUT_BYTES >> 20, load);
  fprintf(stderr, "kept outputs: \"keep\": \"master\":  master served %lld bytes, received %lld "
          "(%.1f s)\n", sm, rm, tm);
  fprintf(stderr, "kept outputs: \"keep\": \"workers\": master served %lld bytes, received %lld "
          "(%.1f s; served %.1f%% of the above)\n", sw, rw, tw,
          sm ? 100.0 * (double)sw / (double)sm : 0.0);
  assert_true(sm >= 8ll * OUT_BYTES); /* 12 reads of a parent's file, some from a cache */
  assert_true(sw * 10 <= sm);
  assert_true(rw < rm); /* only the sinks' files reached the master */
}

/* The volunteer id that produced task id's accepted result. */
static long long producer(long long job, const char *id) {
  json_t *r = tasks_of(job);
  json_t *t = task_named(r, id);
  long long v = t ? json_integer_value(json_object_get(t, "volunteer")) : 0;
  json_decref(r);
  return v;
}

/* The worker index whose registration is volunteer id (names w0..w7). */
static int worker_of(long long vol) {
  json_t *r = NULL;
  assert_int_equal(harness_http(W.srv.url, "GET", "/v1/volunteers", HARNESS_ADMIN_TOKEN, NULL, 0,
                                &r, NULL, NULL), 200);
  size_t i;
  json_t *v;
  int w = -1;
  json_array_foreach(json_object_get(r, "volunteers"), i, v)
    if (json_integer_value(json_object_get(v, "id")) == vol)
      w = atoi(json_string_value(json_object_get(v, "name")) + 1);
  json_decref(r);
  return w;
}

static int level_done(long long job) {
  json_t *r = tasks_of(job);
  int done = 1;
  for (int k = 0; k < 4; k++)
    done &= strcmp(json_string_value(json_object_get(task_named(r, ids[k]), "state")), "done") == 0;
  json_decref(r);
  return done;
}

static void test_holder_killed(void **state) {
  (void)state;
  char jobdir[4200], go[4300], path[64];
  make_job("k", "workers", 1, jobdir);
  long long rec0 = harness_metric(W.srv.url, "cairn_outputs_recomputed_total ");
  long long job = e2e_submit(W.srv.url, jobdir);
  double until = harness_now() + 240;
  while (!level_done(job) && harness_now() < until)
    usleep(200 * 1000);
  assert_true(level_done(job));
  long long vol = producer(job, "a0");
  int victim = worker_of(vol);
  assert_true(victim >= 0 && victim < NWORKERS);
  kill(W.workers[victim], SIGKILL);
  assert_true(harness_wait(W.workers[victim], 10) != -1);
  server_fixture_reaped(&W, W.workers[victim]);
  fprintf(stderr, "kept outputs: w%d (volunteer %lld), holder of a0's file, killed with SIGKILL\n",
          victim, vol);
  snprintf(go, sizeof go, "%s/go", jobdir);
  assert_int_equal(harness_write_file(go, "go\n"), 0);
  assert_string_equal(e2e_wait(W.srv.url, job, 400), "done");
  check_digests(job, "k");
  long long rec = harness_metric(W.srv.url, "cairn_outputs_recomputed_total ") - rec0;
  /* the audit shows a0's new allocation: more than one attempt */
  json_t *r = tasks_of(job), *d = NULL;
  long long key = json_integer_value(json_object_get(task_named(r, "a0"), "key"));
  json_decref(r);
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", job, key);
  assert_int_equal(harness_http(W.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &d, NULL,
                                NULL), 200);
  size_t attempts = json_array_size(json_object_get(d, "history"));
  json_decref(d);
  fprintf(stderr, "kept outputs: %lld tasks recomputed; a0 allocated %zu times; job done with "
          "the right digests\n", rec, attempts);
  assert_true(rec >= 1);
  assert_true(attempts >= 2);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_master_bytes),
    cmocka_unit_test(test_holder_killed),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
