/* sth.h — the audit log's signed tree heads, proofs and receipts as they
 * travel between the master, its workers and the CLI (docs/protocol.md,
 * "Audit log"; docs/accountability.md, "A log every volunteer can check").
 *
 * A signed tree head (STH) is the master's Ed25519 signature, with its
 * audit key (DB.audit-key), over the 60 bytes
 *     "cairn-sth-v1" (12 ASCII bytes) ‖ tree size (8 bytes, big-endian) ‖
 *     timestamp in ms since 1970 (8 bytes, big-endian) ‖ root hash (32 bytes)
 * of the Merkle tree of RFC 9162 §2.1 (common/merkle.h) whose leaves are the
 * audit chain's entries in seq order. On the wire every byte string is
 * standard base64 (common/base64.h): {"tree_size", "timestamp",
 * "root_hash", "signature"}, proofs are arrays of base64 hashes.
 *
 * A receipt is a result's place in the log, {"leaf_index", "leaf_hash"},
 * given with the answer to an accepted result; a worker keeps each as a
 * file once proved (the receipt file below) with the head and the
 * inclusion proof that prove it.
 *
 * Pure functions over plain structs (jansson for the JSON, libsodium for
 * Ed25519); shared by server/, worker/ and cli/. */
#ifndef CAIRN_STH_H
#define CAIRN_STH_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/merkle.h"

#define CAIRN_STH_TAG "cairn-sth-v1"
#define CAIRN_STH_MSG 60u /* 12 + 8 + 8 + 32 */
#define CAIRN_STH_PK 32u
#define CAIRN_STH_SIG 64u

typedef struct cairn__sth {
  uint64_t tree_size;
  int64_t timestamp; /* ms since 1970 */
  uint8_t root[CAIRN_MERKLE_HASH];
  uint8_t sig[CAIRN_STH_SIG];
} cairn__sth;

/* The signed message of h (its signature aside). */
void cairn__sth_message(const cairn__sth *h, uint8_t msg[CAIRN_STH_MSG]);
/* Signs h with the Ed25519 secret key sk (libsodium's 64 bytes). */
void cairn__sth_sign(cairn__sth *h, const uint8_t sk[64]);
/* 1 when h's signature verifies with public key pk, else 0. */
int cairn__sth_verify(const cairn__sth *h, const uint8_t pk[CAIRN_STH_PK]);
/* 1 when a and b are the same head (size, time, root and signature). */
int cairn__sth_same(const cairn__sth *a, const cairn__sth *b);

/* {"tree_size", "timestamp", "root_hash", "signature"} (NULL: out of memory). */
json_t *cairn__sth_json(const cairn__sth *h);
/* Reads that object into h: 0, or -1 with why naming the member at fault. */
int cairn__sth_parse(json_t *o, cairn__sth *h, char *why, size_t whylen);

/* A JSON string of the base64 of p[0..n) (NULL: out of memory). */
json_t *cairn__b64_json(const void *p, size_t n);
/* Decodes the base64 string s into exactly n bytes: 0, or -1. */
int cairn__b64_parse(json_t *s, void *out, size_t n);
/* A JSON array of the base64 of path[0..n). */
json_t *cairn__proof_json(const cairn_merkle_hash *path, size_t n);
/* Reads an array of base64 hashes (at most CAIRN_MERKLE_MAX_PROOF) into
 * path[0..*n): 0, or -1. */
int cairn__proof_parse(json_t *a, cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF], size_t *n);

/* A receipt. On the wire {"leaf_index", "leaf_hash"}; as a file (the
 * worker's DIR/audit/receipts/receipt-LEAF.json, docs/worker.md):
 *   {"cairn_receipt": 1, "index": the result's allocation index,
 *    "leaf_index": L, "leaf_hash": B64,
 *    "sth": the signed head proving it, "audit_path": [B64, ...]}
 * "sth" and "audit_path" together, once proved; "index" 0 when unknown. */
typedef struct cairn__receipt {
  int64_t index;
  uint64_t leaf_index;
  uint8_t leaf_hash[CAIRN_MERKLE_HASH];
  int proved; /* sth and path are set */
  cairn__sth sth;
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t npath;
} cairn__receipt;

/* The receipt file's object (NULL: out of memory). */
json_t *cairn__receipt_json(const cairn__receipt *r);
/* Reads a receipt (the wire's or a file's) into r: 0, or -1 with why. */
int cairn__receipt_parse(json_t *o, cairn__receipt *r, char *why, size_t whylen);
/* 1 when r is proved, its head verifies with pk and its path proves the
 * leaf of hash leaf_hash at leaf_index in that head's tree; else 0 with why
 * saying which fails. */
int cairn__receipt_verify(const cairn__receipt *r, const uint8_t pk[CAIRN_STH_PK], char *why,
                          size_t whylen);

#endif
