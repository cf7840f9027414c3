/* policy.c — the policy registry and the FIFO baseline (earliest eligible
 * first: a list of task numbers threaded through the tasks; every operation
 * O(1)). The "ic" policy is in policy_ic.c, "random" in policy_random.c. */
#include "plan/policy.h"

#include <stdlib.h>
#include <string.h>

static const cairn__policy_ops *const registry[] = {
  &cairn__policy_fifo,
  &cairn__policy_ic,
  &cairn__policy_random,
};
static const char *const names[] = {"fifo", "ic", "random", NULL};

const cairn__policy_ops *cairn__policy_find(const char *name) {
  for (size_t i = 0; i < sizeof registry / sizeof registry[0]; i++)
    if (strcmp(registry[i]->name, name) == 0)
      return registry[i];
  return NULL;
}

const char *const *cairn__policy_names(void) { return names; }

/* The ready tasks in the order they became ready: a doubly linked list
 * threaded through two arrays indexed by task (NIL ends it; a task not in
 * the list has prev[v] == OUT). 8 bytes per task; every operation O(1). */
#define NIL UINT32_MAX
#define OUT (UINT32_MAX - 1)

typedef struct fifo {
  uint32_t n, head, tail;
  uint32_t *next, *prev;
} fifo;

static void fifo_destroy(void *self) {
  fifo *f = self;
  if (f) {
    free(f->next);
    free(f->prev);
  }
  free(f);
}

static void *fifo_create(const cairn__dag *d, uint64_t seed) {
  (void)seed;
  fifo *f = calloc(1, sizeof *f);
  if (!f)
    return NULL;
  f->n = d->n;
  f->head = f->tail = NIL;
  f->next = malloc(((size_t)d->n + 1) * sizeof(uint32_t));
  f->prev = malloc(((size_t)d->n + 1) * sizeof(uint32_t));
  if (!f->next || !f->prev) {
    fifo_destroy(f);
    return NULL;
  }
  for (uint32_t v = 0; v < d->n; v++)
    f->prev[v] = OUT;
  return f;
}

static void fifo_ready(void *self, uint32_t v) {
  fifo *f = self;
  if (v >= f->n || f->prev[v] != OUT)
    return; /* ready already */
  f->prev[v] = f->tail;
  f->next[v] = NIL;
  if (f->tail == NIL)
    f->head = v;
  else
    f->next[f->tail] = v;
  f->tail = v;
}

/* Takes v out of the list if it is in it. */
static void fifo_take(fifo *f, uint32_t v) {
  if (v >= f->n || f->prev[v] == OUT)
    return;
  uint32_t p = f->prev[v], x = f->next[v];
  if (p == NIL)
    f->head = x;
  else
    f->next[p] = x;
  if (x == NIL)
    f->tail = p;
  else
    f->prev[x] = p;
  f->prev[v] = OUT;
}

static int fifo_pick(void *self, uint32_t *v) {
  fifo *f = self;
  if (f->head == NIL)
    return -1;
  *v = f->head;
  fifo_take(f, *v);
  return 0;
}

/* A late result for a re-readied task takes it out; so does a reset. */
static void fifo_executed(void *self, uint32_t v) { fifo_take(self, v); }

const cairn__policy_ops cairn__policy_fifo = {
  "fifo", fifo_create, fifo_destroy, fifo_ready, fifo_pick, fifo_executed, fifo_executed,
};
