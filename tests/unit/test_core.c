/* test_core.c — the master's scheduler state in-process over a real SQLite
 * file: volunteers and tokens, a DAG walked task by task (eligibility, counts,
 * accountable indices), result errors, lease expiry, max_attempts, apps,
 * replication with quorum, bans with taint propagation, and a close and
 * reopen of the core in the middle of the work (restart recovery). */
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

#include "plan/ataf.h"
#include "plan/jobspec.h"
#include "common/log.h"
#include "common/sha256.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

/* ---- helpers ---- */

static int64_t reg(cairn__core *c, const char *name, const char *apps_csv, char token[65]) {
  char buf[128], *apps[8];
  int napps = 0;
  snprintf(buf, sizeof buf, "%s", apps_csv);
  for (char *p = strtok(buf, ","); p && napps < 8; p = strtok(NULL, ","))
    apps[napps++] = p;
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, napps, 1, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

/* The id of the volunteer holding token. */
static int64_t auth(cairn__core *c, const char *token) {
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_auth(c, token, &id, &err) != CAIRN_OK)
    fail_msg("auth: %s", err.text);
  return id;
}

#define submit core_fixture_submit

static int64_t phi(int64_t row, int64_t t) {
  uint64_t out = 0;
  assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHISHARP, (uint64_t)row, (uint64_t)t, &out, NULL),
                   CAIRN_OK);
  return (int64_t)out;
}

static const char *work_task(json_t *w) {
  return json_string_value(json_object_get(json_object_get(w, "task"), "id"));
}

static int64_t work_index(json_t *w) {
  return (int64_t)json_integer_value(json_object_get(w, "index"));
}

/* v asks for work and must get task (any task when NULL); returns its index. */
static int64_t take_apps(cairn__core *c, int64_t v, const char *task, char **apps, int napps,
                         char *got, size_t gotlen) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, apps, napps, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("work: %s", err.text);
  if (!w)
    fail_msg("volunteer %lld got no work, wanted %s", (long long)v, task ? task : "any");
  const char *id = work_task(w);
  if (task && strcmp(id, task) != 0) {
    char msg[300];
    snprintf(msg, sizeof msg, "volunteer %lld got task %s, wanted %s", (long long)v, id, task);
    json_decref(w);
    fail_msg("%s", msg);
  }
  if (got)
    snprintf(got, gotlen, "%s", id);
  int64_t idx = work_index(w);
  json_decref(w);
  return idx;
}

static int64_t take(cairn__core *c, int64_t v, const char *task) {
  return take_apps(c, v, task, NULL, 0, NULL, 0);
}

static void no_work(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  if (w) {
    char id[64];
    snprintf(id, sizeof id, "%s", work_task(w));
    json_decref(w);
    fail_msg("volunteer %lld got task %s, wanted none", (long long)v, id);
  }
}

static cairn_status result(cairn__core *c, int64_t v, int64_t idx, int exit_status, const char *out,
                           cairn_error *err) {
  return cairn__core_result(c, v, idx, exit_status, NULL, out, strlen(out), NULL, NULL, err);
}

static void result_ok(cairn__core *c, int64_t v, int64_t idx, const char *out) {
  cairn_error err = {0};
  if (result(c, v, idx, 0, out, &err) != CAIRN_OK)
    fail_msg("result for %lld: %s", (long long)idx, err.text);
}

static void expect_job(cairn__core *c, int64_t job, int waiting, int eligible, int running,
                       int done, int failed, const char *state) {
  json_t *j = cairn__core_job_json(c, job, 1);
  assert_non_null(j);
  json_t *k = json_object_get(j, "counts");
  int got[5] = {(int)json_integer_value(json_object_get(k, "waiting")),
                (int)json_integer_value(json_object_get(k, "eligible")),
                (int)json_integer_value(json_object_get(k, "running")),
                (int)json_integer_value(json_object_get(k, "done")),
                (int)json_integer_value(json_object_get(k, "failed"))};
  int want[5] = {waiting, eligible, running, done, failed};
  char st[16];
  snprintf(st, sizeof st, "%s", json_string_value(json_object_get(j, "state")));
  json_decref(j);
  if (memcmp(got, want, sizeof got) != 0 || strcmp(st, state) != 0)
    fail_msg("job %lld: counts w%d e%d r%d d%d f%d %s, wanted w%d e%d r%d d%d f%d %s",
             (long long)job, got[0], got[1], got[2], got[3], got[4], st, want[0], want[1],
             want[2], want[3], want[4], state);
}

/* Every task of job, read in pages of two (each page's results and files
 * must land on its own tasks): {"tasks": [...]}. */
static json_t *tasks_paged(cairn__core *c, int64_t job) {
  json_t *all = json_array();
  int64_t after = 0, key = 0;
  do {
    cairn_error err = {0};
    json_t *page = cairn__core_tasks_json(c, job, after, 2, &err), *x;
    if (!page)
      fail_msg("tasks of job %lld after %lld: %s", (long long)job, (long long)after, err.text);
    size_t i, n = json_array_size(json_object_get(page, "tasks"));
    assert_true(n <= 2);
    json_array_foreach(json_object_get(page, "tasks"), i, x) {
      json_int_t k = json_integer_value(json_object_get(x, "key"));
      assert_true(!key || k == key + 1); /* consecutive, none twice */
      key = k;
      json_array_append(all, x);
    }
    json_t *next = json_object_get(page, "next");
    assert_true(json_is_null(next) || json_integer_value(next) == key);
    after = json_is_null(next) ? 0 : json_integer_value(next);
    json_decref(page);
  } while (after);
  return json_pack("{s:o}", "tasks", all);
}

/* The task called name in job: its state and attempts (and the accepted
 * output when out != NULL). */
static void expect_task(cairn__core *c, int64_t job, const char *name, const char *state,
                        int attempts, const char *out) {
  json_t *all = tasks_paged(c, job);
  json_t *t = NULL, *x;
  size_t i;
  json_array_foreach(json_object_get(all, "tasks"), i, x)
    if (strcmp(json_string_value(json_object_get(x, "id")), name) == 0)
      t = x;
  char msg[256] = "";
  if (!t)
    snprintf(msg, sizeof msg, "job %lld has no task %s", (long long)job, name);
  else if (strcmp(json_string_value(json_object_get(t, "state")), state) != 0 ||
           json_integer_value(json_object_get(t, "attempts")) != attempts)
    snprintf(msg, sizeof msg, "task %s: %s after %lld attempts, wanted %s after %d", name,
             json_string_value(json_object_get(t, "state")),
             (long long)json_integer_value(json_object_get(t, "attempts")), state, attempts);
  else if (out && (!json_is_string(json_object_get(t, "output")) ||
                   strcmp(json_string_value(json_object_get(t, "output")), out) != 0))
    snprintf(msg, sizeof msg, "task %s: output is not \"%s\"", name, out);
  json_decref(all);
  if (msg[0])
    fail_msg("%s", msg);
}

static json_int_t vol_field(cairn__core *c, int64_t id, const char *field) {
  json_t *all = cairn__core_volunteers_json(c);
  json_t *v = json_array_get(json_object_get(all, "volunteers"), (size_t)(id - 1));
  assert_non_null(v);
  assert_int_equal(json_integer_value(json_object_get(v, "id")), id);
  json_int_t n = json_integer_value(json_object_get(v, field));
  json_decref(all);
  return n;
}

/* ---- volunteers ---- */

static int file_contains(const char *path, const char *needle) {
  FILE *fp = fopen(path, "rb");
  if (!fp)
    return 0;
  size_t n = strlen(needle), len = 0, cap = 0;
  char *buf = NULL;
  for (;;) {
    if (len == cap) {
      cap = cap ? 2 * cap : 65536;
      char *nb = realloc(buf, cap);
      assert_non_null(nb);
      buf = nb;
    }
    size_t k = fread(buf + len, 1, cap - len, fp);
    if (!k)
      break;
    len += k;
  }
  fclose(fp);
  int found = 0;
  for (size_t i = 0; !found && i + n <= len; i++)
    found = memcmp(buf + i, needle, n) == 0;
  free(buf);
  return found;
}

static int db_contains(const core_fixture *f, const char *needle) {
  char wal[400];
  snprintf(wal, sizeof wal, "%s-wal", f->db);
  return file_contains(f->db, needle) || file_contains(wal, needle);
}

/* GET /v1/volunteers lists the population a chunk of the lock at a time:
 * every volunteer once, in id order, whole, across chunk boundaries. */
static void test_volunteer_list_in_chunks(void **state) {
  core_fixture *f = *state;
  enum { N = 2 * 256 + 3 };
  char tok[65], name[32];
  for (int i = 1; i <= N; i++) {
    snprintf(name, sizeof name, "v%d", i);
    assert_int_equal(reg(f->c, name, i % 2 ? "sum" : "sum,cell", tok), i);
  }
  size_t len = 0;
  char *text = cairn__core_volunteers_text(f->c, &len);
  assert_non_null(text);
  assert_int_equal(strlen(text), len);
  json_error_t jerr;
  json_t *all = json_loadb(text, len, 0, &jerr);
  free(text);
  assert_non_null(all);
  json_t *list = json_object_get(all, "volunteers");
  assert_int_equal(json_array_size(list), N);
  for (int i = 1; i <= N; i++) {
    json_t *v = json_array_get(list, (size_t)i - 1);
    snprintf(name, sizeof name, "v%d", i);
    assert_int_equal(json_integer_value(json_object_get(v, "id")), i);
    assert_string_equal(json_string_value(json_object_get(v, "name")), name);
    assert_int_equal(json_array_size(json_object_get(v, "apps")), i % 2 ? 1 : 2);
    assert_non_null(json_object_get(v, "resources_held"));
  }
  json_decref(all);
}

static void test_register_and_auth(void **state) {
  core_fixture *f = *state;
  char t1[65], t2[65];
  assert_int_equal(reg(f->c, "w1", "sum", t1), 1);
  assert_int_equal(reg(f->c, "w2", "sum,cell", t2), 2);
  assert_int_equal(strlen(t1), 64);
  assert_int_equal(strspn(t1, "0123456789abcdef"), 64);
  assert_string_not_equal(t1, t2);
  int64_t v = auth(f->c, t1);
  assert_int_equal(v, 1);
  assert_string_equal(core_fixture_vol(f->c, v).name, "w1");
  assert_int_equal(auth(f->c, t2), 2);
  assert_int_equal(core_fixture_vol(f->c, auth(f->c, t2)).napps, 2);

  cairn_error err = {0};
  int64_t none = 0;
  char wrong[65];
  memcpy(wrong, t1, sizeof wrong);
  wrong[63] = wrong[63] == '0' ? '1' : '0';
  assert_int_equal(cairn__core_auth(f->c, wrong, &none, &err), CAIRN_EAUTH);
  assert_null(none);
  assert_int_equal(cairn__core_auth(f->c, "abc", &none, &err), CAIRN_EAUTH);
  assert_int_equal(cairn__core_auth(f->c, NULL, &none, &err), CAIRN_EAUTH);
  assert_null(none);

  /* only the hash of a token is on disk, before and after the close */
  char h1[65];
  cairn__sha256_hex(t1, 64, h1);
  assert_false(db_contains(f, t1));
  assert_false(db_contains(f, t2));
  cairn__core_close(f->c);
  f->c = NULL;
  assert_false(db_contains(f, t1));
  assert_false(db_contains(f, t2));
  assert_true(db_contains(f, h1));
  /* and the hash is enough to authenticate after a restart */
  f->c = core_fixture_open(f);
  assert_int_equal(auth(f->c, t1), 1);
  assert_int_equal(cairn__core_auth(f->c, wrong, &none, &err), CAIRN_EAUTH);
}

/* ---- a DAG walked step by step ---- */

static const char *const diamond =
  "{\"name\": \"walk\", \"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": ["
  "{\"id\": \"a\", \"args\": [\"1\"]}, {\"id\": \"b\"},"
  "{\"id\": \"c\", \"after\": [\"b\", \"a\"]}, {\"id\": \"d\", \"after\": [\"c\"]},"
  "{\"id\": \"e\", \"after\": [\"a\"]}]}";

static void test_dag_walk(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char tok[65];
  int64_t v = auth(c, (reg(c, "w1", "sum", tok), tok));
  int64_t job = submit(c, diamond);
  assert_int_equal(job, 1);
  expect_job(c, job, 3, 2, 0, 0, 0, "running");

  json_t *w = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  assert_non_null(w);
  assert_string_equal(work_task(w), "a");
  int64_t ia = work_index(w);
  assert_int_equal(ia, phi(1, 1));
  json_t *task = json_object_get(w, "task");
  assert_int_equal(json_integer_value(json_object_get(task, "job")), job);
  assert_string_equal(json_string_value(json_object_get(task, "app")), "sum");
  assert_string_equal(json_string_value(json_array_get(json_object_get(task, "args"), 0)), "1");
  assert_int_equal(json_array_size(json_object_get(task, "parents")), 0);
  assert_int_equal(json_integer_value(json_object_get(w, "lease_seconds")), 300);
  json_decref(w);
  expect_job(c, job, 3, 1, 1, 0, 0, "running");
  expect_task(c, job, "a", "running", 1, NULL);

  int64_t ib = take(c, v, "b");
  assert_int_equal(ib, phi(1, 2));
  expect_job(c, job, 3, 0, 2, 0, 0, "running");
  no_work(c, v);

  /* a done: e (only a) becomes eligible, c still waits for b */
  result_ok(c, v, ia, "A");
  expect_job(c, job, 2, 1, 1, 1, 0, "running");
  expect_task(c, job, "a", "done", 1, "A");
  expect_task(c, job, "c", "waiting", 0, NULL);
  expect_task(c, job, "e", "eligible", 0, NULL);
  int64_t ie = take(c, v, "e");
  assert_int_equal(ie, phi(1, 3));
  no_work(c, v);

  /* b done: c has both parents now */
  result_ok(c, v, ib, "B");
  expect_job(c, job, 1, 1, 1, 2, 0, "running");
  assert_int_equal(cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  assert_non_null(w);
  assert_string_equal(work_task(w), "c");
  int64_t ic = work_index(w);
  assert_int_equal(ic, phi(1, 4));
  /* both parents, each with the output URL of its master task key */
  json_t *parents = json_object_get(json_object_get(w, "task"), "parents");
  assert_int_equal(json_array_size(parents), 2);
  int seen = 0;
  for (size_t k = 0; k < 2; k++) {
    json_t *p = json_array_get(parents, k);
    const char *pid = json_string_value(json_object_get(p, "id"));
    const char *url = json_string_value(json_object_get(p, "url"));
    if (strcmp(pid, "a") == 0 && strcmp(url, "/v1/tasks/1/output") == 0)
      seen |= 1;
    if (strcmp(pid, "b") == 0 && strcmp(url, "/v1/tasks/2/output") == 0)
      seen |= 2;
  }
  assert_int_equal(seen, 3);
  json_decref(w);
  expect_job(c, job, 1, 0, 2, 2, 0, "running");

  result_ok(c, v, ic, "C");
  result_ok(c, v, ie, "E");
  expect_job(c, job, 0, 1, 0, 4, 0, "running");
  int64_t id = take(c, v, "d");
  assert_int_equal(id, phi(1, 5));
  int js = -1;
  assert_int_equal(cairn__core_wait_job(c, job, 0, &js, NULL), CAIRN_ETIMEOUT);
  assert_int_equal(js, JS_RUNNING);
  result_ok(c, v, id, "D");
  expect_job(c, job, 0, 0, 0, 5, 0, "done");
  assert_int_equal(cairn__core_wait_job(c, job, 1000, &js, NULL), CAIRN_OK);
  assert_int_equal(js, JS_DONE);
  assert_int_equal(cairn__core_wait_job(c, 99, 0, &js, NULL), CAIRN_ENOTFOUND);
  json_t *j = cairn__core_job_json(c, job, 1);
  assert_true(json_integer_value(json_object_get(j, "finished")) > 0);
  json_decref(j);
  expect_task(c, job, "d", "done", 1, "D");
  assert_int_equal(vol_field(c, 1, "valid"), 5);
  assert_int_equal(vol_field(c, 1, "allocations"), 5);
  no_work(c, v);
}

static void test_result_errors(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65], t2[65];
  reg(c, "w1", "sum", t1);
  reg(c, "w2", "sum", t2);
  int64_t v1 = auth(c, t1), v2 = auth(c, t2);
  int64_t job = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": ["
                          "{\"id\": \"a\"}, {\"id\": \"b\"}]}");
  int64_t ia = take(c, v1, "a");
  cairn_error err = {0};
  assert_int_equal(result(c, v2, ia, 0, "forged", &err), CAIRN_EFORBIDDEN);
  assert_non_null(strstr(err.text, "another volunteer"));
  expect_task(c, job, "a", "running", 1, NULL);
  result_ok(c, v1, ia, "A");
  assert_int_equal(result(c, v1, ia, 0, "again", &err), CAIRN_ECONFLICT);
  assert_int_equal(result(c, v2, ia, 0, "late", &err), CAIRN_EFORBIDDEN);
  expect_task(c, job, "a", "done", 1, "A");
  /* indices never allocated: a later t of a known row, an unknown row, nonsense */
  assert_int_equal(result(c, v1, phi(1, 2), 0, "x", &err), CAIRN_ENOTFOUND);
  assert_non_null(strstr(err.text, "never allocated"));
  assert_int_equal(result(c, v1, phi(9, 1), 0, "x", &err), CAIRN_ENOTFOUND);
  assert_int_equal(result(c, v1, 0, 0, "x", &err), CAIRN_ENOTFOUND);
  assert_int_equal(result(c, v1, -5, 0, "x", &err), CAIRN_ENOTFOUND);
  /* none of that changed anything */
  expect_job(c, job, 0, 1, 0, 1, 0, "running");
  assert_int_equal(vol_field(c, 1, "valid"), 1);
  assert_int_equal(vol_field(c, 2, "valid") + vol_field(c, 2, "invalid"), 0);
  int64_t ib = take(c, v2, "b");
  assert_int_equal(ib, phi(2, 1));
  result_ok(c, v2, ib, "B");
  expect_job(c, job, 0, 0, 0, 2, 0, "done");
}

static void test_lease_expiry(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65], t2[65];
  reg(c, "w1", "sum", t1);
  reg(c, "w2", "sum", t2);
  int64_t v1 = auth(c, t1), v2 = auth(c, t2);
  int64_t job = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"lease_seconds\": 30, "
                          "\"tasks\": [{\"id\": \"a\"}]}");
  int64_t before = cairn__now();
  int64_t i1 = take(c, v1, "a");
  json_t *hb = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_heartbeat(c, v1, NULL, &hb, &err), CAIRN_OK);
  assert_int_equal(json_array_size(json_object_get(hb, "extended")), 1);
  assert_int_equal(json_integer_value(json_array_get(json_object_get(hb, "extended"), 0)), i1);
  assert_int_equal(json_integer_value(json_object_get(hb, "lease_seconds")), 30);
  json_decref(hb);
  /* at once again: nothing to extend, and the answer still comes */
  assert_int_equal(cairn__core_heartbeat(c, v1, NULL, &hb, &err), CAIRN_OK);
  assert_int_equal(json_array_size(json_object_get(hb, "extended")), 1);
  json_decref(hb);

  assert_int_equal(cairn__core_expire(c, before), 0);
  expect_task(c, job, "a", "running", 1, NULL);
  assert_int_equal(cairn__core_expire(c, cairn__now() + 30 + 1), 1);
  expect_task(c, job, "a", "eligible", 1, NULL);
  expect_job(c, job, 0, 1, 0, 0, 0, "running");
  assert_int_equal(cairn__core_heartbeat(c, v1, NULL, &hb, &err), CAIRN_OK);
  assert_int_equal(json_array_size(json_object_get(hb, "extended")), 0);
  json_decref(hb);

  int64_t i2 = take(c, v2, "a");
  assert_int_equal(i2, phi(2, 1));
  assert_int_equal(result(c, v1, i1, 0, "late", &err), CAIRN_ECONFLICT);
  assert_non_null(strstr(err.text, "no longer held"));
  expect_task(c, job, "a", "running", 2, NULL);
  result_ok(c, v2, i2, "A");
  expect_job(c, job, 0, 0, 0, 1, 0, "done");
  expect_task(c, job, "a", "done", 2, "A");
  assert_int_equal(vol_field(c, 1, "valid") + vol_field(c, 1, "invalid"), 0);
}

static void test_max_attempts(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65];
  reg(c, "w1", "sum", t1);
  int64_t v = auth(c, t1);
  int64_t job = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"max_attempts\": 3, "
                          "\"lease_seconds\": 10, \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\"},"
                          "{\"id\": \"c\", \"after\": [\"a\"]}]}");
  cairn_error err = {0};
  /* attempt 1 fails, attempt 2 expires, attempt 3 fails: a has failed */
  assert_int_equal(result(c, v, take(c, v, "a"), 2, "boom", &err), CAIRN_OK);
  expect_task(c, job, "a", "eligible", 1, NULL);
  int64_t ib = take(c, v, "b");
  take(c, v, "a");
  assert_int_equal(cairn__core_expire(c, cairn__now() + 11), 2);
  expect_task(c, job, "a", "eligible", 2, NULL);
  expect_task(c, job, "b", "eligible", 1, NULL);
  assert_int_equal(result(c, v, ib, 0, "B", &err), CAIRN_ECONFLICT);
  expect_job(c, job, 1, 2, 0, 0, 0, "running");
  int64_t ia = take(c, v, NULL);
  int64_t other = take(c, v, NULL);
  /* a and b again, in either order: both fail; a has had its 3 attempts */
  cairn_status s1 = result(c, v, ia, 1, "boom", &err);
  cairn_status s2 = result(c, v, other, 1, "boom", &err);
  assert_int_equal(s1, CAIRN_OK);
  assert_int_equal(s2, CAIRN_OK);
  expect_task(c, job, "a", "failed", 3, NULL);
  expect_task(c, job, "c", "waiting", 0, NULL);
  expect_job(c, job, 1, 1, 0, 0, 1, "failed");
  int js = -1;
  assert_int_equal(cairn__core_wait_job(c, job, 1000, &js, NULL), CAIRN_OK);
  assert_int_equal(js, JS_FAILED);
  assert_int_equal(vol_field(c, 1, "errors"), 3);
  /* b can still be done; the job stays failed and c never runs */
  int64_t ib2 = take(c, v, "b");
  result_ok(c, v, ib2, "B");
  expect_job(c, job, 1, 0, 0, 1, 1, "failed");
  no_work(c, v);
}

static void test_apps(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char tc[65], tb[65];
  reg(c, "cellonly", "cell", tc);
  reg(c, "both", "sum,cell", tb);
  int64_t vc = auth(c, tc), vb = auth(c, tb);
  int64_t js = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": [{\"id\": \"s1\"},"
                         "{\"id\": \"s2\"}]}");
  int64_t jc = submit(c, "{\"app\": \"cell\", \"policy\": \"fifo\", \"tasks\": [{\"id\": \"c1\"}]}");
  char *cell[] = {"cell"}, *sum[] = {"sum"}, *other[] = {"other"};
  char got[16];
  /* the cell-only volunteer skips the first job */
  int64_t i = take_apps(c, vc, "c1", NULL, 0, got, sizeof got);
  no_work(c, vc);
  /* a volunteer can narrow one request to some of its apps, not widen it */
  json_t *w = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work(c, vc, NULL, sum, 1, &w, &(int){0}, &err), CAIRN_OK);
  assert_null(w);
  assert_int_equal(cairn__core_work(c, vb, NULL, other, 1, &w, &(int){0}, &err), CAIRN_OK);
  assert_null(w);
  assert_int_equal(cairn__core_work(c, vb, NULL, cell, 1, &w, &(int){0}, &err), CAIRN_OK);
  assert_null(w); /* c1 is out */
  take_apps(c, vb, "s1", sum, 1, NULL, 0);
  take_apps(c, vb, "s2", NULL, 0, NULL, 0);
  result_ok(c, vc, i, "C");
  expect_job(c, jc, 0, 0, 0, 1, 0, "done");
  expect_job(c, js, 0, 0, 2, 0, 0, "running");
}

/* ---- replication and quorum ---- */

static void test_replication_quorum(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65], t2[65], t3[65];
  reg(c, "w1", "sum", t1);
  reg(c, "w2", "sum", t2);
  reg(c, "w3", "sum", t3);
  int64_t v1 = auth(c, t1), v2 = auth(c, t2), v3 = auth(c, t3);
  int64_t job = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"replication\": 2, "
                          "\"quorum\": 2, \"tasks\": [{\"id\": \"x\"}, {\"id\": \"y\"}]}");
  /* two copies of x, never both with one volunteer */
  int64_t x1 = take(c, v1, "x");
  expect_task(c, job, "x", "eligible", 1, NULL);
  int64_t y1 = take(c, v1, "y");
  no_work(c, v1);
  int64_t x2 = take(c, v2, "x");
  expect_task(c, job, "x", "running", 2, NULL);
  int64_t y2 = take(c, v2, "y");
  expect_job(c, job, 0, 0, 2, 0, 0, "running");

  /* agreement: x is done, both results valid */
  result_ok(c, v1, x1, "42");
  expect_task(c, job, "x", "running", 2, NULL);
  assert_int_equal(vol_field(c, 1, "pending"), 1);
  result_ok(c, v2, x2, "42");
  expect_task(c, job, "x", "done", 2, "42");
  assert_int_equal(vol_field(c, 1, "valid"), 1);
  assert_int_equal(vol_field(c, 1, "pending"), 0);
  assert_int_equal(vol_field(c, 2, "valid"), 1);

  /* disagreement on y: a third copy, for a third volunteer only */
  result_ok(c, v1, y1, "7");
  result_ok(c, v2, y2, "8");
  expect_task(c, job, "y", "eligible", 2, NULL);
  no_work(c, v1);
  no_work(c, v2);
  int64_t y3 = take(c, v3, "y");
  assert_int_equal(y3, phi(3, 1));
  expect_task(c, job, "y", "running", 3, NULL);
  result_ok(c, v3, y3, "7");
  expect_task(c, job, "y", "done", 3, "7");
  expect_job(c, job, 0, 0, 0, 2, 0, "done");
  assert_int_equal(vol_field(c, 1, "valid"), 2);
  assert_int_equal(vol_field(c, 2, "valid"), 1);
  assert_int_equal(vol_field(c, 2, "invalid"), 1);
  assert_int_equal(vol_field(c, 3, "valid"), 1);
  assert_int_equal(vol_field(c, 3, "pending"), 0);
}

/* ---- ban ---- */

static void test_ban_requeues_tainted_tasks(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char tbad[65], tgood[65];
  reg(c, "liar", "sum", tbad);
  reg(c, "honest", "sum", tgood);
  int64_t bad = auth(c, tbad), good = auth(c, tgood);
  int64_t job = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": ["
                          "{\"id\": \"a\"}, {\"id\": \"b\", \"after\": [\"a\"]},"
                          "{\"id\": \"c\", \"after\": [\"b\"]}, {\"id\": \"d\"}, {\"id\": \"e\"}]}");
  result_ok(c, bad, take(c, bad, "a"), "wrong");
  result_ok(c, good, take(c, good, "d"), "D");
  int64_t ie = take(c, bad, "e"); /* held at ban time */
  result_ok(c, good, take(c, good, "b"), "B");
  result_ok(c, good, take(c, good, "c"), "C");
  expect_job(c, job, 0, 0, 1, 4, 0, "running");
  assert_int_equal(vol_field(c, 2, "valid"), 3);

  json_t *rep = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, 1, "lied", &rep, &err), CAIRN_OK);
  assert_non_null(rep);
  assert_int_equal(json_integer_value(json_object_get(rep, "volunteer")), 1);
  assert_int_equal(json_integer_value(json_object_get(rep, "results_invalidated")), 1);
  assert_int_equal(json_integer_value(json_object_get(rep, "tasks_requeued")), 1);
  assert_int_equal(json_integer_value(json_object_get(rep, "descendants_requeued")), 2);
  json_t *ids = json_object_get(rep, "requeued");
  assert_int_equal(json_array_size(ids), 1);
  assert_string_equal(json_string_value(json_object_get(json_array_get(ids, 0), "task")), "a");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(ids, 0), "job")), job);
  json_decref(rep);

  /* a again from scratch, b and c wait for it, d stays, e is free again */
  expect_task(c, job, "a", "eligible", 0, NULL);
  expect_task(c, job, "b", "waiting", 0, NULL);
  expect_task(c, job, "c", "waiting", 0, NULL);
  expect_task(c, job, "d", "done", 1, "D");
  expect_task(c, job, "e", "eligible", 1, NULL);
  expect_job(c, job, 2, 2, 0, 1, 0, "running");
  assert_int_equal(vol_field(c, 1, "invalid"), 1);
  assert_int_equal(vol_field(c, 1, "valid"), 0);
  json_t *vols = cairn__core_volunteers_json(c);
  json_t *vlist = json_object_get(vols, "volunteers");
  assert_true(json_is_true(json_object_get(json_array_get(vlist, 0), "banned")));
  assert_true(json_is_false(json_object_get(json_array_get(vlist, 1), "banned")));
  json_decref(vols);
  /* the honest volunteer's tainted results are not held against it */
  assert_int_equal(vol_field(c, 2, "valid"), 1);
  assert_int_equal(vol_field(c, 2, "invalid"), 0);

  int64_t none = 0;
  assert_int_equal(cairn__core_auth(c, tbad, &none, &err), CAIRN_EFORBIDDEN);
  assert_int_equal(none, 0);
  /* a request authenticated before the ban is refused by the call itself */
  assert_int_equal(result(c, bad, ie, 0, "E", &err), CAIRN_EFORBIDDEN);
  assert_int_equal(cairn__core_ban(c, 1, "again", &rep, &err), CAIRN_ECONFLICT);
  assert_int_equal(cairn__core_ban(c, 3, "nobody", &rep, &err), CAIRN_ENOTFOUND);
  assert_int_equal(cairn__core_ban(c, 0, "nobody", &rep, &err), CAIRN_ENOTFOUND);

  /* the honest volunteer finishes the job with its own results */
  char got[8];
  for (int k = 0; k < 4; k++) {
    int64_t idx = take_apps(c, good, NULL, NULL, 0, got, sizeof got);
    char out[8];
    snprintf(out, sizeof out, "%c", got[0] - 'a' + 'A');
    result_ok(c, good, idx, out);
  }
  no_work(c, good);
  expect_job(c, job, 0, 0, 0, 5, 0, "done");
  expect_task(c, job, "a", "done", 1, "A");
  expect_task(c, job, "b", "done", 1, "B");
  expect_task(c, job, "e", "done", 2, "E");
}

/* ---- restart recovery ---- */

typedef struct snapshot {
  json_t *jobs, *tasks1, *tasks2, *vols;
  size_t nleases;
  int64_t idx[8], expires[8];
} snapshot;

static void take_snapshot(cairn__core *c, snapshot *s, const int64_t *idx, size_t n) {
  cairn_error err = {0};
  s->jobs = json_pack("[o, o]", cairn__core_job_json(c, 1, 1), cairn__core_job_json(c, 2, 1));
  s->tasks1 = cairn__core_tasks_json(c, 1, 0, CAIRN_TASKS_PAGE_MAX, &err);
  s->tasks2 = cairn__core_tasks_json(c, 2, 0, CAIRN_TASKS_PAGE_MAX, &err);
  s->vols = cairn__core_volunteers_json(c);
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(s->vols, "volunteers"), i, v)
    json_object_del(v, "last_seen");
  s->nleases = c->leases.count;
  for (size_t k = 0; k < n; k++) {
    cairn__lease_info l;
    assert_int_equal(cairn__core_lease_info(c, idx[k], &l, &err), CAIRN_OK);
    s->idx[k] = idx[k];
    s->expires[k] = l.expires;
  }
}

static void free_snapshot(snapshot *s) {
  json_decref(s->jobs);
  json_decref(s->tasks1);
  json_decref(s->tasks2);
  json_decref(s->vols);
}

static void expect_same_json(json_t *a, json_t *b, const char *what) {
  if (!json_equal(a, b)) {
    char *x = json_dumps(a, JSON_COMPACT), *y = json_dumps(b, JSON_COMPACT);
    char msg[4096];
    snprintf(msg, sizeof msg, "%s differs after reopen:\n before %s\n after  %s", what, x, y);
    free(x);
    free(y);
    fail_msg("%s", msg);
  }
}

static void test_restart_recovery(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65], t2[65], t3[65];
  reg(c, "w1", "sum", t1);
  reg(c, "w2", "sum", t2);
  reg(c, "w3", "sum", t3);
  int64_t v1 = auth(c, t1), v2 = auth(c, t2), v3 = auth(c, t3);
  int64_t j1 = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"lease_seconds\": 100, "
                         "\"max_attempts\": 3, \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\"},"
                         "{\"id\": \"c\", \"after\": [\"a\", \"b\"]}]}");
  int64_t j2 = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"replication\": 2, "
                         "\"quorum\": 2, \"tasks\": [{\"id\": \"x\"}]}");
  cairn_error err = {0};
  int64_t ia = take(c, v1, "a");                                    /* held over the restart */
  assert_int_equal(result(c, v2, take(c, v2, "b"), 9, "", &err), CAIRN_OK); /* an error */
  result_ok(c, v3, take(c, v3, "b"), "B"); /* b done on attempt 2 (v2, which failed it, waits) */
  result_ok(c, v2, take(c, v2, "x"), "X");                          /* pending for quorum */
  int64_t ix3 = take(c, v3, "x");                                   /* held over the restart */
  expect_job(c, j1, 1, 0, 1, 1, 0, "running");
  expect_job(c, j2, 0, 0, 1, 0, 0, "running");
  expect_task(c, j1, "b", "done", 2, "B");
  assert_int_equal(core_fixture_vol(c, v2).errors, 1);

  int64_t held[] = {ia, ix3};
  snapshot before = {0}, after = {0};
  take_snapshot(c, &before, held, 2);
  assert_int_equal(before.nleases, 2);
  cairn__core_close(c);
  c = f->c = core_fixture_open(f);
  take_snapshot(c, &after, held, 2);
  expect_same_json(before.jobs, after.jobs, "jobs");
  expect_same_json(before.tasks1, after.tasks1, "tasks of job 1");
  expect_same_json(before.tasks2, after.tasks2, "tasks of job 2");
  expect_same_json(before.vols, after.vols, "volunteers");
  assert_int_equal(after.nleases, 2);
  assert_memory_equal(before.expires, after.expires, sizeof before.expires);
  free_snapshot(&before);
  free_snapshot(&after);

  /* the same tokens, leases and counters carry on */
  v1 = auth(c, t1);
  v2 = auth(c, t2);
  v3 = auth(c, t3);
  assert_int_equal(core_fixture_vol(c, v2).errors, 1);
  assert_int_equal(core_fixture_vol(c, v2).pending, 1);
  json_t *hb = NULL;
  assert_int_equal(cairn__core_heartbeat(c, v3, NULL, &hb, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_array_get(json_object_get(hb, "extended"), 0)), ix3);
  json_decref(hb);
  /* a worker that names what it runs renews only that */
  static cairn__report listed; /* zeroed: no field but "running" */
  listed.fields = CAIRN_FEAT_RUNNING;
  listed.running[0] = ix3;
  listed.nrunning = 1;
  assert_int_equal(cairn__core_heartbeat(c, v3, &listed, &hb, &err), CAIRN_OK);
  assert_int_equal(json_array_size(json_object_get(hb, "extended")), 1);
  json_decref(hb);
  listed.nrunning = 0;
  assert_int_equal(cairn__core_heartbeat(c, v3, &listed, &hb, &err), CAIRN_OK);
  assert_int_equal(json_array_size(json_object_get(hb, "extended")), 0);
  json_decref(hb);
  no_work(c, v2); /* x already has its two copies, c waits for a */
  json_t *next = NULL;
  assert_int_equal(cairn__core_result(c, v1, ia, 0, NULL, "A", 1, NULL, &next, &err), CAIRN_OK);
  assert_non_null(next);
  assert_string_equal(work_task(next), "c");
  assert_int_equal(work_index(next), phi(1, 2));
  int64_t ic = work_index(next);
  json_decref(next);
  result_ok(c, v1, ic, "C");
  result_ok(c, v3, ix3, "X");
  expect_job(c, j1, 0, 0, 0, 3, 0, "done");
  expect_job(c, j2, 0, 0, 0, 1, 0, "done");
  expect_task(c, j2, "x", "done", 2, "X");
  assert_int_equal(vol_field(c, 2, "valid"), 1);
  assert_int_equal(vol_field(c, 2, "pending"), 0);
  assert_int_equal(vol_field(c, 3, "valid"), 2);
  assert_int_equal(vol_field(c, 1, "allocations"), 2);

  /* and once more: the finished state is what comes back */
  cairn__core_close(c);
  c = f->c = core_fixture_open(f);
  expect_job(c, j1, 0, 0, 0, 3, 0, "done");
  expect_job(c, j2, 0, 0, 0, 1, 0, "done");
  expect_task(c, j1, "c", "done", 1, "C");
  assert_int_equal(c->leases.count, 0);
  assert_int_equal(vol_field(c, 2, "errors"), 1);
}

/* A lease that expires while the master is down expires after the restart. */
static void test_restart_then_expire(void **state) {
  core_fixture *f = *state;
  char t1[65], t2[65];
  reg(f->c, "w1", "sum", t1);
  reg(f->c, "w2", "sum", t2);
  int64_t job = submit(f->c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"lease_seconds\": 50, "
                             "\"tasks\": [{\"id\": \"a\"}]}");
  int64_t i1 = take(f->c, auth(f->c, t1), "a");
  cairn__core_close(f->c);
  cairn__core *c = f->c = core_fixture_open(f);
  expect_task(c, job, "a", "running", 1, NULL);
  assert_int_equal(cairn__core_expire(c, cairn__now() + 51), 1);
  expect_task(c, job, "a", "eligible", 1, NULL);
  cairn_error err = {0};
  assert_int_equal(result(c, auth(c, t1), i1, 0, "late", &err), CAIRN_ECONFLICT);
  int64_t i2 = take(c, auth(c, t2), "a");
  result_ok(c, auth(c, t2), i2, "A");
  cairn__core_close(c);
  c = f->c = core_fixture_open(f);
  expect_task(c, job, "a", "done", 2, "A");
  expect_job(c, job, 0, 0, 0, 1, 0, "done");
}

/* ---- one round trip per task ---- */

static void test_result_with_next(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65];
  reg(c, "w1", "sum", t1);
  int64_t v = auth(c, t1);
  int64_t job = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": ["
                          "{\"id\": \"a\"}, {\"id\": \"b\", \"after\": [\"a\"]}]}");
  int64_t ia = take(c, v, "a");
  no_work(c, v);
  json_t *next = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_result(c, v, ia, 0, NULL, "A", 1, NULL, &next, &err), CAIRN_OK);
  assert_non_null(next);
  assert_string_equal(work_task(next), "b");
  assert_int_equal(work_index(next), phi(1, 2));
  json_t *parents = json_object_get(json_object_get(next, "task"), "parents");
  assert_string_equal(json_string_value(json_object_get(json_array_get(parents, 0), "id")), "a");
  int64_t ib = work_index(next);
  json_decref(next);
  expect_task(c, job, "b", "running", 1, NULL);
  char *out = NULL;
  size_t len = 0;
  assert_int_equal(cairn__core_task_output(c, 1, &out, &len, &err), CAIRN_OK);
  assert_int_equal(len, 1);
  assert_string_equal(out, "A");
  free(out);
  /* the last result: nothing comes next (next is cleared, not left as it was) */
  json_t *marker = json_object();
  next = marker;
  assert_int_equal(cairn__core_result(c, v, ib, 0, NULL, "B", 1, NULL, &next, &err), CAIRN_OK);
  assert_null(next);
  expect_job(c, job, 0, 0, 0, 2, 0, "done");
  /* a refused result allocates nothing either */
  next = marker;
  assert_int_equal(cairn__core_result(c, v, ib, 0, NULL, "B", 1, NULL, &next, &err), CAIRN_ECONFLICT);
  assert_null(next);
  json_decref(marker);
}

#define CORE_TEST(fn) cmocka_unit_test_setup_teardown(fn, core_fixture_setup, core_fixture_teardown)

/* A failed task goes to another volunteer first: the one that failed it
 * is passed over a while, unless it is the only one; the failure's reason
 * is kept and counted, and a wall limit gives the lease a hard deadline
 * that heartbeats do not move. */
static void test_retry_elsewhere_and_hard_deadline(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char t1[65], t2[65];
  reg(c, "w1", "sum", t1);
  int64_t v1 = auth(c, t1);
  submit(c, "{\"app\": \"sum\", \"lease_seconds\": 1000, \"limits\": {\"wall_seconds\": 10}, "
            "\"tasks\": [{\"id\": \"a\"}]}");
  cairn_error err = {0};
  /* alone: the same volunteer gets it back at once */
  int64_t i1 = take(c, v1, "a");
  assert_int_equal(cairn__core_result(c, v1, i1, 137, "memory", "", 0, NULL, NULL, &err), CAIRN_OK);
  int64_t i2 = take(c, v1, "a");
  assert_int_equal(c->failures_total[CAIRN_LIMIT_MEMORY], 1);
  /* the hard deadline: issued + wall (10) + grace, whatever the lease says */
  cairn__lease_info l;
  assert_int_equal(cairn__core_lease_info(c, i2, &l, &err), CAIRN_OK);
  assert_int_equal(l.hard, l.issued + 10 + c->wall_grace);
  assert_true(l.expires <= l.hard);
  json_t *hb = NULL;
  assert_int_equal(cairn__core_heartbeat(c, v1, NULL, &hb, &err), CAIRN_OK);
  json_decref(hb);
  assert_int_equal(cairn__core_lease_info(c, i2, &l, &err), CAIRN_OK);
  assert_true(l.expires <= l.hard);
  /* past the hard deadline the lease is gone, counted as "wall" */
  assert_int_equal(cairn__core_expire(c, l.hard), 1);
  assert_int_equal(c->failures_total[CAIRN_LIMIT_WALL], 1);
  /* with a second volunteer the one that failed it last waits */
  reg(c, "w2", "sum", t2);
  int64_t v2 = auth(c, t2);
  no_work(c, v1);
  int64_t i3 = take(c, v2, "a");
  assert_int_equal(cairn__core_result(c, v2, i3, 3, NULL, "", 0, NULL, NULL, &err), CAIRN_OK);
  assert_int_equal(c->failures_total[CAIRN_LIMIT_COUNT + 1], 1); /* "exit 3" */
  no_work(c, v2);
  result_ok(c, v1, take(c, v1, "a"), "A");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    CORE_TEST(test_register_and_auth),
    CORE_TEST(test_volunteer_list_in_chunks),
    CORE_TEST(test_dag_walk),
    CORE_TEST(test_result_errors),
    CORE_TEST(test_lease_expiry),
    CORE_TEST(test_max_attempts),
    CORE_TEST(test_apps),
    CORE_TEST(test_replication_quorum),
    CORE_TEST(test_ban_requeues_tainted_tasks),
    CORE_TEST(test_restart_recovery),
    CORE_TEST(test_restart_then_expire),
    CORE_TEST(test_result_with_next),
    CORE_TEST(test_retry_elsewhere_and_hard_deadline),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
