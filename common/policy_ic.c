/* policy_ic.c — the "ic" allocation policy: keep as many tasks ELIGIBLE as
 * possible at every step of the IC Pebble Game ([Ros] §4.3.1, Figures 7-8).
 *
 * A task is COMMITTED once allocated (EAA) or executed (XEQ): under the
 * game's assumption that tasks are executed in the order allocated (§4.3.1),
 * an allocated parent counts as done when planning. For each child c keep
 *   pend[c] = parents of c not committed,   rp[c] = parents of c that are ready.
 * Among the ready (EBU) tasks, pick the largest key, compared in this order:
 *   1. y1 = children c with pend[c] = 1: children this task makes eligible
 *      (it completes their parent sets);
 *   2. y2 = children c with pend[c] >= 2 = rp[c]: children whose other
 *      missing parents are all ready, so the next few picks can complete them
 *      (one step of lookahead: this is what executes reduction-tree siblings
 *      and FFT butterfly partners consecutively, i.e. parent-oriented);
 *   3. smallest pend[c] over the remaining children (closest to eligible);
 *   4. smallest depth (longest path from a source): finishes a level / mesh
 *      diagonal before starting the next;
 *   5. largest height (longest path to a sink); 6. smallest task number.
 * Keys 4-6 are static. Guarantee (checked by exhaustive search in
 * tests/unit/test_ic.c, ids shuffled): on the evolving mesh, reduction mesh,
 * reduction tree and FFT dags the profile E(t) equals the IC-optimal one at
 * every step — diagonal by diagonal, sweeping each diagonal from one end, for
 * the meshes; siblings/butterfly partners consecutively, never a parent the
 * moment it becomes eligible, for trees and FFT. For other dags it is a
 * heuristic in the spirit of Malewicz–Rosenberg–Yurkewych / Cordasco–Rosenberg
 * (measured against the exact optimum in tests/unit/test_ic_random.c).
 *
 * Online: ready() may name a task whose lease was lost (it is uncommitted
 * again), executed() may arrive in any order, and an executed() for a task
 * that is ready (a late result accepted) removes it.
 *
 * Cost: an indexed binary heap; every event on v re-keys the ready parents u
 * of v's children, each in O(deg+(u)) plus O(log n) in the heap, so an event
 * costs O(log n) on dags of bounded degree (all four families) and
 * O(Σ_{c∈ch(v)} Σ_{u∈par(c)} deg+(u) + …·log n) in general. Memory: 41 bytes
 * per task plus the dag. create() is O(n + m).
 */
#include <stdlib.h>

#include "common/policy.h"

enum { ST_WAIT, ST_READY, ST_ALLOC, ST_DONE };
#define NO_POS UINT32_MAX

typedef struct ickey {
  uint32_t y1, y2, close; /* close = smallest pend over the other children */
} ickey;

typedef struct ic {
  const cairn_dag *d;
  uint8_t *st;
  uint32_t *pend, *rp, *depth, *height, *pos, *heap;
  ickey *key;
  uint32_t size;
} ic;

/* 1 if a should be picked before b. */
static int better(const ic *p, uint32_t a, uint32_t b) {
  const ickey *x = &p->key[a], *y = &p->key[b];
  if (x->y1 != y->y1)
    return x->y1 > y->y1;
  if (x->y2 != y->y2)
    return x->y2 > y->y2;
  if (x->close != y->close)
    return x->close < y->close;
  if (p->depth[a] != p->depth[b])
    return p->depth[a] < p->depth[b];
  if (p->height[a] != p->height[b])
    return p->height[a] > p->height[b];
  return a < b;
}

static void heap_set(ic *p, uint32_t i, uint32_t v) {
  p->heap[i] = v;
  p->pos[v] = i;
}

static void sift_up(ic *p, uint32_t i) {
  uint32_t v = p->heap[i];
  while (i > 0) {
    uint32_t up = (i - 1) / 2;
    if (!better(p, v, p->heap[up]))
      break;
    heap_set(p, i, p->heap[up]);
    i = up;
  }
  heap_set(p, i, v);
}

static void sift_down(ic *p, uint32_t i) {
  uint32_t v = p->heap[i];
  for (;;) {
    uint32_t l = 2 * i + 1, best = l;
    if (l >= p->size)
      break;
    if (l + 1 < p->size && better(p, p->heap[l + 1], p->heap[l]))
      best = l + 1;
    if (!better(p, p->heap[best], v))
      break;
    heap_set(p, i, p->heap[best]);
    i = best;
  }
  heap_set(p, i, v);
}

static void heap_remove(ic *p, uint32_t v) {
  uint32_t i = p->pos[v];
  p->pos[v] = NO_POS;
  p->size--;
  if (i == p->size)
    return;
  uint32_t w = p->heap[p->size];
  heap_set(p, i, w);
  sift_down(p, i);
  if (p->pos[w] == i)
    sift_up(p, i);
}

static void compute_key(ic *p, uint32_t u) {
  const cairn_dag *d = p->d;
  ickey k = {0, 0, UINT32_MAX};
  for (uint32_t i = d->ch_off[u]; i < d->ch_off[u + 1]; i++) {
    uint32_t c = d->ch[i];
    if (p->pend[c] == 1) {
      k.y1++;
    } else if (p->pend[c] > 1) {
      if (p->pend[c] == p->rp[c])
        k.y2++;
      if (p->pend[c] < k.close)
        k.close = p->pend[c];
    }
  }
  p->key[u] = k;
}

/* Re-keys every ready parent of v's children (and v itself if ready). */
static void refresh(ic *p, uint32_t v) {
  const cairn_dag *d = p->d;
  for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++) {
    uint32_t c = d->ch[i];
    for (uint32_t k = d->par_off[c]; k < d->par_off[c + 1]; k++) {
      uint32_t u = d->par[k];
      if (p->st[u] != ST_READY)
        continue;
      compute_key(p, u);
      sift_up(p, p->pos[u]);
      sift_down(p, p->pos[u]);
    }
  }
}

/* Adds da to pend and dr to rp of every child of v. */
static void adjust_children(ic *p, uint32_t v, int da, int dr) {
  const cairn_dag *d = p->d;
  for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++) {
    uint32_t c = d->ch[i];
    p->pend[c] += (uint32_t)da;
    p->rp[c] += (uint32_t)dr;
  }
}

static void ic_destroy(void *self) {
  ic *p = self;
  if (!p)
    return;
  free(p->st);
  free(p->pend);
  free(p->rp);
  free(p->depth);
  free(p->height);
  free(p->pos);
  free(p->heap);
  free(p->key);
  free(p);
}

static void *ic_create(const cairn_dag *d, uint64_t seed) {
  (void)seed;
  ic *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  size_t n = (size_t)d->n + 1;
  p->d = d;
  p->st = calloc(n, 1);
  p->pend = malloc(n * sizeof(uint32_t));
  p->rp = calloc(n, sizeof(uint32_t));
  p->depth = malloc(n * sizeof(uint32_t));
  p->height = malloc(n * sizeof(uint32_t));
  p->pos = malloc(n * sizeof(uint32_t));
  p->heap = malloc(n * sizeof(uint32_t));
  p->key = calloc(n, sizeof(ickey));
  if (!p->st || !p->pend || !p->rp || !p->depth || !p->height || !p->pos || !p->heap || !p->key ||
      cairn_dag_levels(d, p->depth, p->height) != 0) {
    ic_destroy(p);
    return NULL;
  }
  for (uint32_t v = 0; v < d->n; v++) {
    p->pend[v] = cairn_dag_nparents(d, v);
    p->pos[v] = NO_POS;
  }
  return p;
}

static void ic_ready(void *self, uint32_t v) {
  ic *p = self;
  if (v >= p->d->n || p->st[v] == ST_READY || p->st[v] == ST_DONE)
    return;
  if (p->st[v] == ST_ALLOC) /* lease lost: no longer committed */
    adjust_children(p, v, +1, 0);
  p->st[v] = ST_READY;
  adjust_children(p, v, 0, +1);
  compute_key(p, v);
  heap_set(p, p->size, v);
  p->size++;
  sift_up(p, p->size - 1);
  refresh(p, v);
}

static int ic_pick(void *self, uint32_t *v) {
  ic *p = self;
  if (p->size == 0)
    return -1;
  uint32_t u = p->heap[0];
  heap_remove(p, u);
  p->st[u] = ST_ALLOC;
  adjust_children(p, u, -1, -1);
  refresh(p, u);
  *v = u;
  return 0;
}

static void ic_executed(void *self, uint32_t v) {
  ic *p = self;
  if (v >= p->d->n)
    return;
  switch (p->st[v]) {
  case ST_READY: /* a late result for a task that was made ready again */
    heap_remove(p, v);
    p->st[v] = ST_DONE;
    adjust_children(p, v, -1, -1);
    refresh(p, v);
    break;
  case ST_WAIT:
    p->st[v] = ST_DONE;
    adjust_children(p, v, -1, 0);
    refresh(p, v);
    break;
  default:
    p->st[v] = ST_DONE;
    break;
  }
}

const cairn_policy_ops cairn_policy_ic = {
  "ic", ic_create, ic_destroy, ic_ready, ic_pick, ic_executed,
};
