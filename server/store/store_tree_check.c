/* store_tree_check.c — the audit log's tree checked against the chain, for
 * `cairn audit verify --db` (tree.h, cairn__tree_check): the leaves are the
 * chain's bodies in seq order, rehashed here (RFC 9162 §2.1); every node
 * the tree stores (audit_tree, level CAIRN_TREE_LOW and up) must be the
 * one they make, and none more; every signed head (audit_sth) must have
 * the root of the tree of its size and the audit key's signature. Runs in
 * the caller's read transaction on a read-only connection; streams the
 * bodies and the heads (both in order), so memory is the tree's right edge,
 * O(log n), and time O(n + nodes + heads). */
#include <inttypes.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>

#include "server/store/chain.h"
#include "server/store/tree.h"

typedef struct check {
  sqlite3_stmt *node;  /* a stored node by (size at its end, level) */
  cairn__chain_report *r;
  int64_t nodes;       /* stored nodes found as expected */
} check;

/* The put of cairn_merkle_append: a completed node of a stored level must
 * be stored as it is made here. */
static int node_ok(void *ctx, unsigned level, uint64_t index, const uint8_t *h) {
  check *c = ctx;
  if (level < CAIRN_TREE_LOW)
    return 0;
  uint64_t end = (index + 1) << level;
  sqlite3_bind_int(c->node, 1, (int)level);
  sqlite3_bind_int64(c->node, 2, (sqlite3_int64)end);
  int found = sqlite3_step(c->node) == SQLITE_ROW;
  int same = found && sqlite3_column_bytes(c->node, 0) == CAIRN_MERKLE_HASH &&
             memcmp(sqlite3_column_blob(c->node, 0), h, CAIRN_MERKLE_HASH) == 0;
  sqlite3_reset(c->node);
  if (!same) {
    c->r->bad_seq = (int64_t)end;
    snprintf(c->r->bad_kind, sizeof c->r->bad_kind, "audit_tree");
    snprintf(c->r->problem, sizeof c->r->problem, "the audit tree's node of level %u ending "
             "at leaf %" PRIu64 " is %s the chain's entries make", level, end,
             found ? "not the one" : "missing, but");
    return -1;
  }
  c->nodes++;
  return 0;
}

/* The head at q's row: its root must be root (the tree of its size) and
 * its signature pk's (NULL: not checked). 0, or -1 with the problem. */
static int head_ok(sqlite3_stmt *q, const uint8_t root[CAIRN_MERKLE_HASH], const uint8_t *pk,
                   cairn__chain_report *r) {
  cairn__sth h = {.tree_size = (uint64_t)sqlite3_column_int64(q, 1),
                  .timestamp = sqlite3_column_int64(q, 2)};
  int shaped = sqlite3_column_bytes(q, 3) == CAIRN_MERKLE_HASH &&
               sqlite3_column_bytes(q, 4) == CAIRN_STH_SIG;
  if (shaped) {
    memcpy(h.root, sqlite3_column_blob(q, 3), CAIRN_MERKLE_HASH);
    memcpy(h.sig, sqlite3_column_blob(q, 4), CAIRN_STH_SIG);
  }
  const char *why = !shaped ? "is malformed"
                    : memcmp(h.root, root, CAIRN_MERKLE_HASH) ? "does not have the root of "
                                                                "the chain's first entries"
                    : pk && !cairn__sth_verify(&h, pk) ? "is not signed by the audit key"
                                                       : NULL;
  if (!why)
    return 0;
  r->bad_seq = (int64_t)h.tree_size;
  snprintf(r->bad_kind, sizeof r->bad_kind, "audit_sth");
  r->bad_row = sqlite3_column_int64(q, 0);
  snprintf(r->problem, sizeof r->problem, "the signed tree head %lld (size %" PRIu64 ") %s",
           (long long)r->bad_row, h.tree_size, why);
  return -1;
}

/* The tree's size: meta audit_tree_size while it lags behind the chain,
 * else the chain's (head). */
static uint64_t tree_size(sqlite3 *db, int64_t head) {
  sqlite3_stmt *q = NULL;
  uint64_t n = (uint64_t)head;
  if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = 'audit_tree_size'", -1, &q,
                         NULL) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
    n = (uint64_t)sqlite3_column_int64(q, 0);
  sqlite3_finalize(q);
  return n;
}

/* Walks the bodies and the heads together: each head is checked when the
 * tree reaches its size. */
static cairn_status walk(sqlite3 *db, sqlite3_stmt *bodies, sqlite3_stmt *heads, uint64_t size,
                         const uint8_t *pk, check *c, cairn_error *err) {
  cairn_merkle_edge e = {0};
  uint8_t root[CAIRN_MERKLE_HASH];
  int hrc = sqlite3_step(heads), brc = SQLITE_ROW;
  while (!c->r->problem[0]) {
    while (hrc == SQLITE_ROW && (uint64_t)sqlite3_column_int64(heads, 1) == e.size) {
      cairn_merkle_edge_root(&e, root);
      if (head_ok(heads, root, pk, c->r))
        return CAIRN_OK;
      c->r->tree_heads++;
      hrc = sqlite3_step(heads);
    }
    if (e.size == size || (brc = sqlite3_step(bodies)) != SQLITE_ROW)
      break;
    uint8_t h[CAIRN_MERKLE_HASH];
    cairn_merkle_leaf_hash(sqlite3_column_blob(bodies, 1), (size_t)sqlite3_column_bytes(bodies, 1),
                           h);
    if (cairn_merkle_append(&e, h, node_ok, c))
      return CAIRN_OK; /* the problem is said */
    c->r->tree_size = (int64_t)e.size; /* the leaves walked */
  }
  if ((hrc != SQLITE_ROW && hrc != SQLITE_DONE) || (brc != SQLITE_ROW && brc != SQLITE_DONE))
    return cairn__error_set(err, CAIRN_EIO, "reading the audit log: %s", sqlite3_errmsg(db));
  if (!c->r->problem[0] && hrc == SQLITE_ROW) {
    c->r->bad_row = sqlite3_column_int64(heads, 0);
    c->r->bad_seq = sqlite3_column_int64(heads, 1);
    snprintf(c->r->bad_kind, sizeof c->r->bad_kind, "audit_sth");
    snprintf(c->r->problem, sizeof c->r->problem, "the signed tree head %lld is of %lld leaves, "
             "but the tree has %" PRIu64, (long long)c->r->bad_row, (long long)c->r->bad_seq,
             e.size);
  }
  return CAIRN_OK;
}

/* Nodes of levels CAIRN_TREE_LOW and up in a tree of size leaves. */
static int64_t nodes_of(uint64_t size) {
  int64_t n = 0;
  for (unsigned l = CAIRN_TREE_LOW; l < 64; l++)
    n += (int64_t)(size >> l);
  return n;
}

cairn_status cairn__tree_check(struct sqlite3 *db, const uint8_t *pk, cairn__chain_report *r,
                               cairn_error *err) {
  sqlite3_stmt *bodies = NULL, *heads = NULL, *count = NULL;
  check c = {.r = r};
  if (sqlite3_prepare_v2(db, "SELECT hash FROM audit_tree WHERE level = ?1 AND size = ?2", -1,
                         &c.node, NULL) != SQLITE_OK) {
    sqlite3_finalize(c.node);
    return CAIRN_OK; /* a database from before the log (0028): nothing to check */
  }
  uint64_t size = tree_size(db, r->head_seq);
  cairn_status st = CAIRN_OK;
  if (sqlite3_prepare_v2(db, "SELECT seq, body FROM audit_chain ORDER BY seq", -1, &bodies,
                         NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT id, tree_size, timestamp, root, signature FROM audit_sth "
                         "ORDER BY tree_size, id", -1, &heads, NULL) != SQLITE_OK ||
      sqlite3_prepare_v2(db, "SELECT count(*) FROM audit_tree", -1, &count, NULL) != SQLITE_OK)
    st = cairn__error_set(err, CAIRN_EIO, "reading the audit log: %s", sqlite3_errmsg(db));
  r->tree = st == CAIRN_OK;
  if (st == CAIRN_OK)
    st = walk(db, bodies, heads, size, pk, &c, err);
  r->tree_nodes = c.nodes;
  if (st == CAIRN_OK && !r->problem[0] && sqlite3_step(count) == SQLITE_ROW &&
      sqlite3_column_int64(count, 0) != nodes_of(size)) {
    snprintf(r->bad_kind, sizeof r->bad_kind, "audit_tree");
    snprintf(r->problem, sizeof r->problem, "the audit tree stores %lld nodes, but a tree of "
             "%" PRIu64 " leaves has %lld", (long long)sqlite3_column_int64(count, 0), size,
             (long long)nodes_of(size));
  }
  sqlite3_finalize(c.node);
  sqlite3_finalize(bodies);
  sqlite3_finalize(heads);
  sqlite3_finalize(count);
  return st;
}
