/* hmap.c — linear-probing u64 -> pointer map with backward-shift deletion. */
#include "server/base/hmap.h"

#include <stdlib.h>

static uint64_t mix(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdULL;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ULL;
  x ^= x >> 33;
  return x;
}

void cairn__hmap_init(cairn__hmap *h) {
  h->keys = NULL;
  h->vals = NULL;
  h->cap = h->count = 0;
}

void cairn__hmap_free(cairn__hmap *h) {
  free(h->keys);
  free(h->vals);
  cairn__hmap_init(h);
}

static int grow(cairn__hmap *h) {
  size_t ncap = h->cap ? h->cap * 2 : 64;
  uint64_t *nk = calloc(ncap, sizeof *nk);
  void **nv = calloc(ncap, sizeof *nv);
  if (!nk || !nv) {
    free(nk);
    free(nv);
    return -1;
  }
  for (size_t i = 0; i < h->cap; i++)
    if (h->keys[i]) {
      size_t j = mix(h->keys[i]) & (ncap - 1);
      while (nk[j])
        j = (j + 1) & (ncap - 1);
      nk[j] = h->keys[i];
      nv[j] = h->vals[i];
    }
  free(h->keys);
  free(h->vals);
  h->keys = nk;
  h->vals = nv;
  h->cap = ncap;
  return 0;
}

int cairn__hmap_put(cairn__hmap *h, uint64_t key, void *val) {
  if ((h->count + 1) * 4 > h->cap * 3 && grow(h))
    return -1;
  size_t j = mix(key) & (h->cap - 1);
  while (h->keys[j] && h->keys[j] != key)
    j = (j + 1) & (h->cap - 1);
  if (!h->keys[j])
    h->count++;
  h->keys[j] = key;
  h->vals[j] = val;
  return 0;
}

void *cairn__hmap_get(const cairn__hmap *h, uint64_t key) {
  if (!h->cap)
    return NULL;
  size_t j = mix(key) & (h->cap - 1);
  while (h->keys[j]) {
    if (h->keys[j] == key)
      return h->vals[j];
    j = (j + 1) & (h->cap - 1);
  }
  return NULL;
}

void *cairn__hmap_del(cairn__hmap *h, uint64_t key) {
  if (!h->cap)
    return NULL;
  size_t mask = h->cap - 1, j = mix(key) & mask;
  while (h->keys[j] && h->keys[j] != key)
    j = (j + 1) & mask;
  if (!h->keys[j])
    return NULL;
  void *val = h->vals[j];
  /* Backward shift: move later entries of the cluster into the hole when
   * their home slot does not lie cyclically in (hole, their position]. */
  size_t hole = j, k = j;
  for (;;) {
    k = (k + 1) & mask;
    if (!h->keys[k])
      break;
    size_t home = mix(h->keys[k]) & mask;
    int keep = (hole <= k) ? (hole < home && home <= k) : (hole < home || home <= k);
    if (keep)
      continue;
    h->keys[hole] = h->keys[k];
    h->vals[hole] = h->vals[k];
    hole = k;
  }
  h->keys[hole] = 0;
  h->vals[hole] = NULL;
  h->count--;
  return val;
}
