/* test_worker_e2e.c — real cairn-worker processes (and the embedding
 * example) against a real cairn-server on loopback: a DAG with an input file
 * and parent outputs across two workers with two slots each, failures
 * recorded as application failures, non-UTF-8 output, the C callback app,
 * the master killed with -9 and restarted mid-job, re-registration after the
 * master forgot the token, --max-tasks, and bad flags. */
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

typedef server_fixture fixture;

/* Uploads text as a file; writes its sha256 into sha. */
static void upload(const char *url, const char *text, char sha[65]) {
  char path[128];
  cairn__sha256_hex(text, strlen(text), sha);
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  long st = harness_http(url, "PUT", path, ADMIN, text, strlen(text), NULL, NULL, NULL);
  assert_true(st == 200 || st == 201);
}

static long long submit(const char *url, const char *job) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  if (st != 201)
    fail_msg("submit: HTTP %ld: %s", st, r ? json_dumps(r, 0) : "");
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* GET /v1/jobs/{id}/tasks (caller decrefs). */
static json_t *tasks_of(const char *url, long long job) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

static json_t *task_named(json_t *tasks, const char *id) {
  size_t i;
  json_t *t;
  json_array_foreach(json_object_get(tasks, "tasks"), i, t) {
    if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0)
      return t;
  }
  fail_msg("no task %s", id);
  return NULL;
}

/* Checks one task's state, exit status and output. */
static void expect_task(json_t *tasks, const char *id, const char *state, int exit_status,
                        const char *output) {
  json_t *t = task_named(tasks, id);
  const char *got_state = json_string_value(json_object_get(t, "state"));
  const char *got_out = json_string_value(json_object_get(t, "output"));
  if (strcmp(got_state, state) != 0)
    fail_msg("task %s: state %s, wanted %s", id, got_state, state);
  assert_int_equal(json_integer_value(json_object_get(t, "exit_status")), exit_status);
  if (output && (!got_out || strcmp(got_out, output) != 0))
    fail_msg("task %s: output \"%s\", wanted \"%s\"", id, got_out ? got_out : "(null)", output);
}

/* Number of tasks of job in state. */
static int count_state(const char *url, long long job, const char *state) {
  json_t *tasks = tasks_of(url, job);
  size_t i;
  json_t *t;
  int n = 0;
  json_array_foreach(json_object_get(tasks, "tasks"), i, t) {
    n += strcmp(json_string_value(json_object_get(t, "state")), state) == 0;
  }
  json_decref(tasks);
  return n;
}

static void dump_log(const char *log) {
  char cmd[8400];
  snprintf(cmd, sizeof cmd, "tail -n 30 '%s' >&2", log);
  if (system(cmd) != 0)
    fprintf(stderr, "(no log %s)\n", log);
}

/* Starts cairn-worker name (harness_worker) at --log-level info plus
 * extra args. */
static pid_t start_worker(fixture *f, const char *name, const char *const *extra) {
  const char *args[40] = {"--log-level", "info"};
  int n = 2;
  for (int i = 0; extra[i] && n < 39; i++)
    args[n++] = extra[i];
  args[n] = NULL;
  pid_t pid = harness_worker(f->srv.url, f->dir, name, args);
  assert_true(pid > 0);
  return pid;
}

/* Waits for a worker and expects exit status 0. */
static void expect_exit0(fixture *f, pid_t pid, const char *name, double timeout) {
  char log[4300];
  snprintf(log, sizeof log, "%s/%s.log", f->dir, name);
  int st = harness_wait(pid, timeout);
  if (st == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
    dump_log(log);
    fail_msg("worker %s did not exit within %.0f s", name, timeout);
  }
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    dump_log(log);
    fail_msg("worker %s: wait status %d", name, st);
  }
}

/* 1 when the worker's log holds needle. */
static int log_contains(fixture *f, const char *name, const char *needle) {
  char cmd[4600];
  snprintf(cmd, sizeof cmd, "grep -q -F '%s' '%s/%s.log'", needle, f->dir, name);
  return system(cmd) == 0;
}

static int dir_is_empty(const char *dir) {
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "test -d '%s' && test -z \"$(ls -A '%s')\"", dir, dir);
  return system(cmd) == 0;
}

static void test_dag_across_two_workers(void **state) {
  fixture *f = *state;
  char sha[65], job[4096];
  const char *data = "ACGT genome\n";
  upload(f->srv.url, data, sha);
  snprintf(job, sizeof job,
           "{\"name\": \"dag\", \"app\": \"sh\", \"policy\": \"fifo\", \"max_attempts\": 2,"
           " \"files\": [{\"name\": \"genome.fa\", \"sha256\": \"%s\"}],"
           " \"tasks\": ["
           "  {\"id\": \"root\", \"args\": [\"-c\", \"cat inputs/genome.fa\"],"
           "   \"inputs\": [\"genome.fa\"]},"
           "  {\"id\": \"x/y\", \"args\": [\"-c\", \"cat parents/root; echo y\"],"
           "   \"after\": [\"root\"]},"
           "  {\"id\": \"z\", \"args\": [\"-c\", \"echo z\"], \"after\": [\"root\"]},"
           "  {\"id\": \"join\", \"args\": [\"-c\", \"ls parents; cat parents/x%%2Fy parents/z\"],"
           "   \"after\": [\"x/y\", \"z\"]},"
           "  {\"id\": \"bytes\", \"args\": [\"-c\", \"printf '\\\\377\\\\001'\"]},"
           "  {\"id\": \"env\", \"args\": [\"-c\", \"echo $CAIRN_JOB $CAIRN_TASK_ID $CAIRN_INDEX;"
           " test -f stderr && test -d inputs && test -d parents && echo layout-ok\"]},"
           "  {\"id\": \"args\", \"args\": [\"-c\", \"printf '%%s|' \\\"$@\\\"\", \"sh\", \"a b\","
           " \"*\", \"$HOME\"]}"
           " ]}",
           sha);
  long long id = submit(f->srv.url, job);
  const char *extra[] = {"--app", "sh=/bin/sh", "--slots", "2", "--exit-when-idle", "3", NULL};
  pid_t w1 = start_worker(f, "w1", extra);
  pid_t w2 = start_worker(f, "w2", extra);
  expect_exit0(f, w1, "w1", 50);
  expect_exit0(f, w2, "w2", 50);

  json_t *tasks = tasks_of(f->srv.url, id);
  expect_task(tasks, "root", "done", 0, data);
  expect_task(tasks, "x/y", "done", 0, "ACGT genome\ny\n");
  expect_task(tasks, "z", "done", 0, "z\n");
  expect_task(tasks, "join", "done", 0, "x%2Fy\nz\nACGT genome\ny\nz\n");
  expect_task(tasks, "args", "done", 0, "a b|*|$HOME|");
  /* bytes that are not UTF-8 travel as base64 */
  json_t *bytes = task_named(tasks, "bytes");
  assert_string_equal(json_string_value(json_object_get(bytes, "output")), "/wE=");
  assert_string_equal(json_string_value(json_object_get(bytes, "encoding")), "base64");
  json_t *env = task_named(tasks, "env");
  char want[128];
  snprintf(want, sizeof want, "%lld env %lld\nlayout-ok\n", id,
           (long long)json_integer_value(json_object_get(env, "index")));
  expect_task(tasks, "env", "done", 0, want);
  json_decref(tasks);

  /* task directories are removed after delivery; the input stays cached */
  char path[4400];
  snprintf(path, sizeof path, "%s/w1/run", f->dir);
  assert_true(dir_is_empty(path));
  snprintf(path, sizeof path, "%s/w2/run", f->dir);
  assert_true(dir_is_empty(path));
  struct stat st;
  snprintf(path, sizeof path, "%s/w1/credentials.json", f->dir);
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
}

static void test_app_failures_are_recorded(void **state) {
  fixture *f = *state;
  const char *job =
    "{\"name\": \"fails\", \"app\": \"sh\", \"policy\": \"fifo\", \"max_attempts\": 1,"
    " \"tasks\": ["
    "  {\"id\": \"crash\", \"args\": [\"-c\", \"echo dying; kill -9 $$\"]},"
    "  {\"id\": \"false\", \"args\": [\"-c\", \"echo no; exit 3\"]},"
    "  {\"id\": \"flood\", \"args\": [\"-c\", \"while :; do echo 0123456789; done\"]},"
    "  {\"id\": \"ok\", \"args\": [\"-c\", \"echo fine\"]}"
    " ]}";
  long long id = submit(f->srv.url, job);
  const char *extra[] = {"--app", "sh=/bin/sh", "--exit-when-idle", "2", NULL};
  pid_t w = start_worker(f, "w", extra);
  expect_exit0(f, w, "w", 60);
  json_t *tasks = tasks_of(f->srv.url, id);
  expect_task(tasks, "crash", "failed", 137, "dying\n");
  expect_task(tasks, "false", "failed", 3, "no\n");
  expect_task(tasks, "flood", "failed", 137,
              "cairn-worker: output exceeded 1048576 bytes: app killed\n");
  expect_task(tasks, "ok", "done", 0, "fine\n");
  json_decref(tasks);
}

static void test_embedded_callback_app(void **state) {
  fixture *f = *state;
  const char *job =
    "{\"name\": \"sum\", \"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": ["
    "  {\"id\": \"a\", \"args\": [\"1\", \"2\"]}, {\"id\": \"b\", \"args\": [\"3\"]},"
    "  {\"id\": \"c\", \"args\": [\"4\"]},"
    "  {\"id\": \"mid\", \"args\": [\"10\"], \"after\": [\"a\", \"b\"]},"
    "  {\"id\": \"total\", \"args\": [\"100\"], \"after\": [\"mid\", \"c\"]},"
    "  {\"id\": \"bad\", \"args\": [\"x\"]}"
    " ]}";
  long long id = submit(f->srv.url, job);
  char bin[4096], wdir[4300], log[4300];
  harness_bin(bin, sizeof bin, "example-embed_worker");
  snprintf(wdir, sizeof wdir, "%s/embedded", f->dir);
  snprintf(log, sizeof log, "%s/embedded.log", f->dir);
  const char *argv[] = {bin, "--server", f->srv.url, "--dir", wdir, "--slots", "2",
                        "--exit-when-idle", "2", NULL};
  pid_t pid = harness_spawn(argv, log);
  assert_true(pid > 0);
  int st = harness_wait(pid, 60);
  if (st != 0) {
    dump_log(log);
    fail_msg("example-embed_worker: wait status %d", st);
  }
  json_t *tasks = tasks_of(f->srv.url, id);
  expect_task(tasks, "a", "done", 0, "3\n");
  expect_task(tasks, "mid", "done", 0, "16\n");
  expect_task(tasks, "total", "done", 0, "120\n");
  expect_task(tasks, "bad", "failed", 2, "sum: argument 1 (\"x\") is not an integer\n");
  json_decref(tasks);
}

static void test_master_killed_and_restarted(void **state) {
  fixture *f = *state;
  char job[2048];
  size_t n = 0;
  n += (size_t)snprintf(job + n, sizeof job - n,
                        "{\"name\": \"slow\", \"app\": \"sh\", \"policy\": \"fifo\", \"tasks\": [");
  for (int i = 0; i < 6; i++)
    n += (size_t)snprintf(job + n, sizeof job - n,
                          "%s{\"id\": \"t%d\", \"args\": [\"-c\", \"sleep 0.4; echo %d\"]}",
                          i ? ", " : "", i, i);
  snprintf(job + n, sizeof job - n, "]}");
  long long id = submit(f->srv.url, job);
  const char *extra[] = {"--app", "sh=/bin/sh", "--exit-when-idle", "20", NULL};
  pid_t w = start_worker(f, "w", extra);

  double until = harness_now() + 30;
  while (count_state(f->srv.url, id, "done") < 1 && harness_now() < until)
    usleep(50000);
  assert_true(count_state(f->srv.url, id, "done") >= 1);

  /* kill -9 the master while the worker is busy; bring it back on the same port */
  const char *port = strrchr(f->srv.url, ':') + 1;
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%s", port);
  server_fixture_stop(f, SIGKILL);
  usleep(1500000);
  const char *again[] = {"--listen", listen, NULL};
  assert_int_equal(server_fixture_restart(f, again), 0);

  until = harness_now() + 40;
  while (count_state(f->srv.url, id, "done") < 6 && harness_now() < until)
    usleep(100000);
  json_t *tasks = tasks_of(f->srv.url, id);
  for (int i = 0; i < 6; i++) {
    char tid[8], out[8];
    snprintf(tid, sizeof tid, "t%d", i);
    snprintf(out, sizeof out, "%d\n", i);
    expect_task(tasks, tid, "done", 0, out);
  }
  json_decref(tasks);
  kill(w, SIGTERM);
  expect_exit0(f, w, "w", 30);
  /* the worker did see the master go away, and carried on */
  assert_true(log_contains(f, "w", "connect to server"));
  assert_true(log_contains(f, "w", "(retrying)"));
}

static void test_reregisters_when_token_unknown(void **state) {
  fixture *f = *state;
  char path[4400], cred[600];
  snprintf(path, sizeof path, "%s/w", f->dir);
  assert_int_equal(mkdir(path, 0700), 0);
  snprintf(path, sizeof path, "%s/w/credentials.json", f->dir);
  snprintf(cred, sizeof cred,
           "{\"server\": \"%s\", \"id\": 4242, \"row\": 4242, \"token\": "
           "\"%064d\"}\n", f->srv.url, 7);
  assert_int_equal(harness_write_file(path, cred), 0);
  long long id = submit(f->srv.url,
                        "{\"name\": \"one\", \"app\": \"sh\", \"policy\": \"fifo\","
                        " \"tasks\": [{\"id\": \"t\", \"args\": [\"-c\", \"echo hi\"]}]}");
  const char *extra[] = {"--app", "sh=/bin/sh", "--exit-when-idle", "1", NULL};
  expect_exit0(f, start_worker(f, "w", extra), "w", 30);
  json_t *tasks = tasks_of(f->srv.url, id);
  expect_task(tasks, "t", "done", 0, "hi\n");
  json_decref(tasks);

  /* the new identity replaced the forgotten one, with mode 0600 */
  char *text = NULL;
  const char *cat[] = {"/bin/cat", path, NULL};
  assert_int_equal(harness_run(cat, &text), 0);
  json_t *c = json_loads(text, 0, NULL);
  assert_non_null(c);
  assert_int_not_equal(json_integer_value(json_object_get(c, "id")), 4242);
  const char *token = json_string_value(json_object_get(c, "token"));
  assert_true(cairn__sha256_valid_hex(token));
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);

  /* restarting with the same DIR is the same volunteer */
  expect_exit0(f, start_worker(f, "w", extra), "w", 30);
  char *again = NULL;
  assert_int_equal(harness_run(cat, &again), 0);
  assert_string_equal(again, text);
  json_decref(c);
  free(text);
  free(again);
}

static void test_max_tasks(void **state) {
  fixture *f = *state;
  long long id = submit(f->srv.url,
                        "{\"name\": \"three\", \"app\": \"sh\", \"policy\": \"fifo\", \"tasks\": ["
                        " {\"id\": \"a\", \"args\": [\"-c\", \"echo a\"]},"
                        " {\"id\": \"b\", \"args\": [\"-c\", \"echo b\"]},"
                        " {\"id\": \"c\", \"args\": [\"-c\", \"echo c\"]}]}");
  const char *extra[] = {"--app", "sh=/bin/sh", "--max-tasks", "2", NULL};
  expect_exit0(f, start_worker(f, "w", extra), "w", 30);
  assert_int_equal(count_state(f->srv.url, id, "done"), 2);
  assert_int_equal(count_state(f->srv.url, id, "eligible"), 1);
}

static void test_bad_flags_exit_2(void **state) {
  (void)state;
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn-worker");
  const char *cases[][6] = {
    {bin, "--server", "http://127.0.0.1:1", "--app", "noequals", NULL},
    {bin, "--server", "http://127.0.0.1:1", "--app", "x=/no/such/program", NULL},
    {bin, "--server", "http://127.0.0.1:1", "--app", "x=/bin/sh", "--slots"},
    {bin, "--app", "x=/bin/sh", NULL},
    {bin, "--server", "http://127.0.0.1:1", "--app", "x=/bin/sh", "--frobnicate"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *argv[8] = {0};
    for (int k = 0; k < 6 && cases[i][k]; k++)
      argv[k] = cases[i][k];
    char out[4300];
    snprintf(out, sizeof out, "/tmp/cairn-test-flags-%d.err", (int)getpid());
    unlink(out);
    pid_t pid = harness_spawn(argv, out);
    int st = harness_wait(pid, 20);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 2);
    char *text = NULL;
    const char *cat[] = {"/bin/cat", out, NULL};
    assert_int_equal(harness_run(cat, &text), 0);
    assert_true(strncmp(text, "cairn-worker: ", 14) == 0);
    assert_non_null(strchr(text, '\n'));
    assert_int_equal(strchr(text, '\n')[1], '\0');  /* exactly one line */
    free(text);
    unlink(out);
  }
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_dag_across_two_workers, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_app_failures_are_recorded, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_embedded_callback_app, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_master_killed_and_restarted, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_reregisters_when_token_unknown, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_max_tasks, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test(test_bad_flags_exit_2),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
