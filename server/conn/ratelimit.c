/* ratelimit.c — token buckets in a fixed table (ratelimit.h). */
#include "server/conn/ratelimit.h"

#include <pthread.h>
#include <stdlib.h>

enum { PROBE = 8 };

typedef struct bucket {
  uint64_t key;   /* 0: empty */
  double tokens;  /* at last */
  double last;
} bucket;

struct cairn__ratelimit {
  pthread_mutex_t mu;
  double rate, burst;
  size_t mask;
  bucket *b;
};

cairn__ratelimit *cairn__rl_create(double rate, double burst, size_t slots) {
  if (rate <= 0 || burst < 1 || slots < PROBE || (slots & (slots - 1)))
    return NULL;
  cairn__ratelimit *rl = calloc(1, sizeof *rl);
  if (!rl || !(rl->b = calloc(slots, sizeof *rl->b))) {
    free(rl);
    return NULL;
  }
  pthread_mutex_init(&rl->mu, NULL);
  rl->rate = rate;
  rl->burst = burst;
  rl->mask = slots - 1;
  return rl;
}

void cairn__rl_destroy(cairn__ratelimit *rl) {
  if (!rl)
    return;
  pthread_mutex_destroy(&rl->mu);
  free(rl->b);
  free(rl);
}

/* The tokens b holds at now. */
static double level(const cairn__ratelimit *rl, const bucket *b, double now) {
  double t = b->tokens + (now - b->last) * rl->rate;
  return t > rl->burst ? rl->burst : t;
}

static uint64_t mix(uint64_t k) {
  k ^= k >> 33;
  k *= 0xff51afd7ed558ccdULL;
  k ^= k >> 33;
  return k;
}

double cairn__rl_take(cairn__ratelimit *rl, uint64_t key, double now) {
  key = key ? key : 1;
  pthread_mutex_lock(&rl->mu);
  size_t h = (size_t)mix(key), pick = h & rl->mask;
  bucket *found = NULL;
  double fullest = -1;
  for (size_t i = 0; i < PROBE && !found; i++) {
    bucket *b = &rl->b[(h + i) & rl->mask];
    if (b->key == key)
      found = b;
    else if (!b->key && fullest < rl->burst + 1) {
      pick = (h + i) & rl->mask; /* an empty slot beats any bucket */
      fullest = rl->burst + 1;
    } else if (b->key && level(rl, b, now) > fullest) {
      pick = (h + i) & rl->mask;
      fullest = level(rl, b, now);
    }
  }
  if (!found) {
    found = &rl->b[pick];
    *found = (bucket){key, rl->burst, now};
  }
  double t = level(rl, found, now), wait = 0;
  if (t >= 1) {
    found->tokens = t - 1;
    found->last = now;
  } else
    wait = (1 - t) / rl->rate;
  pthread_mutex_unlock(&rl->mu);
  return wait;
}
