/* ban.h — a volunteer's ban (ban.c, and the core's transitions it uses in
 * core.c): its own state, the steps, the counters. Private to server/. */
#ifndef CAIRN_SERVER_BAN_H
#define CAIRN_SERVER_BAN_H

#include <jansson.h>

#include "server/model/state.h"

/* ban.c (docs/accountability.md, "Banning a volunteer"). cairn__core_ban
 * bans volunteer id: refuses its token, marks its results invalid,
 * re-queues every task whose accepted result relied on it and every
 * descendant that consumed a re-queued output; *report gets the totals.
 * It runs in steps, each under its own hold of the lock and in its own
 * journal group, each waiting until its group is durable before the next:
 *  1. the mark (cairn__ban_mark): banned, J_BAN (the ban pending in the
 *     store, its holdings deleted there), its leases revoked, out of the
 *     census: O(its leases);
 *  2. slices of at most c->ban_slice (CAIRN__BAN_SLICE, 256) entries of its
 *     index mvol.did (cairn__ban_tasks): O(K × results of a round) to
 *     invalidate and re-name, plus the re-queue of what they re-open
 *     (cairn__core_requeue: O(Σ (deg + 1) · log n) over the re-opened tasks
 *     and their descendants, never a job's other tasks); and the next
 *     CAIRN__BAN_FILES buckets of the file table, whose holdings of it
 *     and copies on their way to it are forgotten in memory
 *     (cairn__dist_forget_step: O(CAIRN__BAN_FILES + those files' copies
 *     under way)). Until then no source decision names it (a banned
 *     holder is never usable);
 *  3. the end: J_BAN_DONE, the index freed: O(1).
 * Nothing scans a job or the volunteers. Re-doing a slice changes nothing
 * (its results are invalid already), so cairn__core_ban_resume (master.c
 * calls it once the core is open and the audit chain started, before
 * serving) finishes the bans the store says are pending from their first
 * entry (O(volunteers) to find them). */
#define CAIRN__BAN_SLICE 256u
#define CAIRN__BAN_FILES 4096u
/* Under the lock: ban counters added to (invalidated, tasks and
 * descendants re-queued; ids gets {job, task} per re-queued task). */
typedef struct cairn__ban_tally {
  int64_t invalidated, requeued, tainted;
  json_t *ids;
} cairn__ban_tally;
void cairn__ban_mark(cairn__core *c, mvol *bad, const char *reason);
/* Under the lock: vol's results in tasks[0..n) of job j (a task may come
 * twice) become invalid; those tasks re-name an honest accepted result or
 * are re-queued. */
cairn_status cairn__ban_tasks(cairn__core *c, mjob *j, int64_t vol, const uint32_t *tasks,
                              uint32_t n, cairn__ban_tally *t, cairn_error *err);
/* Under the lock: v has a result for task of job j (its index entry);
 * -1 out of memory. O(1) amortized: when its array is full, the entries
 * of deleted jobs are dropped first (O(its entries), once per doubling). */
int cairn__ban_note(const cairn__core *c, mvol *v, const mjob *j, uint32_t task);
cairn_status cairn__core_ban_resume(cairn__core *c, cairn_error *err);
cairn_status cairn__core_ban(cairn__core *c, int64_t id, const char *reason, json_t **report,
                             cairn_error *err);

/* The ban's own state (ban.c; c->ban): the results a slice reads (set
 * before serving; 0: CAIRN__BAN_SLICE), bans and slices done since start,
 * the longest hold of the lock by a ban's step since start (ns), and the
 * stop flag (set atomically when the master stops: a ban ends after its
 * slice, pending, finished at the next start). */
typedef struct cairn__ban {
  uint32_t slice;
  uint64_t total, slices_total, hold_max_ns;
  int stop;
} cairn__ban;
/* Makes c->ban. 0, or -1 out of memory. */
int cairn__ban_open(cairn__core *c);
void cairn__ban_close(cairn__core *c);
/* The results a slice reads (0: CAIRN__BAN_SLICE). Before serving. */
void cairn__ban_set_slice(cairn__core *c, uint32_t slice);
/* Under the lock, at the mark: bad's ban begins (pending until its end). */
void cairn__ban_begin(cairn__core *c, mvol *bad);
/* A volunteer read from the store at start-up whose ban is pending. */
void cairn__ban_load_vol(mvol *v, int pending);
/* Counters for /metrics and benchmarks: bans and slices since start, the
 * longest hold of the lock by a step (ns; reset_hold sets it to 0). */
void cairn__ban_counts(const cairn__core *c, uint64_t *bans, uint64_t *slices,
                       uint64_t *hold_max_ns);
void cairn__ban_reset_hold(cairn__core *c);
/* What a ban reads of volunteer id (a copy): whether its ban is pending
 * (banned, not finished: mvol.ban_left), whether it has an index (freed
 * when its ban ends), the index's entries, and entry i's job id and task
 * position (job 0 when i is past the end). CAIRN_ENOTFOUND when there is
 * no such volunteer. Takes the lock; O(1). */
typedef struct cairn__ban_info {
  int pending, indexed;
  uint32_t entries;
  int64_t job;
  uint32_t task;
} cairn__ban_info;
cairn_status cairn__ban_info_of(cairn__core *c, int64_t id, uint32_t i, cairn__ban_info *out,
                                cairn_error *err);
/* The master is stopping: a ban running now ends after its current slice
 * (CAIRN_EIO; it stays pending in the store and cairn__core_ban_resume
 * finishes it at the next start). Any thread; O(1). */
void cairn__core_stop_bans(cairn__core *c);

#endif
