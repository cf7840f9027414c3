/* tree.h — the audit log: a Merkle tree (RFC 9162 §2.1, common/merkle.h)
 * whose leaves are the audit chain's entries (chain.h) in seq order, leaf
 * index = seq - 1, leaf input = the entry's canonical body; its signed tree
 * heads (common/sth.h); and the reads that prove it (docs/accountability.md,
 * "A log every volunteer can check"). Private to server/ and the CLI.
 *
 * Storage (schema/0028_audit_tree.sql): the tree's perfect subtrees of
 * 2^CAIRN_TREE_LOW leaves and more, one row each (audit_tree: the size at
 * its end, level, hash: an append's nodes go to the rightmost page); a node below that level is computed when read from the at most
 * 2^(CAIRN_TREE_LOW - 1) bodies it covers, so the tree costs about
 * 2^-(CAIRN_TREE_LOW - 1) of a row per leaf (bench/results/merkle.md). The
 * tree's size is the chain's; while it lags behind (a build under way, or
 * the tree off) it is meta audit_tree_size. Every head signed is a row of
 * audit_sth.
 *
 * The writer (cairn__tree) belongs to the audit chain, hence to the
 * journal's commit thread (but its table of recent receipts, which has a
 * mutex of its own: cairn__tree_recent): an entry's leaf and the nodes it completes are
 * written in the entry's own transaction (a kill -9 finds both or neither);
 * it holds the tree's right edge, O(log n) (2 KiB), and an append is
 * O(log n) work. At start-up it loads the edge from the stored nodes, and
 * builds what is missing from the chain's bodies (a database made before
 * the tree, or written with the tree off), in transactions of
 * CAIRN_TREE_BUILD_CHUNK leaves, streamed: memory O(1) in the chain's size.
 * A stored tree that does not fit the chain (larger than it, or a node of
 * its edge missing) is built again from the chain.
 *
 * The reader (cairn__tree_reader) answers the public routes on a read-only
 * connection of its own, serialised by its own mutex (taken alone: never
 * with the core's lock, the journal's or the store's), each answer in one
 * read transaction and O(log n) reads (a range of entries: its rows).
 */
#ifndef CAIRN_TREE_H
#define CAIRN_TREE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/log.h"
#include "common/merkle.h"
#include "common/sth.h"

#ifndef CAIRN_TREE_LOW
#define CAIRN_TREE_LOW 4 /* the lowest level stored */
#endif
#define CAIRN_TREE_STH_MS 10000        /* a head is signed this often when the tree grew */
#define CAIRN_TREE_BUILD_CHUNK 65536   /* leaves per transaction of a start-up build */
#define CAIRN_TREE_MAX_ENTRIES 1000    /* leaves per GET /v1/audit/entries */
#define CAIRN_TREE_RECENT 4096         /* result entries whose leaves are kept for receipts */

struct cairn__store;

/* ---- the check: `cairn audit verify --db` (store_tree_check.c) ---- */

/* Inside the caller's read transaction on db, once the chain verified: the
 * tree of the chain's first leaves (its size: meta audit_tree_size while it
 * lags, else the chain's) rebuilt from their bodies, every stored node
 * compared with it (and their number with the tree's), every signed head
 * checked for its size's root and pk's signature (pk NULL: not checked).
 * The first problem goes to r (bad_kind "audit_tree" or "audit_sth"); a
 * database without the tree's tables passes with r->tree 0. Memory
 * O(log n); time O(n + nodes + heads). CAIRN_EIO when unreadable. */
struct sqlite3;
struct cairn__chain_report;
cairn_status cairn__tree_check(struct sqlite3 *db, const uint8_t *pk,
                               struct cairn__chain_report *r, cairn_error *err);

/* ---- the writer: the commit thread's ---- */

typedef struct cairn__tree cairn__tree;

cairn__tree *cairn__tree_open(const cairn__logger *log, cairn_error *err);
/* Frees t (before the store closes: it holds statements of its writer). */
void cairn__tree_close(cairn__tree *t);
/* Commit thread, outside any transaction, once: the stored tree brought to
 * the chain's chain_size entries (loaded, extended or built, above), and the
 * newest signed head read. O(log n) reads when the tree is whole. */
cairn_status cairn__tree_load(cairn__tree *t, struct cairn__store *s, uint64_t chain_size,
                              cairn_error *err);
/* Commit thread, inside its transaction: the leaf of entry seq leaf + 1
 * (body[0..len)) and the nodes it completes; result_idx > 0: the entry is
 * the result of that index, its leaf kept for its receipt. O(log n). */
cairn_status cairn__tree_append(cairn__tree *t, struct cairn__store *s, uint64_t leaf,
                                const void *body, size_t len, int64_t result_idx,
                                cairn_error *err);
/* Any thread: the leaf and leaf hash of index idx's result entry, when it
 * is among the newest CAIRN_TREE_RECENT result entries appended (a table by
 * idx under its own mutex, taken alone; a slot holds the newest entry of
 * its idx's hash): 1, else 0 (read it from the store). Answers a result's
 * receipt without a read: the caller asks once its result is durable. O(1). */
int cairn__tree_recent(cairn__tree *t, int64_t idx, uint64_t *leaf,
                       uint8_t hash[CAIRN_MERKLE_HASH]);
/* Commit thread, outside any transaction, at the load of a chain kept
 * without its tree: notes the tree's size (the chain's now, unless noted
 * already) in meta audit_tree_size, so that the tree catches up from there
 * when it is on again. */
cairn_status cairn__tree_note_off(struct cairn__store *s, uint64_t chain_size, cairn_error *err);
/* The transaction holding the appended leaves committed. */
void cairn__tree_committed(cairn__tree *t);
/* 1 when a head is due: the committed tree is not the newest head signed
 * (its size or root), and CAIRN_TREE_STH_MS passed since this run signed
 * one (force: at close). */
int cairn__tree_sth_due(const cairn__tree *t, int force);
/* Commit thread, inside a transaction: signs the committed tree's head with
 * the Ed25519 secret key sk at now_ms (later than the last one) and keeps
 * it (audit_sth). */
cairn_status cairn__tree_sign(cairn__tree *t, struct cairn__store *s, const uint8_t sk[64],
                              int64_t now_ms, cairn_error *err);
/* The committed tree's size (tests, logs). */
uint64_t cairn__tree_size(const cairn__tree *t);

/* ---- the reader: the public routes' ---- */

typedef struct cairn__tree_reader cairn__tree_reader;

/* A read-only connection to db_path. NULL with err set. */
cairn__tree_reader *cairn__tree_reader_open(const char *db_path, cairn_error *err);
void cairn__tree_reader_close(cairn__tree_reader *r);

/* The newest head signed: CAIRN_OK, CAIRN_ENOTFOUND (none yet), or an error. */
cairn_status cairn__tree_newest(cairn__tree_reader *r, cairn__sth *h, cairn_error *err);
/* Calls cb(ud, leaf, body, len) for each leaf from start to end inclusive,
 * stopping at the newest head's size (*last: the last leaf given); at most
 * CAIRN_TREE_MAX_ENTRIES. CAIRN_EINVAL naming start when no head covers it. */
cairn_status cairn__tree_entries(cairn__tree_reader *r, uint64_t start, uint64_t end,
                                 int (*cb)(void *ud, uint64_t leaf, const void *body, size_t len),
                                 void *ud, uint64_t *last, cairn_error *err);
/* The inclusion proof of leaf in the tree of size leaves (a size some head
 * signed: else CAIRN_EINVAL naming it). O(log n) reads. */
cairn_status cairn__tree_inclusion(cairn__tree_reader *r, uint64_t leaf, uint64_t size,
                                   cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF], size_t *n,
                                   cairn_error *err);
/* The consistency proof from the tree of first leaves to that of second
 * (both signed sizes, 0 < first <= second: else CAIRN_EINVAL naming the
 * one at fault). O(log n) reads. */
cairn_status cairn__tree_consistency(cairn__tree_reader *r, uint64_t first, uint64_t second,
                                     cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF], size_t *n,
                                     cairn_error *err);
/* The leaves of accountable index idx's allocation and result entries (-1:
 * none) and the leaf hash of the result's. O(log n) (index audit_chain_by_idx). */
cairn_status cairn__tree_leaves_of(cairn__tree_reader *r, int64_t idx, int64_t *alloc_leaf,
                                   int64_t *result_leaf, uint8_t result_hash[CAIRN_MERKLE_HASH],
                                   cairn_error *err);

/* ---- shared by the writer and the reader (store_tree.c) ---- */

/* A node source over a connection: stored nodes (level >= CAIRN_TREE_LOW),
 * and the bodies the lower ones are computed from. */
struct sqlite3_stmt;
typedef struct cairn__tree_src {
  struct sqlite3_stmt *node;   /* a node: ?1 its level, ?2 the size at its end */
  struct sqlite3_stmt *bodies; /* SELECT seq, body FROM audit_chain WHERE seq BETWEEN ?1 AND ?2
                                  ORDER BY seq */
  char why[200];               /* what a failed get could not find */
} cairn__tree_src;
/* The cairn_merkle_get of a cairn__tree_src (ctx). */
int cairn__tree_get(void *ctx, unsigned level, uint64_t index, uint8_t *out);

#endif
