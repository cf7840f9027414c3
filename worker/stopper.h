/* stopper.h — how worker threads learn that they should wind down.
 *
 * Two levels, each a flag plus a self-pipe that becomes readable (and stays
 * readable) when the level is reached, so any thread blocked in poll() wakes:
 *   drain: fetch no new work, let running tasks finish (idle, max tasks);
 *   stop:  also abandon running tasks (cairn_worker_stop, fatal errors).
 * Stop implies drain. Private to worker/.
 */
#ifndef CAIRN_STOPPER_H
#define CAIRN_STOPPER_H

#include <stdatomic.h>

typedef struct cairn__stopper {
  atomic_int draining;
  atomic_int stopping;
  int drain_pipe[2];
  int stop_pipe[2];
} cairn__stopper;

/* Returns 0, or -1 (errno set) when the pipes cannot be made. */
int cairn__stopper_init(cairn__stopper *s);
void cairn__stopper_destroy(cairn__stopper *s);

/* Reach a level. Both are async-signal-safe and idempotent. */
void cairn__stopper_drain(cairn__stopper *s);
void cairn__stopper_stop(cairn__stopper *s);

int cairn__stopper_draining(const cairn__stopper *s);
int cairn__stopper_stopping(const cairn__stopper *s);

/* The fd that becomes readable on stop (for the app runner's poll()). */
int cairn__stopper_stop_fd(const cairn__stopper *s);

/* Sleeps ms milliseconds or until drain/stop. Returns 1 when woken by
 * drain or stop, 0 when the time ran out. */
int cairn__stopper_sleep(cairn__stopper *s, long ms);

/* Sleeps ms milliseconds or until stop (ignores drain). Returns 1 on stop. */
int cairn__stopper_sleep_until_stop(cairn__stopper *s, long ms);

/* Why a running task should give up: the worker stops, its lease was lost
 * (lost may be NULL), or up (may be NULL) says so: a cancel of part of a
 * task (one of its parallel input fetches, taskdir.c) chains to the task's
 * with up and adds its own flag as lost. Borrowed pointers. */
typedef struct cairn__cancel {
  cairn__stopper *stopper;
  atomic_int *lost;
  const struct cairn__cancel *up;
} cairn__cancel;

/* 1 when the task should give up. */
int cairn__cancelled(const cairn__cancel *c);
/* Sleeps ms milliseconds or until cancelled. Returns 1 when cancelled. */
int cairn__cancel_sleep(const cairn__cancel *c, long ms);

#endif
