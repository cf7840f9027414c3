/* test_dist_scan.c — a broadcast file held by many workers: the master's
 * source decision looks at CAIRN__DIST_SCAN of its holders and copies
 * under way at most (server/dist/dist_int.h, cairn__dist_window), whatever
 * their number, yet still finds a holder in the asking worker's cluster
 * when its window has one; a report naming a holder's peer URL finds that
 * holder in O(1) however far it is from the window (cairn__dist_peer_url),
 * and the set that answers "does v hold f" stays in step with the list of
 * holders through a bad copy and a ban. The measure is the count of
 * candidates handed out in windows (cairn__dist.scan_work), not a clock.
 * A ban forgets a volunteer's holdings of thousands of files a bounded
 * part of the file table at a time (cairn__dist_forget_step). A core on a
 * real SQLite file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c"
#define CLUSTERS 10
#define ASKS 20

/* Worker i's peer URL. */
static void peer_url(int i, char *out, size_t len) {
  snprintf(out, len, "http://127.0.0.%d:%d", 1 + i / 50000, 10000 + i % 50000);
}

/* Registers worker i in cluster c<cluster>, with its peer URL; its id. */
static int64_t reg(cairn__core *c, int i, int cluster) {
  char *apps[] = {"big"}, token[65], peer[64], name[32], label[16];
  int64_t id = 0, vid = 0;
  cairn_error err = {0};
  peer_url(i, peer, sizeof peer);
  snprintf(name, sizeof name, "w%d", i);
  snprintf(label, sizeof label, "c%d", cluster);
  if (cairn__core_register(c, name, label, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK ||
      cairn__core_auth(c, token, &vid, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return vid;
}

/* v asks for work; the cluster of the source the master named for its
 * copy of SHA ("" for the master, NULL when it named none). */
static const char *ask(cairn__core *c, int64_t v) {
  static cairn__vol_info src;
  json_t *w = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  json_decref(w);
  int64_t from = -1; /* -1: none named, 0: the master */
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  for (uint32_t i = 0; f && i < f->nxfers; i++)
    if (f->xfers[i].to == v)
      from = f->xfers[i].from;
  cairn__core_unlock(c);
  if (from <= 0)
    return from ? NULL : "";
  src = core_fixture_vol(c, from);
  return src.cluster;
}

/* holders, and whether the holding set agrees with the list */
static uint32_t holders(cairn__core *c, int *agree) {
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  uint32_t n = f->nholders;
  int ok = f->held.count == n;
  for (uint32_t i = 0; i < n; i++)
    ok &= cairn__hmap_get(&f->held, (uint64_t)f->holders[i].vol) != NULL;
  cairn__core_unlock(c);
  *agree = ok;
  return n;
}

static uint64_t scan_work(cairn__core *c) {
  pthread_mutex_lock(&c->lock);
  uint64_t n = c->dist->scan_work;
  cairn__core_unlock(c);
  return n;
}

/* ASKS new workers of cluster c3 ask; each must be sent to a holder of c3;
 * returns the candidates their decisions looked at. */
static uint64_t asks(cairn__core *c, int *next) {
  uint64_t before = scan_work(c);
  for (int i = 0; i < ASKS; i++) {
    const char *from = ask(c, reg(c, (*next)++, 3));
    assert_non_null(from);
    assert_string_equal(from, "c3");
  }
  return scan_work(c) - before;
}

static void test_many_holders(void **state) {
  core_fixture *fx = *state;
  cairn__core *c = fx->c;
  core_fixture_broadcast_job(c, SHA, 1000, 4 * ASKS);
  int next = 0, agree = 0;
  int64_t far = 0;
  int far_i = 0;
  /* 300 holders (a little over one window), then 3,000 */
  for (; next < 300; next++)
    core_fixture_have(c, reg(c, next, next % CLUSTERS), SHA);
  uint64_t small = asks(c, &next);
  int first_new = next;
  for (; next < first_new + 2700; next++) {
    int64_t v = reg(c, next, next % CLUSTERS);
    core_fixture_have(c, v, SHA);
    far = v; /* the last holder: far from any window so far */
    far_i = next;
  }
  uint64_t big = asks(c, &next);
  /* each decision: at most a window of holders and copies, one of copies,
   * and the plan's (two windows); never all 3,000 */
  assert_true(small <= (uint64_t)ASKS * 4 * CAIRN__DIST_SCAN);
  assert_true(big <= (uint64_t)ASKS * 4 * CAIRN__DIST_SCAN);
  assert_true(big < 3000ull * ASKS);
  uint32_t n = holders(c, &agree);
  assert_true(agree);
  /* a worker of far's cluster reports a bad copy from far's URL: far is
   * found by its URL and is no holder any more */
  int64_t reporter = reg(c, next++, (int)(far - 1) % CLUSTERS);
  char source[160], url[64];
  peer_url(far_i, url, sizeof url);
  snprintf(source, sizeof source, "%s/v1/files/%s?grant=x", url, SHA);
  static cairn__report fr;
  memset(&fr, 0, sizeof fr);
  fr.fields = CAIRN_FEAT_FAILED;
  fr.failed[0] = (cairn__report_failed){SHA, source, CAIRN_FAIL_DIGEST};
  fr.nfailed = 1;
  core_fixture_heartbeat(c, reporter, &fr);
  assert_int_equal(holders(c, &agree), n - 1);
  assert_true(agree);
  /* a banned holder holds nothing */
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, 1, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  assert_int_equal(holders(c, &agree), n - 2);
  assert_true(agree);
}

/* The file table's size now, and how many files v holds (under the lock). */
static size_t table_cap(cairn__core *c) {
  pthread_mutex_lock(&c->lock);
  size_t cap = c->dist->files.cap;
  cairn__core_unlock(c);
  return cap;
}

static size_t held_by(cairn__core *c, int64_t v) {
  size_t n = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->dist->files.cap; i++)
    if (c->dist->files.keys[i])
      n += cairn__dist_holds(c->dist->files.vals[i], v);
  cairn__core_unlock(c);
  return n;
}

/* NFILES stored files, all held by one volunteer and half by another: a
 * ban forgets the banned one's holdings CAIRN__BAN_FILES buckets of the
 * table at a time (cairn__dist_forget_step), never the whole table in one
 * hold of the lock, is never named as a source meanwhile, and ends with
 * none of them; a table grown during the steps is visited again. */
enum { NFILES = 6000 };

static void add_files(cairn__core *c, int from, int to, int64_t all, int64_t half) {
  for (int i = from; i < to; i++) {
    char sha[65];
    snprintf(sha, sizeof sha, "%016x%048x", i + 1, 0); /* the key: the first 16 */
    int existed = 0;
    cairn_error err = {0};
    assert_int_equal(cairn__core_add_file(c, sha, 10, &existed, &err), CAIRN_OK);
    pthread_mutex_lock(&c->lock);
    assert_int_equal(cairn__dist_restore_holder(c, cairn__vol_find_locked(c, all), sha, 1), 0);
    if (i % 2 == 0)
      assert_int_equal(cairn__dist_restore_holder(c, cairn__vol_find_locked(c, half), sha, 1), 0);
    cairn__core_unlock(c);
  }
}

/* Two volunteers: *bad holding NFILES files, *good half of them; the file
 * table's size. */
static size_t many_holdings(cairn__core *c, int64_t *bad, int64_t *good) {
  *bad = reg(c, 0, 0);
  *good = reg(c, 1, 0);
  add_files(c, 0, NFILES, *bad, *good);
  return table_cap(c);
}

static void test_ban_forgets_in_steps(void **state) {
  core_fixture *fx = *state;
  cairn__core *c = fx->c;
  int64_t bad, good;
  size_t cap = many_holdings(c, &bad, &good);
  assert_true(cap >= 2 * CAIRN__BAN_FILES); /* so that it takes several steps */
  assert_int_equal(held_by(c, bad), NFILES);
  pthread_mutex_lock(&c->lock);
  mvol *bv = cairn__vol_find_locked(c, bad);
  cairn__ban_mark(c, bv, "test"); /* the ban's first step: it tells dist to forget bv */
  int steps = 0, done = 0;
  while (!done) { /* the ban's slices, their file table part only */
    size_t at = bv->forget_cap == c->dist->files.cap ? bv->forget_at : 0;
    done = cairn__dist_forget_step(c, bv, CAIRN__BAN_FILES);
    steps++;
    assert_true(done || bv->forget_at - at == CAIRN__BAN_FILES);
    if (steps == 1) { /* the table grows between two steps: all again */
      cairn__core_unlock(c);
      add_files(c, NFILES, 3 * NFILES, bad, good);
      pthread_mutex_lock(&c->lock);
    }
  }
  size_t grown = c->dist->files.cap;
  cairn__core_unlock(c);
  assert_true(grown > cap);
  /* one step before the growth, then the grown table from its start */
  assert_int_equal(steps, 1 + (int)((grown + CAIRN__BAN_FILES - 1) / CAIRN__BAN_FILES));
  assert_int_equal(held_by(c, bad), 0);
  assert_int_equal(held_by(c, good), 3 * NFILES / 2);
}

/* The ban itself takes its steps: a volunteer with no result and NFILES
 * holdings is banned in ceil(table / CAIRN__BAN_FILES) slices, and holds
 * nothing after. */
static void test_ban_slices_forget(void **state) {
  core_fixture *fx = *state;
  cairn__core *c = fx->c;
  int64_t bad, good;
  size_t cap = many_holdings(c, &bad, &good);
  uint64_t bans, before, after, hold;
  pthread_mutex_lock(&c->lock);
  cairn__ban_counts(c, &bans, &before, &hold);
  cairn__core_unlock(c);
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, bad, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  assert_int_equal(held_by(c, bad), 0);
  assert_int_equal(held_by(c, good), NFILES / 2);
  pthread_mutex_lock(&c->lock);
  cairn__ban_counts(c, &bans, &after, &hold);
  uint64_t slices = after - before;
  cairn__core_unlock(c);
  assert_int_equal(slices, (cap + CAIRN__BAN_FILES - 1) / CAIRN__BAN_FILES - 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_many_holders, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_ban_forgets_in_steps, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_ban_slices_forget, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
