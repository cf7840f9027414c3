/* test_ratelimit.c — the token buckets of server/conn/ratelimit.h: a burst, then
 * the rate; the wait it names; a limited key keeps its bucket while other
 * keys churn through a full table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "server/conn/ratelimit.h"

static void test_burst_then_rate(void **state) {
  (void)state;
  cairn__ratelimit *rl = cairn__rl_create(2.0, 5.0, 64); /* 2 a second, burst 5 */
  assert_non_null(rl);
  for (int i = 0; i < 5; i++)
    assert_true(cairn__rl_take(rl, 42, 100.0) == 0);
  double wait = cairn__rl_take(rl, 42, 100.0);
  assert_true(fabs(wait - 0.5) < 1e-9); /* one token comes every 0.5 s */
  assert_true(cairn__rl_take(rl, 42, 100.25) > 0);
  assert_true(cairn__rl_take(rl, 42, 100.5) == 0);
  assert_true(cairn__rl_take(rl, 42, 100.5) > 0);
  /* another key has its own bucket */
  assert_true(cairn__rl_take(rl, 7, 100.5) == 0);
  /* a long pause refills to the burst, not beyond */
  for (int i = 0; i < 5; i++)
    assert_true(cairn__rl_take(rl, 42, 1000.0) == 0);
  assert_true(cairn__rl_take(rl, 42, 1000.0) > 0);
  cairn__rl_destroy(rl);
}

static void test_limited_key_survives_churn(void **state) {
  (void)state;
  cairn__ratelimit *rl = cairn__rl_create(1.0, 3.0, 8); /* one probe window */
  assert_non_null(rl);
  for (int i = 0; i < 3; i++)
    assert_true(cairn__rl_take(rl, 99, 0.0) == 0);
  assert_true(cairn__rl_take(rl, 99, 0.0) > 0);
  /* 1,000 other addresses pass through the 8 slots */
  for (uint64_t k = 1000; k < 2000; k++)
    assert_true(cairn__rl_take(rl, k, 0.0) == 0);
  assert_true(cairn__rl_take(rl, 99, 0.0) > 0); /* still limited */
  assert_null(cairn__rl_create(1.0, 3.0, 12));   /* not a power of two */
  assert_null(cairn__rl_create(0.0, 3.0, 64));
  cairn__rl_destroy(rl);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_burst_then_rate),
    cmocka_unit_test(test_limited_key_survives_churn),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
