/* test_holdings.c — which volunteers hold which uploaded files, kept by the
 * master across restarts: a core on a real SQLite file in a fresh folder.
 * A reported holding survives a close and reopen of the core (with its
 * time) and makes the holder the first source of a broadcast input for a
 * worker of its cluster; a holding reported again writes nothing; a ban
 * drops the banned volunteer's holdings in memory and on disk; start-up
 * skips rows of banned volunteers and of unknown files; a peer reported to
 * have served a bad copy holds the file no more (on disk too), one
 * reported unreachable keeps it but rests. The rows on disk are read with
 * sqlite3 directly, as an independent check. */
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
#include <unistd.h>

#include "plan/jobspec.h"
#include "common/log.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"
#define OTHER_SHA "c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3c3"
#define PEER1 "http://127.0.0.1:7001"
#define PEER2 "http://127.0.0.1:7002"
#define PEER3 "http://127.0.0.1:7003"
#define MASTER_SRC "/v1/files/" SHA

/* ---- helpers ---- */

/* Registers a worker of app "big" in cluster with a peer URL; returns its
 * id. */
static int64_t reg(cairn__core *c, const char *name, const char *cluster, const char *peer) {
  char *apps[] = {"big"}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, cluster, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  int64_t vid = 0;
  if (cairn__core_auth(c, token, &vid, &err) != CAIRN_OK)
    fail_msg("auth %s: %s", name, err.text);
  return vid;
}

/* Volunteer id, which must exist. */
static int64_t vol(cairn__core *c, int64_t id) { return core_fixture_vol(c, id).id; }

/* Uploads SHA (recorded only) and submits a job of four tasks reading it as
 * a broadcast input. */
static void file_and_job(cairn__core *c) {
  int existed = 1;
  cairn_error err = {0};
  if (cairn__core_add_file(c, SHA, 1000, &existed, &err) != CAIRN_OK)
    fail_msg("add file: %s", err.text);
  assert_false(existed);
  static const char job[] =
    "{\"app\": \"big\", \"policy\": \"fifo\", \"files\": [{\"name\": \"big.bin\", "
    "\"sha256\": \"" SHA "\", \"broadcast\": true}], \"tasks\": [{\"id\": \"t0\", "
    "\"inputs\": [\"big.bin\"]}, {\"id\": \"t1\", \"inputs\": [\"big.bin\"]}, {\"id\": \"t2\", "
    "\"inputs\": [\"big.bin\"]}, {\"id\": \"t3\", \"inputs\": [\"big.bin\"]}]}";
  cairn__jobspec *spec = cairn__jobspec_parse(job, strlen(job), CAIRN_JOBSPEC_SERVER, &err);
  if (!spec)
    fail_msg("job rejected: %s", err.text);
  int64_t id = 0;
  if (cairn__core_submit(c, spec, &id, &err) != CAIRN_OK)
    fail_msg("submit: %s", err.text);
}

/* v sends a heartbeat with report r (it names no lease it runs, so none
 * is extended). */
static cairn_status heartbeat(cairn__core *c, int64_t v, cairn__report *r) {
  json_t *hb = NULL;
  cairn_error err = {0};
  r->fields |= CAIRN_FEAT_RUNNING;
  r->nrunning = 0;
  cairn_status st = cairn__core_heartbeat(c, v, r, &hb, &err);
  json_decref(hb);
  return st;
}

/* v reports that it holds sha; the call's status. */
static cairn_status report_have(cairn__core *c, int64_t v, const char *sha) {
  static cairn__report r;
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_HAVE;
  r.have[0] = sha;
  r.nhave = 1;
  return heartbeat(c, v, &r);
}

static void have(cairn__core *c, int64_t v, const char *sha) {
  assert_int_equal(report_have(c, v, sha), CAIRN_OK);
}

/* The holders of SHA in memory, as "id@since" joined by spaces. */
static void holders(cairn__core *c, char *out, size_t len) {
  out[0] = '\0';
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__hmap_get(&c->dist->files, cairn__hash_key(SHA));
  assert_non_null(f);
  size_t n = 0;
  for (uint32_t i = 0; i < f->nholders && n < len; i++)
    n += (size_t)snprintf(out + n, len - n, "%s%lld@%lld", i ? " " : "",
                          (long long)f->holders[i].vol, (long long)f->holders[i].since);
  cairn__core_unlock(c);
}

/* "id@since" of v's holding of SHA on disk, or "" when there is none. */
static void holding_on_disk(const core_fixture *f, int64_t v, char *out, size_t len) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  out[0] = '\0';
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT volunteer_id, since FROM file_holders "
                                         "WHERE sha256 = ?1 AND volunteer_id = ?2", -1, &q, NULL),
                   SQLITE_OK);
  sqlite3_bind_text(q, 1, SHA, -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 2, v);
  if (sqlite3_step(q) == SQLITE_ROW)
    snprintf(out, len, "%lld@%lld", (long long)sqlite3_column_int64(q, 0),
             (long long)sqlite3_column_int64(q, 1));
  sqlite3_finalize(q);
  sqlite3_close(h);
}

static long long rows_on_disk(const core_fixture *f) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT COUNT(*) FROM file_holders", -1, &q, NULL),
                   SQLITE_OK);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  long long n = sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return n;
}

static void sql_exec(const core_fixture *f, const char *sql) {
  sqlite3 *h = NULL;
  assert_int_equal(sqlite3_open(f->db, &h), SQLITE_OK);
  int rc = sqlite3_exec(h, sql, NULL, NULL, NULL);
  sqlite3_close(h);
  assert_int_equal(rc, SQLITE_OK);
}

/* Waits until every record put so far is committed; returns the number of
 * the last batch then. */
static uint64_t settle(cairn__core *c) {
  assert_int_equal(cairn__core_probe_write(c, NULL), CAIRN_OK);
  uint64_t last = cairn__journal_last(c->journal);
  assert_int_equal(cairn__journal_committed(c->journal), last);
  return last;
}

/* 1 when a record was put since settle() returned last. */
static int journaled_since(cairn__core *c, uint64_t last) {
  return cairn__journal_last(c->journal) != last;
}

/* v asks for work: the sources of its task's input (caller decrefs). */
static json_t *sources_for(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("work: %s", err.text);
  if (!w)
    fail_msg("volunteer %lld got no work", (long long)v);
  json_t *in = json_array_get(json_object_get(json_object_get(w, "task"), "inputs"), 0);
  json_t *granted = json_object_get(in, "sources"), *src = json_array(), *u;
  size_t i;
  assert_non_null(granted);
  /* each peer source carries a grant to v (common/grant.h): dropped here */
  json_array_foreach(granted, i, u) {
    char url[512], want[32];
    snprintf(url, sizeof url, "%s", json_string_value(u));
    char *q = strchr(url, '?');
    if (url[0] != '/') {
      snprintf(want, sizeof want, "?grant=%lld.", (long long)v);
      assert_non_null(q);
      assert_true(strncmp(q, want, strlen(want)) == 0);
      *q = '\0';
    }
    json_array_append_new(src, json_string(url));
  }
  json_decref(w);
  return src;
}

static const char *source(json_t *src, size_t i) {
  return json_string_value(json_array_get(src, i));
}

/* ---- tests ---- */

/* A holding reported before the master stops is known after it starts
 * again, with the same since, and the holder is the first source for a
 * worker of its cluster: the master does not send a first copy again. */
static void test_holdings_survive_reopen(void **state) {
  core_fixture *f = *state;
  file_and_job(f->c);
  int64_t w1 = reg(f->c, "w1", "a", PEER1);
  reg(f->c, "w2", "a", PEER2);
  have(f->c, w1, SHA);
  char before[128], after[128], disk[64];
  holders(f->c, before, sizeof before);
  assert_true(strncmp(before, "1@", 2) == 0 && !strchr(before, ' '));
  settle(f->c);
  holding_on_disk(f, 1, disk, sizeof disk);
  assert_string_equal(disk, before);

  core_fixture_reopen(f);
  holders(f->c, after, sizeof after);
  assert_string_equal(after, before);
  json_t *src = sources_for(f->c, vol(f->c, 2));
  assert_int_equal(json_array_size(src), 2);
  assert_string_equal(source(src, 0), PEER1 "/v1/files/" SHA);
  assert_string_equal(source(src, 1), MASTER_SRC);
  json_decref(src);

  /* and once more: nothing was added or lost by the restart itself */
  core_fixture_reopen(f);
  holders(f->c, after, sizeof after);
  assert_string_equal(after, before);
  assert_int_equal(rows_on_disk(f), 1);
}

/* Without the holding on disk, the same request after a restart gets the
 * master: the check above is about the store, not about luck. */
static void test_without_holdings_the_master_serves(void **state) {
  core_fixture *f = *state;
  file_and_job(f->c);
  reg(f->c, "w1", "a", PEER1);
  reg(f->c, "w2", "a", PEER2);
  core_fixture_reopen(f);
  json_t *src = sources_for(f->c, vol(f->c, 2));
  assert_int_equal(json_array_size(src), 1);
  assert_string_equal(source(src, 0), MASTER_SRC);
  json_decref(src);
}

/* A holding the master already knows, reported again (by a heartbeat or by
 * a result that used the file), appends no journal record and leaves the
 * row as it was. */
static void test_duplicate_have_writes_nothing(void **state) {
  core_fixture *f = *state;
  file_and_job(f->c);
  int64_t w1 = reg(f->c, "w1", "a", PEER1);
  uint64_t taken = settle(f->c);
  have(f->c, w1, SHA);
  assert_true(journaled_since(f->c, taken));
  taken = settle(f->c);
  char first[64], again[64];
  holding_on_disk(f, 1, first, sizeof first);
  assert_true(strncmp(first, "1@", 2) == 0);

  have(f->c, w1, SHA);
  have(f->c, w1, SHA);
  assert_false(journaled_since(f->c, taken));
  /* a file the master does not have is no holding either */
  have(f->c, w1, OTHER_SHA);
  assert_false(journaled_since(f->c, taken));
  settle(f->c);
  holding_on_disk(f, 1, again, sizeof again);
  assert_string_equal(again, first);
  assert_int_equal(rows_on_disk(f), 1);
}

/* A ban drops the volunteer's holdings from memory and from disk in the
 * ban's own transaction; a report it sends after the ban is ignored; a
 * restart does not bring them back, and start-up skips rows of banned
 * volunteers and of unknown files. */
static void test_ban_drops_holdings(void **state) {
  core_fixture *f = *state;
  file_and_job(f->c);
  int64_t w1 = reg(f->c, "w1", "a", PEER1);
  int64_t w2 = reg(f->c, "w2", "a", PEER2);
  reg(f->c, "w3", "a", PEER3);
  have(f->c, w1, SHA);
  have(f->c, w2, SHA);
  settle(f->c);
  assert_int_equal(rows_on_disk(f), 2);
  char mem[128], disk[64], w2_holding[64];
  holding_on_disk(f, 2, w2_holding, sizeof w2_holding);

  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(f->c, 1, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  /* the ban's answer waited for its batch: the rows are gone already */
  holding_on_disk(f, 1, disk, sizeof disk);
  assert_string_equal(disk, "");
  holding_on_disk(f, 2, disk, sizeof disk);
  assert_string_equal(disk, w2_holding);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, w2_holding);

  /* a report that authenticated before the ban and arrives after it is
   * refused and changes nothing */
  assert_int_equal(report_have(f->c, w1, SHA), CAIRN_EFORBIDDEN);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, w2_holding);
  settle(f->c);
  assert_int_equal(rows_on_disk(f), 1);

  /* w3 is sent to w2 only, then the master */
  json_t *src = sources_for(f->c, vol(f->c, 3));
  assert_int_equal(json_array_size(src), 2);
  assert_string_equal(source(src, 0), PEER2 "/v1/files/" SHA);
  assert_string_equal(source(src, 1), MASTER_SRC);
  json_decref(src);

  core_fixture_reopen(f);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, w2_holding);

  /* rows no master writes: a banned volunteer's, and an unknown file's */
  cairn__core_close(f->c);
  f->c = NULL;
  sql_exec(f, "INSERT INTO file_holders VALUES ('" SHA "', 1, 5);"
              "INSERT INTO file_holders VALUES ('" OTHER_SHA "', 2, 5);");
  f->c = core_fixture_open(f);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, w2_holding);
  pthread_mutex_lock(&f->c->lock);
  assert_null(cairn__hmap_get(&f->c->dist->files, cairn__hash_key(OTHER_SHA)));
  cairn__core_unlock(f->c);
}

/* w reports that source failed its download of SHA for reason. */
static void failed(cairn__core *c, int64_t w, const char *source, int reason) {
  static cairn__report r;
  memset(&r, 0, sizeof r);
  r.fields = CAIRN_FEAT_FAILED;
  r.failed[0] = (cairn__report_failed){SHA, source, reason};
  r.nfailed = 1;
  assert_int_equal(heartbeat(c, w, &r), CAIRN_OK);
}

/* Transfers of SHA under way from volunteer from to volunteer to. */
static int xfers(cairn__core *c, int64_t to, int64_t from) {
  int n = 0;
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__hmap_get(&c->dist->files, cairn__hash_key(SHA));
  for (uint32_t i = 0; f && i < f->nxfers; i++)
    n += f->xfers[i].to == to && f->xfers[i].from == from;
  cairn__core_unlock(c);
  return n;
}

/* A peer reported to have served a bad copy (wrong digest, wrong size) is
 * no holder any more, in memory and on disk, across a restart, until it
 * reports the file again; the reporter no longer waits for its copy. A
 * source that names no holder changes nothing. */
static void test_bad_copy_drops_the_holding(void **state) {
  core_fixture *f = *state;
  file_and_job(f->c);
  int64_t w1 = reg(f->c, "w1", "a", PEER1);
  int64_t w2 = reg(f->c, "w2", "a", PEER2);
  int64_t w3 = reg(f->c, "w3", "a", PEER3);
  have(f->c, w1, SHA);
  have(f->c, w2, SHA);
  settle(f->c);
  assert_int_equal(rows_on_disk(f), 2);
  char mem[128], disk[64], w2_holding[64];
  holding_on_disk(f, 2, w2_holding, sizeof w2_holding);
  json_t *src = sources_for(f->c, w3);
  assert_string_equal(source(src, 0), PEER1 "/v1/files/" SHA);
  json_decref(src);
  assert_int_equal(xfers(f->c, w3, w1), 1);

  /* unknown sources: the master's, a peer that holds nothing */
  uint64_t taken = settle(f->c);
  failed(f->c, w3, MASTER_SRC, CAIRN_FAIL_DIGEST);
  failed(f->c, w3, PEER3 "/v1/files/" SHA, CAIRN_FAIL_DIGEST);
  failed(f->c, w3, PEER1 "0/v1/files/" SHA, CAIRN_FAIL_DIGEST); /* another port */
  assert_false(journaled_since(f->c, taken));
  assert_int_equal(rows_on_disk(f), 2);
  assert_int_equal(xfers(f->c, w3, w1), 1);

  failed(f->c, w3, PEER1 "/v1/files/" SHA, CAIRN_FAIL_DIGEST);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, w2_holding);
  assert_int_equal(xfers(f->c, w3, w1), 0);
  settle(f->c);
  holding_on_disk(f, 1, disk, sizeof disk);
  assert_string_equal(disk, "");
  holding_on_disk(f, 2, disk, sizeof disk);
  assert_string_equal(disk, w2_holding);
  failed(f->c, w3, PEER2 "/v1/files/" SHA, CAIRN_FAIL_SIZE);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, "");
  settle(f->c);
  assert_int_equal(rows_on_disk(f), 0);
  pthread_mutex_lock(&f->c->lock);
  assert_int_equal(f->c->dist->n.peer_failures[CAIRN_FAIL_DIGEST], 4);
  assert_int_equal(f->c->dist->n.peer_failures[CAIRN_FAIL_SIZE], 1);
  cairn__core_unlock(f->c);

  /* a restart does not bring them back */
  core_fixture_reopen(f);
  holders(f->c, mem, sizeof mem);
  assert_string_equal(mem, "");
  src = sources_for(f->c, vol(f->c, 2));
  assert_int_equal(json_array_size(src), 1);
  assert_string_equal(source(src, 0), MASTER_SRC);
  json_decref(src);

  /* reported again: a holder again */
  have(f->c, vol(f->c, 1), SHA);
  holders(f->c, mem, sizeof mem);
  assert_true(strncmp(mem, "1@", 2) == 0 && !strchr(mem, ' '));
  settle(f->c);
  assert_int_equal(rows_on_disk(f), 1);
}

/* A peer reported unreachable, stalled or answering another status keeps
 * its holding (nothing is journaled) but is not offered for 30 seconds;
 * the reporter no longer waits for its copy. */
static void test_failing_peer_rests(void **state) {
  core_fixture *f = *state;
  file_and_job(f->c);
  int64_t w1 = reg(f->c, "w1", "a", PEER1);
  int64_t w2 = reg(f->c, "w2", "a", PEER2);
  int64_t w3 = reg(f->c, "w3", "a", PEER3);
  have(f->c, w1, SHA);
  char before[128], after[128];
  holders(f->c, before, sizeof before);
  json_t *src = sources_for(f->c, w2);
  assert_string_equal(source(src, 0), PEER1 "/v1/files/" SHA);
  json_decref(src);
  uint64_t taken = settle(f->c);
  int64_t t0 = cairn__now();
  failed(f->c, w2, PEER1 "/v1/files/" SHA, CAIRN_FAIL_STALLED);
  assert_false(journaled_since(f->c, taken));
  holders(f->c, after, sizeof after);
  assert_string_equal(after, before);
  assert_int_equal(xfers(f->c, w2, w1), 0);
  pthread_mutex_lock(&f->c->lock);
  int64_t until = f->c->dist->paused_until[w1 - 1];
  assert_true(until >= t0 + 30 && until <= cairn__now() + 30);
  cairn__core_unlock(f->c);

  /* w3 is not sent to w1: the master sends it a copy */
  src = sources_for(f->c, w3);
  assert_int_equal(json_array_size(src), 1);
  assert_string_equal(source(src, 0), MASTER_SRC);
  json_decref(src);

  /* 30 seconds on, w1 is offered again */
  pthread_mutex_lock(&f->c->lock);
  f->c->dist->paused_until[w1 - 1] = cairn__now();
  cairn__core_unlock(f->c);
  int64_t w4 = reg(f->c, "w4", "a", "http://127.0.0.1:7004");
  src = sources_for(f->c, w4);
  assert_string_equal(source(src, 0), PEER1 "/v1/files/" SHA);
  json_decref(src);
}

#define CORE_TEST(fn) cmocka_unit_test_setup_teardown(fn, core_fixture_setup, core_fixture_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
    CORE_TEST(test_holdings_survive_reopen),
    CORE_TEST(test_without_holdings_the_master_serves),
    CORE_TEST(test_duplicate_have_writes_nothing),
    CORE_TEST(test_ban_drops_holdings),
    CORE_TEST(test_bad_copy_drops_the_holding),
    CORE_TEST(test_failing_peer_rests),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
