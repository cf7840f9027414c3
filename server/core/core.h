/* core.h — the master's scheduling core: volunteers, jobs, tasks, leases
 * and their transitions (private to server/; docs/architecture.md maps the
 * modules). This is the one home of the task and lease state machines.
 *
 * Task states ([Ros] §4.3.1 pebble states), with replication R and quorum
 * Q (a task is executed once Q results of distinct volunteers agree byte
 * for byte). Each transition, and the function (core.c) that makes it:
 *
 *   WAITING  -> ELIGIBLE  its last parent is DONE (release_children, from
 *                         accept); in the policy's ready set (enqueue)
 *   ELIGIBLE -> ELIGIBLE  allocated while it wants more copies
 *               / RUNNING otherwise (allocate_locked, then replan)
 *   RUNNING/ELIGIBLE
 *            -> DONE      Q agreeing results exist, 1 when the round runs once
 *                         (trust.c) (cairn__core_result, accept); its
 *                         children lose a pending parent
 *            -> ELIGIBLE  it wants copies again: disagreement, exit != 0,
 *                         a lease expired or revoked (replan, from
 *                         cairn__core_result, cairn__core_expire, ban)
 *            -> FAILED    max_attempts allocations in its round and none
 *                         out (replan); its job is FAILED (job_finish_check)
 *   any      -> WAITING / ELIGIBLE in a new round (results discarded): the
 *                         ban of a volunteer it relied on, or of an
 *                         ancestor's (cairn__core_ban, new_round); the
 *                         re-check of its (or an ancestor's) unreplicated
 *                         result when that volunteer's trust resets
 *                         (trust.c, cairn__core_requeue)
 *
 * Copies wanted (replan): R before the first result of a round (1 when the
 * round runs once on a trusted volunteer: mrep.solo, trust.c), afterwards
 * Q - (largest number of agreeing results), less the leases out.
 *
 * Lease states (journal names "leased", "returned", "expired"):
 *   leased -> returned    its result arrived (cairn__core_result, drop_lease)
 *   leased -> expired     its deadline passed (cairn__core_expire) or its
 *                         volunteer was banned (cairn__core_ban)
 *   leased -> leased      a heartbeat naming it moves the deadline
 *                         (cairn__core_heartbeat)
 * A result for a lease that is not leased any more gets CAIRN_ECONFLICT and
 * changes nothing (no_lease).
 *
 * Job states: RUNNING -> DONE (every task DONE) or FAILED (a task FAILED),
 * and back to RUNNING when a ban re-queues its tasks (job_finish_check).
 *   RUNNING -> CANCELLED  an operator cancelled it (cairn__core_cancel,
 *                         life.c): no allocation any more; its task states
 *                         stay as they were; each lease out ends (expired)
 *                         when its volunteer next sends a heartbeat (its
 *                         index is left out of "extended", so the worker
 *                         kills the app) or a result (discarded, 409), or
 *                         at its deadline. Final: nothing brings it back.
 *   DONE/FAILED/CANCELLED -> deleted  (cairn__core_delete, life.c; a
 *                         job that runs or has leases out is cancelled
 *                         first, whatever its state): the job leaves
 *                         the core (jobs[id-1] = NULL) once no lease of it
 *                         is out; its store rows go in the commit thread.
 *                         The id is never reused.
 * Cancelling a cancelled job changes nothing; cancelling a DONE or FAILED
 * one is CAIRN_ECONFLICT.
 *
 * Priority: among jobs not cancelled with ELIGIBLE tasks (c->runq, life.c),
 * allocation serves the highest priority first, ties by id (submission
 * order); within a job its policy decides.
 *
 * Locking: every transition happens under c->lock and puts journal records
 * (journal.h); a caller that acknowledges something waits for their batch
 * after releasing the lock (group commit). Memory runs ahead of the store
 * only by batches nobody has been told about yet. The distribution module
 * (dist.h) is called under the same lock.
 */
#ifndef CAIRN_CORE_H
#define CAIRN_CORE_H

#include "server/core/ban.h"
#include "server/core/limits.h"
#include "server/dist/dist.h"
#include "server/model/state.h"
#include "server/trust/trust.h"
#include "server/trust/validate.h"


/* wake.c: releases c->lock, then gives c->hander the offers handed under
 * it (at most CAIRN__HANDOFF_MAX calls), tells c->waker the tasks noted
 * eligible under it (at most CAIRN__WAKE_APPS + 1 calls) and c->job_waker
 * the jobs whose state changed (at most CAIRN__WAKE_JOBS calls). */
void cairn__core_unlock_wake(cairn__core *c);

/* ---- wake.c: eligible tasks told to the held work requests ---- */
/* Under the lock: n tasks of app became eligible. O(CAIRN__WAKE_APPS). */
void cairn__wake_note(cairn__core *c, const char *app, uint32_t n);
/* Under the lock: job's state changed (it finished, was cancelled, ran
 * again, or was deleted): wakes cairn__core_wait_job's waiters and notes
 * it for the job waker. O(CAIRN__WAKE_JOBS). */
void cairn__job_changed(cairn__core *c, int64_t job);
/* Sets the wakers (before serving), called after the unlock: waker with
 * an app's hash (0: any app) and how many of its tasks became eligible;
 * job_waker with a job whose state changed (0: any job). */
void cairn__core_set_waker(cairn__core *c, void (*waker)(void *ud, uint64_t app, unsigned n),
                           void (*job_waker)(void *ud, int64_t job), void *ud);
/* ---- handoff.c: a new job's tasks straight to held work requests ---- */
/* Under the lock, after job j's record is put: claims up to
 * CAIRN__HANDOFF_MAX held work requests that run j's app (c->claimer) and
 * allocates each one task (cairn__allocate_locked for its volunteer), in
 * this hold's journal group; the offers go out after the unlock
 * (cairn__core_unlock_wake). O(CAIRN__HANDOFF_MAX · (CAIRN__WAITERS_PASS +
 * one allocation)). Returns how many got a task. */
uint32_t cairn__handoff_locked(cairn__core *c, const mjob *j);
/* Sets the handoff's two ends (before serving; NULL: none). */
void cairn__core_set_handoff(cairn__core *c, int64_t (*claimer)(void *ud, uint64_t app,
                                                                int64_t *vol),
                             void (*hander)(void *ud, int64_t claim, json_t *offer,
                                            uint64_t seq));
/* Waits until journal record seq is durable (a handed offer's answer). */
cairn_status cairn__core_durable(cairn__core *c, uint64_t seq, cairn_error *err);
/* The hashes of the apps volunteer vol declared, at most max into out;
 * returns how many it declared (0 when unknown or banned). Takes the lock;
 * O(apps). */
int cairn__core_app_hashes(cairn__core *c, int64_t vol, uint64_t *out, int max);

/* fail_fd (or -1): written to when the master fails (journal.h). */
/* Opens the store at db_path (files next to it in DB.files/), rebuilds the
 * in-memory state from it and starts the commit thread. family: the ATAF
 * family of a new database ("phisharp" when NULL); an existing database keeps
 * the family it was created with, and naming another one is an error. */
cairn__core *cairn__core_open(const char *db_path, int durable, const char *family,
                             const cairn__logger *log, int fail_fd, cairn_error *err);
/* Chooses the broadcast planner (cairn__bplan_algorithms()); CAIRN_EINVAL
 * naming the choices when unknown. */
cairn_status cairn__core_set_bplan(cairn__core *c, const char *algo, cairn_error *err);
/* CAIRN_OK while the master works; CAIRN_EFAILED (reason in err) once its
 * journal has failed (journal.h): nothing is acknowledged after that. */
cairn_status cairn__core_health(cairn__core *c, cairn_error *err);
/* Stops the commit thread after the last batch and closes the store. */
void cairn__core_close(cairn__core *c);

/* ---- operations (each takes the lock itself) ---- */
cairn_status cairn__core_register(cairn__core *c, const char *name, const char *cluster,
                                  char **apps, int napps, int slots, const char *peer_url,
                                  int64_t *id, char token[65], cairn_error *err);
/* The same, with team (checked by cairn__team_valid; NULL: none). */
cairn_status cairn__core_register_team(cairn__core *c, const char *name, const char *cluster,
                                       char **apps, int napps, int slots, const char *peer_url,
                                       const char *team, int64_t *id, char token[65],
                                       cairn_error *err);
/* Volunteer id's team becomes team (checked by cairn__team_valid; NULL:
 * none). Its credit stays with the teams it was earned in (team.c); what it
 * earns next counts for team. CAIRN_ENOTFOUND, CAIRN_ECONFLICT for a
 * banned volunteer, a host of an account (its account's team decides,
 * teams.h) or a team of accounts' name or key; no change journals nothing.
 * Takes the lock; O(1). */
cairn_status cairn__core_set_team(cairn__core *c, int64_t id, const char *team, cairn_error *err);
/* Volunteer id's worker said how it runs program apps: "bwrap" or "none"
 * (docs/protocol.md, "sandbox"; NULL: not said). Kept in memory only, shown
 * by GET /v1/volunteers. Takes the lock; O(1). */
void cairn__core_set_sandbox(cairn__core *c, int64_t id, const char *sandbox);
/* Counts bytes of file sha256 the master sent. */
void cairn__core_served_by_master(cairn__core *c, const char *sha256, uint64_t bytes);
/* The id of the volunteer holding token (*vol); CAIRN_EAUTH for an
 * unknown token, CAIRN_EFORBIDDEN for a banned volunteer. O(1). */
cairn_status cairn__core_auth(cairn__core *c, const char *token, int64_t *vol, cairn_error *err);

/* Each call below takes a volunteer id from cairn__core_auth and checks it
 * again under the lock (CAIRN_EFORBIDDEN once banned). A worker's report r
 * (a work or heartbeat body, checked by cairn__report_parse; NULL: none) is
 * applied in the same lock acquisition as the rest of the call: failed
 * sources, holdings, bytes served, its peer URL, measured downloads. */

/* Applies r, then allocates the best eligible task of an app the volunteer
 * runs (restricted to apps[] when napps > 0). *resp is the /v1/work body,
 * or NULL when none; then *retry_ms > 0 when a task waits for a copy of its
 * broadcast input landing in the volunteer's cluster (ask again that soon),
 * or CAIRN__QUAR_RETRY_MS for a volunteer in quarantine (no task at all).
 * Only tasks whose request fits what the volunteer's offer leaves free are
 * handed out (fit.h). Cost: the report's, plus, for each of the E jobs with
 * eligible tasks (c->runq, walked in priority order; jobs without work are
 * not visited) whose app it runs, at most 32 policy picks (put back when
 * they do not fit), 32 parked tasks given back and O(its distinct requests
 * <= 64). */
cairn_status cairn__core_work(cairn__core *c, int64_t vol, const cairn__report *r, char **apps,
                              int napps, json_t **resp, int *retry_ms, cairn_error *err);
/* What a volunteer may read (GET /v1/files, GET /v1/tasks/{key}/output):
 * CAIRN_OK when file sha256 is an input of a task it holds a lease on, or
 * task key is a parent of one; else CAIRN_EFORBIDDEN. O(leases the
 * volunteer holds × inputs or parents of their tasks). */
cairn_status cairn__core_may_read_file(cairn__core *c, int64_t vol, const char *sha256,
                                       cairn_error *err);
cairn_status cairn__core_may_read_output(cairn__core *c, int64_t vol, int64_t key,
                                         cairn_error *err);
/* What a result carries besides its output: the tail of standard error and
 * the output files it names (uploaded before; sorted by name here). */
typedef struct cairn__result_extra {
  const void *err_tail;
  size_t err_len;
  cairn__output_file *files;
  size_t nfiles;
  double cpu_seconds; /* its claim (cairn__result_cpu_parse), when has_cpu */
  int has_cpu;
  cairn__usage usage; /* what the worker measured (feature "usage"; size.h), when has_usage */
  int has_usage;
} cairn__result_extra;
/* Records a result; reason: why it failed (cairn__reason_valid), or NULL to
 * derive "exit N" from a non-zero exit_status; x may be NULL (no stderr, no
 * files). Cost under the lock: O(children of the task) (plus the
 * validator's, validate.h), and when the result resets a volunteer's trust,
 * the re-check of its ring (trust.c). Its digest is cairn__digest_result_files() of the output and the files.
 * With next != NULL, also allocates the volunteer's next task in the same
 * batch (*next = the /v1/work body, or NULL when none). */
cairn_status cairn__core_result(cairn__core *c, int64_t vol, int64_t idx, int exit_status,
                                const char *reason, const void *output, size_t len,
                                cairn__result_extra *x, json_t **next, cairn_error *err);
/* The pieces of cairn__core_result and cairn__core_work that batches
 * (batch.c) run several times under one hold of the lock. The digest of a
 * result (cairn__digest_result_files of output and files), outside the lock:
 * O(len + files log files). */
void cairn__result_digest(const void *output, size_t len, const cairn__result_extra *x,
                          char digest[65]);
/* Under the lock, v in good standing: records the result of lease idx as
 * cairn__core_result does (same errors, same journal records; nothing is
 * changed when it fails but a cancelled job's lease, which ends). O(today's
 * result: the validator's comparison, the task's replicas, its children). */
cairn_status cairn__result_locked(cairn__core *c, mvol *v, int64_t idx, int exit_status,
                                  const char *reason, const void *output, size_t len,
                                  cairn__result_extra *x, const char *digest, cairn_error *err);
/* Under the lock: allocates one task for v as cairn__core_work does (the
 * /v1/work body, or NULL with *st CAIRN_OK when none; *waiting as its
 * retry). ahead: the task is taken ahead of a free slot, and must fit v's
 * whole offer instead of what its leases leave free. */
json_t *cairn__allocate_locked(cairn__core *c, mvol *v, char **apps, int napps, int ahead,
                               int *waiting, cairn_status *st, cairn_error *err);

/* How soon a worker waiting for a copy of a broadcast input should ask
 * again, in ms (under the lock). O(1). */
int cairn__copy_retry_ms_locked(const cairn__core *c);

/* ---- batch.c: several tasks or results in one request (feature "batch") ---- */
/* One result of a batch: in, the checked body (borrowed); out, st and err. */
typedef struct cairn__batch_result {
  int64_t idx;
  int exit_status;
  const char *reason;          /* NULL: "exit N" from exit_status */
  const void *output;
  size_t len;
  cairn__result_extra x;
  char digest[65];             /* filled by cairn__core_results, outside the lock */
  cairn_status st;             /* CAIRN_OK: accepted */
  cairn_error err;
} cairn__batch_result;
/* Takes up to max (1 to CAIRN_MAX_BATCH) tasks for volunteer vol, as
 * cairn__core_work takes one, in one hold of the lock (one journal group):
 * while its leases fit its offer, as today; beyond that (tasks run after
 * its free slots: a worker's prefetch) each must fit the whole offer, and
 * the volunteer holds at most its slots + CAIRN_MAX_PREFETCH leases.
 * *tasks: a new array of /v1/work bodies (maybe empty). Cost under the
 * lock: max × cairn__core_work's. */
cairn_status cairn__core_work_many(cairn__core *c, int64_t vol, const cairn__report *r,
                                   char **apps, int napps, unsigned max, json_t **tasks,
                                   int *retry_ms, cairn_error *err);
/* Applies the n (<= CAIRN_MAX_BATCH) results of res[] for volunteer vol in
 * one hold of the lock (one journal group, one fsync), each as
 * cairn__core_result would (res[i].st, res[i].err: one refused entry does
 * not stop the others), then takes up to next (0 to CAIRN_MAX_BATCH) tasks
 * as cairn__core_work_many (*tasks; NULL when next is 0), and waits for the
 * batch. CAIRN_OK unless the volunteer is refused or the journal failed
 * (then nothing was acknowledged). Cost under the lock: O(n × one result +
 * next × one allocation); the digests are computed before taking it. */
cairn_status cairn__core_results(cairn__core *c, int64_t vol, cairn__batch_result *res, size_t n,
                                 unsigned next, json_t **tasks, cairn_error *err);
/* Applies r, then extends the volunteer's leases: those r lists in
 * "running" when it has the field (a worker names the tasks it runs, so a
 * lease whose work answer never reached it is left to expire), else all of
 * them. O(report + leases held × running listed). */
cairn_status cairn__core_heartbeat(cairn__core *c, int64_t vol, const cairn__report *r,
                                   json_t **resp, cairn_error *err);
/* Applies a verdict on pair p (core.c; the command validator's thread,
 * validate.h, calls it as c->calls.verdict), under c->lock: O(nres²) plus an
 * accept. A pair whose job, round or results are gone changes nothing. */
void cairn__core_verdict(cairn__core *c, const cairn__vpair *p, int agree);
/* Re-queues tasks seeds[0..n) of job j (done ones whose accepted result is
 * discredited) in new rounds, and every descendant that consumed a
 * re-queued output (the ban's path, core.c): O(Σ (deg(v) + 1) · log n)
 * over those tasks v (marks in a map, the walk, the policy's reset and
 * ready, policy.h), never the job's other tasks. *requeued, *tainted (may be
 * NULL) grow by the tasks and the descendants; ids (may be NULL) gets
 * {"job", "task"} for each seed. CAIRN_ENOMEM with err. */
cairn_status cairn__core_requeue(cairn__core *c, mjob *j, const uint32_t *seeds, uint32_t n,
                                 int64_t *requeued, int64_t *tainted, json_t *ids,
                                 cairn_error *err);
/* ---- a lost kept output (keep.c finds it: server/dist/dist.h) ---- */
/* Makes DONE task parent of j eligible again in a new round (its results
 * keep their outcomes: they were right, only their files are gone), and
 * its children that are not DONE wait for it again (their leases end,
 * their results are tainted). The audit shows the new allocation. Cost:
 * O((children of parent + 1) · (their degrees + 1) · log n): the policy
 * re-opens parent and resets those children in place (policy.h), nothing
 * else of the job is looked at. */
cairn_status cairn__core_recompute(cairn__core *c, mjob *j, uint32_t parent, cairn_error *err);

/* Takes ownership of spec. Under the lock: O(tasks + edges) for the tasks'
 * states and the job's place in the queue, plus the handoff (at most
 * CAIRN__HANDOFF_MAX allocations, handoff.c) in the same journal group. */
cairn_status cairn__core_submit(cairn__core *c, cairn__jobspec *spec, int64_t *job_id,
                                cairn_error *err);
/* Records a file already moved to files_dir/sha256. */
cairn_status cairn__core_add_file(cairn__core *c, const char *sha256, int64_t size, int *existed,
                                  cairn_error *err);
int cairn__core_has_file(cairn__core *c, const char *sha256, int64_t *size);
/* Expires every lease whose deadline is <= now. Returns how many. */
int cairn__core_expire(cairn__core *c, int64_t now);
/* Waits until job is done, failed or cancelled, or timeout_ms passes (<0:
 * forever). CAIRN_OK with *state JS_DONE, JS_FAILED or JS_CANCELLED (durable); CAIRN_ETIMEOUT
 * (*state JS_RUNNING); CAIRN_ENOTFOUND; CAIRN_EFAILED (the master failed). */
cairn_status cairn__core_wait_job(cairn__core *c, int64_t job, long timeout_ms, int *state,
                                  cairn_error *err);
/* ---- a job's life (life.c); each takes the lock, journals, and waits for
 * the batch after releasing it ---- */
/* Cancels job id (see the job states above). *out: {"job", "state",
 * "leases_out", "already"}. CAIRN_ENOTFOUND, CAIRN_ECONFLICT (finished).
 * O(E) under the lock, E = c->nrunq (it leaves the queue: a memmove). */
cairn_status cairn__core_cancel(cairn__core *c, int64_t id, json_t **out, cairn_error *err);
/* Sets job id's priority. O(E) under the lock, E = c->nrunq (a memmove). */
cairn_status cairn__core_priority(cairn__core *c, int64_t id, int64_t priority, json_t **out,
                                  cairn_error *err);
/* Deletes job id (cancelling it first when it runs or has leases out,
 * whatever its state); purge: its allocations
 * too. CAIRN_ECONFLICT while leases of it are out (the cancel is durable
 * then; they end within one heartbeat period). *out says what went:
 * {"job", "purged", "tasks", "tasks_kept", "results", "result_bytes",
 * "allocations", "files", "file_bytes"}. Under the lock: O(1) to detach (O(E)
 * if it was queued), O(1) per journal step, then O(files removed) to forget
 * them; the job's memory is freed after the lock; the store's work is the
 * commit thread's, in transactions of at most 1,024 tasks' rows each (their
 * results, dependencies, allocations when purged), then one for the job's
 * file list and files. */
cairn_status cairn__core_delete(cairn__core *c, int64_t id, int purge, json_t **out,
                                cairn_error *err);
/* Finishes the deletions a stop interrupted (jobs the store marks deleting
 * or purging), before the master serves. */
cairn_status cairn__core_resume_deletes(cairn__core *c, cairn_error *err);
/* Deletes finished (done, failed, cancelled) jobs that finished at least
 * keep_seconds before now, with no lease out; looks at at most 1,024 jobs
 * per call under the lock (a cursor goes round). Returns how many. */
int cairn__core_retain(cairn__core *c, int64_t now, int64_t keep_seconds);
/* life.c: keeps j's place in c->runq true after its state, eligible count
 * or priority changed (under the lock). O(log E) to find, O(E) memmove. */
void cairn__jobq_update(cairn__core *c, mjob *j);
/* Makes room in c->runq for one more live job. 0, or -1 out of memory. */
int cairn__jobq_reserve(cairn__core *c);

/* Writes a trivial record through the commit path and waits for it. */
cairn_status cairn__core_probe_write(cairn__core *c, cairn_error *err);

/* load.c: rebuild state from the store (before the commit thread starts). */
cairn_status cairn__core_load(cairn__core *c, cairn_error *err);
/* Shared helpers. */
void cairn__job_free(mjob *j);
void cairn__vol_free(mvol *v);
int cairn__job_start_policy(mjob *j, cairn_error *err);
/* (Re)creates the job's policy state from the task states: executed for DONE
 * tasks in topological order, ready for ELIGIBLE ones. O(n + m): at
 * start-up only (load.c); a re-queue takes tasks back in place (reset). */
int cairn__job_rebuild_policy(mjob *j, cairn_error *err);
/* Adds a result to a task's replica record (allocating it). 0 or -1 (OOM). */
int cairn__rep_add_result(mtask *t, int64_t idx, int64_t vol, const char *digest, int ok,
                          int outcome);
int cairn__rep_add_vol(mtask *t, int64_t vol);
/* volunteers.c, under the lock: applies v's report r (NULL: none). */
void cairn__vol_report(cairn__core *c, mvol *v, const cairn__report *r);
/* Records that v holds lease idx. 0, or -1 out of memory. */
int cairn__vol_add_active(mvol *v, int64_t idx);
/* The leases v may hold at once (volunteers.c, docs/security.md "Leases"):
 * what it can run, min(its slots, the cores it offers when it stated an
 * offer, CAIRN__LEASE_START + its results not found invalid), plus
 * CAIRN_MAX_PREFETCH ahead. Whatever a volunteer declares or omits, a new
 * one holds at most CAIRN__LEASE_START + CAIRN_MAX_PREFETCH leases, and
 * one more for each result it returns. O(1). */
#define CAIRN__LEASE_START 4
/* A work request refused at the bound asks its volunteer to come back this
 * late (a result of its may free a lease sooner). */
#define CAIRN__LEASE_FULL_RETRY_MS 1000
size_t cairn__vol_lease_bound(const mvol *v);
/* Takes the lock: the work requests volunteer vol may have held at once
 * (waiters.h, "Fairness"): its slots, or fewer, what its lease bound
 * leaves it to take; at least 1 (1 for an unknown volunteer). O(1). */
unsigned cairn__core_hold_cap(cairn__core *c, int64_t vol);
/* Under the lock: the error of a work request from v, at its lease bound
 * (CAIRN_ERATE, naming the bound and its terms). */
cairn_status cairn__vol_lease_full(const mvol *v, cairn_error *err);
/* Under the lock: lease l of v ended unreturned (expired). Costs v its
 * trust (its next results are replicated again) and, once per lease period
 * of l's job, one error in its quarantine window (quarantine.c): a
 * volunteer that takes leases and lets them lapse period after period is
 * quarantined like one whose runs fail. O(1). */
void cairn__vol_lapsed(cairn__core *c, mvol *v, int lease_seconds, int64_t now);
void cairn__rep_free(mrep *r);

int cairn__lease_push(cairn__core *c, int64_t expires, int64_t idx);

#endif
