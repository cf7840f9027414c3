/* test_policy_reset.c — re-opening done tasks in place (policy.h, reset)
 * against a rebuild of the policy from the tasks' states, on random dags
 * (narrow and wide children, ids in topological order).
 *
 * A game plays ready / pick / executed / a lease handed back at random and,
 * now and then, re-opens done tasks the way the master does (server/core/core.c,
 * requeue): a seed and every descendant (a discredited result), or a seed
 * and its children not done (a lost output); each goes through reset(),
 * and those whose parents are all done through ready(). At the end every
 * picked task is executed or handed back, and the policy is compared with
 * a fresh one given executed() of every done task and ready() of every
 * ready one in topological order (what cairn__job_rebuild_policy does):
 *   ic: the same picks in the same order, played to the end of the dag;
 *   fifo: the order of a model queue (ready order, re-opened ones behind);
 *   random: the same ready set.
 * ic's step counter checks each reset against the per-event bound. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "plan/dag.h"
#include "plan/dag_gen.h"
#include "plan/policy.h"

enum { W, R, A, D }; /* waiting, ready, allocated, done */

typedef struct game {
  const cairn__policy_ops *ops;
  const cairn__dag *d;
  void *st;
  uint8_t *s;
  uint32_t *fq, fhead, ftail, fcap; /* fifo's model: every ready() in order */
  uint32_t *last;                   /* last[v]: v's latest entry in fq */
  uint64_t rng, unit;
} game;

static int parents_done(const game *g, uint32_t v) {
  for (uint32_t k = g->d->par_off[v]; k < g->d->par_off[v + 1]; k++)
    if (g->s[g->d->par[k]] != D)
      return 0;
  return 1;
}

static void ready(game *g, uint32_t v) {
  g->s[v] = R;
  g->ops->ready(g->st, v);
  if (g->ftail == g->fcap) {
    g->fcap *= 2;
    g->fq = realloc(g->fq, g->fcap * sizeof *g->fq);
    assert_non_null(g->fq);
  }
  g->last[v] = g->ftail;
  g->fq[g->ftail++] = v;
}

/* fifo's model: the oldest entry whose task is still ready from it (entries
 * of tasks picked or reset since are skipped). */
static uint32_t model_front(game *g) {
  while (g->fhead < g->ftail &&
         (g->s[g->fq[g->fhead]] != R || g->last[g->fq[g->fhead]] != g->fhead))
    g->fhead++;
  return g->fhead < g->ftail ? g->fq[g->fhead] : UINT32_MAX;
}

/* Picks into *v (0), or -1 when nothing is ready; checks it against the model. */
static int pick(game *g, uint32_t *out) {
  uint32_t v;
  int rc = g->ops->pick(g->st, &v);
  uint32_t want = model_front(g);
  assert_int_equal(rc, want == UINT32_MAX ? -1 : 0);
  if (rc)
    return -1;
  assert_int_equal(g->s[v], R);
  if (g->ops == &cairn__policy_fifo) {
    assert_int_equal(v, want);
    g->fhead++;
  }
  g->s[v] = A;
  *out = v;
  return 0;
}

static void execute(game *g, uint32_t v) {
  g->s[v] = D;
  g->ops->executed(g->st, v);
  for (uint32_t k = g->d->ch_off[v]; k < g->d->ch_off[v + 1]; k++) {
    uint32_t c = g->d->ch[k];
    if (g->s[c] == W && parents_done(g, c))
      ready(g, c);
  }
}

static uint32_t any_in(game *g, uint8_t state) {
  uint32_t n = g->d->n, start = (uint32_t)(cairn__rand64(&g->rng) % n);
  for (uint32_t i = 0; i < n; i++)
    if (g->s[(start + i) % n] == state)
      return (start + i) % n;
  return UINT32_MAX;
}

static void reset_one(game *g, uint32_t v) {
  int ic = g->ops == &cairn__policy_ic;
  uint64_t before = ic ? cairn__policy_ic_work(g->st) : 0;
  g->ops->reset(g->st, v);
  g->s[v] = W;
  if (ic)
    assert_true(cairn__policy_ic_work(g->st) - before <=
                ((uint64_t)cairn__dag_nchildren(g->d, v) + 1) * g->unit);
}

/* Re-opens done task seed: with lost, its children not done; else every
 * descendant. Touched tasks are reset, then the eligible ones readied. */
static void reopen(game *g, uint32_t seed, int lost) {
  uint32_t n = g->d->n, *touched = malloc(n * sizeof *touched), nt = 0;
  uint8_t *mark = calloc(n, 1);
  assert_non_null(touched);
  assert_non_null(mark);
  touched[nt++] = seed;
  mark[seed] = 1;
  for (uint32_t h = 0; h < nt && (!lost || h < 1); h++)
    for (uint32_t k = g->d->ch_off[touched[h]]; k < g->d->ch_off[touched[h] + 1]; k++) {
      uint32_t c = g->d->ch[k];
      if (!mark[c] && (!lost || g->s[c] != D)) {
        mark[c] = 1;
        touched[nt++] = c;
      }
    }
  for (uint32_t i = 0; i < nt; i++)
    reset_one(g, touched[i]);
  for (uint32_t i = 0; i < nt; i++)
    if (parents_done(g, touched[i]))
      ready(g, touched[i]);
  free(touched);
  free(mark);
}

/* Compares g's policy with a rebuild from g's states, then plays both to
 * the end of the dag (ic: pick by pick; the others: the ready set). */
static void compare_with_rebuild(game *g) {
  uint32_t n = g->d->n;
  void *ref = g->ops->create(g->d, 7);
  assert_non_null(ref);
  for (uint32_t v = 0; v < n; v++)
    if (g->s[v] == D)
      g->ops->executed(ref, v);
  for (uint32_t v = 0; v < n; v++)
    if (g->s[v] == R)
      g->ops->ready(ref, v);
  uint32_t *got = malloc(n * sizeof *got), *want = malloc(n * sizeof *want);
  assert_non_null(got);
  assert_non_null(want);
  for (;;) {
    uint32_t ng = 0, nw = 0, v;
    while (pick(g, &v) == 0)
      got[ng++] = v;
    while (g->ops->pick(ref, &v) == 0)
      want[nw++] = v;
    assert_int_equal(ng, nw);
    if (!ng)
      break;
    uint8_t *seen = calloc(n, 1);
    assert_non_null(seen);
    for (uint32_t i = 0; i < ng; i++) {
      if (g->ops == &cairn__policy_ic)
        assert_int_equal(got[i], want[i]);
      seen[got[i]] = 1;
    }
    for (uint32_t i = 0; i < nw; i++)
      assert_true(seen[want[i]]);
    free(seen);
    for (uint32_t i = 0; i < ng; i++) { /* execute in pick order, both the same */
      g->ops->executed(ref, got[i]);
      uint32_t before = g->ftail;
      execute(g, got[i]);
      for (uint32_t k = before; k < g->ftail; k++)
        g->ops->ready(ref, g->fq[k]);
    }
  }
  for (uint32_t v = 0; v < n; v++)
    assert_int_equal(g->s[v], D);
  g->ops->destroy(ref);
  free(got);
  free(want);
}

static void play(const cairn__policy_ops *ops, uint32_t n, uint32_t maxp, uint64_t seed) {
  cairn_error err = {0};
  cairn__dag *d = cairn__gen_random(n, maxp, 3 * maxp, seed, &err);
  assert_non_null(d);
  game g = {.ops = ops, .d = d, .rng = seed * 2654435761u + 1};
  uint64_t l = 0;
  while ((1ull << l) < n)
    l++;
  g.unit = (2 * CAIRN_IC_NARROW + 1) * (2 * l + 3);
  g.st = ops->create(d, seed);
  g.s = calloc(n, 1);
  g.fcap = 4 * n;
  g.fq = malloc(g.fcap * sizeof *g.fq);
  g.last = malloc(n * sizeof *g.last);
  assert_non_null(g.last);
  assert_non_null(g.st);
  assert_non_null(g.s);
  assert_non_null(g.fq);
  for (uint32_t v = 0; v < n; v++)
    if (parents_done(&g, v))
      ready(&g, v);
  for (uint32_t step = 0; step < 4 * n; step++) {
    uint32_t dice = (uint32_t)(cairn__rand64(&g.rng) % 100), v;
    if (dice < 45)
      (void)pick(&g, &v);
    else if (dice < 85 && (v = any_in(&g, A)) != UINT32_MAX)
      execute(&g, v);
    else if (dice < 92 && (v = any_in(&g, A)) != UINT32_MAX)
      ready(&g, v); /* a lost lease */
    else if (dice >= 92 && (v = any_in(&g, D)) != UINT32_MAX)
      reopen(&g, v, dice >= 96);
  }
  /* what is still picked ends: executed (its parents are done) or handed back */
  for (uint32_t v = 0; v < n; v++)
    if (g.s[v] == A) {
      if (cairn__rand64(&g.rng) % 2)
        execute(&g, v);
      else
        ready(&g, v);
    }
  compare_with_rebuild(&g);
  ops->destroy(g.st);
  free(g.s);
  free(g.fq);
  free(g.last);
  cairn__dag_free(d);
}

static void run_policy(const cairn__policy_ops *ops) {
  for (uint64_t seed = 1; seed <= 120; seed++) {
    play(ops, 40 + (uint32_t)(seed % 5) * 40, 3, seed);        /* narrow children */
    play(ops, 60 + (uint32_t)(seed % 3) * 30, 14, seed + 1000); /* wide ones too */
  }
}

static void test_ic_reset_matches_rebuild(void **state) {
  (void)state;
  run_policy(&cairn__policy_ic);
}

static void test_fifo_reset_keeps_its_order(void **state) {
  (void)state;
  run_policy(&cairn__policy_fifo);
}

static void test_random_reset_keeps_the_ready_set(void **state) {
  (void)state;
  run_policy(&cairn__policy_random);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ic_reset_matches_rebuild),
    cmocka_unit_test(test_fifo_reset_keeps_its_order),
    cmocka_unit_test(test_random_reset_keeps_the_ready_set),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
