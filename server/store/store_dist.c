/* store_dist.c — a broadcast's record (0015_transfers.sql): the commit
 * thread's writes of transfers and plans (on the writer connection, in its
 * transaction), and the read of GET /v1/jobs/{id}/distribution
 * (server/api/distview.c) on a read-only connection of its own, opened for the
 * one read (WAL: it blocks neither the writer nor the shared reader), in
 * one read transaction. Bounded: per broadcast file of the job, at most
 * max_xfers transfers and senders; at most RATES_MAX links. Cost: O(F ×
 * (max_xfers + log T)) rows read for F files and T transfers, plus the
 * group-by over a file's transfers (O(T) in SQLite, not in memory).
 */
#include "server/store/store.h"
#include "server/store/store_int.h"

#include <stdio.h>
#include <string.h>

#define RATES_MAX 4096
#define CAIRN__STR2(x) #x
#define CAIRN__STR(x) CAIRN__STR2(x)

static void cut(char dst[65], const char *s) { snprintf(dst, 65, "%s", s ? s : ""); }

cairn_status cairn__store_xfer_put(cairn__store *s, const cairn__store_xfer_row *r,
                                  cairn_error *err) {
  sqlite3_stmt *q = Q(S_XFER_PUT);
  sqlite3_bind_int64(q, 1, r->job);
  TXT(q, 2, r->sha256);
  sqlite3_bind_int64(q, 3, r->dst);
  TXT(q, 4, r->dst_cluster);
  sqlite3_bind_int64(q, 5, r->src);
  TXT(q, 6, r->src_cluster);
  if (r->assigned >= 0)
    sqlite3_bind_int64(q, 7, r->assigned);
  sqlite3_bind_int64(q, 8, r->start_ms);
  sqlite3_bind_int64(q, 9, r->end_ms);
  sqlite3_bind_int64(q, 10, r->bytes);
  return run(s, S_XFER_PUT, err);
}

cairn_status cairn__store_plan_put(cairn__store *s, const char *sha256, int64_t started_ms,
                                  int64_t plans, const char *body, cairn_error *err) {
  sqlite3_stmt *q = Q(S_PLAN_PUT);
  TXT(q, 1, sha256);
  sqlite3_bind_int64(q, 2, started_ms);
  sqlite3_bind_int64(q, 3, plans);
  TXT(q, 4, body);
  return run(s, S_PLAN_PUT, err);
}

/* ---- the read ---- */

static sqlite3_stmt *prep(sqlite3 *db, const char *sql) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) != SQLITE_OK) {
    sqlite3_finalize(st);
    return NULL;
  }
  return st;
}

#define COL_I(st, c) sqlite3_column_int64((st), (c))
#define COL_S(st, c) ((const char *)sqlite3_column_text((st), (c)))

/* File sha's transfers and senders: 0, or 1 when a callback stopped, -1 on
 * a store error. */
static int read_file(sqlite3 *db, int64_t job, const char *sha, uint32_t max,
                     const cairn__store_dist_cb *cb) {
  sqlite3_stmt *x = prep(db, "SELECT dst, dst_cluster, src, src_cluster, coalesce(assigned, -1), "
                             "start_ms, end_ms, bytes FROM file_transfers WHERE job_id = ?1 AND "
                             "sha256 = ?2 ORDER BY start_ms, dst LIMIT ?3");
  sqlite3_stmt *g = prep(db, "SELECT src, min(src_cluster), sum(bytes), count(*) FROM file_transfers "
                             "WHERE job_id = ?1 AND sha256 = ?2 GROUP BY src "
                             "ORDER BY sum(bytes) DESC, src LIMIT ?3");
  int rc = x && g ? 0 : -1, step = SQLITE_DONE;
  sqlite3_stmt *both[2] = {x, g};
  for (int i = 0; !rc && i < 2; i++) {
    sqlite3_bind_int64(both[i], 1, job);
    sqlite3_bind_text(both[i], 2, sha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(both[i], 3, max);
  }
  while (!rc && (step = sqlite3_step(x)) == SQLITE_ROW) {
    cairn__store_xfer_row r = {.job = job, .dst = COL_I(x, 0), .src = COL_I(x, 2),
                              .assigned = COL_I(x, 4), .start_ms = COL_I(x, 5),
                              .end_ms = COL_I(x, 6), .bytes = COL_I(x, 7)};
    cut(r.sha256, sha);
    cut(r.dst_cluster, COL_S(x, 1));
    cut(r.src_cluster, COL_S(x, 3));
    rc = cb->xfer(cb->ud, &r) ? 1 : 0;
  }
  if (!rc && step != SQLITE_DONE)
    rc = -1;
  while (!rc && (step = sqlite3_step(g)) == SQLITE_ROW)
    rc = cb->source(cb->ud, COL_I(g, 0), COL_S(g, 1), COL_I(g, 2), COL_I(g, 3)) ? 1 : 0;
  if (!rc && step != SQLITE_DONE)
    rc = -1;
  sqlite3_finalize(x);
  sqlite3_finalize(g);
  return rc;
}

/* The read on an open connection: 200, 404 or 503 with msg. */
static int dist_read(sqlite3 *db, int64_t job, uint32_t max, const cairn__store_dist_cb *cb,
                     char *msg, size_t len) {
  sqlite3_stmt *st = prep(db, "SELECT 1 FROM jobs WHERE id = ?1 AND (ended IS NULL OR ended = "
                              "'cancelled')");
  if (!st)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  sqlite3_bind_int64(st, 1, job);
  int found = sqlite3_step(st) == SQLITE_ROW;
  sqlite3_finalize(st);
  if (!found)
    return snprintf(msg, len, "no job %lld", (long long)job), 404;
  st = prep(db, "SELECT jf.name, jf.sha256, f.size, p.started_ms, p.plans, p.body, "
                "(SELECT count(*) FROM file_transfers t WHERE t.job_id = jf.job_id AND "
                "t.sha256 = jf.sha256) FROM job_files jf JOIN files f ON f.sha256 = jf.sha256 "
                "LEFT JOIN broadcast_plans p ON p.sha256 = jf.sha256 "
                "WHERE jf.job_id = ?1 AND jf.broadcast = 1 ORDER BY jf.seq");
  if (!st)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  sqlite3_bind_int64(st, 1, job);
  int rc = 0, step = SQLITE_DONE;
  while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW) {
    int has_plan = sqlite3_column_type(st, 5) != SQLITE_NULL;
    char sha[65];
    cut(sha, COL_S(st, 1));
    rc = cb->file(cb->ud, COL_S(st, 0), sha, COL_I(st, 2), has_plan ? COL_I(st, 3) : 0,
                  has_plan ? COL_I(st, 4) : 0, has_plan ? COL_S(st, 5) : NULL, COL_I(st, 6))
           ? 1
           : read_file(db, job, sha, max, cb);
  }
  if (!rc && step != SQLITE_DONE)
    rc = -1;
  sqlite3_finalize(st);
  if (!rc && !(st = prep(db, "SELECT src, dst, bytes_per_second, samples FROM link_rates "
                             "ORDER BY src, dst LIMIT " CAIRN__STR(RATES_MAX))))
    rc = -1;
  while (!rc && (step = sqlite3_step(st)) == SQLITE_ROW)
    rc = cb->rate(cb->ud, COL_S(st, 0), COL_S(st, 1), COL_I(st, 2), COL_I(st, 3)) ? 1 : 0;
  if (!rc && step != SQLITE_DONE)
    rc = -1;
  sqlite3_finalize(st);
  if (rc < 0)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  if (rc > 0)
    return snprintf(msg, len, "out of memory"), 503;
  return 200;
}

cairn_status cairn__store_dist_read(const char *db_path, int64_t job, uint32_t max_xfers,
                                   const cairn__store_dist_cb *cb, cairn_error *err) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    return cairn__error_set(err, CAIRN_EIO, "the store could not be opened for reading");
  }
  sqlite3_busy_timeout(db, 2000);
  char msg[256] = "";
  sqlite3_exec(db, "BEGIN", NULL, NULL, NULL); /* one snapshot for every read */
  int code = dist_read(db, job, max_xfers, cb, msg, sizeof msg);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  return code == 200 ? CAIRN_OK
                     : cairn__error_set(err, code == 404 ? CAIRN_ENOTFOUND : CAIRN_EIO, "%s", msg);
}
