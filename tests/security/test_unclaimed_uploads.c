/* test_unclaimed_uploads.c — output files uploaded under a lease that no
 * result claims, against a real master (docs/security.md, "Unclaimed
 * uploads"): they leave DB.files/ when their leases expire, while a file a
 * result named stays and is served; after a kill -9 with the leases live,
 * the restarted master removes them too; and one volunteer's uploads in
 * flight are capped in total (--max-pending-upload-mib): past it an upload
 * is refused (429) from its headers and nothing is stored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/security/rawconn.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define MIB (1024 * 1024)

/* The master (started by each test), the volunteer's token in vol. */
typedef server_fixture uu;

static void start(uu *u, const char *const *extra) {
  assert_int_equal(server_fixture_restart(u, extra), 0);
}

/* A volunteer of app "upl" with 4 slots (token in u->vol). */
static void enrol(uu *u) {
  json_t *r = NULL;
  const char *body = "{\"name\": \"up\", \"apps\": [\"upl\"], \"slots\": 4}";
  assert_int_equal(harness_http(u->srv.url, "POST", "/v1/volunteers", NULL, body, strlen(body),
                                &r, NULL, NULL), 201);
  snprintf(u->vol, sizeof u->vol, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(r);
}

/* A job of n tasks t0.. whose outputs are "*.bin" (8 MiB each at most),
 * leases of lease_seconds. */
static void submit(uu *u, int n, int lease_seconds) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s, s:[{s:s, s:i}]}", "id", id, "outputs", "name",
                                           "*.bin", "max_mib", 8));
  }
  json_t *job = json_pack("{s:s, s:s, s:i, s:i, s:o}", "app", "upl", "policy", "fifo",
                          "lease_seconds", lease_seconds, "max_attempts", 1000, "tasks", tasks);
  json_t *r = NULL;
  assert_int_equal(harness_http_json(u->srv.url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  json_decref(job);
  json_decref(r);
}

/* Takes a lease: its index, its task's id in task (16 bytes). */
static long long lease(uu *u, char task[16]) {
  json_t *r = NULL;
  assert_int_equal(harness_http(u->srv.url, "POST", "/v1/work", u->vol, "{}", 2, &r, NULL, NULL),
                   200);
  long long idx = (long long)json_integer_value(json_object_get(r, "index"));
  snprintf(task, 16, "%s", json_string_value(json_object_get(json_object_get(r, "task"), "id")));
  json_decref(r);
  return idx;
}

/* size bytes that differ for each seed, and their sha256. malloc'd. */
static char *data(int seed, size_t size, char sha[65]) {
  char *p = malloc(size);
  assert_non_null(p);
  uint32_t x = 2463534242u + (uint32_t)seed * 7919u;
  for (size_t i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >> 17;
    x ^= x << 5;
    p[i] = (char)x;
  }
  cairn__sha256_hex(p, size, sha);
  return p;
}

static long put(uu *u, long long idx, const char *sha, const char *body, size_t len,
                json_t **resp) {
  char path[160];
  snprintf(path, sizeof path, "/v1/results/%lld/files/%s", idx, sha);
  return harness_http(u->srv.url, "PUT", path, u->vol, body, len, resp, NULL, NULL);
}

/* Uploads a file of mib MiB (seed) under idx: 201 expected; sha out. */
static void upload(uu *u, long long idx, int seed, int mib, char sha[65]) {
  char *p = data(seed, (size_t)mib * MIB, sha);
  long st = put(u, idx, sha, p, (size_t)mib * MIB, NULL);
  free(p);
  assert_int_equal(st, 201);
}

/* 1 when DB.files/ holds sha (sha NULL: any temporary upload). */
static int stored(const uu *u, const char *sha) {
  char path[4400];
  snprintf(path, sizeof path, "%s/cairn.db.files", u->dir);
  DIR *d = opendir(path);
  int found = 0;
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
    if (sha ? strcmp(e->d_name, sha) == 0 : strncmp(e->d_name, ".upload-", 8) == 0)
      found = 1;
  if (d)
    closedir(d);
  return found;
}

/* Bytes of the files in DB.files/ (not its folders). */
static long long store_bytes(const uu *u) {
  char path[4400], file[4700];
  snprintf(path, sizeof path, "%s/cairn.db.files", u->dir);
  DIR *d = opendir(path);
  long long n = 0;
  struct stat sb;
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
    snprintf(file, sizeof file, "%s/%s", path, e->d_name);
    if (e->d_name[0] != '.' && stat(file, &sb) == 0 && S_ISREG(sb.st_mode))
      n += (long long)sb.st_size;
  }
  if (d)
    closedir(d);
  return n;
}

/* Waits up to timeout s until DB.files/ holds none of sha[0..n). */
static int gone(const uu *u, char (*sha)[65], int n, double timeout) {
  double end = harness_now() + timeout;
  for (;;) {
    int left = 0;
    for (int i = 0; i < n; i++)
      left += stored(u, sha[i]);
    if (!left)
      return 1;
    if (harness_now() > end)
      return 0;
    usleep(100 * 1000);
  }
}

static long result(uu *u, long long idx, const char *name, const char *sha, int mib) {
  char body[512], path[64];
  snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"ok\", \"outputs\": [{\"name\": "
           "\"%s\", \"sha256\": \"%s\", \"size\": %d}]}", name, sha, mib * MIB);
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  return harness_http(u->srv.url, "PUT", path, u->vol, body, strlen(body), NULL, NULL, NULL);
}

/* A fourth lease uploads 2 files of 2 MiB and names one in its result (the
 * other goes then); 3 leases upload 2 files each and send no result. After
 * those leases expire, their 6 files are gone, the named one stays and is
 * served. */
static void test_expired_uploads_reclaimed(void **state) {
  uu *u = *state;
  const char *const extra[] = {"--max-output-file-mib", "8", "--max-pending-upload-mib", "64",
                               NULL};
  enum { FMIB = 2 };
  start(u, extra);
  enrol(u);
  submit(u, 4, 20); /* long enough for the uploads on a loaded machine */
  double t0 = harness_now();
  char sha[8][65], task[4][16], kept[65], lost[65];
  long long idx[4];
  idx[3] = lease(u, task[3]);
  upload(u, idx[3], 6, FMIB, kept);
  upload(u, idx[3], 7, FMIB, lost);
  assert_int_equal(result(u, idx[3], "a.bin", kept, FMIB), 200);
  /* the returned lease's file its result did not name went with the result */
  assert_false(stored(u, lost));
  assert_true(stored(u, kept));
  for (int i = 0; i < 3; i++) {
    idx[i] = lease(u, task[i]);
    upload(u, idx[i], 2 * i, FMIB, sha[2 * i]);
    upload(u, idx[i], 2 * i + 1, FMIB, sha[2 * i + 1]);
  }
  for (int i = 0; i < 6; i++)
    assert_true(stored(u, sha[i]));
  long long before = store_bytes(u);
  long long pending = harness_metric(u->srv.url, "cairn_uploads_unclaimed{unit=\"bytes\"}");
  fprintf(stderr, "unclaimed: %lld bytes in DB.files/ with 3 leases live, %lld unclaimed "
          "(leases and uploads took %.1f s)\n", before, pending, harness_now() - t0);
  assert_int_equal(pending, 6LL * FMIB * MIB);
  assert_int_equal(before, 7LL * FMIB * MIB);
  /* the leases end (20 s, no heartbeat) */
  assert_true(gone(u, sha, 6, 60));
  long long after = store_bytes(u);
  fprintf(stderr, "unclaimed: %lld bytes in DB.files/ after the leases expired (%lld files, "
          "%lld bytes reclaimed)\n", after,
          harness_metric(u->srv.url, "cairn_uploads_reclaimed_total{unit=\"files\"}"),
          harness_metric(u->srv.url, "cairn_uploads_reclaimed_total{unit=\"bytes\"}"));
  assert_int_equal(after, (long long)FMIB * MIB);
  assert_int_equal(harness_metric(u->srv.url, "cairn_uploads_reclaimed_total{unit=\"files\"}"), 7);
  assert_int_equal(harness_metric(u->srv.url, "cairn_uploads_unclaimed{unit=\"bytes\"}"), 0);
  /* the file a result named stays, and is served */
  assert_true(stored(u, kept));
  char path[128], *raw = NULL;
  size_t rawlen = 0;
  snprintf(path, sizeof path, "/v1/jobs/1/output?task=%s&name=a.bin", task[3]);
  assert_int_equal(harness_http(u->srv.url, "GET", path, ADMIN, NULL, 0, NULL, &raw, &rawlen),
                   200);
  assert_int_equal(rawlen, FMIB * MIB);
  char got[65];
  cairn__sha256_hex(raw, rawlen, got);
  assert_string_equal(got, kept);
  free(raw);
}

/* Uploads under 2 live leases, kill -9, restart: the files go. */
static void test_restart_reclaims(void **state) {
  uu *u = *state;
  const char *const extra[] = {"--max-output-file-mib", "8", NULL};
  start(u, extra);
  enrol(u);
  submit(u, 2, 30);
  char sha[4][65], task[2][16];
  long long idx[2];
  for (int i = 0; i < 2; i++)
    idx[i] = lease(u, task[i]);
  for (int i = 0; i < 4; i++)
    upload(u, idx[i / 2], 100 + i, 2, sha[i]);
  /* the leases are live at the kill */
  assert_int_equal(harness_metric(u->srv.url, "cairn_leases "), 2);
  assert_int_equal(harness_metric(u->srv.url, "cairn_uploads_unclaimed{unit=\"files\"}"), 4);
  long long before = store_bytes(u);
  server_fixture_stop(u, SIGKILL);
  for (int i = 0; i < 4; i++)
    assert_true(stored(u, sha[i]));
  start(u, extra);
  /* acknowledged uploads outlive the kill while their leases live: the
   * first lease's result names one of its files, which stays */
  for (int i = 0; i < 4; i++)
    assert_true(stored(u, sha[i]));
  assert_int_equal(result(u, idx[0], "a.bin", sha[0], 2), 200);
  /* the others leave at the latest when the leases (30 s) expire */
  assert_true(gone(u, sha + 1, 3, 60));
  long long after = store_bytes(u);
  fprintf(stderr, "restart: %lld bytes in DB.files/ at the kill, %lld after the restart and the "
          "leases' end (%lld files reclaimed)\n", before, after,
          harness_metric(u->srv.url, "cairn_uploads_reclaimed_total{unit=\"files\"}"));
  assert_true(stored(u, sha[0]));
  assert_true(after < 2 * 1024 * 1024 + 64 * 1024);
  assert_int_equal(harness_metric(u->srv.url, "cairn_uploads_reclaimed_total{unit=\"files\"}"), 3);
}

/* Sends only the headers of an upload of len bytes under idx; the status. */
static int headers_only(uu *u, long long idx, const char *sha, long long len, char *buf,
                        size_t cap) {
  const char *colon = strrchr(u->srv.url, ':');
  int fd = raw_connect("127.0.0.1", colon ? atoi(colon + 1) : 0, 0);
  assert_true(fd >= 0);
  char req[1024];
  snprintf(req, sizeof req,
           "PUT /v1/results/%lld/files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Length: %lld\r\nExpect: 100-continue\r\n\r\n", idx, sha, u->vol, len);
  raw_send(fd, req, strlen(req), 5);
  memset(buf, 0, cap);
  raw_recv(fd, buf, cap - 1, 5);
  close(fd);
  return raw_status(buf);
}

/* One volunteer's uploads in flight: 10 MiB at most (files of 4 MiB). */
static void test_volunteer_cap(void **state) {
  uu *u = *state;
  const char *const extra[] = {"--max-output-file-mib", "4", "--max-pending-upload-mib", "10",
                               NULL};
  start(u, extra);
  enrol(u);
  submit(u, 4, 60);
  char sha[4][65], task[3][16], buf[4096];
  long long idx[3];
  for (int i = 0; i < 3; i++)
    idx[i] = lease(u, task[i]);
  upload(u, idx[0], 200, 4, sha[0]);
  upload(u, idx[1], 201, 4, sha[1]);
  /* 8 MiB in flight: 4 more pass the cap, from the headers */
  char *p = data(202, 4 * MIB, sha[2]);
  int st = headers_only(u, idx[2], sha[2], 4 * MIB, buf, sizeof buf);
  fprintf(stderr, "cap: 4 MiB over 8 MiB in flight, headers only: %d %s\n", st,
          strstr(buf, "{") ? strstr(buf, "{") : "");
  assert_int_equal(st, 429);
  assert_non_null(strstr(buf, "10485760"));
  json_t *r = NULL;
  assert_int_equal(put(u, idx[2], sha[2], p, 4 * MIB, &r), 429);
  json_decref(r);
  assert_false(stored(u, sha[2]));
  assert_false(stored(u, NULL));
  /* 2 MiB still fit */
  upload(u, idx[2], 203, 2, sha[3]);
  assert_int_equal(headers_only(u, idx[2], sha[2], 1, buf, sizeof buf), 429);
  /* lease 0's result claims its file: its 4 MiB are free again */
  assert_int_equal(result(u, idx[0], "a.bin", sha[0], 4), 200);
  assert_int_equal(put(u, idx[2], sha[2], p, 4 * MIB, NULL), 201);
  assert_true(stored(u, sha[2]));
  free(p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_expired_uploads_reclaimed, server_fixture_setup_stopped,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_restart_reclaims, server_fixture_setup_stopped,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_volunteer_cap, server_fixture_setup_stopped,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
