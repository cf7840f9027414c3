/* plan_lcf.c — Largest Cluster First and its variants in the 1/C cluster
 * model and the postal model ([KKW]: Khuller, Kim, Wan, "Broadcasting on
 * Networks of Workstations").
 *
 *   LCF broadcast            §3    ≤ 2·OPT + 7 (Theorem 3.3)
 *   LCF multicast            §4    ≤ 2·OPT + 10 (Theorem 4.3)
 *   bounded degree           §5.1  ≤ 3·OPT + 7 (Theorem 5.1), multicast §5.2 ≤ 3·OPT + 10
 *   bounded-size matching    §5.3  ≤ 2·OPT + 6 (Theorem 5.5), multicast §5.4 ≤ 2·OPT + 10
 *   postal LCF               §6.1  ≤ 3·OPT + 4 (Theorem 6.3)
 *   lower bounds             Theorem 3.2, Lemma 3.3, Theorem 4.2, Lemma 5.1,
 *                            Theorem 5.4, Lemma 6.4
 *
 * Every planner works at cluster granularity: an event-driven simulation over
 * the clusters (a binary heap of "cluster idle at time t" events) that emits
 * the compact form of plan.h (segments), expanded to member-level transfers
 * only on request. The source cluster does local doubling rounds; a cluster
 * whose members all hold the message sends, every C units, one copy per
 * member to the largest clusters that have not been sent one; a cluster that
 * is still broadcasting locally interrupts for one global step when it holds
 * at least as many copies as there are clusters left (footnote 1 of §3).
 * LCF(m) (§4) stops starting transfers once m nodes hold the message.
 *
 * Complexity: O(k log k + E log k) with E = Σ_i ⌈log2 n_i⌉ + k events, i.e.
 * independent of the number of nodes beyond the logarithm; expansion is
 * O(N). Lower bounds: O(k log k). */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define NEVER INT64_MAX

static int64_t ceil_log2(int64_t x) {
  if (x <= 1)
    return 0;
  return 64 - __builtin_clzll((unsigned long long)(x - 1));
}

static int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }
static int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }

/* ---- compact form --------------------------------------------------------- */

void cairn__bcast_compact_free(cairn__bcast_compact *c) {
  if (!c)
    return;
  free(c->seg);
  free(c->dest);
  memset(c, 0, sizeof *c);
}

static int push_seg(cairn__bcast_compact *c, uint32_t cluster, uint32_t kind, int64_t start, int64_t a,
                    int64_t b) {
  if (c->nseg == c->capseg) {
    size_t nc = c->capseg ? c->capseg * 2 : 256;
    cairn__bcast_seg *p = realloc(c->seg, nc * sizeof *p);
    if (!p)
      return -1;
    c->seg = p;
    c->capseg = nc;
  }
  c->seg[c->nseg++] = (cairn__bcast_seg){cluster, kind, start, a, b};
  int64_t end = start + (kind == CAIRN_BCAST_LOCAL ? 1 : c->C);
  if (end > c->makespan)
    c->makespan = end;
  return 0;
}

static int push_dest(cairn__bcast_compact *c, uint32_t d) {
  if (c->ndest == c->capdest) {
    size_t nc = c->capdest ? c->capdest * 2 : 256;
    uint32_t *p = realloc(c->dest, nc * sizeof *p);
    if (!p)
      return -1;
    c->dest = p;
    c->capdest = nc;
  }
  c->dest[c->ndest++] = d;
  return 0;
}

cairn_status cairn__bcast_expand(const cairn__bcast_compact *c, cairn__plan_schedule *out, cairn_error *err) {
  for (size_t s = 0; s < c->nseg; s++) {
    const cairn__bcast_seg *g = &c->seg[s];
    double t0 = (double)g->start;
    if (g->kind == CAIRN_BCAST_LOCAL) {
      for (int64_t j = 0; j < g->b - g->a; j++) {
        cairn__plan_node from = {g->cluster, j}, to = {g->cluster, g->a + j};
        if (cairn__plan_schedule_add(out, 0, from, &to, 1, t0, t0 + 1))
          return cairn__error_set(err, CAIRN_ENOMEM, "out of memory expanding the schedule");
      }
    } else {
      for (int64_t j = 0; j < g->a; j++) {
        cairn__plan_node from = {g->cluster, j}, to = {c->dest[g->b + j], 0};
        if (cairn__plan_schedule_add(out, 0, from, &to, 1, t0, t0 + (double)c->C))
          return cairn__error_set(err, CAIRN_ENOMEM, "out of memory expanding the schedule");
      }
    }
  }
  return CAIRN_OK;
}

/* ---- the event-driven LCF engine ----------------------------------------- */

typedef struct ev {
  int64_t t;
  uint32_t c;
} ev;

typedef struct engine {
  size_t k;
  size_t src;
  const int64_t *size; /* sizes LCF works with */
  int64_t C;
  int postal;
  int64_t stop_at; /* LCF(m): no new transfer once this many nodes hold it */
  cairn__bcast_compact *out;
  int64_t *cnt, *pend, *free_at;
  uint8_t *informed;
  uint32_t *order; /* targets, largest first */
  size_t norder, next;
  ev *heap;
  size_t nheap;
  uint32_t *ready;
  int64_t total, quiet;
  int stopped, oom;
} engine;

static void heap_push(engine *e, int64_t t, uint32_t c) {
  size_t i = e->nheap++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (e->heap[p].t <= t)
      break;
    e->heap[i] = e->heap[p];
    i = p;
  }
  e->heap[i] = (ev){t, c};
}

static ev heap_pop(engine *e) {
  ev top = e->heap[0], last = e->heap[--e->nheap];
  size_t i = 0, n = e->nheap;
  for (;;) {
    size_t l = 2 * i + 1;
    if (l >= n)
      break;
    if (l + 1 < n && e->heap[l + 1].t < e->heap[l].t)
      l++;
    if (e->heap[l].t >= last.t)
      break;
    e->heap[i] = e->heap[l];
    i = l;
  }
  if (n)
    e->heap[i] = last;
  return top;
}

/* Clusters other than src, largest first (ties by index). */
typedef struct keyed {
  int64_t size;
  uint32_t c;
} keyed;
static int keyed_cmp(const void *a, const void *b) {
  const keyed *x = a, *y = b;
  if (x->size != y->size)
    return x->size > y->size ? -1 : 1;
  return (x->c > y->c) - (x->c < y->c);
}

static int sorted_targets(const int64_t *size, size_t k, size_t src, uint32_t *order) {
  keyed *tmp = malloc((k ? k : 1) * sizeof *tmp);
  if (!tmp)
    return -1;
  size_t n = 0;
  for (size_t i = 0; i < k; i++)
    if (i != src)
      tmp[n++] = (keyed){size[i], (uint32_t)i};
  qsort(tmp, n, sizeof *tmp, keyed_cmp);
  for (size_t i = 0; i < n; i++)
    order[i] = tmp[i].c;
  free(tmp);
  return 0;
}

static void engine_free(engine *e) {
  free(e->cnt);
  free(e->pend);
  free(e->free_at);
  free(e->informed);
  free(e->order);
  free(e->heap);
  free(e->ready);
}

static cairn_status engine_init(engine *e, const cairn__plan_clusters *cl, const int64_t *size, int postal,
                                cairn__bcast_compact *out, cairn_error *err) {
  memset(e, 0, sizeof *e);
  size_t k = cl->k;
  e->k = k;
  e->src = cl->source;
  e->size = size;
  e->C = cl->C;
  e->postal = postal;
  e->stop_at = NEVER;
  e->out = out;
  memset(out, 0, sizeof *out);
  out->postal = postal;
  out->C = cl->C;
  out->k = k;
  e->cnt = calloc(k, sizeof *e->cnt);
  e->pend = calloc(k, sizeof *e->pend);
  e->free_at = calloc(k, sizeof *e->free_at);
  e->informed = calloc(k, 1);
  e->order = malloc(k * sizeof *e->order);
  e->heap = malloc(k * sizeof *e->heap);
  e->ready = malloc(k * sizeof *e->ready);
  if (!e->cnt || !e->pend || !e->free_at || !e->informed || !e->order || !e->heap || !e->ready ||
      sorted_targets(size, k, cl->source, e->order)) {
    engine_free(e);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning %zu clusters", k);
  }
  e->norder = k - 1;
  return CAIRN_OK;
}

static void engine_global(engine *e, uint32_t i, int64_t t, int64_t x) {
  if (push_seg(e->out, i, CAIRN_BCAST_GLOBAL, t, x, (int64_t)e->out->ndest))
    e->oom = 1;
  for (int64_t j = 0; j < x; j++) {
    uint32_t d = e->order[e->next++];
    if (push_dest(e->out, d))
      e->oom = 1;
    e->informed[d] = 1;
    e->pend[d] = 1;
    heap_push(e, t + e->C, d);
  }
  e->pend[i] = e->cnt[i];
  heap_push(e, t + (e->postal ? 1 : e->C), i);
  e->quiet = max64(e->quiet, t + e->C);
}

static void engine_act(engine *e, uint32_t i, int64_t t) {
  int64_t rem = (int64_t)(e->norder - e->next);
  int64_t c = e->cnt[i], s = e->size[i];
  if (c < s) {
    if (rem > 0 && c >= rem) {
      engine_global(e, i, t, rem);
    } else {
      int64_t nc = min64(2 * c, s);
      if (push_seg(e->out, i, CAIRN_BCAST_LOCAL, t, c, nc))
        e->oom = 1;
      e->pend[i] = nc;
      heap_push(e, t + 1, i);
      e->quiet = max64(e->quiet, t + 1);
    }
  } else if (rem > 0) {
    engine_global(e, i, t, min64(c, rem));
  }
}

/* Runs LCF(stop_at) to quiescence: afterwards cnt[i] holders of cluster i are
 * idle from free_at[i]; e->quiet is the end of the last transfer. */
static cairn_status engine_run(engine *e, cairn_error *err) {
  e->informed[e->src] = 1;
  e->cnt[e->src] = 0;
  e->pend[e->src] = 1;
  heap_push(e, 0, (uint32_t)e->src);
  while (e->nheap) {
    int64_t t = e->heap[0].t;
    size_t nr = 0;
    while (e->nheap && e->heap[0].t == t) {
      ev x = heap_pop(e);
      e->ready[nr++] = x.c;
      e->total += e->pend[x.c] - e->cnt[x.c];
      e->cnt[x.c] = e->pend[x.c];
      e->free_at[x.c] = t;
    }
    if (e->total >= e->stop_at)
      e->stopped = 1;
    if (e->stopped)
      continue;
    for (size_t r = 0; r < nr; r++)
      engine_act(e, e->ready[r], t);
    if (e->oom)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  }
  return CAIRN_OK;
}

/* Local doubling in cluster i from time *t until `target` members hold it. */
static int local_to(cairn__bcast_compact *out, uint32_t i, int64_t *cnt, int64_t *t, int64_t target) {
  while (*cnt < target) {
    int64_t nc = min64(2 * *cnt, target);
    if (push_seg(out, i, CAIRN_BCAST_LOCAL, *t, *cnt, nc))
      return -1;
    *cnt = nc;
    (*t)++;
  }
  return 0;
}

/* Phases 2 and 3 shared by LCF multicast (§4) and bounded-size matching
 * (§5.3–5.4). After the engine has stopped, every `cap` C units (cap = 0:
 * all at once) idle holders send one copy each to the largest clusters with
 * need[i] set that hold nothing; then every cluster i does local doubling to
 * final[i] members, starting when it is no longer a sender. */
static cairn_status finish_phases(engine *e, const uint8_t *need, const int64_t *final, int64_t cap,
                                  cairn_error *err) {
  size_t k = e->k;
  cairn_status st = CAIRN_OK;
  uint32_t *waiting = malloc((k ? k : 1) * sizeof *waiting);
  uint32_t *holders = malloc((k ? k : 1) * sizeof *holders);
  int64_t *busy = malloc((k ? k : 1) * sizeof *busy);
  if (!waiting || !holders || !busy) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    goto out;
  }
  size_t nwaiting = 0, nh = 0;
  for (size_t r = 0; r < e->norder; r++) {
    uint32_t c = e->order[r];
    if (need[c] && !e->informed[c])
      waiting[nwaiting++] = c;
  }
  /* holders: relay clusters (no need of their own) first, so that clusters
   * that must still broadcast locally are used as senders as little as
   * possible */
  for (int pass = 0; pass < 2; pass++)
    for (size_t c = 0; c < k; c++)
      if (e->informed[c] && e->cnt[c] > 0 && (pass == 0) == (!need[c] && c != e->src))
        holders[nh++] = (uint32_t)c;
  for (size_t c = 0; c < k; c++)
    busy[c] = e->free_at[c];
  int64_t w = e->quiet;
  size_t done = 0;
  while (done < nwaiting) {
    int64_t budget = cap > 0 ? cap : INT64_MAX;
    size_t nh_now = nh;
    for (size_t h = 0; h < nh_now && done < nwaiting && budget > 0; h++) {
      uint32_t c = holders[h];
      int64_t x = min64(min64(e->cnt[c], budget), (int64_t)(nwaiting - done));
      if (push_seg(e->out, c, CAIRN_BCAST_GLOBAL, w, x, (int64_t)e->out->ndest)) {
        st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
        goto out;
      }
      for (int64_t j = 0; j < x; j++) {
        uint32_t d = waiting[done++];
        if (push_dest(e->out, d)) {
          st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
          goto out;
        }
        e->informed[d] = 1;
        e->cnt[d] = 1;
        busy[d] = w + e->C;
        holders[nh++] = d;
      }
      busy[c] = w + e->C;
      budget -= x;
    }
    w += e->C;
  }
  for (size_t c = 0; c < k; c++) {
    if (!e->informed[c] || e->cnt[c] >= final[c])
      continue;
    int64_t t = busy[c];
    if (local_to(e->out, (uint32_t)c, &e->cnt[c], &t, final[c])) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
      goto out;
    }
  }
out:
  free(waiting);
  free(holders);
  free(busy);
  return st;
}

/* Multicast (§4) on working sizes `size` with final targets `final`, global
 * cap B (0 = none, §5.4). */
static cairn_status multicast(const cairn__plan_clusters *cl, const int64_t *size, const int64_t *final,
                              int64_t B, cairn__bcast_compact *out, cairn_error *err) {
  engine e;
  size_t k = cl->k;
  cairn_status st = engine_init(&e, cl, size, 0, out, err);
  if (st != CAIRN_OK)
    return st;
  uint8_t *need = calloc(k, 1);
  if (!need) {
    engine_free(&e);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  }
  int64_t kp = 0;
  for (size_t i = 0; i < k; i++)
    if (i != cl->source && final[i] > 0) {
      need[i] = 1;
      kp++;
    }
  /* LCF(k'), or LCF(B) when k' > B (§5.4) */
  e.stop_at = (B > 0 && kp > B) ? B : kp;
  if (kp == 0)
    e.stop_at = 1;
  st = engine_run(&e, err);
  if (st == CAIRN_OK)
    st = finish_phases(&e, need, final, (B > 0 && kp > B) ? B : 0, err);
  free(need);
  engine_free(&e);
  return st;
}

static int64_t *dup_sizes(const cairn__plan_clusters *cl) {
  int64_t *v = malloc(cl->k * sizeof *v);
  if (v)
    memcpy(v, cl->size, cl->k * sizeof *v);
  return v;
}

static cairn_status broadcast_full(const cairn__plan_clusters *cl, const int64_t *size, int postal,
                                   cairn__bcast_compact *out, cairn_error *err) {
  engine e;
  cairn_status st = engine_init(&e, cl, size, postal, out, err);
  if (st != CAIRN_OK)
    return st;
  st = engine_run(&e, err);
  /* bounded degree phase 2: local doubling to the whole cluster */
  for (size_t c = 0; st == CAIRN_OK && c < cl->k; c++) {
    int64_t t = e.free_at[c];
    if (local_to(out, (uint32_t)c, &e.cnt[c], &t, cl->size[c]))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  }
  engine_free(&e);
  return st;
}

cairn_status cairn__bcast_lcf(const cairn__plan_clusters *cl, cairn__bcast_compact *out, cairn_error *err) {
  memset(out, 0, sizeof *out);
  if (!cl->members)
    return broadcast_full(cl, cl->size, 0, out, err);
  int64_t *fin = dup_sizes(cl);
  if (!fin)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  for (size_t i = 0; i < cl->k; i++)
    fin[i] = cl->members[i];
  if (fin[cl->source] < 1)
    fin[cl->source] = 1;
  cairn_status st = multicast(cl, cl->size, fin, 0, out, err);
  free(fin);
  return st;
}

cairn_status cairn__bcast_postal_lcf(const cairn__plan_clusters *cl, cairn__bcast_compact *out, cairn_error *err) {
  memset(out, 0, sizeof *out);
  if (cl->members)
    return cairn__error_set(err, CAIRN_EINVAL, "postal LCF is a broadcast: members not supported");
  return broadcast_full(cl, cl->size, 1, out, err);
}

cairn_status cairn__bcast_bounded_degree(const cairn__plan_clusters *cl, cairn__bcast_compact *out,
                                        cairn_error *err) {
  memset(out, 0, sizeof *out);
  if (!cl->degree)
    return cairn__error_set(err, CAIRN_EINVAL, "bounded-degree needs a degree for every cluster");
  size_t k = cl->k;
  int64_t *sel = malloc(k * sizeof *sel), *fin = malloc(k * sizeof *fin);
  cairn_status st;
  if (!sel || !fin) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    goto out;
  }
  if (!cl->members) {
    /* §5.1: LCF on I(d_i, d_i), then local broadcast to the n_i */
    for (size_t i = 0; i < k; i++)
      sel[i] = min64(cl->degree[i], cl->size[i]);
    st = broadcast_full(cl, sel, 0, out, err);
    goto out;
  }
  /* §5.2: adjust n_i, select min(d_i, n_i) nodes (receivers first), LCF
   * multicast on them, then local broadcast to the n'_i receivers */
  for (size_t i = 0; i < k; i++) {
    int64_t n = cl->size[i], d = cl->degree[i], np = cl->members[i];
    if (np < d)
      n = min64(n, d);
    else
      n = min64(n, np);
    sel[i] = max64(1, min64(d, n));
    fin[i] = np;
  }
  if (fin[cl->source] < 1)
    fin[cl->source] = 1;
  st = multicast(cl, sel, fin, 0, out, err);
out:
  free(sel);
  free(fin);
  return st;
}

cairn_status cairn__bcast_bounded_matching(const cairn__plan_clusters *cl, cairn__bcast_compact *out,
                                          cairn_error *err) {
  memset(out, 0, sizeof *out);
  if (cl->B < 1)
    return cairn__error_set(err, CAIRN_EINVAL, "bounded-matching needs B >= 1");
  int64_t *fin = dup_sizes(cl);
  if (!fin)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  if (cl->members)
    for (size_t i = 0; i < cl->k; i++)
      fin[i] = cl->members[i];
  if (fin[cl->source] < 1)
    fin[cl->source] = 1;
  cairn_status st;
  if (!cl->members && (int64_t)cl->k - 1 <= cl->B) {
    st = broadcast_full(cl, cl->size, 0, out, err); /* the bound never binds */
  } else {
    /* §5.3 broadcast is §5.4 with every cluster a receiver of its whole size */
    st = multicast(cl, cl->size, fin, cl->B, out, err);
  }
  free(fin);
  return st;
}

/* ---- lower bounds --------------------------------------------------------- */

/* Global steps of LCF with free local transfers (Lemma 3.3): each step every
 * holder informs one more cluster, largest first, at most `cap` per step
 * (cap 0: unbounded). Stops once `goal` nodes hold the message (goal < 0:
 * once every cluster does). */
static int64_t zero_local_steps(const cairn__plan_clusters *cl, const int64_t *size, int64_t cap,
                                int64_t goal) {
  size_t k = cl->k;
  uint32_t *order = malloc((k ? k : 1) * sizeof *order);
  if (!order || sorted_targets(size, k, cl->source, order)) {
    free(order);
    return 0;
  }
  int64_t holders = size[cl->source], steps = 0;
  size_t next = 0;
  while (next < k - 1 && (goal < 0 || holders < goal)) {
    int64_t x = min64(holders, (int64_t)(k - 1 - next));
    if (cap > 0)
      x = min64(x, cap);
    for (int64_t j = 0; j < x; j++)
      holders += size[order[next++]];
    steps++;
  }
  free(order);
  return steps;
}

int64_t cairn__bcast_global_steps(const cairn__plan_clusters *cl) {
  return zero_local_steps(cl, cl->size, 0, -1);
}

/* Theorem 3.2 with Lemma 3.3 and the doubling bound ⌈log2 N⌉. */
static int64_t lb_broadcast(const cairn__plan_clusters *cl, const int64_t *size, int64_t cap) {
  int64_t n = 0;
  for (size_t i = 0; i < cl->k; i++)
    n += size[i];
  int64_t lg = ceil_log2(n), p = zero_local_steps(cl, size, cap, -1);
  int64_t lb = max64(lg, p * cl->C);
  if (p >= 1) {
    int64_t copies = cap > 0 ? min64(ceil_log2(min64(cap, n / 2)), lg - 1) : lg - 1;
    lb = max64(lb, (p - 1) * (cl->C - 1) + copies);
  }
  return lb;
}

/* Theorem 4.2 (with Lemma 4.2) and the doubling bound on the receivers. */
static int64_t lb_multicast(const cairn__plan_clusters *cl) {
  int64_t kp = 0, group = 0;
  for (size_t i = 0; i < cl->k; i++) {
    if (i != cl->source && cl->members[i] > 0)
      kp++;
    group += cl->members[i];
  }
  if (cl->members[cl->source] == 0)
    group++; /* the source holds it too */
  int64_t lb = ceil_log2(group);
  if (kp == 0)
    return lb;
  int64_t p = zero_local_steps(cl, cl->size, 0, kp);
  lb = max64(lb, max64(p, 1) * cl->C);
  if (p >= 1)
    lb = max64(lb, (p - 1) * (cl->C - 1) + ceil_log2(kp) - 1);
  return lb;
}

/* Lemma 6.4: LCF with free local transfers in the postal model is optimal
 * there; its completion time pC + c' bounds OPT. */
static int64_t lb_postal(const cairn__plan_clusters *cl) {
  size_t k = cl->k;
  int64_t n = 0;
  for (size_t i = 0; i < k; i++)
    n += cl->size[i];
  int64_t lb = ceil_log2(n);
  if (k == 1)
    return lb;
  uint32_t *order = malloc(k * sizeof *order);
  int64_t *arrive = malloc(k * sizeof *arrive); /* arrival time of order[j] */
  if (!order || !arrive || sorted_targets(cl->size, k, cl->source, order)) {
    free(order);
    free(arrive);
    return lb;
  }
  /* every holder starts one send per unit; each unit assigns >= 1 cluster,
   * so at most k - 1 units are simulated */
  int64_t holders = cl->size[cl->source], t = 0, last = 0;
  size_t next = 0, head = 0;
  while (next < k - 1) {
    while (head < next && arrive[head] <= t)
      holders += cl->size[order[head++]];
    int64_t x = min64(holders, (int64_t)(k - 1 - next));
    for (int64_t j = 0; j < x; j++)
      arrive[next++] = t + cl->C;
    last = t + cl->C;
    t++;
  }
  free(order);
  free(arrive);
  return max64(lb, last);
}

int64_t cairn__bcast_lower_bound(const cairn__plan_clusters *cl, int postal) {
  if (postal)
    return lb_postal(cl);
  if (cl->members)
    return lb_multicast(cl);
  int64_t lb = lb_broadcast(cl, cl->size, 0);
  if (cl->degree) {
    /* Lemma 5.1: OPT(I(d_i, d_i)) <= OPT(I(n_i, d_i)) */
    int64_t *sel = malloc(cl->k * sizeof *sel);
    if (sel) {
      for (size_t i = 0; i < cl->k; i++)
        sel[i] = min64(cl->degree[i], cl->size[i]);
      lb = max64(lb, lb_broadcast(cl, sel, 0));
      free(sel);
    }
  }
  if (cl->B > 0)
    lb = max64(lb, lb_broadcast(cl, cl->size, cl->B)); /* Theorem 5.4 */
  return lb;
}
