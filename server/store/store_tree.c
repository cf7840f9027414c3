/* store_tree.c — the audit log's writer (tree.h): the tree's nodes and
 * signed heads written on the store's writer connection by the journal's
 * commit thread, the start-up load and build; and the node source both the
 * writer and the reader (store_tree_read.c) read nodes through. Its
 * statements are its own (prepared at load, finalized at close), beside
 * the store's. */
#include "server/store/tree.h"
#include "server/store/store_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- the node source ---- */

static int nop_put(void *ctx, unsigned level, uint64_t index, const uint8_t *h) {
  (void)ctx, (void)level, (void)index, (void)h;
  return 0;
}

/* A node below CAIRN_TREE_LOW: the root of the 2^level leaves from
 * index << level, from their bodies (at most 8 reads of one range). */
static int low_node(cairn__tree_src *src, unsigned level, uint64_t index, uint8_t *out) {
  sqlite3_stmt *q = src->bodies;
  uint64_t first = index << level, n = (uint64_t)1 << level;
  cairn_merkle_edge e = {0};
  sqlite3_bind_int64(q, 1, (sqlite3_int64)first + 1);
  sqlite3_bind_int64(q, 2, (sqlite3_int64)(first + n));
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW && e.size < n) {
    uint8_t leaf[CAIRN_MERKLE_HASH];
    if ((uint64_t)sqlite3_column_int64(q, 0) != first + e.size + 1)
      break;
    cairn_merkle_leaf_hash(sqlite3_column_blob(q, 1), (size_t)sqlite3_column_bytes(q, 1), leaf);
    cairn_merkle_append(&e, leaf, nop_put, NULL);
  }
  sqlite3_reset(q);
  if (e.size != n) {
    snprintf(src->why, sizeof src->why, "the audit chain has no entry %" PRIu64 " (its leaf "
             "%" PRIu64 ")", first + e.size + 1, first + e.size);
    return -1;
  }
  memcpy(out, e.h[level], CAIRN_MERKLE_HASH);
  return 0;
}

int cairn__tree_get(void *ctx, unsigned level, uint64_t index, uint8_t *out) {
  cairn__tree_src *src = ctx;
  if (level < CAIRN_TREE_LOW)
    return low_node(src, level, index, out);
  sqlite3_stmt *q = src->node; /* keyed by the size at its end (0028_audit_tree.sql) */
  sqlite3_bind_int(q, 1, (int)level);
  sqlite3_bind_int64(q, 2, (sqlite3_int64)((index + 1) << level));
  int found = sqlite3_step(q) == SQLITE_ROW && sqlite3_column_bytes(q, 0) == CAIRN_MERKLE_HASH;
  if (found)
    memcpy(out, sqlite3_column_blob(q, 0), CAIRN_MERKLE_HASH);
  sqlite3_reset(q);
  if (!found)
    snprintf(src->why, sizeof src->why, "the audit tree has no node (level %u, index %" PRIu64
             ")", level, index);
  return found ? 0 : -1;
}

/* ---- the writer ---- */

enum { T_NODE, T_BODIES, T_PUT, T_NEWEST, T_STH_PUT, T_CHUNK, T_CLEAR, T_COUNT };
static const char *const tsql[T_COUNT] = {
  [T_NODE] = "SELECT hash FROM audit_tree WHERE size = ?2 AND level = ?1",
  [T_BODIES] = "SELECT seq, body FROM audit_chain WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq",
  [T_PUT] = "INSERT OR REPLACE INTO audit_tree(level, size, hash) VALUES (?1, ?2, ?3)",
  [T_NEWEST] = "SELECT tree_size, timestamp, root FROM audit_sth ORDER BY id DESC LIMIT 1",
  [T_STH_PUT] = ("INSERT INTO audit_sth(tree_size, timestamp, root, signature) "
                 "VALUES (?1, ?2, ?3, ?4)"),
  [T_CHUNK] = "SELECT seq, body FROM audit_chain WHERE seq > ?1 ORDER BY seq LIMIT ?2",
  [T_CLEAR] = "DELETE FROM audit_tree",
};

typedef struct recent {
  int64_t idx; /* 0: empty */
  uint64_t leaf;
  uint8_t hash[CAIRN_MERKLE_HASH];
} recent;

struct cairn__tree {
  const cairn__logger *log;
  pthread_mutex_t recent_mu;   /* guards recent[], taken alone */
  recent recent[CAIRN_TREE_RECENT];
  sqlite3 *db;                 /* the store's writer (set at load) */
  sqlite3_stmt *st[T_COUNT];
  cairn__tree_src src;
  cairn_merkle_edge edge;      /* the tree as appended (pending until committed) */
  cairn_merkle_edge committed; /* the committed tree */
  int have_signed;             /* a head was ever signed */
  uint64_t signed_size;        /* the newest head's */
  uint8_t signed_root[CAIRN_MERKLE_HASH];
  int64_t signed_ms;           /* its timestamp (0: none this run, or none) */
  int64_t signed_here;         /* when this run signed last (ms; 0: not yet) */
};

cairn__tree *cairn__tree_open(const cairn__logger *log, cairn_error *err) {
  cairn__tree *t = calloc(1, sizeof *t);
  if (!t)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory"), NULL;
  t->log = log;
  pthread_mutex_init(&t->recent_mu, NULL);
  return t;
}

/* The slot of idx in the table of recent receipts. */
static recent *slot(cairn__tree *t, int64_t idx) {
  uint64_t h = (uint64_t)idx * 0x9e3779b97f4a7c15ULL;
  return &t->recent[h >> 52 & (CAIRN_TREE_RECENT - 1)];
}

int cairn__tree_recent(cairn__tree *t, int64_t idx, uint64_t *leaf,
                       uint8_t hash[CAIRN_MERKLE_HASH]) {
  pthread_mutex_lock(&t->recent_mu);
  recent *r = slot(t, idx);
  int found = idx > 0 && r->idx == idx;
  if (found) {
    *leaf = r->leaf;
    memcpy(hash, r->hash, CAIRN_MERKLE_HASH);
  }
  pthread_mutex_unlock(&t->recent_mu);
  return found;
}

void cairn__tree_close(cairn__tree *t) {
  if (!t)
    return;
  for (int i = 0; i < T_COUNT; i++)
    sqlite3_finalize(t->st[i]);
  pthread_mutex_destroy(&t->recent_mu);
  free(t);
}

uint64_t cairn__tree_size(const cairn__tree *t) { return t->committed.size; }

static cairn_status tree_err(cairn__tree *t, cairn_error *err, const char *what) {
  return cairn__error_set(err, CAIRN_EIO, "audit tree: %s: %s", what, sqlite3_errmsg(t->db));
}

/* Stores a node the append completed (level >= CAIRN_TREE_LOW; the lower
 * ones are computed from the bodies when read). */
static int put(void *ctx, unsigned level, uint64_t index, const uint8_t *h) {
  cairn__tree *t = ctx;
  if (level < CAIRN_TREE_LOW)
    return 0;
  sqlite3_stmt *q = t->st[T_PUT];
  sqlite3_bind_int(q, 1, (int)level);
  sqlite3_bind_int64(q, 2, (sqlite3_int64)((index + 1) << level)); /* the size at its end */
  sqlite3_bind_blob(q, 3, h, CAIRN_MERKLE_HASH, SQLITE_STATIC);
  int rc = sqlite3_step(q);
  sqlite3_reset(q);
  return rc == SQLITE_DONE ? 0 : -1;
}

cairn_status cairn__tree_append(cairn__tree *t, cairn__store *s, uint64_t leaf, const void *body,
                                size_t len, int64_t result_idx, cairn_error *err) {
  (void)s;
  if (leaf != t->edge.size)
    return cairn__error_set(err, CAIRN_EINTERNAL, "audit tree: it has %" PRIu64 " leaves but "
                           "the chain's next entry is seq %" PRIu64, t->edge.size, leaf + 1);
  uint8_t h[CAIRN_MERKLE_HASH];
  cairn_merkle_leaf_hash(body, len, h);
  if (cairn_merkle_append(&t->edge, h, put, t))
    return tree_err(t, err, "writing a node");
  if (result_idx > 0) { /* asked for only once this transaction is durable */
    pthread_mutex_lock(&t->recent_mu);
    recent *r = slot(t, result_idx);
    r->idx = result_idx;
    r->leaf = leaf;
    memcpy(r->hash, h, sizeof h);
    pthread_mutex_unlock(&t->recent_mu);
  }
  return CAIRN_OK;
}

/* Inside a transaction: meta audit_tree_size is size, or none when the
 * tree is the chain's (size == chain). */
static cairn_status write_size(cairn__store *s, uint64_t size, uint64_t chain, cairn_error *err) {
  char v[24];
  snprintf(v, sizeof v, "%" PRIu64, size);
  return size == chain ? cairn__store_meta_delete(s, "audit_tree_size", err)
                       : cairn__store_meta_set(s, "audit_tree_size", v, err);
}

cairn_status cairn__tree_note_off(cairn__store *s, uint64_t chain_size, cairn_error *err) {
  char v[24];
  if (cairn__store_meta_get(s, "audit_tree_size", v, sizeof v) == 0)
    return CAIRN_OK; /* it stopped before */
  snprintf(v, sizeof v, "%" PRIu64, chain_size);
  cairn_status st = cairn__store_begin(s, err);
  if (st == CAIRN_OK)
    st = cairn__store_meta_set(s, "audit_tree_size", v, err);
  if (st == CAIRN_OK)
    st = cairn__store_commit(s, err);
  if (st != CAIRN_OK)
    cairn__store_rollback(s);
  return st;
}

void cairn__tree_committed(cairn__tree *t) { t->committed = t->edge; }

/* Appends the chain's entries after the tree's t->edge.size leaves up to
 * size, in transactions of CAIRN_TREE_BUILD_CHUNK leaves (each with the
 * tree's size, none at the last: a kill -9 resumes from the last). clear:
 * the stored nodes go first, in the first transaction. */
static cairn_status extend(cairn__tree *t, cairn__store *s, uint64_t size, int clear,
                           cairn_error *err) {
  sqlite3_stmt *q = t->st[T_CHUNK];
  while (t->edge.size < size || clear) {
    cairn_status st = cairn__store_begin(s, err);
    if (st == CAIRN_OK && clear && sqlite3_exec(t->db, tsql[T_CLEAR], NULL, NULL, NULL))
      st = tree_err(t, err, "clearing the tree");
    clear = 0;
    sqlite3_bind_int64(q, 1, (sqlite3_int64)t->edge.size);
    sqlite3_bind_int64(q, 2, CAIRN_TREE_BUILD_CHUNK);
    int rc = SQLITE_DONE;
    uint64_t rows = 0;
    while (st == CAIRN_OK && t->edge.size < size && (rc = sqlite3_step(q)) == SQLITE_ROW) {
      rows++;
      if ((uint64_t)sqlite3_column_int64(q, 0) != t->edge.size + 1)
        st = cairn__error_set(err, CAIRN_EIO, "audit tree: the audit chain has no entry %"
                             PRIu64 ", so its tree cannot be built (cairn audit verify --db "
                             "says more)", t->edge.size + 1);
      else
        st = cairn__tree_append(t, s, t->edge.size, sqlite3_column_blob(q, 1),
                                (size_t)sqlite3_column_bytes(q, 1), 0, err);
    }
    if (st == CAIRN_OK && rc != SQLITE_ROW && rc != SQLITE_DONE)
      st = tree_err(t, err, "reading the chain");
    sqlite3_reset(q);
    if (st == CAIRN_OK && t->edge.size < size && rc == SQLITE_DONE &&
        rows < CAIRN_TREE_BUILD_CHUNK)
      st = cairn__error_set(err, CAIRN_EIO, "audit tree: the audit chain ends at entry %" PRIu64
                           " before its head %" PRIu64, t->edge.size, size);
    if (st == CAIRN_OK)
      st = write_size(s, t->edge.size, size, err);
    if (st == CAIRN_OK)
      st = cairn__store_commit(s, err);
    if (st != CAIRN_OK) {
      cairn__store_rollback(s);
      return st;
    }
    t->committed = t->edge;
  }
  return CAIRN_OK;
}

/* The newest signed head's size, root and time, if any. */
static cairn_status read_newest(cairn__tree *t, cairn_error *err) {
  sqlite3_stmt *q = t->st[T_NEWEST];
  int rc = sqlite3_step(q);
  t->have_signed = rc == SQLITE_ROW && sqlite3_column_bytes(q, 2) == CAIRN_MERKLE_HASH;
  if (t->have_signed) {
    t->signed_size = (uint64_t)sqlite3_column_int64(q, 0);
    t->signed_ms = sqlite3_column_int64(q, 1);
    memcpy(t->signed_root, sqlite3_column_blob(q, 2), CAIRN_MERKLE_HASH);
  }
  sqlite3_reset(q);
  return rc == SQLITE_ROW || rc == SQLITE_DONE ? CAIRN_OK : tree_err(t, err, "reading its heads");
}

static int64_t mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

cairn_status cairn__tree_load(cairn__tree *t, cairn__store *s, uint64_t chain_size,
                              cairn_error *err) {
  t->db = s->w;
  for (int i = 0; i < T_COUNT; i++)
    if (!t->st[i] && sqlite3_prepare_v2(t->db, tsql[i], -1, &t->st[i], NULL) != SQLITE_OK)
      return tree_err(t, err, tsql[i]);
  t->src = (cairn__tree_src){.node = t->st[T_NODE], .bodies = t->st[T_BODIES]};
  char v[24]; /* no size noted: the tree is the chain's (or there is none yet, and its
               * edge does not load, past 15 leaves) */
  uint64_t stored = cairn__store_meta_get(s, "audit_tree_size", v, sizeof v) == 0
                      ? strtoull(v, NULL, 10) : chain_size;
  int whole = stored <= chain_size &&
              cairn_merkle_edge_load(&t->edge, stored, cairn__tree_get, &t->src) == 0;
  if (!whole) {
    CAIRN_WARN(t->log, "audit tree: the stored tree (%" PRIu64 " leaves%s%s) does not fit the "
               "audit chain's %" PRIu64 " entries: it is built again from the chain", stored,
               stored > chain_size ? "" : ": ", stored > chain_size ? "" : t->src.why,
               chain_size);
    memset(&t->edge, 0, sizeof t->edge);
  }
  t->committed = t->edge;
  if (!whole || t->edge.size < chain_size || stored != chain_size) {
    int64_t t0 = mono_ms();
    CAIRN_INFO(t->log, "audit tree: building leaves %" PRIu64 " to %" PRIu64 " from the audit "
               "chain", t->edge.size, chain_size);
    cairn_status st = extend(t, s, chain_size, !whole, err);
    if (st != CAIRN_OK)
      return st;
    CAIRN_INFO(t->log, "audit tree: %" PRIu64 " leaves, built in %.1f s", chain_size,
               (double)(mono_ms() - t0) / 1000.0);
  }
  return read_newest(t, err);
}

int cairn__tree_sth_due(const cairn__tree *t, int force) {
  if (!t->db || (!force && t->signed_here && mono_ms() - t->signed_here < CAIRN_TREE_STH_MS))
    return 0; /* not yet: the root (O(log n) hashes) is not even computed */
  uint8_t root[CAIRN_MERKLE_HASH];
  cairn_merkle_edge_root(&t->committed, root);
  int same = t->have_signed ? t->signed_size == t->committed.size &&
                                memcmp(root, t->signed_root, sizeof root) == 0
                            : t->committed.size == 0;
  return !same;
}

cairn_status cairn__tree_sign(cairn__tree *t, cairn__store *s, const uint8_t sk[64],
                              int64_t now_ms, cairn_error *err) {
  (void)s;
  cairn__sth h = {.tree_size = t->committed.size,
                  .timestamp = now_ms > t->signed_ms ? now_ms : t->signed_ms + 1};
  cairn_merkle_edge_root(&t->committed, h.root);
  cairn__sth_sign(&h, sk);
  sqlite3_stmt *q = t->st[T_STH_PUT];
  sqlite3_bind_int64(q, 1, (sqlite3_int64)h.tree_size);
  sqlite3_bind_int64(q, 2, h.timestamp);
  sqlite3_bind_blob(q, 3, h.root, CAIRN_MERKLE_HASH, SQLITE_STATIC);
  sqlite3_bind_blob(q, 4, h.sig, CAIRN_STH_SIG, SQLITE_STATIC);
  int rc = sqlite3_step(q);
  sqlite3_reset(q);
  if (rc != SQLITE_DONE)
    return tree_err(t, err, "writing a signed head");
  t->have_signed = 1;
  t->signed_size = h.tree_size;
  t->signed_ms = h.timestamp;
  memcpy(t->signed_root, h.root, sizeof h.root);
  t->signed_here = mono_ms();
  return CAIRN_OK;
}
