/* test_delete_outputs.c — deleting jobs whose tasks produced output files,
 * against a real cairn-server, a real cairn-worker running
 * cairn-app-outfiles and the real `cairn` command, on SQLite files. Job A
 * (two tasks: a file whose bytes job B's task also writes, a 6 MiB file and
 * a small one of its own) and job B (the shared file) complete; `cairn
 * delete A` removes A's own files from DB.files/ and from the files table
 * and keeps the shared one, which `cairn results B --dir` still downloads
 * with its digest; the output route answers 404 for the deleted job; a
 * master killed with -9 and started again brings nothing back; `cairn
 * delete B --purge` leaves the file store empty; an out-voted replica's
 * file goes with its job too. Prints the file store and database + WAL
 * sizes at each step. */
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
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define BIG (6ll * 1024 * 1024)
#define SHARED 200000ll

typedef server_fixture fixture;

/* Starts worker name running app "of" as program app (NULL: the
 * cairn-app-outfiles); max_tasks NULL: no limit. Returns its pid. */
static pid_t start_worker(fixture *f, const char *name, const char *app, const char *max_tasks) {
  char of[4096], appflag[4400];
  harness_bin(of, sizeof of, "cairn-app-outfiles");
  snprintf(appflag, sizeof appflag, "of=%s", app ? app : of);
  char bin[4096]; /* a script app execs the built cairn-app-outfiles: shown in the sandbox */
  harness_bin_dir(bin, sizeof bin);
  const char *args[] = {"--app", appflag, "--sandbox-bind", bin,
                        max_tasks ? "--max-tasks" : NULL, max_tasks, NULL};
  pid_t pid = server_fixture_worker(f, name, args);
  assert_true(pid > 0);
  return pid;
}

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

static long long submit(fixture *f, const char *job) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  if (st != 201)
    fail_msg("submit: HTTP %ld", st);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static void wait_done(fixture *f, long long job, double timeout) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  double end = harness_now() + timeout;
  while (harness_now() < end) {
    json_t *r = NULL;
    assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
    char state[32];
    snprintf(state, sizeof state, "%s", json_string_value(json_object_get(r, "state")));
    json_decref(r);
    if (strcmp(state, "running") != 0) {
      assert_string_equal(state, "done");
      return;
    }
    usleep(200 * 1000);
  }
  fail_msg("job %lld not finished after %.0f s", job, timeout);
}

/* The sha256 the app printed for name ("NAME SHA256" lines) in task id's
 * output. */
static void printed_sha(fixture *f, long long job, const char *id, const char *name,
                        char hex[65]) {
  char path[64], key[300];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  size_t i;
  json_t *t;
  const char *out = NULL;
  json_array_foreach(json_object_get(r, "tasks"), i, t)
    if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0)
      out = json_string_value(json_object_get(t, "output"));
  assert_non_null(out);
  snprintf(key, sizeof key, "%s ", name);
  const char *p = strstr(out, key);
  assert_non_null(p);
  memcpy(hex, p + strlen(key), 64);
  hex[64] = '\0';
  json_decref(r);
}

static long long file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (long long)st.st_size : 0;
}

/* The stored files of DB.files/ (count, bytes in *bytes). */
static int store_files(fixture *f, long long *bytes) {
  char store[4300];
  snprintf(store, sizeof store, "%s.files", f->db);
  DIR *d = opendir(store);
  int n = 0;
  struct dirent *e;
  char p[4600];
  *bytes = 0;
  while (d && (e = readdir(d))) {
    if (e->d_name[0] == '.')
      continue;
    snprintf(p, sizeof p, "%s/%s", store, e->d_name);
    *bytes += file_size(p);
    n++;
  }
  if (d)
    closedir(d);
  return n;
}

static int stored(fixture *f, const char *sha) {
  char p[4600];
  struct stat st;
  snprintf(p, sizeof p, "%s.files/%s", f->db, sha);
  return stat(p, &st) == 0;
}

static long long db_bytes(fixture *f) {
  char p[4400];
  snprintf(p, sizeof p, "%s-wal", f->db);
  return file_size(f->db) + file_size(p);
}

/* SELECT COUNT(*) ... (one integer) on the master's database, read-only. */
static long long db_count(fixture *f, const char *sql) {
  sqlite3 *h = NULL;
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  long long n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

static long long file_rows(fixture *f, const char *sha) {
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM files WHERE sha256 = '%s'", sha);
  return db_count(f, sql);
}

static void print_sizes(fixture *f, const char *when) {
  long long bytes;
  int n = store_files(f, &bytes);
  fprintf(stderr, "delete_outputs: %s: file store %d files, %lld bytes; files rows %lld, "
          "result_files rows %lld; database + WAL %lld bytes\n", when, n, bytes,
          db_count(f, "SELECT COUNT(*) FROM files"),
          db_count(f, "SELECT COUNT(*) FROM result_files"), db_bytes(f));
}

/* sha256 of a file on disk. */
static void sha_of(const char *path, char hex[65]) {
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

static void test_delete_removes_outputs(void **state) {
  fixture *f = *state;
  char job_a[1024], job_b[512];
  snprintf(job_a, sizeof job_a,
           "{\"app\": \"of\", \"tasks\": ["
           "{\"id\": \"a1\", \"args\": [\"write\", \"shared.bin\", \"%lld\", \"big.bin\", \"%lld\"],"
           " \"outputs\": [\"shared.bin\", \"big.bin\"]},"
           "{\"id\": \"a2\", \"args\": [\"write\", \"own/a2.txt\", \"30000\"],"
           " \"outputs\": [\"own/*.txt\"]}]}",
           SHARED, BIG);
  snprintf(job_b, sizeof job_b,
           "{\"app\": \"of\", \"tasks\": [{\"id\": \"b\", \"args\": [\"write\", \"shared.bin\","
           " \"%lld\"], \"outputs\": [\"*.bin\"]}]}",
           SHARED);
  long long a = submit(f, job_a), b = submit(f, job_b);
  start_worker(f, "w", NULL, NULL);
  wait_done(f, a, 120);
  wait_done(f, b, 120);

  char shared[65], shared_b[65], big[65], small[65];
  printed_sha(f, a, "a1", "shared.bin", shared);
  printed_sha(f, b, "b", "shared.bin", shared_b);
  printed_sha(f, a, "a1", "big.bin", big);
  printed_sha(f, a, "a2", "own/a2.txt", small);
  assert_string_equal(shared, shared_b); /* one stored file for both jobs */
  long long bytes0;
  int n0 = store_files(f, &bytes0);
  print_sizes(f, "A and B done");
  assert_int_equal(n0, 3);
  assert_int_equal(bytes0, SHARED + BIG + 30000);
  assert_true(stored(f, shared) && stored(f, big) && stored(f, small));
  assert_int_equal(file_rows(f, big), 1);

  /* cairn delete A: its own files go, the shared one stays */
  char ids[32], *txt = NULL;
  snprintf(ids, sizeof ids, "%lld", a);
  assert_int_equal(cairn(f, (const char *const[]){"delete", ids, NULL}, &txt), 0);
  fprintf(stderr, "delete_outputs: cairn delete %lld: %s", a, txt);
  free(txt);
  print_sizes(f, "after cairn delete A");
  long long bytes1;
  int n1 = store_files(f, &bytes1);
  fprintf(stderr, "delete_outputs: big.bin (%.12s…) %s DB.files, %lld files rows; "
          "own/a2.txt (%.12s…) %s DB.files, %lld rows; shared.bin (%.12s…) %s DB.files, "
          "%lld rows\n", big, stored(f, big) ? "still in" : "gone from", file_rows(f, big), small,
          stored(f, small) ? "still in" : "gone from", file_rows(f, small), shared,
          stored(f, shared) ? "still in" : "gone from", file_rows(f, shared));
  assert_int_equal(file_rows(f, big), 0);
  assert_int_equal(file_rows(f, small), 0);
  assert_int_equal(file_rows(f, shared), 1);
  assert_false(stored(f, big));
  assert_false(stored(f, small));
  assert_true(stored(f, shared));
  assert_int_equal(n1, 1);
  assert_int_equal(bytes1, SHARED);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM result_files"), 1);
  /* the master forgot them too: a job naming big.bin as an input is refused */
  char naming[512];
  json_t *r = NULL;
  snprintf(naming, sizeof naming, "{\"app\": \"of\", \"files\": [{\"name\": \"x\", "
           "\"sha256\": \"%s\"}], \"tasks\": [{\"id\": \"t\", \"args\": [\"none\"], "
           "\"inputs\": [\"x\"]}]}", big);
  long sst = harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, naming, strlen(naming), &r, NULL,
                          NULL);
  fprintf(stderr, "delete_outputs: a job naming the removed big.bin: %ld %s\n", sst,
          json_string_value(json_object_get(json_object_get(r, "error"), "message")));
  assert_int_equal(sst, 400);
  json_decref(r);

  /* B's result still downloads, digest checked by the command and here */
  char outdir[4300], bid[32], got[65], p[4600];
  snprintf(outdir, sizeof outdir, "%s/out", f->dir);
  snprintf(bid, sizeof bid, "%lld", b);
  assert_int_equal(cairn(f, (const char *const[]){"results", bid, "--dir", outdir, NULL}, &txt),
                   0);
  free(txt);
  snprintf(p, sizeof p, "%s/b/shared.bin", outdir);
  assert_int_equal(file_size(p), SHARED);
  sha_of(p, got);
  fprintf(stderr, "delete_outputs: cairn results %lld --dir: b/shared.bin %lld bytes sha256 "
          "%.12s… %s\n", b, file_size(p), got, strcmp(got, shared) == 0 ? "matches" : "DIFFERS");
  assert_string_equal(got, shared);

  /* the deleted job's output route: 404 with a JSON error */
  char path[300], *raw = NULL;
  size_t rawlen = 0;
  snprintf(path, sizeof path, "/v1/jobs/%lld/output?task=a1&name=big.bin", a);
  long st = harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, NULL, &raw, &rawlen);
  fprintf(stderr, "delete_outputs: GET %s: %ld %.*s\n", path, st, (int)rawlen, raw ? raw : "");
  assert_int_equal(st, 404);
  json_t *e = json_loadb(raw ? raw : "", rawlen, 0, NULL);
  assert_non_null(e);
  json_t *err = json_object_get(e, "error");
  assert_string_equal(json_string_value(json_object_get(err, "code")), "not_found");
  assert_true(json_is_string(json_object_get(err, "message")));
  json_decref(e);
  free(raw);

  /* kill -9 and start again: nothing comes back */
  server_fixture_stop(f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  long long bytes2;
  int n2 = store_files(f, &bytes2);
  print_sizes(f, "after kill -9 and restart");
  assert_int_equal(n2, n1);
  assert_int_equal(bytes2, bytes1);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM files"), 1);
  assert_int_equal(file_rows(f, big), 0);
  raw = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, NULL, &raw, &rawlen),
                   404);
  free(raw);

  /* cairn delete B --purge: nothing is named any more, the store is empty */
  assert_int_equal(cairn(f, (const char *const[]){"delete", bid, "--purge", NULL}, &txt), 0);
  fprintf(stderr, "delete_outputs: cairn delete %lld --purge: %s", b, txt);
  free(txt);
  print_sizes(f, "after cairn delete B --purge");
  long long bytes3;
  assert_int_equal(store_files(f, &bytes3), 0);
  assert_int_equal(bytes3, 0);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM files"), 0);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM result_files"), 0);
  assert_false(stored(f, shared));

  /* and again after kill -9 */
  server_fixture_stop(f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  assert_int_equal(store_files(f, &bytes3), 0);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM files"), 0);
  print_sizes(f, "after kill -9 and restart");
}

/* An out-voted replica's file (its result is not the accepted one) goes
 * with its job too. */
static void test_delete_removes_outvoted_file(void **state) {
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
                           "\"tasks\": [{\"id\": \"t\", \"args\": [\"write\", \"r.bin\", "
                           "\"100000\"], \"outputs\": [\"r.bin\"]}]}");
  pid_t bad = start_worker(f, "bad", script, "1"); /* one altered copy first */
  int st = harness_wait(bad, 60);
  if (st != -1)
    server_fixture_reaped(f, bad);
  assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  start_worker(f, "good1", NULL, NULL);
  start_worker(f, "good2", NULL, NULL);
  wait_done(f, id, 120);
  long long bytes;
  int n0 = store_files(f, &bytes);
  print_sizes(f, "replicated job done");
  assert_int_equal(n0, 2); /* the agreed file and the altered one */
  char ids[32], *txt = NULL;
  snprintf(ids, sizeof ids, "%lld", id);
  assert_int_equal(cairn(f, (const char *const[]){"delete", ids, NULL}, &txt), 0);
  fprintf(stderr, "delete_outputs: cairn delete %lld: %s", id, txt);
  free(txt);
  print_sizes(f, "after cairn delete");
  assert_int_equal(store_files(f, &bytes), 0);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM files"), 0);
  server_fixture_stop(f, SIGKILL);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  assert_int_equal(store_files(f, &bytes), 0);
  assert_int_equal(db_count(f, "SELECT COUNT(*) FROM files"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_delete_removes_outputs, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_delete_removes_outvoted_file, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
