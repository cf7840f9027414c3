/* policy.c — the policy registry and the FIFO baseline (earliest eligible
 * first: a ring of task numbers; every operation O(1)). The "ic" policy is in
 * policy_ic.c, "random" in policy_random.c. */
#include "common/policy.h"

#include <stdlib.h>
#include <string.h>

static const cairn_policy_ops *const registry[] = {
  &cairn_policy_fifo,
  &cairn_policy_ic,
  &cairn_policy_random,
};
static const char *const names[] = {"fifo", "ic", "random", NULL};

const cairn_policy_ops *cairn_policy_find(const char *name) {
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (strcmp(registry[i]->name, name) == 0)
      return registry[i];
  return NULL;
}

const char *const *cairn_policy_names(void) { return names; }

typedef struct fifo {
  uint32_t *ring;
  uint32_t cap, head, count;
} fifo;

static void *fifo_create(const cairn_dag *d, uint64_t seed) {
  (void)seed;
  fifo *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->cap = d->n ? d->n : 1;
  f->ring = malloc((size_t)f->cap * sizeof(uint32_t));
  if (!f->ring) {
    free(f);
    return NULL;
  }
  return f;
}

static void fifo_destroy(void *self) {
  fifo *f = self;
  if (f)
    free(f->ring);
  free(f);
}

static void fifo_ready(void *self, uint32_t v) {
  fifo *f = self;
  if (f->count == f->cap)
    return; /* cannot happen while callers keep the contract */
  f->ring[(f->head + f->count) % f->cap] = v;
  f->count++;
}

static int fifo_pick(void *self, uint32_t *v) {
  fifo *f = self;
  if (!f->count)
    return -1;
  *v = f->ring[f->head];
  f->head = (f->head + 1) % f->cap;
  f->count--;
  return 0;
}

static void fifo_executed(void *self, uint32_t v) {
  (void)self;
  (void)v;
}

const cairn_policy_ops cairn_policy_fifo = {
  "fifo", fifo_create, fifo_destroy, fifo_ready, fifo_pick, fifo_executed,
};
