/* ban.c — a volunteer's ban in bounded steps (core.h, "cairn__core_ban";
 * docs/accountability.md, "Banning a volunteer"): the mark, then slices of
 * its results found through its index (mvol.did), then the end; each step
 * under its own hold of c->lock and in its own journal group, durable
 * before the next. The core's transitions it uses live in core.c
 * (cairn__ban_mark, cairn__ban_tasks).
 */
#include "server/core/core.h"
#include "server/dist/dist.h"
#include "server/store/journal.h"

#include <stdlib.h>
#include <time.h>

int cairn__ban_open(cairn__core *c) { return (c->ban = calloc(1, sizeof *c->ban)) ? 0 : -1; }

void cairn__ban_close(cairn__core *c) {
  free(c->ban);
  c->ban = NULL;
}

void cairn__ban_set_slice(cairn__core *c, uint32_t slice) { c->ban->slice = slice; }

void cairn__ban_begin(cairn__core *c, mvol *bad) {
  bad->ban_left = 1;
  c->ban->total++;
}

void cairn__ban_load_vol(mvol *v, int pending) { v->ban_left = pending != 0; }

void cairn__ban_counts(const cairn__core *c, uint64_t *bans, uint64_t *slices,
                       uint64_t *hold_max_ns) {
  *bans = c->ban->total;
  *slices = c->ban->slices_total;
  *hold_max_ns = c->ban->hold_max_ns;
}

void cairn__ban_reset_hold(cairn__core *c) { c->ban->hold_max_ns = 0; }

cairn_status cairn__ban_info_of(cairn__core *c, int64_t id, uint32_t i, cairn__ban_info *out,
                                cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  const mvol *v = cairn__vol_find_locked(c, id);
  if (!v)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)id);
  else
    *out = (cairn__ban_info){.pending = v->ban_left, .indexed = v->did != NULL,
                             .entries = v->ndid,
                             .job = i < v->ndid ? (int64_t)v->did[i].job + 1 : 0,
                             .task = i < v->ndid ? v->did[i].task : 0};
  cairn__core_unlock(c);
  return st;
}

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Ends a ban's step that took the lock at t0: counts its hold, releases
 * the lock (sealing the step's group); the sequence to wait for. */
static uint64_t step_end(cairn__core *c, uint64_t t0) {
  uint64_t held = now_ns() - t0;
  if (held > c->ban->hold_max_ns)
    c->ban->hold_max_ns = held;
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return seq;
}

/* Drops v's entries of deleted jobs (not during its ban: ban_next counts
 * entries). O(its entries), once per doubling of its array. */
static void compact(const cairn__core *c, mvol *v) {
  uint32_t n = 0;
  for (uint32_t i = 0; !v->banned && i < v->ndid; i++)
    if (v->did[i].job < c->njobs && c->jobs[v->did[i].job])
      v->did[n++] = v->did[i];
  if (!v->banned)
    v->ndid = n;
}

int cairn__ban_note(const cairn__core *c, mvol *v, const mjob *j, uint32_t task) {
  if (v->banned && !v->ban_left)
    return 0; /* its ban is over: nothing reads the index any more */
  if (v->ndid == v->capdid)
    compact(c, v);
  if (v->ndid == v->capdid) {
    uint32_t ncap = v->capdid ? 2 * v->capdid : 16;
    void *nd = ncap > v->capdid ? realloc(v->did, ncap * sizeof *v->did) : NULL;
    if (!nd)
      return -1;
    v->did = nd;
    v->capdid = ncap;
  }
  v->did[v->ndid].job = (uint32_t)(j->id - 1);
  v->did[v->ndid++].task = task;
  return 0;
}

/* One slice: the next CAIRN__BAN_FILES buckets of the file table (its
 * holdings forgotten), and the entries [bad->ban_next, + K) of bad's
 * index, run by run of the same job, under one hold of the lock. *done
 * set when neither had any left: then the ban ends (J_BAN_DONE, the index
 * freed). buf holds k.
 * O(k × results of a round) + the re-queue of what it discredits +
 * cairn__dist_forget_step's. */
static cairn_status slice(cairn__core *c, mvol *bad, uint32_t k, uint32_t *buf,
                          cairn__ban_tally *tl, int *done, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  uint64_t t0 = now_ns();
  int forgot = cairn__dist_forget_step(c, bad, CAIRN__BAN_FILES);
  uint32_t from = bad->ban_next, end = bad->ndid - from > k ? from + k : bad->ndid;
  if ((*done = forgot && from >= bad->ndid)) {
    cairn__journal_put(c->journal, cairn__jrec_ban_done(bad->id));
    free(bad->did);
    bad->did = NULL;
    bad->ndid = bad->capdid = bad->ban_next = 0;
    bad->ban_left = 0;
  }
  for (uint32_t i = from; i < end && st == CAIRN_OK;) {
    uint32_t job = bad->did[i].job, n = 0;
    for (; i < end && bad->did[i].job == job; i++)
      buf[n++] = bad->did[i].task;
    mjob *j = job < c->njobs ? c->jobs[job] : NULL; /* NULL: deleted */
    if (j)
      st = cairn__ban_tasks(c, j, bad->id, buf, n, tl, err);
  }
  if (!*done && st == CAIRN_OK) {
    bad->ban_next = end;
    c->ban->slices_total++;
    CAIRN_DEBUG(&c->log, "ban of volunteer %lld: results %u to %u of %u", (long long)bad->id,
                from, end, bad->ndid);
  }
  uint64_t seq = step_end(c, t0);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

/* Runs bad's slices from bad->ban_next to the end. */
static cairn_status slices(cairn__core *c, mvol *bad, cairn__ban_tally *tl, cairn_error *err) {
  pthread_mutex_lock(&c->lock);
  uint32_t k = c->ban->slice ? c->ban->slice : CAIRN__BAN_SLICE;
  cairn__core_unlock(c);
  uint32_t *buf = malloc(k * sizeof *buf);
  if (!buf)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status st = CAIRN_OK;
  for (int done = 0; !done && st == CAIRN_OK;) {
    if (__atomic_load_n(&c->ban->stop, __ATOMIC_RELAXED))
      st = cairn__error_set(err, CAIRN_EIO, "the master is stopping: the ban of volunteer %lld "
                           "is finished when it starts again", (long long)bad->id);
    else
      st = slice(c, bad, k, buf, tl, &done, err);
  }
  free(buf);
  return st;
}

void cairn__core_stop_bans(cairn__core *c) { __atomic_store_n(&c->ban->stop, 1, __ATOMIC_RELAXED); }

cairn_status cairn__core_ban(cairn__core *c, int64_t id, const char *reason, json_t **report,
                             cairn_error *err) {
  *report = NULL;
  pthread_mutex_lock(&c->lock);
  uint64_t t0 = now_ns();
  mvol *bad = id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
  cairn_status st = !bad        ? cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld",
                                                  (long long)id)
                    : bad->banned ? cairn__error_set(err, CAIRN_ECONFLICT,
                                                    "volunteer %lld is already banned", (long long)id)
                                  : CAIRN_OK;
  if (st == CAIRN_OK) {
    cairn__ban_mark(c, bad, reason ? reason : "");
    bad->ban_next = 0;
  }
  uint64_t seq = step_end(c, t0);
  if (st != CAIRN_OK || (st = cairn__journal_wait(c->journal, seq, err)) != CAIRN_OK)
    return st;
  cairn__ban_tally tl = {0, 0, 0, json_array()};
  if (!tl.ids)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  if ((st = slices(c, bad, &tl, err)) == CAIRN_OK) {
    *report = json_pack("{s:I, s:I, s:I, s:I, s:O}", "volunteer", (json_int_t)id,
                        "results_invalidated", (json_int_t)tl.invalidated, "tasks_requeued",
                        (json_int_t)tl.requeued, "descendants_requeued", (json_int_t)tl.tainted,
                        "requeued", tl.ids);
    CAIRN_WARN(&c->log, "volunteer %lld banned: %lld results invalid, %lld tasks and %lld "
               "descendants re-queued", (long long)id, (long long)tl.invalidated,
               (long long)tl.requeued, (long long)tl.tainted);
  }
  json_decref(tl.ids);
  return st;
}

cairn_status cairn__core_ban_resume(cairn__core *c, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  for (size_t i = 0; i < c->nvols && st == CAIRN_OK; i++) { /* before serving */
    mvol *bad = c->vols[i];
    if (!bad || !bad->ban_left)
      continue;
    cairn__ban_tally tl = {0, 0, 0, NULL};
    bad->ban_next = 0; /* a slice done before the stop changes nothing again */
    if ((st = slices(c, bad, &tl, err)) == CAIRN_OK)
      CAIRN_WARN(&c->log, "volunteer %lld: its ban, interrupted by a stop, is finished: %lld "
                 "more results invalid, %lld tasks and %lld descendants re-queued",
                 (long long)bad->id, (long long)tl.invalidated, (long long)tl.requeued,
                 (long long)tl.tainted);
  }
  return st;
}
