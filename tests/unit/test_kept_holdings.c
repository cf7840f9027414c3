/* test_kept_holdings.c — outputs kept on workers in the master's core, on a
 * real SQLite file (keep.c; docs/jobs.md, "Where outputs stay"): a task
 * with a child is offered "keep": "workers" (a sink and a "keep": "master"
 * job are not); its result names a file it did not upload, which the
 * master records without bytes (kept_files, read here with sqlite3) with
 * the worker as holder; the child's input lists that holder (its own
 * cluster's first) and not the master; both survive a close and reopen of
 * the core; a leaving holder may upload it only while no other holder can
 * be offered; when its holders are gone the parent is allocated again in
 * a new round while the child waits; and a file uploaded anyway (an older
 * worker) is the master's, with no holding; a deleted job's kept output
 * goes with it; a ban drops the banned producer's holdings and its task
 * runs again; a holder that says "peer_max": 1 is named for one copy at a
 * time, the other children waiting. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/outputs.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b7b"
#define PEER1 "http://127.0.0.1:7101"
#define PEER2 "http://127.0.0.1:7102"
#define PEER3 "http://127.0.0.1:7103"

static const char job_text[] =
  "{\"app\": \"k\", \"policy\": \"fifo\", \"tasks\": ["
  "{\"id\": \"p\", \"outputs\": [\"o.bin\"]},"
  "{\"id\": \"ch\", \"inputs\": [\"p/o.bin\"], \"after\": [\"p\"], \"outputs\": [\"o.bin\"]}]}";

static int64_t reg(cairn__core *c, const char *name, const char *cluster, const char *peer) {
  char *apps[] = {"k"}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, cluster, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

/* vol asks for work: the offer (caller decrefs), NULL when none. */
static json_t *work(cairn__core *c, int64_t vol) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, vol, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("work: %s", err.text);
  return w;
}

static const char *task_id(json_t *w) {
  return json_string_value(json_object_get(json_object_get(w, "task"), "id"));
}

/* vol returns o.bin (SHA, 1000 bytes) for the offer w, without uploading. */
static cairn_status result(cairn__core *c, int64_t vol, json_t *w, cairn_error *err) {
  cairn__output_file f = {.name = "o.bin", .sha256 = SHA, .size = 1000};
  cairn__result_extra x = {.files = &f, .nfiles = 1};
  return cairn__core_result(c, vol, json_integer_value(json_object_get(w, "index")), 0, NULL,
                            "ok\n", 3, &x, NULL, err);
}

static long long kept_rows(const core_fixture *f) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  long long n = -1;
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT COUNT(*) FROM kept_files k JOIN file_holders h "
                                         "ON h.sha256 = k.sha256 WHERE k.sha256 = ?1", -1, &q,
                                      NULL), SQLITE_OK);
  sqlite3_bind_text(q, 1, SHA, -1, SQLITE_STATIC);
  if (sqlite3_step(q) == SQLITE_ROW)
    n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

static int remote(cairn__core *c) {
  pthread_mutex_lock(&c->lock);
  int r = cairn__dist_remote(c->dist, SHA);
  cairn__core_unlock(c);
  return r;
}

static void test_kept_output(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  int64_t w1 = reg(c, "w1", "a", PEER1), w2 = reg(c, "w2", "b", PEER2);
  int64_t job = core_fixture_submit(c, job_text);
  json_t *w = work(c, w1);
  assert_string_equal(task_id(w), "p");
  assert_string_equal(json_string_value(json_object_get(json_object_get(w, "task"), "keep")),
                      "workers");
  assert_int_equal(result(c, w1, w, &err), CAIRN_OK);
  json_decref(w);
  assert_true(remote(c));
  assert_int_equal(kept_rows(f), 1);
  /* the master has no bytes of it: no GET /v1/files */
  assert_false(cairn__core_has_file(c, SHA, NULL));

  /* the restarted master still knows the file and its holder */
  core_fixture_reopen(f);
  c = f->c;
  assert_true(remote(c));
  int64_t w3 = reg(c, "w3", "a", PEER3);
  (void)w3;
  w = work(c, w2); /* the child, in cluster b: w1 (a) is its only source */
  assert_string_equal(task_id(w), "ch");
  assert_null(json_object_get(json_object_get(w, "task"), "keep")); /* a sink */
  json_t *in = json_array_get(json_object_get(json_object_get(w, "task"), "inputs"), 0);
  json_t *src = json_object_get(in, "sources");
  assert_int_equal(json_array_size(src), 1);
  assert_int_equal(strncmp(json_string_value(json_array_get(src, 0)), PEER1 "/v1/files/" SHA "?",
                           strlen(PEER1 "/v1/files/" SHA "?")), 0);
  assert_string_equal(json_string_value(json_object_get(in, "url")),
                      json_string_value(json_array_get(src, 0)));
  json_decref(w);

  /* a leaving holder uploads it only while nobody else can serve it */
  assert_int_equal(cairn__core_kept_upload(c, w1, SHA, &err), CAIRN_OK);
  assert_int_equal(cairn__core_kept_upload(c, w2, SHA, &err), CAIRN_EFORBIDDEN);
  (void)job;
}

/* Every holder silent: the child waits and the parent runs again. */
static void test_lost_output_recomputed(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  int64_t w1 = reg(c, "w1", "a", PEER1), w2 = reg(c, "w2", "b", PEER2);
  int64_t job = core_fixture_submit(c, job_text);
  json_t *w = work(c, w1);
  assert_int_equal(result(c, w1, w, &err), CAIRN_OK);
  json_decref(w);
  pthread_mutex_lock(&c->lock); /* a state made here: */
  cairn__vol_find_locked(c, w1)->last_seen -= 3600; /* w1 vanished an hour ago, */
  c->loaded_at -= 3600;                              /* long after the master started */
  uint64_t before = c->dist->n.recomputed;
  cairn__core_unlock(c);
  w = work(c, w2); /* the child cannot be fetched: p is allocated again, to w2 */
  if (!w)
    w = work(c, w2);
  assert_non_null(w);
  assert_string_equal(task_id(w), "p");
  assert_string_equal(json_string_value(json_object_get(json_object_get(w, "task"), "keep")),
                      "workers");
  pthread_mutex_lock(&c->lock);
  uint64_t after = c->dist->n.recomputed;
  cairn__core_unlock(c);
  int child_waits = core_fixture_task(c, job, 1).state == TS_WAITING,
      round = (int)core_fixture_task(c, job, 0).round;
  assert_int_equal(after, before + 1);
  assert_true(child_waits);
  assert_int_equal(round, 1);
  assert_int_equal(result(c, w2, w, &err), CAIRN_OK);
  json_decref(w);
  w = work(c, w2); /* w2 holds it now: the child runs there */
  assert_non_null(w);
  assert_string_equal(task_id(w), "ch");
  json_decref(w);
}

/* A job that keeps its outputs at the master: no "keep", uploads needed. */
static void test_keep_master(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  int64_t w1 = reg(c, "w1", "a", PEER1);
  core_fixture_submit(c, "{\"app\": \"k\", \"keep\": \"master\", \"tasks\": ["
                         "{\"id\": \"p\", \"outputs\": [\"o.bin\"]},"
                         "{\"id\": \"ch\", \"inputs\": [\"p/o.bin\"], \"after\": [\"p\"]}]}");
  json_t *w = work(c, w1);
  assert_null(json_object_get(json_object_get(w, "task"), "keep"));
  assert_int_equal(result(c, w1, w, &err), CAIRN_EINVAL); /* not uploaded */
  assert_non_null(strstr(err.text, "was not uploaded"));
  json_decref(w);
  assert_false(remote(c));
}

/* A worker that ignores "keep" (an older one) uploads the file: the
 * master has it and records no holding. */
static void test_uploaded_anyway(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  int existed = 0;
  int64_t w1 = reg(c, "w1", "a", PEER1);
  core_fixture_submit(c, job_text);
  json_t *w = work(c, w1);
  assert_int_equal(cairn__core_add_file(c, SHA, 1000, &existed, &err), CAIRN_OK);
  assert_int_equal(result(c, w1, w, &err), CAIRN_OK);
  json_decref(w);
  assert_false(remote(c));
  assert_true(cairn__core_has_file(c, SHA, NULL));
  assert_int_equal(kept_rows(f), 0);
}

/* Deleting a job removes its kept output's record with the file (the store
 * keeps working: kept_files goes with its file row). */
static void test_delete_job(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  json_t *out = NULL;
  int64_t w1 = reg(c, "w1", "a", PEER1);
  int64_t job = core_fixture_submit(c, job_text);
  json_t *w = work(c, w1);
  assert_int_equal(result(c, w1, w, &err), CAIRN_OK);
  json_decref(w);
  assert_int_equal(kept_rows(f), 1);
  assert_int_equal(cairn__core_delete(c, job, 1, &out, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(out, "files")), 1);
  json_decref(out);
  assert_int_equal(cairn__core_probe_write(c, &err), CAIRN_OK);
  assert_int_equal(kept_rows(f), 0);
  assert_false(remote(c));
  core_fixture_reopen(f);
  assert_false(remote(f->c));
}

/* A banned producer's kept output is dropped with its holdings, and the
 * task that made it runs again (the ban's re-queue). */
static void test_ban_drops_holdings(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  json_t *rep = NULL;
  int64_t w1 = reg(c, "w1", "a", PEER1), w2 = reg(c, "w2", "b", PEER2);
  int64_t job = core_fixture_submit(c, job_text);
  json_t *w = work(c, w1);
  assert_int_equal(result(c, w1, w, &err), CAIRN_OK);
  json_decref(w);
  assert_int_equal(cairn__core_ban(c, w1, "test", &rep, &err), CAIRN_OK);
  json_decref(rep);
  pthread_mutex_lock(&c->lock);
  mfilerec *fr = cairn__dist_file_of(c->dist, SHA);
  uint32_t holders = fr ? fr->nholders : 99;
  cairn__core_unlock(c);
  int p_state = core_fixture_task(c, job, 0).state;
  assert_int_equal(holders, 0);
  assert_int_equal(p_state, TS_ELIGIBLE);
  assert_int_equal(kept_rows(f), 0); /* no holding on disk either */
  w = work(c, w2);
  assert_non_null(w);
  assert_string_equal(task_id(w), "p");
  json_decref(w);
}

/* A holder whose reports say "peer_max": 1 is named the source of one copy
 * at a time: a second child waits (it is not sent to a holder that would
 * answer 503, nor is the output taken for lost); once it says 4 (or says
 * nothing: a worker's default --peer-max) the second child is sent to it. */
static void test_peer_max(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  cairn_error err = {0};
  json_t *resp = NULL;
  int64_t w1 = reg(c, "w1", "a", PEER1), w2 = reg(c, "w2", "b", PEER2),
          w3 = reg(c, "w3", "b", PEER3);
  int64_t job = core_fixture_submit(
    c, "{\"app\": \"k\", \"policy\": \"fifo\", \"tasks\": ["
       "{\"id\": \"p\", \"outputs\": [\"o.bin\"]},"
       "{\"id\": \"c1\", \"inputs\": [\"p/o.bin\"], \"after\": [\"p\"]},"
       "{\"id\": \"c2\", \"inputs\": [\"p/o.bin\"], \"after\": [\"p\"]}]}");
  json_t *w = work(c, w1);
  assert_string_equal(task_id(w), "p");
  assert_int_equal(result(c, w1, w, &err), CAIRN_OK);
  json_decref(w);
  cairn__report r = {.fields = CAIRN_FEAT_PEER_MAX, .peer_max = 1};
  assert_int_equal(cairn__core_heartbeat(c, w1, &r, &resp, &err), CAIRN_OK);
  json_decref(resp);
  pthread_mutex_lock(&c->lock);
  uint64_t before = c->dist->n.recomputed;
  cairn__core_unlock(c);
  unsigned said = core_fixture_vol(c, w1).peer_max;
  assert_int_equal(said, 1);

  w = work(c, w2); /* the first child: w1 sends it its one copy */
  assert_string_equal(task_id(w), "c1");
  json_t *in = json_array_get(json_object_get(json_object_get(w, "task"), "inputs"), 0);
  assert_int_equal(strncmp(json_string_value(json_object_get(in, "url")), PEER1 "/v1/files/",
                           strlen(PEER1 "/v1/files/")), 0);
  json_decref(w);
  int retry_ms = 0;
  w = NULL;
  assert_int_equal(cairn__core_work(c, w3, NULL, NULL, 0, &w, &retry_ms, &err), CAIRN_OK);
  assert_null(w); /* w1 is busy: the second child waits */
  assert_true(retry_ms > 0);
  pthread_mutex_lock(&c->lock);
  uint64_t after = c->dist->n.recomputed;
  cairn__core_unlock(c);
  int p_done = core_fixture_task(c, job, 0).state == TS_DONE;
  assert_int_equal(after, before); /* busy is not lost */
  assert_true(p_done);

  r.peer_max = 4;
  assert_int_equal(cairn__core_heartbeat(c, w1, &r, &resp, &err), CAIRN_OK);
  json_decref(resp);
  w = work(c, w3);
  assert_non_null(w);
  assert_string_equal(task_id(w), "c2");
  in = json_array_get(json_object_get(json_object_get(w, "task"), "inputs"), 0);
  assert_int_equal(strncmp(json_string_value(json_object_get(in, "url")), PEER1 "/v1/files/",
                           strlen(PEER1 "/v1/files/")), 0);
  json_decref(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_kept_output, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_lost_output_recomputed, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_keep_master, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_peer_max, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_uploaded_anyway, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_delete_job, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_ban_drops_holdings, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
