/* leases.h — the leases held by running tasks, one entry per slot, shared by
 * the task threads (which add and remove their entry) and the heartbeat
 * thread (which renews them and marks the ones the master no longer lists).
 *
 * An entry is free, or held: slot i holds entry i from the moment its work
 * offer arrives until its result is delivered or dropped. `lost` is set by
 * the heartbeat when the master's "extended" list lacks the index; the task
 * thread reads it through a cairn__cancel. Private to worker/.
 */
#ifndef CAIRN_LEASES_H
#define CAIRN_LEASES_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "common/log.h"

typedef struct cairn__lease {
  int held;
  long long index;
  long long lease_seconds;
  long long since_ms;     /* monotonic time the lease was granted or last renewed */
  unsigned long epoch;    /* registration order, to skip leases newer than a heartbeat */
  atomic_int lost;
} cairn__lease;

typedef struct cairn__leases {
  pthread_mutex_t mu;
  cairn__lease *e;
  size_t n;
  size_t slots, per_slot;       /* extra entries: slots + slot * per_slot + k */
  size_t kept;                  /* then kept entries: slots + slots * per_slot + k */
  unsigned long next_epoch;
  const cairn__logger *log;      /* borrowed: the worker's (NULL: stderr); set after init */
} cairn__leases;

/* Entries: one per slot (0 to slots - 1: the task slot i runs), then
 * 1 + prefetch per slot for the tasks it holds ahead and the results it has
 * not delivered yet (slot.c, cairn__leases_extra), then kept entries for
 * the results waiting for their master in an outbox (outbox.h,
 * cairn__leases_kept). Returns 0, or -1 on out of memory. */
int cairn__leases_init(cairn__leases *l, size_t slots, size_t prefetch, size_t kept);
/* Entry k (0 to prefetch) of slot's extra ones. */
size_t cairn__leases_extra(const cairn__leases *l, size_t slot, size_t k);
/* Kept entry k (0 to kept - 1). */
size_t cairn__leases_kept(const cairn__leases *l, size_t k);
/* Moves entry from to entry to (free), as it is: index, renewal time,
 * lost flag; from is free after. */
void cairn__leases_move(cairn__leases *l, size_t from, size_t to);
void cairn__leases_destroy(cairn__leases *l);

/* Slot i now holds index (lost cleared). */
void cairn__leases_hold(cairn__leases *l, size_t slot, long long index, long long lease_seconds);
/* Slot i holds nothing. */
void cairn__leases_release(cairn__leases *l, size_t slot);
/* The lost flag of slot i's entry (for a cairn__cancel). */
atomic_int *cairn__leases_lost_flag(cairn__leases *l, size_t slot);

/* Milliseconds until a heartbeat is due (each lease wants one every
 * lease_seconds/3 after it was granted or renewed); -1 when none is held. */
long long cairn__leases_due_in(cairn__leases *l, long long now_ms);

/* Marks the start of a heartbeat: returns the epoch bound to pass to
 * cairn__leases_renewed(). */
unsigned long cairn__leases_begin(cairn__leases *l);

/* Applies the answer of a heartbeat begun at epoch bound: every held lease
 * older than the heartbeat is renewed at now_ms when its index is among
 * extended[0..n), else marked lost. Returns how many were marked lost. */
size_t cairn__leases_renewed(cairn__leases *l, unsigned long bound, const long long *extended,
                             size_t n, long long now_ms);

/* Writes the indices held now (at most max) into out; returns how many. */
size_t cairn__leases_running(cairn__leases *l, int64_t *out, size_t max);

/* The index slot holds, or -1 when it holds none. */
long long cairn__leases_index(cairn__leases *l, size_t slot);

/* Monotonic milliseconds. */
long long cairn__now_ms(void);

#endif
