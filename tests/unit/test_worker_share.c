/* test_worker_share.c — the division of a worker's slots among its
 * projects (worker/share.h): the decay of usage with its half-life, which
 * project a free slot asks (lowest (usage + running) / share among those
 * ready, ties to the larger share then the first, a share of 0 only when
 * no other is ready), how long its request may be held, and, driven over
 * simulated time with tasks of a fixed length, the CPU time each project
 * gets: in proportion to the shares, all of it to the project left when
 * the other is backed off, and the proportion back once it returns. The
 * ledger over it (worker/ledger.h): a project backed off after no work or
 * no answer (the master's named wait taken), back at once when it has
 * work or held the request, never with one project; running tasks counted
 * by their project's CPU efficiency; each project's figures. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>

#include "worker/ledger.h"
#include "worker/share.h"

#define HALF_LIFE 600.0

static void test_decay(void **state) {
  (void)state;
  assert_true(fabs(cairn__share_decay(100, 600000, HALF_LIFE) - 50) < 1e-9);
  assert_true(fabs(cairn__share_decay(100, 1200000, HALF_LIFE) - 25) < 1e-9);
  assert_true(cairn__share_decay(100, 0, HALF_LIFE) == 100);
  assert_true(cairn__share_decay(100, -5, HALF_LIFE) == 100); /* a clock that did not move */
  cairn__share s = {.share = 1, .usage = 8, .usage_ms = 1000};
  cairn__share_charge(&s, 2, 1000 + 600000, HALF_LIFE); /* 8 halves to 4, then + 2 */
  assert_true(fabs(s.usage - 6) < 1e-9);
  assert_int_equal(s.usage_ms, 601000);
  cairn__share_charge(&s, -1, 601000, HALF_LIFE); /* nothing negative is charged */
  assert_true(fabs(s.usage - 6) < 1e-9);
  assert_true(fabs(cairn__share_usage(&s, 601000 + 1200000, HALF_LIFE) - 1.5) < 1e-9);
}

static void test_pick(void **state) {
  (void)state;
  long long hold = 0, now = 50000;
  cairn__share s[3] = {{.share = 3, .usage = 30, .usage_ms = now},
                       {.share = 1, .usage = 9, .usage_ms = now},
                       {.share = 1, .usage = 12, .usage_ms = now}};
  /* 30/3 = 10, 9/1 = 9, 12/1 = 12: the second */
  assert_int_equal(cairn__share_pick(s, 3, now, HALF_LIFE, &hold), 1);
  assert_int_equal(hold, 0); /* the others are ready: do not hold the slot */
  /* what runs counts: 2 s running makes the second 11 */
  s[1].running_s = 2;
  assert_int_equal(cairn__share_pick(s, 3, now, HALF_LIFE, &hold), 0);
  /* a tie goes to the larger share, then to the first listed */
  s[1].running_s = 1; /* 10 = 10 */
  assert_int_equal(cairn__share_pick(s, 3, now, HALF_LIFE, NULL), 0);
  s[0].share = 1;
  s[0].usage = 10;
  assert_int_equal(cairn__share_pick(s, 3, now, HALF_LIFE, NULL), 0);
  /* a backed-off project is skipped; the hold is until the first other is ready */
  s[0].ready_ms = now + 700;
  s[2].ready_ms = now + 300;
  assert_int_equal(cairn__share_pick(s, 3, now, HALF_LIFE, &hold), 1);
  assert_int_equal(hold, 300);
  /* none ready: no pick, and the wait until the first is */
  s[1].ready_ms = now + 900;
  assert_int_equal(cairn__share_pick(s, 3, now, HALF_LIFE, &hold), -1);
  assert_int_equal(hold, 300);
  /* ready again at its time */
  assert_int_equal(cairn__share_pick(s, 3, now + 300, HALF_LIFE, &hold), 2);
  assert_int_equal(hold, 400);
  /* one project: no bound on the hold */
  assert_int_equal(cairn__share_pick(s, 1, now + 700, HALF_LIFE, &hold), 0);
  assert_int_equal(hold, -1);
  assert_int_equal(cairn__share_pick(s, 0, now, HALF_LIFE, &hold), -1);
  assert_int_equal(hold, -1);
}

static void test_backup_project(void **state) {
  (void)state;
  long long hold = 0;
  cairn__share s[2] = {{.share = 0}, {.share = 1, .usage = 1e6}};
  /* share 0: after every project with a share, however much that one used */
  assert_int_equal(cairn__share_pick(s, 2, 0, HALF_LIFE, &hold), 1);
  s[1].ready_ms = 5000;
  assert_int_equal(cairn__share_pick(s, 2, 0, HALF_LIFE, &hold), 0);
  assert_int_equal(hold, 5000);
}

/* A worker of nslots slots whose projects all have endless tasks of
 * task_ms each (CPU-bound: CPU time = run time), simulated from *now for
 * ms: each free slot picks with cairn__share_pick; cpu[k] gets the
 * seconds project k's tasks ran. down (may be -1) is a project that is
 * backed off the whole time. */
#define SIM_SLOTS 4
typedef struct sim {
  cairn__share s[3];
  size_t n;
  int slot_k[SIM_SLOTS];        /* -1: free */
  long long slot_start[SIM_SLOTS];
  size_t nslots;
  long long task_ms, now;
  double cpu[3];
} sim;

static void sim_running(sim *m) {
  for (size_t k = 0; k < m->n; k++)
    m->s[k].running_s = 0;
  for (size_t i = 0; i < m->nslots; i++)
    if (m->slot_k[i] >= 0)
      m->s[m->slot_k[i]].running_s += (double)(m->now - m->slot_start[i]) / 1000.0;
}

static void sim_run(sim *m, long long ms, int down) {
  long long until = m->now + ms;
  if (down >= 0)
    m->s[down].ready_ms = until;
  while (m->now < until) {
    for (size_t i = 0; i < m->nslots; i++) {
      if (m->slot_k[i] >= 0 && m->now - m->slot_start[i] >= m->task_ms) { /* ends */
        int k = m->slot_k[i];
        m->slot_k[i] = -1;
        cairn__share_charge(&m->s[k], (double)m->task_ms / 1000.0, m->now, HALF_LIFE);
        m->cpu[k] += (double)m->task_ms / 1000.0;
      }
      if (m->slot_k[i] < 0) {
        sim_running(m);
        long k = cairn__share_pick(m->s, m->n, m->now, HALF_LIFE, NULL);
        assert_true(k >= 0);
        m->slot_k[i] = (int)k;
        m->slot_start[i] = m->now;
      }
    }
    m->now += 10;
  }
}

static void test_simulated_shares(void **state) {
  (void)state;
  sim m = {.s = {{.share = 3}, {.share = 1}}, .n = 2, .nslots = 2, .task_ms = 500,
           .now = 1000};
  for (size_t i = 0; i < SIM_SLOTS; i++)
    m.slot_k[i] = -1;
  sim_run(&m, 60000, -1);
  double ratio = m.cpu[0] / m.cpu[1];
  printf("shares 3:1, 2 slots, 60 s: %.1f s and %.1f s of CPU, ratio %.3f\n", m.cpu[0], m.cpu[1],
         ratio);
  assert_true(ratio > 2.8 && ratio < 3.2);
  /* the first project backed off for 20 s: the second takes every slot */
  double a = m.cpu[0], b = m.cpu[1];
  sim_run(&m, 20000, 0);
  printf("first backed off 20 s: it got %.1f s, the second %.1f s\n", m.cpu[0] - a,
         m.cpu[1] - b);
  assert_true(m.cpu[0] - a <= 1.0); /* the tasks it was running when backed off */
  assert_true(m.cpu[1] - b >= 38.0);
  /* back: it catches up, and over the whole run the proportion comes back */
  sim_run(&m, 60000, -1);
  ratio = m.cpu[0] / m.cpu[1];
  printf("back for 60 s: %.1f s and %.1f s over the whole run, ratio %.3f\n", m.cpu[0],
         m.cpu[1], ratio);
  assert_true(ratio > 2.7 && ratio < 3.3);
  /* three projects 1:1:2 on 4 slots */
  sim t = {.s = {{.share = 1}, {.share = 1}, {.share = 2}}, .n = 3, .nslots = 4, .task_ms = 700,
           .now = 5};
  for (size_t i = 0; i < SIM_SLOTS; i++)
    t.slot_k[i] = -1;
  sim_run(&t, 120000, -1);
  printf("shares 1:1:2, 4 slots, 120 s: %.1f, %.1f, %.1f s\n", t.cpu[0], t.cpu[1], t.cpu[2]);
  assert_true(fabs(t.cpu[0] / t.cpu[1] - 1) < 0.1);
  assert_true(fabs(t.cpu[2] / (t.cpu[0] + t.cpu[1]) - 1) < 0.1);
}

static void test_ledger(void **state) {
  (void)state;
  cairn__ledger l;
  unsigned shares[2] = {3, 1};
  const cairn__logger *logs[2] = {NULL, NULL};
  long long now = 100000, hold = 0;
  cairn__ledger_init(&l, 2, shares, HALF_LIFE, logs, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 0); /* a tie: the larger share */
  assert_int_equal(hold, 0);
  assert_true(cairn__ledger_prefers(&l, 0, now));
  /* no work: backed off 0.5 to 1 s, then 1 to 2 s */
  cairn__ledger_asked(&l, 0, CAIRN__ASKED_NONE, -1, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 1);
  assert_true(hold >= CAIRN__LEDGER_BACKOFF_MIN_MS / 2 && hold <= CAIRN__LEDGER_BACKOFF_MIN_MS);
  cairn__ledger_asked(&l, 0, CAIRN__ASKED_DOWN, -1, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 1);
  assert_true(hold >= CAIRN__LEDGER_BACKOFF_MIN_MS && hold <= 2 * CAIRN__LEDGER_BACKOFF_MIN_MS);
  cairn_worker_project_stats st;
  cairn__ledger_stats(&l, 0, now, &st);
  assert_true(st.backed_off);
  /* both backed off: no pick until the first is ready; a named wait is taken */
  cairn__ledger_asked(&l, 1, CAIRN__ASKED_NONE, 250, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), -1);
  assert_int_equal(hold, 250);
  assert_int_equal(cairn__ledger_pick(&l, now + 250, &hold), 1);
  /* a master's named wait defers a project without touching its backoff */
  cairn__ledger_defer(&l, 1, 5000, now + 250);
  assert_int_equal(cairn__ledger_pick(&l, now + 250, &hold), -1);
  assert_true(hold > 0 && hold <= 5000);
  /* work (or a held request) ends the backoff at once */
  cairn__ledger_asked(&l, 0, CAIRN__ASKED_WORK, -1, now);
  cairn__ledger_asked(&l, 1, CAIRN__ASKED_HELD, -1, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 0);
  assert_int_equal(hold, 0);
  /* a task of the first: 2 s on 1 core, 0.5 s of CPU; while it runs it
   * counts its run time (no efficiency known yet), then its CPU time */
  cairn__ledger_started(&l, 0, 1, now);
  assert_int_equal(cairn__ledger_pick(&l, now + 10, NULL), 1); /* 0.01/3 > 0/1 */
  cairn__ledger_ended(&l, 0, 1, now, 0.5, now + 2000);
  cairn__ledger_count(&l, 0, 0);
  cairn__ledger_stats(&l, 0, now + 2000, &st);
  assert_true(fabs(st.usage - 0.5) < 1e-6 && fabs(st.cpu_seconds - 0.5) < 1e-9);
  assert_int_equal(st.tasks_done, 1);
  assert_int_equal(st.running, 0);
  assert_false(st.backed_off);
  /* the second runs 1 s of CPU in 1 s: 0.5/3 < 1/1, the first again */
  cairn__ledger_started(&l, 1, 1, now + 2000);
  cairn__ledger_ended(&l, 1, 1, now + 2000, 1.0, now + 3000);
  assert_int_equal(cairn__ledger_pick(&l, now + 3000, NULL), 0);
  /* the first runs a task 8 s: at its efficiency (a quarter) it counts 2 s:
   * (0.5 + 2) / 3 < 1 still; without the efficiency 8.5 / 3 > 1 */
  cairn__ledger_started(&l, 0, 1, now + 3000);
  assert_int_equal(cairn__ledger_pick(&l, now + 11000, NULL), 0);
  assert_int_equal(cairn__ledger_pick(&l, now + 15000, NULL), 1); /* (0.5 + 3) / 3 > 1 */
  cairn__ledger_destroy(&l);
  /* one project: never backed off, no bound on the hold */
  cairn__ledger_init(&l, 1, shares, HALF_LIFE, logs, now);
  cairn__ledger_asked(&l, 0, CAIRN__ASKED_DOWN, -1, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 0);
  assert_int_equal(hold, -1);
  cairn__ledger_stats(&l, 0, now, &st);
  assert_false(st.backed_off);
  cairn__ledger_destroy(&l);
}

/* A retired project (its master's audit log inconsistent) is never picked
 * again, whatever it is told after, and bounds no other's hold. */
static void test_retired(void **state) {
  (void)state;
  cairn__ledger l;
  unsigned shares[3] = {100, 100, 100};
  const cairn__logger *logs[3] = {NULL, NULL, NULL};
  long long now = 100000, hold = 0;
  size_t left = 9;
  cairn__ledger_init(&l, 3, shares, HALF_LIFE, logs, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 0);
  assert_int_equal(cairn__ledger_retire(&l, 0, &left), 1);
  assert_int_equal(left, 2);
  assert_int_equal(cairn__ledger_retire(&l, 0, &left), 0); /* once */
  assert_int_equal(left, 2);
  cairn__ledger_asked(&l, 0, CAIRN__ASKED_WORK, -1, now); /* no way back */
  cairn__ledger_defer(&l, 0, 10, now);
  for (int i = 0; i < 10; i++)
    assert_int_not_equal(cairn__ledger_pick(&l, now + i * 1000000LL, NULL), 0);
  assert_false(cairn__ledger_prefers(&l, 0, now));
  /* the second backed off: the third is picked, its hold bound by the
   * second only */
  cairn__ledger_asked(&l, 1, CAIRN__ASKED_NONE, 700, now);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 2);
  assert_int_equal(hold, 700);
  assert_int_equal(cairn__ledger_retire(&l, 1, &left), 1);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), 2);
  assert_int_equal(hold, -1); /* no other to wait for */
  assert_int_equal(cairn__ledger_retire(&l, 2, &left), 1);
  assert_int_equal(left, 0);
  assert_int_equal(cairn__ledger_pick(&l, now, &hold), -1);
  cairn__ledger_destroy(&l);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_retired),
    cmocka_unit_test(test_decay),
    cmocka_unit_test(test_pick),
    cmocka_unit_test(test_backup_project),
    cmocka_unit_test(test_simulated_shares),
    cmocka_unit_test(test_ledger),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
