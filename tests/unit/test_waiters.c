/* test_waiters.c — the table of held work requests (server/conn/waiters.h): a
 * wake resumes the oldest held requests that run the app, as many as
 * tasks; a request that names no app is woken for any; a wake between a
 * request's look at the core and its hold makes the hold stale; the cap
 * and a stop refuse holds; a wake passed on goes to the next request and
 * stops after its hops; take and forget free the slot. Job waits: a job's
 * wake resumes every wait on that job and no other (job 0: all), none of
 * the work requests; a wake of the job (or one sharing its generation)
 * since the wait read it makes its hold stale; their own cap; a
 * forgotten wait leaves the others of its job in their chain. Handoff:
 * a claim takes the oldest request with a volunteer that runs the app
 * (not one without, not one of another app), out of the held ones and of
 * the stop's reach; the hand resumes it with its offer (WAKE_HANDED), or
 * for a NULL offer with WAKE_TASK; a claim forgotten before its hand
 * drops the offer and resumes nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/conn/waiters.h"

/* The resume callback: records the connections it is given, in order. */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static long resumed[64];
static int nresumed;

static void record(void *conn) {
  pthread_mutex_lock(&mu);
  if (nresumed < 64)
    resumed[nresumed++] = (long)(intptr_t)conn;
  pthread_mutex_unlock(&mu);
}

static void reset(void) {
  pthread_mutex_lock(&mu);
  nresumed = 0;
  pthread_mutex_unlock(&mu);
}

/* Holds request `id` (its conn) for app (NULL: any), far from its deadline. */
static int hold(cairn__waiters *w, long id, const char *app) {
  uint64_t h = app ? cairn__hash_app(app) : 0;
  cairn__hold_req r = {.conn = (void *)(intptr_t)id, .fd = -1, .apps = &h, .napps = app ? 1 : 0,
                       .deadline_ms = cairn__mono_ms() + 600000,
                       .gen = cairn__waiters_gen(w)};
  cairn__wake why;
  int slot = cairn__waiters_hold(w, &r, &why);
  assert_true(slot >= 0);
  return slot;
}

/* Holds request `id` for app with volunteer vol (a handoff may claim it). */
static int hold_vol(cairn__waiters *w, long id, const char *app, int64_t vol) {
  uint64_t h = cairn__hash_app(app);
  cairn__hold_req r = {.conn = (void *)(intptr_t)id, .fd = -1, .apps = &h, .napps = 1,
                       .deadline_ms = cairn__mono_ms() + 600000,
                       .gen = cairn__waiters_gen(w), .vol = vol};
  cairn__wake why;
  int slot = cairn__waiters_hold(w, &r, &why);
  assert_true(slot >= 0);
  return slot;
}

static uint64_t counted(cairn__waiters *w) {
  uint64_t held, total;
  cairn__waiters_counts(w, &held, &total);
  return held;
}

static void test_fifo_by_app(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__waiters *w = cairn__waiters_create(16, 0, record, &err);
  assert_non_null(w);
  reset();
  int s1 = hold(w, 1, "a"), s2 = hold(w, 2, "b"), s3 = hold(w, 3, "a"), s4 = hold(w, 4, NULL);
  assert_int_equal(counted(w), 4);
  /* two tasks of a: the two oldest that run a (1, then 3), not b's */
  cairn__waiters_wake(w, cairn__hash_app("a"), 2);
  assert_int_equal(nresumed, 2);
  assert_int_equal(resumed[0], 1);
  assert_int_equal(resumed[1], 3);
  cairn__pass p;
  assert_int_equal(cairn__waiters_take(w, s1, &p), CAIRN__WAKE_TASK);
  assert_int_equal(p.app, cairn__hash_app("a"));
  assert_true(p.hops > 0 && p.hops <= CAIRN__WAITERS_PASS);
  assert_int_equal(cairn__waiters_take(w, s3, &p), CAIRN__WAKE_TASK);
  /* one task of c: only the request that names no app runs it */
  cairn__waiters_wake(w, cairn__hash_app("c"), 5);
  assert_int_equal(nresumed, 3);
  assert_int_equal(resumed[2], 4);
  assert_int_equal(cairn__waiters_take(w, s4, &p), CAIRN__WAKE_TASK);
  assert_int_equal(counted(w), 1);
  /* the stop resumes the rest; later holds are refused */
  cairn__waiters_shutdown(w);
  assert_int_equal(nresumed, 4);
  assert_int_equal(resumed[3], 2);
  assert_int_equal(cairn__waiters_take(w, s2, &p), CAIRN__WAKE_STOP);
  assert_int_equal(p.hops, 0);
  cairn__hold_req r = {.conn = (void *)5, .fd = -1, .deadline_ms = cairn__mono_ms() + 1000,
                       .gen = cairn__waiters_gen(w)};
  cairn__wake why;
  assert_int_equal(cairn__waiters_hold(w, &r, &why), -1);
  assert_int_equal(why, CAIRN__WAKE_FULL);
  cairn__waiters_destroy(w);
}

static void test_stale_cap_forget(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__waiters *w = cairn__waiters_create(2, 0, record, &err);
  assert_non_null(w);
  reset();
  /* a wake after the request read the generation: its hold is stale */
  uint64_t gen = cairn__waiters_gen(w);
  cairn__waiters_wake(w, cairn__hash_app("a"), 1); /* nobody held: nothing resumed */
  assert_int_equal(nresumed, 0);
  cairn__hold_req r = {.conn = (void *)1, .fd = -1, .deadline_ms = cairn__mono_ms() + 600000,
                       .gen = gen};
  cairn__wake why;
  assert_int_equal(cairn__waiters_hold(w, &r, &why), -1);
  assert_int_equal(why, CAIRN__WAKE_STALE);
  /* the cap: two held, the third refused */
  int s1 = hold(w, 1, "a");
  hold(w, 2, "a");
  r.gen = cairn__waiters_gen(w);
  assert_int_equal(cairn__waiters_hold(w, &r, &why), -1);
  assert_int_equal(why, CAIRN__WAKE_FULL);
  /* a forgotten request (its client left) frees its place, unresumed */
  cairn__waiters_forget(w, s1);
  assert_int_equal(counted(w), 1);
  assert_int_equal(nresumed, 0);
  hold(w, 3, "a");
  assert_int_equal(counted(w), 2);
  cairn__waiters_shutdown(w);
  assert_int_equal(nresumed, 2);
  cairn__waiters_destroy(w);
}

static void test_pass_hops(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__waiters *w = cairn__waiters_create(16, 0, record, &err);
  assert_non_null(w);
  reset();
  hold(w, 1, "a");
  int s2 = hold(w, 2, "a");
  hold(w, 3, "a");
  uint64_t gen = cairn__waiters_gen(w);
  /* a wake passed on with one hop left wakes the next, which gets none */
  cairn__pass p = {cairn__hash_app("a"), 2};
  cairn__waiters_pass(w, &p);
  assert_int_equal(nresumed, 1);
  assert_int_equal(resumed[0], 1);
  assert_int_equal(cairn__waiters_gen(w), gen); /* passing is no new wake */
  cairn__pass q;
  p.hops = 0;
  cairn__waiters_pass(w, &p); /* no hop left: nothing */
  assert_int_equal(nresumed, 1);
  cairn__waiters_wake(w, cairn__hash_app("a"), 1);
  assert_int_equal(resumed[1], 2);
  assert_int_equal(cairn__waiters_take(w, s2, &q), CAIRN__WAKE_TASK);
  assert_int_equal(q.hops, 1); /* the other one held at the wake */
  cairn__waiters_shutdown(w);
  cairn__waiters_destroy(w);
}

/* Holds job wait `id` on job, far from its deadline. */
static int hold_job(cairn__waiters *w, long id, int64_t job) {
  cairn__hold_req r = {.conn = (void *)(intptr_t)id, .fd = -1,
                       .deadline_ms = cairn__mono_ms() + 600000,
                       .gen = cairn__waiters_job_gen(w, job), .job = job};
  cairn__wake why;
  int slot = cairn__waiters_hold(w, &r, &why);
  assert_true(slot >= 0);
  return slot;
}

static uint64_t jobs_held(cairn__waiters *w) {
  uint64_t held, total;
  cairn__waiters_job_counts(w, &held, &total);
  return held;
}

static void test_job_waits(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__waiters *w = cairn__waiters_create(4, 3, record, &err);
  assert_non_null(w);
  reset();
  int work = hold(w, 10, NULL); /* a work request woken for any app */
  int a1 = hold_job(w, 1, 7), a2 = hold_job(w, 2, 7), b = hold_job(w, 3, 8);
  assert_int_equal(jobs_held(w), 3);
  assert_int_equal(counted(w), 1);
  /* the job cap is its own: a fourth wait is refused, a work request is not */
  cairn__hold_req r = {.conn = (void *)4, .fd = -1, .deadline_ms = cairn__mono_ms() + 600000,
                       .gen = cairn__waiters_job_gen(w, 9), .job = 9};
  cairn__wake why;
  assert_int_equal(cairn__waiters_hold(w, &r, &why), -1);
  assert_int_equal(why, CAIRN__WAKE_FULL);
  hold(w, 11, NULL);
  /* job 7's wake resumes its two waits, not job 8's nor the work requests */
  uint64_t gen8 = cairn__waiters_job_gen(w, 8);
  cairn__waiters_wake_job(w, 7);
  assert_int_equal(nresumed, 2);
  assert_true((resumed[0] == 1 && resumed[1] == 2) || (resumed[0] == 2 && resumed[1] == 1));
  cairn__pass p;
  assert_int_equal(cairn__waiters_take(w, a1, &p), CAIRN__WAKE_JOB);
  assert_int_equal(p.hops, 0);
  assert_int_equal(cairn__waiters_take(w, a2, &p), CAIRN__WAKE_JOB);
  assert_int_equal(cairn__waiters_job_gen(w, 8), gen8);
  /* a wake since the wait read its job's generation: stale */
  r.gen = cairn__waiters_job_gen(w, 7);
  r.job = 7;
  cairn__waiters_wake_job(w, 7);
  assert_int_equal(cairn__waiters_hold(w, &r, &why), -1);
  assert_int_equal(why, CAIRN__WAKE_STALE);
  /* a forgotten wait leaves the other waits of its job held */
  int c1 = hold_job(w, 5, 8);
  hold_job(w, 6, 8);
  cairn__waiters_forget(w, c1);
  reset();
  cairn__waiters_wake_job(w, 8);
  assert_int_equal(nresumed, 2); /* 3 and 6 */
  assert_int_equal(cairn__waiters_take(w, b, &p), CAIRN__WAKE_JOB);
  /* job 0 wakes every job wait; a work wake resumes no job wait */
  hold_job(w, 7, 1);
  hold_job(w, 8, 2);
  reset();
  cairn__waiters_wake(w, 0, 8);
  assert_int_equal(nresumed, 2); /* the two work requests */
  assert_int_equal(cairn__waiters_take(w, work, &p), CAIRN__WAKE_TASK);
  assert_int_equal(jobs_held(w), 2);
  cairn__waiters_wake_job(w, 0);
  assert_int_equal(nresumed, 4);
  assert_int_equal(jobs_held(w), 0);
  cairn__waiters_shutdown(w);
  cairn__waiters_destroy(w);
}

static void test_handoff_claims(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__waiters *w = cairn__waiters_create(16, 0, record, &err);
  assert_non_null(w);
  reset();
  int s1 = hold(w, 1, "a");               /* no volunteer: never claimed */
  int s2 = hold_vol(w, 2, "b", 7);        /* another app */
  int s3 = hold_vol(w, 3, "a", 8);
  int s4 = hold_vol(w, 4, "a", 9);
  int64_t vol = 0;
  int64_t c3 = cairn__waiters_claim(w, cairn__hash_app("a"), &vol);
  assert_true(c3 >= 0);
  assert_int_equal((int)(c3 & 0xffffffff), s3);
  assert_int_equal(vol, 8);
  assert_int_equal(counted(w), 3);        /* no longer held */
  assert_int_equal(nresumed, 0);          /* resumed only by its hand */
  json_t *offer = json_pack("{s:i}", "index", 42);
  cairn__waiters_hand(w, c3, offer, 17);
  assert_int_equal(nresumed, 1);
  assert_int_equal(resumed[0], 3);
  cairn__pass p;
  void *got = NULL;
  uint64_t seq = 0;
  assert_int_equal(cairn__waiters_take_offer(w, s3, &p, &got, &seq), CAIRN__WAKE_HANDED);
  assert_ptr_equal(got, offer);
  assert_int_equal(seq, 17);
  json_decref(got);
  /* the next claim: 4; handed nothing, it asks the core itself */
  int64_t c4 = cairn__waiters_claim(w, cairn__hash_app("a"), &vol);
  assert_int_equal((int)(c4 & 0xffffffff), s4);
  assert_int_equal(vol, 9);
  cairn__waiters_hand(w, c4, NULL, 0);
  assert_int_equal(nresumed, 2);
  assert_int_equal(cairn__waiters_take(w, s4, &p), CAIRN__WAKE_TASK);
  /* none left for a (1 has no volunteer); b's is claimed, then forgotten
   * before its hand: the offer is dropped and nothing resumed */
  assert_true(cairn__waiters_claim(w, cairn__hash_app("a"), &vol) < 0);
  int64_t c2 = cairn__waiters_claim(w, cairn__hash_app("b"), &vol);
  assert_int_equal((int)(c2 & 0xffffffff), s2);
  cairn__waiters_shutdown(w);             /* resumes 1 only: 2 is claimed */
  assert_int_equal(nresumed, 3);
  assert_int_equal(resumed[2], 1);
  cairn__waiters_forget(w, s2);
  cairn__waiters_hand(w, c2, json_pack("{s:i}", "index", 43), 18);
  assert_int_equal(nresumed, 3);
  assert_int_equal(cairn__waiters_take(w, s1, &p), CAIRN__WAKE_STOP);
  assert_true(cairn__waiters_claim(w, 0, &vol) < 0); /* stopping */
  cairn__waiters_destroy(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_job_waits),
    cmocka_unit_test(test_fifo_by_app),
    cmocka_unit_test(test_stale_cap_forget),
    cmocka_unit_test(test_pass_hops),
    cmocka_unit_test(test_handoff_claims),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
