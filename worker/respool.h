/* respool.h — the worker's own record of the resources its tasks hold: the
 * offer it reports to the master (cores, memory, disk; detected from the
 * machine unless configured) and what its running tasks requested. A task
 * thread takes its task's request before running it and gives it back after;
 * a request that does not fit what is free waits (the master hands out only
 * what fits its own view of the leases, so this waits only while the two
 * views differ, e.g. a result delivered whose task has not given its cores
 * back yet). Thread-safe. Private to worker/. */
#ifndef CAIRN_RESPOOL_H
#define CAIRN_RESPOOL_H

#include <pthread.h>

#include "common/error.h"
#include "common/resources.h"
#include "worker/stopper.h"

typedef struct cairn__respool {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cairn__resources total; /* the offer (fixed) */
  cairn__resources used;  /* what the running tasks requested */
  cairn__resources peak;  /* field-wise largest of used so far */
} cairn__respool;

/* Returns 0, or -1 when the mutex or condition cannot be made. */
int cairn__respool_init(cairn__respool *p, const cairn__resources *total);
void cairn__respool_destroy(cairn__respool *p);

enum { CAIRN__POOL_TAKEN = 0, CAIRN__POOL_BUSY = 1, CAIRN__POOL_CANCELLED = 2,
       CAIRN__POOL_NEVER = -1 };
/* Takes req: CAIRN__POOL_TAKEN; CAIRN__POOL_NEVER (at once) when req
 * exceeds the whole offer. Else waits until it fits (CAIRN__POOL_TAKEN) or
 * cancel (may be NULL: wait for good) says give up (CAIRN__POOL_CANCELLED),
 * checking it every 50 ms. */
int cairn__respool_acquire(cairn__respool *p, const cairn__resources *req,
                           const cairn__cancel *cancel);
/* Takes req when it fits now (CAIRN__POOL_TAKEN), else CAIRN__POOL_BUSY or
 * CAIRN__POOL_NEVER; never waits. */
int cairn__respool_try(cairn__respool *p, const cairn__resources *req);
/* Gives back what an acquire took. */
void cairn__respool_release(cairn__respool *p, const cairn__resources *req);
/* Copies of used and peak. */
void cairn__respool_usage(cairn__respool *p, cairn__resources *used, cairn__resources *peak);

/* The MiB of "MemAvailable:" in /proc/meminfo text (else of "MemTotal:"),
 * or -1 when it names neither. Pure. */
long long cairn__meminfo_mib(const char *text);
/* What this machine offers: its online CPUs, its available memory (else
 * total) and the free disk of the file system holding dir, each capped to
 * the bounds of resources.h (at least one core). */
void cairn__resources_detect(const char *dir, cairn__resources *out);

#endif
