/* test_distribution.c — a broadcast input relayed by real workers: a real
 * cairn-server, 8 real cairn-workers in two clusters and a 16 MiB input
 * uploaded with `cairn submit`. Every worker ends with the right bytes, the
 * master sends at most two copies (one per cluster) plus one retry, and the
 * rest travels between peers, and each worker reports its timed download
 * to the master (store-and-forward: a worker relays only a whole verified
 * copy, cairn-server --store-and-forward); GET /v1/jobs/{id}/distribution
 * shows the plan, each worker's copy (from the master or a peer), bytes by
 * source and the rates, from the store, also after a restart; when the
 * first relay is killed
 * with SIGKILL while it serves (cut-through, the default: it may still be
 * receiving), every task still ends done. test_cut_through.c has relay
 * chains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/editdist.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define NWORKERS 8
#define NTASKS 16
#define BIG (16u * 1024 * 1024)

static int setup(void **state) {
  (void)state;
  e2e_init();
  return 0;
}

/* Writes DIR/big.bin (BIG bytes) and DIR/job.json; sha gets its digest.
 * Each task digests the file, then holds its worker until DIR/go exists (at
 * most 120 s): so that every worker gets a task, however long the copies
 * take on a loaded machine, the test creates DIR/go once all of them hold
 * the file. */
static void make_job(const char *dir, char sha[65]) {
  char path[4200], text[8192];
  unsigned char *data = malloc(BIG);
  assert_non_null(data);
  unsigned s = 7;
  for (size_t i = 0; i < BIG; i++) {
    s = s * 1664525u + 1013904223u;
    data[i] = (unsigned char)(s >> 24);
  }
  cairn__sha256_hex(data, BIG, sha);
  snprintf(path, sizeof path, "%s/big.bin", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, BIG, f), BIG);
  fclose(f);
  free(data);
  size_t n = (size_t)snprintf(text, sizeof text,
                              "{\"name\": \"dist\", \"app\": \"sum\", \"policy\": \"fifo\", "
                              "\"lease_seconds\": 10, \"max_attempts\": 10, \"files\": "
                              "[{\"name\": \"big.bin\", \"path\": \"%s\", \"broadcast\": true}], "
                              "\"tasks\": [",
                              path);
  for (int i = 0; i < NTASKS; i++)
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "%s{\"id\": \"t%d\", \"args\": [\"-c\", "
                          "\"sha256sum inputs/big.bin && n=0 && while [ ! -e %s/go ] && "
                          "[ $n -lt 600 ]; do sleep 0.2; n=$((n+1)); done\"], "
                          "\"inputs\": [\"big.bin\"]}",
                          i ? ", " : "", i, dir);
  snprintf(text + n, sizeof text - n, "]}\n");
  snprintf(path, sizeof path, "%s/job.json", dir);
  assert_int_equal(harness_write_file(path, text), 0);
}

/* Starts worker i; the app is sh, so that a task holds its worker until
 * DIR/go exists and the 16 tasks spread over the 8 workers. */
static pid_t start_worker(const char *url, const char *dir, int i) {
  char name[16];
  snprintf(name, sizeof name, "w%d", i);
  /* the tasks wait for DIR/go: the test folder is shown read-only in the sandbox */
  const char *args[] = {"--app", "sum=/bin/sh", "--cluster", i % 2 ? "b" : "a",
                        "--exit-when-idle", "60", "--stall-timeout", "2", "--log-level", "debug",
                        "--sandbox-bind", dir, NULL};
  pid_t p = harness_worker(url, dir, name, args);
  assert_true(p > 0);
  return p;
}

/* Every task is done and its output is the file's digest. */
static void check_outputs(const char *url, long long job, const char *sha) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL),
                   200);
  json_t *tasks = json_object_get(r, "tasks");
  assert_int_equal(json_array_size(tasks), NTASKS);
  for (size_t i = 0; i < json_array_size(tasks); i++) {
    json_t *t = json_array_get(tasks, i);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    assert_memory_equal(json_string_value(json_object_get(t, "output")), sha, 64);
  }
  json_decref(r);
}

/* The value of metric line "KEY VALUE" in the master's /metrics, or -1. */
static long long metric(const char *url, const char *key) {
  char *raw = NULL;
  size_t len = 0;
  long long v = -1;
  if (harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len) != 200)
    return -1;
  size_t n = strlen(key);
  for (const char *p = raw; p && *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL)
    if (strncmp(p, key, n) == 0 && p[n] == ' ') {
      v = atoll(p + n + 1);
      break;
    }
  free(raw);
  return v;
}

/* cairn_file_bytes_served_total{source=SOURCE}, or -1. */
static long long served(const char *url, const char *source) {
  char key[96];
  snprintf(key, sizeof key, "cairn_file_bytes_served_total{source=\"%s\"}", source);
  return metric(url, key);
}

/* 1 when worker i's cache holds the file with the right digest. */
static int holds(const char *dir, int i, const char *sha) {
  char path[4300], cmd[4400], *out = NULL;
  snprintf(path, sizeof path, "%s/w%d/cache/%s", dir, i, sha);
  snprintf(cmd, sizeof cmd, "%s", path);
  const char *argv[] = {"/usr/bin/sha256sum", cmd, NULL};
  int ok = harness_run(argv, &out) == 0 && out && strncmp(out, sha, 64) == 0;
  free(out);
  return ok;
}

/* Lets the tasks end. */
static void release_tasks(const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/go", dir);
  assert_int_equal(harness_write_file(path, "go\n"), 0);
}

static void stop_workers(pid_t *w, int n) {
  for (int i = 0; i < n; i++) {
    if (w[i] <= 0)
      continue;
    kill(w[i], SIGTERM);
    int st = harness_wait(w[i], 60);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  }
}

/* GET /v1/jobs/{job}/distribution once the store has every worker's copy
 * (the reports are journaled: polled up to 30 s). */
static json_t *distribution(const char *url, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/distribution", job);
  json_t *o = NULL;
  for (double until = harness_now() + 30; harness_now() < until; usleep(200 * 1000)) {
    json_decref(o);
    o = NULL;
    assert_int_equal(harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL),
                     200);
    json_t *f = json_array_get(json_object_get(o, "files"), 0);
    if (json_integer_value(json_object_get(f, "transfers_total")) >= NWORKERS)
      break;
  }
  return o;
}

/* The distribution view's data: the plan ECEF-LA made over clusters a and
 * b, one copy per worker (from the master or a peer, of the file's size,
 * ending after it starts), bytes by source adding up to them, rates. */
static void check_distribution(json_t *o, const char *sha) {
  json_t *files = json_object_get(o, "files");
  assert_int_equal(json_array_size(files), 1);
  json_t *f = json_array_get(files, 0);
  assert_string_equal(json_string_value(json_object_get(f, "name")), "big.bin");
  assert_string_equal(json_string_value(json_object_get(f, "sha256")), sha);
  assert_true(json_integer_value(json_object_get(f, "t0_ms")) > 0);
  json_t *plan = json_object_get(f, "plan");
  assert_string_equal(json_string_value(json_object_get(plan, "algorithm")), "ECEF-LA");
  json_t *rows = json_object_get(plan, "transfers"), *x;
  size_t i;
  assert_true(json_array_size(rows) >= 1 && json_array_size(rows) <= 2);
  json_array_foreach(rows, i, x) {
    double a = json_number_value(json_object_get(x, "start_s"));
    double b = json_number_value(json_object_get(x, "end_s"));
    assert_true(a >= 0 && b >= a && json_number_value(json_object_get(x, "done_s")) >= b);
    assert_true(json_integer_value(json_object_get(x, "workers")) >= 1);
  }
  json_t *xs = json_object_get(f, "transfers");
  assert_int_equal(json_array_size(xs), NWORKERS);
  assert_int_equal(json_integer_value(json_object_get(f, "transfers_total")), NWORKERS);
  int from_master = 0, from_peer = 0;
  json_array_foreach(xs, i, x) {
    long long from = json_integer_value(json_object_get(x, "from"));
    from_master += from == 0;
    from_peer += from > 0;
    assert_int_equal(json_integer_value(json_object_get(x, "bytes")), BIG);
    assert_true(json_number_value(json_object_get(x, "start_s")) >= 0);
    assert_true(json_number_value(json_object_get(x, "end_s")) >=
                json_number_value(json_object_get(x, "start_s")));
    assert_true(from == 0 || strcmp(json_string_value(json_object_get(x, "from_cluster")), "a") == 0 ||
                strcmp(json_string_value(json_object_get(x, "from_cluster")), "b") == 0);
  }
  assert_true(from_master >= 1 && from_master <= 3 && from_peer >= NWORKERS - 3);
  long long bytes = 0, copies = 0;
  json_array_foreach(json_object_get(f, "by_source"), i, x) {
    bytes += json_integer_value(json_object_get(x, "bytes"));
    copies += json_integer_value(json_object_get(x, "copies"));
  }
  assert_int_equal(bytes, (long long)NWORKERS * BIG);
  assert_int_equal(copies, NWORKERS);
  assert_true(json_array_size(json_object_get(o, "rates")) >= 2);
}

static void test_relayed_by_peers(void **state) {
  (void)state;
  char sha[65];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  const char *saf[] = {"--store-and-forward", NULL};
  assert_int_equal(server_fixture_restart(&sf, saf), 0);
  make_job(dir, sha);
  long long job = e2e_submit(sf.srv.url, dir);
  pid_t w[NWORKERS];
  for (int i = 0; i < NWORKERS; i++)
    w[i] = start_worker(sf.srv.url, dir, i);
  int all = 0;
  for (double until = harness_now() + 180; !all && harness_now() < until;) {
    usleep(500 * 1000);
    all = 1;
    for (int i = 0; all && i < NWORKERS; i++) {
      char path[4300];
      snprintf(path, sizeof path, "%s/w%d/cache/%s", dir, i, sha);
      all = access(path, F_OK) == 0; /* the cache renames a verified copy into place */
    }
  }
  release_tasks(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  check_outputs(sf.srv.url, job, sha);
  for (int i = 0; i < NWORKERS; i++)
    assert_true(holds(dir, i, sha));
  /* Each worker received the file once: whatever the master did not send,
   * peers did, and say so in their heartbeats (every few seconds). Each
   * reported how long its download took. */
  long long master = 0, peer = 0, fetched = 0;
  double until = harness_now() + 20;
  do {
    usleep(200 * 1000);
    master = served(sf.srv.url, "master");
    peer = served(sf.srv.url, "peer");
    fetched = metric(sf.srv.url, "cairn_fetch_reports_total");
  } while ((master + peer < (long long)NWORKERS * BIG || fetched < NWORKERS) &&
           harness_now() < until);
  fprintf(stderr, "bytes served: master %lld, peer %lld (file %u); downloads reported %lld\n",
          master, peer, BIG, fetched);
  assert_true(master >= (long long)BIG);
  assert_true(master <= 3LL * BIG);
  assert_true(master + peer >= (long long)NWORKERS * BIG);
  assert_true(fetched >= NWORKERS);
  /* the downloads became rate samples: from the master into a cluster, and
   * inside the clusters */
  long long ma = metric(sf.srv.url, "cairn_link_rate_bytes_per_second{from=\"master\",to=\"a\"}");
  long long mb = metric(sf.srv.url, "cairn_link_rate_bytes_per_second{from=\"master\",to=\"b\"}");
  long long aa = metric(sf.srv.url, "cairn_link_rate_bytes_per_second{from=\"a\",to=\"a\"}");
  long long bb = metric(sf.srv.url, "cairn_link_rate_bytes_per_second{from=\"b\",to=\"b\"}");
  fprintf(stderr, "rates (bytes/s): master->a %lld, master->b %lld, a->a %lld, b->b %lld\n", ma,
          mb, aa, bb);
  assert_true(ma > 0 || mb > 0);
  assert_true(aa > 0 || bb > 0);
  /* `cairn status JOB` shows the distribution */
  char jobarg[32], *out = NULL;
  snprintf(jobarg, sizeof jobarg, "%lld", job);
  const char *argv[] = {e2e_bin_cli, "status", jobarg, "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  fprintf(stderr, "%s", out);
  assert_non_null(strstr(out, "input bytes served: master "));
  char line[160];
  snprintf(line, sizeof line, "broadcast big.bin (%.12s): ", sha);
  assert_non_null(strstr(out, line));
  assert_non_null(strstr(out, " workers hold it, all within ")); /* every one of them */
  assert_non_null(strstr(out, "; plan ECEF-LA over "));
  free(out);
  json_t *dist = distribution(sf.srv.url, job);
  check_distribution(dist, sha);
  stop_workers(w, NWORKERS);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  /* a restarted master answers the same from its store */
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  json_t *again = distribution(sf.srv.url, job);
  assert_true(json_equal(json_object_get(dist, "files"), json_object_get(again, "files")));
  json_decref(again);
  json_decref(dist);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* Index of the first worker whose log shows it sending the file, or -1. */
static int sending(const char *dir) {
  for (int i = 0; i < NWORKERS; i++) {
    char path[4200], *text = NULL;
    snprintf(path, sizeof path, "%s/w%d.log", dir, i);
    FILE *f = fopen(path, "r");
    if (!f)
      continue;
    size_t cap = 1 << 20, n = 0;
    text = malloc(cap + 1);
    n = fread(text, 1, cap, f);
    text[n] = '\0';
    fclose(f);
    int found = strstr(text, "peer: sending") != NULL;
    free(text);
    if (found)
      return i;
  }
  return -1;
}

static void test_first_relay_killed(void **state) {
  (void)state;
  char sha[65];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  make_job(dir, sha);
  release_tasks(dir); /* the tasks end at once */
  long long job = e2e_submit(sf.srv.url, dir);
  pid_t w[NWORKERS];
  for (int i = 0; i < NWORKERS; i++)
    w[i] = start_worker(sf.srv.url, dir, i);
  int relay = -1;
  double until = harness_now() + 120;
  while (relay < 0 && harness_now() < until) {
    relay = sending(dir);
    if (relay < 0)
      usleep(2000);
  }
  assert_true(relay >= 0);
  kill(w[relay], SIGKILL);
  int st = harness_wait(w[relay], 30);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  w[relay] = 0;
  fprintf(stderr, "killed relay w%d while it was sending\n", relay);
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  check_outputs(sf.srv.url, job, sha);
  stop_workers(w, NWORKERS);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_relayed_by_peers),
    cmocka_unit_test(test_first_relay_killed),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
