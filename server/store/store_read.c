/* store_read.c — the store's reads for the API: accepted outputs, a job's
 * results and output files, the audit trail, the invitations. Reader
 * connection, serialised by its own lock (store.h).
 */
#include "server/store/store.h"
#include "server/store/store_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cairn_status cairn__store_task_output(cairn__store *s, int64_t key, char **out, size_t *len,
                                     cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = s->rst[R_OUTPUT];
  sqlite3_bind_int64(q, 1, key);
  int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    size_t n = (size_t)sqlite3_column_bytes(q, 0);
    const void *p = sqlite3_column_blob(q, 0);
    *out = malloc(n + 1);
    if (!*out) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    } else {
      if (n)
        memcpy(*out, p, n);
      (*out)[n] = '\0';
      *len = n;
    }
  } else if (rc == SQLITE_DONE) {
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "task %lld has no accepted result",
                         (long long)key);
  } else {
    st = db_err(s, s->r, err, "reading an output");
  }
  sqlite3_reset(q);
  pthread_mutex_unlock(&s->rlock);
  return st;
}

cairn_status cairn__store_job_results(cairn__store *s, int64_t job, int64_t from, int64_t to,
                                     int (*cb)(void *, const cairn__store_result_row *), void *ud,
                                     cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = s->rst[R_JOB_RESULTS];
  sqlite3_bind_int64(q, 1, job);
  sqlite3_bind_int64(q, 2, from);
  sqlite3_bind_int64(q, 3, to);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_result_row row = {
      .seq = (uint32_t)sqlite3_column_int64(q, 0),
      .idx = sqlite3_column_int64(q, 1),
      .volunteer = sqlite3_column_int64(q, 2),
      .exit_status = sqlite3_column_int(q, 3),
      .output = sqlite3_column_blob(q, 4),
      .len = (size_t)sqlite3_column_bytes(q, 4),
      .reason = (const char *)sqlite3_column_text(q, 5),
      .stderr_tail = sqlite3_column_blob(q, 6),
      .stderr_len = (size_t)sqlite3_column_bytes(q, 6),
    };
    if (cb(ud, &row)) {
      st = cairn__error_set(err, CAIRN_EINTERNAL, "store: reading results stopped");
      break;
    }
  }
  if (st == CAIRN_OK && rc != SQLITE_DONE)
    st = db_err(s, s->r, err, "reading results");
  sqlite3_reset(q);
  pthread_mutex_unlock(&s->rlock);
  return st;
}

cairn_status cairn__store_output_file(cairn__store *s, int64_t job, const char *task,
                                     const char *name, char sha256[65], int64_t *size,
                                     cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = s->rst[R_OUTPUT_FILE];
  sqlite3_bind_int64(q, 1, job);
  sqlite3_bind_text(q, 2, task, -1, SQLITE_TRANSIENT);
  sqlite3_bind_text(q, 3, name, -1, SQLITE_TRANSIENT);
  int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    snprintf(sha256, 65, "%s", (const char *)sqlite3_column_text(q, 0));
    *size = sqlite3_column_int64(q, 1);
  } else if (rc == SQLITE_DONE)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "job %lld has no done task \"%.200s\" with an "
                         "output file \"%.200s\"", (long long)job, task, name);
  else
    st = db_err(s, s->r, err, "reading an output file");
  sqlite3_reset(q);
  pthread_mutex_unlock(&s->rlock);
  return st;
}

cairn_status cairn__store_job_files(cairn__store *s, int64_t job, int64_t from, int64_t to,
                                   int (*cb)(void *, const cairn__store_output_row *), void *ud,
                                   cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = s->rst[R_JOB_FILES];
  sqlite3_bind_int64(q, 1, job);
  sqlite3_bind_int64(q, 2, from);
  sqlite3_bind_int64(q, 3, to);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_output_row row = {
      .key = sqlite3_column_int64(q, 0),
      .name = (const char *)sqlite3_column_text(q, 1),
      .sha256 = (const char *)sqlite3_column_text(q, 2),
      .size = sqlite3_column_int64(q, 3),
      .kept = sqlite3_column_int(q, 4),
    };
    if (cb(ud, &row)) {
      st = cairn__error_set(err, CAIRN_EINTERNAL, "store: reading output files stopped");
      break;
    }
  }
  if (st == CAIRN_OK && rc != SQLITE_DONE)
    st = db_err(s, s->r, err, "reading output files");
  sqlite3_reset(q);
  pthread_mutex_unlock(&s->rlock);
  return st;
}

static void audit_row(sqlite3_stmt *q, cairn__store_audit_row *row) {
  memset(row, 0, sizeof *row);
  row->idx = sqlite3_column_int64(q, 0);
  row->volunteer = sqlite3_column_int64(q, 1);
  row->t = sqlite3_column_int64(q, 2);
  row->job = sqlite3_column_int64(q, 3);
  row->task = (const char *)sqlite3_column_text(q, 4);
  row->task_key = sqlite3_column_int64(q, 5);
  row->issued = sqlite3_column_int64(q, 6);
  row->lease_expires = sqlite3_column_int64(q, 7);
  row->lease_state = (const char *)sqlite3_column_text(q, 8);
  row->round = sqlite3_column_int64(q, 9);
  row->has_result = sqlite3_column_type(q, 10) != SQLITE_NULL;
  row->exit_status = sqlite3_column_int(q, 10);
  row->digest = (const char *)sqlite3_column_text(q, 11);
  row->outcome = (const char *)sqlite3_column_text(q, 12);
  row->received = sqlite3_column_int64(q, 13);
  row->reason = (const char *)sqlite3_column_text(q, 14);
  row->cpu_seconds = sqlite3_column_double(q, 15);
  row->credit = sqlite3_column_double(q, 16);
}

cairn_status cairn__store_audit(cairn__store *s, int by, int64_t key,
                               int (*cb)(void *, const cairn__store_audit_row *), void *ud,
                               cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = s->rst[by == CAIRN_AUDIT_BY_TASK         ? R_AUDIT_TASK
                           : by == CAIRN_AUDIT_BY_VOLUNTEER ? R_AUDIT_VOL
                                                            : R_AUDIT_INDEX];
  sqlite3_bind_int64(q, 1, key);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_audit_row row;
    audit_row(q, &row);
    if (cb(ud, &row)) {
      st = cairn__error_set(err, CAIRN_EINTERNAL, "store: reading the audit trail stopped");
      break;
    }
  }
  if (st == CAIRN_OK && rc != SQLITE_DONE)
    st = db_err(s, s->r, err, "reading the audit trail");
  sqlite3_reset(q);
  pthread_mutex_unlock(&s->rlock);
  return st;
}

cairn_status cairn__store_read_invites(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_invite_row *), void *ud,
                                      cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = s->rst[R_INVITES];
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_invite_row row = {
      .id = I64(0), .code_hash = STR(1), .prefix = STR(2), .uses = I64(3), .used = I64(4),
      .expires = I64(5), .note = STR(6), .created = I64(7)};
    if (!row.code_hash || !row.prefix || !row.note || cb(ud, &row)) {
      st = cairn__error_set(err, CAIRN_EINTERNAL, "store: reading the invitations stopped");
      break;
    }
  }
  if (st == CAIRN_OK && rc != SQLITE_DONE)
    st = db_err(s, s->r, err, "reading the invitations");
  sqlite3_reset(q);
  pthread_mutex_unlock(&s->rlock);
  return st;
}

/* Steps reader statement q, filling a row of kind for each; 0 or -1 (err set). */
static int stats_rows(cairn__store *s, sqlite3_stmt *q, int kind,
                      int (*cb)(void *, const cairn__store_stats_row *), void *ud,
                      cairn_error *err) {
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_stats_row row = {.kind = kind};
    if (kind == CAIRN_STATS_VOLUNTEER) {
      row.id = sqlite3_column_int64(q, 0);
      row.name = (const char *)sqlite3_column_text(q, 1);
      row.team = (const char *)sqlite3_column_text(q, 2);
      row.credit = sqlite3_column_double(q, 3);
      row.cpu_seconds = sqlite3_column_double(q, 4);
      row.results = sqlite3_column_int64(q, 5);
    } else if (kind == CAIRN_STATS_TEAM) {
      row.team = (const char *)sqlite3_column_text(q, 0);
      row.members = sqlite3_column_int64(q, 1);
      row.credit = sqlite3_column_double(q, 2);
      row.cpu_seconds = sqlite3_column_double(q, 3);
      row.results = sqlite3_column_int64(q, 4);
    } else {
      row.members = sqlite3_column_int64(q, 0);
      row.id = sqlite3_column_int64(q, 1);
      row.credit = sqlite3_column_double(q, 2);
      row.cpu_seconds = sqlite3_column_double(q, 3);
      row.results = sqlite3_column_int64(q, 4);
    }
    if (cb(ud, &row)) {
      sqlite3_reset(q);
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory reading the stats");
      return -1;
    }
  }
  sqlite3_reset(q);
  if (rc != SQLITE_DONE) {
    db_err(s, s->r, err, "reading the stats");
    return -1;
  }
  return 0;
}

cairn_status cairn__store_stats(cairn__store *s, int limit,
                               int (*cb)(void *, const cairn__store_stats_row *), void *ud,
                               cairn_error *err) {
  int bad = 0;
  pthread_mutex_lock(&s->rlock);
  sqlite3_bind_int(s->rst[R_STATS_VOLS], 1, limit);
  sqlite3_bind_int(s->rst[R_STATS_TEAMS], 1, limit);
  if (sqlite3_exec(s->r, "BEGIN", NULL, NULL, NULL) != SQLITE_OK) /* one snapshot for all three */
    bad = -1, db_err(s, s->r, err, "reading the stats");
  bad = bad || stats_rows(s, s->rst[R_STATS_VOLS], CAIRN_STATS_VOLUNTEER, cb, ud, err) ||
        stats_rows(s, s->rst[R_STATS_TEAMS], CAIRN_STATS_TEAM, cb, ud, err) ||
        stats_rows(s, s->rst[R_STATS_TOTAL], CAIRN_STATS_TOTAL, cb, ud, err);
  if (sqlite3_get_autocommit(s->r) == 0)
    sqlite3_exec(s->r, "COMMIT", NULL, NULL, NULL);
  pthread_mutex_unlock(&s->rlock);
  return bad ? (err ? err->status : CAIRN_EIO) : CAIRN_OK;
}
