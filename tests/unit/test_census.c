/* test_census.c — the census of the clusters present (server/dist/census.c)
 * that broadcast plans are built from, on a core over a real SQLite file.
 * The census counts each app's present volunteers per cluster as they make
 * requests, drops those whose time is up and the banned, and counts one
 * that comes back again; a plan check reads at most CAIRN__PLAN_MAX_CLUSTERS
 * clusters of it, so the work a work request does under the core's lock to
 * plan a broadcast is the same with 2,000 volunteers as with a few: the
 * module's counter of volunteers and clusters visited
 * (cairn__dist.census_work) is the measure, not a clock. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/jobspec.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define SHA "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"

/* Registers a worker of app in cluster; returns its id. */
static int64_t reg(cairn__core *c, const char *name, const char *cluster, const char *app) {
  char *apps[] = {(char *)app}, token[65];
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, cluster, apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

/* Uploads SHA (recorded only) and submits a job of app "big" whose tasks
 * read it as a broadcast input. */
static void file_and_job(cairn__core *c) {
  int existed = 1;
  cairn_error err = {0};
  if (cairn__core_add_file(c, SHA, 1 << 20, &existed, &err) != CAIRN_OK)
    fail_msg("add file: %s", err.text);
  static const char job[] =
    "{\"app\": \"big\", \"policy\": \"fifo\", \"files\": [{\"name\": \"big.bin\", "
    "\"sha256\": \"" SHA "\", \"broadcast\": true}], \"tasks\": [{\"id\": \"t0\", "
    "\"inputs\": [\"big.bin\"]}, {\"id\": \"t1\", \"inputs\": [\"big.bin\"]}, {\"id\": \"t2\", "
    "\"inputs\": [\"big.bin\"]}]}";
  core_fixture_submit(c, job);
}

/* The census of app "big" as "cluster:count …", in order of arrival. */
static void census(cairn__core *c, char *out, size_t len) {
  char *labels[16];
  int64_t counts[16];
  uint64_t gen = 0;
  size_t n = 0;
  out[0] = '\0';
  pthread_mutex_lock(&c->lock);
  size_t m = cairn__census_clusters(c->dist, "big", labels, counts, 16, &gen);
  for (size_t i = 0; i < m && n < len; i++)
    n += (size_t)snprintf(out + n, len - n, "%s%s:%lld", i ? " " : "", labels[i],
                          (long long)counts[i]);
  pthread_mutex_unlock(&c->lock);
}

/* v asks for work; 1 when it got a task (0: it waits for the broadcast). */
static int work(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("volunteer %lld: %s", (long long)v, err.text);
  int got = w != NULL;
  json_decref(w);
  return got;
}

static uint64_t work_done(cairn__core *c) {
  pthread_mutex_lock(&c->lock);
  uint64_t n = c->dist->census_work;
  pthread_mutex_unlock(&c->lock);
  return n;
}

/* Present volunteers are counted per cluster of each app they run; those
 * whose time is up leave, a banned one leaves, one seen again comes back
 * at the end. */
static void test_census_counts_expires_and_bans(void **state) {
  cairn__core *c = ((core_fixture *)*state)->c;
  int64_t a1 = reg(c, "a1", "rack-a", "big"), a2 = reg(c, "a2", "rack-a", "big");
  reg(c, "a3", "rack-a", "big");
  int64_t b1 = reg(c, "b1", "rack-b", "big");
  reg(c, "b2", "rack-b", "big");
  reg(c, "o1", "rack-o", "other");
  char s[256];
  census(c, s, sizeof s);
  assert_string_equal(s, "rack-a:3 rack-b:2");

  /* a1 and a2, the least recently seen, fell silent 31 s ago (a state
   * made here: their census entries are set back) */
  pthread_mutex_lock(&c->lock);
  int64_t now = cairn__now();
  cairn__vol_find_locked(c, a1)->cseen = cairn__vol_find_locked(c, a2)->cseen =
    now - CAIRN__CENSUS_SECONDS - 1;
  uint64_t gen = cairn__census_gen(c->dist, "big");
  cairn__census_expire(c->dist, now, CAIRN__CENSUS_PLAN_EXPIRE);
  assert_true(cairn__census_gen(c->dist, "big") > gen);
  pthread_mutex_unlock(&c->lock);
  census(c, s, sizeof s);
  assert_string_equal(s, "rack-a:1 rack-b:2");

  cairn_error err = {0};
  json_t *report = NULL;
  assert_int_equal(cairn__core_ban(c, b1, "test", &report, &err), CAIRN_OK);
  json_decref(report);
  census(c, s, sizeof s);
  assert_string_equal(s, "rack-a:1 rack-b:1");

  pthread_mutex_lock(&c->lock);
  cairn__dist_seen(c, cairn__vol_find_locked(c, a1), cairn__now());
  cairn__dist_seen(c, cairn__vol_find_locked(c, b1), cairn__now()); /* banned: never counted */
  pthread_mutex_unlock(&c->lock);
  census(c, s, sizeof s);
  assert_string_equal(s, "rack-a:2 rack-b:1");
}

enum { MANY = 2000 };

/* With MANY volunteers each in a cluster of its own, a work request that
 * builds the broadcast plan visits at most CAIRN__PLAN_MAX_CLUSTERS clusters
 * and a few volunteers, and the plan covers the first
 * CAIRN__PLAN_MAX_CLUSTERS clusters; a second request in the same second
 * visits only its own volunteer's entry. */
static void test_plan_work_is_bounded(void **state) {
  cairn__core *c = ((core_fixture *)*state)->c;
  char name[32], cluster[32];
  int64_t last = 0, other = 0;
  for (int i = 0; i < MANY; i++) {
    snprintf(name, sizeof name, "w%04d", i);
    snprintf(cluster, sizeof cluster, "c%04d", i);
    other = last;
    last = reg(c, name, cluster, "big");
  }
  file_and_job(c);
  uint64_t before = work_done(c);
  assert_true(work(c, last)); /* from the master */
  uint64_t first = work_done(c) - before;
  before = work_done(c);
  work(c, other); /* waits: the master sends one copy at a time */
  uint64_t second = work_done(c) - before;
  print_message("census work: %llu for the request that planned, %llu for the next, %d volunteers\n",
                (unsigned long long)first, (unsigned long long)second, MANY);
  /* its own seen (1 + its app) and the plan's read of the census */
  assert_true(first <= CAIRN__PLAN_MAX_CLUSTERS + 8);
  assert_true(first >= CAIRN__PLAN_MAX_CLUSTERS);
  assert_true(second <= 8);
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, SHA);
  assert_non_null(f);
  assert_non_null(f->plan);
  assert_int_equal(f->plan->k - 1, CAIRN__PLAN_MAX_CLUSTERS);
  assert_true(cairn__bplan_find(f->plan, "c0000") > 0);
  assert_true(cairn__bplan_find(f->plan, "c1999") < 0);
  pthread_mutex_unlock(&c->lock);
}

#define CORE_TEST(fn) cmocka_unit_test_setup_teardown(fn, core_fixture_setup, core_fixture_teardown)

int main(void) {
  const struct CMUnitTest tests[] = {
    CORE_TEST(test_census_counts_expires_and_bans),
    CORE_TEST(test_plan_work_is_bounded),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
