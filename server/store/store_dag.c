/* store_dag.c — a job's dag read from the database file for
 * GET /v1/jobs/{id}/dag (server/api/dagview.c), on a read-only connection of
 * its own, opened for the one read (WAL: it blocks neither the writer nor
 * the shared reader), in one read transaction. Bounded: more than max_n
 * tasks or max_m edges is refused after two counts, before anything is
 * read. Cost: O(n + m) rows, O(n + m) memory, O(m log n) to map keys.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/dag.h"
#include "server/store/store.h"

void cairn__store_dag_free(cairn__store_dag *v) {
  free(v->keys);
  free(v->edges);
  *v = (cairn__store_dag){0};
}

/* The index of key in v->keys (sorted: keys grow with seq), or -1. */
static int64_t key_index(const cairn__store_dag *v, int64_t key) {
  uint32_t lo = 0, hi = v->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (v->keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < v->n && v->keys[lo] == key ? (int64_t)lo : -1;
}

static int64_t count_of(sqlite3 *db, const char *sql, int64_t job) {
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, job);
    if (sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return n;
}

/* dag_read on an open connection: 200, 404, 413 or 503 with msg. */
static int dag_read(sqlite3 *db, int64_t job, uint32_t max_n, uint64_t max_m, cairn__store_dag *v, char *msg, size_t len) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT policy FROM jobs WHERE id = ? AND (ended IS NULL OR ended = 'cancelled')",
                         -1, &st, NULL) != SQLITE_OK)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  sqlite3_bind_int64(st, 1, job);
  int found = sqlite3_step(st) == SQLITE_ROW;
  if (found)
    snprintf(v->policy, sizeof v->policy, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (!found)
    return snprintf(msg, len, "no job %lld", (long long)job), 404;
  int64_t n = count_of(db, "SELECT count(*) FROM tasks WHERE job_id = ?", job);
  int64_t m = count_of(db, "SELECT count(*) FROM task_parents JOIN tasks ON tasks.id = task_id "
                           "WHERE job_id = ?", job);
  if (n < 0 || m < 0)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  if (n > (int64_t)max_n || (uint64_t)m > max_m)
    return snprintf(msg, len, "job %lld has %lld tasks and %lld edges: the dag view is limited "
                    "to %u tasks and %llu edges", (long long)job, (long long)n, (long long)m,
                    max_n, (unsigned long long)max_m), 413;
  v->keys = malloc(sizeof *v->keys * (size_t)(n ? n : 1));
  v->edges = malloc(sizeof *v->edges * (size_t)(m ? m : 1));
  if (!v->keys || !v->edges)
    return snprintf(msg, len, "out of memory"), 503;
  sqlite3_prepare_v2(db, "SELECT id FROM tasks WHERE job_id = ? ORDER BY id", -1, &st, NULL);
  sqlite3_bind_int64(st, 1, job);
  while (v->n < n && sqlite3_step(st) == SQLITE_ROW)
    v->keys[v->n++] = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db, "SELECT task_id, parent_id FROM task_parents JOIN tasks ON tasks.id = "
                         "task_id WHERE job_id = ?", -1, &st, NULL);
  sqlite3_bind_int64(st, 1, job);
  while (v->m < (uint64_t)m && sqlite3_step(st) == SQLITE_ROW) {
    int64_t c = key_index(v, sqlite3_column_int64(st, 0));
    int64_t p = key_index(v, sqlite3_column_int64(st, 1));
    if (c >= 0 && p >= 0)
      v->edges[v->m++] = (cairn__edge){(uint32_t)p, (uint32_t)c};
  }
  sqlite3_finalize(st);
  return 200;
}

cairn_status cairn__store_dag_read(const char *db_path, int64_t job, uint32_t max_n, uint64_t max_m,
                                  cairn__store_dag *out, cairn_error *err) {
  *out = (cairn__store_dag){0};
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    return cairn__error_set(err, CAIRN_EIO, "the store could not be opened for reading");
  }
  sqlite3_busy_timeout(db, 2000);
  char msg[256] = "";
  sqlite3_exec(db, "BEGIN", NULL, NULL, NULL); /* one snapshot for every read */
  int code = dag_read(db, job, max_n, max_m, out, msg, sizeof msg);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  if (code == 200)
    return CAIRN_OK;
  cairn__store_dag_free(out);
  return cairn__error_set(err, code == 404 ? CAIRN_ENOTFOUND : code == 413 ? CAIRN_ETOOBIG : CAIRN_EIO,
                         "%s", msg);
}
