/* test_disk_full.c — a real cairn-server whose database lives on a small
 * tmpfs (mounted here; the test is skipped, saying so, where mount is not
 * permitted). The file system is filled until SQLite answers SQLITE_FULL:
 * the master stops acknowledging (503 "failed") and exits with status 70;
 * every result it acknowledged with 200 is in the database; once space is
 * given back a restarted master recovers and the job completes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define TASKS 300
#define OUTPUT 16384 /* bytes of each result's output */

static char g_mnt[4200];

static long long submit(const char *url) {
  json_t *tasks = json_array();
  for (int i = 0; i < TASKS; i++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s}", "id", id));
  }
  json_t *job = json_pack("{s:s, s:s, s:i, s:o}", "app", "fill", "policy", "fifo",
                          "lease_seconds", 3, "tasks", tasks);
  json_t *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, job, &r), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(job);
  json_decref(r);
  return id;
}

/* The next task's index, 0 when none (204); -status on another answer. */
static long long work(const char *url, const char *tok) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/work", tok, NULL, 0, &r, NULL, NULL);
  long long idx = st == 200 ? (long long)json_integer_value(json_object_get(r, "index"))
                  : st == 204 ? 0 : -st;
  json_decref(r);
  return idx;
}

static long put_result(const char *url, const char *tok, long long idx, json_t **resp) {
  static char out[OUTPUT + 1];
  memset(out, 'a' + (int)(idx % 26), OUTPUT);
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  json_t *b = json_pack("{s:i, s:s}", "exit_status", 0, "output", out);
  long st = harness_http_json(url, "PUT", path, tok, b, resp);
  json_decref(b);
  return st;
}

/* Fills the file system of path's folder: writes path until ENOSPC, then
 * gives back keep bytes. */
static void fill(const char *path, off_t keep) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  assert_true(fd >= 0);
  static char buf[65536];
  off_t size = 0;
  for (;;) {
    ssize_t n = write(fd, buf, sizeof buf);
    if (n <= 0)
      break;
    size += n;
  }
  assert_int_equal(ftruncate(fd, size > keep ? size - keep : 0), 0);
  close(fd);
}

static void test_full_disk_fails_then_recovers(void **state) {
  (void)state;
  char filler[4300];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  snprintf(g_mnt, sizeof g_mnt, "%s/fs", sf.dir);
  assert_int_equal(mkdir(g_mnt, 0700), 0);
  if (mount("tmpfs", g_mnt, "tmpfs", 0, "size=16m") != 0) {
    fprintf(stderr, "skipped: cannot mount a tmpfs (%s); the disk-full test needs root\n",
            strerror(errno));
    g_mnt[0] = 0;
    skip();
  }
  /* the master's database on the tmpfs */
  assert_true(snprintf(sf.db, sizeof sf.db, "%s/cairn.db", g_mnt) < (int)sizeof sf.db);
  const char *db = sf.db;
  snprintf(filler, sizeof filler, "%s/filler", g_mnt);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  char tok[65];
  assert_true(harness_register(sf.srv.url, "filler", "fill", tok) > 0);
  long long job = submit(sf.srv.url);

  fill(filler, 1 << 20);
  long long acked[TASKS];
  size_t nacked = 0;
  long st = 200;
  json_t *resp = NULL;
  while (st == 200 && nacked < TASKS) {
    long long idx = work(sf.srv.url, tok);
    if (idx <= 0) {
      st = -idx;
      break;
    }
    json_decref(resp);
    resp = NULL;
    st = put_result(sf.srv.url, tok, idx, &resp);
    if (st == 200)
      acked[nacked++] = idx;
  }
  fprintf(stderr, "%zu results acknowledged before the store failed (HTTP %ld)\n", nacked, st);
  assert_int_equal(st, 503);
  assert_true(nacked > 0 && nacked < TASKS);
  if (resp) { /* the failing request itself, or a later one, names "failed" */
    json_t *e = json_object_get(resp, "error");
    assert_string_equal(json_string_value(json_object_get(e, "code")), "failed");
    json_decref(resp);
  }
  /* the failed state is for good: cairn-server exits with EX_SOFTWARE */
  int ws = harness_wait(sf.srv.pid, 30);
  sf.srv.pid = 0;
  assert_true(ws != -1 && WIFEXITED(ws));
  assert_int_equal(WEXITSTATUS(ws), 70);

  /* space comes back; a restarted master has every acknowledged result */
  assert_int_equal(unlink(filler), 0);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  sqlite3 *h = NULL;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT length(output) FROM results WHERE idx = ?1", -1,
                                      &q, NULL),
                   SQLITE_OK);
  for (size_t i = 0; i < nacked; i++) {
    sqlite3_bind_int64(q, 1, acked[i]);
    assert_int_equal(sqlite3_step(q), SQLITE_ROW);
    assert_int_equal(sqlite3_column_int(q, 0), OUTPUT);
    sqlite3_reset(q);
  }
  sqlite3_finalize(q);
  sqlite3_close(h);

  /* and the job completes: the lease of the task whose result was refused
   * expires (3 s) and the task is leased again */
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  const char *jstate = "";
  json_t *r = NULL;
  for (double until = harness_now() + 60; harness_now() < until; ) {
    long long idx = work(sf.srv.url, tok);
    assert_true(idx >= 0);
    if (idx > 0) {
      st = put_result(sf.srv.url, tok, idx, NULL);
      assert_true(st == 200 || st == 409); /* 409: its lease expired meanwhile */
      continue;
    }
    json_decref(r);
    r = NULL;
    assert_int_equal(
      harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL), 200);
    jstate = json_string_value(json_object_get(r, "state"));
    if (strcmp(jstate, "done") == 0)
      break;
    usleep(200000);
  }
  assert_string_equal(jstate, "done");
  json_decref(r);
  int stop = server_fixture_stop(&sf, SIGTERM);
  assert_true(WIFEXITED(stop) && WEXITSTATUS(stop) == 0);
  assert_int_equal(umount(g_mnt), 0);
  g_mnt[0] = 0;
  assert_int_equal(server_fixture_close(&sf), 0);
}

static int teardown(void **state) {
  (void)state;
  if (g_mnt[0])
    umount2(g_mnt, MNT_DETACH);
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_teardown(test_full_disk_fails_then_recovers, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
