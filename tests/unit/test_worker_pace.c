/* test_worker_pace.c — the worker's one retry policy for a master that asks
 * it to wait (worker/backoff.h): which answers name a wait and how long it
 * is taken (capped at 300 s), the hold every later call honours with its
 * jitter, the spacing of calls while limited and its end after a calm
 * spell. Pure functions over a clock the test gives. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "worker/backoff.h"

static void test_named_waits(void **state) {
  (void)state;
  assert_int_equal(cairn__retry_named_ms(429, 2, -1), 2000);
  assert_int_equal(cairn__retry_named_ms(503, 1, 250), 250); /* the finer header wins */
  assert_int_equal(cairn__retry_named_ms(429, -1, -1), -1);  /* no header: no named wait */
  assert_int_equal(cairn__retry_named_ms(204, 1, 300), -1);  /* only 429 and 503 hold calls */
  assert_int_equal(cairn__retry_named_ms(500, 5, -1), -1);
  assert_int_equal(cairn__retry_named_ms(429, 86400, -1), CAIRN__RETRY_AFTER_MAX_MS);
  assert_int_equal(cairn__retry_named_ms(429, 1, 900000000), CAIRN__RETRY_AFTER_MAX_MS);
  assert_int_equal(cairn__retry_named_ms(429, 0x7fffffffL, -1), CAIRN__RETRY_AFTER_MAX_MS);
}

static void test_hold_and_spacing(void **state) {
  (void)state;
  cairn__pace p;
  cairn__pace_init(&p);
  long long now = 1000000, issued = 0;
  /* calm: every call goes at once */
  for (int i = 0; i < 5; i++)
    assert_int_equal(cairn__pace_turn(&p, now, &issued), 0);
  long long before = issued;
  /* a 429 naming 1000 ms holds every later call 1000 to 1100 ms */
  assert_int_equal(cairn__pace_pending(&p, now), 0);
  cairn__pace_note(&p, 1000, before, now);
  long pending = cairn__pace_pending(&p, now); /* what a worker of several projects skips */
  assert_true(pending >= 1000 && pending <= 1100);
  assert_int_equal(cairn__pace_pending(&p, now + pending), 0);
  long w = cairn__pace_turn(&p, now, &issued);
  assert_true(w >= 1000 && w <= 1100);
  /* the next calls are spaced by the interval (plus up to 5%) */
  long long prev = issued;
  for (int i = 0; i < 4; i++) {
    cairn__pace_turn(&p, now, &issued);
    assert_true(issued - prev >= 1000 && issued - prev <= 1050);
    prev = issued;
  }
  /* a paced call still refused widens the spacing by its named wait */
  cairn__pace_note(&p, 400, prev, prev + 5);
  long long a = 0, b = 0;
  cairn__pace_turn(&p, prev + 5, &a);
  cairn__pace_turn(&p, prev + 5, &b);
  assert_true(b - a >= 1400 && b - a <= 1400 + 70);
  /* a call sent before the spell began does not widen it */
  cairn__pace_note(&p, 300, before, prev + 6);
  cairn__pace_turn(&p, prev + 6, &a);
  cairn__pace_turn(&p, prev + 6, &b);
  assert_true(b - a >= 1400 && b - a <= 1400 + 70);
  /* a minute without a named wait: calm again once the held turns pass */
  long long later = b + CAIRN__PACE_CALM_MS + 1000;
  assert_int_equal(cairn__pace_turn(&p, later, &issued), 0);
  assert_int_equal(cairn__pace_turn(&p, later, &issued), 0);
  assert_true(p.limited_total == 3);
  cairn__pace_destroy(&p);
}

static void test_wait_capped(void **state) {
  (void)state;
  cairn__pace p;
  cairn__pace_init(&p);
  long long issued = 0;
  cairn__pace_note(&p, cairn__retry_named_ms(503, 1L << 30, -1), 0, 0);
  long w = cairn__pace_turn(&p, 0, &issued);
  assert_true(w >= CAIRN__RETRY_AFTER_MAX_MS && w <= CAIRN__RETRY_AFTER_MAX_MS * 11 / 10);
  cairn__pace_destroy(&p);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_named_waits),
    cmocka_unit_test(test_hold_and_spacing),
    cmocka_unit_test(test_wait_capped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
