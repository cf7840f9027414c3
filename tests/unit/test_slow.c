/* test_slow.c — the slow lane (server/conn/slow.h): requests run one at a time
 * in the order queued, each followed by the resume of its connection; at
 * most CAIRN__SLOW_CAP queued or running, the next refused with nothing
 * queued; a stop lets the running one finish, cancels the queued ones
 * (each still resumed, after its cancel), and refuses new ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>
#include <unistd.h>

#include "server/conn/slow.h"

/* What happened, in order: +id for a run, -id for a cancel, 100 + id for
 * a resume of connection id. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t changed = PTHREAD_COND_INITIALIZER;
static int events[64], nevents;
static int gate_open = 1; /* a run of id 1 waits until it is set */
static int started1;      /* set when the run of id 1 began */

static void note(int e) {
  pthread_mutex_lock(&mu);
  if (nevents < 64)
    events[nevents++] = e;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&mu);
}

static void run(void *arg) {
  int id = (int)(intptr_t)arg;
  pthread_mutex_lock(&mu);
  started1 |= id == 1;
  pthread_cond_broadcast(&changed);
  while (id == 1 && !gate_open)
    pthread_cond_wait(&changed, &mu);
  pthread_mutex_unlock(&mu);
  note(id);
}

static void cancel(void *arg) { note(-(int)(intptr_t)arg); }
static void resume(void *conn) { note(100 + (int)(intptr_t)conn); }

static void reset(int open) {
  pthread_mutex_lock(&mu);
  nevents = 0;
  gate_open = open;
  started1 = 0;
  pthread_mutex_unlock(&mu);
}

static void open_gate(void) {
  pthread_mutex_lock(&mu);
  gate_open = 1;
  pthread_cond_broadcast(&changed);
  pthread_mutex_unlock(&mu);
}

/* Waits until n events were noted. */
static void wait_events(int n) {
  pthread_mutex_lock(&mu);
  while (nevents < n)
    pthread_cond_wait(&changed, &mu);
  pthread_mutex_unlock(&mu);
}

static void *stop_thread(void *s) {
  cairn__slow_stop(s);
  return NULL;
}

static int submit(cairn__slow *s, int id) {
  return cairn__slow_submit(s, run, cancel, (void *)(intptr_t)id, (void *)(intptr_t)id);
}

static void test_in_order_then_resume(void **state) {
  (void)state;
  reset(1);
  cairn_error err = {0};
  cairn__slow *s = cairn__slow_create(resume, &err);
  assert_non_null(s);
  for (int id = 1; id <= 3; id++)
    assert_int_equal(submit(s, id), 0);
  wait_events(6);
  const int want[] = {1, 101, 2, 102, 3, 103};
  assert_memory_equal(events, want, sizeof want);
  while (cairn__slow_busy(s) != 0) /* it counts the last one until after its resume */
    usleep(1000);
  cairn__slow_destroy(s);
}

static void test_cap_then_stop_cancels_queued(void **state) {
  (void)state;
  reset(0); /* request 1 runs until the gate opens */
  cairn_error err = {0};
  cairn__slow *s = cairn__slow_create(resume, &err);
  assert_non_null(s);
  for (int id = 1; id <= (int)CAIRN__SLOW_CAP; id++)
    assert_int_equal(submit(s, id), 0);
  assert_int_equal(submit(s, 99), -1); /* full: refused, never run nor resumed */
  assert_int_equal(cairn__slow_busy(s), CAIRN__SLOW_CAP);
  pthread_mutex_lock(&mu);
  while (!started1) /* a stop before its run began would cancel it too */
    pthread_cond_wait(&changed, &mu);
  pthread_mutex_unlock(&mu);
  pthread_t stopper;
  assert_int_equal(pthread_create(&stopper, NULL, stop_thread, s), 0);
  usleep(50 * 1000); /* the stop waits for the running request */
  pthread_mutex_lock(&mu);
  assert_int_equal(nevents, 0);
  pthread_mutex_unlock(&mu);
  open_gate();
  pthread_join(stopper, NULL);
  int want[2 + 2 * (CAIRN__SLOW_CAP - 1)];
  want[0] = 1;
  want[1] = 101;
  for (int id = 2, i = 2; id <= (int)CAIRN__SLOW_CAP; id++) {
    want[i++] = -id;
    want[i++] = 100 + id;
  }
  assert_int_equal(nevents, (int)(sizeof want / sizeof want[0]));
  assert_memory_equal(events, want, sizeof want);
  assert_int_equal(submit(s, 7), -1); /* stopped: refused */
  assert_int_equal(cairn__slow_busy(s), 0);
  cairn__slow_destroy(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_in_order_then_resume),
      cmocka_unit_test(test_cap_then_stop_cancels_queued),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
