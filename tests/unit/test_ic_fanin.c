/* test_ic_fanin.c — the cost bound of policy.h for the "ic" policy on wide
 * fan-in dags: R roots and K children, each child listing every root as a
 * parent (R·K edges). Every event (ready, pick, executed, a lost lease) is
 * measured by the policy's own step counter, cairn__policy_ic_work, against
 * (deg+(v) + 1) · (2·CAIRN_IC_NARROW + 1) · (2·log2 n + 3): no event may do
 * work that grows with the other parents of its children. The full size of
 * the issue (R = 4,096, K = 1,000: 4.1 M edges, ~100 MB under ASan) runs
 * here; bench/ic_fanin.c submits it to a real master. The incremental keys
 * are also checked pick by pick against a reference that recomputes every
 * key from scratch, on random dags mixing narrow and wide children. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "plan/dag.h"
#include "plan/policy.h"

/* R roots 0..R-1, then K children R..R+K-1 (each after every root), then
 * K grandchildren, the j-th after child j and after the next child (so the
 * children's own out-degrees are small and the grandchildren are narrow). */
static cairn__dag *fanin(uint32_t R, uint32_t K) {
  uint64_t m = (uint64_t)R * K + 2ull * K, e = 0;
  cairn__edge *edges = malloc(m * sizeof *edges);
  assert_non_null(edges);
  for (uint32_t c = 0; c < K; c++)
    for (uint32_t r = 0; r < R; r++)
      edges[e++] = (cairn__edge){r, R + c};
  for (uint32_t j = 0; j < K; j++) {
    edges[e++] = (cairn__edge){R + j, R + K + j};
    edges[e++] = (cairn__edge){R + (j + 1) % K, R + K + j};
  }
  cairn_error err = {0};
  cairn__dag *d = cairn__dag_build(R + 2 * K, edges, e, &err);
  free(edges);
  assert_non_null(d);
  return d;
}

static uint64_t log2u(uint32_t n) {
  uint64_t l = 0;
  while ((1ull << l) < n)
    l++;
  return l;
}

typedef struct run {
  const cairn__dag *d;
  void *st;
  uint64_t bound_unit, worst_ratio_num, worst_ratio_den, events;
} run;

/* Calls one event and checks its step count against the bound for deg+(v). */
static void check(run *r, uint32_t v, uint64_t before) {
  uint64_t w = cairn__policy_ic_work(r->st) - before;
  uint64_t bound = ((uint64_t)cairn__dag_nchildren(r->d, v) + 1) * r->bound_unit;
  if (w > bound)
    fprintf(stderr, "task %u (out-degree %u): %llu steps > bound %llu\n", v,
            cairn__dag_nchildren(r->d, v), (unsigned long long)w, (unsigned long long)bound);
  assert_true(w <= bound);
  if (w * r->worst_ratio_den > r->worst_ratio_num * ((uint64_t)cairn__dag_nchildren(r->d, v) + 1)) {
    r->worst_ratio_num = w;
    r->worst_ratio_den = (uint64_t)cairn__dag_nchildren(r->d, v) + 1;
  }
  r->events++;
}

/* Plays the whole dag: picks one task at a time; every 7th pick's lease is
 * lost (ready again) once, every 11th pick is executed only after the next
 * pick (results out of order). */
static void play(const cairn__dag *d) {
  const cairn__policy_ops *ops = &cairn__policy_ic;
  run r = {d, ops->create(d, 1), 0, 0, 1, 0};
  assert_non_null(r.st);
  uint64_t lg = log2u(d->n);
  r.bound_unit = (2ull * CAIRN_IC_NARROW + 1) * (2 * lg + 3);
  uint32_t *npend = malloc((size_t)d->n * sizeof *npend);
  uint8_t *lost = calloc(d->n, 1), *done = calloc(d->n, 1);
  assert_non_null(npend);
  assert_non_null(lost);
  assert_non_null(done);
  uint64_t w0;
  for (uint32_t v = 0; v < d->n; v++) {
    npend[v] = cairn__dag_nparents(d, v);
    if (!npend[v]) {
      w0 = cairn__policy_ic_work(r.st);
      ops->ready(r.st, v);
      check(&r, v, w0);
    }
  }
  uint32_t executed = 0, picks = 0, held = UINT32_MAX, v;
  while (executed < d->n) {
    w0 = cairn__policy_ic_work(r.st);
    int got = ops->pick(r.st, &v);
    if (got != 0) { /* nothing ready: only the held-back result is missing */
      assert_int_not_equal(held, UINT32_MAX);
      v = held;
      held = UINT32_MAX;
    } else {
      check(&r, v, w0);
      picks++;
      if (picks % 7 == 0 && !lost[v]) {
        lost[v] = 1;
        w0 = cairn__policy_ic_work(r.st);
        ops->ready(r.st, v);
        check(&r, v, w0);
        continue;
      }
      if (picks % 11 == 0 && held == UINT32_MAX) {
        held = v;
        continue;
      }
    }
    uint32_t batch[2] = {v, UINT32_MAX};
    if (got == 0 && held != UINT32_MAX && picks % 11 != 0) {
      batch[1] = held; /* the held-back result arrives after a later one */
      held = UINT32_MAX;
    }
    for (int b = 0; b < 2 && batch[b] != UINT32_MAX; b++) {
      uint32_t x = batch[b];
      assert_false(done[x]);
      done[x] = 1;
      executed++;
      w0 = cairn__policy_ic_work(r.st);
      ops->executed(r.st, x);
      check(&r, x, w0);
      for (uint32_t i = d->ch_off[x]; i < d->ch_off[x + 1]; i++)
        if (--npend[d->ch[i]] == 0) {
          w0 = cairn__policy_ic_work(r.st);
          ops->ready(r.st, d->ch[i]);
          check(&r, d->ch[i], w0);
        }
    }
  }
  assert_int_equal(ops->pick(r.st, &v), -1);
  fprintf(stderr, "ic fan-in n=%u m=%llu: %llu events, %llu steps in all, worst %.1f steps per "
                  "(out-degree+1) (bound %llu)\n",
          d->n, (unsigned long long)d->m, (unsigned long long)r.events,
          (unsigned long long)cairn__policy_ic_work(r.st),
          (double)r.worst_ratio_num / (double)r.worst_ratio_den, (unsigned long long)r.bound_unit);
  ops->destroy(r.st);
  free(npend);
  free(lost);
  free(done);
}

/* The instance: R = 4,096 roots, K = 1,000 children (wide). */
static void test_fanin_full(void **state) {
  (void)state;
  cairn__dag *d = fanin(4096, 1000);
  play(d);
  cairn__dag_free(d);
}

/* Narrow fan-in (R = CAIRN_IC_NARROW): every child passes each change to all
 * its ready parents, still within the bound. */
static void test_fanin_narrow(void **state) {
  (void)state;
  cairn__dag *d = fanin(CAIRN_IC_NARROW, 5000);
  play(d);
  cairn__dag_free(d);
}

/* Just past the narrow limit, with many roots per child. */
static void test_fanin_wide_small(void **state) {
  (void)state;
  cairn__dag *d = fanin(CAIRN_IC_NARROW + 1, 3000);
  play(d);
  cairn__dag_free(d);
}


/* A reference "ic": the same keys as policy_ic.c's comment defines them,
 * recomputed from scratch over every ready task at each pick (O(n·m)). The
 * policy's incremental keys must give the same pick at every step. */
typedef struct refic {
  const cairn__dag *d;
  uint8_t *st; /* 0 wait, 1 ready, 2 allocated, 3 done */
  uint32_t *pend, *rp, *depth, *height;
} refic;

static void ref_key(const refic *r, uint32_t u, uint32_t k[3]) {
  k[0] = k[1] = 0;
  k[2] = UINT32_MAX;
  for (uint32_t i = r->d->ch_off[u]; i < r->d->ch_off[u + 1]; i++) {
    uint32_t c = r->d->ch[i], pe = r->pend[c];
    if (pe == 1)
      k[0]++;
    else if (pe >= 2 && cairn__dag_nparents(r->d, c) <= CAIRN_IC_NARROW) {
      if (pe == r->rp[c])
        k[1]++;
      if (pe < k[2])
        k[2] = pe;
    }
  }
}

static int ref_better(const refic *r, uint32_t a, uint32_t b) {
  uint32_t x[3], y[3];
  ref_key(r, a, x);
  ref_key(r, b, y);
  if (x[0] != y[0])
    return x[0] > y[0];
  if (x[1] != y[1])
    return x[1] > y[1];
  if (x[2] != y[2])
    return x[2] < y[2];
  if (r->depth[a] != r->depth[b])
    return r->depth[a] < r->depth[b];
  if (r->height[a] != r->height[b])
    return r->height[a] > r->height[b];
  return a < b;
}

static void ref_children(refic *r, uint32_t v, int dc, int dr) {
  for (uint32_t i = r->d->ch_off[v]; i < r->d->ch_off[v + 1]; i++) {
    r->pend[r->d->ch[i]] += (uint32_t)dc;
    r->rp[r->d->ch[i]] += (uint32_t)dr;
  }
}

static void ref_ready(refic *r, uint32_t v) {
  ref_children(r, v, r->st[v] == 2 ? +1 : 0, +1);
  r->st[v] = 1;
}

static uint32_t ref_pick(refic *r) {
  uint32_t best = UINT32_MAX;
  for (uint32_t u = 0; u < r->d->n; u++)
    if (r->st[u] == 1 && (best == UINT32_MAX || ref_better(r, u, best)))
      best = u;
  if (best != UINT32_MAX) {
    r->st[best] = 2;
    ref_children(r, best, -1, -1);
  }
  return best;
}

static void ref_executed(refic *r, uint32_t v) {
  if (r->st[v] == 1)
    ref_children(r, v, -1, -1);
  r->st[v] = 3;
}

static uint64_t rnd(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/* Random dags mixing narrow children (0-3 parents) and wide ones
 * (CAIRN_IC_NARROW+1 .. 2·CAIRN_IC_NARROW+4 parents), played with lost
 * leases, results held back and returned out of order, and late results for
 * tasks made ready again: the policy picks exactly what the reference picks. */
static void test_ic_matches_reference(void **state) {
  (void)state;
  uint64_t seed = 42;
  for (int round = 0; round < 40; round++) {
    uint32_t n = 40 + (uint32_t)(rnd(&seed) % 40);
    cairn__edge *edges = malloc((size_t)n * (2 * CAIRN_IC_NARROW + 4) * sizeof *edges);
    assert_non_null(edges);
    uint64_t m = 0;
    for (uint32_t v = 1; v < n; v++) {
      uint32_t want = rnd(&seed) % 5 == 0
                          ? CAIRN_IC_NARROW + 1 + (uint32_t)(rnd(&seed) % (CAIRN_IC_NARROW + 4))
                          : (uint32_t)(rnd(&seed) % 4);
      if (want > v)
        want = v;
      uint32_t start = (uint32_t)(rnd(&seed) % (v - want + 1)); /* a run of earlier tasks */
      for (uint32_t k = 0; k < want; k++)
        edges[m++] = (cairn__edge){start + k, v};
    }
    cairn_error err = {0};
    cairn__dag *d = cairn__dag_build(n, edges, m, &err);
    free(edges);
    assert_non_null(d);
    refic r = {d, calloc(n, 1), calloc(n, 4), calloc(n, 4), calloc(n, 4), calloc(n, 4)};
    uint32_t *npend = calloc(n, 4), *held = calloc(n, 4), nheld = 0;
    uint8_t *done = calloc(n, 1);
    assert_non_null(r.st);
    assert_non_null(r.pend);
    assert_non_null(r.rp);
    assert_non_null(npend);
    assert_non_null(held);
    assert_non_null(done);
    assert_int_equal(cairn__dag_levels(d, r.depth, r.height), 0);
    void *pol = cairn__policy_ic.create(d, 1);
    assert_non_null(pol);
    for (uint32_t v = 0; v < n; v++) {
      r.pend[v] = npend[v] = cairn__dag_nparents(d, v);
      if (!npend[v]) {
        ref_ready(&r, v);
        cairn__policy_ic.ready(pol, v);
      }
    }
    uint32_t executed = 0;
    while (executed < n) {
      uint32_t v, want = ref_pick(&r);
      int got = cairn__policy_ic.pick(pol, &v);
      if (want == UINT32_MAX) {
        assert_int_equal(got, -1);
      } else {
        assert_int_equal(got, 0);
        assert_int_equal(v, want);
        uint64_t dice = rnd(&seed) % 10;
        if (dice < 2) { /* lease lost: ready again */
          ref_ready(&r, v);
          cairn__policy_ic.ready(pol, v);
          if (dice == 0)
            held[nheld++] = v; /* and its late result comes later */
          continue;
        }
        held[nheld++] = v;
      }
      /* return one held result, chosen at random (results in any order) */
      assert_true(nheld > 0);
      uint32_t k = (uint32_t)(rnd(&seed) % nheld), x = held[k];
      held[k] = held[--nheld];
      if (done[x])
        continue;
      done[x] = 1;
      executed++;
      ref_executed(&r, x);
      cairn__policy_ic.executed(pol, x);
      for (uint32_t i = d->ch_off[x]; i < d->ch_off[x + 1]; i++)
        if (--npend[d->ch[i]] == 0) {
          ref_ready(&r, d->ch[i]);
          cairn__policy_ic.ready(pol, d->ch[i]);
        }
    }
    cairn__policy_ic.destroy(pol);
    free(r.st);
    free(r.pend);
    free(r.rp);
    free(r.depth);
    free(r.height);
    free(npend);
    free(held);
    free(done);
    cairn__dag_free(d);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ic_matches_reference),
    cmocka_unit_test(test_fanin_narrow),
    cmocka_unit_test(test_fanin_wide_small),
    cmocka_unit_test(test_fanin_full),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
