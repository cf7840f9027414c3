/* test_mcast.c — the multicast plan of outputs kept on workers
 * (server/dist/mcast.c) on a core over a real SQLite file: kept files held by
 * different workers, each needed by many workers.
 *   - a plan covers at most CAIRN__MCAST_NODES workers: the receivers past
 *     them get no planned sender (the online rule);
 *   - every planned sender handed out is a holder of that file (the other
 *     planned senders, receivers still without the file, are not named);
 *   - needs past CAIRN__MCAST_NEEDS are not tracked, and a need met (the
 *     worker holds the file) leaves the plan at its next build;
 *   - the plan is not rebuilt while the needs stay the same, nor within the
 *     second for a worker whose needs it has;
 *   - "online" plans nothing, and an unknown planner is refused by name;
 *   - WR with the clusters' uplinks: a file crosses into the other
 *     cluster once and is relayed inside it; a worker whose input is
 *     landing in its cluster (and not held there) waits for it, at most
 *     10 s, and not once a worker there holds it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define NHOLD 4
#define NRECV 70

/* Registers a worker of cluster with a peer URL of its own; its record,
 * for the plan's functions. */
static mvol *reg(cairn__core *c, const char *name, const char *cluster) {
  static int port = 20000;
  char *apps[] = {"sum"}, token[65], url[64];
  int64_t id = 0;
  cairn_error err = {0};
  snprintf(url, sizeof url, "http://127.0.0.1:%d", port++);
  if (cairn__core_register(c, name, cluster, apps, 1, 1, url, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return core_fixture_mvol(c, id);
}

/* Kept file k (recorded without bytes) held by holder h. */
static mfilerec *kept(cairn__core *c, int k, mvol *h) {
  char sha[65];
  memset(sha, 'a' + k, 64);
  sha[64] = '\0';
  assert_int_equal(cairn__dist_restore_file(c->dist, sha, 4 << 20), 0);
  cairn__dist_set_remote(c->dist, sha, 1);
  assert_int_equal(cairn__dist_restore_holder(c, h, sha, cairn__now()), 0);
  return cairn__dist_file_of(c->dist, sha);
}

static void test_bounds(void **state) {
  core_fixture *fx = *state;
  cairn__core *c = fx->c;
  cairn_error err = {0};
  assert_int_equal(cairn__core_set_mcast(c, "Work-Racing", &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "WR, WRP, CDMD, online"));
  assert_int_equal(cairn__core_set_mcast(c, "WR", &err), CAIRN_OK);
  mvol *hold[NHOLD], *recv[NRECV];
  mfilerec *f[NHOLD];
  char name[16];
  for (int i = 0; i < NHOLD; i++) {
    snprintf(name, sizeof name, "h%d", i);
    hold[i] = reg(c, name, i % 2 ? "b" : "a");
    f[i] = kept(c, i, hold[i]);
  }
  for (int i = 0; i < NRECV; i++) {
    snprintf(name, sizeof name, "r%d", i);
    recv[i] = reg(c, name, i % 2 ? "b" : "a");
  }
  pthread_mutex_lock(&c->lock);
  int64_t now = cairn__now();
  /* 70 × 4 = 280 needs: the first 256 are tracked */
  for (int i = 0; i < NRECV; i++)
    for (int k = 0; k < NHOLD; k++)
      cairn__mcast_need(c, recv[i], f[k], now);
  cairn__mcast_plan(c, recv[0], now);
  assert_int_equal(c->dist->n.mcast_plans, 1);
  int named = 0, last = -1;
  for (int i = 0; i < NRECV; i++)
    for (int k = 0; k < NHOLD; k++) {
      int wait = 0;
      int64_t s = cairn__mcast_sender(c, f[k], recv[i], now, &wait);
      assert_false(wait); /* no copy is under way to any planned relay */
      if (!s)
        continue;
      assert_int_equal(s, hold[k]->id); /* the only holder of f[k] */
      named++;
      last = i;
    }
  /* the holders and the first 28 receivers: 32 workers */
  assert_true(named >= 1);
  assert_true(last < CAIRN__MCAST_NODES - NHOLD);
  /* the same needs: no new plan, even for a worker the plan lacks */
  cairn__mcast_need(c, recv[NRECV - 1], f[0], now); /* not tracked: 256 already */
  cairn__mcast_plan(c, recv[NRECV - 1], now);
  cairn__mcast_plan(c, recv[1], now);
  assert_int_equal(c->dist->n.mcast_plans, 1);
  /* a new need of a worker the full plan (32 workers) lacks: no rebuild
   * within the second */
  cairn__mcast_have(c->dist, recv[40]->id, f[3]->sha256);
  cairn__mcast_need(c, recv[40], f[3], now);
  cairn__mcast_plan(c, recv[40], now);
  assert_int_equal(c->dist->n.mcast_plans, 1);
  /* r0 holds f0 now: its need goes; the plan lacks nobody asking, so it
   * waits for the next second */
  assert_int_equal(cairn__dist_restore_holder(c, recv[0], f[0]->sha256, now), 0);
  cairn__mcast_have(c->dist, recv[0]->id, f[0]->sha256);
  cairn__mcast_plan(c, recv[1], now);
  assert_int_equal(c->dist->n.mcast_plans, 1);
  cairn__mcast_plan(c, recv[1], now + 1);
  assert_int_equal(c->dist->n.mcast_plans, 2);
  /* r0 may now serve f0: a holder, named when planned */
  for (int i = 1; i < NRECV; i++) {
    int wait = 0;
    int64_t s = cairn__mcast_sender(c, f[0], recv[i], now + 1, &wait);
    assert_true(s == 0 || s == hold[0]->id || s == recv[0]->id);
  }
  cairn__core_unlock(c);
  /* online: nothing planned */
  assert_int_equal(cairn__core_set_mcast(c, "online", &err), CAIRN_OK);
  pthread_mutex_lock(&c->lock);
  cairn__mcast_need(c, recv[5], f[1], now + 2);
  cairn__mcast_plan(c, recv[5], now + 2);
  assert_int_equal(c->dist->n.mcast_plans, 2);
  cairn__core_unlock(c);
}

/* Cluster a: h0 (holds f), a1; cluster b: b1, b2, and b3 whose need
 * comes after the plan. */
static void test_relay_inside(void **state) {
  core_fixture *fx = *state;
  cairn__core *c = fx->c;
  cairn_error err = {0};
  assert_int_equal(cairn__core_set_mcast(c, "WR", &err), CAIRN_OK);
  mvol *h0 = reg(c, "h0", "a"), *a1 = reg(c, "a1", "a"), *b[3];
  b[0] = reg(c, "b1", "b");
  b[1] = reg(c, "b2", "b");
  b[2] = reg(c, "b3", "b");
  mfilerec *f = kept(c, 0, h0);
  pthread_mutex_lock(&c->lock);
  int64_t now = cairn__now();
  cairn__mcast_need(c, a1, f, now);
  cairn__mcast_need(c, b[0], f, now);
  cairn__mcast_need(c, b[1], f, now);
  cairn__mcast_plan(c, b[0], now);
  assert_int_equal(c->dist->n.mcast_plans, 1);
  /* one of b1, b2 gets f from h0 across; the other from it, inside b */
  int wait = 0, across = 0, first = -1;
  for (int i = 0; i < 2; i++)
    if (cairn__mcast_sender(c, f, b[i], now, &wait) == h0->id) {
      across++;
      first = i;
    }
  assert_int_equal(across, 1);
  assert_int_equal(cairn__mcast_sender(c, f, a1, now, &wait), h0->id);
  assert_false(wait);
  /* the copy across is handed out: the other waits for its planned relay,
   * and b3 (no route yet) for the copy landing in its cluster */
  assert_int_equal(cairn__dist_add_xfer(f, b[first]->id, h0->id, 0, now), 0);
  assert_int_equal(cairn__mcast_sender(c, f, b[1 - first], now, &wait), 0);
  assert_true(wait);
  cairn__mcast_need(c, b[2], f, now);
  assert_int_equal(cairn__mcast_sender(c, f, b[2], now, &wait), 0);
  assert_true(wait);
  assert_int_equal(cairn__mcast_sender(c, f, b[2], now + 11, &wait), 0);
  assert_false(wait); /* the wait is over: the online rule */
  /* b's first holds f: nobody in b waits, b3 goes to the online rule
   * (its own cluster's holder first) */
  assert_int_equal(cairn__dist_restore_holder(c, b[first], f->sha256, now), 0);
  assert_int_equal(cairn__mcast_sender(c, f, b[2], now, &wait), 0);
  assert_false(wait);
  assert_int_equal(cairn__mcast_sender(c, f, b[1 - first], now, &wait), b[first]->id);
  cairn__core_unlock(c);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_bounds, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_relay_inside, core_fixture_setup, core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
