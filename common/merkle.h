/* merkle.h — the Merkle tree of RFC 9162 §2.1 (Certificate Transparency
 * v2.0; the same tree as RFC 6962 §2.1) over a log's entries: the hashes of
 * a leaf and of an interior node, the root of any tree size, the inclusion
 * and consistency proofs of §2.1.3.1 and §2.1.4.1, and their verification
 * as §2.1.3.2 and §2.1.4.2 give it.
 *
 * Pure functions over plain values. The tree is kept by the caller as its
 * perfect subtrees: node (level L, index i) is the hash of leaves
 * [i·2^L, (i+1)·2^L), written once when its last leaf is appended
 * (cairn_merkle_append reports each one through a put callback) and read
 * back through a get callback. Every proof and root reads O(log n) of them:
 * at most 2·64 for any size below 2^64.
 *
 * An append keeps the tree's right edge (cairn_merkle_edge): one hash per
 * set bit of its size, at most 64 (2 KiB), so the log's writer holds
 * O(log n) of the tree in memory. */
#ifndef CAIRN_MERKLE_H
#define CAIRN_MERKLE_H

#include <stddef.h>
#include <stdint.h>

#define CAIRN_MERKLE_HASH 32u
/* Hashes in an inclusion or consistency proof of a tree of fewer than 2^63
 * leaves, at most (both are at most ceil(log2 n) + 1). */
#define CAIRN_MERKLE_MAX_PROOF 65u

typedef uint8_t cairn_merkle_hash[CAIRN_MERKLE_HASH];

/* Reads the stored node (level, index) into out: 0, or -1 (the caller's
 * error, passed up unchanged). */
typedef int (*cairn_merkle_get)(void *ctx, unsigned level, uint64_t index, uint8_t *out);
/* Stores a node just completed by an append: 0, or -1 (passed up). */
typedef int (*cairn_merkle_put)(void *ctx, unsigned level, uint64_t index, const uint8_t *h);

/* The right edge of a tree of size leaves: for each set bit L of size, the
 * hash of its perfect subtree of 2^L leaves (h[L]); other entries unused. */
typedef struct cairn_merkle_edge {
  uint64_t size;
  cairn_merkle_hash h[64];
} cairn_merkle_edge;

/* SHA-256(0x00 ‖ data): the hash of a leaf whose input is data. */
void cairn_merkle_leaf_hash(const void *data, size_t len, uint8_t out[CAIRN_MERKLE_HASH]);
/* SHA-256(0x01 ‖ left ‖ right): an interior node's hash. */
void cairn_merkle_node_hash(const uint8_t left[CAIRN_MERKLE_HASH],
                            const uint8_t right[CAIRN_MERKLE_HASH],
                            uint8_t out[CAIRN_MERKLE_HASH]);
/* The root of the empty tree, SHA-256 of no bytes (RFC 9162 §2.1.1). */
void cairn_merkle_empty_root(uint8_t out[CAIRN_MERKLE_HASH]);

/* Appends the leaf of hash leaf to the tree whose edge is e: calls put for
 * the new leaf node (level 0) and for each node it completes (at most 64),
 * then updates e. 0, or the first -1 of put (e unchanged). O(log n). */
int cairn_merkle_append(cairn_merkle_edge *e, const uint8_t leaf[CAIRN_MERKLE_HASH],
                        cairn_merkle_put put, void *ctx);
/* The edge of a stored tree of size leaves, read through get (at most 64
 * reads): 0 or -1. */
int cairn_merkle_edge_load(cairn_merkle_edge *e, uint64_t size, cairn_merkle_get get, void *ctx);
/* The root hash of the tree whose edge is e (the empty root when size is 0).
 * O(log n), no reads. */
void cairn_merkle_edge_root(const cairn_merkle_edge *e, uint8_t out[CAIRN_MERKLE_HASH]);

/* MTH(D[start:end]), the hash of the leaves start to end - 1, read from the
 * stored perfect subtrees: start < end, and start a multiple of the
 * smallest power of two >= end - start (as every subtree of RFC 9162's
 * definitions is). At most 64 reads. 0, or -1 (a read failed, or the range
 * is not such a subtree). */
int cairn_merkle_subtree(uint64_t start, uint64_t end, cairn_merkle_get get, void *ctx,
                         uint8_t out[CAIRN_MERKLE_HASH]);
/* The root of the first size leaves of a stored tree (size >= 1). */
int cairn_merkle_root(uint64_t size, cairn_merkle_get get, void *ctx,
                      uint8_t out[CAIRN_MERKLE_HASH]);

/* PATH(index, D[size]) of RFC 9162 §2.1.3.1, leaf to root, into
 * path[0..*n): index < size. 0, or -1 (bad arguments or a read failed). */
int cairn_merkle_inclusion_proof(uint64_t index, uint64_t size, cairn_merkle_get get,
                                 void *ctx, cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF],
                                 size_t *n);
/* PROOF(first, D[second]) of RFC 9162 §2.1.4.1 into path[0..*n):
 * 0 < first <= second (empty when equal). 0, or -1. */
int cairn_merkle_consistency_proof(uint64_t first, uint64_t second, cairn_merkle_get get,
                                   void *ctx, cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF],
                                   size_t *n);

/* RFC 9162 §2.1.3.2: 1 when path proves that the leaf of hash leaf is at
 * index in the tree of size leaves and root hash root; else 0. */
int cairn_merkle_verify_inclusion(uint64_t index, uint64_t size,
                                  const uint8_t leaf[CAIRN_MERKLE_HASH],
                                  const cairn_merkle_hash *path, size_t n,
                                  const uint8_t root[CAIRN_MERKLE_HASH]);
/* RFC 9162 §2.1.4.2: 1 when path proves that the tree of first leaves and
 * root first_root is a prefix of the tree of second leaves and root
 * second_root (0 < first <= second); else 0. */
int cairn_merkle_verify_consistency(uint64_t first, uint64_t second,
                                    const uint8_t first_root[CAIRN_MERKLE_HASH],
                                    const uint8_t second_root[CAIRN_MERKLE_HASH],
                                    const cairn_merkle_hash *path, size_t n);

#endif
