/* test_worker_state.c — the worker's bookkeeping on real files: credentials
 * (mode 0600, round trip, malformed files refused), result bodies (UTF-8 as
 * text, other bytes as base64), work offers parsed and refused (also
 * chained into a result's answer), a slot's task directory emptied between
 * tasks whatever the app left, the lease
 * table the heartbeat works on, the callback output cap, backoff bounds,
 * and the public API's argument checks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cairn/worker.h"
#include "common/base64.h"
#include "worker/backoff.h"
#include "worker/callback.h"
#include "worker/credentials.h"
#include "worker/fsutil.h"
#include "worker/leases.h"
#include "worker/result.h"
#include "worker/task.h"
#include "worker/taskdir.h"

static char *make_tmpdir(void) {
  char tmpl[] = "/tmp/cairn-test-state-XXXXXX";
  char *d = mkdtemp(tmpl);
  assert_non_null(d);
  return strdup(d);
}

static void remove_dir(char *dir) {
  cairn_error err;
  assert_int_equal(cairn__remove_tree(dir, &err), CAIRN_OK);
  free(dir);
}

static void test_credentials_round_trip(void **state) {
  (void)state;
  char *dir = make_tmpdir();
  char *path = cairn__path_join(dir, "credentials.json");
  cairn_error err = {0};
  cairn__credentials c = {0}, back = {0};
  c.server = strdup("http://127.0.0.1:8080");
  c.id = 7;
  c.row = 9;
  memset(c.token, 'a', 64);
  umask(022);
  assert_int_equal(cairn__credentials_save(path, &c, &err), CAIRN_OK);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600);
  assert_int_equal(cairn__credentials_load(path, &back, &err), CAIRN_OK);
  assert_string_equal(back.server, c.server);
  assert_int_equal(back.id, 7);
  assert_int_equal(back.row, 9);
  assert_string_equal(back.token, c.token);
  cairn__credentials_clear(&back);
  cairn__credentials_clear(&c);

  char *missing = cairn__path_join(dir, "nope.json");
  assert_int_equal(cairn__credentials_load(missing, &back, &err), CAIRN_ENOTFOUND);
  free(missing);

  static const char *bad[] = {
    "not json",
    "{\"server\": \"http://x\", \"id\": 1, \"row\": 1}",
    "{\"server\": \"http://x\", \"id\": 1, \"row\": 1, \"token\": \"ABC\"}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cairn__write_file_atomic(path, bad[i], strlen(bad[i]), 0600, &err),
                     CAIRN_OK);
    assert_int_equal(cairn__credentials_load(path, &back, &err), CAIRN_EINVAL);
    assert_non_null(strstr(err.text, path));
    assert_null(back.server);
  }
  free(path);
  remove_dir(dir);
}

/* Decodes a result body: exit status, output bytes, whether base64 was used. */
static void parse_result(const char *body, int *status, char *out, size_t *len, int *b64) {
  json_t *r = json_loads(body, 0, NULL);
  assert_non_null(r);
  *status = (int)json_integer_value(json_object_get(r, "exit_status"));
  json_t *o = json_object_get(r, "output");
  const char *enc = json_string_value(json_object_get(r, "encoding"));
  *b64 = enc != NULL;
  if (enc) {
    assert_string_equal(enc, "base64");
    assert_int_equal(cairn__base64_decode(json_string_value(o), json_string_length(o), out, 256,
                                         len),
                     0);
  } else {
    *len = json_string_length(o);
    memcpy(out, json_string_value(o), *len);
  }
  json_decref(r);
}

static void test_result_body_encoding(void **state) {
  (void)state;
  struct {
    const char *bytes;
    size_t len;
    int want_b64;
  } cases[] = {
    {"hello\n", 6, 0},
    {"", 0, 0},
    {"caf\xc3\xa9 \xe2\x82\xac", 9, 0},   /* valid UTF-8 stays text */
    {"\xff\x01", 2, 1},                   /* invalid UTF-8 */
    {"a\0b", 3, 1},                       /* NUL byte */
    {"\xc3", 1, 1},                       /* truncated sequence */
    {"\xed\xa0\x80", 3, 1},               /* surrogate */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char *body = cairn__result_json(i == 3 ? 137 : 0, NULL, cases[i].bytes, cases[i].len, 0, NULL, -1, NULL);
    assert_non_null(body);
    char out[256];
    size_t len = 0;
    int status = -1, b64 = -1;
    parse_result(body, &status, out, &len, &b64);
    assert_int_equal(status, i == 3 ? 137 : 0);
    assert_int_equal(b64, cases[i].want_b64);
    assert_int_equal(len, cases[i].len);
    assert_memory_equal(out, cases[i].bytes, len);
    free(body);
  }
}

static void test_work_offer_parsing(void **state) {
  (void)state;
  cairn_error err = {0};
  long long index = 0;
  const char *good =
    "{\"index\": 13, \"lease_expires\": 1790000000, \"lease_seconds\": 30,"
    " \"task\": {\"job\": 1, \"id\": \"0,1\", \"app\": \"cell\", \"args\": [\"0\", \"1\"],"
    " \"inputs\": [{\"name\": \"genome.fa\", \"sha256\": "
    "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\", \"size\": 0,"
    " \"url\": \"/v1/files/e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}],"
    " \"parents\": [{\"id\": \"0,0\", \"url\": \"/v1/tasks/41/output\"}]}}";
  cairn__task *t = cairn__task_parse(good, strlen(good), &index, &err);
  assert_non_null(t);
  assert_int_equal(index, 13);
  assert_int_equal(t->lease_seconds, 30);
  assert_int_equal(t->job, 1);
  assert_string_equal(t->id, "0,1");
  assert_string_equal(t->app, "cell");
  assert_int_equal(t->nargs, 2);
  assert_string_equal(t->args[1], "1");
  assert_int_equal(t->ninputs, 1);
  assert_int_equal(t->inputs[0].size, 0);
  assert_string_equal(t->inputs[0].name, "genome.fa");
  assert_int_equal(t->nparents, 1);
  assert_string_equal(t->parents[0].url, "/v1/tasks/41/output");
  cairn__task_free(t);

  /* the index is known even when the task is unusable, so it can be reported */
  const char *bad_sha = "{\"index\": 5, \"task\": {\"job\": 1, \"id\": \"a\", \"app\": \"x\","
                        " \"inputs\": [{\"name\": \"f\", \"sha256\": \"zz\"}]}}";
  assert_null(cairn__task_parse(bad_sha, strlen(bad_sha), &index, &err));
  assert_int_equal(index, 5);
  assert_non_null(strstr(err.text, "inputs[0]"));
  const char *bad_arg = "{\"index\": 6, \"task\": {\"job\": 1, \"id\": \"a\", \"app\": \"x\","
                        " \"args\": [1]}}";
  assert_null(cairn__task_parse(bad_arg, strlen(bad_arg), &index, &err));
  assert_int_equal(index, 6);
  assert_non_null(strstr(err.text, "args[0]"));
  assert_null(cairn__task_parse("{}", 2, &index, &err));
  assert_int_equal(index, -1);
  assert_null(cairn__task_parse("<html>", 6, &index, &err));
  assert_int_equal(index, -1);
  /* limits, env and stdin: read; a stdin that is not an input, a reserved
   * variable or an unknown limit make the offer unusable (reported) */
  const char *run =
    "{\"index\": 7, \"task\": {\"job\": 1, \"id\": \"r\", \"app\": \"x\","
    " \"inputs\": [{\"name\": \"in\", \"sha256\": "
    "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}],"
    " \"limits\": {\"wall_seconds\": 9, \"memory_mib\": 64}, \"env\": {\"A\": \"1\"},"
    " \"stdin\": \"in\"}}";
  t = cairn__task_parse(run, strlen(run), &index, &err);
  assert_non_null(t);
  assert_int_equal(t->run.limits[CAIRN_LIMIT_WALL], 9);
  assert_int_equal(t->run.limits[CAIRN_LIMIT_MEMORY], 64);
  assert_int_equal(t->run.limits[CAIRN_LIMIT_CPU], 0);
  assert_int_equal(t->run.nenv, 1);
  assert_string_equal(t->run.env_names[0], "A");
  assert_string_equal(t->run.stdin_name, "in");
  cairn__task_free(t);
  const char *bad_run[] = {
    "{\"index\": 8, \"task\": {\"job\": 1, \"id\": \"r\", \"app\": \"x\", \"stdin\": \"in\"}}",
    "{\"index\": 8, \"task\": {\"job\": 1, \"id\": \"r\", \"app\": \"x\","
    " \"env\": {\"CAIRN_JOB\": \"9\"}}}",
    "{\"index\": 8, \"task\": {\"job\": 1, \"id\": \"r\", \"app\": \"x\","
    " \"limits\": {\"wall\": 1}}}",
    /* a hostile or old master's offer that sets a denied variable */
    "{\"index\": 8, \"task\": {\"job\": 1, \"id\": \"r\", \"app\": \"x\","
    " \"env\": {\"LD_PRELOAD\": \"inputs/lib.so\"}}}",
  };
  const char *why[] = {"not one of its inputs", "CAIRN_", "unknown field \"wall\"",
                       "LD_PRELOAD may not be set"};
  for (size_t i = 0; i < sizeof bad_run / sizeof *bad_run; i++) {
    assert_null(cairn__task_parse(bad_run[i], strlen(bad_run[i]), &index, &err));
    assert_int_equal(index, 8);
    if (!strstr(err.text, why[i]))
      fail_msg("offer %zu: \"%s\" lacks \"%s\"", i, err.text, why[i]);
  }
  /* the reason goes into a result body only when given */
  char *body = cairn__result_json(137, "wall", "", 0, 0, NULL, -1, NULL);
  assert_non_null(strstr(body, "\"reason\":\"wall\""));
  free(body);
  body = cairn__result_json(0, "", "ok", 2, 0, NULL, -1, NULL);
  assert_null(strstr(body, "reason"));
  free(body);
  /* no args, no inputs, no parents, no lease_seconds: defaults */
  const char *bare = "{\"index\": 2, \"task\": {\"job\": 3, \"id\": \"b\", \"app\": \"x\"}}";
  t = cairn__task_parse(bare, strlen(bare), &index, &err);
  assert_non_null(t);
  assert_int_equal(t->nargs, 0);
  assert_non_null(t->args);
  assert_int_equal(t->lease_seconds, 300);
  cairn__task_free(t);
}

static void test_lease_table(void **state) {
  (void)state;
  cairn__leases l;
  assert_int_equal(cairn__leases_init(&l, 3, 0, 0), 0);
  long long now = cairn__now_ms();
  assert_int_equal(cairn__leases_due_in(&l, now), -1);  /* nothing held: no heartbeat */
  cairn__leases_hold(&l, 0, 13, 30);
  cairn__leases_hold(&l, 1, 21, 3);
  long long due = cairn__leases_due_in(&l, cairn__now_ms());
  assert_true(due > 0 && due <= 1000);  /* every lease_seconds/3: the shortest wins */
  unsigned long bound = cairn__leases_begin(&l);
  cairn__leases_hold(&l, 2, 34, 30);  /* granted after the heartbeat was sent */
  long long extended[] = {13};
  assert_int_equal(cairn__leases_renewed(&l, bound, extended, 1, cairn__now_ms()), 1);
  assert_int_equal(atomic_load(cairn__leases_lost_flag(&l, 0)), 0);
  assert_int_equal(atomic_load(cairn__leases_lost_flag(&l, 1)), 1);  /* 21 not listed */
  assert_int_equal(atomic_load(cairn__leases_lost_flag(&l, 2)), 0);  /* too new to judge */
  cairn__leases_release(&l, 1);
  cairn__leases_hold(&l, 1, 55, 30);
  assert_int_equal(atomic_load(cairn__leases_lost_flag(&l, 1)), 0);
  cairn__leases_destroy(&l);
}

static int writer(const cairn_task *task, cairn_task_output *out, void *userdata) {
  size_t *n = userdata;
  char block[100];
  memset(block, 'x', sizeof block);
  int failed = 0;
  for (size_t i = 0; i < *n; i++)
    failed |= cairn_task_output_write(out, block, sizeof block) != 0;
  assert_int_equal(task->nargs, 1);
  assert_string_equal(task->args[0], "arg");
  assert_string_equal(task->parents[0].name, "p/1");
  assert_string_equal(task->parents[0].path, "/d/parents/p%2F1");
  return failed ? 0 : 4;
}

static void test_callback_output_cap(void **state) {
  (void)state;
  char *args[] = {"arg", NULL};
  cairn__parent parent = {"p/1", "/v1/tasks/1/output"};
  cairn__task t = {.index = 1, .job = 1, .id = "t", .app = "w", .args = args, .nargs = 1,
                   .parents = &parent, .nparents = 1};
  char *ppaths[] = {"/d/parents/p%2F1"};
  cairn__taskdir d = {.dir = "/d", .parent_paths = ppaths, .nparents = 1};
  cairn__run_result res;
  cairn_error err;
  size_t n = 10;
  assert_int_equal(cairn__callback_run(writer, &n, &t, &d, NULL, 1000, NULL, 0, &res, &err), CAIRN_OK);
  assert_int_equal(res.outcome, CAIRN__RUN_EXITED);
  assert_int_equal(res.exit_status, 4);
  assert_int_equal(res.output.len, 1000);
  cairn__buf_free(&res.output);
  n = 11;  /* one block too many: an application failure even though it returned 0 */
  assert_int_equal(cairn__callback_run(writer, &n, &t, &d, NULL, 1000, NULL, 0, &res, &err), CAIRN_OK);
  assert_int_equal(res.outcome, CAIRN__RUN_OVERFLOW);
  assert_int_equal(res.exit_status, 1);
  assert_non_null(strstr(res.note, "output exceeded 1000 bytes"));
  cairn__buf_free(&res.output);
}

static void test_backoff_bounds(void **state) {
  (void)state;
  cairn__backoff b;
  cairn__backoff_init(&b, 50, 5000);
  long base = 50;
  for (int i = 0; i < 20; i++) {
    long d = cairn__backoff_next(&b);
    assert_true(d >= base / 2 && d <= base);  /* jitter within [base/2, base] */
    base = base * 2 > 5000 ? 5000 : base * 2;
  }
  cairn__backoff_reset(&b);
  long d = cairn__backoff_next(&b);
  assert_true(d >= 25 && d <= 50);
}

static int noop_app(const cairn_task *task, cairn_task_output *out, void *userdata) {
  return 0;
}

static void test_public_api_checks(void **state) {
  (void)state;
  cairn_error err;
  cairn_worker_config cfg;
  cairn_worker_config_init(&cfg);
  assert_null(cairn_worker_create(&cfg, &err));
  assert_int_equal(err.status, CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "server URL"));
  cfg.server_url = "ftp://x";
  assert_null(cairn_worker_create(&cfg, &err));
  cfg.server_url = "http://127.0.0.1:1/";
  cfg.slots = 5000;
  assert_null(cairn_worker_create(&cfg, &err));
  assert_non_null(strstr(err.text, "slots"));
  cfg.slots = 2;
  cfg.log_level = (cairn_log_level)9;
  assert_null(cairn_worker_create(&cfg, &err));
  assert_non_null(strstr(err.text, "log level"));
  cfg.log_level = CAIRN_LOG_DEFAULT;
  cairn_worker *w = cairn_worker_create(&cfg, &err);
  assert_non_null(w);
  assert_int_equal(cairn_worker_add_exec_app(w, "sh", "/bin/sh", &err), CAIRN_OK);
  assert_int_equal(cairn_worker_add_exec_app(w, "sh", "/bin/echo", &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "twice"));
  assert_int_equal(cairn_worker_add_exec_app(w, "gone", "/no/such/program", &err), CAIRN_EINVAL);
  assert_int_equal(cairn_worker_add_exec_app(w, "dir", "/tmp", NULL), CAIRN_EINVAL);
  assert_int_equal(cairn_worker_add_exec_app(w, "a=b", "/bin/sh", &err), CAIRN_EINVAL);
  assert_int_equal(cairn_worker_add_callback_app(w, "cb", noop_app, NULL, &err), CAIRN_OK);
  assert_int_equal(cairn_worker_add_callback_app(w, "nil", NULL, NULL, &err), CAIRN_EINVAL);
  cairn_worker_stats st;
  cairn_worker_get_stats(w, &st);
  assert_int_equal(st.tasks_done + st.tasks_failed + st.tasks_dropped, 0);
  /* stopped before it starts: run() gives up on the unreachable master and returns OK */
  char *dir = make_tmpdir();
  cairn_worker_delete(w);
  cfg.dir = dir;
  w = cairn_worker_create(&cfg, &err);
  assert_int_equal(cairn_worker_add_callback_app(w, "cb", noop_app, NULL, &err), CAIRN_OK);
  cairn_worker_stop(w);
  assert_int_equal(cairn_worker_run(w, &err), CAIRN_OK);
  assert_int_equal(cairn_worker_run(w, &err), CAIRN_ECONFLICT); /* once per worker */
  assert_int_equal(cairn_worker_add_callback_app(w, "late", noop_app, NULL, &err),
                   CAIRN_ECONFLICT);
  cairn_worker_delete(w);
  cairn_worker_delete(NULL);
  remove_dir(dir);
}

/* Creates an empty file at path, and the folders above it. */
static void touch_file(const char *path) {
  char dir[512];
  cairn_error err;
  snprintf(dir, sizeof dir, "%s", path);
  *strrchr(dir, '/') = '\0';
  assert_int_equal(cairn__mkdirs(dir, 0755, &err), CAIRN_OK);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fclose(f);
}

static void test_chained_offer_parsing(void **state) {
  (void)state;
  int present = -1;
  long long index = 0;
  cairn_error err = {0};
  /* an older master, or no task now: no "next" */
  const char *none = "{\"state\": \"accepted\"}";
  assert_null(cairn__task_parse_next(none, strlen(none), &present, &index, &err));
  assert_int_equal(present, 0);
  const char *one = "{\"state\": \"accepted\", \"next\": {\"index\": 9, \"lease_expires\": 1,"
                    " \"lease_seconds\": 30, \"task\": {\"job\": 2, \"id\": \"t1\","
                    " \"app\": \"sum\", \"args\": [\"1\"]}}}";
  cairn__task *t = cairn__task_parse_next(one, strlen(one), &present, &index, &err);
  assert_non_null(t);
  assert_int_equal(present, 1);
  assert_int_equal(index, 9);
  assert_int_equal(t->lease_seconds, 30);
  assert_string_equal(t->id, "t1");
  assert_int_equal(t->nargs, 1);
  cairn__task_free(t);
  /* a malformed chained offer still names its index so that it can be reported */
  const char *bad = "{\"state\": \"accepted\", \"next\": {\"index\": 10, \"task\": {}}}";
  assert_null(cairn__task_parse_next(bad, strlen(bad), &present, &index, &err));
  assert_int_equal(present, 1);
  assert_int_equal(index, 10);
  /* the request asks for it */
  char *body = cairn__result_json(0, NULL, "x", 1, 1, NULL, -1, NULL);
  json_t *o = json_loads(body, 0, NULL);
  assert_true(json_is_true(json_object_get(o, "next")));
  json_decref(o);
  free(body);
}

/* 1 when dir holds exactly the names in want (a NULL-terminated list). */
static int holds_exactly(const char *dir, const char *const *want) {
  char cmd[600], got[600] = "", expect[600] = "";
  snprintf(cmd, sizeof cmd, "ls -A '%s' | tr '\\n' ' '", dir);
  FILE *p = popen(cmd, "r");
  if (!p || !fgets(got, sizeof got, p))
    got[0] = '\0';
  if (p)
    pclose(p);
  for (size_t i = 0; want[i]; i++) {
    strcat(expect, want[i]);
    strcat(expect, " ");
  }
  if (strcmp(got, expect) != 0)
    fprintf(stderr, "%s holds \"%s\", wanted \"%s\"\n", dir, got, expect);
  return strcmp(got, expect) == 0;
}

static void test_slot_directory_reuse(void **state) {
  (void)state;
  char *root = make_tmpdir(), path[512];
  cairn_error err = {0};
  cairn__taskdir d;
  cairn__task t = {.index = 1, .job = 1, .id = "t", .app = "a"};
  static const char *const skeleton[] = {"inputs", "parents", NULL};
  static const char *const with_stderr[] = {"inputs", "parents", "stderr", NULL};
  static const char *const nothing[] = {NULL};
  /* leftovers of a killed worker are removed */
  snprintf(path, sizeof path, "%s/slot-3", root);
  assert_int_equal(cairn__mkdirs(path, 0700, &err), CAIRN_OK);
  snprintf(path, sizeof path, "%s/slot-3/stale", root);
  touch_file(path);
  assert_int_equal(cairn__taskdir_init(&d, root, 3, &err), CAIRN_OK);
  assert_true(holds_exactly(d.dir, skeleton));
  /* a program left its stderr, files, a read-only folder, a symlink, and
   * files in inputs/ and parents/: all go but a plain stderr */
  assert_int_equal(cairn__taskdir_prepare(&d, &t, 1, &err), CAIRN_OK);
  const char *names[] = {"stderr", "out.txt", "inputs/x", "parents/y", "deep/a/b", NULL};
  for (size_t i = 0; names[i]; i++) {
    snprintf(path, sizeof path, "%s/%s", d.dir, names[i]);
    touch_file(path);
  }
  snprintf(path, sizeof path, "%s/deep", d.dir);
  chmod(path, 0500);
  snprintf(path, sizeof path, "%s/link", d.dir);
  assert_int_equal(symlink("/etc", path), 0);
  cairn__taskdir_clear(&d);
  assert_true(holds_exactly(d.dir, with_stderr));
  snprintf(path, sizeof path, "%s/inputs", d.dir);
  assert_true(holds_exactly(path, nothing));
  snprintf(path, sizeof path, "%s/parents", d.dir);
  assert_true(holds_exactly(path, nothing));
  /* a callback sees no stderr */
  assert_int_equal(cairn__taskdir_prepare(&d, &t, 0, &err), CAIRN_OK);
  assert_true(holds_exactly(d.dir, skeleton));
  /* a replaced inputs/ folder and a hard-linked stderr are replaced */
  snprintf(path, sizeof path, "%s/inputs", d.dir);
  assert_int_equal(rmdir(path), 0);
  touch_file(path);
  char link_target[512];
  snprintf(link_target, sizeof link_target, "%s/other", root);
  touch_file(link_target);
  snprintf(path, sizeof path, "%s/stderr", d.dir);
  assert_int_equal(link(link_target, path), 0);
  cairn__taskdir_clear(&d);
  assert_true(holds_exactly(d.dir, skeleton));
  struct stat st;
  snprintf(path, sizeof path, "%s/inputs", d.dir);
  assert_int_equal(stat(path, &st), 0);
  assert_true(S_ISDIR(st.st_mode));
  assert_int_equal(stat(link_target, &st), 0);
  /* the slot's end removes the directory */
  snprintf(path, sizeof path, "%s", d.dir);
  cairn__taskdir_destroy(&d);
  assert_int_equal(access(path, F_OK), -1);
  remove_dir(root);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_credentials_round_trip),
    cmocka_unit_test(test_result_body_encoding),
    cmocka_unit_test(test_work_offer_parsing),
    cmocka_unit_test(test_chained_offer_parsing),
    cmocka_unit_test(test_slot_directory_reuse),
    cmocka_unit_test(test_lease_table),
    cmocka_unit_test(test_callback_output_cap),
    cmocka_unit_test(test_backoff_bounds),
    cmocka_unit_test(test_public_api_checks),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
