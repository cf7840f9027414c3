/* store_tree_read.c — the audit log's reader (tree.h): the public routes'
 * reads on a read-only connection of its own, serialised by its own mutex
 * (taken alone), each answer in one read transaction (WAL: it never waits
 * for the writer, nor the writer for it). */
#include "server/store/tree.h"

#include <inttypes.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { R_NODE, R_BODIES, R_NEWEST, R_SIGNED, R_RANGE, R_LEAVES, R_BEGIN, R_END, R_NSTMT };
static const char *const rsql[R_NSTMT] = {
  [R_NODE] = "SELECT hash FROM audit_tree WHERE size = ?2 AND level = ?1",
  [R_BODIES] = "SELECT seq, body FROM audit_chain WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq",
  [R_NEWEST] = "SELECT tree_size, timestamp, root, signature FROM audit_sth "
               "ORDER BY id DESC LIMIT 1",
  [R_SIGNED] = "SELECT 1 FROM audit_sth WHERE tree_size = ?1 LIMIT 1",
  [R_RANGE] = "SELECT seq, body FROM audit_chain WHERE seq BETWEEN ?1 AND ?2 ORDER BY seq",
  [R_LEAVES] = "SELECT seq, kind, body FROM audit_chain WHERE idx = ?1 AND "
               "kind IN ('alloc', 'result') ORDER BY seq",
  [R_BEGIN] = "BEGIN",
  [R_END] = "COMMIT",
};

struct cairn__tree_reader {
  pthread_mutex_t mu;
  sqlite3 *db;
  sqlite3_stmt *st[R_NSTMT];
  cairn__tree_src src;
};

void cairn__tree_reader_close(cairn__tree_reader *r) {
  if (!r)
    return;
  for (int i = 0; i < R_NSTMT; i++)
    sqlite3_finalize(r->st[i]);
  sqlite3_close(r->db);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

cairn__tree_reader *cairn__tree_reader_open(const char *db_path, cairn_error *err) {
  cairn__tree_reader *r = calloc(1, sizeof *r);
  if (!r) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&r->mu, NULL);
  if (sqlite3_open_v2(db_path, &r->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) !=
      SQLITE_OK) {
    cairn__error_set(err, CAIRN_EIO, "audit log: cannot open %s: %s", db_path,
                    r->db ? sqlite3_errmsg(r->db) : "out of memory");
    cairn__tree_reader_close(r);
    return NULL;
  }
  sqlite3_busy_timeout(r->db, 10000);
  /* pages read through a mapping: no copy, no read(2), after each commit
   * of the writer drops this connection's cache */
  sqlite3_exec(r->db, "PRAGMA mmap_size = 268435456", NULL, NULL, NULL);
  for (int i = 0; i < R_NSTMT; i++)
    if (sqlite3_prepare_v3(r->db, rsql[i], -1, SQLITE_PREPARE_PERSISTENT, &r->st[i], NULL) !=
        SQLITE_OK) {
      cairn__error_set(err, CAIRN_EIO, "audit log: %s: %s", rsql[i], sqlite3_errmsg(r->db));
      cairn__tree_reader_close(r);
      return NULL;
    }
  r->src = (cairn__tree_src){.node = r->st[R_NODE], .bodies = r->st[R_BODIES]};
  return r;
}

/* Takes the mutex and opens the read transaction: 0, or -1 with err. */
static int begin(cairn__tree_reader *r, cairn_error *err) {
  pthread_mutex_lock(&r->mu);
  int rc = sqlite3_step(r->st[R_BEGIN]);
  sqlite3_reset(r->st[R_BEGIN]);
  if (rc == SQLITE_DONE)
    return 0;
  cairn__error_set(err, CAIRN_EIO, "audit log: %s", sqlite3_errmsg(r->db));
  pthread_mutex_unlock(&r->mu);
  return -1;
}

static cairn_status end(cairn__tree_reader *r, cairn_status st) {
  sqlite3_step(r->st[R_END]);
  sqlite3_reset(r->st[R_END]);
  pthread_mutex_unlock(&r->mu);
  return st;
}

static cairn_status db_fail(cairn__tree_reader *r, cairn_error *err, const char *what) {
  return cairn__error_set(err, CAIRN_EIO, "audit log: %s: %s", what, sqlite3_errmsg(r->db));
}

/* Inside a read: the newest head into h (CAIRN_ENOTFOUND: none). */
static cairn_status newest(cairn__tree_reader *r, cairn__sth *h, cairn_error *err) {
  sqlite3_stmt *q = r->st[R_NEWEST];
  int rc = sqlite3_step(q);
  cairn_status st = CAIRN_OK;
  if (rc == SQLITE_ROW && sqlite3_column_bytes(q, 2) == CAIRN_MERKLE_HASH &&
      sqlite3_column_bytes(q, 3) == CAIRN_STH_SIG) {
    h->tree_size = (uint64_t)sqlite3_column_int64(q, 0);
    h->timestamp = sqlite3_column_int64(q, 1);
    memcpy(h->root, sqlite3_column_blob(q, 2), CAIRN_MERKLE_HASH);
    memcpy(h->sig, sqlite3_column_blob(q, 3), CAIRN_STH_SIG);
  } else if (rc == SQLITE_ROW || rc == SQLITE_DONE)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "the audit log has no signed tree head yet");
  else
    st = db_fail(r, err, "reading its newest head");
  sqlite3_reset(q);
  return st;
}

cairn_status cairn__tree_newest(cairn__tree_reader *r, cairn__sth *h, cairn_error *err) {
  if (begin(r, err))
    return CAIRN_EIO;
  return end(r, newest(r, h, err));
}

/* Inside a read: CAIRN_OK when some head signed size; else CAIRN_EINVAL
 * naming it as the parameter name. */
static cairn_status is_signed(cairn__tree_reader *r, const char *name, uint64_t size,
                              cairn_error *err) {
  sqlite3_stmt *q = r->st[R_SIGNED];
  sqlite3_bind_int64(q, 1, (sqlite3_int64)size);
  int rc = sqlite3_step(q);
  sqlite3_reset(q);
  if (rc == SQLITE_ROW)
    return CAIRN_OK;
  if (rc != SQLITE_DONE)
    return db_fail(r, err, "reading its heads");
  return cairn__error_set(err, CAIRN_EINVAL, "\"%s\": no tree head of size %" PRIu64
                         " was ever signed", name, size);
}

cairn_status cairn__tree_entries(cairn__tree_reader *r, uint64_t start, uint64_t end_leaf,
                                 int (*cb)(void *, uint64_t, const void *, size_t), void *ud,
                                 uint64_t *last, cairn_error *err) {
  cairn__sth h;
  if (begin(r, err))
    return CAIRN_EIO;
  cairn_status st = newest(r, &h, err);
  if (st != CAIRN_OK && st != CAIRN_ENOTFOUND)
    return end(r, st);
  if (st == CAIRN_ENOTFOUND || start >= h.tree_size)
    return end(r, cairn__error_set(err, CAIRN_EINVAL, "\"start\": leaf %" PRIu64 " is past the "
                                  "newest signed tree head (%" PRIu64 " leaves)", start,
                                  st == CAIRN_OK ? h.tree_size : 0));
  if (end_leaf >= h.tree_size)
    end_leaf = h.tree_size - 1;
  sqlite3_stmt *q = r->st[R_RANGE];
  sqlite3_bind_int64(q, 1, (sqlite3_int64)start + 1);
  sqlite3_bind_int64(q, 2, (sqlite3_int64)end_leaf + 1);
  uint64_t next = start;
  int rc = SQLITE_DONE;
  while (st == CAIRN_OK && (rc = sqlite3_step(q)) == SQLITE_ROW) {
    if ((uint64_t)sqlite3_column_int64(q, 0) != next + 1)
      st = cairn__error_set(err, CAIRN_EIO, "the audit chain has no entry %" PRIu64, next + 1);
    else if (cb(ud, next, sqlite3_column_blob(q, 1), (size_t)sqlite3_column_bytes(q, 1)))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    else
      next++;
  }
  if (st == CAIRN_OK && rc != SQLITE_DONE)
    st = db_fail(r, err, "reading entries");
  else if (st == CAIRN_OK && next != end_leaf + 1)
    st = cairn__error_set(err, CAIRN_EIO, "the audit chain has no entry %" PRIu64, next + 1);
  sqlite3_reset(q);
  *last = next ? next - 1 : 0;
  return end(r, st);
}

/* A proof's read failed: the tree is missing what the proof needs. */
static cairn_status missing(cairn__tree_reader *r, cairn_error *err) {
  return cairn__error_set(err, CAIRN_EIO, "audit log: %s", r->src.why[0] ? r->src.why
                                                                        : "a read failed");
}

cairn_status cairn__tree_inclusion(cairn__tree_reader *r, uint64_t leaf, uint64_t size,
                                   cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF], size_t *n,
                                   cairn_error *err) {
  if (leaf >= size)
    return cairn__error_set(err, CAIRN_EINVAL, "\"leaf_index\" %" PRIu64 " must be below "
                           "\"tree_size\" %" PRIu64, leaf, size);
  if (begin(r, err))
    return CAIRN_EIO;
  r->src.why[0] = '\0';
  cairn_status st = is_signed(r, "tree_size", size, err);
  if (st == CAIRN_OK &&
      cairn_merkle_inclusion_proof(leaf, size, cairn__tree_get, &r->src, path, n))
    st = missing(r, err);
  return end(r, st);
}

cairn_status cairn__tree_consistency(cairn__tree_reader *r, uint64_t first, uint64_t second,
                                     cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF], size_t *n,
                                     cairn_error *err) {
  if (first == 0 || first > second)
    return cairn__error_set(err, CAIRN_EINVAL, "\"first\" %" PRIu64 " must be from 1 to "
                           "\"second\" %" PRIu64, first, second);
  if (begin(r, err))
    return CAIRN_EIO;
  r->src.why[0] = '\0';
  cairn_status st = is_signed(r, "first", first, err);
  if (st == CAIRN_OK)
    st = is_signed(r, "second", second, err);
  if (st == CAIRN_OK &&
      cairn_merkle_consistency_proof(first, second, cairn__tree_get, &r->src, path, n))
    st = missing(r, err);
  return end(r, st);
}

cairn_status cairn__tree_leaves_of(cairn__tree_reader *r, int64_t idx, int64_t *alloc_leaf,
                                   int64_t *result_leaf, uint8_t result_hash[CAIRN_MERKLE_HASH],
                                   cairn_error *err) {
  *alloc_leaf = *result_leaf = -1;
  if (begin(r, err))
    return CAIRN_EIO;
  sqlite3_stmt *q = r->st[R_LEAVES];
  sqlite3_bind_int64(q, 1, idx);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) { /* at most one of each kind */
    int64_t leaf = sqlite3_column_int64(q, 0) - 1;
    const char *kind = (const char *)sqlite3_column_text(q, 1);
    if (kind && strcmp(kind, "alloc") == 0)
      *alloc_leaf = leaf;
    else if (kind) {
      *result_leaf = leaf;
      cairn_merkle_leaf_hash(sqlite3_column_blob(q, 2), (size_t)sqlite3_column_bytes(q, 2),
                             result_hash);
    }
  }
  sqlite3_reset(q);
  return end(r, rc == SQLITE_DONE ? CAIRN_OK : db_fail(r, err, "reading an index's entries"));
}
