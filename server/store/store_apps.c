/* store_apps.c — the store's side of signed app versions
 * (0023_app_versions.sql, docs/apps.md): a version's row and its files,
 * written on the writer connection inside the commit thread's transaction;
 * the load runs at start-up. */
#include "server/store/store.h"
#include "server/store/store_int.h"

cairn_status cairn__store_app_put(cairn__store *s, const cairn__store_app_row *r,
                                 cairn_error *err) {
  sqlite3_stmt *q = Q(S_APP_PUT);
  sqlite3_bind_int64(q, 1, r->id);
  TXT(q, 2, r->name);
  TXT(q, 3, r->version);
  TXT(q, 4, r->platform);
  TXT(q, 5, r->manifest);
  TXT(q, 6, r->signature);
  sqlite3_bind_int64(q, 7, r->published);
  cairn_status st = run(s, S_APP_PUT, err);
  for (size_t i = 0; st == CAIRN_OK && i < r->nshas; i++) {
    q = Q(S_APP_FILE_PUT);
    sqlite3_bind_int64(q, 1, r->id);
    TXT(q, 2, r->shas[i]);
    st = run(s, S_APP_FILE_PUT, err);
  }
  return st;
}

cairn_status cairn__store_job_app_version(cairn__store *s, int64_t id, const char *version,
                                         cairn_error *err) {
  sqlite3_bind_int64(Q(S_JOB_APP_VERSION), 1, id);
  TXT(Q(S_JOB_APP_VERSION), 2, version);
  return run(s, S_JOB_APP_VERSION, err);
}

cairn_status cairn__store_app_retire(cairn__store *s, int64_t id, cairn_error *err) {
  sqlite3_bind_int64(Q(S_APP_RETIRE), 1, id);
  return run(s, S_APP_RETIRE, err);
}

cairn_status cairn__store_load_apps(cairn__store *s, int (*cb)(void *, const cairn__store_app_row *),
                                   void *ud, cairn_error *err) {
  sqlite3_stmt *q = Q(S_LOAD_APPS);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_app_row row = {.id = I64(0), .name = STR(1), .version = STR(2),
                                .platform = STR(3), .manifest = STR(4), .signature = STR(5),
                                .retired = (int)I64(6), .published = I64(7)};
    if (!row.name || !row.version || !row.platform || !row.manifest || !row.signature ||
        cb(ud, &row)) {
      sqlite3_reset(q);
      return cairn__error_set(err, CAIRN_ENOMEM, "store: out of memory loading app versions");
    }
  }
  sqlite3_reset(q);
  return rc == SQLITE_DONE ? CAIRN_OK : db_err(s, s->w, err, cairn__store_sql[S_LOAD_APPS]);
}
