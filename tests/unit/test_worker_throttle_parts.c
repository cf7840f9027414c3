/* test_worker_throttle_parts.c — the pure parts of the worker's throttle
 * (worker/throttle.h): --hours windows (parsing, wrapping midnight, several
 * windows, bad input), /proc/stat and /proc/PID/stat parsing from fixture
 * strings (a command name with spaces and ')'), others' share of a core and
 * the duty-cycle arithmetic of --cpu-limit, and which cached files
 * --max-disk removes first. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>

#include "worker/diskcap.h"
#include "worker/throttle.h"

static void test_hours_parse(void **state) {
  (void)state;
  cairn__hours h;
  assert_int_equal(cairn__hours_parse("22-07", &h), 0);
  assert_int_equal(h.n, 1);
  assert_int_equal(h.start[0], 22 * 60);
  assert_int_equal(h.end[0], 7 * 60);
  assert_int_equal(cairn__hours_parse("9:30-12,13:15-17:45", &h), 0);
  assert_int_equal(h.n, 2);
  assert_int_equal(h.start[0], 9 * 60 + 30);
  assert_int_equal(h.end[0], 12 * 60);
  assert_int_equal(h.start[1], 13 * 60 + 15);
  assert_int_equal(h.end[1], 17 * 60 + 45);
  assert_int_equal(cairn__hours_parse("0-24", &h), -1); /* 24 is 0: an empty window */
  assert_int_equal(cairn__hours_parse("18-24", &h), 0);
  assert_int_equal(h.end[0], 0);
  static const char *const bad[] = {"", "22", "22-", "-7", "25-07", "22-07,", "22:60-07",
                                    "22:5-07", "a-b", "22 - 07", "7-7", "24:30-1", "123-4",
                                    "1-2,3-4,5-6,7-8,9-10,11-12,13-14,15-16,17-18"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    if (cairn__hours_parse(bad[i], &h) != -1)
      fail_msg("\"%s\" was accepted", bad[i]);
}

static void test_hours_contains(void **state) {
  (void)state;
  cairn__hours h;
  assert_int_equal(cairn__hours_parse("22-07", &h), 0);
  assert_true(cairn__hours_contains(&h, 22 * 60));
  assert_true(cairn__hours_contains(&h, 23 * 60 + 59));
  assert_true(cairn__hours_contains(&h, 0));
  assert_true(cairn__hours_contains(&h, 6 * 60 + 59));
  assert_false(cairn__hours_contains(&h, 7 * 60)); /* the end is excluded */
  assert_false(cairn__hours_contains(&h, 12 * 60));
  assert_false(cairn__hours_contains(&h, 21 * 60 + 59));
  assert_int_equal(cairn__hours_parse("9-12,13:30-14", &h), 0);
  assert_true(cairn__hours_contains(&h, 9 * 60));
  assert_false(cairn__hours_contains(&h, 12 * 60 + 30));
  assert_true(cairn__hours_contains(&h, 13 * 60 + 45));
  assert_false(cairn__hours_contains(&h, 14 * 60));
}

static void test_procstat(void **state) {
  (void)state;
  static const char text[] =
    "cpu  100 5 50 1000 20 3 2 1 0 0\n"
    "cpu0 50 2 25 500 10 1 1 0 0 0\n"
    "cpu1 50 3 25 500 10 2 1 1 0 0\n"
    "intr 12345 0 0\n"
    "ctxt 999\n";
  unsigned long long busy, total;
  int ncpu;
  assert_int_equal(cairn__procstat_parse(text, &busy, &total, &ncpu), 0);
  assert_int_equal(busy, 100 + 5 + 50 + 3 + 2 + 1);
  assert_int_equal(total, busy + 1000 + 20);
  assert_int_equal(ncpu, 2);
  assert_int_equal(cairn__procstat_parse("intr 1 2\n", &busy, &total, &ncpu), -1);
  assert_int_equal(cairn__procstat_parse("cpu  1 2\n", &busy, &total, &ncpu), -1);
}

static void test_pidstat(void **state) {
  (void)state;
  static const char text[] =
    "4242 (odd) name (x)) S 1 4240 4240 0 -1 4194560 300 0 0 0 "
    "170 30 7 3 20 0 1 0 12345 1000000 200 18446744073709551615\n";
  long pgrp;
  char st;
  unsigned long long cpu, ccpu;
  assert_int_equal(cairn__pidstat_parse(text, &pgrp, &st, &cpu, &ccpu), 0);
  assert_int_equal(pgrp, 4240);
  assert_int_equal(st, 'S');
  assert_int_equal(cpu, 200);
  assert_int_equal(ccpu, 10);
  assert_int_equal(cairn__pidstat_parse("4242 (x) T 1\n", &pgrp, &st, &cpu, &ccpu), -1);
  assert_int_equal(cairn__pidstat_parse("no parenthesis", &pgrp, &st, &cpu, &ccpu), -1);
}

static void test_shares(void **state) {
  (void)state;
  /* 2 CPUs, 200 ticks elapsed in all (100 per CPU): 50 ticks of others is
   * half a core */
  assert_true(cairn__other_percent(50, 200, 2) > 49.9 && cairn__other_percent(50, 200, 2) < 50.1);
  assert_true(cairn__other_percent(200, 200, 2) > 199.9);
  assert_true(cairn__other_percent(10, 0, 2) == 0);
  assert_int_equal(cairn__duty_on_ms(30, 1000), 300);
  assert_int_equal(cairn__duty_on_ms(100, 1000), 1000);
  assert_int_equal(cairn__duty_on_ms(1, 1000), 10);
  assert_int_equal(cairn__duty_on_ms(1, 50), 1); /* at least 1 ms */
  assert_int_equal(cairn__duty_on_ms(150, 1000), 1000);
}

static void test_cfg_active(void **state) {
  (void)state;
  cairn__throttle_cfg c = {0};
  assert_false(cairn__throttle_cfg_active(&c));
  c.cpu_limit = 100;
  assert_false(cairn__throttle_cfg_active(&c)); /* 100%: no limit */
  c.cpu_limit = 99;
  assert_true(cairn__throttle_cfg_active(&c));
  c = (cairn__throttle_cfg){.idle_only = 1};
  assert_true(cairn__throttle_cfg_active(&c));
}

static void test_evict_plan(void **state) {
  (void)state;
  cairn__cached_file f[4] = {
    {"new", 100, 400}, {"old", 100, 100}, {"mid2", 100, 300}, {"mid1", 100, 300},
  };
  assert_int_equal(cairn__diskcap_plan(f, 4, 150), 2); /* two files free 200 >= 150 */
  assert_string_equal(f[0].name, "old");
  assert_string_equal(f[1].name, "mid1"); /* same age: by name */
  assert_string_equal(f[2].name, "mid2");
  assert_string_equal(f[3].name, "new");
  assert_int_equal(cairn__diskcap_plan(f, 4, 0), 0);
  assert_int_equal(cairn__diskcap_plan(f, 4, 400), 4);
  assert_int_equal(cairn__diskcap_plan(f, 4, 401), 4); /* not enough: all of them */
  assert_int_equal(cairn__diskcap_plan(f, 0, 1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_hours_parse),
    cmocka_unit_test(test_hours_contains),
    cmocka_unit_test(test_procstat),
    cmocka_unit_test(test_pidstat),
    cmocka_unit_test(test_shares),
    cmocka_unit_test(test_cfg_active),
    cmocka_unit_test(test_evict_plan),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
