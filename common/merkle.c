/* merkle.c — RFC 9162 §2.1's Merkle tree, its proofs and their checks
 * (merkle.h). */
#include "common/merkle.h"

#include <string.h>

#include "common/sha256.h"

void cairn_merkle_leaf_hash(const void *data, size_t len, uint8_t out[CAIRN_MERKLE_HASH]) {
  static const uint8_t zero = 0x00;
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, &zero, 1);
  cairn__sha256_update(&c, data, len);
  cairn__sha256_final(&c, out);
}

void cairn_merkle_node_hash(const uint8_t left[CAIRN_MERKLE_HASH],
                            const uint8_t right[CAIRN_MERKLE_HASH],
                            uint8_t out[CAIRN_MERKLE_HASH]) {
  static const uint8_t one = 0x01;
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, &one, 1);
  cairn__sha256_update(&c, left, CAIRN_MERKLE_HASH);
  cairn__sha256_update(&c, right, CAIRN_MERKLE_HASH);
  cairn__sha256_final(&c, out);
}

void cairn_merkle_empty_root(uint8_t out[CAIRN_MERKLE_HASH]) {
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_final(&c, out);
}

/* The largest power of two below n (n >= 2): RFC 9162's split point k. */
static uint64_t split(uint64_t n) { return (uint64_t)1 << (63 - __builtin_clzll(n - 1)); }

int cairn_merkle_append(cairn_merkle_edge *e, const uint8_t leaf[CAIRN_MERKLE_HASH],
                        cairn_merkle_put put, void *ctx) {
  if (e->size == UINT64_MAX)
    return -1;
  uint64_t i = e->size;
  uint8_t h[CAIRN_MERKLE_HASH];
  memcpy(h, leaf, sizeof h);
  if (put(ctx, 0, i, h))
    return -1;
  unsigned level = 0;
  for (; i & 1; i >>= 1, level++) { /* each set low bit: a perfect subtree completed */
    cairn_merkle_node_hash(e->h[level], h, h);
    if (put(ctx, level + 1, i >> 1, h))
      return -1;
  }
  memcpy(e->h[level], h, sizeof h);
  e->size++;
  return 0;
}

int cairn_merkle_edge_load(cairn_merkle_edge *e, uint64_t size, cairn_merkle_get get, void *ctx) {
  e->size = size;
  for (unsigned level = 0; level < 64; level++)
    if (size >> level & 1) {
      uint64_t start = size >> (level + 1) << (level + 1);
      if (get(ctx, level, start >> level, e->h[level]))
        return -1;
    }
  return 0;
}

void cairn_merkle_edge_root(const cairn_merkle_edge *e, uint8_t out[CAIRN_MERKLE_HASH]) {
  if (!e->size)
    return cairn_merkle_empty_root(out);
  unsigned level = (unsigned)__builtin_ctzll(e->size);
  uint8_t r[CAIRN_MERKLE_HASH];
  memcpy(r, e->h[level], sizeof r);
  for (level++; level < 64; level++)
    if (e->size >> level & 1)
      cairn_merkle_node_hash(e->h[level], r, r);
  memcpy(out, r, sizeof r);
}

int cairn_merkle_subtree(uint64_t start, uint64_t end, cairn_merkle_get get, void *ctx,
                         uint8_t out[CAIRN_MERKLE_HASH]) {
  if (start >= end)
    return -1;
  uint64_t size = end - start;
  unsigned top = 63u - (unsigned)__builtin_clzll(size);
  uint64_t align = size == (uint64_t)1 << top ? size : (uint64_t)1 << (top + 1);
  if (top == 63 && size != align) /* no power of two >= size fits in 64 bits */
    align = 0;
  if (align && start % align)
    return -1;
  /* the pieces of the binary decomposition of size, left to right: a
   * perfect subtree each; folded from the right as MTH splits them */
  cairn_merkle_hash piece[64];
  unsigned n = 0;
  for (int level = (int)top; level >= 0; level--)
    if (size >> level & 1) {
      if (get(ctx, (unsigned)level, start >> level, piece[n]))
        return -1;
      start += (uint64_t)1 << level;
      n++;
    }
  for (unsigned k = n - 1; k > 0; k--)
    cairn_merkle_node_hash(piece[k - 1], piece[k], piece[k - 1]);
  memcpy(out, piece[0], CAIRN_MERKLE_HASH);
  return 0;
}

int cairn_merkle_root(uint64_t size, cairn_merkle_get get, void *ctx,
                      uint8_t out[CAIRN_MERKLE_HASH]) {
  return cairn_merkle_subtree(0, size, get, ctx, out);
}

/* Reverses path[0..n): the proofs are found root first and given leaf first. */
static void reverse(cairn_merkle_hash *path, size_t n) {
  for (size_t i = 0; i < n / 2; i++) {
    cairn_merkle_hash t;
    memcpy(t, path[i], sizeof t);
    memcpy(path[i], path[n - 1 - i], sizeof t);
    memcpy(path[n - 1 - i], t, sizeof t);
  }
}

int cairn_merkle_inclusion_proof(uint64_t index, uint64_t size, cairn_merkle_get get,
                                 void *ctx, cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF],
                                 size_t *n) {
  *n = 0;
  if (index >= size)
    return -1;
  uint64_t start = 0, m = index, len = size;
  while (len > 1) { /* PATH(m, D[start:start+len]), one level down each turn */
    uint64_t k = split(len);
    int r;
    if (m < k) {
      r = cairn_merkle_subtree(start + k, start + len, get, ctx, path[*n]);
      len = k;
    } else {
      r = cairn_merkle_subtree(start, start + k, get, ctx, path[*n]);
      start += k, m -= k, len -= k;
    }
    if (r || ++*n > CAIRN_MERKLE_MAX_PROOF - 1)
      return -1;
  }
  reverse(path, *n);
  return 0;
}

int cairn_merkle_consistency_proof(uint64_t first, uint64_t second, cairn_merkle_get get,
                                   void *ctx, cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF],
                                   size_t *n) {
  *n = 0;
  if (!first || first > second)
    return -1;
  uint64_t start = 0, m = first, len = second;
  int whole = 1; /* SUBPROOF's b: D[start:start+m] is the whole old tree */
  while (m != len) {
    uint64_t k = split(len);
    int r;
    if (m <= k) {
      r = cairn_merkle_subtree(start + k, start + len, get, ctx, path[*n]);
      len = k;
    } else {
      r = cairn_merkle_subtree(start, start + k, get, ctx, path[*n]);
      start += k, m -= k, len -= k, whole = 0;
    }
    if (r || ++*n > CAIRN_MERKLE_MAX_PROOF - 1)
      return -1;
  }
  if (!whole && cairn_merkle_subtree(start, start + m, get, ctx, path[(*n)++]))
    return -1;
  reverse(path, *n);
  return 0;
}

int cairn_merkle_verify_inclusion(uint64_t index, uint64_t size,
                                  const uint8_t leaf[CAIRN_MERKLE_HASH],
                                  const cairn_merkle_hash *path, size_t n,
                                  const uint8_t root[CAIRN_MERKLE_HASH]) {
  if (index >= size)
    return 0;
  uint64_t fn = index, sn = size - 1;
  uint8_t r[CAIRN_MERKLE_HASH];
  memcpy(r, leaf, sizeof r);
  for (size_t i = 0; i < n; i++) {
    if (sn == 0)
      return 0;
    if ((fn & 1) || fn == sn) {
      cairn_merkle_node_hash(path[i], r, r);
      while (!(fn & 1) && fn != 0)
        fn >>= 1, sn >>= 1;
    } else {
      cairn_merkle_node_hash(r, path[i], r);
    }
    fn >>= 1, sn >>= 1;
  }
  return sn == 0 && memcmp(r, root, sizeof r) == 0;
}

int cairn_merkle_verify_consistency(uint64_t first, uint64_t second,
                                    const uint8_t first_root[CAIRN_MERKLE_HASH],
                                    const uint8_t second_root[CAIRN_MERKLE_HASH],
                                    const cairn_merkle_hash *path, size_t n) {
  if (!first || first > second)
    return 0;
  if (first == second)
    return n == 0 && memcmp(first_root, second_root, CAIRN_MERKLE_HASH) == 0;
  if (n == 0)
    return 0;
  /* a first tree of a power of two leaves is a subtree of the second: the
   * path starts from its root, given separately */
  int pow2 = (first & (first - 1)) == 0;
  const uint8_t *head = pow2 ? first_root : path[0];
  size_t i = pow2 ? 0 : 1;
  uint64_t fn = first - 1, sn = second - 1;
  while (fn & 1)
    fn >>= 1, sn >>= 1;
  uint8_t fr[CAIRN_MERKLE_HASH], sr[CAIRN_MERKLE_HASH];
  memcpy(fr, head, sizeof fr);
  memcpy(sr, head, sizeof sr);
  for (; i < n; i++) {
    if (sn == 0)
      return 0;
    if ((fn & 1) || fn == sn) {
      cairn_merkle_node_hash(path[i], fr, fr);
      cairn_merkle_node_hash(path[i], sr, sr);
      while (!(fn & 1) && fn != 0)
        fn >>= 1, sn >>= 1;
    } else {
      cairn_merkle_node_hash(sr, path[i], sr);
    }
    fn >>= 1, sn >>= 1;
  }
  return sn == 0 && memcmp(fr, first_root, sizeof fr) == 0 &&
         memcmp(sr, second_root, sizeof sr) == 0;
}
