/* journal.h — the master's write-ahead path to SQLite (private to server/).
 *
 * Owns: the queue of records not yet written, the batch numbers, the commit
 * thread, and the failed state. Nobody else touches them.
 *
 * Records are typed: one constructor per kind below, each copying every
 * value it is given (strings and blobs are duplicated), so the commit thread
 * never reads an object the core may change. A constructor returns NULL only
 * when out of memory; cairn__journal_put() takes that NULL as a record that
 * could not be queued.
 *
 * Group commit: the commit thread writes each batch in one SQLite
 * transaction, so one fsync covers every request that arrived meanwhile.
 * A batch takes records only up to the last seal: the records one holder of
 * the core's lock puts form one group, sealed when it releases the lock
 * (cairn__core_unlock) or asks for cairn__journal_last, so a group is never
 * split between two transactions (a kill -9 finds all of a request's
 * changes in the store, or none). A caller that must acknowledge something
 * waits (cairn__journal_wait) for the batch that holds its last record,
 * after releasing the core's lock.
 *
 * One failure rule: a record that cannot be queued (out of memory) or a
 * batch that cannot be committed puts the journal into the failed state for
 * good. Nothing is written or acknowledged after that: every wait returns
 * CAIRN_EFAILED, later records are dropped, and the master answers 503
 * (server/master.c). Memory may then be ahead of the store; a restart
 * rebuilds it from what was committed, which is all that was acknowledged.
 *
 * Locking: the journal has its own mutex, taken inside the core's lock when
 * records are put (lock order: core, then journal). The commit thread never
 * takes the core's lock. Every function is thread-safe.
 */
#ifndef CAIRN_JOURNAL_H
#define CAIRN_JOURNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/log.h"
#include "common/outputs.h"
#include "server/store/load.h"

typedef struct cairn__journal cairn__journal;
typedef struct cairn__jrec cairn__jrec;

/* Starts the commit thread over s (which stays the caller's, and must
 * outlive the journal). fail_fd >= 0: one byte is written to it when the
 * journal fails (to wake a waiting cairn_master_run). NULL with err set. */
cairn__journal *cairn__journal_open(cairn__store *s, const cairn__logger *log, int fail_fd,
                                    cairn_error *err);
/* Writes what is queued, stops the commit thread and frees j. NULL is fine. */
void cairn__journal_close(cairn__journal *j);

/* Turns the audit chain on (server/store/chain.h): from now on every chained
 * record's entry is written in its batch's transaction, and the head is
 * signed every CAIRN_CHAIN_CHECKPOINT_SECONDS when it moved and at close.
 * Takes ch (closed with the journal, or at once on failure). Called once,
 * before the first chained record is put. Waits while the commit thread
 * loads the chain's head and brings its tree to it (tree.h: O(log n), or
 * O(n) once when the tree is built from the entries); its error, if any. */
struct cairn__chain;
cairn_status cairn__journal_set_chain(cairn__journal *j, struct cairn__chain *ch,
                                      cairn_error *err);

/* Queues r (taking it) in the current group. r == NULL (a constructor out
 * of memory) fails the journal. Once failed, r is freed. */
void cairn__journal_put(cairn__journal *j, cairn__jrec *r);
/* Ends the current group: the records put so far may be taken by the next
 * batch. Called with the core's lock, before it is released. NULL is fine. */
void cairn__journal_seal(cairn__journal *j);
/* Seals, and returns the batch holding the last record put (0 if none):
 * waiting for it makes everything put so far durable. */
uint64_t cairn__journal_last(cairn__journal *j);
/* Waits until batch seq is committed. CAIRN_OK; CAIRN_EFAILED once the
 * journal has failed (even if seq was committed first: nothing is
 * acknowledged after a failure). Must not be called with the core's lock. */
cairn_status cairn__journal_wait(cairn__journal *j, uint64_t seq, cairn_error *err);
/* Batches committed so far. */
uint64_t cairn__journal_committed(cairn__journal *j);
/* CAIRN_OK, or CAIRN_EFAILED with the reason in err. */
cairn_status cairn__journal_failed(cairn__journal *j, cairn_error *err);

/* ---- records: one constructor per kind ---- */

/* A key of the meta table. */
cairn__jrec *cairn__jrec_meta(const char *key, const char *value);
/* A new volunteer (apps_json: a JSON array of its app names). */
cairn__jrec *cairn__jrec_volunteer(int64_t id, const char *name, const char *cluster,
                                   const char *apps_json, int slots, const char *token_hash,
                                   int64_t created);
/* Sets volunteer record r's team (NULL: none); returns r (NULL-safe; on
 * failure frees r and returns NULL). */
cairn__jrec *cairn__jrec_volunteer_team(cairn__jrec *r, const char *team);
/* Volunteer id is banned for reason; its holdings go in the same transaction.
 * Its ban is pending (volunteers.ban_pending) until cairn__jrec_ban_done(id),
 * written once the ban's last slice is (server/core/ban.c). */
cairn__jrec *cairn__jrec_ban(int64_t id, const char *reason);
cairn__jrec *cairn__jrec_ban_done(int64_t id);
/* Volunteer id enters (on 1) or leaves (on 0) quarantine (quarantine.c). */
cairn__jrec *cairn__jrec_quarantine(int64_t id, int on);
/* Adaptive replication (trust.c): volunteer id's trust; an entry of a
 * volunteer's ring of unreplicated accepted results; its ring emptied. */
cairn__jrec *cairn__jrec_trust(int64_t id, int64_t trust);
cairn__jrec *cairn__jrec_tring(const cairn__store_trust_row *row);
cairn__jrec *cairn__jrec_tring_clear(int64_t vol);
/* Volunteer id's peer URL (NULL: none). */
cairn__jrec *cairn__jrec_peer(int64_t id, const char *peer_url);
/* Volunteer id's team from now (NULL: none): what it earns next counts for it (team.c). */
cairn__jrec *cairn__jrec_team(int64_t id, const char *team);
/* An uploaded file. */
cairn__jrec *cairn__jrec_file(const char *sha256, int64_t size, int64_t created);
/* Volunteer holds a verified copy of file sha256 since then. */
cairn__jrec *cairn__jrec_hold(int64_t volunteer, const char *sha256, int64_t since);
/* Volunteer holds file sha256 no more. */
cairn__jrec *cairn__jrec_unhold(int64_t volunteer, const char *sha256);
/* The measured rate from cluster src ("" = the master) into dst. */
cairn__jrec *cairn__jrec_rate(const char *src, const char *dst, int64_t bytes_per_second,
                              int64_t samples);
/* A copy of a broadcast file that travelled (table file_transfers). */
cairn__jrec *cairn__jrec_xfer(const cairn__store_xfer_row *row);
/* The plan in force for file sha256, body its JSON (table broadcast_plans). */
cairn__jrec *cairn__jrec_plan(const char *sha256, int64_t started_ms, int64_t plans,
                              const char *body);

/* An invitation: a new one, or the count of its uses (r is copied). */
cairn__jrec *cairn__jrec_invite(const cairn__store_invite_row *r);
/* Invitation id is revoked. */
cairn__jrec *cairn__jrec_invite_delete(int64_t id);
/* A signed app version and its files (copied); its retirement. */
cairn__jrec *cairn__jrec_app(const cairn__store_app_row *row);
cairn__jrec *cairn__jrec_app_retire(int64_t id);

/* A new job: its row, files and tasks are added with cairn__jrec_job_file()
 * and cairn__jrec_job_task(), its id and keys with cairn__jrec_job_keys()
 * (each NULL-safe, so a chain of calls needs one check at
 * cairn__journal_put). Task i gets the key first_key + i and its parents
 * are given by their indices in the job. */
cairn__jrec *cairn__jrec_job(const char *name, const char *app, const char *policy,
                             int replication, int quorum, int lease_seconds, int max_attempts,
                             int64_t created, uint32_t nfiles, uint32_t ntasks);
/* Sets job r's priority (0 unless called); returns r. */
cairn__jrec *cairn__jrec_job_priority(cairn__jrec *r, int64_t priority);
/* Sets job r's validator (compact JSON; exact unless called); returns r. */
cairn__jrec *cairn__jrec_job_validator(cairn__jrec *r, const char *validator_json);
/* Sets job r's pinned app version (NULL: none); returns r. */
cairn__jrec *cairn__jrec_job_app_version(cairn__jrec *r, const char *version);
/* Marks a job record as opting in to adaptive replication (trust.c). */
cairn__jrec *cairn__jrec_job_adaptive(cairn__jrec *r, int adaptive);
/* Sets a J_JOB record's keep_workers (its outputs stay on workers). */
cairn__jrec *cairn__jrec_job_keep(cairn__jrec *r, int keep_workers);
/* File sha256's bytes are only on workers (on, after its J_FILE), or at the
 * master too (off): kept_files (0016_kept_outputs.sql). */
cairn__jrec *cairn__jrec_kept(const char *sha256, int on);
/* Job id's priority changed. */
cairn__jrec *cairn__jrec_priority(int64_t id, int64_t priority);
/* One step of deleting job id from the store: the task keys [lo, hi)
 * (cairn__store_job_delete_range; purge: their allocations too), or, with
 * final, the end (cairn__store_job_delete_finish, and the batch's commit is
 * followed by cairn__store_reclaim()). The commit thread adds counts to *out
 * (caller-owned, or NULL), which the caller reads after waiting for the
 * batch. */
cairn__jrec *cairn__jrec_delete(int64_t id, int purge, int64_t lo, int64_t hi, int final,
                                int64_t now, cairn__store_delete_report *out);
/* Sets job r's id and the key of its first task; returns r. */
cairn__jrec *cairn__jrec_job_keys(cairn__jrec *r, int64_t id, int64_t first_key);
/* File i of job r. On failure frees r and returns NULL; else returns r. */
cairn__jrec *cairn__jrec_job_file(cairn__jrec *r, uint32_t i, const char *name,
                                  const char *sha256, int broadcast);
/* Task i of job r: its run (limits, env, stdin as JSON; NULL: none), its inputs (indices into the job's files) and parents
 * (indices into its tasks). On failure frees r and returns NULL. */
cairn__jrec *cairn__jrec_job_task(cairn__jrec *r, uint32_t i, const char *name,
                                  const char *args_json, const char *run_json,
                                  const uint32_t *inputs, uint32_t ninputs,
                                  const uint32_t *parents, uint32_t nparents);

/* Task i of job r requests other resources than the default (one core, no
 * memory, no disk). Returns r (NULL-safe). */
cairn__jrec *cairn__jrec_job_task_res(cairn__jrec *r, uint32_t i, int64_t cores,
                                      int64_t memory_mib, int64_t disk_mib);
/* What volunteer vol offers now (upsert). */
cairn__jrec *cairn__jrec_offer(int64_t vol, int64_t cores, int64_t memory_mib,
                               int64_t disk_mib);
/* Task i of job r declares outputs and reads parents' files (a task_io row:
 * JSON texts, see schema/0008_outputs.sql). On failure frees r. */
cairn__jrec *cairn__jrec_job_task_io(cairn__jrec *r, uint32_t i, const char *outputs_json,
                                     const char *parent_files_json);

/* State names ("waiting", "leased", "valid", ...) must be static strings:
 * the record keeps the pointer. */

/* A task's state (a name of schema/: "waiting", "eligible", ...). */
cairn__jrec *cairn__jrec_task(int64_t key, const char *state, int attempts, int64_t accepted,
                              int64_t round);
/* A job's state ("running", "done", "failed", "cancelled") and when it
 * finished. */
cairn__jrec *cairn__jrec_job_state(int64_t id, const char *state, int64_t finished);
/* Allocation idx = φ(volunteer, t) of task (its key) in round. */
cairn__jrec *cairn__jrec_alloc(int64_t idx, int64_t volunteer, int64_t t, int64_t task,
                               int64_t issued, int64_t expires, int64_t round);
/* The lease of allocation idx: its deadline and state ("leased", "returned",
 * "expired"). */
cairn__jrec *cairn__jrec_lease(int64_t idx, int64_t expires, const char *state);
/* The result of allocation idx (output, stderr tail and files copied;
 * reason: NULL or "" for none). */
cairn__jrec *cairn__jrec_result(int64_t idx, int64_t task, int64_t volunteer, int exit_status,
                                const void *output, size_t len, const char *digest,
                                int64_t received, const char *outcome, const char *reason,
                                const void *err_tail, size_t err_len,
                                const cairn__output_file *files, size_t nfiles);
/* Sets result record r's claim (cpu_seconds; < 0: none), the credit
 * granted to it (credit.c) and the team that credit counts for (team.c;
 * NULL: none; copied); returns r (NULL-safe; on failure NULL, r freed). */
cairn__jrec *cairn__jrec_result_credit(cairn__jrec *r, double claim, double credit,
                                       const char *team);
/* Credit changed (credit.c): a result's granted credit and its volunteer's
 * totals (cairn__store_credit; row copied). */
cairn__jrec *cairn__jrec_credit(const cairn__store_credit_row *row);
/* The team ledger moved (team.c): a team's totals, and the team result
 * idx's credit counts for (cairn__store_team_credit; row and name copied). */
cairn__jrec *cairn__jrec_team_credit(const cairn__store_team_row *row);
/* Accounts (0024_accounts.sql; strings copied): a new account's row; its
 * key's hash replaced; its credit totals (row's id and totals); volunteer
 * vol attached to account (0: none). */
cairn__jrec *cairn__jrec_account(const cairn__store_account_row *row);
cairn__jrec *cairn__jrec_account_key(int64_t id, const char *key_hash);
cairn__jrec *cairn__jrec_account_credit(const cairn__store_account_row *row);
cairn__jrec *cairn__jrec_volunteer_account(int64_t vol, int64_t account);
/* A change of a team of accounts or of a session: its payload p, made by
 * store_people.h's constructors (taken; NULL: out of memory). */
struct cairn__prec;
cairn__jrec *cairn__jrec_people(struct cairn__prec *p);
/* A change of tasks that size themselves: its payload p, made by
 * store_sizing.h's constructors (taken; NULL: out of memory). */
struct cairn__zrec;
cairn__jrec *cairn__jrec_sizing(struct cairn__zrec *p);
/* The outcome of result idx changed ("valid", "invalid", ...). */
cairn__jrec *cairn__jrec_outcome(int64_t idx, const char *outcome);

/* Frees a record that was never put. NULL is fine. */
void cairn__jrec_free(cairn__jrec *r);

#endif
