/* backoff.c — exponential backoff with jitter (xorshift64* random source). */
#include "worker/backoff.h"

#include <pthread.h>
#include <time.h>
#include <unistd.h>

void cairn__backoff_init(cairn__backoff *b, long min_ms, long max_ms) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  b->min_ms = min_ms > 0 ? min_ms : 1;
  b->max_ms = max_ms > b->min_ms ? max_ms : b->min_ms;
  b->cur_ms = b->min_ms;
  b->rng = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 20) ^ ((uint64_t)getpid() << 40) ^
           (uint64_t)(uintptr_t)b ^ (uint64_t)pthread_self();
  if (b->rng == 0)
    b->rng = 0x9E3779B97F4A7C15ull;
}

static uint64_t next_random(cairn__backoff *b) {
  b->rng ^= b->rng >> 12;
  b->rng ^= b->rng << 25;
  b->rng ^= b->rng >> 27;
  return b->rng * 0x2545F4914F6CDD1Dull;
}

long cairn__backoff_next(cairn__backoff *b) {
  long d = b->cur_ms;
  long half = d / 2;
  long delay = half + (long)(next_random(b) % (uint64_t)(d - half + 1));
  b->cur_ms = d > b->max_ms / 2 ? b->max_ms : d * 2;
  return delay;
}

void cairn__backoff_reset(cairn__backoff *b) { b->cur_ms = b->min_ms; }
