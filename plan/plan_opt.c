/* plan_opt.c — exact optimum of tiny 1/C instances ([KKW] §2 model, with
 * the §4 multicast, §5.1 degree and §5.3 matching variants) by exhaustive
 * search, the yardstick for "LCF ≤ 2·OPT + 7" (Theorem 3.3).
 *
 * Search: at every integer time each idle holder either idles or starts a
 * transfer to an idle node without the message (local, 1 unit, or
 * inter-cluster, C units). Members of a cluster are interchangeable, so a
 * state is, per cluster, the sorted multiset of node states (no message /
 * idle holder / sending with r units left / receiving with r units left);
 * identical senders of one cluster choose in non-decreasing order. Depth-first
 * branch and bound with a table of the earliest time each state was reached.
 * Exponential: limited to N <= 8 nodes and C <= 6. */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define MAXN 8
#define TABLE_BITS 16

typedef struct opt {
  int k, n, C;
  int first[MAXN + 1]; /* nodes of cluster c: first[c] .. first[c+1]-1 */
  int cl_of[MAXN];
  int64_t need[MAXN], deg[MAXN], B;
  uint64_t *key;
  int32_t *when;
  int64_t best;
  /* per-step scratch, kept on the search stack through `frame` */
} opt;

typedef struct frame {
  uint8_t code[MAXN];
  int senders[MAXN], ns;
  int act[MAXN]; /* cluster index, or k for idle */
  int u[MAXN];
  int64_t load[MAXN];
  int64_t bl;
  int busy;
  int64_t t;
} frame;

/* codes: 0 no message, 1 idle holder, 2..C+1 sending (r = code-1 left),
 * C+2..2C+1 receiving (r = code-C-1 left) */
static int is_holder(const opt *o, int code) { return code >= 1 && code <= o->C + 1; }

static int goal(const opt *o, const uint8_t *code) {
  for (int c = 0; c < o->k; c++) {
    int64_t h = 0;
    for (int i = o->first[c]; i < o->first[c + 1]; i++)
      h += is_holder(o, code[i]);
    if (h < o->need[c])
      return 0;
  }
  return 1;
}

static void canon(const opt *o, uint8_t *code) {
  for (int c = 0; c < o->k; c++)
    for (int i = o->first[c] + 1; i < o->first[c + 1]; i++)
      for (int j = i; j > o->first[c] && code[j - 1] > code[j]; j--) {
        uint8_t x = code[j];
        code[j] = code[j - 1];
        code[j - 1] = x;
      }
}

static uint64_t pack(const opt *o, const uint8_t *code) {
  uint64_t x = 1;
  for (int i = 0; i < o->n; i++)
    x = (x << 4) | code[i];
  return x;
}

/* 1 if this state was already reached at a time <= t; records t otherwise. */
static int seen(opt *o, uint64_t key, int64_t t) {
  size_t mask = ((size_t)1 << TABLE_BITS) - 1;
  size_t h = (size_t)((key * 0x9E3779B97F4A7C15ull) >> (64 - TABLE_BITS));
  for (size_t probe = 0; probe < 64; probe++, h = (h + 1) & mask) {
    if (o->key[h] == 0) {
      o->key[h] = key;
      o->when[h] = (int32_t)t;
      return 0;
    }
    if (o->key[h] == key) {
      if (o->when[h] <= t)
        return 1;
      o->when[h] = (int32_t)t;
      return 0;
    }
  }
  return 0; /* table crowded here: search without memo */
}

static void dfs(opt *o, const uint8_t *code, int64_t t);

static void step(opt *o, frame *f) {
  uint8_t nx[MAXN];
  memcpy(nx, f->code, sizeof nx);
  int started = 0;
  for (int s = 0; s < f->ns; s++) {
    int a = f->act[s];
    if (a == o->k)
      continue;
    started = 1;
    int src = f->senders[s], local = o->cl_of[src] == a;
    int r = local ? 1 : o->C;
    nx[src] = (uint8_t)(1 + r);
    for (int i = o->first[a]; i < o->first[a + 1]; i++)
      if (nx[i] == 0) {
        nx[i] = (uint8_t)(o->C + 1 + r);
        break;
      }
  }
  if (!started && !f->busy)
    return;
  for (int i = 0; i < o->n; i++) {
    int c = nx[i];
    if (c >= 2 && c <= o->C + 1)
      nx[i] = (uint8_t)(c - 1 == 1 ? 1 : c - 1);
    else if (c >= o->C + 2)
      nx[i] = (uint8_t)(c - o->C - 1 == 1 ? 1 : c - 1);
  }
  canon(o, nx);
  dfs(o, nx, f->t + 1);
}

static void choose(opt *o, frame *f, int s) {
  if (s == f->ns) {
    step(o, f);
    return;
  }
  int src = f->senders[s], cs = o->cl_of[src];
  int lo = (s > 0 && o->cl_of[f->senders[s - 1]] == cs) ? f->act[s - 1] : 0;
  for (int a = lo; a <= o->k; a++) {
    if (a == o->k) {
      f->act[s] = a;
      choose(o, f, s + 1);
      break;
    }
    if (f->u[a] == 0)
      continue;
    if (a != cs) {
      if (f->load[cs] + 1 > o->deg[cs] || f->load[a] + 1 > o->deg[a] || f->bl + 1 > o->B)
        continue;
      f->load[cs]++;
      f->load[a]++;
      f->bl++;
    }
    f->u[a]--;
    f->act[s] = a;
    choose(o, f, s + 1);
    f->u[a]++;
    if (a != cs) {
      f->load[cs]--;
      f->load[a]--;
      f->bl--;
    }
  }
}

static void dfs(opt *o, const uint8_t *code, int64_t t) {
  if (goal(o, code)) {
    if (t < o->best)
      o->best = t;
    return;
  }
  if (t + 1 >= o->best || seen(o, pack(o, code), t))
    return;
  frame f;
  memset(&f, 0, sizeof f);
  memcpy(f.code, code, sizeof f.code);
  f.t = t;
  for (int i = 0; i < o->n; i++) {
    int c = code[i], cl = o->cl_of[i];
    if (c == 0)
      f.u[cl]++;
    else if (c == 1)
      f.senders[f.ns++] = i;
    else {
      f.busy = 1;
      f.load[cl]++; /* only inter-cluster transfers outlast one unit */
      if (c <= o->C + 1)
        f.bl++;
    }
  }
  choose(o, &f, 0);
}

int64_t cairn__bcast_optimum(const cairn__plan_clusters *cl) {
  opt o;
  memset(&o, 0, sizeof o);
  int64_t n = 0;
  for (size_t i = 0; i < cl->k; i++)
    n += cl->size[i];
  if (cl->k > MAXN || n > MAXN || cl->C > 6 || cl->C < 1)
    return -1;
  o.k = (int)cl->k;
  o.n = (int)n;
  o.C = (int)cl->C;
  o.B = cl->B > 0 ? cl->B : MAXN;
  for (int c = 0, at = 0; c < o.k; c++) {
    o.first[c] = at;
    for (int64_t m = 0; m < cl->size[c]; m++)
      o.cl_of[at++] = c;
    o.first[c + 1] = at;
    o.need[c] = cl->members ? cl->members[c] : cl->size[c];
    o.deg[c] = cl->degree ? cl->degree[c] : MAXN;
  }
  o.key = calloc((size_t)1 << TABLE_BITS, sizeof *o.key);
  o.when = calloc((size_t)1 << TABLE_BITS, sizeof *o.when);
  if (!o.key || !o.when) {
    free(o.key);
    free(o.when);
    return -1;
  }
  /* sequential sends from the source reach everyone within (N-1)·C + 1 */
  o.best = (n - 1) * cl->C + 2;
  uint8_t code[MAXN] = {0};
  code[o.first[cl->source]] = 1;
  canon(&o, code);
  dfs(&o, code, 0);
  free(o.key);
  free(o.when);
  return o.best;
}
