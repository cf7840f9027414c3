/* test_expavg.c — the exponentially averaged credit
 * (cairn__expavg_update, server/trust/credit.c; BOINC's update_average,
 * docs/references.md [BOINC-credit]) as a pure function, against values
 * computed by hand: a first grant of 100 over one day is 100 a day; a week
 * (one half-life) without work halves it; a grant at the same instant adds
 * ln 2 × 100 / 7; a grant of 70 a day later adds (1 − 2^(−1/7)) × 70 to
 * the decayed average; a first grant with no time since its start counts
 * as one day's; the reading decays without changing what it reads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>

#include "server/trust/trust.h"

#define DAY 86400.0
#define WEEK (7 * DAY)
#define T0 1.7e9

static void near(double got, double want) {
  if (fabs(got - want) > 1e-9 * (fabs(want) + 1))
    fail_msg("got %.12f, wanted %.12f", got, want);
}

static void test_grow_and_halve(void **state) {
  (void)state;
  double avg = 0, t = 0;
  cairn__expavg_update(T0, T0 - DAY, 100, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 100); /* 100 credits over one day */
  near(t, T0);
  cairn__expavg_update(T0 + WEEK, T0 + WEEK, 0, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 50); /* one half-life without work */
  near(t, T0 + WEEK);
  cairn__expavg_update(T0 + WEEK, T0 + WEEK, 100, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 59.90210257942779); /* 50 + ln 2 × 100 / 7: no time since, the limit */
  cairn__expavg_update(T0 + WEEK + DAY, T0 + WEEK, 70, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 60.85409534687828); /* × 2^(-1/7), + (1 − 2^(-1/7)) × 70 / 1 day */
}

static void test_first_grant_counts_a_day_at_least(void **state) {
  (void)state;
  double avg = 0, t = 0;
  cairn__expavg_update(T0, T0, 10, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 10);
  avg = 0, t = 0;
  cairn__expavg_update(T0, T0 - 4 * DAY, 10, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 2.5);
  avg = 0, t = 0; /* nothing granted, nothing averaged; the time is set */
  cairn__expavg_update(T0, T0, 0, CAIRN__EXPAVG_HALF_LIFE, &avg, &t);
  near(avg, 0);
  near(t, T0);
}

static void test_reading_decays(void **state) {
  (void)state;
  near(cairn__expavg_at(T0 + 2 * WEEK, 100, T0), 25);
  near(cairn__expavg_at(T0, 100, T0), 100);
  near(cairn__expavg_at(T0, 0, 0), 0); /* never averaged */
  near(cairn__expavg_at(T0 - DAY, 100, T0), 100); /* a clock gone back: no growth */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_grow_and_halve),
    cmocka_unit_test(test_first_grant_counts_a_day_at_least),
    cmocka_unit_test(test_reading_decays),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
