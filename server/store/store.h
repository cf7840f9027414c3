/* store.h — the master's durable state in SQLite, behind a narrow interface.
 *
 * Only the store's files (store.c, store_life.c, store_read.c, store_dag.c,
 * store_int.h)
 * include sqlite3.h. Two connections: the writer (used by the
 * commit thread and at start-up; every write goes through it, inside
 * cairn__store_begin/commit) and the reader (API reads; serialised by its own
 * mutex). WAL mode; prepared statements only. A commit with durable=1 is on
 * disk when cairn__store_commit returns (synchronous=FULL).
 */
#ifndef CAIRN_STORE_H
#define CAIRN_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct cairn__store cairn__store;

/* Opens (creating if needed) the database at path and applies every
 * migration it has not recorded yet, each in its own transaction. */
cairn__store *cairn__store_open(const char *path, int durable, cairn_error *err);
void cairn__store_close(cairn__store *s);
/* Schema version recorded in the database (number of the last migration). */
int cairn__store_schema_version(cairn__store *s);

/* Writer transaction. */
cairn_status cairn__store_begin(cairn__store *s, cairn_error *err);
cairn_status cairn__store_commit(cairn__store *s, cairn_error *err);
void cairn__store_rollback(cairn__store *s);

/* ---- writes (writer connection, inside a transaction) ---- */
cairn_status cairn__store_meta_set(cairn__store *s, const char *key, const char *value, cairn_error *err);
cairn_status cairn__store_meta_delete(cairn__store *s, const char *key, cairn_error *err);
cairn_status cairn__store_volunteer_insert(cairn__store *s, int64_t id, const char *name,
                                          const char *cluster, const char *apps_json, int slots,
                                          const char *token_hash, int64_t now, cairn_error *err);
/* Marks volunteer id banned for reason, its ban pending; reason NULL: its
 * ban is finished (0021_ban_progress.sql), the reason stays. */
cairn_status cairn__store_volunteer_ban(cairn__store *s, int64_t id, const char *reason,
                                       cairn_error *err);
/* Sets volunteer id's team (0012_credit.sql), and gives the team its row
 * of the ledger if it had none (0018_team_ledger.sql). */
cairn_status cairn__store_volunteer_team(cairn__store *s, int64_t id, const char *team,
                                        cairn_error *err);
/* Credit (0012_credit.sql): result idx's claim (claim < 0: left as it is)
 * and granted credit, when idx > 0; volunteer vol's totals, when vol > 0. */
typedef struct cairn__store_credit_row {
  int64_t idx, vol;
  double claim, result_credit;
  double credit, cpu_seconds;
  int64_t credited;
  double expavg, expavg_time; /* its averaged credit (0024_accounts.sql) */
} cairn__store_credit_row;
cairn_status cairn__store_credit(cairn__store *s, const cairn__store_credit_row *r,
                                cairn_error *err);
/* The team ledger (store_team.c, 0018_team_ledger.sql): team's totals
 * become credit, cpu_seconds and results; when idx > 0, result idx's
 * credit counts for team from now (granted) or for none (not). */
typedef struct cairn__store_team_row {
  int64_t idx;
  const char *team;
  double credit, cpu_seconds;
  int64_t results;
  int granted;
  double expavg, expavg_time; /* its averaged credit (0024_accounts.sql) */
} cairn__store_team_row;
cairn_status cairn__store_team_credit(cairn__store *s, const cairn__store_team_row *r,
                                     cairn_error *err);
/* Only result idx's team (r->team when granted, else none). */
cairn_status cairn__store_result_team(cairn__store *s, const cairn__store_team_row *r,
                                     cairn_error *err);
/* Every team of the ledger (idx 0, granted 0), in no order. */
cairn_status cairn__store_load_teams(cairn__store *s, int (*cb)(void *, const cairn__store_team_row *),
                                    void *ud, cairn_error *err);
/* Accounts (store_accounts.c, 0024_accounts.sql): a new account's row
 * (key_hash: the SHA-256 of its key; password_hash: crypto_pwhash_str's);
 * its key replaced (key_hash only); its credit totals; volunteer vol's
 * account; every account at start-up, in id order (key and password
 * hashes, totals). */
typedef struct cairn__store_account_row {
  int64_t id, created, results;
  const char *name, *email, *key_hash, *password_hash;
  double credit, cpu_seconds, expavg, expavg_time;
  const char *cpid;  /* its cross-project id (32 hex digits; 0025, 0030) */
  int64_t cpid_time; /* when that id was made (Unix seconds) */
} cairn__store_account_row;
cairn_status cairn__store_account_put(cairn__store *s, const cairn__store_account_row *r,
                                     cairn_error *err);
cairn_status cairn__store_account_key(cairn__store *s, int64_t id, const char *key_hash,
                                     cairn_error *err);
cairn_status cairn__store_account_credit(cairn__store *s, const cairn__store_account_row *r,
                                        cairn_error *err);
cairn_status cairn__store_volunteer_account(cairn__store *s, int64_t vol, int64_t account,
                                           cairn_error *err);
cairn_status cairn__store_load_accounts(cairn__store *s,
                                       int (*cb)(void *, const cairn__store_account_row *),
                                       void *ud, cairn_error *err);
/* Adaptive replication (0011_trust.sql): volunteer id's trust; job id
 * opts in; a ring entry; volunteer vol's ring emptied. */
cairn_status cairn__store_volunteer_trust(cairn__store *s, int64_t id, int64_t trust,
                                         cairn_error *err);
cairn_status cairn__store_job_adaptive(cairn__store *s, int64_t id, cairn_error *err);
/* Kept outputs (store_keep.c, 0016_kept_outputs.sql): job id's outputs stay
 * on workers; file sha256's bytes are only on workers (on) or at the master
 * too (off); the files only on workers, at start-up. */
cairn_status cairn__store_job_keep(cairn__store *s, int64_t id, cairn_error *err);
cairn_status cairn__store_kept(cairn__store *s, const char *sha256, int on, cairn_error *err);
cairn_status cairn__store_load_kept(cairn__store *s, int (*cb)(void *, const char *sha256),
                                   void *ud, cairn_error *err);
struct cairn__store_trust_row;
cairn_status cairn__store_trust_put(cairn__store *s, const struct cairn__store_trust_row *r,
                                   cairn_error *err);
cairn_status cairn__store_trust_clear(cairn__store *s, int64_t vol, cairn_error *err);
/* Sets volunteer id's quarantine flag (0010_quarantine.sql). */
cairn_status cairn__store_volunteer_quarantine(cairn__store *s, int64_t id, int on,
                                              cairn_error *err);
cairn_status cairn__store_volunteer_peer(cairn__store *s, int64_t id, const char *peer_url,
                                        cairn_error *err);
cairn_status cairn__store_file_insert(cairn__store *s, const char *sha256, int64_t size, int64_t now,
                                     cairn_error *err);
/* volunteer holds a verified copy of file sha256 since then; a holding
 * already recorded is left as it is (its since too). */
cairn_status cairn__store_holder_insert(cairn__store *s, const char *sha256, int64_t volunteer,
                                       int64_t since, cairn_error *err);
/* Deletes volunteer's holding of file sha256 (a peer reported its copy
 * bad); none is no error. */
cairn_status cairn__store_holder_delete(cairn__store *s, const char *sha256, int64_t volunteer,
                                       cairn_error *err);
/* Deletes every holding of volunteer (when it is banned). */
cairn_status cairn__store_holders_forget(cairn__store *s, int64_t volunteer, cairn_error *err);
/* The measured rate from cluster src ("" = the master) into dst (upsert). */
cairn_status cairn__store_rate_put(cairn__store *s, const char *src, const char *dst,
                                  int64_t bytes_per_second, int64_t samples, cairn_error *err);
/* An invitation (docs/security.md): inserted whole, then only its `used`
 * changes (upsert on id). */
typedef struct cairn__store_invite_row {
  int64_t id, uses, used, expires, created;
  const char *code_hash, *prefix, *note;
} cairn__store_invite_row;
cairn_status cairn__store_invite_put(cairn__store *s, const cairn__store_invite_row *r,
                                    cairn_error *err);
cairn_status cairn__store_invite_delete(cairn__store *s, int64_t id, cairn_error *err);
cairn_status cairn__store_job_insert(cairn__store *s, int64_t id, const char *name, const char *app,
                                    const char *policy, int replication, int quorum,
                                    int lease_seconds, int max_attempts, int64_t now,
                                    int64_t priority, cairn_error *err);
/* Job id's validator (compact JSON, 0009_validators.sql). */
cairn_status cairn__store_job_validator(cairn__store *s, int64_t id, const char *validator,
                                       cairn_error *err);
cairn_status cairn__store_job_priority(cairn__store *s, int64_t id, int64_t priority,
                                      cairn_error *err);

/* What deleting a job removed (cairn_store_job_delete). removed: the
 * SHA-256 of each stored file whose row went (malloc'd; the caller frees it
 * and removes the files from DB.files/ once the transaction committed). */
typedef struct cairn__store_delete_report {
  int64_t tasks, tasks_kept, results, result_bytes, allocations, files, file_bytes;
  char (*removed)[65];
  size_t nremoved;
} cairn__store_delete_report;
/* Deleting job, in steps that each fit one transaction of bounded size:
 * cairn__store_job_delete_range() over consecutive ranges [lo, hi) of the
 * job's task keys, then cairn__store_job_delete_finish(). A range marks the
 * job ended = 'deleting' (or 'purging': a restarted master finishes the
 * deletion, cairn__store_job_keys() giving what is left), then deletes the
 * range's results, dependencies and resource requests and the tasks no
 * allocation names; the
 * others keep their key, job and name (args, inputs and run emptied) so that
 * the audit still answers for their indices. With purge, the allocations go
 * too (each volunteer's largest t is kept in volunteers.allocations, so no
 * index is handed out twice). Leases still "leased" end "expired". The
 * finish deletes the job's file list, runs cairn__store_files_unreferenced()
 * over its files and marks it ended = 'deleted': the row stays, so its id is
 * never reused. Counts add to *rep. Writer connection, in a transaction;
 * each step may run again (after a crash) without harm. */
cairn_status cairn__store_job_delete_range(cairn__store *s, int64_t job, int purge, int64_t lo,
                                          int64_t hi, cairn__store_delete_report *rep,
                                          cairn_error *err);
cairn_status cairn__store_job_delete_finish(cairn__store *s, int64_t job, int64_t now,
                                           cairn__store_delete_report *rep, cairn_error *err);
/* The smallest and one past the largest task key job still has (0, 0: none). */
int cairn__store_job_keys(cairn__store *s, int64_t job, int64_t *lo, int64_t *hi);
/* THE decision of which stored files may go: among cand[0..n), each file
 * no table names any more (today: job_files; a table that names stored
 * files must be added to S_FILE_REFERENCED in store.c) loses its files and
 * file_holders rows and is added to rep (removed, files, file_bytes). */
cairn_status cairn__store_files_unreferenced(cairn__store *s, char (*cand)[65], size_t n,
                                            cairn__store_delete_report *rep, cairn_error *err);
/* Outside a transaction: gives the free pages back to the file system
 * (incremental auto-vacuum) and truncates the WAL when no reader holds it. */
cairn_status cairn__store_reclaim(cairn__store *s, cairn_error *err);
/* The largest task key in the store, deleted jobs' kept tasks included. */
int64_t cairn__store_max_task_key(cairn__store *s);
cairn_status cairn__store_job_file_insert(cairn__store *s, int64_t job, int seq, const char *name,
                                         const char *sha256, int broadcast, cairn_error *err);
cairn_status cairn__store_task_insert(cairn__store *s, int64_t key, int64_t job, uint32_t seq,
                                     const char *name, const char *args_json,
                                     const char *inputs_json, const char *state,
                                     const char *run_json, cairn_error *err); /* run_json may be NULL */
cairn_status cairn__store_task_parent_insert(cairn__store *s, int64_t task, int64_t parent, uint32_t pos,
                                            cairn_error *err);
cairn_status cairn__store_task_update(cairn__store *s, int64_t key, const char *state, int attempts,
                                     int64_t accepted, int64_t round, cairn_error *err);
cairn_status cairn__store_job_update(cairn__store *s, int64_t id, const char *state, int64_t finished,
                                    cairn_error *err);
cairn_status cairn__store_alloc_insert(cairn__store *s, int64_t idx, int64_t volunteer, int64_t t,
                                      int64_t task, int64_t issued, int64_t expires, int64_t round,
                                      cairn_error *err);
cairn_status cairn__store_result_outcome(cairn__store *s, int64_t idx, const char *outcome,
                                        cairn_error *err);
cairn_status cairn__store_alloc_update(cairn__store *s, int64_t idx, int64_t expires, const char *state,
                                      cairn_error *err);
cairn_status cairn__store_result_insert(cairn__store *s, int64_t idx, int64_t task, int64_t volunteer,
                                       int exit_status, const void *output, size_t len,
                                       const char *digest, int64_t now, const char *outcome,
                                       const char *reason, const void *stderr_tail,
                                       size_t stderr_len, cairn_error *err); /* reason: NULL or "" for none */
/* Task's declared outputs and the parents' files it reads (0008_outputs.sql). */
cairn_status cairn__store_task_io_insert(cairn__store *s, int64_t task, const char *outputs_json,
                                        const char *parent_files_json, cairn_error *err);
/* One output file named by result idx. */
cairn_status cairn__store_result_file_insert(cairn__store *s, int64_t idx, const char *name,
                                            const char *sha256, int64_t size, cairn_error *err);

/* ---- start-up loading: load.h ---- */

/* ---- reads for the API (reader connection, thread-safe) ---- */
/* The accepted output of task key; *out is malloc'd (caller frees).
 * CAIRN_ENOTFOUND if the task has no accepted result. */
cairn_status cairn__store_task_output(cairn__store *s, int64_t key, char **out, size_t *len,
                                     cairn_error *err);

typedef struct cairn__store_result_row {
  uint32_t seq;
  int64_t idx, volunteer;
  int exit_status;
  const void *output;
  size_t len;
  const char *reason; /* NULL: none */
  const void *stderr_tail; /* the last 64 KiB of standard error (may be NULL when empty) */
  size_t stderr_len;
} cairn__store_result_row;
/* For every task of job with seq in [from, to) and an accepted result, in
 * seq order (the index on (job_id, seq): O(to - from)). */
cairn_status cairn__store_job_results(cairn__store *s, int64_t job, int64_t from, int64_t to,
                                     int (*cb)(void *, const cairn__store_result_row *), void *ud,
                                     cairn_error *err);

/* An output file of an accepted result: key is the task's seq (job reads)
 * or its key (start-up load). */
typedef struct cairn__store_output_row {
  int64_t key, size;
  const char *name, *sha256;
  int kept; /* 1: kept on workers, the master holds no copy (kept_files) */
} cairn__store_output_row;
/* The file `name` of the accepted result of done task `task` (its id) of
 * job; CAIRN_ENOTFOUND when none. */
cairn_status cairn__store_output_file(cairn__store *s, int64_t job, const char *task,
                                     const char *name, char sha256[65], int64_t *size,
                                     cairn_error *err);
/* The files of the accepted results of job's tasks with seq in [from, to),
 * by task seq then name. */
cairn_status cairn__store_job_files(cairn__store *s, int64_t job, int64_t from, int64_t to,
                                   int (*cb)(void *, const cairn__store_output_row *), void *ud,
                                   cairn_error *err);

typedef struct cairn__store_audit_row {
  int64_t idx, volunteer, t, job, task_key, issued, lease_expires, round, received;
  const char *task, *lease_state, *digest, *outcome; /* digest/outcome NULL without result */
  int has_result, exit_status;
  const char *reason; /* NULL without result or for exit status 0 */
  double cpu_seconds, credit; /* its claim (-1: none) and granted credit (0012_credit.sql) */
} cairn__store_audit_row;
enum { CAIRN_AUDIT_BY_INDEX, CAIRN_AUDIT_BY_VOLUNTEER, CAIRN_AUDIT_BY_TASK };
/* The allocation with index key (CAIRN_AUDIT_BY_INDEX), every allocation
 * of volunteer key in t order (BY_VOLUNTEER) or of task key in issue order
 * (BY_TASK), with tasks and results. */
cairn_status cairn__store_audit(cairn__store *s, int by, int64_t key,
                               int (*cb)(void *, const cairn__store_audit_row *), void *ud,
                               cairn_error *err);

/* Credit standings (GET /v1/stats; volunteers not banned), in one read
 * transaction: kind CAIRN_STATS_VOLUNTEER rows (id, name, team or NULL) by
 * credit, highest first, at most limit; CAIRN_STATS_TEAM rows (team,
 * members) by credit, at most limit; then one CAIRN_STATS_TOTAL row
 * (members: volunteers, id: teams). Cost on the reader connection: O(limit
 * log V) for the volunteers (index volunteers_by_credit), O(V + T log T)
 * for teams and totals (scans of the covering index volunteers_by_team;
 * bench/stats.sh: 82 ms for 10^5 volunteers). */
enum { CAIRN_STATS_VOLUNTEER, CAIRN_STATS_TEAM, CAIRN_STATS_TOTAL };
typedef struct cairn__store_stats_row {
  int kind;
  int64_t id, members, results;
  const char *name, *team;
  double credit, cpu_seconds;
} cairn__store_stats_row;
cairn_status cairn__store_stats(cairn__store *s, int limit,
                               int (*cb)(void *, const cairn__store_stats_row *), void *ud,
                               cairn_error *err);

/* A signed app version (0023_app_versions.sql, docs/apps.md): its row and
 * the SHA-256 of each of its files. Strings borrowed from the caller. */
typedef struct cairn__store_app_row {
  int64_t id, published;
  int retired;
  const char *name, *version, *platform, *manifest, *signature;
  const char *const *shas; /* nshas files' SHA-256 */
  size_t nshas;
} cairn__store_app_row;
/* Inserts r and its files (writer, in the commit's transaction). */
cairn_status cairn__store_app_put(cairn__store *s, const cairn__store_app_row *r,
                                 cairn_error *err);
/* Job id's pinned app version. */
cairn_status cairn__store_job_app_version(cairn__store *s, int64_t id, const char *version,
                                         cairn_error *err);
/* Marks version id retired. */
cairn_status cairn__store_app_retire(cairn__store *s, int64_t id, cairn_error *err);
/* Every app version, by id, to cb (writer connection, at start-up; r->shas
 * empty: the registry reads the files from the manifest); cb returns
 * non-zero to stop with CAIRN_ENOMEM. */
cairn_status cairn__store_load_apps(cairn__store *s, int (*cb)(void *, const cairn__store_app_row *),
                                   void *ud, cairn_error *err);

/* Every invitation, by id (reader connection; at start-up). */
cairn_status cairn__store_read_invites(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_invite_row *), void *ud,
                                      cairn_error *err);

/* A job's dag for GET /v1/jobs/{id}/dag (store_dag.c): read from the file
 * at db_path on a read-only connection of its own, in one transaction.
 * keys: the task keys in job-file order; edges: indices into keys; policy:
 * the job's. CAIRN_ENOTFOUND (no such live job), CAIRN_ETOOBIG (more than
 * max_n tasks or max_m edges; nothing read), CAIRN_EIO. Free with
 * cairn__store_dag_free. */
typedef struct cairn__store_dag {
  uint32_t n;
  int64_t *keys;
  struct cairn__edge *edges;
  uint64_t m;
  char policy[32];
} cairn__store_dag;
cairn_status cairn__store_dag_read(const char *db_path, int64_t job, uint32_t max_n, uint64_t max_m,
                                  cairn__store_dag *out, cairn_error *err);
void cairn__store_dag_free(cairn__store_dag *v);

/* ---- broadcasts (0015_transfers.sql; store_dist.c) ---- */
/* One copy of a job's broadcast file that travelled (table file_transfers):
 * to volunteer dst from volunteer src (0: the master), in [start_ms,
 * end_ms] (Unix ms); assigned: the source the master handed out (0: the
 * master, -1: none known). Clusters are cut to 64 bytes. */
typedef struct cairn__store_xfer_row {
  int64_t job, dst, src, assigned, start_ms, end_ms, bytes;
  char sha256[65], dst_cluster[65], src_cluster[65];
} cairn__store_xfer_row;
/* Records a copy; a second one of the same (job, file, receiver) is
 * ignored (the first stays). */
cairn_status cairn__store_xfer_put(cairn__store *s, const cairn__store_xfer_row *r,
                                  cairn_error *err);
/* The plan in force for file sha256, body its JSON: a new row with plans
 * and started_ms, else the body replaced, plans counted up by one and the
 * earlier started_ms kept (a restarted master starts its clock again). */
cairn_status cairn__store_plan_put(cairn__store *s, const char *sha256, int64_t started_ms,
                                  int64_t plans, const char *body, cairn_error *err);
/* What GET /v1/jobs/{id}/distribution reads, in calls to cb (each returns
 * 0 to go on): file once per broadcast file of the job (job-file order;
 * plan_body NULL when no plan was recorded), then for that file xfer for
 * its first max_xfers transfers by start (total: how many there are), and
 * source per sender (bytes and copies, largest first, at most max_xfers);
 * after the files, rate per measured link (at most 4,096). Read from the
 * database file on a read-only connection of its own, in one read
 * transaction, never touching the master's connections. CAIRN_ENOTFOUND
 * (no such live job), CAIRN_EIO. */
typedef struct cairn__store_dist_cb {
  void *ud;
  int (*file)(void *ud, const char *name, const char *sha256, int64_t size, int64_t started_ms,
              int64_t plans, const char *plan_body, int64_t total);
  int (*xfer)(void *ud, const cairn__store_xfer_row *r);
  int (*source)(void *ud, int64_t src, const char *cluster, int64_t bytes, int64_t copies);
  int (*rate)(void *ud, const char *src, const char *dst, int64_t bps, int64_t samples);
} cairn__store_dist_cb;
cairn_status cairn__store_dist_read(const char *db_path, int64_t job, uint32_t max_xfers,
                                   const cairn__store_dist_cb *cb, cairn_error *err);

#endif
