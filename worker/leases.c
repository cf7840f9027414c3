/* leases.c — table of leases held by the running tasks. */
#include "worker/leases.h"

#include <stdlib.h>
#include <time.h>

#include "common/log.h"

long long cairn__now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int cairn__leases_init(cairn__leases *l, size_t slots, size_t prefetch, size_t kept) {
  size_t n = (prefetch ? slots * (2 + prefetch) : slots) + kept;
  l->e = calloc(n ? n : 1, sizeof *l->e);
  if (!l->e)
    return -1;
  l->n = n;
  l->slots = slots;
  l->per_slot = prefetch ? 1 + prefetch : 0;
  l->kept = kept;
  l->next_epoch = 1;
  for (size_t i = 0; i < n; i++)
    atomic_init(&l->e[i].lost, 0);
  pthread_mutex_init(&l->mu, NULL);
  return 0;
}

void cairn__leases_destroy(cairn__leases *l) {
  if (!l->e)
    return;
  pthread_mutex_destroy(&l->mu);
  free(l->e);
  l->e = NULL;
}

void cairn__leases_hold(cairn__leases *l, size_t slot, long long index, long long lease_seconds) {
  pthread_mutex_lock(&l->mu);
  cairn__lease *e = &l->e[slot];
  e->held = 1;
  e->index = index;
  e->lease_seconds = lease_seconds > 0 ? lease_seconds : 1;
  e->since_ms = cairn__now_ms();
  e->epoch = l->next_epoch++;
  atomic_store(&e->lost, 0);
  pthread_mutex_unlock(&l->mu);
}

void cairn__leases_release(cairn__leases *l, size_t slot) {
  pthread_mutex_lock(&l->mu);
  l->e[slot].held = 0;
  pthread_mutex_unlock(&l->mu);
}

size_t cairn__leases_extra(const cairn__leases *l, size_t slot, size_t k) {
  return l->slots + slot * l->per_slot + k;
}

size_t cairn__leases_kept(const cairn__leases *l, size_t k) {
  return l->slots + l->slots * l->per_slot + k;
}

void cairn__leases_move(cairn__leases *l, size_t from, size_t to) {
  pthread_mutex_lock(&l->mu);
  cairn__lease *a = &l->e[from], *b = &l->e[to];
  b->held = a->held;
  b->index = a->index;
  b->lease_seconds = a->lease_seconds;
  b->since_ms = a->since_ms;
  b->epoch = a->epoch;
  atomic_store(&b->lost, atomic_load(&a->lost));
  a->held = 0;
  pthread_mutex_unlock(&l->mu);
}

atomic_int *cairn__leases_lost_flag(cairn__leases *l, size_t slot) { return &l->e[slot].lost; }

long long cairn__leases_due_in(cairn__leases *l, long long now_ms) {
  long long due = -1;
  pthread_mutex_lock(&l->mu);
  for (size_t i = 0; i < l->n; i++) {
    cairn__lease *e = &l->e[i];
    if (!e->held || atomic_load(&e->lost))
      continue;
    long long at = e->since_ms + e->lease_seconds * 1000 / 3 - now_ms;
    if (at < 0)
      at = 0;
    if (due < 0 || at < due)
      due = at;
  }
  pthread_mutex_unlock(&l->mu);
  return due;
}

unsigned long cairn__leases_begin(cairn__leases *l) {
  pthread_mutex_lock(&l->mu);
  unsigned long bound = l->next_epoch;
  pthread_mutex_unlock(&l->mu);
  return bound;
}

size_t cairn__leases_running(cairn__leases *l, int64_t *out, size_t max) {
  size_t n = 0;
  pthread_mutex_lock(&l->mu);
  for (size_t i = 0; i < l->n && n < max; i++)
    if (l->e[i].held && !atomic_load(&l->e[i].lost))
      out[n++] = l->e[i].index;
  pthread_mutex_unlock(&l->mu);
  return n;
}

size_t cairn__leases_renewed(cairn__leases *l, unsigned long bound, const long long *extended,
                             size_t n, long long now_ms) {
  size_t lost = 0;
  pthread_mutex_lock(&l->mu);
  for (size_t i = 0; i < l->n; i++) {
    cairn__lease *e = &l->e[i];
    if (!e->held || e->epoch >= bound || atomic_load(&e->lost))
      continue;
    int found = 0;
    for (size_t k = 0; k < n && !found; k++)
      found = extended[k] == e->index;
    if (found)
      e->since_ms = now_ms;
    else {
      atomic_store(&e->lost, 1);
      lost++;
      CAIRN_INFO(l->log, "lease of index %lld lost: the master no longer lists it", e->index);
    }
  }
  pthread_mutex_unlock(&l->mu);
  return lost;
}

long long cairn__leases_index(cairn__leases *l, size_t slot) {
  long long index = -1;
  pthread_mutex_lock(&l->mu);
  if (slot < l->n && l->e[slot].held && !atomic_load(&l->e[slot].lost))
    index = l->e[slot].index;
  pthread_mutex_unlock(&l->mu);
  return index;
}
