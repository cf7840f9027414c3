/* hmap.h — open-addressing hash map from 64-bit keys to pointers (key 0 is
 * reserved). Insert, find and remove are O(1) expected; the table doubles
 * when 3/4 full and removal uses backward shifting (no tombstones). */
#ifndef CAIRN_HMAP_H
#define CAIRN_HMAP_H

#include <stddef.h>
#include <stdint.h>

typedef struct cairn_hmap {
  uint64_t *keys;
  void **vals;
  size_t cap, count;
} cairn_hmap;

void cairn_hmap_init(cairn_hmap *h);
void cairn_hmap_free(cairn_hmap *h);
/* Sets key to val (replacing). Returns 0, or -1 when out of memory. */
__attribute__((warn_unused_result)) int cairn_hmap_put(cairn_hmap *h, uint64_t key, void *val);
void *cairn_hmap_get(const cairn_hmap *h, uint64_t key);
/* Removes key; returns its value or NULL. */
void *cairn_hmap_del(cairn_hmap *h, uint64_t key);

#endif
