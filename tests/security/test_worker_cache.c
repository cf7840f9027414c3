/* test_worker_cache.c — a task cannot corrupt its worker's input cache.
 *
 * A real cairn-worker (one slot, peer server on 127.0.0.1) runs a task
 * whose app overwrites the start of its input in place, keeping its size
 * (making it writable first, so that it succeeds as root and as the file's
 * owner alike), then a task that
 * prints the SHA-256 of the same input; a peer then downloads the input
 * from the worker's peer server. Both must get the original bytes. Then the
 * cached file itself is changed behind the worker's back: the peer server
 * must not send it (404, the file dropped) and the next task must get the
 * original bytes again (downloaded anew). What each reader got is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/grant.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define DATA_SIZE (256u * 1024u)
#define WAIT_S 60.0

typedef struct fixture {
  server_fixture s;
  char wdir[4200]; /* worker w's folder */
  pid_t worker;
  unsigned peer_port;
  char sha[65];
} fixture;

/* Uploads DATA_SIZE bytes of a fixed pattern; their digest goes to f->sha. */
static void upload_data(fixture *f) {
  char *data = malloc(DATA_SIZE), path[128];
  assert_non_null(data);
  for (unsigned i = 0; i < DATA_SIZE; i++)
    data[i] = (char)('a' + (i * 7u + i / 13u) % 26u);
  cairn__sha256_hex(data, DATA_SIZE, f->sha);
  snprintf(path, sizeof path, "/v1/files/%s", f->sha);
  long st = harness_http(f->s.srv.url, "PUT", path, ADMIN, data, DATA_SIZE, NULL, NULL, NULL);
  assert_true(st == 200 || st == 201);
  free(data);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || server_fixture_open(&f->s, NULL, 1)) {
    free(f);
    return -1;
  }
  snprintf(f->wdir, sizeof f->wdir, "%s/w", f->s.dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = server_fixture_close(&f->s);
  free(f);
  return rc;
}

static void start_worker(fixture *f) {
  char listen[64];
  f->peer_port = harness_unused_port(0);
  assert_true(f->peer_port > 0);
  snprintf(listen, sizeof listen, "127.0.0.1:%u", f->peer_port);
  const char *args[] = {"--app", "sh=/bin/sh", "--slots", "1", "--peer-listen", listen,
                        "--log-level", "info", NULL};
  f->worker = server_fixture_worker(&f->s, "w", args);
  assert_true(f->worker > 0);
}

/* Submits a job of app sh whose tasks use the uploaded file as "data". */
static long long submit(fixture *f, const char *tasks) {
  char job[4096];
  json_t *r = NULL;
  snprintf(job, sizeof job,
           "{\"name\": \"cache\", \"app\": \"sh\", \"policy\": \"fifo\", \"max_attempts\": 1,"
           " \"files\": [{\"name\": \"data\", \"sha256\": \"%s\"}], \"tasks\": [%s]}",
           f->sha, tasks);
  long st = harness_http(f->s.srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  assert_int_equal(st, 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* Waits until task id of job is done; returns its output (caller frees). */
static char *output_of(fixture *f, long long job, const char *id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  for (double t0 = harness_now(); harness_now() - t0 < WAIT_S; usleep(100 * 1000)) {
    json_t *r = NULL, *t;
    size_t i;
    assert_int_equal(harness_http(f->s.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
    json_array_foreach(json_object_get(r, "tasks"), i, t) {
      const char *state = json_string_value(json_object_get(t, "state"));
      if (strcmp(json_string_value(json_object_get(t, "id")), id) != 0 ||
          (strcmp(state, "done") != 0 && strcmp(state, "failed") != 0))
        continue;
      char *out = strdup(json_string_value(json_object_get(t, "output")));
      json_decref(r);
      return out;
    }
    json_decref(r);
  }
  fail_msg("task %s of job %lld not finished within %.0f s", id, job, WAIT_S);
  return NULL;
}

/* The worker's volunteer id, from the credentials it saved. */
static long long worker_id(fixture *f) {
  char path[4400];
  snprintf(path, sizeof path, "%s/credentials.json", f->wdir);
  json_t *c = json_load_file(path, 0, NULL);
  assert_non_null(c);
  long long id = (long long)json_integer_value(json_object_get(c, "id"));
  json_decref(c);
  assert_true(id > 0);
  return id;
}

/* GETs the input from the worker's peer server with a grant the master
 * would issue (its secret comes from the admin token, common/grant.h);
 * returns the HTTP status and writes the digest of the body into sha (or
 * "-"). */
static long peer_get(fixture *f, char sha[65]) {
  char url[64], path[512], *raw = NULL, secret[65], key[65], grant[CAIRN_GRANT_MAX + 1];
  size_t len = 0;
  cairn__grant_secret(ADMIN, secret);
  cairn__grant_key(secret, worker_id(f), 0, key);
  assert_int_equal(cairn__grant_make(key, f->sha, 99, (long long)time(NULL) + 60, grant), 0);
  snprintf(url, sizeof url, "http://127.0.0.1:%u", f->peer_port);
  snprintf(path, sizeof path, "/v1/files/%s?" CAIRN_GRANT_PARAM "=%s", f->sha, grant);
  long st = harness_http(url, "GET", path, NULL, NULL, 0, NULL, &raw, &len);
  if (st == 200)
    cairn__sha256_hex(raw, len, sha);
  else
    snprintf(sha, 65, "-");
  free(raw);
  return st;
}

static void test_task_cannot_corrupt_cache(void **state) {
  fixture *f = *state;
  char got[65], cached[4400];
  upload_data(f);
  start_worker(f);
  printf("input sha256 %s, running as uid %ld\n", f->sha, (long)getuid());

  long long job = submit(f, "{\"id\": \"write\", \"inputs\": [\"data\"], \"args\": [\"-c\","
                            " \"chmod u+w inputs/data; printf corrupted |"
                            " dd of=inputs/data conv=notrunc 2>/dev/null && echo overwritten\"]},"
                            "{\"id\": \"read\", \"inputs\": [\"data\"], \"after\": [\"write\"],"
                            " \"args\": [\"-c\", \"sha256sum < inputs/data | cut -c1-64\"]}");
  char *w = output_of(f, job, "write"), *r = output_of(f, job, "read");
  printf("attack: the app wrote its input in place: %s", w);
  printf("later task read      %.64s (%s)\n", r, strncmp(r, f->sha, 64) == 0 ? "original" : "CORRUPT");
  assert_string_equal(w, "overwritten\n");
  assert_memory_equal(r, f->sha, 64);
  free(w);
  free(r);
  /* The peer server serves the original bytes. */
  assert_int_equal(peer_get(f, got), 200);
  printf("peer download got    %s (%s)\n", got, strcmp(got, f->sha) == 0 ? "original" : "CORRUPT");
  assert_string_equal(got, f->sha);

  /* The cached file changed behind the worker's back (as its owner or root
   * can): never served again, dropped, and fetched anew for the next task. */
  snprintf(cached, sizeof cached, "%s/cache/%s", f->wdir, f->sha);
  assert_int_equal(chmod(cached, 0644), 0);
  int fd = open(cached, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "X", 1, DATA_SIZE / 2), 1);
  close(fd);
  long st = peer_get(f, got);
  printf("cache file changed in place: peer server answered %ld, file %s\n", st,
         access(cached, F_OK) == 0 ? "still cached" : "dropped");
  assert_int_equal(st, 404);
  job = submit(f, "{\"id\": \"again\", \"inputs\": [\"data\"],"
                  " \"args\": [\"-c\", \"sha256sum < inputs/data | cut -c1-64\"]}");
  r = output_of(f, job, "again");
  printf("next task read       %.64s (%s)\n", r, strncmp(r, f->sha, 64) == 0 ? "original" : "CORRUPT");
  assert_memory_equal(r, f->sha, 64);
  free(r);
  assert_int_equal(peer_get(f, got), 200);
  assert_string_equal(got, f->sha);

  kill(f->worker, SIGTERM);
  int ws = harness_wait(f->worker, 20);
  server_fixture_reaped(&f->s, f->worker);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_task_cannot_corrupt_cache, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
