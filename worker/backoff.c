/* backoff.c — exponential backoff with jitter (xorshift64* random source) and
 * the pace of calls to a master that asked to wait (backoff.h). */
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

long cairn__retry_named_ms(long status, long retry_after_s, long retry_after_ms) {
  long ms;
  if (status != 429 && status != 503)
    return -1;
  if (retry_after_ms >= 0)
    ms = retry_after_ms;
  else if (retry_after_s >= 0)
    ms = retry_after_s > CAIRN__RETRY_AFTER_MAX_MS / 1000 ? CAIRN__RETRY_AFTER_MAX_MS
                                                          : retry_after_s * 1000;
  else
    return -1;
  return ms > CAIRN__RETRY_AFTER_MAX_MS ? CAIRN__RETRY_AFTER_MAX_MS : ms;
}

void cairn__pace_init(cairn__pace *p) {
  cairn__backoff b;
  cairn__backoff_init(&b, 1, 1);
  *p = (cairn__pace){.rng = b.rng};
  pthread_mutex_init(&p->mu, NULL);
}

void cairn__pace_destroy(cairn__pace *p) { pthread_mutex_destroy(&p->mu); }

/* A jitter from 0 to max (under p->mu). */
static long jitter(cairn__pace *p, long max) {
  cairn__backoff b = {.rng = p->rng};
  uint64_t r = next_random(&b);
  p->rng = b.rng;
  return max > 0 ? (long)(r % (uint64_t)(max + 1)) : 0;
}

long cairn__pace_turn(cairn__pace *p, long long now_ms, long long *issued) {
  pthread_mutex_lock(&p->mu);
  if (p->limited_ms && now_ms - p->limited_ms > CAIRN__PACE_CALM_MS)
    p->limited_ms = p->since_ms = 0, p->interval_ms = 0; /* calm again */
  long long at = p->next_ms > now_ms ? p->next_ms : now_ms;
  if (p->interval_ms > 0)
    p->next_ms = at + p->interval_ms + jitter(p, p->interval_ms / 20);
  pthread_mutex_unlock(&p->mu);
  *issued = at;
  return (long)(at - now_ms);
}

long cairn__pace_pending(cairn__pace *p, long long now_ms) {
  pthread_mutex_lock(&p->mu);
  long long at = p->next_ms;
  pthread_mutex_unlock(&p->mu);
  return at > now_ms ? (long)(at - now_ms) : 0;
}

void cairn__pace_note(cairn__pace *p, long named_ms, long long issued, long long now_ms) {
  if (named_ms < 0)
    return;
  pthread_mutex_lock(&p->mu);
  p->limited_total++;
  if (!p->limited_ms) { /* a new limited spell */
    p->since_ms = now_ms;
    p->interval_ms = named_ms;
  } else if (issued > p->since_ms) /* spaced and still refused: space more */
    p->interval_ms += named_ms;
  else if (named_ms > p->interval_ms) /* sent before the spell began */
    p->interval_ms = named_ms;
  if (p->interval_ms > CAIRN__RETRY_AFTER_MAX_MS)
    p->interval_ms = CAIRN__RETRY_AFTER_MAX_MS;
  p->limited_ms = now_ms;
  long long until = now_ms + named_ms + jitter(p, named_ms / 10);
  if (until > p->next_ms)
    p->next_ms = until;
  pthread_mutex_unlock(&p->mu);
}
