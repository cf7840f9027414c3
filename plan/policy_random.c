/* policy_random.c — the "random" baseline policy for the IC Pebble Game
 * ([Ros] §4.3.1): pick a ready task uniformly at random (splitmix64,
 * deterministic in the seed). An array with swap-removal plus each task's
 * slot: every operation O(1); 8 bytes per task. No eligibility guarantee. */
#include <stdlib.h>

#include "plan/dag_gen.h"
#include "plan/policy.h"

#define NO_SLOT UINT32_MAX

typedef struct rnd {
  uint32_t n, count;
  uint32_t *items, *slot;
  uint64_t state;
} rnd;

static void rnd_destroy(void *self) {
  rnd *r = self;
  if (r) {
    free(r->items);
    free(r->slot);
  }
  free(r);
}

static void *rnd_create(const cairn__dag *d, uint64_t seed) {
  rnd *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  r->n = d->n;
  r->state = seed;
  r->items = malloc(((size_t)d->n + 1) * sizeof(uint32_t));
  r->slot = malloc(((size_t)d->n + 1) * sizeof(uint32_t));
  if (!r->items || !r->slot) {
    rnd_destroy(r);
    return NULL;
  }
  for (uint32_t v = 0; v < d->n; v++)
    r->slot[v] = NO_SLOT;
  return r;
}

static void rnd_ready(void *self, uint32_t v) {
  rnd *r = self;
  if (v >= r->n || r->slot[v] != NO_SLOT)
    return;
  r->slot[v] = r->count;
  r->items[r->count++] = v;
}

static void rnd_take(rnd *r, uint32_t i) {
  uint32_t v = r->items[i], last = r->items[--r->count];
  r->items[i] = last;
  r->slot[last] = i;
  r->slot[v] = NO_SLOT;
}

static int rnd_pick(void *self, uint32_t *v) {
  rnd *r = self;
  if (!r->count)
    return -1;
  uint32_t i = (uint32_t)(cairn__rand64(&r->state) % r->count);
  *v = r->items[i];
  rnd_take(r, i);
  return 0;
}

static void rnd_executed(void *self, uint32_t v) {
  rnd *r = self;
  if (v < r->n && r->slot[v] != NO_SLOT) /* a late result for a re-readied task */
    rnd_take(r, r->slot[v]);
}

/* A reset takes v out of the ready set like a late result does. */
const cairn__policy_ops cairn__policy_random = {
  "random", rnd_create, rnd_destroy, rnd_ready, rnd_pick, rnd_executed, rnd_executed,
};
