/* policy_ic.c — the "ic" allocation policy: keep as many tasks ELIGIBLE as
 * possible at every step of the IC Pebble Game ([Ros] §4.3.1, Figures 7-8).
 *
 * A task is COMMITTED once allocated (EAA) or executed (XEQ): under the
 * game's assumption that tasks are executed in the order allocated (§4.3.1),
 * an allocated parent counts as done when planning. For each child c keep
 *   pend[c] = parents of c not committed,   rp[c] = parents of c that are ready,
 *   xu[c]   = XOR of the numbers of c's uncommitted parents (so when
 *             pend[c] = 1, xu[c] IS the one parent left, found in O(1)).
 * A child is NARROW when it has at most CAIRN_IC_NARROW parents, WIDE otherwise.
 * Among the ready (EBU) tasks, pick the largest key, compared in this order:
 *   1. y1 = children c with pend[c] = 1: children this task makes eligible
 *      (it completes their parent sets) — every child, narrow or wide;
 *   2. y2 = narrow children c with pend[c] >= 2 = rp[c]: children whose other
 *      missing parents are all ready, so the next few picks can complete them
 *      (one step of lookahead: this is what executes reduction-tree siblings
 *      and FFT butterfly partners consecutively, i.e. parent-oriented);
 *   3. smallest pend[c] >= 2 over the narrow children (closest to eligible);
 *   4. smallest depth (longest path from a source): finishes a level / mesh
 *      diagonal before starting the next;
 *   5. largest height (longest path to a sink); 6. smallest task number.
 * Keys 4-6 are static. Keys 2-3 look at second-order neighbours (the other
 * parents of a child), so a wide child would make every event re-key all its
 * parents; they therefore count narrow children only. On dags whose tasks
 * all have at most CAIRN_IC_NARROW parents (the four families: at most 2) the keys
 * are exactly the unrestricted ones. Guarantee (checked by exhaustive search
 * in tests/unit/test_ic.c, ids shuffled): on the evolving mesh, reduction
 * mesh, reduction tree and FFT dags the profile E(t) equals the IC-optimal
 * one at every step — diagonal by diagonal, sweeping each diagonal from one
 * end, for the meshes; siblings/butterfly partners consecutively, never a
 * parent the moment it becomes eligible, for trees and FFT. For other dags it
 * is a heuristic in the spirit of Malewicz–Rosenberg–Yurkewych /
 * Cordasco–Rosenberg (measured against the exact optimum in
 * tests/unit/test_ic_random.c).
 *
 * Online: ready() may name a task whose lease was lost (it is uncommitted
 * again), executed() may arrive in any order, and an executed() for a task
 * that is ready (a late result accepted) removes it. reset() turns a task
 * of any state back to waiting (uncommitted, not ready): re-opening a done
 * task is the reverse of its events, so the keys after it are the ones a
 * rebuild from the tasks' states gives.
 *
 * Cost: an indexed binary heap of ready tasks whose keys are kept up to date
 * incrementally. An event on v changes pend/rp/xu of v's children only; a
 * narrow child c passes the change to its ready parents (at most CAIRN_IC_NARROW),
 * a wide child only to the parent xu[c] when pend[c] enters or leaves 1. So
 * ready(v), pick, executed(v) and reset(v) each cost at most
 *   deg+(v) · (2·CAIRN_IC_NARROW + 1) key updates of O(CAIRN_IC_NARROW) each, plus as many
 *   heap re-sifts of O(log n) each: O(deg+(v) · log n),
 * whatever the parents' degrees (ready(v) also keys v from scratch,
 * O(deg+(v))). cairn__policy_ic_work() counts these steps for tests.
 * create() is O(n + m). Memory: 73 bytes per task plus the dag.
 */
#include <stdlib.h>

#include "plan/policy.h"

enum { ST_WAIT, ST_READY, ST_ALLOC, ST_DONE };
#define NO_POS UINT32_MAX
#define NB (CAIRN_IC_NARROW - 1) /* buckets: pend = 2 .. CAIRN_IC_NARROW */

typedef struct ickey {
  uint32_t y1, y2, close; /* close = smallest pend >= 2 over narrow children */
} ickey;

typedef struct ic {
  const cairn__dag *d;
  uint8_t *st;
  uint32_t *pend, *rp, *xu, *depth, *height, *pos, *heap;
  uint32_t *bk; /* bk[u*NB + p-2] = narrow children of ready u with pend = p */
  ickey *key;
  uint32_t size;
  uint64_t work; /* key updates + heap steps, for tests */
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
    p->work++;
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
    p->work++;
    if (l + 1 < p->size && better(p, p->heap[l + 1], p->heap[l]))
      best = l + 1;
    if (!better(p, p->heap[best], v))
      break;
    heap_set(p, i, p->heap[best]);
    i = best;
  }
  heap_set(p, i, v);
}

static void resift(ic *p, uint32_t u) {
  sift_up(p, p->pos[u]);
  sift_down(p, p->pos[u]);
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

static int narrow(const ic *p, uint32_t c) { return cairn__dag_nparents(p->d, c) <= CAIRN_IC_NARROW; }

static void set_close(ic *p, uint32_t u) {
  const uint32_t *b = p->bk + (size_t)u * NB;
  uint32_t k = 0;
  while (k < NB && !b[k])
    k++;
  p->key[u].close = k < NB ? k + 2 : UINT32_MAX;
}

/* Adds (sign +1) or removes (-1) child c's share, in state (pe, r), of the
 * key of u (close is left to set_close). */
static void share(ic *p, uint32_t u, uint32_t c, uint32_t pe, uint32_t r, int sign) {
  ickey *k = &p->key[u];
  p->work++;
  if (pe == 1) {
    k->y1 += (uint32_t)sign;
  } else if (pe >= 2 && narrow(p, c)) {
    p->bk[(size_t)u * NB + pe - 2] += (uint32_t)sign;
    if (pe == r)
      k->y2 += (uint32_t)sign;
  }
}

/* Keys ready task u from scratch: O(deg+(u)). */
static void compute_key(ic *p, uint32_t u) {
  const cairn__dag *d = p->d;
  p->key[u] = (ickey){0, 0, UINT32_MAX};
  for (uint32_t k = 0; k < NB; k++)
    p->bk[(size_t)u * NB + k] = 0;
  for (uint32_t i = d->ch_off[u]; i < d->ch_off[u + 1]; i++)
    share(p, u, d->ch[i], p->pend[d->ch[i]], p->rp[d->ch[i]], +1);
  set_close(p, u);
}

/* Task v's commitment changes by dc (-1 committed, +1 uncommitted again) and
 * its readiness by dr: updates v's children and the keys of their other
 * ready parents (v itself is not ready during the call). O(deg+(v) ·
 * CAIRN_IC_NARROW · log n). */
static void update_children(ic *p, uint32_t v, int dc, int dr) {
  const cairn__dag *d = p->d;
  for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++) {
    uint32_t c = d->ch[i];
    uint32_t p0 = p->pend[c], r0 = p->rp[c], x0 = p->xu[c];
    p->pend[c] += (uint32_t)dc;
    p->rp[c] += (uint32_t)dr;
    if (dc)
      p->xu[c] ^= v;
    uint32_t p1 = p->pend[c], r1 = p->rp[c];
    if (narrow(p, c)) {
      for (uint32_t k = d->par_off[c]; k < d->par_off[c + 1]; k++) {
        uint32_t u = d->par[k];
        if (p->st[u] != ST_READY)
          continue;
        share(p, u, c, p0, r0, -1);
        share(p, u, c, p1, r1, +1);
        set_close(p, u);
        resift(p, u);
      }
      continue;
    }
    /* wide: only y1 can change, and only for the one parent left */
    if (p0 == 1 && p1 != 1 && p->st[x0] == ST_READY) {
      share(p, x0, c, 1, 0, -1);
      resift(p, x0);
    }
    if (p1 == 1 && p0 != 1 && p->st[p->xu[c]] == ST_READY) {
      share(p, p->xu[c], c, 1, 0, +1);
      resift(p, p->xu[c]);
    }
  }
}

static void ic_destroy(void *self) {
  ic *p = self;
  if (!p)
    return;
  free(p->st);
  free(p->pend);
  free(p->rp);
  free(p->xu);
  free(p->depth);
  free(p->height);
  free(p->pos);
  free(p->heap);
  free(p->bk);
  free(p->key);
  free(p);
}

static void *ic_create(const cairn__dag *d, uint64_t seed) {
  (void)seed;
  ic *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  size_t n = (size_t)d->n + 1;
  p->d = d;
  p->st = calloc(n, 1);
  p->pend = malloc(n * sizeof(uint32_t));
  p->rp = calloc(n, sizeof(uint32_t));
  p->xu = calloc(n, sizeof(uint32_t));
  p->depth = malloc(n * sizeof(uint32_t));
  p->height = malloc(n * sizeof(uint32_t));
  p->pos = malloc(n * sizeof(uint32_t));
  p->heap = malloc(n * sizeof(uint32_t));
  p->bk = calloc(n * NB, sizeof(uint32_t));
  p->key = calloc(n, sizeof(ickey));
  if (!p->st || !p->pend || !p->rp || !p->xu || !p->depth || !p->height || !p->pos || !p->heap ||
      !p->bk || !p->key || cairn__dag_levels(d, p->depth, p->height) != 0) {
    ic_destroy(p);
    return NULL;
  }
  for (uint32_t v = 0; v < d->n; v++) {
    p->pend[v] = cairn__dag_nparents(d, v);
    p->pos[v] = NO_POS;
    for (uint32_t k = d->par_off[v]; k < d->par_off[v + 1]; k++)
      p->xu[v] ^= d->par[k];
  }
  return p;
}

static void ic_ready(void *self, uint32_t v) {
  ic *p = self;
  if (v >= p->d->n || p->st[v] == ST_READY || p->st[v] == ST_DONE)
    return;
  /* a lost lease un-commits v; either way v becomes ready */
  update_children(p, v, p->st[v] == ST_ALLOC ? +1 : 0, +1);
  p->st[v] = ST_READY;
  compute_key(p, v);
  heap_set(p, p->size, v);
  p->size++;
  sift_up(p, p->size - 1);
}

static int ic_pick(void *self, uint32_t *v) {
  ic *p = self;
  if (p->size == 0)
    return -1;
  uint32_t u = p->heap[0];
  heap_remove(p, u);
  p->st[u] = ST_ALLOC;
  update_children(p, u, -1, -1);
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
    update_children(p, v, -1, -1);
    break;
  case ST_WAIT:
    p->st[v] = ST_DONE;
    update_children(p, v, -1, 0);
    break;
  default:
    p->st[v] = ST_DONE;
    break;
  }
}

/* v waits again. Its commitment and readiness go back: a done or picked
 * task un-commits (its children's pend grow), a ready one leaves the heap
 * (their rp shrink). O(deg+(v) · CAIRN_IC_NARROW · log n), as an event. */
static void ic_reset(void *self, uint32_t v) {
  ic *p = self;
  if (v >= p->d->n || p->st[v] == ST_WAIT)
    return;
  uint8_t was = p->st[v];
  if (was == ST_READY)
    heap_remove(p, v);
  p->st[v] = ST_WAIT;
  update_children(p, v, was == ST_READY ? 0 : +1, was == ST_READY ? -1 : 0);
}

uint64_t cairn__policy_ic_work(const void *self) { return self ? ((const ic *)self)->work : 0; }

const cairn__policy_ops cairn__policy_ic = {
  "ic", ic_create, ic_destroy, ic_ready, ic_pick, ic_executed, ic_reset,
};
