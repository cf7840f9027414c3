/* store_keep.c — the store's side of outputs kept on workers
 * (0016_kept_outputs.sql, docs/jobs.md "Where outputs stay"): a job's
 * choice, and which recorded files the master holds no bytes of. Writes run
 * on the writer connection, inside the commit thread's transaction. */
#include "server/store/store.h"
#include "server/store/store_int.h"

cairn_status cairn__store_job_keep(cairn__store *s, int64_t id, cairn_error *err) {
  sqlite3_bind_int64(Q(S_JOB_KEEP), 1, id);
  return run(s, S_JOB_KEEP, err);
}

cairn_status cairn__store_kept(cairn__store *s, const char *sha256, int on, cairn_error *err) {
  enum stmt_id id = on ? S_KEPT_PUT : S_KEPT_DELETE;
  TXT(Q(id), 1, sha256);
  return run(s, id, err);
}

cairn_status cairn__store_load_kept(cairn__store *s, int (*cb)(void *, const char *sha256),
                                   void *ud, cairn_error *err) {
  sqlite3_stmt *q = Q(S_LOAD_KEPT);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW)
    if (cb(ud, (const char *)sqlite3_column_text(q, 0))) {
      sqlite3_reset(q);
      return cairn__error_set(err, CAIRN_EINTERNAL, "store: loading kept files stopped");
    }
  sqlite3_reset(q);
  return rc == SQLITE_DONE ? CAIRN_OK : db_err(s, s->w, err, cairn__store_sql[S_LOAD_KEPT]);
}
