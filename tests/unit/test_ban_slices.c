/* test_ban_slices.c — a ban in slices (server/core/ban.c) in-process over real
 * SQLite files: the same history (a liar with results across four jobs:
 * pairs that lose their quorum, triples that keep one, a chain whose root
 * it computed, pending replicas) banned with one result per slice, with
 * two, with every result in one slice, and interrupted after its mark and
 * one slice then finished by a reopen of the store, ends in the same
 * state: outcomes, accepted results, rounds, task states, volunteers'
 * counts and credit, the team ledger, and the same report. */
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

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/store/journal.h"
#include "tests/support/core_fixture.h"

/* The history every core gets: volunteer 1 is the liar (it agrees with
 * the others, so its results were accepted). */
static void history(cairn__core *c) {
  int64_t bad = core_fixture_register(c, "liar", "red", 8),
          a = core_fixture_register(c, "a", "red", 8), b = core_fixture_register(c, "b", "blue", 8);
  /* job 1: six pairs, each done on the liar's and a's agreement */
  core_fixture_submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"replication\": 2, "
                         "\"quorum\": 2, \"tasks\": [{\"id\": \"p0\"}, {\"id\": \"p1\"}, "
                         "{\"id\": \"p2\"}, {\"id\": \"p3\"}, {\"id\": \"p4\"}, {\"id\": \"p5\"}]}");
  for (int k = 0; k < 6; k++) {
    int64_t ib = core_fixture_take(c, bad), ia = core_fixture_take(c, a);
    core_fixture_result(c, bad, ib, "ok\n", 1.0 + k);
    core_fixture_result(c, a, ia, "ok\n", 2.0);
  }
  /* job 2: four triples of three copies (quorum 2), the liar first: a
   * quorum stands without it */
  core_fixture_submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"replication\": 3, "
                         "\"quorum\": 2, \"tasks\": [{\"id\": \"q0\"}, {\"id\": \"q1\"}, "
                         "{\"id\": \"q2\"}, {\"id\": \"q3\"}]}");
  int64_t ib[4], ia[4], ix[4];
  for (int k = 0; k < 4; k++) {
    ib[k] = core_fixture_take(c, bad);
    ia[k] = core_fixture_take(c, a);
    ix[k] = core_fixture_take(c, b);
  }
  for (int k = 0; k < 4; k++) {
    core_fixture_result(c, bad, ib[k], "ok\n", 0.5);
    core_fixture_result(c, a, ia[k], "ok\n", 3.0);
    core_fixture_result(c, b, ix[k], "ok\n", 4.0); /* late: the task is done, it is valid too */
  }
  /* job 3: a chain r -> c1, c2 -> d; the liar computed r alone */
  core_fixture_submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"tasks\": [{\"id\": \"r\"}, "
                         "{\"id\": \"c1\", \"after\": [\"r\"]}, {\"id\": \"c2\", \"after\": "
                         "[\"r\"]}, {\"id\": \"d\", \"after\": [\"c1\", \"c2\"]}]}");
  core_fixture_result(c, bad, core_fixture_take(c, bad), "root\n", 1.0);
  for (int k = 0; k < 3; k++)
    core_fixture_result(c, a, core_fixture_take(c, a), "child\n", 1.0);
  /* job 4: three pairs where only the liar has answered (pending) */
  core_fixture_submit(c, "{\"app\": \"sum\", \"policy\": \"fifo\", \"replication\": 2, "
                         "\"quorum\": 2, \"tasks\": [{\"id\": \"w0\"}, {\"id\": \"w1\"}, "
                         "{\"id\": \"w2\"}]}");
  for (int k = 0; k < 3; k++)
    core_fixture_result(c, bad, core_fixture_take(c, bad), "ok\n", 1.0);
}

/* Appends every row of sql on db to *out, one line a row. */
static void dump_sql(sqlite3 *h, const char *sql, char **out, size_t *len, size_t *cap) {
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(h, sql, -1, &q, NULL) != SQLITE_OK)
    fail_msg("%s: %s", sql, sqlite3_errmsg(h));
  while (sqlite3_step(q) == SQLITE_ROW) {
    for (int i = 0; i < sqlite3_column_count(q); i++) {
      const char *v = (const char *)sqlite3_column_text(q, i);
      size_t need = *len + (v ? strlen(v) : 4) + 3;
      if (need > *cap) {
        *cap = 2 * need;
        assert_non_null(*out = realloc(*out, *cap));
      }
      *len += (size_t)sprintf(*out + *len, "%s%s", i ? "|" : "", v ? v : "NULL");
    }
    *len += (size_t)sprintf(*out + *len, "\n");
  }
  sqlite3_finalize(q);
}

/* The durable end state of f's store, as text. */
static char *store_state(const core_fixture *f) {
  static const char *const sql[] = {
      "SELECT job_id, name, state, accepted, round, attempts FROM tasks ORDER BY id",
      "SELECT idx, volunteer_id, outcome, printf('%.6f', credit), team FROM results ORDER BY idx",
      "SELECT id, banned, ban_pending, printf('%.6f', credit), printf('%.6f', cpu_seconds), "
      "credited, trust FROM volunteers ORDER BY id",
      "SELECT team, printf('%.6f', credit), printf('%.6f', cpu_seconds), results FROM team_credit "
      "ORDER BY team",
      "SELECT id, state FROM jobs ORDER BY id"};
  sqlite3 *h = NULL;
  char *out = NULL;
  size_t len = 0, cap = 0;
  assert_int_equal(sqlite3_open_v2(f->db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  for (size_t i = 0; i < sizeof sql / sizeof *sql; i++)
    dump_sql(h, sql[i], &out, &len, &cap);
  sqlite3_close(h);
  return out;
}

/* The core's own end state, as text, read through its views: each task's
 * state, round, accepted result and results' outcomes; each volunteer's
 * counts and credit. */
static char *core_state(cairn__core *c) {
  size_t cap = 1 << 16, len = 0;
  char *out = malloc(cap);
  assert_non_null(out);
  cairn_error err = {0};
  json_t *jj;
  for (int64_t id = 1; (jj = cairn__core_job_json(c, id, 0)) != NULL; id++) {
    uint32_t n = (uint32_t)json_integer_value(json_object_get(jj, "tasks"));
    json_decref(jj);
    for (uint32_t v = 0; v < n; v++) {
      cairn__task_info t;
      cairn__res_info r[16];
      assert_int_equal(cairn__core_task_info(c, id, v, &t, r, 16, &err), CAIRN_OK);
      assert_true(t.nres <= 16);
      len += (size_t)snprintf(out + len, cap - len, "%zu/%u %d r%u a%lld:", (size_t)(id - 1), v,
                              t.state, (unsigned)t.round, (long long)t.accepted);
      for (uint32_t i = 0; i < t.nres; i++)
        len += (size_t)snprintf(out + len, cap - len, " %lld=%d", (long long)r[i].idx,
                                r[i].outcome);
      len += (size_t)snprintf(out + len, cap - len, "\n");
    }
  }
  cairn__vol_info m;
  for (int64_t id = 1; cairn__core_volunteer(c, id, &m, NULL) == CAIRN_OK; id++)
    len += (size_t)snprintf(out + len, cap - len, "v%lld %lld %lld %lld %.6f %lld %d\n",
                            (long long)m.id, (long long)m.valid, (long long)m.invalid,
                            (long long)m.pending, m.credit, (long long)m.credited, m.banned);
  assert_true(len < cap);
  return out;
}

/* What the ban reads of volunteer v, with entry i of its index. */
static cairn__ban_info ban_info(cairn__core *c, int64_t v, uint32_t i) {
  cairn__ban_info b;
  cairn_error err = {0};
  if (cairn__ban_info_of(c, v, i, &b, &err) != CAIRN_OK)
    fail_msg("volunteer %lld: %s", (long long)v, err.text);
  return b;
}

/* Slices of bans done since start (cairn__ban_counts). */
static uint64_t slices_done(cairn__core *c) {
  uint64_t bans, slices, hold;
  pthread_mutex_lock(&c->lock);
  cairn__ban_counts(c, &bans, &slices, &hold);
  cairn__core_unlock(c);
  return slices;
}

/* Fails naming the first line where a and b (what) differ. */
static void same(const char *a, const char *b, const char *what) {
  size_t line = 1, i = 0;
  for (; a[i] && a[i] == b[i]; i++)
    line += a[i] == '\n';
  if (a[i] || b[i]) {
    const char *la = a + i, *lb = b + i;
    while (la > a && la[-1] != '\n')
      la--;
    while (lb > b && lb[-1] != '\n')
      lb--;
    fail_msg("%s differ at line %zu: \"%.60s\" against \"%.60s\"", what, line, la, lb);
  }
}

static void ban(cairn__core *c, uint32_t k, char **report) {
  json_t *rep = NULL;
  cairn_error err = {0};
  cairn__ban_set_slice(c, k);
  uint64_t before = slices_done(c);
  if (cairn__core_ban(c, 1, "lied", &rep, &err) != CAIRN_OK)
    fail_msg("ban: %s", err.text);
  assert_false(ban_info(c, 1, 0).pending);
  assert_false(ban_info(c, 1, 0).indexed); /* the index goes with the ban */
  /* 6 + 4 + 1 + 3 results, k a slice */
  assert_int_equal(slices_done(c) - before, (14 + k - 1) / k);
  *report = json_dumps(rep, JSON_SORT_KEYS | JSON_COMPACT);
  json_decref(rep);
}

/* The history, banned k results a slice, after a reopen of the store
 * when reopen is set (a task's results are then in the store's order);
 * its store, core and report states go to st[0..3) (the first of each
 * kind becomes the reference, the others are compared with it). */
static void run(uint32_t k, int reopen, char *st[3]) {
  void *fx = NULL;
  assert_int_equal(core_fixture_setup(&fx), 0);
  core_fixture *f = fx;
  history(f->c);
  if (reopen)
    core_fixture_reopen(f); /* the index is made at load */
  assert_int_equal(ban_info(f->c, 1, 0).entries, 14);
  char *got[3] = {NULL};
  ban(f->c, k, &got[2]);
  got[0] = store_state(f);
  got[1] = core_state(f->c);
  static const char *const what[] = {"the stores", "the cores", "the reports"};
  for (int i = 0; i < 3; i++) {
    if (!st[i]) {
      st[i] = got[i];
      continue;
    }
    same(got[i], st[i], what[i]);
    free(got[i]);
  }
  core_fixture_teardown(&fx);
}

/* What the ban did: every one of the liar's results invalid, job 1's six
 * tasks and job 3's root re-queued with r's three descendants, job 2's
 * tasks re-named an honest result. */
static void check_report(const char *rep) {
  json_t *r = json_loads(rep, 0, NULL);
  assert_int_equal(json_integer_value(json_object_get(r, "results_invalidated")), 14);
  assert_int_equal(json_integer_value(json_object_get(r, "tasks_requeued")), 7);
  assert_int_equal(json_integer_value(json_object_get(r, "descendants_requeued")), 3);
  json_decref(r);
}

static void test_slices_same_end_state(void **state) {
  (void)state;
  char *live[3] = {NULL}, *loaded[3] = {NULL};
  run(1, 0, live);
  run(1000, 0, live);
  run(1, 1, loaded);
  run(2, 1, loaded);
  run(1000, 1, loaded);
  check_report(live[2]);
  check_report(loaded[2]);
  assert_non_null(strstr(live[0], "1|1|0|0.000000|0.000000|0|0\n")); /* the liar: no credit left */
  for (int i = 0; i < 3; i++)
    free(live[i]);
  char *store0 = loaded[0];

  /* interrupted: the mark and one slice, then the store reopened (as after
   * a kill): the start-up finishes the ban, re-doing nothing twice */
  void *st = NULL;
  assert_int_equal(core_fixture_setup(&st), 0);
  core_fixture *f = st;
  cairn__core *c = f->c;
  history(c);
  core_fixture_reopen(f);
  c = f->c;
  cairn_error err = {0};
  cairn__ban_tally tl = {0, 0, 0, NULL};
  cairn__ban_info entry = ban_info(c, 1, 0); /* the first entry of its index: a slice's */
  uint32_t first = entry.task;
  pthread_mutex_lock(&c->lock);
  cairn__ban_mark(c, cairn__vol_find_locked(c, 1), "lied");
  cairn_status sliced = cairn__ban_tasks(c, cairn__job_find_locked(c, entry.job), 1, &first, 1,
                                         &tl, &err);
  /* (how far the ban went is memory only: the reopen below starts it again
   * from its first entry) */
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  assert_int_equal(sliced, CAIRN_OK);
  assert_int_equal(cairn__journal_wait(c->journal, seq, &err), CAIRN_OK);
  assert_int_equal(tl.invalidated, 1);
  char *mid = store_state(f);
  assert_non_null(strstr(mid, "1|1|1|")); /* volunteer 1 banned, its ban pending */
  free(mid);
  core_fixture_reopen(f);
  assert_true(ban_info(f->c, 1, 0).pending);
  assert_int_equal(cairn__core_ban_resume(f->c, &err), CAIRN_OK); /* as the master starts */
  char *store = store_state(f);
  same(store, store0, "the stores after a resumed ban");
  assert_false(ban_info(f->c, 1, 0).pending);
  free(store);
  core_fixture_teardown(&st);
  for (int i = 0; i < 3; i++)
    free(loaded[i]);
}

/* A volunteer's index drops the entries of a deleted job when it fills,
 * and a ban then reads only the live job's results. */
static void test_index_drops_deleted_jobs(void **state) {
  (void)state;
  void *fx = NULL;
  assert_int_equal(core_fixture_setup(&fx), 0);
  core_fixture *f = fx;
  cairn__core *c = f->c;
  int64_t v = core_fixture_register(c, "v", NULL, 8);
  int64_t old = core_fixture_submit(c, "{\"app\": \"sum\", \"tasks\": [{\"id\": \"a\"}, "
                                       "{\"id\": \"b\"}, {\"id\": \"c\"}]}");
  for (int k = 0; k < 3; k++)
    core_fixture_result(c, v, core_fixture_take(c, v), "ok\n", 1.0);
  json_t *out = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_delete(c, old, 0, &out, &err), CAIRN_OK);
  json_decref(out);
  char text[1024];
  size_t len = (size_t)snprintf(text, sizeof text, "{\"app\": \"sum\", \"tasks\": [");
  for (int k = 0; k < 20; k++)
    len += (size_t)snprintf(text + len, sizeof text - len, "%s{\"id\": \"t%d\"}", k ? ", " : "", k);
  snprintf(text + len, sizeof text - len, "]}");
  int64_t live = core_fixture_submit(c, text);
  for (int k = 0; k < 20; k++)
    core_fixture_result(c, v, core_fixture_take(c, v), "ok\n", 1.0);
  assert_int_equal(ban_info(c, v, 0).entries, 20); /* the 3 of the deleted job went at the 17th */
  for (uint32_t i = 0; i < 20; i++)
    assert_int_equal(ban_info(c, v, i).job, live);
  json_t *rep = NULL;
  assert_int_equal(cairn__core_ban(c, v, "x", &rep, &err), CAIRN_OK);
  assert_int_equal(json_integer_value(json_object_get(rep, "results_invalidated")), 20);
  json_decref(rep);
  core_fixture_teardown(&fx);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_slices_same_end_state),
                                     cmocka_unit_test(test_index_drops_deleted_jobs)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
