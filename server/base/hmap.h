/* hmap.h — open-addressing hash map from 64-bit keys to pointers (key 0 is
 * reserved). Insert, find and remove are O(1) expected; the table doubles
 * when 3/4 full and removal uses backward shifting (no tombstones). */
#ifndef CAIRN_HMAP_H
#define CAIRN_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct cairn__hmap {
  uint64_t *keys;
  void **vals;
  size_t cap, count;
} cairn__hmap;

void cairn__hmap_init(cairn__hmap *h);
void cairn__hmap_free(cairn__hmap *h);
/* Sets key to val (replacing). Returns 0, or -1 when out of memory. */
__attribute__((warn_unused_result)) int cairn__hmap_put(cairn__hmap *h, uint64_t key, void *val);
void *cairn__hmap_get(const cairn__hmap *h, uint64_t key);
/* Removes key; returns its value or NULL. */
void *cairn__hmap_del(cairn__hmap *h, uint64_t key);

#endif
