/* test_transfers.c — what the distribution view reads, recorded by a core
 * on a real SQLite file: each copy of a broadcast input a worker reports
 * ("fetched") against the source the master handed out (from the master,
 * from a peer of its cluster, from the master after that peer failed: a
 * fall-back), the plan the master built, bytes by source,
 * the measured rates; a report without a copy under way, or a second
 * report of the same copy, records nothing; a copy from a relay still
 * receiving is recorded; the read's bound; an unknown
 * job; a deleted job's copies and its file's plan go with it. Read back
 * through cairn__store_dist_read (store_dist.c) and with sqlite3 directly. */
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

#include "plan/jobspec.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
#define PEER1 "http://127.0.0.1:7001"
#define MASTER_SRC "/v1/files/" SHA
#define BYTES 200000 /* over the 64 KiB a rate sample needs */

static int64_t reg(cairn__core *c, const char *name, const char *cluster, const char *peer) {
  char *apps[] = {"big"}, token[65];
  int64_t id = 0, vid = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, cluster, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK ||
      cairn__core_auth(c, token, &vid, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return vid;
}

/* v asks for work: the first source of its task's input, grant dropped
 * (whole in raw, unless NULL: as the worker reports it); the task's
 * accountable index. */
static int64_t first_source(cairn__core *c, int64_t v, char out[512], char *raw) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK || !w)
    fail_msg("volunteer %lld got no work: %s", (long long)v, err.text);
  json_t *in = json_array_get(json_object_get(json_object_get(w, "task"), "inputs"), 0);
  snprintf(out, 512, "%s", json_string_value(json_array_get(json_object_get(in, "sources"), 0)));
  if (raw)
    snprintf(raw, 512, "%s", out);
  out[strcspn(out, "?")] = '\0';
  int64_t idx = (int64_t)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  return idx;
}

/* v's heartbeat says it relays files while receiving them ("chunks"). */
static void relays(cairn__core *c, int64_t v) {
  cairn__report r;
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_CHUNKS | CAIRN_FEAT_RUNNING;
  r.chunks = 1;
  json_t *hb = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_heartbeat(c, v, &r, &hb, &err), CAIRN_OK);
  json_decref(hb);
}

/* v's heartbeat reports a download of SHA from source in ms, and the
 * holding. */
static void fetched(cairn__core *c, int64_t v, const char *source, int64_t ms) {
  cairn__report r;
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_HAVE | CAIRN_FEAT_FETCHED | CAIRN_FEAT_RUNNING;
  r.have[0] = SHA;
  r.nhave = 1;
  r.fetched[0] = (cairn__report_fetched){SHA, source, BYTES, ms};
  r.nfetched = 1;
  json_t *hb = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_heartbeat(c, v, &r, &hb, &err), CAIRN_OK);
  json_decref(hb);
}

/* v's heartbeat reports that source failed it (unreachable). */
static void failed(cairn__core *c, int64_t v, const char *source) {
  cairn__report r;
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_FAILED | CAIRN_FEAT_RUNNING;
  r.failed[0] = (cairn__report_failed){SHA, source, CAIRN_FAIL_UNREACHABLE};
  r.nfailed = 1;
  json_t *hb = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_heartbeat(c, v, &r, &hb, &err), CAIRN_OK);
  json_decref(hb);
}

static void settle(cairn__core *c) {
  assert_int_equal(cairn__core_probe_write(c, NULL), CAIRN_OK);
}

/* What cairn__store_dist_read gave. */
typedef struct seen {
  int files, xfers, sources, rates;
  int64_t total, started, plans;
  char plan[4096];
  cairn__store_xfer_row x[4];
  int64_t src_bytes[4], src_copies[4], src_id[4];
} seen;

static int on_file(void *ud, const char *name, const char *sha, int64_t size, int64_t started,
                   int64_t plans, const char *body, int64_t total) {
  seen *s = ud;
  assert_string_equal(name, "big.bin");
  assert_string_equal(sha, SHA);
  assert_int_equal(size, 1000);
  s->plans = plans;
  s->files++;
  s->total = total;
  s->started = started;
  snprintf(s->plan, sizeof s->plan, "%s", body ? body : "");
  return 0;
}
static int on_xfer(void *ud, const cairn__store_xfer_row *r) {
  seen *s = ud;
  if (s->xfers < 4)
    s->x[s->xfers] = *r;
  s->xfers++;
  return 0;
}
static int on_source(void *ud, int64_t src, const char *cluster, int64_t bytes, int64_t copies) {
  seen *s = ud;
  (void)cluster;
  if (s->sources < 4) {
    s->src_id[s->sources] = src;
    s->src_bytes[s->sources] = bytes;
    s->src_copies[s->sources] = copies;
  }
  s->sources++;
  return 0;
}
static int on_rate(void *ud, const char *src, const char *dst, int64_t bps, int64_t n) {
  seen *s = ud;
  assert_true(bps > 0 && n >= 1 && *dst);
  (void)src;
  s->rates++;
  return 0;
}

static cairn_status read_dist(const core_fixture *f, int64_t job, uint32_t max, seen *s) {
  memset(s, 0, sizeof *s);
  cairn__store_dist_cb cb = {s, on_file, on_xfer, on_source, on_rate};
  cairn_error err = {0};
  return cairn__store_dist_read(f->db, job, max, &cb, &err);
}

static long long count(const core_fixture *f, const char *sql) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, sql, -1, &q, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  long long n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

static void test_copies_and_plan_recorded(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t w1 = reg(c, "w1", "a", PEER1), w2 = reg(c, "w2", "a", "http://127.0.0.1:7002");
  int64_t w3 = reg(c, "w3", "b", NULL), w4 = reg(c, "w4", "a", "http://127.0.0.1:7004");
  int64_t job = core_fixture_broadcast_job(c, SHA, 1000, 3);
  cairn_error err = {0};
  seen s;
  assert_int_equal(read_dist(f, job, 100, &s), CAIRN_OK);
  assert_int_equal(s.files, 1); /* listed before it is handed out: no plan, no copy */
  assert_int_equal(s.plans, 0);
  assert_string_equal(s.plan, "");
  assert_int_equal(s.total, 0);

  /* w1 gets the master's copy (the plan's sender), w4 the local holder w1;
   * so does w2, but w1 fails it and it falls back to the master */
  char src[512];
  first_source(c, w1, src, NULL);
  assert_string_equal(src, MASTER_SRC);
  fetched(c, w1, MASTER_SRC, 40);
  first_source(c, w4, src, NULL);
  assert_string_equal(src, PEER1 "/v1/files/" SHA);
  fetched(c, w4, src, 10);
  first_source(c, w2, src, NULL);
  assert_string_equal(src, PEER1 "/v1/files/" SHA);
  failed(c, w2, src);
  fetched(c, w2, MASTER_SRC, 20);
  /* w3 reports a copy the master never handed out; w1 reports its own again */
  fetched(c, w3, MASTER_SRC, 30);
  fetched(c, w1, MASTER_SRC, 40);
  settle(c);

  assert_int_equal(read_dist(f, job, 100, &s), CAIRN_OK);
  assert_int_equal(s.files, 1);
  assert_int_equal(s.total, 3);
  assert_int_equal(s.xfers, 3);
  assert_true(s.started > 0 && s.plans >= 1);
  json_t *plan = json_loads(s.plan, 0, NULL);
  assert_non_null(plan);
  assert_string_equal(json_string_value(json_object_get(plan, "algorithm")), "ECEF-LA");
  assert_true(json_integer_value(json_object_get(plan, "built_ms")) >= s.started);
  json_t *row = json_array_get(json_object_get(plan, "clusters_order"), 0);
  assert_string_equal(json_string_value(json_object_get(row, "from")), "master");
  assert_true(json_number_value(json_object_get(row, "done_s")) >=
              json_number_value(json_object_get(row, "end_s")));
  json_decref(plan);
  cairn__store_xfer_row *a = NULL, *b = NULL, *d = NULL;
  for (int i = 0; i < 3; i++) {
    cairn__store_xfer_row *x = &s.x[i];
    if (x->dst == w1) a = x;
    if (x->dst == w4) b = x;
    if (x->dst == w2) d = x;
    assert_true(x->start_ms >= s.started && x->end_ms > x->start_ms);
    assert_int_equal(x->bytes, BYTES);
    assert_string_equal(x->dst_cluster, "a");
  }
  assert_true(a && b && d);
  /* w1 from the master, handed out the master, 40 ms from the hand-out */
  assert_int_equal(a->src, 0);
  assert_int_equal(a->assigned, 0);
  assert_string_equal(a->src_cluster, "");
  assert_int_equal(a->end_ms - a->start_ms, 40);
  /* w4 from w1 (cluster a), as handed out */
  assert_int_equal(b->src, w1);
  assert_int_equal(b->assigned, w1);
  assert_string_equal(b->src_cluster, "a");
  /* w2 from the master after w1 failed it: handed out w1 */
  assert_int_equal(d->src, 0);
  assert_int_equal(d->assigned, w1);
  assert_int_equal(d->end_ms - d->start_ms, 20);
  /* by source: the master 2 copies, w1 one */
  assert_int_equal(s.sources, 2);
  assert_int_equal(s.src_id[0], 0);
  assert_int_equal(s.src_bytes[0], 2 * BYTES);
  assert_int_equal(s.src_copies[0], 2);
  assert_int_equal(s.src_id[1], w1);
  assert_int_equal(s.src_copies[1], 1);
  assert_true(s.rates >= 2); /* master -> a, a -> a */

  /* the bound: one copy read, all counted; an unknown job */
  assert_int_equal(read_dist(f, job, 1, &s), CAIRN_OK);
  assert_int_equal(s.xfers, 1);
  assert_int_equal(s.total, 3);
  assert_int_equal(read_dist(f, 99, 100, &s), CAIRN_ENOTFOUND);

  /* a deleted job's copies go, and with its file the plan (its leases
   * expired first: a job with leases out is not deleted) */
  assert_int_equal(cairn__core_expire(c, INT64_MAX / 2), 3);
  json_t *out = NULL;
  assert_int_equal(cairn__core_delete(c, job, 0, &out, &err), CAIRN_OK);
  json_decref(out);
  assert_int_equal(read_dist(f, job, 100, &s), CAIRN_ENOTFOUND);
  assert_int_equal(count(f, "SELECT count(*) FROM file_transfers"), 0);
  assert_int_equal(count(f, "SELECT count(*) FROM broadcast_plans"), 0);
}

/* A cut-through relay's receiver may finish, and report, before the relay
 * reports its own copy: that download is recorded all the same, from the
 * relay (no rate sample: the relay's own copy paced it). */
static void test_copy_from_relay_recorded(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t w1 = reg(c, "w1", "a", PEER1), w4 = reg(c, "w4", "a", "http://127.0.0.1:7004");
  relays(c, w1);
  int64_t job = core_fixture_broadcast_job(c, SHA, 1000, 2);
  char src[512], raw[512];
  first_source(c, w1, src, NULL);
  assert_string_equal(src, MASTER_SRC);
  first_source(c, w4, src, raw); /* w1, still receiving */
  assert_string_equal(src, PEER1 "/v1/files/" SHA);
  fetched(c, w4, raw, 10);
  settle(c);
  seen s;
  assert_int_equal(read_dist(f, job, 100, &s), CAIRN_OK);
  assert_int_equal(s.total, 1);
  assert_int_equal(s.x[0].dst, w4);
  assert_int_equal(s.x[0].src, w1);
  assert_int_equal(s.x[0].assigned, w1);
  assert_string_equal(s.x[0].src_cluster, "a");
  assert_int_equal(s.rates, 0);
  /* then w1's own copy */
  fetched(c, w1, MASTER_SRC, 40);
  settle(c);
  assert_int_equal(read_dist(f, job, 100, &s), CAIRN_OK);
  assert_int_equal(s.total, 2);
}

/* A worker whose task ends right after its download delivers the result
 * (which says it holds the file) before the report of that download: the
 * copy is recorded all the same, once. */
static void test_copy_reported_after_result(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t w1 = reg(c, "w1", "a", PEER1);
  int64_t job = core_fixture_broadcast_job(c, SHA, 1000, 1);
  char src[512];
  int64_t idx = first_source(c, w1, src, NULL);
  assert_string_equal(src, MASTER_SRC);
  core_fixture_result(c, w1, idx, "ok\n", -1);
  fetched(c, w1, MASTER_SRC, 40);
  fetched(c, w1, MASTER_SRC, 40); /* the same copy reported again */
  settle(c);
  seen s;
  assert_int_equal(read_dist(f, job, 100, &s), CAIRN_OK);
  assert_int_equal(s.total, 1);
  assert_int_equal(s.x[0].dst, w1);
  assert_int_equal(s.x[0].src, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_copies_and_plan_recorded, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_copy_from_relay_recorded, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_copy_reported_after_result, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
