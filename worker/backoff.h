/* backoff.h — when a worker calls its master again: exponential backoff
 * with jitter for failures that name no wait, and the master's own "come
 * back later" (429 or 503 with Retry-After) for those that do. The one
 * home of the worker's retry policy. Private to worker/.
 *
 * Backoff: each delay is drawn uniformly from [d/2, d] where d starts at
 * min_ms and doubles after every call up to max_ms; reset() goes back to
 * min_ms. Not shared between threads.
 *
 * Pace (shared by every connection of one worker to its master, thread-
 * safe): an answer 429 or 503 that names a wait (Cairn-Retry-After-Ms, else
 * Retry-After in seconds; at most CAIRN__RETRY_AFTER_MAX_MS) holds every
 * later call to the master, from every thread, until that wait plus a
 * jitter of up to a tenth of it has passed. While limited (a named wait in
 * the last CAIRN__PACE_CALM_MS), calls are also spaced: each takes the next
 * turn, `interval` after the previous one (plus up to 5% jitter), so that
 * the slots of a worker do not all try again at once when a wait ends. The
 * interval starts at the first named wait and grows by the named wait of
 * every 429 or 503 a call that was already spaced still gets, so that it
 * reaches the master's own period (one request per token); after
 * CAIRN__PACE_CALM_MS without a named wait the worker calls freely again.
 * transport.c applies it (cairn__http_set_pace) to every request and
 * download whose URL is the master's.
 */
#ifndef CAIRN_BACKOFF_H
#define CAIRN_BACKOFF_H

#include <pthread.h>
#include <stdint.h>

/* The longest wait a worker takes from a master's Retry-After. */
#define CAIRN__RETRY_AFTER_MAX_MS 300000L
/* How long without a named wait ends the spacing of calls. */
#define CAIRN__PACE_CALM_MS 60000L

typedef struct cairn__backoff {
  long min_ms, max_ms, cur_ms;
  uint64_t rng;
} cairn__backoff;

void cairn__backoff_init(cairn__backoff *b, long min_ms, long max_ms);
/* The next delay in milliseconds; doubles the base for the call after. */
long cairn__backoff_next(cairn__backoff *b);
void cairn__backoff_reset(cairn__backoff *b);

typedef struct cairn__pace {
  pthread_mutex_t mu;
  long long next_ms;     /* monotonic ms before which no call goes */
  long long limited_ms;  /* when the last named wait arrived; 0: calm */
  long long since_ms;    /* when this limited spell began */
  long interval_ms;      /* spacing of calls while limited */
  uint64_t limited_total; /* answers that named a wait (for logs and tests) */
  uint64_t rng;
} cairn__pace;

/* The wait in ms an answer names: for status 429 or 503, retry_after_ms
 * when >= 0, else retry_after_s seconds when >= 0; capped at
 * CAIRN__RETRY_AFTER_MAX_MS. -1 when it names none. */
long cairn__retry_named_ms(long status, long retry_after_s, long retry_after_ms);

void cairn__pace_init(cairn__pace *p);
void cairn__pace_destroy(cairn__pace *p);
/* Takes the caller's turn at now_ms: the ms it must wait before its call
 * goes (0: at once); *issued gets the time its call is let go. */
long cairn__pace_turn(cairn__pace *p, long long now_ms, long long *issued);
/* The ms before the next call may go (0: at once), without taking a turn. */
long cairn__pace_pending(cairn__pace *p, long long now_ms);
/* Notes the answer to a call let go at issued: named_ms from
 * cairn__retry_named_ms (-1: none, nothing changes). */
void cairn__pace_note(cairn__pace *p, long named_ms, long long issued, long long now_ms);

#endif
