/* store_int.h — what the store's files share (store.c, store_life.c,
 * store_read.c, store_dist.c, store_people.c, store_sizing.c), and nothing
 * else includes:
 * the handle, the ids of the prepared statements, and the helpers that run
 * them. Every statement's SQL is in store.c (cairn__store_sql for the
 * writer's, rsql_text for the reader's) but store_people.c's and
 * store_sizing.c's, which keep their own; the store's files are the only
 * ones that include sqlite3.h.
 */
#ifndef CAIRN_STORE_INT_H
#define CAIRN_STORE_INT_H

#include <pthread.h>
#include <sqlite3.h>

#include "server/store/load.h"

/* The writer's prepared statements; a new one gets its id here, kept with
 * its group, and its SQL in store.c's cairn__store_sql. */
enum stmt_id {
  S_BEGIN, S_COMMIT, S_ROLLBACK,
  S_META_SET, S_META_GET, S_META_DELETE,
  S_VOL_INSERT, S_VOL_BAN, S_VOL_QUAR, S_VOL_PEER,
  S_FILE_INSERT, S_HOLDER_INSERT, S_HOLDER_DELETE, S_HOLDER_FORGET, S_RATE_PUT,
  S_INVITE_PUT, S_INVITE_DELETE,
  S_JOB_INSERT, S_JOB_FILE_INSERT, S_TASK_INSERT, S_PARENT_INSERT,
  S_TASK_UPDATE, S_JOB_UPDATE,
  S_ALLOC_INSERT, S_ALLOC_UPDATE, S_RESULT_INSERT, S_OUTCOME_UPDATE,
  S_TASK_IO_INSERT, S_RESULT_FILE_INSERT, /* output files (0008_outputs.sql) */
  S_LOAD_VOL, S_LOAD_JOBS, S_LOAD_JOB_FILES, S_LOAD_TASKS, S_LOAD_PARENTS, S_LOAD_ALLOCS,
  S_LOAD_FILES, S_LOAD_OUTCOMES, S_LOAD_HOLDERS, S_LOAD_RATES, S_MAX_TASK_KEY,
  /* resources (0007): task requests, volunteer offers */
  S_TASK_RES_INSERT, S_VOL_OFFER, S_LOAD_TASK_RES, S_LOAD_OFFERS,
  /* a job's life: priority, delete (cairn__store_job_delete_range/finish), unreferenced files */
  S_JOB_PRIORITY, S_DEL_MARK, S_DEL_KEYS, S_DEL_FILES_OF, S_DEL_EXPIRE, S_DEL_RESULTS_SIZE,
  S_DEL_RESULTS, S_DEL_PARENTS, S_DEL_TASK_RES, S_DEL_VOL_HIGH, S_DEL_ALLOCS, S_DEL_TASKS,
  S_DEL_TASKS_STRIP, S_DEL_JOB_FILES, S_DEL_JOB,
  S_DEL_OUT_FILES_OF, S_DEL_RESULT_FILES, S_DEL_TASK_IO,
  S_FILE_REFERENCED, S_FILE_SIZE, S_FILE_DELETE, S_FILE_HOLDERS_DELETE,
  S_LOAD_TASK_IO, S_LOAD_ACCEPTED_FILES,
  S_JOB_VALIDATOR, /* validators (0009) */
  S_VOL_TEAM, S_VOL_CREDIT, S_RESULT_CREDIT, /* credit (0012) */
  S_VOL_TRUST, S_JOB_ADAPTIVE, S_TRUST_PUT, S_TRUST_CLEAR, S_LOAD_TRUST, /* trust (0011) */
  S_CHAIN_PUT, S_CHAIN_HEAD, S_CHAIN_SIGNED, S_CHECKPOINT_PUT, /* audit chain (0014) */
  S_JOB_KEEP, S_KEPT_PUT, S_KEPT_DELETE, S_LOAD_KEPT, /* kept outputs (0016, store_keep.c) */
  S_XFER_PUT, S_PLAN_PUT, /* transfers and plans (0015; store_dist.c) */
  S_TEAM_NEW, S_TEAM_PUT, S_RESULT_TEAM, S_LOAD_TEAMS, /* team ledger (0018, store_team.c) */
  S_APP_PUT, S_APP_FILE_PUT, S_APP_RETIRE, S_LOAD_APPS, S_JOB_APP_VERSION, /* app versions (0023, store_apps.c) */
  S_ACCT_PUT, S_ACCT_KEY, S_TEAM_EXPAVG, S_ACCT_CREDIT, S_VOL_ACCOUNT, S_LOAD_ACCTS, /* accounts (0024, store_accounts.c) */
  S_COUNT
};

/* The writer's statements' SQL, by id (store.c). */
extern const char *const cairn__store_sql[S_COUNT];

/* The reader's prepared statements (SQL: store.c's rsql_text). */
enum rstmt_id { R_OUTPUT, R_JOB_RESULTS, R_JOB_FILES, R_OUTPUT_FILE, R_AUDIT_INDEX, R_AUDIT_VOL,
                R_INVITES, R_AUDIT_TASK, R_STATS_VOLS, R_STATS_TEAMS, R_STATS_TOTAL, R_COUNT };

/* The statements of store_people.c (teams of accounts, sessions), which
 * prepares each on its first use and numbers them itself. */
#define CAIRN__STORE_PEOPLE_STMTS 16
/* The statements of store_sizing.c (tasks that size themselves), likewise. */
#define CAIRN__STORE_SIZING_STMTS 12

struct cairn__store {
  sqlite3 *w, *r;
  sqlite3_stmt *st[S_COUNT];
  sqlite3_stmt *rst[R_COUNT];
  sqlite3_stmt *pst[CAIRN__STORE_PEOPLE_STMTS]; /* store_people.c's, prepared at first use */
  sqlite3_stmt *zst[CAIRN__STORE_SIZING_STMTS]; /* store_sizing.c's, likewise */
  pthread_mutex_t rlock;
  int version;
};

static inline cairn_status db_err(cairn__store *s, sqlite3 *db, cairn_error *err,
                                  const char *what) {
  (void)s;
  return cairn__error_set(err, CAIRN_EIO, "store: %s: %s", what, sqlite3_errmsg(db));
}

/* Runs a prepared writer statement to completion and resets it. */
static inline cairn_status run(cairn__store *s, enum stmt_id id, cairn_error *err) {
  sqlite3_stmt *q = s->st[id];
  int rc = sqlite3_step(q);
  cairn_status st = CAIRN_OK;
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    st = db_err(s, s->w, err, cairn__store_sql[id]);
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return st;
}

/* For the modules that number their own statements (store_people.c,
 * store_sizing.c): *slot, their array's entry for sql, prepared on db at
 * its first use; NULL with err set when it cannot be. */
static inline sqlite3_stmt *cairn__store_prepared(cairn__store *s, sqlite3 *db,
                                                  sqlite3_stmt **slot, const char *sql,
                                                  cairn_error *err) {
  if (!*slot && sqlite3_prepare_v3(db, sql, -1, SQLITE_PREPARE_PERSISTENT, slot, NULL) != SQLITE_OK)
    db_err(s, db, err, sql);
  return *slot;
}

/* Runs writer statement q (of sql) to completion and resets it. */
static inline cairn_status cairn__store_done(cairn__store *s, sqlite3_stmt *q, const char *sql,
                                             cairn_error *err) {
  int rc = sqlite3_step(q);
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return rc == SQLITE_DONE || rc == SQLITE_ROW ? CAIRN_OK : db_err(s, s->w, err, sql);
}

/* Steps q (of sql on db; prepared, bound) through its rows, each to
 * row(q, cb, ud); non-zero from it stops with CAIRN_ENOMEM naming what. */
static inline cairn_status cairn__store_each_row(cairn__store *s, sqlite3 *db, sqlite3_stmt *q,
                                                 const char *sql,
                                                 int (*row)(sqlite3_stmt *, void *, void *),
                                                 void *cb, void *ud, const char *what,
                                                 cairn_error *err) {
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW)
    if (row(q, cb, ud)) {
      sqlite3_reset(q);
      sqlite3_clear_bindings(q);
      return cairn__error_set(err, CAIRN_ENOMEM, "store: out of memory reading %s", what);
    }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return rc == SQLITE_DONE ? CAIRN_OK : db_err(s, db, err, sql);
}

/* A writer statement; binding text (copied); columns of the row q is on. */
#define Q(id) (s->st[id])
#define TXT(q, i, v) sqlite3_bind_text((q), (i), (v), -1, SQLITE_TRANSIENT)
#define I64(c) sqlite3_column_int64(q, (c))
#define STR(c) ((const char *)sqlite3_column_text(q, (c)))

#endif
