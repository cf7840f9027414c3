/* test_respool.c — the worker's local resource pool (worker/respool.h):
 * takes what fits, refuses at once what exceeds the offer, makes a thread
 * wait until another gives back enough, gives up when cancelled, keeps the
 * peak; and the machine's offer (/proc/meminfo parsing, detection). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/old_master.h"
#include "worker/session.h"
#include "worker/respool.h"

static void test_take_and_give_back(void **state) {
  (void)state;
  cairn__respool p;
  assert_int_equal(cairn__respool_init(&p, &(cairn__resources){4, 1000, 0}), 0);
  cairn__resources four = {4, 0, 0}, one = {1, 0, 0}, mem = {1, 600, 0};
  assert_int_equal(cairn__respool_try(&p, &four), CAIRN__POOL_TAKEN);
  assert_int_equal(cairn__respool_try(&p, &one), CAIRN__POOL_BUSY);
  assert_int_equal(cairn__respool_try(&p, &(cairn__resources){5, 0, 0}), CAIRN__POOL_NEVER);
  assert_int_equal(cairn__respool_try(&p, &(cairn__resources){1, 1001, 0}), CAIRN__POOL_NEVER);
  assert_int_equal(cairn__respool_try(&p, &(cairn__resources){1, 0, 1}), CAIRN__POOL_NEVER);
  cairn__respool_release(&p, &four);
  assert_int_equal(cairn__respool_acquire(&p, &mem, NULL), CAIRN__POOL_TAKEN);
  /* cores are free but memory is not */
  assert_int_equal(cairn__respool_try(&p, &mem), CAIRN__POOL_BUSY);
  assert_int_equal(cairn__respool_try(&p, &one), CAIRN__POOL_TAKEN);
  cairn__resources used, peak;
  cairn__respool_usage(&p, &used, &peak);
  assert_true(cairn__resources_equal(&used, &(cairn__resources){2, 600, 0}));
  assert_true(cairn__resources_equal(&peak, &(cairn__resources){4, 600, 0}));
  cairn__respool_release(&p, &one);
  cairn__respool_release(&p, &mem);
  cairn__respool_usage(&p, &used, NULL);
  assert_true(cairn__resources_equal(&used, &(cairn__resources){0, 0, 0}));
  cairn__respool_destroy(&p);
}

typedef struct waiter {
  cairn__respool *p;
  atomic_int released; /* set by the main thread just before it gives back */
  int rc, saw_released;
} waiter;

static void *wait_for_core(void *arg) {
  waiter *w = arg;
  w->rc = cairn__respool_acquire(w->p, &(cairn__resources){2, 0, 0}, NULL);
  w->saw_released = atomic_load(&w->released);
  return NULL;
}

static void test_waits_until_given_back(void **state) {
  (void)state;
  cairn__respool p;
  assert_int_equal(cairn__respool_init(&p, &(cairn__resources){4, 0, 0}), 0);
  cairn__resources three = {3, 0, 0};
  assert_int_equal(cairn__respool_try(&p, &three), CAIRN__POOL_TAKEN);
  waiter w = {.p = &p};
  atomic_init(&w.released, 0);
  pthread_t th;
  assert_int_equal(pthread_create(&th, NULL, wait_for_core, &w), 0);
  atomic_store(&w.released, 1);
  cairn__respool_release(&p, &three);
  pthread_join(th, NULL);
  assert_int_equal(w.rc, CAIRN__POOL_TAKEN);
  assert_int_equal(w.saw_released, 1); /* it got its 2 cores only once 3 came back */
  cairn__resources peak;
  cairn__respool_usage(&p, NULL, &peak);
  assert_true(peak.cores <= 4);
  cairn__respool_destroy(&p);
}

static void test_cancelled(void **state) {
  (void)state;
  cairn__respool p;
  cairn__stopper s;
  assert_int_equal(cairn__respool_init(&p, &(cairn__resources){1, 0, 0}), 0);
  assert_int_equal(cairn__stopper_init(&s), 0);
  atomic_int lost;
  atomic_init(&lost, 1); /* the lease was lost while waiting */
  cairn__cancel cancel = {&s, &lost, NULL};
  assert_int_equal(cairn__respool_try(&p, &(cairn__resources){1, 0, 0}), CAIRN__POOL_TAKEN);
  assert_int_equal(cairn__respool_acquire(&p, &(cairn__resources){1, 0, 0}, &cancel),
                   CAIRN__POOL_CANCELLED);
  /* never fits: refused at once, cancelled or not */
  assert_int_equal(cairn__respool_acquire(&p, &(cairn__resources){2, 0, 0}, NULL),
                   CAIRN__POOL_NEVER);
  cairn__stopper_destroy(&s);
  cairn__respool_destroy(&p);
}

static void test_detect(void **state) {
  (void)state;
  assert_int_equal(cairn__meminfo_mib("MemTotal:       16384000 kB\n"
                                      "MemFree:         1000 kB\n"
                                      "MemAvailable:    8192000 kB\n"), 8000);
  assert_int_equal(cairn__meminfo_mib("MemTotal:    2048 kB\nSwapTotal: 0 kB\n"), 2);
  assert_int_equal(cairn__meminfo_mib("nothing here\n"), -1);
  assert_int_equal(cairn__meminfo_mib("MemAvailable: x kB\n"), -1);
  cairn__resources r;
  cairn__resources_detect("/", &r);
  assert_true(r.cores >= 1 && r.cores <= CAIRN_MAX_CORES);
  assert_true(r.memory_mib > 0 && r.memory_mib <= CAIRN_MAX_RES_MIB);
  assert_true(r.disk_mib >= 0 && r.disk_mib <= CAIRN_MAX_RES_MIB);
}

/* The offer goes as "resources" only to a master that lists the feature;
 * an older master gets the old body (never a 400). */
static void test_offer_reported(void **state) {
  (void)state;
  static const struct {
    int features;
    int carries;
  } masters[] = {
    {-1, 0}, /* no feature list: the earliest master */
    {(int)(CAIRN_FEATURES_ALL & ~CAIRN_FEAT_RESOURCES), 0},
    {(int)CAIRN_FEATURES_ALL, 1},
  };
  for (size_t i = 0; i < sizeof masters / sizeof masters[0]; i++) {
    cairn__peerstate ps;
    old_master m;
    assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
    assert_int_equal(old_master_start(&m, masters[i].features), 0);
    m.offer = (cairn__resources){4, 2048, 100};
    /* the first heartbeat learns the features, the second reports */
    assert_int_equal(old_master_heartbeat(&m, &ps, NULL, 0), 0);
    assert_int_equal(old_master_heartbeat(&m, &ps, NULL, 0), 0);
    assert_int_equal(m.n, 2);
    assert_string_equal(m.bodies[0], "{}");
    if (masters[i].carries)
      assert_non_null(strstr(m.bodies[1],
                             "\"resources\":{\"cores\":4,\"memory_mib\":2048,\"disk_mib\":100}"));
    else
      assert_null(strstr(m.bodies[1], "resources"));
    old_master_stop(&m);
    cairn__peerstate_destroy(&ps);
  }
}

/* A registration carries the offer only when the master is known to take
 * it (a re-registration after features were learnt). */
static void test_offer_in_registration(void **state) {
  (void)state;
  static const int known[] = {-1, (int)(CAIRN_FEATURES_ALL & ~CAIRN_FEAT_RESOURCES),
                              (int)CAIRN_FEATURES_ALL};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++) {
    cairn__peerstate ps;
    old_master m;
    char base[64], dir[4096], cred[4200];
    const char *apps[] = {"sleep"};
    cairn__registration reg = {"w", NULL, apps, 1, 2, {0, 0, 0}, NULL, NULL, NULL, NULL, NULL};
    cairn__session s;
    cairn_error err = {0};
    assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
    if (known[i] >= 0)
      cairn__peerstate_set_features(&ps, (unsigned)known[i]);
    assert_int_equal(old_master_start(&m, (int)CAIRN_FEATURES_ALL), 0);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", m.port);
    harness_tmpdir(dir, sizeof dir);
    snprintf(cred, sizeof cred, "%s/credentials.json", dir);
    assert_int_equal(cairn__session_init(&s, cred, &reg, NULL, &err), CAIRN_OK);
    s.peers = &ps;
    s.offer = (cairn__resources){4, 2048, 100};
    cairn__conn c = {cairn__http_create(base), 0, 0};
    /* the stand-in's answer is no registration: refused, but the body is kept */
    assert_int_equal(cairn__session_open(&s, &c, &err), CAIRN_EINVAL);
    assert_int_equal(m.n, 1);
    if (known[i] == (int)CAIRN_FEATURES_ALL)
      assert_non_null(strstr(m.bodies[0],
                             "\"resources\":{\"cores\":4,\"memory_mib\":2048,\"disk_mib\":100}"));
    else
      assert_null(strstr(m.bodies[0], "resources"));
    cairn__http_delete(c.http);
    cairn__session_destroy(&s);
    old_master_stop(&m);
    cairn__peerstate_destroy(&ps);
    rmdir(dir);
  }
}

/* "team" goes in a registration to a master that lists "cpu" or has not
 * said; one that lists features without it never sees it; one older than
 * teams refuses it (400 unknown field), and the worker registers again
 * without it. */
static void test_team_in_registration(void **state) {
  (void)state;
  static const struct { int known, master, bodies, first_has_team; } cases[] = {
    {-1, (int)CAIRN_FEATURES_ALL, 1, 1},                  /* not said yet, takes it */
    {(int)CAIRN_FEATURES_ALL, (int)CAIRN_FEATURES_ALL, 1, 1},
    {(int)(CAIRN_FEATURES_ALL & ~CAIRN_FEAT_CPU), -1, 1, 0}, /* said: no "cpu" */
    {-1, -1, 2, 1},                                      /* not said, refuses it */
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    cairn__peerstate ps;
    old_master m;
    char base[64], dir[4096], cred[4200];
    const char *apps[] = {"sleep"};
    cairn__registration reg = {"w", NULL, apps, 1, 1, {0, 0, 0}, NULL, "red team", NULL, NULL, NULL};
    cairn__session s;
    cairn_error err = {0};
    assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
    if (cases[i].known >= 0)
      cairn__peerstate_set_features(&ps, (unsigned)cases[i].known);
    assert_int_equal(old_master_start(&m, cases[i].master), 0);
    snprintf(base, sizeof base, "http://127.0.0.1:%u", m.port);
    harness_tmpdir(dir, sizeof dir);
    snprintf(cred, sizeof cred, "%s/credentials.json", dir);
    assert_int_equal(cairn__session_init(&s, cred, &reg, NULL, &err), CAIRN_OK);
    s.peers = &ps;
    cairn__conn c = {.http = cairn__http_create(base)};
    assert_int_equal(cairn__session_open(&s, &c, &err), CAIRN_EINVAL); /* no registration */
    assert_int_equal(m.n, cases[i].bodies);
    if (cases[i].first_has_team)
      assert_non_null(strstr(m.bodies[0], "\"team\":\"red team\""));
    else
      assert_null(strstr(m.bodies[0], "team"));
    if (cases[i].bodies == 2)
      assert_null(strstr(m.bodies[1], "team"));
    cairn__http_delete(c.http);
    cairn__session_destroy(&s);
    old_master_stop(&m);
    cairn__peerstate_destroy(&ps);
    rmdir(dir);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_team_in_registration),
    cmocka_unit_test(test_take_and_give_back),
    cmocka_unit_test(test_waits_until_given_back),
    cmocka_unit_test(test_cancelled),
    cmocka_unit_test(test_detect),
    cmocka_unit_test(test_offer_reported),
    cmocka_unit_test(test_offer_in_registration),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
