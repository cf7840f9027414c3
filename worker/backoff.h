/* backoff.h — exponential backoff with jitter for polling and retries.
 * Each delay is drawn uniformly from [d/2, d] where d starts at min_ms and
 * doubles after every call up to max_ms; reset() goes back to min_ms.
 * Not shared between threads. Private to worker/.
 */
#ifndef CAIRN_BACKOFF_H
#define CAIRN_BACKOFF_H

#include <stdint.h>

typedef struct cairn__backoff {
  long min_ms, max_ms, cur_ms;
  uint64_t rng;
} cairn__backoff;

void cairn__backoff_init(cairn__backoff *b, long min_ms, long max_ms);
/* The next delay in milliseconds; doubles the base for the call after. */
long cairn__backoff_next(cairn__backoff *b);
void cairn__backoff_reset(cairn__backoff *b);

#endif
