/* test_life.c — a job's life in the core over a real SQLite file: priority
 * order among jobs (and a change while they run), cancel (no allocation,
 * leases left out of the heartbeat answer, results refused, idempotence, a
 * finished job refused, kept over a restart), delete (refused while leases
 * are out, then tasks, results and the only-used file gone, the audit kept
 * unless purged, ids and keys never reused after a restart; in steps of
 * 1,024 task keys, and finished by the next start when a stop interrupted
 * it; a file another job names is kept, one a deletion may be removing
 * refuses new jobs until uploaded again), retention,
 * and bad requests that change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "plan/jobspec.h"
#include "common/sha256.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist.h"
#include "tests/support/core_fixture.h"

static int64_t reg(cairn__core *c, const char *name, const char *app) {
  char *apps[1] = {(char *)app}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

#define submit core_fixture_submit

/* v asks for work; returns its index (0: none) and the job and task in
 * *job and name. */
static int64_t take(cairn__core *c, int64_t v, int64_t *job, char name[64]) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("work: %s", err.text);
  if (!w)
    return 0;
  json_t *t = json_object_get(w, "task");
  if (job)
    *job = json_integer_value(json_object_get(t, "job"));
  if (name)
    snprintf(name, 64, "%s", json_string_value(json_object_get(t, "id")));
  int64_t idx = json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  return idx;
}

static void done(cairn__core *c, int64_t v, int64_t idx, const char *out) {
  cairn_error err = {0};
  if (cairn__core_result(c, v, idx, 0, NULL, out, strlen(out), NULL, NULL, &err) != CAIRN_OK)
    fail_msg("result %lld: %s", (long long)idx, err.text);
}

static const char *job_state(cairn__core *c, int64_t id, char buf[32]) {
  json_t *j = cairn__core_job_json(c, id, 0);
  snprintf(buf, 32, "%s", j ? json_string_value(json_object_get(j, "state")) : "(none)");
  json_decref(j);
  return buf;
}

static int count_row(void *ud, const cairn__store_audit_row *r) {
  (void)r;
  ++*(int *)ud;
  return 0;
}

static int audit_rows(cairn__core *c, int64_t idx) {
  int n = 0;
  assert_int_equal(cairn__core_audit(c, 0, idx, count_row, &n, NULL), CAIRN_OK);
  return n;
}

static void test_priority_order(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t v = reg(c, "w", "sum");
  int64_t low = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": [{\"id\": \"l1\"}, "
                          "{\"id\": \"l2\"}, {\"id\": \"l3\"}]}");
  int64_t tie = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": [{\"id\": \"t1\"}]}");
  int64_t high = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"priority\": 5, "
                           "\"tasks\": [{\"id\": \"h1\"}]}");
  int64_t job = 0;
  char name[64];
  take(c, v, &job, name); /* the higher priority first, though submitted last */
  assert_int_equal(job, high);
  take(c, v, &job, name); /* ties: submission order */
  assert_int_equal(job, low);
  json_t *out = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_priority(c, tie, 7, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "priority")), 7);
  json_decref(out);
  take(c, v, &job, name);
  assert_int_equal(job, tie);
  take(c, v, &job, name);
  assert_int_equal(job, low);
  /* kept over a restart */
  core_fixture_reopen(f);
  c = f->c;
  json_t *j = cairn__core_job_json(c, tie, 0);
  assert_int_equal(json_integer_value(json_object_get(j, "priority")), 7);
  json_decref(j);
  /* bad requests change nothing */
  assert_int_equal(cairn__core_priority(c, 99, 1, &out, &err), CAIRN_ENOTFOUND);
  assert_null(out);
}

static void test_cancel(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t v = reg(c, "w", "sum"), v2 = reg(c, "w2", "sum");
  int64_t id = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": [{\"id\": \"a\"}, "
                         "{\"id\": \"b\"}, {\"id\": \"c\"}]}");
  int64_t ia = take(c, v, NULL, NULL), ib = take(c, v2, NULL, NULL);
  json_t *out = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_cancel(c, id, &out, &err), CAIRN_OK);
  assert_string_equal(json_string_value(json_object_get(out, "state")), "cancelled");
  assert_int_equal(json_integer_value(json_object_get(out, "leases_out")), 2);
  assert_false(json_is_true(json_object_get(out, "already")));
  json_decref(out);
  char buf[32];
  assert_string_equal(job_state(c, id, buf), "cancelled");
  assert_int_equal(take(c, v, NULL, NULL), 0); /* no new allocation */
  assert_int_equal(c->nrunq, 0);
  /* the heartbeat leaves its lease out (the worker kills the app) */
  json_t *hb = NULL;
  assert_int_equal(cairn__core_heartbeat(c, v, NULL, &hb, &err), CAIRN_OK);
  assert_int_equal(json_array_size(json_object_get(hb, "extended")), 0);
  json_decref(hb);
  assert_int_equal(cairn__core_result(c, v, ia, 0, NULL, "A", 1, NULL, NULL, &err), CAIRN_ECONFLICT);
  /* a result of a still-held lease is refused and ends it */
  assert_int_equal(cairn__core_result(c, v2, ib, 0, NULL, "B", 1, NULL, NULL, &err), CAIRN_ECONFLICT);
  /* idempotent, and no lease of it is out now */
  assert_int_equal(cairn__core_cancel(c, id, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "leases_out")), 0);
  assert_true(json_is_true(json_object_get(out, "already")));
  json_decref(out);
  int js = -1;
  assert_int_equal(cairn__core_wait_job(c, id, 100, &js, &err), CAIRN_OK);
  assert_int_equal(js, JS_CANCELLED);
  /* a finished job cannot be cancelled; an unknown one is not found */
  int64_t fin = submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"x\"}]}");
  done(c, v, take(c, v, NULL, NULL), "X");
  assert_string_equal(job_state(c, fin, buf), "done");
  assert_int_equal(cairn__core_cancel(c, fin, &out, &err), CAIRN_ECONFLICT);
  assert_non_null(strstr(err.text, "already finished"));
  assert_null(out);
  assert_string_equal(job_state(c, fin, buf), "done");
  assert_int_equal(cairn__core_cancel(c, 77, &out, &err), CAIRN_ENOTFOUND);
  /* cancelled stays cancelled over a restart, and gets no allocation */
  core_fixture_reopen(f);
  c = f->c;
  assert_string_equal(job_state(c, id, buf), "cancelled");
  assert_string_equal(job_state(c, fin, buf), "done");
  assert_int_equal(take(c, v, NULL, NULL), 0);
}

#define CONTENT "the only input of job 1"

static void test_delete(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t v = reg(c, "w", "sum");
  char sha[65], path[512];
  cairn__sha256_hex(CONTENT, strlen(CONTENT), sha);
  snprintf(path, sizeof path, "%s/%s", cairn__core_files_dir(c), sha);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  fputs(CONTENT, fp);
  fclose(fp);
  int existed = 0;
  cairn_error err = {0};
  assert_int_equal(cairn__core_add_file(c, sha, (int64_t)strlen(CONTENT), &existed, &err), CAIRN_OK);
  char text[512];
  snprintf(text, sizeof text, "{\"app\": \"sum\", \"policy\": \"fifo\", \"files\": [{\"name\": "
           "\"in\", \"sha256\": \"%s\"}], \"tasks\": [{\"id\": \"a\", \"inputs\": [\"in\"]}, "
           "{\"id\": \"b\", \"after\": [\"a\"]}, {\"id\": \"c\"}]}", sha);
  int64_t id = submit(c, text);
  int64_t ia = take(c, v, NULL, NULL);
  done(c, v, ia, "A");
  take(c, v, NULL, NULL); /* held: the delete must wait for it */
  json_t *out = NULL;
  assert_int_equal(cairn__core_delete(c, id, 0, &out, &err), CAIRN_ECONFLICT);
  assert_non_null(strstr(err.text, "leases are still out"));
  assert_null(out);
  char buf[32];
  assert_string_equal(job_state(c, id, buf), "cancelled"); /* cancelled first */
  json_t *hb = NULL;
  assert_int_equal(cairn__core_heartbeat(c, v, NULL, &hb, &err), CAIRN_OK);
  json_decref(hb);
  assert_int_equal(cairn__core_delete(c, id, 0, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "results")), 1);
  assert_int_equal(json_integer_value(json_object_get(out, "files")), 1);
  assert_int_equal(json_integer_value(json_object_get(out, "file_bytes")), strlen(CONTENT));
  assert_int_equal(json_integer_value(json_object_get(out, "tasks")), 1);      /* b: never given */
  assert_int_equal(json_integer_value(json_object_get(out, "tasks_kept")), 2); /* a, c: audited */
  assert_int_equal(json_integer_value(json_object_get(out, "allocations")), 0);
  json_decref(out);
  assert_int_equal(access(path, F_OK), -1);
  assert_false(cairn__core_has_file(c, sha, NULL));
  assert_null(cairn__core_job_json(c, id, 0));
  assert_int_equal(audit_rows(c, ia), 1); /* the audit still answers */
  assert_int_equal(cairn__core_delete(c, id, 0, &out, &err), CAIRN_ENOTFOUND);
  /* after a restart: gone, its id and task keys never reused */
  core_fixture_reopen(f);
  c = f->c;
  assert_null(cairn__core_job_json(c, id, 0));
  assert_int_equal(audit_rows(c, ia), 1);
  int64_t id2 = submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"p\"}]}");
  assert_int_equal(id2, id + 1);
  int64_t ip = take(c, v, NULL, NULL);
  done(c, v, ip, "P");
  /* purge: the allocations go too; the volunteer's next index is still new */
  assert_int_equal(cairn__core_delete(c, id2, 1, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "allocations")), 1);
  json_decref(out);
  assert_int_equal(audit_rows(c, ip), 0);
  core_fixture_reopen(f);
  c = f->c;
  assert_int_equal(core_fixture_vol(c, v).allocations, 3);
  submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"q\"}]}");
  int64_t iq = take(c, v, NULL, NULL);
  assert_true(iq != ip && iq != ia);
  done(c, v, iq, "Q");
}

static void test_retention(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t v = reg(c, "w", "sum");
  int64_t old = submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"a\"}]}");
  int64_t live = submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"b\"}, {\"id\": \"c\"}]}");
  int64_t job = 0;
  int64_t idx = take(c, v, &job, NULL);
  assert_int_equal(job, old);
  done(c, v, idx, "A");
  int64_t now = cairn__now();
  assert_int_equal(cairn__core_retain(c, now, 3600), 0); /* not old enough */
  assert_int_equal(cairn__core_retain(c, now + 3600, 3600), 1);
  assert_null(cairn__core_job_json(c, old, 0));
  json_t *j = cairn__core_job_json(c, live, 0); /* a running job is kept */
  assert_non_null(j);
  json_decref(j);
  assert_int_equal(cairn__core_retain(c, now + 7200, 3600), 0);
}

static void test_delete_failed_job_still_running(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t v = reg(c, "w", "sum");
  int64_t id = submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"max_attempts\": 1, "
                         "\"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\"}, {\"id\": \"c\"}]}");
  cairn_error err = {0};
  assert_int_equal(cairn__core_result(c, v, take(c, v, NULL, NULL), 1, NULL, "x", 1, NULL, NULL, &err),
                   CAIRN_OK);
  char buf[32];
  assert_string_equal(job_state(c, id, buf), "failed");
  take(c, v, NULL, NULL); /* b: a failed job's independent task still runs */
  json_t *out = NULL;
  assert_int_equal(cairn__core_delete(c, id, 0, &out, &err), CAIRN_ECONFLICT);
  assert_string_equal(job_state(c, id, buf), "cancelled"); /* stopped: c is not given out */
  assert_int_equal(take(c, v, NULL, NULL), 0);
  json_t *hb = NULL;
  assert_int_equal(cairn__core_heartbeat(c, v, NULL, &hb, &err), CAIRN_OK);
  json_decref(hb);
  assert_int_equal(cairn__core_delete(c, id, 0, &out, &err), CAIRN_OK);
  json_decref(out);
}

/* A job of n independent tasks of app sum (JSON built here). */
static int64_t submit_n(cairn__core *c, int n) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    char id[16];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s}", "id", id));
  }
  json_t *job = json_pack("{s:s, s:s, s:o}", "app", "sum", "policy", "fifo", "tasks", tasks);
  char *text = json_dumps(job, JSON_COMPACT);
  json_decref(job);
  int64_t id = submit(c, text);
  free(text);
  return id;
}

static void test_delete_in_steps_and_resume(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t v = reg(c, "w", "sum");
  int64_t big = submit_n(c, 2500); /* three steps of 1,024 task keys */
  int64_t idx = take(c, v, NULL, NULL);
  done(c, v, idx, "R");
  json_t *out = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_delete(c, big, 0, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "tasks")), 2499);
  assert_int_equal(json_integer_value(json_object_get(out, "tasks_kept")), 1);
  assert_int_equal(json_integer_value(json_object_get(out, "results")), 1);
  json_decref(out);
  assert_int_equal(audit_rows(c, idx), 1);
  /* a deletion stopped after its first step is finished by the next start */
  int64_t half = submit_n(c, 1500);
  int64_t hidx = take(c, v, NULL, NULL);
  done(c, v, hidx, "H");
  int64_t lo = core_fixture_task(c, half, 0).key;
  pthread_mutex_lock(&c->lock);
  cairn__journal_put(c->journal, cairn__jrec_delete(half, 1, lo, lo + 1024, 0, 0, NULL));
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  assert_int_equal(cairn__journal_wait(c->journal, seq, &err), CAIRN_OK);
  core_fixture_reopen(f);
  c = f->c;
  assert_null(cairn__core_job_json(c, half, 0));
  assert_int_equal(audit_rows(c, hidx), 0); /* it was a purge */
  assert_int_equal(audit_rows(c, idx), 1);
  int64_t next = submit_n(c, 2);
  assert_int_equal(next, half + 1);
  core_fixture_reopen(f); /* and it stays finished */
  assert_null(cairn__core_job_json(f->c, half, 0));
}

/* Writes text as an uploaded file (on disk and recorded); sha gets its digest. */
static void upload(cairn__core *c, const char *text, char sha[65]) {
  char path[512];
  cairn__sha256_hex(text, strlen(text), sha);
  snprintf(path, sizeof path, "%s/%s", cairn__core_files_dir(c), sha);
  FILE *fp = fopen(path, "wb");
  assert_non_null(fp);
  fputs(text, fp);
  fclose(fp);
  int existed = 0;
  cairn_error err = {0};
  assert_int_equal(cairn__core_add_file(c, sha, (int64_t)strlen(text), &existed, &err), CAIRN_OK);
}

static int64_t submit_with(cairn__core *c, const char *sha, cairn_status want) {
  char text[512];
  snprintf(text, sizeof text, "{\"app\": \"sum\", \"files\": [{\"name\": \"in\", \"sha256\": "
           "\"%s\"}], \"tasks\": [{\"id\": \"a\", \"inputs\": [\"in\"]}]}", sha);
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
  assert_non_null(spec);
  int64_t id = 0;
  assert_int_equal(cairn__core_submit(c, spec, &id, &err), want);
  if (want == CAIRN_ECONFLICT)
    assert_non_null(strstr(err.text, "being removed"));
  return id;
}

static void test_shared_and_dying_files(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char sha[65], path[512];
  upload(c, "shared bytes", sha);
  snprintf(path, sizeof path, "%s/%s", cairn__core_files_dir(c), sha);
  int64_t a = submit_with(c, sha, CAIRN_OK), b = submit_with(c, sha, CAIRN_OK);
  json_t *out = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_delete(c, a, 0, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "files")), 0); /* b names it */
  json_decref(out);
  assert_int_equal(access(path, F_OK), 0);
  assert_true(cairn__core_has_file(c, sha, NULL));
  /* while a deletion may be removing it, a job naming it is refused ... */
  pthread_mutex_lock(&c->lock);
  cairn__dist_set_dying(c->dist, sha, 1);
  cairn__core_unlock(c);
  submit_with(c, sha, CAIRN_ECONFLICT);
  /* ... until it is uploaded again */
  int existed = 1;
  assert_int_equal(cairn__core_add_file(c, sha, 12, &existed, &err), CAIRN_OK);
  assert_false(existed);
  submit_with(c, sha, CAIRN_OK);
  assert_int_equal(cairn__core_delete(c, b, 0, &out, &err), CAIRN_OK);
  json_decref(out);
  assert_int_equal(access(path, F_OK), 0); /* the third job names it */
  unlink(path);                            /* for the teardown */
}

static void test_resume_removes_files(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  char sha[65], path[512];
  upload(c, "bytes of a job whose deletion stops", sha);
  snprintf(path, sizeof path, "%s/%s", cairn__core_files_dir(c), sha);
  int64_t id = submit_with(c, sha, CAIRN_OK);
  int64_t key = core_fixture_task(c, id, 0).key;
  pthread_mutex_lock(&c->lock);
  cairn__journal_put(c->journal, cairn__jrec_delete(id, 0, key, key + 1, 0, 0, NULL));
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  assert_int_equal(cairn__journal_wait(c->journal, seq, NULL), CAIRN_OK);
  assert_int_equal(access(path, F_OK), 0);
  core_fixture_reopen(f);
  c = f->c;
  assert_null(cairn__core_job_json(c, id, 0));
  assert_int_equal(access(path, F_OK), -1);
  assert_false(cairn__core_has_file(c, sha, NULL));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_priority_order, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_cancel, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_delete, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_retention, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_delete_failed_job_still_running, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_delete_in_steps_and_resume, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_shared_and_dying_files, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_resume_removes_files, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
