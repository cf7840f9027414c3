/* ic_exact.c — exact optima of the IC Pebble Game ([Ros] §4.3.1) for
 * checking policies: every ideal enumerated (max eligibility per step), a DP
 * over subsets (max AREA), and the MRY block priority ▷. Complexities are in
 * ic_exact.h; these are for small dags only. */
#include "plan/ic_exact.h"

#include <stdlib.h>
#include <string.h>

typedef struct walk {
  const cairn__dag *d;
  const uint32_t *order;
  uint8_t *in;
  uint32_t *best;
  uint64_t seen, limit;
  uint32_t size;
} walk;

static uint32_t eligible_now(const walk *w) {
  const cairn__dag *d = w->d;
  uint32_t e = 0;
  for (uint32_t v = 0; v < d->n; v++) {
    if (w->in[v])
      continue;
    uint32_t i = d->par_off[v];
    while (i < d->par_off[v + 1] && w->in[d->par[i]])
      i++;
    e += i == d->par_off[v + 1];
  }
  return e;
}

/* Decides order[k..n): each node in or out, "in" only if its parents are. */
static int enumerate(walk *w, uint32_t k) {
  const cairn__dag *d = w->d;
  if (k == d->n) {
    if (++w->seen > w->limit)
      return -1;
    uint32_t e = eligible_now(w);
    if (e > w->best[w->size])
      w->best[w->size] = e;
    return 0;
  }
  uint32_t v = w->order[k];
  if (enumerate(w, k + 1) != 0)
    return -1;
  for (uint32_t i = d->par_off[v]; i < d->par_off[v + 1]; i++)
    if (!w->in[d->par[i]])
      return 0;
  w->in[v] = 1;
  w->size++;
  int rc = enumerate(w, k + 1);
  w->in[v] = 0;
  w->size--;
  return rc;
}

int cairn__ic_max_profile(const cairn__dag *d, uint64_t max_ideals, uint32_t *best,
                         uint64_t *ideals) {
  walk w = {d, NULL, NULL, best, 0, max_ideals, 0};
  uint32_t *order = malloc(((size_t)d->n + 1) * sizeof(uint32_t));
  w.in = calloc((size_t)d->n + 1, 1);
  int rc = -2;
  if (!order || !w.in || cairn__dag_topo_order(d, order, NULL) != 0)
    goto out;
  w.order = order;
  memset(best, 0, ((size_t)d->n + 1) * sizeof(uint32_t));
  rc = enumerate(&w, 0);
  if (ideals)
    *ideals = w.seen;
out:
  free(order);
  free(w.in);
  return rc;
}

int64_t cairn__ic_max_area(const cairn__dag *d, uint32_t *best, uint32_t *opt) {
  uint32_t n = d->n;
  if (n > 24)
    return -1;
  uint32_t pm[24] = {0};
  for (uint32_t v = 0; v < n; v++)
    for (uint32_t i = d->par_off[v]; i < d->par_off[v + 1]; i++)
      pm[v] |= 1u << d->par[i];
  uint32_t full = (uint32_t)((1ull << n) - 1);
  int32_t *val = malloc(((size_t)full + 1) * sizeof(int32_t));
  if (!val)
    return -2;
  memset(best, 0, ((size_t)n + 1) * sizeof(uint32_t));
  for (uint64_t s64 = (uint64_t)full + 1; s64-- > 0;) {
    uint32_t S = (uint32_t)s64, elig = 0, ideal = 1;
    for (uint32_t v = 0; v < n; v++) {
      if (S >> v & 1)
        ideal &= (pm[v] & S) == pm[v];
      else if ((pm[v] & S) == pm[v])
        elig |= 1u << v;
    }
    if (!ideal) {
      val[S] = -1;
      continue;
    }
    int32_t e = __builtin_popcount(elig), next = S == full ? 0 : -1;
    for (uint32_t v = 0; v < n; v++)
      if (elig >> v & 1 && val[S | 1u << v] > next)
        next = val[S | 1u << v];
    if (next < 0) { /* an ideal short of full with nothing eligible: a cycle */
      free(val);
      return -1;
    }
    val[S] = e + next;
    uint32_t t = (uint32_t)__builtin_popcount(S);
    if ((uint32_t)e > best[t])
      best[t] = (uint32_t)e;
  }
  int64_t area = val[0];
  if (opt) {
    uint32_t S = 0;
    for (uint32_t t = 0; t <= n; t++) {
      uint32_t elig = 0, pick = 0;
      int32_t bestnext = -1;
      for (uint32_t v = 0; v < n; v++)
        if (!(S >> v & 1) && (pm[v] & S) == pm[v]) {
          elig |= 1u << v;
          if (val[S | 1u << v] > bestnext) {
            bestnext = val[S | 1u << v];
            pick = v;
          }
        }
      opt[t] = (uint32_t)__builtin_popcount(elig);
      if (t < n)
        S |= 1u << pick;
    }
  }
  free(val);
  return area;
}

int cairn__ic_block_priority(const uint32_t *e1, uint32_t s1, const uint32_t *e2, uint32_t s2) {
  for (uint32_t x = 0; x <= s1; x++)
    for (uint32_t y = 0; y <= s2; y++) {
      uint32_t a = x + y < s1 ? x + y : s1, b = x + y > s1 ? x + y - s1 : 0;
      if (e1[x] + e2[y] > e1[a] + e2[b])
        return 0;
    }
  return 1;
}
