/* test_ic_random.c — the "ic" policy's general-dag heuristic ([Ros]
 * §4.3.1) against the exact optimum: 300 random 14-node dags, largest AREA
 * and best E(t) by dynamic programming over subsets (ic_study.h); FIFO and
 * random measured beside it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "plan/ic_study.h"

static void test_ic_near_optimal_on_random_dags(void **state) {
  (void)state;
  const cairn__policy_ops *const pols[] = {&cairn__policy_ic, &cairn__policy_fifo,
                                          &cairn__policy_random};
  cairn__ic_study s;
  assert_int_equal(cairn__ic_study_random(300, 14, 2024, pols, 3, &s), 0);
  print_message("300 random 14-node dags; %u admit an IC-optimal play\n", s.ic_optimal_exists);
  for (uint32_t k = 0; k < s.nrows; k++)
    print_message("%-7s AREA/max mean %.4f min %.4f; AREA-optimal %u/300; IC-optimal %u/300; "
                  "same profile renumbered %u/300\n",
                  s.rows[k].policy, s.rows[k].ratio_mean, s.rows[k].ratio_min,
                  s.rows[k].area_optimal, s.rows[k].ic_optimal, s.rows[k].relabel_same);
  const cairn__ic_study_row *ic = &s.rows[0], *fifo = &s.rows[1];
  assert_true(ic->ratio_mean >= 0.99);
  assert_true(ic->area_optimal * 2 > s.count);           /* most dags */
  assert_true(ic->ic_optimal * 10 >= s.ic_optimal_exists * 8);
  assert_true(ic->ratio_mean > fifo->ratio_mean);
  assert_true(ic->area_optimal > fifo->area_optimal);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ic_near_optimal_on_random_dags),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
