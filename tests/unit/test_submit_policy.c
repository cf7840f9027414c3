/* test_submit_policy.c — a job's policy is built before the master takes its
 * core lock (server/core/jobs.c, cairn__core_submit), for the id the job will
 * most likely get; when another submission takes that id first, it is built
 * again for the job's real id. Two threads submit "random" jobs at the same
 * time over a real SQLite store; every job's policy must then be exactly the
 * one seeded with its own id (random draws depend on the seed), holding its
 * tasks and nothing else. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/jobspec.h"
#include "plan/policy.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

enum { BIG = 200000, SMALL = 8 };

typedef struct submitter {
  cairn__core *c;
  uint32_t ntasks;  /* all sources */
  volatile int *stop; /* NULL: submit once; else: until *stop */
  int jobs, failures;
} submitter;

/* A job of n independent tasks under the "random" policy. */
static char *job_text(uint32_t n) {
  char *s = malloc(64 + (size_t)n * 24), *p = s;
  assert_non_null(s);
  p += sprintf(p, "{\"app\":\"a\",\"policy\":\"random\",\"tasks\":[");
  for (uint32_t i = 0; i < n; i++)
    p += sprintf(p, "%s{\"id\":\"t%u\"}", i ? "," : "", i);
  sprintf(p, "]}");
  return s;
}

static void *submit_loop(void *arg) {
  submitter *s = arg;
  char *text = job_text(s->ntasks);
  do {
    cairn_error err = {0};
    cairn__jobspec *spec = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
    int64_t id = 0;
    if (!spec || cairn__core_submit(s->c, spec, &id, &err) != CAIRN_OK) /* takes spec */
      s->failures++;
    s->jobs++;
  } while (s->stop && !*s->stop);
  free(text);
  return NULL;
}

/* One thread submits a big job (its policy takes a while to build: BIG
 * ready calls) while another submits small jobs back to back, so a small job
 * takes the id the big one was built for. */
static void test_concurrent_submits_seed_by_id(void **state) {
  core_fixture *f = *state;
  volatile int stop = 0;
  submitter small = {f->c, SMALL, &stop, 0, 0}, big = {f->c, BIG, NULL, 0, 0};
  pthread_t ts, tb;
  assert_int_equal(pthread_create(&ts, NULL, submit_loop, &small), 0);
  while (!small.jobs) /* the small jobs are flowing */
    sched_yield();
  assert_int_equal(pthread_create(&tb, NULL, submit_loop, &big), 0);
  pthread_join(tb, NULL);
  stop = 1;
  pthread_join(ts, NULL);
  assert_int_equal(small.failures + big.failures, 0);
  /* jobs 1 .. small.jobs + big.jobs, and no other */
  int njobs = small.jobs + big.jobs;
  assert_int_equal(cairn__core_job_state(f->c, njobs + 1), -1);
  for (int k = 0; k < njobs; k++) {
    pthread_mutex_lock(&f->c->lock); /* nothing else runs: read after the unlock */
    mjob *j = cairn__job_find_locked(f->c, k + 1);
    cairn__core_unlock(f->c);
    assert_non_null(j);
    assert_int_equal(j->id, (int64_t)k + 1);
    void *want = cairn__policy_random.create(j->dag, (uint64_t)j->id);
    assert_non_null(want);
    for (uint32_t i = 0; i < j->ntasks; i++)
      cairn__policy_random.ready(want, i);
    uint32_t a, b, n = 0;
    while (cairn__policy_random.pick(want, &a) == 0) {
      assert_int_equal(j->pol->pick(j->pstate, &b), 0); /* white box: the job is not run */
      assert_int_equal(a, b);
      n++;
    }
    assert_int_equal(j->pol->pick(j->pstate, &b), -1);
    assert_int_equal(n, j->ntasks);
    cairn__policy_random.destroy(want);
  }
  fprintf(stderr, "%d small jobs submitted around the big one\n", small.jobs);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_concurrent_submits_seed_by_id, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
