/* life.c — a job's life after submission: its priority and the queue of
 * jobs with work (c->runq), cancel, delete, and retention (core.h has the
 * job state machine).
 *
 * c->runq holds the jobs not cancelled that have ELIGIBLE tasks, ordered by
 * priority (higher first), then id (submission order). allocate_locked
 * (core.c) walks it from the front, so a request looks only at jobs with
 * work. Its capacity is kept at least the number of live jobs
 * (cairn__jobq_reserve at submit and load), so an insertion never allocates.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "server/dist/chunks.h"
#include "server/core/core.h"
#include "server/dist/dist.h"
#include "server/core/outputs.h"
#include "server/core/uploads.h"

/* 1 when a goes before b in the queue. */
static int ahead(const mjob *a, const mjob *b) {
  return a->priority != b->priority ? a->priority > b->priority : a->id < b->id;
}

/* The first position whose job does not go before j. O(log E). */
static size_t position(const cairn__core *c, const mjob *j) {
  size_t lo = 0, hi = c->nrunq;
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    if (ahead(c->runq[mid], j))
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static void jobq_remove(cairn__core *c, mjob *j) {
  size_t at = position(c, j);
  if (at < c->nrunq && c->runq[at] == j) {
    memmove(&c->runq[at], &c->runq[at + 1], (c->nrunq - at - 1) * sizeof *c->runq);
    c->nrunq--;
  }
  j->inq = 0;
}

void cairn__jobq_update(cairn__core *c, mjob *j) {
  /* a FAILED job's eligible tasks still run (the others' results may matter) */
  int want = j->state != JS_CANCELLED && j->counts[TS_ELIGIBLE] > 0;
  if (j->inq == want)
    return;
  if (!want) {
    jobq_remove(c, j);
    return;
  }
  if (c->nrunq == c->caprunq) { /* reserve failed earlier: cannot happen otherwise */
    CAIRN_ERR(&c->log, "job %lld cannot be queued (out of memory)", (long long)j->id);
    return;
  }
  size_t at = position(c, j);
  memmove(&c->runq[at + 1], &c->runq[at], (c->nrunq - at) * sizeof *c->runq);
  c->runq[at] = j;
  c->nrunq++;
  j->inq = 1;
}

int cairn__jobq_reserve(cairn__core *c) {
  if (c->caprunq > c->njobs)
    return 0;
  size_t ncap = c->caprunq ? 2 * c->caprunq : 16;
  mjob **q = realloc(c->runq, ncap * sizeof *q);
  if (!q)
    return -1;
  c->runq = q;
  c->caprunq = ncap;
  return 0;
}

/* Job id, alive, or NULL with err set (under the lock). */
static mjob *job_locked(cairn__core *c, int64_t id, cairn_status *st, cairn_error *err) {
  mjob *j = id >= 1 && (size_t)id <= c->njobs ? c->jobs[id - 1] : NULL;
  if (!j)
    *st = cairn__error_set(err, CAIRN_ENOTFOUND, "no job %lld", (long long)id);
  return j;
}

/* Cancels running job j (under the lock). O(E): it leaves the queue. */
static void cancel_locked(cairn__core *c, mjob *j) {
  j->state = JS_CANCELLED;
  j->finished = cairn__now();
  cairn__jobq_update(c, j);
  cairn__journal_put(c->journal, cairn__jrec_job_state(j->id, cairn__jstate_name[JS_CANCELLED],
                                                      j->finished));
  cairn__job_changed(c, j->id);
  CAIRN_INFO(&c->log, "job %lld cancelled (%u leases out)", (long long)j->id, j->nleases);
}

/* Releases the lock, then waits for every record put so far (a refusal
 * may have journaled too: delete's cancel). Returns st unless the journal
 * failed. */
static cairn_status finish(cairn__core *c, cairn_status st, cairn_error *err) {
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  cairn_error werr = {0};
  if (cairn__journal_wait(c->journal, seq, &werr) != CAIRN_OK) {
    if (err)
      *err = werr;
    return werr.status;
  }
  return st;
}

cairn_status cairn__core_cancel(cairn__core *c, int64_t id, json_t **out, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  *out = NULL;
  pthread_mutex_lock(&c->lock);
  mjob *j = job_locked(c, id, &st, err);
  int already = j && j->state == JS_CANCELLED;
  if (j && (j->state == JS_DONE || j->state == JS_FAILED))
    st = cairn__error_set(err, CAIRN_ECONFLICT, "job %lld has already finished (%s): nothing to "
                         "cancel", (long long)id, cairn__jstate_name[j->state]);
  else if (j && !already)
    cancel_locked(c, j);
  if (st == CAIRN_OK)
    *out = json_pack("{s:I, s:s, s:i, s:b}", "job", (json_int_t)id, "state", "cancelled",
                     "leases_out", (int)j->nleases, "already", already);
  st = finish(c, st, err);
  if (st != CAIRN_OK) {
    json_decref(*out);
    *out = NULL;
  }
  return st;
}

cairn_status cairn__core_priority(cairn__core *c, int64_t id, int64_t priority, json_t **out,
                                  cairn_error *err) {
  cairn_status st = CAIRN_OK;
  *out = NULL;
  pthread_mutex_lock(&c->lock);
  mjob *j = job_locked(c, id, &st, err);
  if (j) {
    int queued = j->inq;
    if (queued)
      jobq_remove(c, j);
    j->priority = priority;
    if (queued)
      cairn__jobq_update(c, j);
    cairn__journal_put(c->journal, cairn__jrec_priority(id, priority));
    *out = json_pack("{s:I, s:I, s:s}", "job", (json_int_t)id, "priority", (json_int_t)priority,
                     "state", cairn__jstate_name[j->state]);
  }
  st = finish(c, st, err);
  if (st != CAIRN_OK) {
    json_decref(*out);
    *out = NULL;
  }
  return st;
}

/* Takes job j (no lease out) out of the core (under the lock, O(E) to leave
 * the queue, else O(1)); the caller owns it then. */
static void detach_locked(cairn__core *c, mjob *j) {
  if (j->inq)
    jobq_remove(c, j);
  c->jobs[j->id - 1] = NULL;
  cairn__job_changed(c, j->id);
}

/* A stored file a deletion step may remove: one of the job's input files
 * (key 0), or an output file of the accepted result of its task `key`. */
typedef struct fref {
  int64_t key;
  char sha256[65];
} fref;

static int by_key(const void *a, const void *b) {
  const fref *x = a, *y = b;
  return x->key != y->key ? (x->key > y->key) - (x->key < y->key) : strcmp(x->sha256, y->sha256);
}

static int by_sha(const void *a, const void *b) {
  return strcmp(((const fref *)a)->sha256, ((const fref *)b)->sha256);
}

/* Marks (or unmarks) m[0..n) dying (under the lock, O(n)). */
static void set_dying(cairn__core *c, const fref *m, size_t n, int dying) {
  for (size_t i = 0; i < n; i++)
    cairn__dist_set_dying(c->dist, m[i].sha256, dying);
}

/* Under the lock: forgets the files the store removed in the last step
 * (rep->removed[from..]) and removes their bytes, then unmarks m[0..n)
 * (sorted by sha256), the ones that step could remove. O((removed + n) ×
 * log n). A removed file it finds no longer dying although marked was
 * uploaded again meanwhile: its row is back, so are its bytes. One never
 * marked (an out-voted replica's output, or any file when resuming before
 * serving) goes too: its row is gone. A file a live lease holds as an
 * unclaimed upload keeps its bytes (uploads.h). */
static void drop_removed(cairn__core *c, const cairn__store_delete_report *rep, size_t from,
                         const fref *m, size_t n) {
  char path[4200];
  for (size_t i = from; i < rep->nremoved; i++) {
    fref key = {0};
    memcpy(key.sha256, rep->removed[i], 65);
    if (!cairn__dist_file_dying(c->dist, rep->removed[i]) &&
        !(n && bsearch(&key, m, n, sizeof *m, by_sha)))
      cairn__dist_set_dying(c->dist, rep->removed[i], 1);
    if (!cairn__dist_remove_file(c->dist, rep->removed[i]) ||
        cairn__uploads_held(c, rep->removed[i])) /* its lease's end removes it (uploads.h) */
      continue;
    snprintf(path, sizeof path, "%s/%s", c->files_dir, rep->removed[i]);
    if (unlink(path) && errno != ENOENT)
      CAIRN_WARN(&c->log, "cannot remove %s: %s", path, strerror(errno));
    cairn__chunks_remove(c->files_dir, rep->removed[i]);
  }
  set_dying(c, m, n, 0); /* the ones something else still names */
}

/* Deletes job id's rows from the store, task keys [lo, hi) DELETE_CHUNK at
 * a time: one batch (one transaction) each, so that other requests'
 * batches commit in between; then the end, which removes the files no job
 * names any more among the job's. The output files of a step's results
 * (outs[0..nouts), sorted by key; the step's at most DELETE_CHUNK ×
 * CAIRN_MAX_OUTPUT_FILES), then the job's files (ins[0..nins)) are marked
 * dying while the store may remove them (dist.h); the removed ones then
 * leave the distribution records and DB.files/ (drop_removed). Resuming
 * before serving, both are empty. */
static cairn_status store_delete(cairn__core *c, int64_t id, int purge, int64_t lo, int64_t hi,
                                 fref *ins, size_t nins, fref *outs, size_t nouts,
                                 cairn__store_delete_report *rep, cairn_error *err) {
  enum { DELETE_CHUNK = 1024 };
  cairn_status st = CAIRN_OK;
  size_t p = 0;
  for (int64_t a = lo; st == CAIRN_OK && (a < hi || a == lo); a += DELETE_CHUNK) {
    int64_t b = hi - a < DELETE_CHUNK ? hi : a + DELETE_CHUNK;
    size_t q = p, from = rep->nremoved;
    while (q < nouts && outs[q].key < b)
      q++;
    fref *m = q > p ? outs + p : NULL; /* the step's */
    size_t nm = q - p;
    if (nm)
      qsort(m, nm, sizeof *m, by_sha); /* outside the lock */
    pthread_mutex_lock(&c->lock);
    set_dying(c, m, nm, 1);
    cairn__journal_put(c->journal, cairn__jrec_delete(id, purge, a, b, 0, 0, rep));
    uint64_t seq = cairn__journal_last(c->journal);
    cairn__core_unlock(c);
    st = cairn__journal_wait(c->journal, seq, err);
    pthread_mutex_lock(&c->lock);
    if (st == CAIRN_OK)
      drop_removed(c, rep, from, m, nm);
    else
      set_dying(c, m, nm, 0);
    cairn__core_unlock(c);
    p = q;
    if (a >= hi)
      break;
  }
  if (st != CAIRN_OK)
    return st;
  size_t from = rep->nremoved;
  if (nins)
    qsort(ins, nins, sizeof *ins, by_sha);
  pthread_mutex_lock(&c->lock);
  set_dying(c, ins, nins, 1);
  cairn__journal_put(c->journal, cairn__jrec_delete(id, purge, 0, 0, 1, cairn__now(), rep));
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  st = cairn__journal_wait(c->journal, seq, err);
  pthread_mutex_lock(&c->lock);
  if (st == CAIRN_OK)
    drop_removed(c, rep, from, ins, nins);
  else
    set_dying(c, ins, nins, 0);
  cairn__core_unlock(c);
  return st;
}

cairn_status cairn__core_delete(cairn__core *c, int64_t id, int purge, json_t **out,
                                cairn_error *err) {
  cairn_status st = CAIRN_OK;
  cairn__store_delete_report rep = {0};
  *out = NULL;
  pthread_mutex_lock(&c->lock);
  mjob *j = job_locked(c, id, &st, err);
  /* anything still allocating or out is stopped first (a failed job's
   * independent tasks, a done job's replicas beyond its quorum) */
  if (j && j->state != JS_CANCELLED && (j->state == JS_RUNNING || j->nleases || j->inq))
    cancel_locked(c, j);
  if (j && j->nleases) {
    st = cairn__error_set(err, CAIRN_ECONFLICT, "job %lld is cancelled but %u of its leases are "
                         "still out; they end at their workers' next heartbeat (within %d s): "
                         "delete it again then", (long long)id, j->nleases, j->lease_seconds);
    j = NULL;
  }
  if (j)
    detach_locked(c, j);
  st = finish(c, st, err); /* the cancel, when there was one */
  if (!j)
    return st;
  /* j is ours now: a crash before the first step commits leaves it whole */
  int64_t lo = j->ntasks ? j->tasks[0].key : 0, hi = lo;
  for (uint32_t i = 0; i < j->ntasks; i++) { /* a job's keys are consecutive */
    lo = j->tasks[i].key < lo ? j->tasks[i].key : lo;
    hi = j->tasks[i].key >= hi ? j->tasks[i].key + 1 : hi;
  }
  /* its files and its accepted results' output files, O(job) outside the
   * lock (out of memory: none is marked, the removed ones still go) */
  size_t nouts = 0, nins = j->nfiles;
  for (uint32_t i = 0; i < j->ntasks; i++)
    nouts += j->tasks[i].io ? j->tasks[i].io->nfiles : 0;
  fref *ins = calloc(nins + 1, sizeof *ins), *outs = calloc(nouts + 1, sizeof *outs);
  for (uint32_t i = 0; ins && i < j->nfiles; i++)
    memcpy(ins[i].sha256, j->files[i].sha256, 65);
  nouts = 0;
  for (uint32_t i = 0; outs && i < j->ntasks; i++)
    for (uint32_t k = 0; j->tasks[i].io && k < j->tasks[i].io->nfiles; k++) {
      outs[nouts].key = j->tasks[i].key;
      memcpy(outs[nouts++].sha256, j->tasks[i].io->files[k].sha256, 65);
    }
  if (outs && nouts)
    qsort(outs, nouts, sizeof *outs, by_key);
  cairn__job_free(j); /* O(job), outside the lock */
  if (st == CAIRN_OK)
    st = store_delete(c, id, purge, lo, hi, ins, ins ? nins : 0, outs, outs ? nouts : 0, &rep,
                      err);
  free(ins);
  free(outs);
  if (st != CAIRN_OK) {
    free(rep.removed);
    return st;
  }
  CAIRN_INFO(&c->log, "job %lld deleted%s: %lld tasks (%lld kept for the audit), %lld results "
             "(%lld bytes), %lld allocations, %lld files (%lld bytes)", (long long)id,
             purge ? " and purged" : "", (long long)rep.tasks, (long long)rep.tasks_kept,
             (long long)rep.results, (long long)rep.result_bytes, (long long)rep.allocations,
             (long long)rep.files, (long long)rep.file_bytes);
  *out = json_pack("{s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "job", (json_int_t)id,
                   "purged", purge, "tasks", (json_int_t)rep.tasks, "tasks_kept",
                   (json_int_t)rep.tasks_kept, "results", (json_int_t)rep.results,
                   "result_bytes", (json_int_t)rep.result_bytes, "allocations",
                   (json_int_t)rep.allocations, "files", (json_int_t)rep.files, "file_bytes",
                   (json_int_t)rep.file_bytes);
  free(rep.removed);
  return CAIRN_OK;
}

cairn_status cairn__core_resume_deletes(cairn__core *c, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  for (size_t i = 0; st == CAIRN_OK && i < c->nresume; i++) {
    int64_t id = c->resume[i].id, lo = 0, hi = 0;
    cairn__store_delete_report rep = {0};
    if (cairn__store_job_keys(c->store, id, &lo, &hi))
      st = cairn__error_set(err, CAIRN_EIO, "store: reading job %lld's task keys", (long long)id);
    else /* before serving: nothing else uses its files now */
      st = store_delete(c, id, c->resume[i].purge, lo, hi, NULL, 0, NULL, 0, &rep, err);
    if (st == CAIRN_OK)
      CAIRN_WARN(&c->log, "job %lld: its deletion, interrupted by a stop, is finished",
                 (long long)id);
    free(rep.removed);
  }
  free(c->resume);
  c->resume = NULL;
  c->nresume = 0;
  return st;
}

int cairn__core_retain(cairn__core *c, int64_t now, int64_t keep_seconds) {
  enum { SCAN_MAX = 1024 };
  int64_t due[SCAN_MAX];
  size_t ndue = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t k = 0; k < SCAN_MAX && k < c->njobs; k++) {
    if (c->retain_cursor >= c->njobs)
      c->retain_cursor = 0;
    const mjob *j = c->jobs[c->retain_cursor++];
    if (j && j->state != JS_RUNNING && !j->nleases && j->finished &&
        now - j->finished >= keep_seconds)
      due[ndue++] = j->id;
  }
  cairn__core_unlock(c);
  int n = 0;
  for (size_t i = 0; i < ndue; i++) {
    json_t *out = NULL;
    cairn_error err = {0};
    if (cairn__core_delete(c, due[i], 0, &out, &err) == CAIRN_OK) {
      CAIRN_WARN(&c->log, "retention: job %lld finished more than %lld s ago: deleted",
                 (long long)due[i], (long long)keep_seconds);
      n++;
    } else if (err.status != CAIRN_ENOTFOUND)
      CAIRN_WARN(&c->log, "retention: job %lld: %s", (long long)due[i], err.text);
    json_decref(out);
  }
  return n;
}
