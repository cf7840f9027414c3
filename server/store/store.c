/* store.c — SQLite persistence for the master (see store.h for the contract).
 *
 * Every statement is prepared once at open (enum stmt_id, store_int.h); the
 * writer and the reader connection each prepare the ones they use. A job's
 * deletion is in store_life.c, the reads for the API in store_read.c. Migrations are the files
 * schema/NNNN_*.sql embedded at build time, applied in order, each recorded in
 * schema_migrations in the same transaction as its DDL.
 */
#include "server/store/store.h"
#include "server/store/store_int.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern const struct {
  const char *name;
  const char *sql;
} cairn__migrations[];

/* The writer's statements, by enum stmt_id (store_int.h). */
const char *const cairn__store_sql[S_COUNT] = {
  [S_BEGIN] = "BEGIN IMMEDIATE",
  [S_COMMIT] = "COMMIT",
  [S_ROLLBACK] = "ROLLBACK",
  [S_META_SET] = "INSERT INTO meta(key, value) VALUES (?1, ?2) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
  [S_META_GET] = "SELECT value FROM meta WHERE key = ?1",
  [S_META_DELETE] = "DELETE FROM meta WHERE key = ?1",
  [S_VOL_INSERT] = "INSERT INTO volunteers(id, name, cluster, apps, slots, token_hash, created) "
                   "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
  [S_VOL_BAN] = "UPDATE volunteers SET banned = 1, ban_reason = COALESCE(?2, ban_reason), "
                "ban_pending = ?2 IS NOT NULL WHERE id = ?1",
  [S_VOL_QUAR] = "UPDATE volunteers SET quarantined = ?2 WHERE id = ?1",
  [S_VOL_PEER] = "UPDATE volunteers SET peer_url = ?2 WHERE id = ?1",
  [S_FILE_INSERT] = "INSERT OR IGNORE INTO files(sha256, size, created) VALUES (?1, ?2, ?3)",
  [S_HOLDER_INSERT] = "INSERT OR IGNORE INTO file_holders(sha256, volunteer_id, since) "
                      "VALUES (?1, ?2, ?3)",
  [S_HOLDER_DELETE] = "DELETE FROM file_holders WHERE sha256 = ?1 AND volunteer_id = ?2",
  [S_HOLDER_FORGET] = "DELETE FROM file_holders WHERE volunteer_id = ?1",
  [S_RATE_PUT] = "INSERT INTO link_rates(src, dst, bytes_per_second, samples) "
                 "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(src, dst) DO UPDATE SET "
                 "bytes_per_second = excluded.bytes_per_second, samples = excluded.samples",
  [S_XFER_PUT] = "INSERT OR IGNORE INTO file_transfers VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
  [S_PLAN_PUT] = "INSERT INTO broadcast_plans VALUES (?1, ?2, ?3, ?4) ON CONFLICT(sha256) DO UPDATE "
                 "SET started_ms = min(started_ms, ?2), plans = plans + 1, body = ?4",
  [S_INVITE_PUT] = "INSERT INTO invitations(id, code_hash, prefix, uses, used, expires, note, "
                   "created) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT(id) DO UPDATE "
                   "SET used = excluded.used",
  [S_INVITE_DELETE] = "DELETE FROM invitations WHERE id = ?1",
  [S_JOB_INSERT] = "INSERT INTO jobs(id, name, app, policy, replication, quorum, lease_seconds, "
                   "max_attempts, state, created, priority) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                   "?8, 'running', ?9, ?10)",
  [S_JOB_FILE_INSERT] = "INSERT INTO job_files(job_id, seq, name, sha256, broadcast) "
                        "VALUES (?1, ?2, ?3, ?4, ?5)",
  [S_TASK_INSERT] = "INSERT INTO tasks(id, job_id, seq, name, args, inputs, state, run) "
                    "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
  [S_PARENT_INSERT] = "INSERT INTO task_parents(task_id, parent_id, pos) VALUES (?1, ?2, ?3)",
  [S_TASK_UPDATE] = "UPDATE tasks SET state = ?2, attempts = ?3, accepted = ?4, round = ?5 "
                    "WHERE id = ?1",
  /* "cancelled" and "deleted" go to ended (0006); the tasks' verdict stays in state */
  [S_JOB_UPDATE] = "UPDATE jobs SET state = CASE WHEN ?2 IN ('cancelled', 'deleted') THEN state "
                   "ELSE ?2 END, ended = CASE WHEN ?2 IN ('cancelled', 'deleted') THEN ?2 "
                   "ELSE ended END, finished = ?3 WHERE id = ?1",
  [S_ALLOC_INSERT] = "INSERT INTO allocations(idx, volunteer_id, t, task_id, issued, "
                     "lease_expires, round, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'leased')",
  [S_ALLOC_UPDATE] = "UPDATE allocations SET lease_expires = ?2, state = ?3 WHERE idx = ?1",
  [S_OUTCOME_UPDATE] = "UPDATE results SET outcome = ?2 WHERE idx = ?1",
  [S_RESULT_INSERT] = "INSERT INTO results(idx, task_id, volunteer_id, exit_status, output, "
                      "digest, received, outcome, reason, stderr) "
                      "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
  [S_TASK_IO_INSERT] = "INSERT INTO task_io(task_id, outputs, parent_files) VALUES (?1, ?2, ?3)",
  [S_RESULT_FILE_INSERT] = "INSERT INTO result_files(idx, name, sha256, size) "
                           "VALUES (?1, ?2, ?3, ?4)",
  [S_LOAD_TASK_IO] = "SELECT task_id, outputs, parent_files FROM task_io ORDER BY task_id",
  [S_LOAD_ACCEPTED_FILES] = "SELECT t.id, rf.name, rf.sha256, rf.size FROM tasks t "
                            "JOIN result_files rf ON rf.idx = t.accepted WHERE t.state = 'done' "
                            "ORDER BY t.id, rf.name",
  [S_LOAD_VOL] = "SELECT v.id, v.name, v.cluster, v.apps, v.token_hash, v.slots, v.banned + v.ban_pending, "
                 "MAX(v.allocations, (SELECT COALESCE(MAX(t), 0) FROM allocations a "
                 "WHERE a.volunteer_id = v.id)), "
                 "v.created, v.peer_url, v.quarantined, v.team, v.credit, v.cpu_seconds, "
                 "v.credited, v.trust, COALESCE(v.account_id, 0), v.expavg_credit, v.expavg_time "
                 "FROM volunteers v ORDER BY v.id",
  [S_LOAD_JOBS] = "SELECT id, name, app, policy, COALESCE(ended, state), replication, quorum, "
                  "lease_seconds, max_attempts, created, COALESCE(finished, 0), priority, validator, "
                  "adaptive, keep_workers, app_version "
                  "FROM jobs ORDER BY id",
  [S_LOAD_JOB_FILES] = "SELECT jf.job_id, jf.seq, jf.broadcast, jf.name, jf.sha256, f.size "
                       "FROM job_files jf JOIN files f ON f.sha256 = jf.sha256 JOIN jobs jb "
                       "ON jb.id = jf.job_id AND (jb.ended IS NULL OR jb.ended = 'cancelled') "
                       "ORDER BY jf.job_id, jf.seq",
  [S_LOAD_TASKS] = "SELECT id, job_id, COALESCE(accepted, 0), seq, attempts, name, args, inputs, "
                   "state, round, run FROM tasks WHERE job_id NOT IN (SELECT id FROM jobs "
                   "WHERE ended IN ('deleting', 'purging', 'deleted')) ORDER BY job_id, seq",
  [S_LOAD_PARENTS] = "SELECT p.task_id, p.parent_id, p.pos FROM task_parents p JOIN tasks t ON "
                    "t.id = p.task_id JOIN jobs jb ON jb.id = t.job_id AND (jb.ended IS NULL OR "
                    "jb.ended = 'cancelled') ORDER BY p.task_id, p.pos",
  [S_LOAD_ALLOCS] = "SELECT a.idx, a.volunteer_id, a.t, a.task_id, a.issued, a.lease_expires, "
                    "a.state, COALESCE(r.exit_status, 0), COALESCE(r.digest, ''), "
                    "COALESCE(r.outcome, ''), CASE WHEN jb.validator <> '\"exact\"' AND r.exit_status = 0 "
                    "AND (t.state <> 'done' OR t.accepted = a.idx OR r.outcome = 'pending') "
                    "THEN r.output END, "
                    "(SELECT group_concat(length(CAST(name AS BLOB)) || ':' || name || sha256, '') "
                    "FROM (SELECT name, sha256 FROM result_files WHERE idx = a.idx ORDER BY name)), "
                    "COALESCE(r.cpu_seconds, -1), COALESCE(r.credit, 0), r.team "
                    "FROM allocations a JOIN tasks t ON t.id = a.task_id "
                    "AND t.round = a.round JOIN jobs jb ON jb.id = t.job_id AND (jb.ended IS NULL "
                    "OR jb.ended = 'cancelled') LEFT JOIN results r ON r.idx = a.idx "
                    "ORDER BY a.idx",
  [S_LOAD_FILES] = "SELECT sha256, size FROM files",
  [S_LOAD_OUTCOMES] = "SELECT volunteer_id, outcome, COUNT(*) FROM results "
                      "GROUP BY volunteer_id, outcome",
  [S_LOAD_RATES] = "SELECT src, dst, bytes_per_second, samples FROM link_rates ORDER BY src, dst",
  [S_LOAD_HOLDERS] = "SELECT sha256, volunteer_id, since FROM file_holders "
                     "ORDER BY sha256, since, volunteer_id",
  [S_TASK_RES_INSERT] = "INSERT INTO task_resources(task_id, cores, memory_mib, disk_mib) "
                        "VALUES (?1, ?2, ?3, ?4)",
  [S_VOL_OFFER] = "INSERT INTO volunteer_offers(volunteer_id, cores, memory_mib, disk_mib) "
                  "VALUES (?1, ?2, ?3, ?4) ON CONFLICT(volunteer_id) DO UPDATE SET "
                  "cores = excluded.cores, memory_mib = excluded.memory_mib, "
                  "disk_mib = excluded.disk_mib",
  [S_LOAD_TASK_RES] = "SELECT r.task_id, r.cores, r.memory_mib, r.disk_mib FROM task_resources r "
                      "JOIN tasks t ON t.id = r.task_id JOIN jobs jb ON jb.id = t.job_id AND "
                      "(jb.ended IS NULL OR jb.ended = 'cancelled') ORDER BY r.task_id",
  [S_LOAD_OFFERS] = "SELECT volunteer_id, cores, memory_mib, disk_mib FROM volunteer_offers "
                    "ORDER BY volunteer_id",
  [S_MAX_TASK_KEY] = "SELECT COALESCE(MAX(id), 0) FROM tasks",
  [S_JOB_PRIORITY] = "UPDATE jobs SET priority = ?2 WHERE id = ?1",
  [S_JOB_VALIDATOR] = "UPDATE jobs SET validator = ?2 WHERE id = ?1",
  [S_VOL_TRUST] = "UPDATE volunteers SET trust = ?2 WHERE id = ?1",
  [S_JOB_ADAPTIVE] = "UPDATE jobs SET adaptive = 1 WHERE id = ?1",
  [S_JOB_KEEP] = "UPDATE jobs SET keep_workers = 1 WHERE id = ?1",
  [S_KEPT_PUT] = "INSERT OR IGNORE INTO kept_files(sha256) VALUES (?1)",
  [S_KEPT_DELETE] = "DELETE FROM kept_files WHERE sha256 = ?1",
  [S_LOAD_KEPT] = "SELECT sha256 FROM kept_files ORDER BY sha256",
  [S_TRUST_PUT] = "INSERT OR REPLACE INTO trust_ring(volunteer_id, slot, seq, job_id, task_key, "
                  "round, idx) VALUES (?1, ?2 % 32, ?2, ?3, ?4, ?5, ?6)",
  [S_TRUST_CLEAR] = "DELETE FROM trust_ring WHERE volunteer_id = ?1",
  [S_LOAD_TRUST] = "SELECT volunteer_id, seq, job_id, task_key, round, idx FROM trust_ring "
                   "ORDER BY volunteer_id, seq",
  [S_CHAIN_PUT] = "INSERT INTO audit_chain(seq, kind, vol, task, idx, body, prev, hash) "
                  "VALUES (?1, ?2, NULLIF(?3, 0), NULLIF(?4, 0), NULLIF(?5, 0), ?6, ?7, ?8)",
  [S_CHAIN_HEAD] = "SELECT seq, hash FROM audit_chain ORDER BY seq DESC LIMIT 1",
  [S_CHAIN_SIGNED] = "SELECT COALESCE(MAX(seq), 0) FROM audit_checkpoints",
  [S_CHECKPOINT_PUT] = "INSERT INTO audit_checkpoints(seq, hash, time, pubkey, sig) "
                       "VALUES (?1, ?2, ?3, ?4, ?5)",
/* a deletion goes by ranges of task keys [?2, ?3) of job ?1 (a job's keys are
 * consecutive), so that each transaction is bounded (cairn__store_job_delete_range) */
#define RANGE " task_id >= ?2 AND task_id < ?3"
  [S_DEL_MARK] = "UPDATE jobs SET ended = ?2 WHERE id = ?1 AND ended IS NOT 'deleted'",
  [S_DEL_KEYS] = "SELECT COALESCE(MIN(id), 0), COALESCE(MAX(id) + 1, 0) FROM tasks "
                 "WHERE job_id = ?1",
  [S_DEL_FILES_OF] = "SELECT DISTINCT sha256 FROM job_files WHERE job_id = ?1",
  [S_DEL_EXPIRE] = "UPDATE allocations SET state = 'expired' WHERE state = 'leased' AND" RANGE,
  [S_DEL_RESULTS_SIZE] = "SELECT COUNT(*), COALESCE(SUM(LENGTH(output)), 0) FROM results "
                         "WHERE" RANGE,
  [S_DEL_RESULTS] = "DELETE FROM results WHERE" RANGE,
  [S_DEL_OUT_FILES_OF] = "SELECT DISTINCT rf.sha256 FROM result_files rf JOIN results r "
                         "ON r.idx = rf.idx WHERE r.task_id >= ?2 AND r.task_id < ?3",
  [S_DEL_RESULT_FILES] = "DELETE FROM result_files WHERE idx IN (SELECT idx FROM results WHERE"
                         RANGE ")",
  [S_DEL_TASK_IO] = "DELETE FROM task_io WHERE" RANGE,
  /* an edge goes with the first step that holds either of its ends (index
   * task_parents_parent, 0022): a later step's child never names a parent
   * this step removed, whatever the DAG's shape; O(edges of the step's tasks) */
  [S_DEL_PARENTS] = "DELETE FROM task_parents WHERE" RANGE " OR (parent_id >= ?2 AND parent_id < ?3)",
  [S_DEL_TASK_RES] = "DELETE FROM task_resources WHERE" RANGE,
  [S_DEL_VOL_HIGH] = "UPDATE volunteers SET allocations = MAX(allocations, (SELECT MAX(a.t) FROM "
                     "allocations a WHERE a.volunteer_id = volunteers.id)) WHERE id IN (SELECT "
                     "volunteer_id FROM allocations WHERE" RANGE ")",
  [S_DEL_ALLOCS] = "DELETE FROM allocations WHERE" RANGE,
  [S_DEL_TASKS] = "DELETE FROM tasks WHERE job_id = ?1 AND id >= ?2 AND id < ?3 AND NOT EXISTS "
                  "(SELECT 1 FROM allocations a WHERE a.task_id = tasks.id)",
  [S_DEL_TASKS_STRIP] = "UPDATE tasks SET args = '[]', inputs = '[]', run = NULL "
                        "WHERE job_id = ?1 AND id >= ?2 AND id < ?3",
  [S_DEL_JOB_FILES] = "DELETE FROM job_files WHERE job_id = ?1",
  [S_DEL_JOB] = "UPDATE jobs SET ended = 'deleted', finished = COALESCE(finished, ?2) "
                "WHERE id = ?1",
#undef RANGE
  /* the one list of what keeps a stored file: add a table that names files here */
  [S_FILE_REFERENCED] = "SELECT EXISTS (SELECT 1 FROM job_files WHERE sha256 = ?1) OR "
                        "EXISTS (SELECT 1 FROM result_files WHERE sha256 = ?1) OR "
                        "EXISTS (SELECT 1 FROM app_files WHERE sha256 = ?1)",
  [S_FILE_SIZE] = "SELECT size FROM files WHERE sha256 = ?1",
  [S_FILE_DELETE] = "DELETE FROM files WHERE sha256 = ?1",
  [S_FILE_HOLDERS_DELETE] = "DELETE FROM file_holders WHERE sha256 = ?1",
  [S_VOL_TEAM] = "UPDATE volunteers SET team = ?2 WHERE id = ?1",
  [S_VOL_CREDIT] = "UPDATE volunteers SET credit = ?2, cpu_seconds = ?3, credited = ?4, "
                   "expavg_credit = ?5, expavg_time = ?6 WHERE id = ?1",
  [S_RESULT_CREDIT] = "UPDATE results SET cpu_seconds = COALESCE(?2, cpu_seconds), credit = ?3 "
                      "WHERE idx = ?1",
  [S_TEAM_NEW] = "INSERT OR IGNORE INTO team_credit(team) VALUES (?1)",
  [S_TEAM_PUT] = "INSERT INTO team_credit(team, credit, cpu_seconds, results) VALUES (?1, ?2, ?3, "
                 "?4) ON CONFLICT(team) DO UPDATE SET credit = ?2, cpu_seconds = ?3, results = ?4",
  [S_TEAM_EXPAVG] = "INSERT INTO team_expavg(team, expavg_credit, expavg_time) VALUES (?1, ?2, ?3) "
                    "ON CONFLICT(team) DO UPDATE SET expavg_credit = ?2, expavg_time = ?3",
  [S_RESULT_TEAM] = "UPDATE results SET team = ?2 WHERE idx = ?1",
  [S_LOAD_TEAMS] = "SELECT t.team, t.credit, t.cpu_seconds, t.results, "
                   "COALESCE(e.expavg_credit, 0), COALESCE(e.expavg_time, 0) FROM team_credit t "
                   "LEFT JOIN team_expavg e ON e.team = t.team",
  [S_APP_PUT] = "INSERT INTO app_versions(id, name, version, platform, manifest, signature, "
                "retired, published) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 0, ?7)",
  [S_APP_FILE_PUT] = "INSERT OR IGNORE INTO app_files(version_id, sha256) VALUES (?1, ?2)",
  [S_JOB_APP_VERSION] = "UPDATE jobs SET app_version = ?2 WHERE id = ?1",
  [S_APP_RETIRE] = "UPDATE app_versions SET retired = 1 WHERE id = ?1",
  [S_LOAD_APPS] = "SELECT id, name, version, platform, manifest, signature, retired, published "
                  "FROM app_versions ORDER BY id",
  [S_ACCT_PUT] = "INSERT INTO accounts(id, name, email, email_key, key_hash, password_hash, "
                 "created, cross_project_id, cpid_time) "
                 "VALUES (?1, ?2, ?3, lower(?3), ?4, ?5, ?6, ?7, ?8)",
  [S_ACCT_KEY] = "UPDATE accounts SET key_hash = ?2 WHERE id = ?1",
  [S_ACCT_CREDIT] = "UPDATE accounts SET credit = ?2, cpu_seconds = ?3, results = ?4, "
                    "expavg_credit = ?5, expavg_time = ?6 WHERE id = ?1",
  [S_VOL_ACCOUNT] = "UPDATE volunteers SET account_id = ?2 WHERE id = ?1",
  [S_LOAD_ACCTS] = "SELECT id, name, email, key_hash, password_hash, created, credit, cpu_seconds, "
                   "results, expavg_credit, expavg_time, cross_project_id, cpid_time "
                   "FROM accounts ORDER BY id",
};

#define AUDIT_SELECT                                                                           \
  "SELECT a.idx, a.volunteer_id, a.t, t.job_id, t.name, t.id, a.issued, a.lease_expires, "     \
  "a.state, a.round, r.exit_status, r.digest, r.outcome, r.received, r.reason, "          \
  "COALESCE(r.cpu_seconds, -1), r.credit "                                                  \
  "FROM allocations a "       \
  "JOIN tasks t ON t.id = a.task_id LEFT JOIN results r ON r.idx = a.idx "
static const char *const rsql_text[R_COUNT] = {
  [R_OUTPUT] = "SELECT r.output FROM tasks t JOIN results r ON r.idx = t.accepted "
               "WHERE t.id = ?1 AND t.state = 'done'",
  [R_JOB_RESULTS] = "SELECT t.seq, r.idx, r.volunteer_id, r.exit_status, r.output, r.reason, "
                    "r.stderr FROM tasks t JOIN results r ON r.idx = t.accepted "
                    "WHERE t.job_id = ?1 AND t.seq >= ?2 AND t.seq < ?3 ORDER BY t.seq",
  [R_OUTPUT_FILE] = "SELECT rf.sha256, rf.size FROM tasks t JOIN result_files rf "
                    "ON rf.idx = t.accepted WHERE t.job_id = ?1 AND t.name = ?2 "
                    "AND t.state = 'done' AND rf.name = ?3",
  [R_JOB_FILES] = "SELECT t.seq, rf.name, rf.sha256, rf.size, "
                  "EXISTS (SELECT 1 FROM kept_files k WHERE k.sha256 = rf.sha256) "
                  "FROM tasks t JOIN result_files rf "
                  "ON rf.idx = t.accepted WHERE t.job_id = ?1 AND t.seq >= ?2 AND t.seq < ?3 "
                  "ORDER BY t.seq, rf.name",
  [R_AUDIT_INDEX] = AUDIT_SELECT "WHERE a.idx = ?1",
  [R_AUDIT_VOL] = AUDIT_SELECT "WHERE a.volunteer_id = ?1 ORDER BY a.t",
  [R_INVITES] = "SELECT id, code_hash, prefix, uses, used, expires, note, created "
                "FROM invitations ORDER BY id",
  [R_AUDIT_TASK] = AUDIT_SELECT "WHERE a.task_id = ?1 ORDER BY a.issued, a.idx",
  /* credit (cairn__store_stats): the top ?1 volunteers by the index
   * volunteers_by_credit, the top ?1 teams of the ledger by
   * team_credit_by_credit, each with its members of now (the index
   * volunteers_by_team: O(log V + members)); totals scan volunteers_by_team */
  [R_STATS_VOLS] = "SELECT id, name, team, credit, cpu_seconds, credited FROM volunteers "
                   "WHERE banned = 0 ORDER BY credit DESC, id LIMIT ?1",
  [R_STATS_TEAMS] = "SELECT t.team, (SELECT COUNT(*) FROM volunteers v WHERE v.team = t.team AND "
                    "v.banned = 0), t.credit, t.cpu_seconds, t.results FROM team_credit t "
                    "ORDER BY t.credit DESC, t.team LIMIT ?1",
  [R_STATS_TOTAL] = "SELECT COUNT(*), (SELECT COUNT(*) FROM team_credit), COALESCE(SUM(credit), 0), "
                    "COALESCE(SUM(cpu_seconds), 0), COALESCE(SUM(credited), 0) FROM volunteers "
                    "WHERE banned = 0",
};


static int exec_sql(sqlite3 *db, const char *sql, cairn_error *err) {
  char *msg = NULL;
  if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
    cairn__error_set(err, CAIRN_EIO, "store: %s", msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    return -1;
  }
  return 0;
}

/* Creates the database file mode 0600 when it does not exist: SQLite gives
 * its -wal and -shm files the database file's mode, so they are 0600 too
 * (the file holds token digests and every result). */
static int create_private(const char *path, cairn_error *err) {
  if (!*path || strcmp(path, ":memory:") == 0 || strncmp(path, "file:", 5) == 0)
    return 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd >= 0)
    return close(fd);
  if (errno == EEXIST)
    return 0;
  cairn__error_set(err, CAIRN_EIO, "store: cannot create %s: %s", path, strerror(errno));
  return -1;
}

static int open_conn(const char *path, sqlite3 **db, int durable, cairn_error *err) {
  if (create_private(path, err))
    return -1;
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      NULL) != SQLITE_OK) {
    cairn__error_set(err, CAIRN_EIO, "store: cannot open %s: %s", path,
                    *db ? sqlite3_errmsg(*db) : "out of memory");
    return -1;
  }
  sqlite3_busy_timeout(*db, 10000);
  sqlite3_extended_result_codes(*db, 1);
  /* a new database gives freed pages back on PRAGMA incremental_vacuum
   * (cairn__store_reclaim); an older one is converted once (cairn__store_open) */
  if (exec_sql(*db, "PRAGMA auto_vacuum=INCREMENTAL", err) ||
      exec_sql(*db, "PRAGMA journal_mode=WAL", err) ||
      exec_sql(*db, durable ? "PRAGMA synchronous=FULL" : "PRAGMA synchronous=NORMAL", err) ||
      exec_sql(*db, "PRAGMA foreign_keys=ON", err))
    return -1;
  return 0;
}

/* 1 when migration version is recorded in schema_migrations, 0 when not,
 * -1 on error. */
static int migration_recorded(cairn__store *s, int version, cairn_error *err) {
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(s->w, "SELECT COUNT(*) FROM schema_migrations WHERE version = ?1", -1,
                         &q, NULL) != SQLITE_OK) {
    db_err(s, s->w, err, "reading schema migrations");
    return -1;
  }
  sqlite3_bind_int(q, 1, version);
  int rc = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int(q, 0) > 0 : -1;
  sqlite3_finalize(q);
  if (rc < 0)
    db_err(s, s->w, err, "reading schema migrations");
  return rc;
}

/* Applies, in file order, every embedded migration not yet recorded (a
 * database written by a build that lacked one gets it later); each in one
 * transaction with its record. s->version: the highest recorded. */
static int migrate(cairn__store *s, cairn_error *err) {
  if (exec_sql(s->w, "CREATE TABLE IF NOT EXISTS schema_migrations ("
                     "version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied INTEGER NOT NULL)",
               err))
    return -1;
  int have = 0;
  for (int n = 0; cairn__migrations[n].name; n++) {
    int version = atoi(cairn__migrations[n].name);
    int done = migration_recorded(s, version, err);
    if (done < 0)
      return -1;
    if (done) {
      have = version > have ? version : have;
      continue;
    }
    if (exec_sql(s->w, "BEGIN IMMEDIATE", err))
      return -1;
    sqlite3_stmt *ins = NULL;
    if (exec_sql(s->w, cairn__migrations[n].sql, err)) {
      char msg[sizeof err->text];
      snprintf(msg, sizeof msg, "%s", err->text);
      cairn__error_set(err, CAIRN_EIO, "migration %s: %s", cairn__migrations[n].name, msg);
      exec_sql(s->w, "ROLLBACK", NULL);
      return -1;
    }
    if (sqlite3_prepare_v2(s->w, "INSERT INTO schema_migrations(version, name, applied) "
                                 "VALUES (?1, ?2, strftime('%s','now'))", -1, &ins, NULL) != SQLITE_OK) {
      db_err(s, s->w, err, "recording migration");
      exec_sql(s->w, "ROLLBACK", NULL);
      return -1;
    }
    sqlite3_bind_int(ins, 1, version);
    sqlite3_bind_text(ins, 2, cairn__migrations[n].name, -1, SQLITE_STATIC);
    int rc = sqlite3_step(ins);
    sqlite3_finalize(ins);
    if (rc != SQLITE_DONE || exec_sql(s->w, "COMMIT", err)) {
      db_err(s, s->w, err, "recording migration");
      exec_sql(s->w, "ROLLBACK", NULL);
      return -1;
    }
    have = version > have ? version : have;
  }
  s->version = have;
  return 0;
}

/* A database made before incremental auto-vacuum (mode 0) is converted by
 * one VACUUM, which rewrites it: time and free disk space proportional to
 * its size, once. */
static int incremental(cairn__store *s, cairn_error *err) {
  sqlite3_stmt *q = NULL;
  int mode = 2;
  if (sqlite3_prepare_v2(s->w, "PRAGMA auto_vacuum", -1, &q, NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    mode = sqlite3_column_int(q, 0);
  sqlite3_finalize(q);
  return mode == 2 ? 0 : exec_sql(s->w, "VACUUM", err);
}

cairn__store *cairn__store_open(const char *path, int durable, cairn_error *err) {
  cairn__store *s = calloc(1, sizeof *s);
  if (!s) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&s->rlock, NULL);
  if (open_conn(path, &s->w, durable, err) || migrate(s, err) || incremental(s, err) ||
      open_conn(path, &s->r, durable, err))
    goto fail;
  for (int i = 0; i < S_COUNT; i++)
    if (sqlite3_prepare_v3(s->w, cairn__store_sql[i], -1, SQLITE_PREPARE_PERSISTENT, &s->st[i],
                           NULL) != SQLITE_OK) {
      db_err(s, s->w, err, cairn__store_sql[i]);
      goto fail;
    }
  for (int i = 0; i < R_COUNT; i++)
    if (sqlite3_prepare_v3(s->r, rsql_text[i], -1, SQLITE_PREPARE_PERSISTENT, &s->rst[i], NULL) !=
        SQLITE_OK) {
      db_err(s, s->r, err, rsql_text[i]);
      goto fail;
    }
  return s;
fail:
  cairn__store_close(s);
  return NULL;
}

void cairn__store_close(cairn__store *s) {
  if (!s)
    return;
  for (int i = 0; i < S_COUNT; i++)
    sqlite3_finalize(s->st[i]);
  for (int i = 0; i < R_COUNT; i++)
    sqlite3_finalize(s->rst[i]);
  for (int i = 0; i < CAIRN__STORE_PEOPLE_STMTS; i++)
    sqlite3_finalize(s->pst[i]);
  for (int i = 0; i < CAIRN__STORE_SIZING_STMTS; i++)
    sqlite3_finalize(s->zst[i]);
  sqlite3_close(s->r);
  sqlite3_close(s->w);
  pthread_mutex_destroy(&s->rlock);
  free(s);
}

int cairn__store_schema_version(cairn__store *s) { return s->version; }

cairn_status cairn__store_begin(cairn__store *s, cairn_error *err) { return run(s, S_BEGIN, err); }
cairn_status cairn__store_commit(cairn__store *s, cairn_error *err) { return run(s, S_COMMIT, err); }
void cairn__store_rollback(cairn__store *s) {
  if (!sqlite3_get_autocommit(s->w))
    run(s, S_ROLLBACK, NULL);
}

cairn_status cairn__store_meta_set(cairn__store *s, const char *key, const char *value,
                                  cairn_error *err) {
  TXT(Q(S_META_SET), 1, key);
  TXT(Q(S_META_SET), 2, value);
  return run(s, S_META_SET, err);
}

cairn_status cairn__store_meta_delete(cairn__store *s, const char *key, cairn_error *err) {
  TXT(Q(S_META_DELETE), 1, key);
  return run(s, S_META_DELETE, err);
}

int cairn__store_meta_get(cairn__store *s, const char *key, char *out, size_t outlen) {
  sqlite3_stmt *q = Q(S_META_GET);
  TXT(q, 1, key);
  int found = -1;
  if (sqlite3_step(q) == SQLITE_ROW) {
    snprintf(out, outlen, "%s", (const char *)sqlite3_column_text(q, 0));
    found = 0;
  }
  sqlite3_reset(q);
  sqlite3_clear_bindings(q);
  return found;
}

cairn_status cairn__store_volunteer_insert(cairn__store *s, int64_t id, const char *name,
                                          const char *cluster, const char *apps_json, int slots,
                                          const char *token_hash, int64_t now, cairn_error *err) {
  sqlite3_stmt *q = Q(S_VOL_INSERT);
  sqlite3_bind_int64(q, 1, id);
  TXT(q, 2, name);
  TXT(q, 3, cluster);
  TXT(q, 4, apps_json);
  sqlite3_bind_int(q, 5, slots);
  TXT(q, 6, token_hash);
  sqlite3_bind_int64(q, 7, now);
  return run(s, S_VOL_INSERT, err);
}

cairn_status cairn__store_volunteer_quarantine(cairn__store *s, int64_t id, int on,
                                              cairn_error *err) {
  sqlite3_bind_int64(Q(S_VOL_QUAR), 1, id);
  sqlite3_bind_int(Q(S_VOL_QUAR), 2, on);
  return run(s, S_VOL_QUAR, err);
}

cairn_status cairn__store_volunteer_trust(cairn__store *s, int64_t id, int64_t trust,
                                         cairn_error *err) {
  sqlite3_bind_int64(Q(S_VOL_TRUST), 1, id);
  sqlite3_bind_int64(Q(S_VOL_TRUST), 2, trust);
  return run(s, S_VOL_TRUST, err);
}

cairn_status cairn__store_job_adaptive(cairn__store *s, int64_t id, cairn_error *err) {
  sqlite3_bind_int64(Q(S_JOB_ADAPTIVE), 1, id);
  return run(s, S_JOB_ADAPTIVE, err);
}

cairn_status cairn__store_trust_put(cairn__store *s, const cairn__store_trust_row *r,
                                   cairn_error *err) {
  sqlite3_stmt *q = Q(S_TRUST_PUT);
  sqlite3_bind_int64(q, 1, r->vol);
  sqlite3_bind_int64(q, 2, r->seq);
  sqlite3_bind_int64(q, 3, r->job);
  sqlite3_bind_int64(q, 4, r->task_key);
  sqlite3_bind_int64(q, 5, r->round);
  sqlite3_bind_int64(q, 6, r->idx);
  return run(s, S_TRUST_PUT, err);
}

cairn_status cairn__store_trust_clear(cairn__store *s, int64_t vol, cairn_error *err) {
  sqlite3_bind_int64(Q(S_TRUST_CLEAR), 1, vol);
  return run(s, S_TRUST_CLEAR, err);
}

cairn_status cairn__store_volunteer_ban(cairn__store *s, int64_t id, const char *reason,
                                       cairn_error *err) {
  sqlite3_bind_int64(Q(S_VOL_BAN), 1, id);
  TXT(Q(S_VOL_BAN), 2, reason);
  return run(s, S_VOL_BAN, err);
}

cairn_status cairn__store_volunteer_peer(cairn__store *s, int64_t id, const char *peer_url,
                                        cairn_error *err) {
  sqlite3_bind_int64(Q(S_VOL_PEER), 1, id);
  TXT(Q(S_VOL_PEER), 2, peer_url);
  return run(s, S_VOL_PEER, err);
}

cairn_status cairn__store_file_insert(cairn__store *s, const char *sha256, int64_t size, int64_t now,
                                     cairn_error *err) {
  sqlite3_stmt *q = Q(S_FILE_INSERT);
  TXT(q, 1, sha256);
  sqlite3_bind_int64(q, 2, size);
  sqlite3_bind_int64(q, 3, now);
  return run(s, S_FILE_INSERT, err);
}

cairn_status cairn__store_holder_insert(cairn__store *s, const char *sha256, int64_t volunteer,
                                       int64_t since, cairn_error *err) {
  sqlite3_stmt *q = Q(S_HOLDER_INSERT);
  TXT(q, 1, sha256);
  sqlite3_bind_int64(q, 2, volunteer);
  sqlite3_bind_int64(q, 3, since);
  return run(s, S_HOLDER_INSERT, err);
}

cairn_status cairn__store_holder_delete(cairn__store *s, const char *sha256, int64_t volunteer,
                                       cairn_error *err) {
  sqlite3_stmt *q = Q(S_HOLDER_DELETE);
  TXT(q, 1, sha256);
  sqlite3_bind_int64(q, 2, volunteer);
  return run(s, S_HOLDER_DELETE, err);
}

cairn_status cairn__store_holders_forget(cairn__store *s, int64_t volunteer, cairn_error *err) {
  sqlite3_bind_int64(Q(S_HOLDER_FORGET), 1, volunteer);
  return run(s, S_HOLDER_FORGET, err);
}

cairn_status cairn__store_rate_put(cairn__store *s, const char *src, const char *dst,
                                  int64_t bytes_per_second, int64_t samples, cairn_error *err) {
  sqlite3_stmt *q = Q(S_RATE_PUT);
  TXT(q, 1, src);
  TXT(q, 2, dst);
  sqlite3_bind_int64(q, 3, bytes_per_second);
  sqlite3_bind_int64(q, 4, samples);
  return run(s, S_RATE_PUT, err);
}

cairn_status cairn__store_invite_put(cairn__store *s, const cairn__store_invite_row *r,
                                    cairn_error *err) {
  sqlite3_stmt *q = Q(S_INVITE_PUT);
  sqlite3_bind_int64(q, 1, r->id);
  TXT(q, 2, r->code_hash);
  TXT(q, 3, r->prefix);
  sqlite3_bind_int64(q, 4, r->uses);
  sqlite3_bind_int64(q, 5, r->used);
  sqlite3_bind_int64(q, 6, r->expires);
  TXT(q, 7, r->note);
  sqlite3_bind_int64(q, 8, r->created);
  return run(s, S_INVITE_PUT, err);
}

cairn_status cairn__store_invite_delete(cairn__store *s, int64_t id, cairn_error *err) {
  sqlite3_bind_int64(Q(S_INVITE_DELETE), 1, id);
  return run(s, S_INVITE_DELETE, err);
}

cairn_status cairn__store_job_insert(cairn__store *s, int64_t id, const char *name, const char *app,
                                    const char *policy, int replication, int quorum,
                                    int lease_seconds, int max_attempts, int64_t now,
                                    int64_t priority, cairn_error *err) {
  sqlite3_stmt *q = Q(S_JOB_INSERT);
  sqlite3_bind_int64(q, 1, id);
  TXT(q, 2, name);
  TXT(q, 3, app);
  TXT(q, 4, policy);
  sqlite3_bind_int(q, 5, replication);
  sqlite3_bind_int(q, 6, quorum);
  sqlite3_bind_int(q, 7, lease_seconds);
  sqlite3_bind_int(q, 8, max_attempts);
  sqlite3_bind_int64(q, 9, now);
  sqlite3_bind_int64(q, 10, priority);
  return run(s, S_JOB_INSERT, err);
}

cairn_status cairn__store_job_file_insert(cairn__store *s, int64_t job, int seq, const char *name,
                                         const char *sha256, int broadcast, cairn_error *err) {
  sqlite3_stmt *q = Q(S_JOB_FILE_INSERT);
  sqlite3_bind_int64(q, 1, job);
  sqlite3_bind_int(q, 2, seq);
  TXT(q, 3, name);
  TXT(q, 4, sha256);
  sqlite3_bind_int(q, 5, broadcast);
  return run(s, S_JOB_FILE_INSERT, err);
}

cairn_status cairn__store_task_insert(cairn__store *s, int64_t key, int64_t job, uint32_t seq,
                                     const char *name, const char *args_json,
                                     const char *inputs_json, const char *state,
                                     const char *run_json, cairn_error *err) {
  sqlite3_stmt *q = Q(S_TASK_INSERT);
  sqlite3_bind_int64(q, 1, key);
  sqlite3_bind_int64(q, 2, job);
  sqlite3_bind_int64(q, 3, seq);
  TXT(q, 4, name);
  TXT(q, 5, args_json);
  TXT(q, 6, inputs_json);
  TXT(q, 7, state);
  if (run_json)
    TXT(q, 8, run_json);
  else
    sqlite3_bind_null(q, 8);
  return run(s, S_TASK_INSERT, err);
}

cairn_status cairn__store_task_parent_insert(cairn__store *s, int64_t task, int64_t parent, uint32_t pos,
                                            cairn_error *err) {
  sqlite3_stmt *q = Q(S_PARENT_INSERT);
  sqlite3_bind_int64(q, 1, task);
  sqlite3_bind_int64(q, 2, parent);
  sqlite3_bind_int64(q, 3, pos);
  return run(s, S_PARENT_INSERT, err);
}

cairn_status cairn__store_task_update(cairn__store *s, int64_t key, const char *state, int attempts,
                                     int64_t accepted, int64_t round, cairn_error *err) {
  sqlite3_stmt *q = Q(S_TASK_UPDATE);
  sqlite3_bind_int64(q, 1, key);
  TXT(q, 2, state);
  sqlite3_bind_int(q, 3, attempts);
  if (accepted)
    sqlite3_bind_int64(q, 4, accepted);
  else
    sqlite3_bind_null(q, 4);
  sqlite3_bind_int64(q, 5, round);
  return run(s, S_TASK_UPDATE, err);
}

cairn_status cairn__store_job_update(cairn__store *s, int64_t id, const char *state, int64_t finished,
                                    cairn_error *err) {
  sqlite3_stmt *q = Q(S_JOB_UPDATE);
  sqlite3_bind_int64(q, 1, id);
  TXT(q, 2, state);
  if (finished)
    sqlite3_bind_int64(q, 3, finished);
  else
    sqlite3_bind_null(q, 3);
  return run(s, S_JOB_UPDATE, err);
}

cairn_status cairn__store_reclaim(cairn__store *s, cairn_error *err) {
  if (exec_sql(s->w, "PRAGMA incremental_vacuum", err) ||
      exec_sql(s->w, "PRAGMA wal_checkpoint(TRUNCATE)", err))
    return CAIRN_EIO;
  return CAIRN_OK;
}

int64_t cairn__store_max_task_key(cairn__store *s) {
  sqlite3_stmt *q = Q(S_MAX_TASK_KEY);
  int64_t k = sqlite3_step(q) == SQLITE_ROW ? sqlite3_column_int64(q, 0) : 0;
  sqlite3_reset(q);
  return k;
}

cairn_status cairn__store_alloc_insert(cairn__store *s, int64_t idx, int64_t volunteer, int64_t t,
                                      int64_t task, int64_t issued, int64_t expires, int64_t round,
                                      cairn_error *err) {
  sqlite3_stmt *q = Q(S_ALLOC_INSERT);
  sqlite3_bind_int64(q, 1, idx);
  sqlite3_bind_int64(q, 2, volunteer);
  sqlite3_bind_int64(q, 3, t);
  sqlite3_bind_int64(q, 4, task);
  sqlite3_bind_int64(q, 5, issued);
  sqlite3_bind_int64(q, 6, expires);
  sqlite3_bind_int64(q, 7, round);
  return run(s, S_ALLOC_INSERT, err);
}

cairn_status cairn__store_alloc_update(cairn__store *s, int64_t idx, int64_t expires, const char *state,
                                      cairn_error *err) {
  sqlite3_stmt *q = Q(S_ALLOC_UPDATE);
  sqlite3_bind_int64(q, 1, idx);
  sqlite3_bind_int64(q, 2, expires);
  TXT(q, 3, state);
  return run(s, S_ALLOC_UPDATE, err);
}

cairn_status cairn__store_result_insert(cairn__store *s, int64_t idx, int64_t task, int64_t volunteer,
                                       int exit_status, const void *output, size_t len,
                                       const char *digest, int64_t now, const char *outcome,
                                       const char *reason, const void *stderr_tail,
                                       size_t stderr_len, cairn_error *err) {
  sqlite3_stmt *q = Q(S_RESULT_INSERT);
  sqlite3_bind_int64(q, 1, idx);
  sqlite3_bind_int64(q, 2, task);
  sqlite3_bind_int64(q, 3, volunteer);
  sqlite3_bind_int(q, 4, exit_status);
  sqlite3_bind_blob64(q, 5, len ? output : "", len, SQLITE_TRANSIENT);
  TXT(q, 6, digest);
  sqlite3_bind_int64(q, 7, now);
  TXT(q, 8, outcome);
  if (reason && *reason)
    TXT(q, 9, reason);
  else
    sqlite3_bind_null(q, 9);
  sqlite3_bind_blob64(q, 10, stderr_len ? stderr_tail : "", stderr_len, SQLITE_TRANSIENT);
  return run(s, S_RESULT_INSERT, err);
}

cairn_status cairn__store_task_io_insert(cairn__store *s, int64_t task, const char *outputs_json,
                                        const char *parent_files_json, cairn_error *err) {
  sqlite3_stmt *q = Q(S_TASK_IO_INSERT);
  sqlite3_bind_int64(q, 1, task);
  TXT(q, 2, outputs_json);
  TXT(q, 3, parent_files_json);
  return run(s, S_TASK_IO_INSERT, err);
}

cairn_status cairn__store_result_file_insert(cairn__store *s, int64_t idx, const char *name,
                                            const char *sha256, int64_t size, cairn_error *err) {
  sqlite3_stmt *q = Q(S_RESULT_FILE_INSERT);
  sqlite3_bind_int64(q, 1, idx);
  TXT(q, 2, name);
  TXT(q, 3, sha256);
  sqlite3_bind_int64(q, 4, size);
  return run(s, S_RESULT_FILE_INSERT, err);
}

cairn_status cairn__store_result_outcome(cairn__store *s, int64_t idx, const char *outcome,
                                        cairn_error *err) {
  sqlite3_bind_int64(Q(S_OUTCOME_UPDATE), 1, idx);
  TXT(Q(S_OUTCOME_UPDATE), 2, outcome);
  return run(s, S_OUTCOME_UPDATE, err);
}

cairn_status cairn__store_volunteer_team(cairn__store *s, int64_t id, const char *team,
                                        cairn_error *err) {
  sqlite3_bind_int64(Q(S_VOL_TEAM), 1, id);
  TXT(Q(S_VOL_TEAM), 2, team);
  cairn_status st = run(s, S_VOL_TEAM, err);
  if (st != CAIRN_OK || !team)
    return st;
  TXT(Q(S_TEAM_NEW), 1, team);
  return run(s, S_TEAM_NEW, err);
}

cairn_status cairn__store_credit(cairn__store *s, const cairn__store_credit_row *r,
                                cairn_error *err) {
  cairn_status st = CAIRN_OK;
  if (r->idx > 0) {
    sqlite3_stmt *q = Q(S_RESULT_CREDIT);
    sqlite3_bind_int64(q, 1, r->idx);
    if (r->claim >= 0)
      sqlite3_bind_double(q, 2, r->claim); /* else NULL: kept */
    sqlite3_bind_double(q, 3, r->result_credit);
    st = run(s, S_RESULT_CREDIT, err);
  }
  if (st != CAIRN_OK || r->vol <= 0)
    return st;
  sqlite3_stmt *q = Q(S_VOL_CREDIT);
  sqlite3_bind_int64(q, 1, r->vol);
  sqlite3_bind_double(q, 2, r->credit);
  sqlite3_bind_double(q, 3, r->cpu_seconds);
  sqlite3_bind_int64(q, 4, r->credited);
  sqlite3_bind_double(q, 5, r->expavg);
  sqlite3_bind_double(q, 6, r->expavg_time);
  return run(s, S_VOL_CREDIT, err);
}

/* Steps a loader statement, calling row() for each row. */
#define LOAD_LOOP(id, rowtype, fill)                                                      \
  do {                                                                                    \
    sqlite3_stmt *q = Q(id);                                                              \
    int rc;                                                                               \
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {                                        \
      rowtype row;                                                                        \
      memset(&row, 0, sizeof row);                                                        \
      fill;                                                                               \
      if (cb(ud, &row)) {                                                                 \
        sqlite3_reset(q);                                                                 \
        return cairn__error_set(err, CAIRN_EINTERNAL, "store: loading %s stopped", #id);   \
      }                                                                                   \
    }                                                                                     \
    sqlite3_reset(q);                                                                     \
    if (rc != SQLITE_DONE)                                                                \
      return db_err(s, s->w, err, cairn__store_sql[id]);                                  \
    return CAIRN_OK;                                                                      \
  } while (0)

cairn_status cairn__store_load_volunteers(cairn__store *s,
                                         int (*cb)(void *, const cairn__store_volunteer_row *),
                                         void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_VOL, cairn__store_volunteer_row, {
    row.id = I64(0);
    row.name = STR(1);
    row.cluster = STR(2);
    row.apps_json = STR(3);
    row.token_hash = STR(4);
    row.slots = (int)I64(5);
    row.banned = (int)I64(6);
    row.allocations = I64(7);
    row.created = I64(8);
    row.peer_url = STR(9);
    row.quarantined = (int)I64(10);
    row.team = STR(11);
    row.credit = sqlite3_column_double(q, 12);
    row.cpu_seconds = sqlite3_column_double(q, 13);
    row.credited = I64(14);
    row.trust = I64(15);
    row.account = I64(16);
    row.expavg = sqlite3_column_double(q, 17);
    row.expavg_time = sqlite3_column_double(q, 18);
  });
}

cairn_status cairn__store_load_trust(cairn__store *s, int (*cb)(void *, const cairn__store_trust_row *),
                                    void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_TRUST, cairn__store_trust_row, {
    row.vol = I64(0);
    row.seq = I64(1);
    row.job = I64(2);
    row.task_key = I64(3);
    row.round = I64(4);
    row.idx = I64(5);
  });
}

cairn_status cairn__store_load_jobs(cairn__store *s, int (*cb)(void *, const cairn__store_job_row *),
                                   void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_JOBS, cairn__store_job_row, {
    row.id = I64(0);
    row.name = STR(1);
    row.app = STR(2);
    row.policy = STR(3);
    row.state = STR(4);
    row.replication = (int)I64(5);
    row.quorum = (int)I64(6);
    row.lease_seconds = (int)I64(7);
    row.max_attempts = (int)I64(8);
    row.created = I64(9);
    row.finished = I64(10);
    row.priority = I64(11);
    row.validator = STR(12);
    row.adaptive = (int)I64(13);
    row.keep_workers = (int)I64(14);
    row.app_version = STR(15);
  });
}

cairn_status cairn__store_load_job_files(cairn__store *s,
                                        int (*cb)(void *, const cairn__store_job_file_row *),
                                        void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_JOB_FILES, cairn__store_job_file_row, {
    row.job = I64(0);
    row.seq = (int)I64(1);
    row.broadcast = (int)I64(2);
    row.name = STR(3);
    row.sha256 = STR(4);
    row.size = I64(5);
  });
}

cairn_status cairn__store_load_tasks(cairn__store *s, int (*cb)(void *, const cairn__store_task_row *),
                                    void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_TASKS, cairn__store_task_row, {
    row.key = I64(0);
    row.job = I64(1);
    row.accepted = I64(2);
    row.seq = (uint32_t)I64(3);
    row.attempts = (int)I64(4);
    row.name = STR(5);
    row.args_json = STR(6);
    row.inputs_json = STR(7);
    row.state = STR(8);
    row.round = I64(9);
    row.run_json = STR(10);
  });
}

cairn_status cairn__store_load_parents(cairn__store *s, int (*cb)(void *, const cairn__store_edge_row *),
                                      void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_PARENTS, cairn__store_edge_row, {
    row.task = I64(0);
    row.parent = I64(1);
    row.pos = (uint32_t)I64(2);
  });
}

cairn_status cairn__store_load_allocs(cairn__store *s, int (*cb)(void *, const cairn__store_alloc_row *),
                                     void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_ALLOCS, cairn__store_alloc_row, {
    row.idx = I64(0);
    row.volunteer = I64(1);
    row.t = I64(2);
    row.task = I64(3);
    row.issued = I64(4);
    row.expires = I64(5);
    row.state = STR(6);
    row.exit_status = (int)I64(7);
    row.digest = STR(8);
    row.outcome = STR(9);
    row.output = sqlite3_column_type(q, 10) == SQLITE_NULL ? NULL : sqlite3_column_blob(q, 10);
    row.output = row.output || sqlite3_column_type(q, 10) == SQLITE_NULL ? row.output : "";
    row.output_len = (size_t)sqlite3_column_bytes(q, 10);
    row.files_key = STR(11);
    row.cpu_seconds = sqlite3_column_double(q, 12);
    row.credit = sqlite3_column_double(q, 13);
    row.team = STR(14);
  });
}

cairn_status cairn__store_load_files(cairn__store *s, int (*cb)(void *, const cairn__store_file_row *),
                                    void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_FILES, cairn__store_file_row, {
    row.sha256 = STR(0);
    row.size = I64(1);
  });
}

cairn_status cairn__store_load_outcomes(cairn__store *s,
                                       int (*cb)(void *, const cairn__store_outcome_row *), void *ud,
                                       cairn_error *err) {
  LOAD_LOOP(S_LOAD_OUTCOMES, cairn__store_outcome_row, {
    row.volunteer = I64(0);
    row.outcome = STR(1);
    row.count = I64(2);
  });
}

cairn_status cairn__store_load_holders(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_holder_row *), void *ud,
                                      cairn_error *err) {
  LOAD_LOOP(S_LOAD_HOLDERS, cairn__store_holder_row, {
    row.sha256 = STR(0);
    row.volunteer = I64(1);
    row.since = I64(2);
  });
}

cairn_status cairn__store_load_rates(cairn__store *s,
                                    int (*cb)(void *, const cairn__store_rate_row *), void *ud,
                                    cairn_error *err) {
  LOAD_LOOP(S_LOAD_RATES, cairn__store_rate_row, {
    row.src = STR(0);
    row.dst = STR(1);
    row.bytes_per_second = I64(2);
    row.samples = I64(3);
  });
}

static cairn_status res_put(cairn__store *s, int id, const cairn__store_res_row *r,
                           cairn_error *err) {
  sqlite3_stmt *q = Q(id);
  sqlite3_bind_int64(q, 1, r->id);
  sqlite3_bind_int64(q, 2, r->cores);
  sqlite3_bind_int64(q, 3, r->memory_mib);
  sqlite3_bind_int64(q, 4, r->disk_mib);
  return run(s, id, err);
}

cairn_status cairn__store_task_resources_insert(cairn__store *s, const cairn__store_res_row *r,
                                               cairn_error *err) {
  return res_put(s, S_TASK_RES_INSERT, r, err);
}

cairn_status cairn__store_volunteer_offer(cairn__store *s, const cairn__store_res_row *r,
                                         cairn_error *err) {
  return res_put(s, S_VOL_OFFER, r, err);
}

cairn_status cairn__store_load_task_resources(cairn__store *s,
                                             int (*cb)(void *, const cairn__store_res_row *),
                                             void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_TASK_RES, cairn__store_res_row, {
    row.id = I64(0);
    row.cores = I64(1);
    row.memory_mib = I64(2);
    row.disk_mib = I64(3);
  });
}

cairn_status cairn__store_load_offers(cairn__store *s,
                                     int (*cb)(void *, const cairn__store_res_row *), void *ud,
                                     cairn_error *err) {
  LOAD_LOOP(S_LOAD_OFFERS, cairn__store_res_row, {
    row.id = I64(0);
    row.cores = I64(1);
    row.memory_mib = I64(2);
    row.disk_mib = I64(3);
  });
}

cairn_status cairn__store_load_task_io(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_task_io_row *),
                                      void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_TASK_IO, cairn__store_task_io_row, {
    row.task = I64(0);
    row.outputs_json = STR(1);
    row.parent_files_json = STR(2);
  });
}

cairn_status cairn__store_load_accepted_files(cairn__store *s,
                                             int (*cb)(void *, const struct cairn__store_output_row *),
                                             void *ud, cairn_error *err) {
  LOAD_LOOP(S_LOAD_ACCEPTED_FILES, cairn__store_output_row, {
    row.key = I64(0);
    row.name = STR(1);
    row.sha256 = STR(2);
    row.size = I64(3);
  });
}
