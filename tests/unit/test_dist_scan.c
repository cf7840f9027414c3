/* test_dist_scan.c — a broadcast file held by many workers: the master's
 * source decision looks at CAIRN__DIST_SCAN of its holders and copies
 * under way at most (server/dist_int.h, cairn__dist_window), whatever
 * their number, yet still finds a holder in the asking worker's cluster
 * when its window has one; a report naming a holder's peer URL finds that
 * holder in O(1) however far it is from the window (cairn__dist_peer_url),
 * and the set that answers "does v hold f" stays in step with the list of
 * holders through a bad copy and a ban. The measure is the count of
 * candidates handed out in windows (cairn__dist.scan_work), not a clock.
 * A core on a real SQLite file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "server/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c"
#define CLUSTERS 10
#define ASKS 20

static mvol *reg(cairn_core *c, int i, int cluster) {
  char *apps[] = {"big"}, token[65], peer[64], name[32], label[16];
  int64_t id = 0, vid = 0;
  cairn_error err = {0};
  snprintf(peer, sizeof peer, "http://127.0.0.%d:%d", 1 + i / 50000, 10000 + i % 50000);
  snprintf(name, sizeof name, "w%d", i);
  snprintf(label, sizeof label, "c%d", cluster);
  if (cairn__core_register(c, name, label, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK ||
      cairn__core_auth(c, token, &vid, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return c->vols[vid - 1];
}

/* v asks for work; the cluster of the source the master named for its
 * copy of SHA ("" for the master, NULL when it named none). */
static const char *ask(cairn_core *c, mvol *v) {
  json_t *w = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work(c, v->id, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  json_decref(w);
  const char *from = NULL;
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  for (uint32_t i = 0; f && i < f->nxfers; i++)
    if (f->xfers[i].to == v->id)
      from = f->xfers[i].from ? c->vols[f->xfers[i].from - 1]->cluster : "";
  cairn__core_unlock(c);
  return from;
}

/* holders, and whether the holding set agrees with the list */
static uint32_t holders(cairn_core *c, int *agree) {
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  uint32_t n = f->nholders;
  int ok = f->held.count == n;
  for (uint32_t i = 0; i < n; i++)
    ok &= cairn_hmap_get(&f->held, (uint64_t)f->holders[i].vol) != NULL;
  cairn__core_unlock(c);
  *agree = ok;
  return n;
}

static uint64_t scan_work(cairn_core *c) {
  pthread_mutex_lock(&c->lock);
  uint64_t n = c->dist->scan_work;
  cairn__core_unlock(c);
  return n;
}

/* ASKS new workers of cluster c3 ask; each must be sent to a holder of c3;
 * returns the candidates their decisions looked at. */
static uint64_t asks(cairn_core *c, int *next) {
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
  cairn_core *c = fx->c;
  core_fixture_broadcast_job(c, SHA, 1000, 4 * ASKS);
  int next = 0, agree = 0;
  mvol *far = NULL;
  /* 300 holders (a little over one window), then 3,000 */
  for (; next < 300; next++)
    core_fixture_have(c, reg(c, next, next % CLUSTERS)->id, SHA);
  uint64_t small = asks(c, &next);
  int first_new = next;
  for (; next < first_new + 2700; next++) {
    mvol *v = reg(c, next, next % CLUSTERS);
    core_fixture_have(c, v->id, SHA);
    far = v; /* the last holder: far from any window so far */
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
  mvol *reporter = reg(c, next++, (int)(far->id - 1) % CLUSTERS);
  char source[160];
  snprintf(source, sizeof source, "%s/v1/files/%s?grant=x", far->peer_url, SHA);
  static cairn_report fr;
  memset(&fr, 0, sizeof fr);
  fr.fields = CAIRN_FEAT_FAILED;
  fr.failed[0] = (cairn_report_failed){SHA, source, CAIRN_FAIL_DIGEST};
  fr.nfailed = 1;
  core_fixture_heartbeat(c, reporter->id, &fr);
  assert_int_equal(holders(c, &agree), n - 1);
  assert_true(agree);
  /* a banned holder holds nothing */
  json_t *report = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_ban(c, c->vols[0]->id, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  assert_int_equal(holders(c, &agree), n - 2);
  assert_true(agree);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_many_holders, core_fixture_setup, core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
