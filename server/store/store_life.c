/* store_life.c — the store's part of a job's life (life.c): its priority,
 * its deletion in bounded ranges of task keys, and the removal of stored
 * files nothing names any more. Writer connection, inside the commit
 * thread's transactions (store.h).
 */
#include "server/store/store.h"
#include "server/store/store_int.h"
#include "server/store/store_sizing.h"

#include <stdio.h>
#include <stdlib.h>

cairn_status cairn__store_job_priority(cairn__store *s, int64_t id, int64_t priority,
                                      cairn_error *err) {
  sqlite3_bind_int64(Q(S_JOB_PRIORITY), 1, id);
  sqlite3_bind_int64(Q(S_JOB_PRIORITY), 2, priority);
  return run(s, S_JOB_PRIORITY, err);
}

cairn_status cairn__store_job_validator(cairn__store *s, int64_t id, const char *validator,
                                       cairn_error *err) {
  sqlite3_bind_int64(Q(S_JOB_VALIDATOR), 1, id);
  TXT(Q(S_JOB_VALIDATOR), 2, validator);
  return run(s, S_JOB_VALIDATOR, err);
}

/* Runs statement id bound to job ?1 and, when b > a, the key range ?2..?3
 * (else ?2 = a when a >= 0); *changes gets the rows it changed when not NULL. */
static cairn_status run_job(cairn__store *s, enum stmt_id id, int64_t job, int64_t a, int64_t b,
                            int64_t *changes, cairn_error *err) {
  sqlite3_stmt *q = Q(id);
  if (sqlite3_bind_parameter_count(q) >= 1)
    sqlite3_bind_int64(q, 1, job);
  if (a >= 0 && sqlite3_bind_parameter_count(q) >= 2)
    sqlite3_bind_int64(q, 2, a);
  if (b > a && sqlite3_bind_parameter_count(q) >= 3)
    sqlite3_bind_int64(q, 3, b);
  cairn_status st = run(s, id, err);
  if (changes)
    *changes += st == CAIRN_OK ? sqlite3_changes64(s->w) : 0;
  return st;
}

/* Adds sha to rep's list of removed files. 0, or -1 out of memory. */
static int note_removed(cairn__store_delete_report *rep, const char *sha) {
  char(*n)[65] = realloc(rep->removed, (rep->nremoved + 1) * sizeof *n);
  if (!n)
    return -1;
  rep->removed = n;
  snprintf(n[rep->nremoved++], 65, "%s", sha);
  return 0;
}

cairn_status cairn__store_files_unreferenced(cairn__store *s, char (*cand)[65], size_t n,
                                            cairn__store_delete_report *rep, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  for (size_t i = 0; st == CAIRN_OK && i < n; i++) {
    sqlite3_stmt *q = Q(S_FILE_REFERENCED);
    TXT(q, 1, cand[i]);
    int rc = sqlite3_step(q);
    int kept = rc == SQLITE_ROW && sqlite3_column_int(q, 0);
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    if (rc != SQLITE_ROW)
      return db_err(s, s->w, err, cairn__store_sql[S_FILE_REFERENCED]);
    if (kept)
      continue;
    q = Q(S_FILE_SIZE);
    TXT(q, 1, cand[i]);
    int64_t size = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : -1;
    sqlite3_reset(q);
    sqlite3_clear_bindings(q);
    if (size < 0)
      continue; /* no row: nothing to remove */
    TXT(Q(S_FILE_HOLDERS_DELETE), 1, cand[i]);
    st = run(s, S_FILE_HOLDERS_DELETE, err);
    if (st == CAIRN_OK) {
      TXT(Q(S_FILE_DELETE), 1, cand[i]);
      st = run(s, S_FILE_DELETE, err);
    }
    if (st == CAIRN_OK && note_removed(rep, cand[i]))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    rep->files += st == CAIRN_OK;
    rep->file_bytes += st == CAIRN_OK ? size : 0;
  }
  return st;
}

/* The distinct sha256 texts statement id yields (bound to job ?1, or to the
 * key range ?2..?3 when hi > lo), as a new array in *cand (n in *ncand). */
static cairn_status gather_files(cairn__store *s, enum stmt_id id, int64_t job, int64_t lo,
                                 int64_t hi, char (**cand)[65], size_t *ncand,
                                 cairn_error *err) {
  *cand = NULL;
  *ncand = 0;
  sqlite3_stmt *q = Q(id);
  if (hi > lo) {
    sqlite3_bind_int64(q, 2, lo);
    sqlite3_bind_int64(q, 3, hi);
  } else {
    sqlite3_bind_int64(q, 1, job);
  }
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    char(*nc)[65] = realloc(*cand, (*ncand + 1) * sizeof *nc);
    if (!nc)
      break;
    *cand = nc;
    snprintf((*cand)[(*ncand)++], 65, "%s", (const char *)sqlite3_column_text(q, 0));
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  if (rc == SQLITE_DONE)
    return CAIRN_OK;
  return rc == SQLITE_ROW ? cairn__error_set(err, CAIRN_ENOMEM, "out of memory")
                          : db_err(s, s->w, err, cairn__store_sql[id]);
}

cairn_status cairn__store_job_delete_range(cairn__store *s, int64_t job, int purge, int64_t lo,
                                          int64_t hi, cairn__store_delete_report *rep,
                                          cairn_error *err) {
  sqlite3_stmt *q = Q(S_DEL_MARK);
  sqlite3_bind_int64(q, 1, job);
  TXT(q, 2, purge ? "purging" : "deleting");
  cairn_status st = run(s, S_DEL_MARK, err);
  if (st != CAIRN_OK || hi <= lo)
    return st;
  q = Q(S_DEL_RESULTS_SIZE);
  sqlite3_bind_int64(q, 2, lo);
  sqlite3_bind_int64(q, 3, hi);
  if (sqlite3_step(q) == SQLITE_ROW) {
    rep->results += sqlite3_column_int64(q, 0);
    rep->result_bytes += sqlite3_column_int64(q, 1);
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  /* the output files the range's results named: removed with them when
   * nothing else names them */
  char(*outs)[65] = NULL;
  size_t nouts = 0;
  st = gather_files(s, S_DEL_OUT_FILES_OF, job, lo, hi, &outs, &nouts, err);
  if (st == CAIRN_OK && (st = run_job(s, S_DEL_RESULT_FILES, job, lo, hi, NULL, err)) == CAIRN_OK)
    st = cairn__store_files_unreferenced(s, outs, nouts, rep, err);
  free(outs);
  if (st != CAIRN_OK)
    return st;
  if ((st = run_job(s, S_DEL_EXPIRE, job, lo, hi, NULL, err)) ||
      (st = run_job(s, S_DEL_RESULTS, job, lo, hi, NULL, err)) ||
      (st = run_job(s, S_DEL_TASK_IO, job, lo, hi, NULL, err)) ||
      (st = run_job(s, S_DEL_PARENTS, job, lo, hi, NULL, err)) ||
      (st = run_job(s, S_DEL_TASK_RES, job, lo, hi, NULL, err)) ||
      (st = cairn__store_sizing_delete_range(s, lo, hi, err)) ||
      (purge && (st = run_job(s, S_DEL_VOL_HIGH, job, lo, hi, NULL, err))) ||
      (purge && (st = run_job(s, S_DEL_ALLOCS, job, lo, hi, &rep->allocations, err))) ||
      (st = run_job(s, S_DEL_TASKS, job, lo, hi, &rep->tasks, err)))
    return st;
  return run_job(s, S_DEL_TASKS_STRIP, job, lo, hi, &rep->tasks_kept, err);
}

cairn_status cairn__store_job_delete_finish(cairn__store *s, int64_t job, int64_t now,
                                           cairn__store_delete_report *rep, cairn_error *err) {
  char(*cand)[65] = NULL;
  size_t ncand = 0;
  cairn_status st = gather_files(s, S_DEL_FILES_OF, job, 0, 0, &cand, &ncand, err);
  if (st == CAIRN_OK && (st = run_job(s, S_DEL_JOB_FILES, job, -1, -1, NULL, err)) == CAIRN_OK &&
      (st = cairn__store_files_unreferenced(s, cand, ncand, rep, err)) == CAIRN_OK &&
      (st = cairn__store_sizing_delete_job(s, job, err)) == CAIRN_OK)
    st = run_job(s, S_DEL_JOB, job, now, now, NULL, err);
  free(cand);
  return st;
}

int cairn__store_job_keys(cairn__store *s, int64_t job, int64_t *lo, int64_t *hi) {
  sqlite3_stmt *q = Q(S_DEL_KEYS);
  sqlite3_bind_int64(q, 1, job);
  int ok = sqlite3_step(q) == SQLITE_ROW;
  *lo = ok ? sqlite3_column_int64(q, 0) : 0;
  *hi = ok ? sqlite3_column_int64(q, 1) : 0;
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return ok ? 0 : -1;
}
