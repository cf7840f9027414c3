/* test_output_links.c — a task cannot send a file outside its directory by
 * hard-linking it to an output name, nor by replacing its stderr.
 *
 * A real cairn-worker (app sh, --no-sandbox: the task sandbox would hide
 * the file, docs/security.md) runs four tasks of one job; the test's
 * folder holds credentials.json, standing for the worker's credentials (or
 * /etc/shadow for a worker running as root), on the same file system as
 * the worker's task directories:
 *   link    `ln CREDENTIALS out.txt`, out.txt a declared output;
 *   glob    the same under a pattern (`*.txt`);
 *   stderr  removes its stderr file and links CREDENTIALS in its place;
 *   ok      writes out.txt itself (still taken, served).
 * The linked outputs are refused by the worker: the task fails (exit 125,
 * reason "output") with a line naming the file and the link, and the
 * master neither stores nor serves the bytes; the replaced stderr is not
 * read. What each task recorded is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
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
#define WAIT_S 60.0
#define SECRET "{\"token\": \"credentials-that-must-not-leave-the-worker\"}\n"

typedef struct fixture {
  server_fixture s;
  char cred[4200];
  pid_t worker;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || server_fixture_open(&f->s, NULL, 0)) {
    free(f);
    return -1;
  }
  snprintf(f->cred, sizeof f->cred, "%s/credentials.json", f->s.dir);
  if (harness_write_file(f->cred, SECRET) || chmod(f->cred, 0600) ||
      server_fixture_restart(&f->s, NULL)) {
    server_fixture_close(&f->s);
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = server_fixture_close(&f->s);
  free(f);
  return rc;
}

/* Waits until task id of job has ended; returns it (caller decrefs). */
static json_t *task_of(const fixture *f, long long job, const char *id) {
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
      json_incref(t);
      json_decref(r);
      return t;
    }
    json_decref(r);
  }
  fail_msg("task %s of job %lld not finished within %.0f s", id, job, WAIT_S);
  return NULL;
}

static const char *str(json_t *t, const char *key) {
  const char *s = json_string_value(json_object_get(t, key));
  return s ? s : "";
}

/* GET of task id's output file name: the HTTP status; the body in *raw. */
static long served(const fixture *f, long long job, const char *id, const char *name,
                   char **raw, size_t *len) {
  char path[256];
  snprintf(path, sizeof path, "/v1/jobs/%lld/output?task=%s&name=%s", job, id, name);
  return harness_http(f->s.srv.url, "GET", path, ADMIN, NULL, 0, NULL, raw, len);
}

/* 1 when the master's file store holds a file of digest sha. */
static int stored(const fixture *f, const char *sha) {
  char path[4400];
  snprintf(path, sizeof path, "%s/cairn.db.files/%s", f->s.dir, sha);
  return access(path, F_OK) == 0;
}

/* Task id failed on its linked output name: exit 125, reason "output", the
 * stderr tail naming the file and the link; nothing stored nor served. */
static void expect_refused(const fixture *f, long long job, const char *id,
                           const char *secret_sha) {
  json_t *t = task_of(f, job, id);
  long long exit_status = (long long)json_integer_value(json_object_get(t, "exit_status"));
  printf("%-6s state %s, exit %lld, reason %s, stdout \"%s\", stderr \"%s\"\n", id,
         str(t, "state"), exit_status, str(t, "reason"), str(t, "output"), str(t, "stderr"));
  assert_string_equal(str(t, "output"), "linked\n"); /* the attack was made */
  assert_string_equal(str(t, "state"), "failed");
  assert_int_equal(exit_status, 125);
  assert_string_equal(str(t, "reason"), "output");
  assert_non_null(strstr(str(t, "stderr"), "output out.txt has more than one link"));
  assert_null(strstr(str(t, "stderr"), "must-not-leave"));
  char *raw = NULL;
  size_t len = 0;
  long st = served(f, job, id, "out.txt", &raw, &len);
  printf("%-6s out.txt from the master: HTTP %ld\n", id, st);
  assert_int_not_equal(st, 200);
  assert_true(raw == NULL || strstr(raw, "must-not-leave") == NULL);
  free(raw);
  assert_false(stored(f, secret_sha));
  json_decref(t);
}

static void test_linked_outputs_refused(void **state) {
  fixture *f = *state;
  char job[16384], secret_sha[65], ok_sha[65];
  cairn__sha256_hex(SECRET, strlen(SECRET), secret_sha);
  cairn__sha256_hex("mine\n", 5, ok_sha);
  /* --no-sandbox: in the task sandbox credentials.json is not there to
   * link (test_sandbox); this checks the worker's own refusal of linked
   * outputs, which holds for a worker run without the sandbox */
  const char *args[] = {"--app", "sh=/bin/sh", "--slots", "1", "--peer-listen", "off",
                        "--log-level", "info", "--no-sandbox", NULL};
  f->worker = server_fixture_worker(&f->s, "w", args);
  assert_true(f->worker > 0);
  snprintf(job, sizeof job,
           "{\"app\": \"sh\", \"policy\": \"fifo\", \"max_attempts\": 1, \"tasks\": ["
           "{\"id\": \"link\", \"outputs\": [\"out.txt\"], \"args\": [\"-c\", "
           "\"ln '%s' out.txt && echo linked\"]},"
           "{\"id\": \"glob\", \"outputs\": [\"*.txt\"], \"args\": [\"-c\", "
           "\"ln '%s' out.txt && echo linked\"]},"
           "{\"id\": \"stderr\", \"args\": [\"-c\", "
           "\"rm stderr && ln '%s' stderr && echo linked; exit 3\"]},"
           "{\"id\": \"ok\", \"outputs\": [\"out.txt\"], \"args\": [\"-c\", "
           "\"echo mine > out.txt\"]}]}",
           f->cred, f->cred, f->cred);
  json_t *r = NULL;
  assert_int_equal(harness_http(f->s.srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r,
                                NULL, NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);

  expect_refused(f, id, "link", secret_sha);
  expect_refused(f, id, "glob", secret_sha);

  json_t *t = task_of(f, id, "stderr");
  printf("stderr state %s, exit %lld, stdout \"%s\", stderr \"%s\"\n", str(t, "state"),
         (long long)json_integer_value(json_object_get(t, "exit_status")), str(t, "output"),
         str(t, "stderr"));
  assert_string_equal(str(t, "output"), "linked\n");
  assert_int_equal(json_integer_value(json_object_get(t, "exit_status")), 3);
  assert_null(strstr(str(t, "stderr"), "must-not-leave"));
  assert_non_null(strstr(str(t, "stderr"), "stderr has more than one link"));
  json_decref(t);

  t = task_of(f, id, "ok");
  assert_string_equal(str(t, "state"), "done");
  json_decref(t);
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(served(f, id, "ok", "out.txt", &raw, &len), 200);
  assert_int_equal(len, 5);
  assert_memory_equal(raw, "mine\n", 5);
  free(raw);
  assert_true(stored(f, ok_sha));

  /* the linked file is as it was */
  struct stat st;
  assert_int_equal(stat(f->cred, &st), 0);
  assert_int_equal(st.st_mode & 07777, 0600);
  assert_int_equal(st.st_nlink, 1);

  kill(f->worker, SIGTERM);
  int ws = harness_wait(f->worker, 20);
  server_fixture_reaped(&f->s, f->worker);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_linked_outputs_refused, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
