/* trust.c — adaptive replication: a volunteer with a run of valid results
 * earns trust, and a trusted volunteer's tasks of a job that opts in run
 * once, except a random share that is still replicated (spot checks).
 *
 * The rule (docs/accountability.md, "Adaptive replication"):
 *   trust     the volunteer's valid results in a row among replicated
 *             rounds (a result is valid when its job's validator finds it
 *             agreeing with the round's canonical result); a result of a
 *             round that ran once, or of a job with quorum 1, adds nothing
 *             (mres.solo). Trust is the volunteer's, earned in any job.
 *   trusted   trust >= c->trust->threshold (--trust-threshold, default
 *             CAIRN_DEFAULT_TRUST_THRESHOLD).
 *   solo      when a task of a job with "adaptive": true gets the first
 *             copy of its first round (round 0: never re-queued) and the
 *             volunteer is trusted, the round runs once (mrep.solo) and is
 *             accepted on that one result, unless a draw below
 *             c->trust->spot_check (--spot-check, default CAIRN_DEFAULT_SPOT_CHECK)
 *             makes it a spot check, replicated to the job's quorum. A solo
 *             copy that fails, whose lease ends without a result, or whose
 *             volunteer is no longer trusted when its result arrives turns
 *             its round back into a replicated one.
 *   together  in an adaptive job, a task whose round has a copy out or a
 *             result and wants more goes to the job's urgent ring, served
 *             before the policy (8 picks a work request at most), so that a
 *             spot check's verdict, and the agreement that earns trust, do
 *             not wait behind every other task's first copy.
 *   reset     any invalid result (it lost a quorum vote, or its volunteer
 *             was banned) sets trust to 0. The volunteer's last
 *             CAIRN__TRUST_RING unreplicated accepted results (a ring in
 *             mvol; the oldest leaves a full ring) are re-checked: each one
 *             still accepted is re-queued in a new round, replicated to the
 *             quorum, with every descendant that consumed it, by the ban's
 *             path (cairn__core_requeue). A ban re-queues everything of its
 *             volunteer itself: its ring is only emptied.
 *
 * Bounds, all under c->lock: a result costs O(1) here (a counter, a ring
 * slot, a journal record), and so does a push to or a take from the urgent
 * ring (4 bytes a task of an adaptive job, made on first use; emptied when
 * the policy is rebuilt at a restart, after which the policy has every
 * eligible task; an entry a re-queue makes stale is skipped when taken); a
 * reset costs O(ring²) = O(1,024) to group its entries by job plus, for
 * each job they name, what the re-queue costs (cairn__core_requeue: the
 * re-queued tasks and the descendants that consumed them, O((deg + 1) ·
 * log n) each through the policy's reset, never the rest of the job). The
 * re-check runs when the request that caused the reset has applied its
 * own result (cairn__trust_flush), never in the middle of an acceptance.
 *
 * Persistence: trust in volunteers.trust, the rings in trust_ring
 * (0011_trust.sql), both through the journal with the result that
 * changed them; a restart reloads both (load.c). Whether an unfinished
 * round ran solo is not kept: after a restart its result needs the quorum.
 */
#include "server/trust/trust.h"
#include "server/store/journal.h"

#include <stdint.h>
#include <stdlib.h>
#include <time.h>

#include "common/log.h"

/* A volunteer's last unreplicated accepted results; slot seq % RING is the
 * next, entries are slots seq - n .. seq - 1. */
struct cairn__tring {
  int64_t seq; /* entries ever pushed since the ring was last emptied */
  uint32_t n;  /* entries held (<= CAIRN__TRUST_RING) */
  struct {
    int64_t job, task_key, round, idx;
  } e[CAIRN__TRUST_RING];
};

int cairn__trust_open(cairn__core *c) {
  if (!(c->trust = calloc(1, sizeof *c->trust)))
    return -1;
  c->trust->threshold = CAIRN_DEFAULT_TRUST_THRESHOLD;
  c->trust->spot_check = CAIRN_DEFAULT_SPOT_CHECK;
  c->trust->rng = (uint64_t)time(NULL) * 0x9e3779b97f4a7c15ull ^ (uint64_t)(uintptr_t)c;
  return 0;
}

void cairn__trust_close(cairn__core *c) {
  if (c->trust)
    free(c->trust->due);
  free(c->trust);
  c->trust = NULL;
}

void cairn__trust_set_threshold(cairn__core *c, int64_t threshold) {
  c->trust->threshold = threshold;
}

void cairn__trust_set_spot_check(cairn__core *c, double spot_check) {
  c->trust->spot_check = spot_check;
}

void cairn__trust_seed(cairn__core *c, uint64_t seed) { c->trust->rng = seed; }

int cairn__trust_trusted(const cairn__core *c, const mvol *v) {
  return !v->banned && v->trust >= c->trust->threshold;
}

void cairn__trust_load_vol(mvol *v, int64_t trust) { v->trust = v->banned ? 0 : trust; }

void cairn__trust_counts(const cairn__core *c, uint64_t out[4]) {
  out[0] = c->trust->unreplicated_total;
  out[1] = c->trust->spot_checks_total;
  out[2] = c->trust->resets_total;
  out[3] = c->trust->rechecks_total;
}

/* A uniform draw in [0, 1) from c's xorshift64* state. O(1). */
static double draw(cairn__core *c) {
  uint64_t x = c->trust->rng ? c->trust->rng : 0x9e3779b97f4a7c15ull;
  x ^= x >> 12;
  x ^= x << 25;
  x ^= x >> 27;
  c->trust->rng = x;
  return (double)((x * 2685821657736338717ull) >> 11) / 9007199254740992.0;
}

int cairn__trust_solo(cairn__core *c, const mjob *j, const mtask *t, const mvol *v) {
  if (!j->adaptive || t->round != 0 || !t->rep || t->rep->nvols != 1 || t->rep->nres != 0 ||
      v->trust < c->trust->threshold)
    return 0;
  if (c->trust->spot_check > 0 && draw(c) < c->trust->spot_check) {
    c->trust->spot_checks_total++;
    return 0;
  }
  return 1;
}

int cairn__trust_solo_stands(const cairn__core *c, const mrep *r, const mvol *v, int ok) {
  return r->solo && ok && v->trust >= c->trust->threshold;
}

static void set_trust(cairn__core *c, mvol *v, int64_t trust) {
  v->trust = trust;
  cairn__journal_put(c->journal, cairn__jrec_trust(v->id, trust));
}

static void empty_ring(cairn__core *c, mvol *v) {
  if (!v->ring || !v->ring->n)
    return;
  v->ring->n = 0;
  v->ring->seq = 0;
  cairn__journal_put(c->journal, cairn__jrec_tring_clear(v->id));
}

void cairn__trust_note(cairn__core *c, mvol *v, const mres *m, int outcome) {
  int ring = v->ring && v->ring->n;
  if (outcome == OUT_VALID && !m->solo && !v->banned) {
    set_trust(c, v, v->trust + 1);
    return;
  }
  if (outcome != OUT_INVALID || (v->trust == 0 && !ring))
    return;
  if (v->banned) { /* the ban re-queues all it relied on */
    set_trust(c, v, 0);
    empty_ring(c, v);
    return;
  }
  c->trust->resets_total++;
  CAIRN_WARN(&c->log, "volunteer %lld: an invalid result resets its trust (%lld); %u of its "
             "unreplicated results to re-check", (long long)v->id, (long long)v->trust,
             ring ? v->ring->n : 0u);
  set_trust(c, v, 0);
  if (!ring || v->trust_due)
    return;
  if (c->trust->ndue == c->trust->capdue) {
    size_t ncap = c->trust->capdue ? 2 * c->trust->capdue : 8;
    mvol **a = realloc(c->trust->due, ncap * sizeof *a);
    if (!a) {
      CAIRN_ERR(&c->log, "out of memory: volunteer %lld's unreplicated results are not "
                "re-checked", (long long)v->id);
      empty_ring(c, v);
      return;
    }
    c->trust->due = a;
    c->trust->capdue = ncap;
  }
  c->trust->due[c->trust->ndue++] = v;
  v->trust_due = 1;
}

void cairn__trust_lapsed(cairn__core *c, mvol *v) {
  if (v->trust > 0)
    set_trust(c, v, 0);
}

/* Puts an entry in v's ring (the oldest leaves a full one). -1: no memory. */
static int ring_push(mvol *v, int64_t seq, int64_t job, int64_t key, int64_t round, int64_t idx) {
  if (!v->ring && !(v->ring = calloc(1, sizeof *v->ring)))
    return -1;
  struct cairn__tring *g = v->ring;
  uint32_t slot = (uint32_t)(seq % CAIRN__TRUST_RING);
  g->e[slot].job = job, g->e[slot].task_key = key, g->e[slot].round = round;
  g->e[slot].idx = idx;
  g->seq = seq + 1;
  g->n += g->n < CAIRN__TRUST_RING;
  return 0;
}

void cairn__trust_accepted(cairn__core *c, mjob *j, uint32_t task, const mres *cn) {
  const mtask *t = &j->tasks[task];
  mvol *v = cn->vol >= 1 && (size_t)cn->vol <= c->nvols ? c->vols[cn->vol - 1] : NULL;
  c->trust->unreplicated_total++;
  if (!v)
    return;
  int64_t seq = v->ring ? v->ring->seq : 0;
  if (ring_push(v, seq, j->id, t->key, t->round, cn->idx)) {
    CAIRN_ERR(&c->log, "out of memory: task %lld, accepted unreplicated, cannot be re-checked",
              (long long)t->key);
    return;
  }
  cairn__store_trust_row row = {v->id, seq, j->id, t->key, t->round, cn->idx};
  cairn__journal_put(c->journal, cairn__jrec_tring(&row));
}

int cairn__trust_enqueue(mjob *j, mtask *t, uint32_t v) {
  if (!j->adaptive || !t->rep || t->rep->nvols == 0 || t->queued)
    return 0;
  if (!j->urgent && !(j->urgent = malloc(j->ntasks * sizeof *j->urgent)))
    return 0; /* the policy has it */
  if (j->nurgent == j->ntasks)
    return 0;
  j->urgent[(j->urgent_head + j->nurgent++) % j->ntasks] = v;
  t->queued = 2; /* in the ring: an entry whose task is not 2 any more is stale */
  return 1;
}

int cairn__trust_pick(mjob *j, uint32_t *v, unsigned *budget) {
  while (j->nurgent && *budget) {
    uint32_t u = j->urgent[j->urgent_head];
    j->urgent_head = (j->urgent_head + 1) % j->ntasks;
    j->nurgent--;
    if (j->tasks[u].queued != 2)
      continue; /* re-queued or accepted since it entered: stale */
    --*budget;
    *v = u;
    return 1;
  }
  return 0;
}

int cairn__trust_load(cairn__core *c, const cairn__store_trust_row *r) {
  if (r->vol < 1 || (size_t)r->vol > c->nvols || c->vols[r->vol - 1]->banned)
    return 0;
  return ring_push(c->vols[r->vol - 1], r->seq, r->job, r->task_key, r->round, r->idx);
}

void cairn__trust_free(mvol *v) {
  free(v->ring);
  v->ring = NULL;
}

/* The task an entry names, if it still stands on that result: its job is
 * alive and not cancelled, and the task is done in the same round with the
 * same accepted result. O(1) (keys are dense within a job). */
static mtask *still_accepted(cairn__core *c, int64_t job, int64_t key, int64_t round, int64_t idx,
                             mjob **jp) {
  mjob *j = job >= 1 && (size_t)job <= c->njobs ? c->jobs[job - 1] : NULL;
  if (!j || j->state == JS_CANCELLED || !j->ntasks)
    return NULL;
  int64_t pos = key - j->tasks[0].key;
  if (pos < 0 || pos >= (int64_t)j->ntasks)
    return NULL;
  mtask *t = &j->tasks[pos];
  if (t->key != key || t->state != TS_DONE || t->round != round || t->accepted != idx)
    return NULL;
  *jp = j;
  return t;
}

/* Re-queues what is left of v's ring, job by job, and empties it. */
static void recheck(cairn__core *c, mvol *v) {
  struct cairn__tring *g = v->ring;
  struct { mjob *j; uint32_t pos; } hit[CAIRN__TRUST_RING];
  uint32_t nhit = 0, seeds[CAIRN__TRUST_RING];
  for (uint32_t k = 0; g && k < g->n; k++) {
    uint32_t s = (uint32_t)((g->seq - g->n + k) % CAIRN__TRUST_RING);
    mjob *j = NULL;
    mtask *t = still_accepted(c, g->e[s].job, g->e[s].task_key, g->e[s].round, g->e[s].idx, &j);
    if (t)
      hit[nhit].j = j, hit[nhit++].pos = (uint32_t)(t - j->tasks);
  }
  empty_ring(c, v);
  int64_t requeued = 0, tainted = 0;
  for (uint32_t a = 0; a < nhit; a++) {
    mjob *j = hit[a].j;
    uint32_t n = 0;
    for (uint32_t b = a; j && b < nhit; b++)
      if (hit[b].j == j)
        seeds[n++] = hit[b].pos, hit[b].j = NULL;
    cairn_error err = {0};
    if (j && c->calls.requeue(c, j, seeds, n, &requeued, &tainted, NULL, &err) != CAIRN_OK)
      CAIRN_ERR(&c->log, "re-checking volunteer %lld's results in job %lld: %s",
                (long long)v->id, (long long)j->id, err.text);
  }
  c->trust->rechecks_total += (uint64_t)requeued;
  CAIRN_WARN(&c->log, "volunteer %lld: %lld unreplicated results re-queued for replication, "
             "%lld descendants with them", (long long)v->id, (long long)requeued,
             (long long)tainted);
}

void cairn__trust_flush(cairn__core *c) {
  for (size_t i = 0; i < c->trust->ndue; i++) {
    mvol *v = c->trust->due[i];
    v->trust_due = 0;
    if (!v->banned)
      recheck(c, v);
  }
  c->trust->ndue = 0;
}
