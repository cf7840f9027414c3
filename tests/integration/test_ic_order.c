/* test_ic_order.c — the master allocates in IC order ([Ros] §4.3.1): a
 * real server and one real worker (one slot) run jobs made by `cairn gen`;
 * the audit trail gives the order in which tasks were allocated, which must
 * be the order the ic policy plays in the IC Pebble Game, and whose
 * eligibility profile E(t) must be the optimum at every step (found by
 * exhaustive search over all executed sets). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ic_exact.h"
#include "plan/ic_game.h"
#include "plan/jobspec.h"
#include "plan/policy.h"
#include "tests/support/editdist.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static void check_family(const char *family, const char *n) {
  char path[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  char *text = NULL;
  const char *gen[] = {e2e_bin_cli, "gen", family, n, "--app", "noop", NULL};
  assert_int_equal(harness_run(gen, &text), 0);
  snprintf(path, sizeof path, "%s/job.json", dir);
  harness_write_file(path, text);
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
  assert_non_null(spec);
  free(text);
  assert_string_equal(spec->policy, "ic");
  long long job = e2e_submit(sf.srv.url, dir);

  const char *wargs[] = {"--app", "noop=/bin/true", "--slots", "1", "--exit-when-idle", "2",
                         NULL};
  pid_t w = harness_worker(sf.srv.url, dir, "worker", wargs);
  assert_string_equal(e2e_wait(sf.srv.url, job, 120), "done");
  harness_wait(w, 30);

  /* the order of allocations, from the audit trail of the only volunteer */
  uint32_t nt = spec->ntasks;
  uint32_t *served = calloc(nt, sizeof *served), *played = calloc(nt, sizeof *played);
  uint32_t *p1 = calloc(nt + 1, sizeof *p1), *p2 = calloc(nt + 1, sizeof *p2);
  uint32_t *best = calloc(nt + 1, sizeof *best);
  char url[64];
  snprintf(url, sizeof url, "/v1/audit/volunteers/%d", 1);
  json_t *trail = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", url, ADMIN, NULL, 0, &trail, NULL, NULL), 200);
  json_t *allocs = json_object_get(trail, "allocations");
  assert_int_equal(json_array_size(allocs), nt); /* one allocation per task, no retries */
  size_t k;
  json_t *a;
  json_array_foreach(allocs, k, a) {
    const char *id = json_string_value(json_object_get(a, "task"));
    uint32_t v = 0;
    while (v < nt && strcmp(spec->tasks[v].id, id) != 0)
      v++;
    assert_true(v < nt);
    served[k] = v;
  }
  json_decref(trail);

  assert_true(cairn__ic_play(spec->dag, &cairn__policy_ic, 0, p2, played, &err) >= 0);
  assert_memory_equal(served, played, nt * sizeof *served);
  assert_true(cairn__ic_profile_of_order(spec->dag, served, p1) >= 0);
  assert_int_equal(cairn__ic_max_profile(spec->dag, 50000000, best, NULL), 0);
  for (uint32_t t = 0; t <= nt; t++)
    if (p1[t] != best[t])
      fail_msg("%s %s: E(%u) = %u, optimum %u", family, n, t, p1[t], best[t]);
  free(served);
  free(played);
  free(p1);
  free(p2);
  free(best);
  cairn__jobspec_free(spec);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_reduction_tree(void **state) {
  (void)state;
  check_family("tree", "4"); /* 16 leaves, 31 tasks */
}

static void test_fft(void **state) {
  (void)state;
  check_family("fft", "3"); /* 8 inputs, 32 tasks */
}

static void test_mesh(void **state) {
  (void)state;
  check_family("mesh", "7"); /* 28 tasks */
}

static void test_reduction_mesh(void **state) {
  (void)state;
  check_family("rmesh", "7");
}

static int setup(void **state) {
  (void)state;
  e2e_init();
  return 0;
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reduction_tree),
    cmocka_unit_test(test_fft),
    cmocka_unit_test(test_mesh),
    cmocka_unit_test(test_reduction_mesh),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
