/* core.c — the master's transitions: allocate, result, heartbeat, expire,
 * ban (see core.h for the task and lease life-cycles); volunteers.c
 * registers and authenticates volunteers and applies their reports.
 *
 * Cost per request: picking work is O(E × 32 policy picks) for E jobs with
 * eligible tasks, walked in priority order (c->runq, life.c; picks that do
 * not fit the volunteer are put back; fit.h; the policy's pick is O(1) for
 * fifo and random, O((out-degree + 1) · log n) for ic, policy.h); a result costs
 * O(children of the task), and a result that resets a volunteer's trust
 * re-checks its ring (trust.c: O(32) + a re-queue per job named); leases
 * live in a hash map and a min-heap, so expiry is O(log L) per lease.
 * Nothing scans a task table; a ban runs in bounded slices (ban.c) and a
 * re-queue (cairn__core_requeue) costs O(the tasks it touches, their
 * edges, log n).
 */
#include "server/core/accounts.h"
#include "server/core/apps.h"
#include "server/core/core.h"
#include "server/core/demand.h"
#include "server/dist/dist.h"
#include "server/core/fit.h"
#include "server/core/outputs.h"
#include "server/core/size.h"
#include "server/core/uploads.h"
#include "server/trust/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/log.h"

const char *const cairn__tstate_name[TS_COUNT] = {"waiting", "eligible", "running", "done",
                                                  "failed"};
const char *const cairn__jstate_name[JS_COUNT] = {"running", "done", "failed", "cancelled"};
const char *const cairn__outcome_name[OUT_COUNT] = {"valid", "invalid", "pending", "error",
                                                    "tainted"};

enum { LEASE_LEASED, LEASE_RETURNED, LEASE_EXPIRED };

/* ---- lease heap (min by expires) ---- */

int cairn__lease_push(cairn__core *c, int64_t expires, int64_t idx) {
  if (c->nheap == c->capheap) {
    size_t ncap = c->capheap ? 2 * c->capheap : 256;
    lease_heap_item *h = realloc(c->heap, ncap * sizeof *h);
    if (!h)
      return -1;
    c->heap = h;
    c->capheap = ncap;
  }
  size_t i = c->nheap++;
  while (i && c->heap[(i - 1) / 2].expires > expires) {
    c->heap[i] = c->heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  c->heap[i] = (lease_heap_item){expires, idx};
  return 0;
}

static lease_heap_item heap_pop(cairn__core *c) {
  lease_heap_item top = c->heap[0], last = c->heap[--c->nheap];
  size_t i = 0;
  for (;;) {
    size_t k = 2 * i + 1;
    if (k >= c->nheap)
      break;
    if (k + 1 < c->nheap && c->heap[k + 1].expires < c->heap[k].expires)
      k++;
    if (c->heap[k].expires >= last.expires)
      break;
    c->heap[i] = c->heap[k];
    i = k;
  }
  if (c->nheap)
    c->heap[i] = last;
  return top;
}

static void vol_drop_active(mvol *v, int64_t idx) {
  for (size_t i = 0; i < v->nactive; i++)
    if (v->active[i] == idx) {
      v->active[i] = v->active[--v->nactive];
      return;
    }
}

int cairn__vol_add_active(mvol *v, int64_t idx) {
  if (v->nactive == v->capactive) {
    size_t ncap = v->capactive ? 2 * v->capactive : 4;
    int64_t *a = realloc(v->active, ncap * sizeof *a);
    if (!a)
      return -1;
    v->active = a;
    v->capactive = ncap;
  }
  v->active[v->nactive++] = idx;
  return 0;
}

/* ---- journal helpers ---- */

static const char *const lease_state[] = {"leased", "returned", "expired"};

static void j_task(cairn__core *c, const mjob *j, uint32_t v) {
  const mtask *t = &j->tasks[v];
  cairn__journal_put(c->journal, cairn__jrec_task(t->key, cairn__tstate_name[t->state],
                                                  t->attempts, t->accepted, t->round));
}

static void j_lease(cairn__core *c, const mlease *l, int state) {
  cairn__journal_put(c->journal, cairn__jrec_lease(l->idx, l->expires, lease_state[state]));
}

static void j_outcome(cairn__core *c, int64_t idx, int outcome) {
  cairn__journal_put(c->journal, cairn__jrec_outcome(idx, cairn__outcome_name[outcome]));
}

static void set_state(cairn__core *c, mjob *j, uint32_t v, int state) {
  int had = j->counts[TS_ELIGIBLE] > 0;
  j->counts[j->tasks[v].state]--;
  cairn__demand_move(j, &j->tasks[v], j->tasks[v].state, state);
  j->tasks[v].state = (uint8_t)state;
  j->counts[state]++;
  if (had != (j->counts[TS_ELIGIBLE] > 0))
    cairn__jobq_update(c, j); /* it enters or leaves the queue of jobs with work */
}

static void job_finish_check(cairn__core *c, mjob *j) {
  int ns;
  if (j->state == JS_CANCELLED)
    return; /* final */
  if (j->counts[TS_FAILED] > 0)
    ns = JS_FAILED;
  else if (j->counts[TS_DONE] == j->ntasks)
    ns = JS_DONE;
  else
    ns = JS_RUNNING;
  if (ns == j->state)
    return;
  j->state = ns;
  j->finished = ns == JS_RUNNING ? 0 : cairn__now();
  cairn__jobq_update(c, j);
  cairn__journal_put(c->journal,
                    cairn__jrec_job_state(j->id, cairn__jstate_name[ns], j->finished));
  cairn__job_changed(c, j->id);
}

/* ---- replicas ---- */

void cairn__rep_free(mrep *r) {
  if (!r)
    return;
  free(r->vols);
  cairn__valid_free(r);
  free(r->res);
  free(r);
}

static mrep *rep_of(mtask *t) {
  if (!t->rep)
    t->rep = calloc(1, sizeof *t->rep);
  return t->rep;
}

int cairn__rep_add_vol(mtask *t, int64_t vol) {
  mrep *r = rep_of(t);
  if (!r)
    return -1;
  if (r->nvols == r->capvols) {
    uint32_t ncap = r->capvols ? 2 * r->capvols : 2;
    int64_t *nv = realloc(r->vols, ncap * sizeof *nv);
    if (!nv)
      return -1;
    r->vols = nv;
    r->capvols = ncap;
  }
  r->vols[r->nvols++] = vol;
  return 0;
}

int cairn__rep_add_result(mtask *t, int64_t idx, int64_t vol, const char *digest, int ok,
                          int outcome) {
  mrep *r = rep_of(t);
  if (!r)
    return -1;
  if (r->nres == r->capres) {
    uint32_t ncap = r->capres ? 2 * r->capres : 2;
    mres *nr = realloc(r->res, ncap * sizeof *nr);
    if (!nr)
      return -1;
    r->res = nr;
    r->capres = ncap;
  }
  mres *m = &r->res[r->nres++];
  *m = (mres){0};
  m->idx = idx;
  m->vol = vol;
  snprintf(m->digest, sizeof m->digest, "%s", digest);
  m->ok = (uint8_t)ok;
  m->outcome = (uint8_t)outcome;
  cairn__credit_claim(m, 0, 0);
  return 0;
}

static int rep_has_vol(const mrep *r, int64_t vol) {
  for (uint32_t i = 0; r && i < r->nvols; i++)
    if (r->vols[i] == vol)
      return 1;
  return 0;
}

static int counted(const mres *m) {
  return m->ok && (m->outcome == OUT_PENDING || m->outcome == OUT_VALID);
}

static void count_outcome(cairn__core *c, mvol *v, mres *m, int outcome, int delta) {
  if (delta > 0) {
    cairn__quar_note(c, v, outcome); /* O(1) */
    cairn__trust_note(c, v, m, outcome); /* O(1) */
  }
  if (outcome == OUT_VALID)
    cairn__credit_count(c, v, m, delta); /* O(1) */
  switch (outcome) {
  case OUT_VALID: v->valid += delta; break;
  case OUT_INVALID: v->invalid += delta; break;
  case OUT_PENDING: v->pending += delta; break;
  case OUT_ERROR: v->errors += delta; break;
  default: break;
  }
}

/* Changes a recorded result's outcome, with counters and journal. */
static void set_outcome(cairn__core *c, mres *m, int outcome) {
  if (m->outcome == outcome)
    return;
  if (m->vol >= 1 && (size_t)m->vol <= c->nvols) {
    count_outcome(c, c->vols[m->vol - 1], m, m->outcome, -1);
    count_outcome(c, c->vols[m->vol - 1], m, outcome, +1);
  }
  m->outcome = (uint8_t)outcome;
  j_outcome(c, m->idx, outcome);
}

static void enqueue(mjob *j, uint32_t v) {
  if (j->tasks[v].queued || cairn__trust_enqueue(j, &j->tasks[v], v))
    return;
  j->tasks[v].queued = 1;
  j->pol->ready(j->pstate, v);
}

/* Recomputes how many more copies task v wants and its state (see core.h). */
static void replan(cairn__core *c, mjob *j, uint32_t v) {
  mtask *t = &j->tasks[v];
  if (t->state == TS_DONE || t->state == TS_FAILED || t->state == TS_WAITING ||
      j->state == JS_CANCELLED)
    return;
  const mrep *r = t->rep;
  const mres *cn;
  uint32_t active = r ? r->active : 0, nres = r ? r->nres : 0;
  int64_t target = nres == 0 ? (r && r->solo ? 1 : j->replication)
                             : cairn__quorum_of(j, r) - (int64_t)cairn__valid_best(j, r, &cn);
  target = r && r->checking ? 0 : target; /* verdicts queued (validate.h): wait for them */
  int64_t wanted = target - (int64_t)active;
  int ns;
  if (wanted > 0 && t->attempts >= j->max_attempts)
    ns = active ? TS_RUNNING : TS_FAILED;
  else
    ns = wanted > 0 ? TS_ELIGIBLE : TS_RUNNING;
  if (ns != t->state)
    set_state(c, j, v, ns);
  if (ns == TS_ELIGIBLE && !t->queued)
    cairn__wake_note(c, j->app, 1); /* a held work request may take it (wake.c) */
  if (ns == TS_ELIGIBLE)
    enqueue(j, v);
  j_task(c, j, v);
  if (ns == TS_FAILED) {
    cairn__valid_free(t->rep); /* nothing is compared any more */
    job_finish_check(c, j);
  }
}

static void release_children(cairn__core *c, mjob *j, uint32_t v) {
  const cairn__dag *d = j->dag;
  for (uint32_t k = d->ch_off[v]; k < d->ch_off[v + 1]; k++) {
    uint32_t ch = d->ch[k];
    mtask *t = &j->tasks[ch];
    if (t->npending > 0 && --t->npending == 0 && t->state == TS_WAITING) {
      set_state(c, j, ch, TS_ELIGIBLE);
      replan(c, j, ch);
    }
  }
}

/* Quorum reached with canonical result cn: the task is executed. Outcomes of
 * the other results are journaled here, except new_idx's (its caller records it). */
static void accept(cairn__core *c, mjob *j, uint32_t v, const mres *cn, int64_t new_idx) {
  mtask *t = &j->tasks[v];
  mrep *r = t->rep;
  t->accepted = cn->idx;
  cairn__credit_grant(j, r, cn); /* before any becomes valid */
  for (uint32_t i = 0; i < r->nres; i++) {
    mres *m = &r->res[i];
    if (!counted(m))
      continue;
    int outcome = cairn__valid_outcome(j, r, cn, m); /* pending: a verdict is queued */
    if (m->idx == new_idx) {
      count_outcome(c, c->vols[m->vol - 1], m, m->outcome, -1);
      m->outcome = (uint8_t)outcome;
      count_outcome(c, c->vols[m->vol - 1], m, m->outcome, +1);
    } else
      set_outcome(c, m, outcome);
  }
  cairn__valid_settle(r, t->accepted); /* late replicas compare with it */
  if (r->solo)
    cairn__trust_accepted(c, j, v, cn); /* re-checked if its volunteer's trust resets */
  set_state(c, j, v, TS_DONE);
  t->queued = 0; /* executed() takes it out of a policy's ready set */
  j->pol->executed(j->pstate, v);
  j_task(c, j, v);
  release_children(c, j, v);
  job_finish_check(c, j);
}

void cairn__core_verdict(cairn__core *c, const cairn__vpair *p, int agree) {
  mjob *j = p->job >= 1 && (size_t)p->job <= c->njobs ? c->jobs[p->job - 1] : NULL;
  mtask *t = j && p->task < j->ntasks ? &j->tasks[p->task] : NULL;
  if (!t || t->round != p->round || !t->rep)
    return; /* its round ended: nothing of it is left */
  mrep *r = t->rep;
  mres *a = cairn__valid_find(r, p->idx[0]), *b = cairn__valid_find(r, p->idx[1]), *cn;
  r->checking -= r->checking > 0;
  if (a && b && agree >= 0)
    cairn__valid_set(r, a, b, agree);
  if (t->state == TS_DONE && (cn = cairn__valid_find(r, t->accepted)))
    for (uint32_t i = 0; i < r->nres; i++) /* judged against the canonical result */
      if (r->res[i].outcome == OUT_PENDING && r->res[i].ok) {
        cairn__credit_late(t, &r->res[i]); /* the accepted result's credit */
        set_outcome(c, &r->res[i], cairn__valid_outcome(j, r, cn, &r->res[i]));
      }
  if (t->state == TS_DONE)
    cairn__valid_settle(r, t->accepted);
  else if (t->state != TS_FAILED && j->state != JS_CANCELLED &&
           cairn__valid_best(j, r, (const mres **)&cn) >= (uint32_t)cairn__quorum_of(j, r)) {
    if (cairn__outputs_accepted(c, t, cn, cn->files, cn->nfiles))
      CAIRN_ERR(&c->log, "out of memory keeping the output files of task %lld", (long long)t->key);
    accept(c, j, p->task, cn, 0);
  } else if (t->state != TS_FAILED)
    replan(c, j, p->task);
  cairn__trust_flush(c); /* re-checks a reset made due */
}

/* Ends lease l (returned or expired): removes it everywhere, and the files
 * uploaded under it that nothing else holds or records (uploads.h: O(its
 * files) <= 256 unlinks); frees only its list of uploads. */
static void drop_lease(cairn__core *c, mlease *l, int state) {
  cairn__uploads_lease_end(c, l);
  cairn__hmap_del(&c->leases, (uint64_t)l->idx);
  vol_drop_active(l->vol, l->idx);
  cairn__fit_lease(l->vol, &l->req, 0);
  j_lease(c, l, state);
  l->job->nleases--;
  mtask *t = &l->job->tasks[l->task];
  if (t->rep && t->rep->active)
    t->rep->active--;
  if (!t->rep || !t->rep->active)
    t->progress = 0; /* no lease out: no progress to show */
  if (t->rep && state == LEASE_EXPIRED)
    t->rep->solo = 0; /* a solo copy lost: the round is replicated again (trust.c) */
}

/* How soon a worker waiting for a copy should ask again, in ms: 250 to
 * 1,000, so that all the volunteers polling at once make at most about
 * 2,000 requests a second (under the lock). */
int cairn__copy_retry_ms_locked(const cairn__core *c) {
  size_t ms = c->nvols / 2;
  return ms < 250 ? 250 : ms > 1000 ? 1000 : (int)ms;
}

/* ---- work ---- */

/* 1 when v runs j's app: by its name (a program or callback of its own),
 * or as a signed version published for v's platform (apps.h; O(versions of
 * the app for the platform)); apps (napps > 0) narrows it to those named. */
static int runs_app(const cairn__core *c, const mvol *v, char **apps, int napps, const mjob *j) {
  const char *app = j->app;
  int declared = 0;
  for (int i = 0; i < v->napps; i++)
    if (strcmp(v->apps[i], app) == 0 ||
        (v->apps[i][0] == '@' && cairn__apps_pick(c, app, v->apps[i] + 1, j->app_version)))
      declared = 1;
  if (!declared)
    return 0;
  if (napps <= 0)
    return 1;
  for (int i = 0; i < napps; i++)
    if (strcmp(apps[i], app) == 0)
      return 1;
  return 0;
}

/* A task of a signed app (docs/apps.md) for a volunteer that does not run
 * the app by name: the version for its platform, {"version", "platform"},
 * in the offer's "app_version". O(versions of the app for the platform). */
static void app_version_offer(const cairn__core *c, const mlease *l, json_t *task) {
  const mvol *v = l->vol;
  const char *platform = cairn__vol_platform(v);
  for (int i = 0; platform && i < v->napps; i++)
    if (strcmp(v->apps[i], l->job->app) == 0)
      return; /* its own program or callback */
  const char *version =
    platform ? cairn__apps_pick(c, l->job->app, platform, l->job->app_version) : NULL;
  if (version)
    json_object_set_new(task, "app_version",
                        json_pack("{s:s, s:s}", "version", version, "platform", platform));
}

/* The /v1/work body; takes inputs (built by cairn__dist_inputs). */
static json_t *work_json(cairn__core *c, const mlease *l, json_t *inputs) {
  const mjob *j = l->job;
  const mtask *t = &j->tasks[l->task];
  json_t *parents = json_array();
  char url[128];
  for (uint32_t p = j->dag->par_off[l->task]; p < j->dag->par_off[l->task + 1]; p++) {
    const mtask *pt = &j->tasks[j->dag->par[p]];
    snprintf(url, sizeof url, "/v1/tasks/%lld/output", (long long)pt->key);
    json_array_append_new(parents, json_pack("{s:s, s:s}", "id", pt->name, "url", url));
  }
  json_t *args = json_loads(t->args_json, 0, NULL);
  json_t *o = json_pack("{s:I, s:I, s:i, s:{s:I, s:s, s:s, s:o, s:o, s:o, s:o}}", "index",
                   (json_int_t)l->idx, "lease_expires", (json_int_t)l->expires, "lease_seconds",
                   j->lease_seconds, "task", "job", (json_int_t)j->id, "id", t->name, "app",
                   j->app, "args", args ? args : json_array(), "inputs", inputs, "parents",
                   parents, CAIRN_RESOURCES_KEY, cairn__resources_json(&l->req));
  json_t *task = json_object_get(o, "task");
  app_version_offer(c, l, task);
  cairn__task_offer_run(t, task); /* limits, env, stdin */
  cairn__size_offer(l, task);     /* the memory and disk limits it was sized to */
  cairn__outputs_offer(c, l, task, json_object_get(task, "inputs"));
  return o;
}

/* Allocates the best eligible task for v (under the lock); journals it.
 * Returns the /v1/work body, or NULL with *st = CAIRN_OK when none. ahead:
 * a task taken ahead of a free slot (batch.c), which must fit v's whole
 * offer rather than what its leases leave free.
 * The policy's picks are examined in order, at most SKIP_MAX per job: one
 * that does not fit what v has free now, or (replicas go to distinct
 * volunteers) one v already holds a copy of, is put back; one that fits no
 * worker seen is parked (fit.h). Per job: O(SKIP_MAX + CAIRN__FIT_UNPARK_MAX
 * policy operations + its distinct requests). */
json_t *cairn__allocate_locked(cairn__core *c, mvol *v, char **apps, int napps, int ahead,
                               int *waiting, cairn_status *st, cairn_error *err) {
  enum { SKIP_MAX = 32 };
  *st = CAIRN_OK;
  *waiting = 0;
  if (v->quarantined || v->nactive >= cairn__vol_lease_bound(v))
    return NULL;
  cairn__resources avail = ahead ? cairn__fit_offer(v) : cairn__fit_free(v);
  for (size_t ji = 0; ji < c->nrunq; ji++) { /* by priority (life.c) */
    mjob *j = c->runq[ji];
    uint32_t task = 0, skipped[SKIP_MAX], nskipped = 0, examined = 0;
    unsigned urgent = 8; /* a round's further copies first (trust.c), 8 at most */
    cairn__tsize size = {0};
    int found = 0;
    if (j->counts[TS_ELIGIBLE] == 0 || !runs_app(c, v, apps, napps, j))
      continue;
    cairn__fit_unpark(c, j, enqueue);
    if (!cairn__fit_job_may(j, &avail))
      continue;
    while (!found && examined++ < SKIP_MAX &&
           (cairn__trust_pick(j, &task, &urgent) || j->pol->pick(j->pstate, &task) == 0)) {
      mtask *t = &j->tasks[task];
      t->queued = 0;
      if (t->state != TS_ELIGIBLE)
        continue; /* executed while queued (a policy that keeps it): drop */
      cairn__size_of(c, j, task, v, &size); /* its request now (size.h) */
      int fit = ahead && size.whole ? 0 : cairn__fit_check(c, &size.req, &avail);
      if (fit < 0 && cairn__fit_park(j, task) == 0)
        continue;
      if (fit <= 0 || (j->replication > 1 && rep_has_vol(t->rep, v->id)) ||
          cairn__task_pass_over(c, j, t, v->id, cairn__now()))
        skipped[nskipped++] = task;
      else
        found = 1;
    }
    for (uint32_t i = 0; i < nskipped; i++)
      enqueue(j, skipped[i]);
    if (!found)
      continue;
    mtask *t = &j->tasks[task];
    json_t *inputs = NULL;
    int d = cairn__dist_inputs(c, v, j, task, &inputs);
    if (!d && cairn__keep_ready(c, v, j, task)) { /* a parent is recomputed (keep.c) */
      json_decref(inputs);
      d = 1;
    }
    if (d) {
      enqueue(j, task); /* its broadcast input is on its way into v's cluster */
      *waiting |= d > 0;
      if (d < 0) {
        *st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
        return NULL;
      }
      continue;
    }
    int64_t tnum = v->allocations + 1;
    uint64_t uidx;
    *st = cairn__ataf_index(c->family, (uint64_t)v->id, (uint64_t)tnum, &uidx, err);
    if (*st != CAIRN_OK) {
      json_decref(inputs);
      enqueue(j, task);
      return NULL;
    }
    int64_t idx = (int64_t)uidx;
    mlease *l = calloc(1, sizeof *l);
    if (!l || cairn__hmap_put(&c->leases, (uint64_t)idx, l) || cairn__vol_add_active(v, idx) ||
        cairn__rep_add_vol(t, v->id)) {
      if (l && cairn__hmap_get(&c->leases, (uint64_t)idx) == l)
        cairn__hmap_del(&c->leases, (uint64_t)idx);
      vol_drop_active(v, idx);
      free(l);
      json_decref(inputs);
      enqueue(j, task);
      *st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return NULL;
    }
    *l = (mlease){.idx = idx, .t = tnum, .issued = cairn__now(), .vol = v, .job = j, .task = task,
                  .req = size.req, .mem_mib = size.mem_mib, .disk_mib = size.disk_mib,
                  .sized = (uint8_t)size.sized};
    l->hard = cairn__lease_hard(c, t, l->issued);
    l->expires = cairn__lease_cap(l, l->issued + j->lease_seconds);
    if (cairn__lease_push(c, l->expires, idx))
      CAIRN_ERR(&c->log, "out of memory queuing lease %lld", (long long)idx);
    v->allocations = tnum;
    j->nleases++;
    cairn__fit_lease(v, &l->req, 1);
    t->attempts++;
    t->rep->active++;
    if (!t->rep->solo)
      t->rep->solo = (uint8_t)cairn__trust_solo(c, j, t, v); /* O(1) */
    c->allocations_total++;
    cairn__journal_put(c->journal, cairn__jrec_alloc(idx, v->id, tnum, t->key, l->issued,
                                                      l->expires, t->round));
    replan(c, j, task); /* ELIGIBLE again if it wants more copies, else RUNNING */
    return work_json(c, l, inputs);
  }
  return NULL;
}

cairn_status cairn__core_work(cairn__core *c, int64_t vol, const cairn__report *r, char **apps,
                              int napps, json_t **resp, int *retry_ms, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  int waiting = 0;
  *resp = NULL;
  *retry_ms = 0;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  if (v) {
    cairn__vol_report(c, v, r);
    *resp = cairn__allocate_locked(c, v, apps, napps, 0, &waiting, &st, err);
    if (!*resp && waiting)
      *retry_ms = cairn__copy_retry_ms_locked(c);
    if (v->quarantined)
      *retry_ms = CAIRN__QUAR_RETRY_MS;
    else if (!*resp && st == CAIRN_OK && v->nactive >= cairn__vol_lease_bound(v)) {
      st = cairn__vol_lease_full(v, err);
      *retry_ms = CAIRN__LEASE_FULL_RETRY_MS;
    }
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  if (st == CAIRN_OK) /* what the report changed is durable before the answer */
    st = cairn__journal_wait(c->journal, seq, err);
  if (st != CAIRN_OK) {
    json_decref(*resp);
    *resp = NULL;
  }
  return st;
}

/* ---- results ---- */

/* Explains why idx names no lease v holds (under the lock). */
static cairn_status no_lease(cairn__core *c, mvol *v, int64_t idx, cairn_error *err) {
  uint64_t x = 0, t = 0;
  if (idx <= 0 || cairn__ataf_invert(c->family, (uint64_t)idx, &x, &t, NULL) != CAIRN_OK ||
      x < 1 || x > c->nvols || (int64_t)t > c->vols[x - 1]->allocations)
    return cairn__error_set(err, CAIRN_ENOTFOUND, "index %lld was never allocated",
                           (long long)idx);
  if ((int64_t)x != v->id)
    return cairn__error_set(err, CAIRN_EFORBIDDEN, "index %lld belongs to another volunteer",
                           (long long)idx);
  return cairn__error_set(err, CAIRN_ECONFLICT,
                         "the lease of index %lld is no longer held (expired, revoked or "
                         "already returned); result discarded", (long long)idx);
}

cairn_status cairn__result_locked(cairn__core *c, mvol *v, int64_t idx, int exit_status,
                                  const char *reason, const void *output, size_t len,
                                  cairn__result_extra *x, const char *digest, cairn_error *err) {
  char why[CAIRN_REASON_MAX];
  cairn__result_extra none = {0};
  x = x ? x : &none;
  cairn__reason_of_exit(exit_status, why);
  mlease *l = idx > 0 ? cairn__hmap_get(&c->leases, (uint64_t)idx) : NULL;
  if (!l || l->vol != v)
    return l ? cairn__error_set(err, CAIRN_EFORBIDDEN, "index %lld belongs to another volunteer",
                               (long long)idx)
             : no_lease(c, v, idx, err);
  mjob *j = l->job;
  if (j->state == JS_CANCELLED) { /* its lease ends here; the result is not kept */
    drop_lease(c, l, LEASE_EXPIRED);
    free(l);
    return cairn__error_set(err, CAIRN_ECONFLICT, "job %lld was cancelled; result of index %lld "
                           "discarded", (long long)j->id, (long long)idx);
  }
  uint32_t task = l->task;
  mtask *t = &j->tasks[task];
  int ok = exit_status == 0;
  cairn_status st = cairn__outputs_check(c, l, exit_status, x->files, x->nfiles, err);
  if (st != CAIRN_OK)
    return st;
  if (cairn__ban_note(c, v, j, task) || /* its ban finds it there (ban.c) */
      cairn__rep_add_result(t, idx, v->id, digest, ok, ok ? OUT_PENDING : OUT_ERROR))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  mres *m = &t->rep->res[t->rep->nres - 1];
  cairn__credit_claim(m, x->has_cpu, x->cpu_seconds);
  if (t->state == TS_DONE)
    cairn__credit_late(t, m); /* O(results of the round) */
  t->rep->solo = (uint8_t)cairn__trust_solo_stands(c, t->rep, v, ok); /* O(1) */
  m->solo = (uint8_t)(t->rep->solo || j->quorum < 2); /* nothing agreed with it: no trust */
  cairn__valid_files_key(x->files, x->nfiles, m->fkey); /* O(files) */
  if (cairn__valid_add(c, j, task, output, len, x->files, x->nfiles, m->fkey)) /* its bound: validate.h */
    ok = 0, m->ok = 0, m->outcome = OUT_ERROR, reason = "out of memory comparing results";
  count_outcome(c, v, m, m->outcome, +1);
  reason = ok ? "" : reason && *reason ? reason : why;
  if (!ok)
    cairn__task_failed(c, t, v->id, reason);
  cairn__size_note sn; /* its measurements; a kill for memory or disk may grow the task */
  if (cairn__size_result(c, l, ok, reason, x, &sn) && t->attempts)
    t->attempts--; /* an attempt that makes its task larger does not count (size.h) */
  for (uint32_t k = 0; ok && k < t->ninputs; k++)
    if (j->files[t->inputs[k]].broadcast)
      cairn__dist_have(c, v, j->files[t->inputs[k]].sha256); /* it ran on a verified copy */
  cairn__size_freed(c, l); /* room for more than one task: wake held requests */
  drop_lease(c, l, LEASE_RETURNED);
  free(l);
  const mres *cn = NULL;
  if (t->state == TS_DONE) {
    /* a replica beyond the quorum: checked against the accepted result */
    const mres *acc = NULL;
    for (uint32_t i = 0; i < t->rep->nres; i++)
      if (t->rep->res[i].idx == t->accepted)
        acc = &t->rep->res[i];
    if (ok) {
      count_outcome(c, v, m, m->outcome, -1);
      m->outcome = (uint8_t)(acc ? cairn__valid_outcome(j, t->rep, acc, m) : OUT_INVALID);
      count_outcome(c, v, m, m->outcome, +1);
    }
    cairn__valid_settle(t->rep, t->accepted);
    cairn__outputs_late(c, v->id, x->files, x->nfiles);
  } else if (t->state != TS_FAILED) {
    if (ok && cairn__valid_best(j, t->rep, &cn) >= (uint32_t)cairn__quorum_of(j, t->rep)) {
      if (cairn__outputs_accepted(c, t, cn, x->files, x->nfiles)) /* cn agrees with it */
        CAIRN_ERR(&c->log, "out of memory keeping the output files of task %lld", (long long)t->key);
      accept(c, j, task, cn, idx);
    } else {
      if (!ok)
        t->accepted = idx; /* shown with the task if it ends up failed */
      replan(c, j, task);
    }
  }
  c->results_total[m->outcome]++;
  cairn__journal_put(c->journal, cairn__jrec_result_credit(
                    cairn__jrec_result(idx, t->key, v->id, exit_status, output, len, digest,
                                       cairn__now(), cairn__outcome_name[m->outcome], reason,
                                       x->err_tail, x->err_len, x->files, x->nfiles),
                    m->claim, m->outcome == OUT_VALID ? m->credit : 0, m->team ? m->team->name : NULL));
  cairn__size_journal(c, idx, &sn); /* after the result's row: it updates it */
  cairn__trust_flush(c); /* re-checks a reset made due, after this result */
  return CAIRN_OK;
}

/* ---- heartbeat and expiry ---- */

cairn_status cairn__core_heartbeat(cairn__core *c, int64_t vol, const cairn__report *r,
                                   json_t **resp, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  json_t *held = json_array();
  int64_t now = cairn__now();
  int lease_seconds = 0;
  const int64_t *running = r && (r->fields & CAIRN_FEAT_RUNNING) ? r->running : NULL;
  size_t nrunning = running ? r->nrunning : 0;
  *resp = NULL;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  if (!v) {
    cairn__core_unlock(c);
    json_decref(held);
    return st;
  }
  cairn__vol_report(c, v, r);
  for (size_t i = 0; v && i < v->nactive; i++) {
    mlease *l = cairn__hmap_get(&c->leases, (uint64_t)v->active[i]);
    if (l && l->job->state == JS_CANCELLED) { /* left out of "extended": the worker kills it */
      drop_lease(c, l, LEASE_EXPIRED);       /* (moves the last entry to i: look at i again) */
      free(l);
      i--;
      continue;
    }
    if (!l)
      continue;
    int listed = !running;
    for (size_t k = 0; !listed && k < nrunning; k++)
      listed = running[k] == l->idx;
    if (!listed)
      continue;
    int64_t ne = cairn__lease_cap(l, now + l->job->lease_seconds); /* never past hard */
    if (l->job->lease_seconds > lease_seconds)
      lease_seconds = l->job->lease_seconds;
    if (ne > l->expires) {
      l->expires = ne;
      if (cairn__lease_push(c, ne, l->idx))
        CAIRN_ERR(&c->log, "out of memory queuing lease %lld", (long long)l->idx);
      j_lease(c, l, LEASE_LEASED);
    }
    json_array_append_new(held, json_integer(l->idx));
  }
  /* "progress": O(1) an entry (at most CAIRN_MAX_PROGRESS), kept on the
   * lease and its task, in memory only; an index that is not one of this
   * volunteer's leases is ignored */
  for (size_t i = 0; r && (r->fields & CAIRN_FEAT_PROGRESS) && i < r->nprogress; i++) {
    mlease *l = cairn__hmap_get(&c->leases, (uint64_t)r->progress[i].index);
    if (!l || l->vol != v)
      continue;
    l->progress = CAIRN__PROGRESS_ENC(r->progress[i].fraction);
    l->job->tasks[l->task].progress = l->progress;
  }
  /* "cpid": its account's cross-project id, an older one offered taken
   * (accounts.h; O(1)) */
  json_t *cpid = r && (r->fields & CAIRN_FEAT_CPID) ? cairn__accounts_cpid(c, v, r) : NULL;
  /* Answer only about durable state: wait for every record appended so far.
   * The pending batch counts only when it holds records (an empty one is
   * never written); otherwise the batch being written is the last one. */
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  st = cairn__journal_wait(c->journal, seq, err);
  *resp = json_pack("{s:o, s:i}", "extended", held, "lease_seconds", lease_seconds);
  if (*resp && cpid)
    json_object_set_new(*resp, "cpid", cpid);
  else
    json_decref(cpid);
  return st;
}

int cairn__core_expire(cairn__core *c, int64_t now) {
  int n = 0;
  pthread_mutex_lock(&c->lock);
  while (c->nheap && c->heap[0].expires <= now) {
    lease_heap_item it = heap_pop(c);
    mlease *l = cairn__hmap_get(&c->leases, (uint64_t)it.idx);
    if (!l || l->expires != it.expires)
      continue; /* returned, or extended (a newer heap item exists) */
    drop_lease(c, l, LEASE_EXPIRED);
    c->expired_total++;
    cairn__vol_lapsed(c, l->vol, l->job->lease_seconds, now);
    if (l->hard && l->expires >= l->hard) /* its app outlived its wall limit */
      cairn__task_failed(c, &l->job->tasks[l->task], l->vol->id, "wall");
    CAIRN_INFO(&c->log, "lease %lld of volunteer %lld expired (job %lld task %s)", (long long)l->idx,
               (long long)l->vol->id, (long long)l->job->id, l->job->tasks[l->task].name);
    replan(c, l->job, l->task);
    free(l);
    n++;
  }
  cairn__uploads_orphans_end(c, now); /* uploads.h: O(1) but once */
  cairn__core_unlock(c);
  return n;
}

/* ---- ban ---- */

/* Starts a new round for task v: revokes its leases, marks its results
 * (outcome for the others than the banned volunteer's), forgets its replicas.
 * The caller sets the state. */
static void new_round(cairn__core *c, mjob *j, uint32_t v, int outcome) {
  mtask *t = &j->tasks[v];
  mrep *r = t->rep;
  for (uint32_t i = 0; r && i < r->nvols; i++) {
    mvol *holder = c->vols[r->vols[i] - 1];
    for (size_t k = 0; k < holder->nactive;) {
      mlease *l = cairn__hmap_get(&c->leases, (uint64_t)holder->active[k]);
      if (l && l->job == j && l->task == v) {
        drop_lease(c, l, LEASE_EXPIRED);
        free(l);
      } else
        k++;
    }
  }
  for (uint32_t i = 0; r && outcome >= 0 && i < r->nres; i++) /* < 0: outcomes stay */
    if (r->res[i].outcome == OUT_VALID || r->res[i].outcome == OUT_PENDING)
      set_outcome(c, &r->res[i], outcome);
  cairn__rep_free(r);
  t->rep = NULL;
  t->round++;
  t->attempts = 0;
  t->accepted = 0;
}

/* Appends v to the touched list *q (capacity *cap) marked m in marks. 0, or -1. */
static int touch(cairn__hmap *marks, uint32_t **q, uint32_t *n, uint32_t *cap, uint32_t v, int m) {
  if (*n == *cap) {
    uint32_t ncap = *cap ? 2 * *cap : 16, *nq = realloc(*q, ncap * sizeof *nq);
    if (!nq)
      return -1;
    *q = nq;
    *cap = ncap;
  }
  (*q)[(*n)++] = v;
  return cairn__hmap_put(marks, (uint64_t)v + 1, (void *)(uintptr_t)m);
}

/* cairn__core_requeue, and with lost set cairn__core_recompute: then only
 * the seeds' children not DONE are touched (they have not consumed the
 * output; what did consumed a right one) and the seeds' results stay.
 * The touched tasks T (marked in a map, never an array of the job's size)
 * leave the policy (reset) and the eligible ones come back (ready): O(Σ
 * (deg(v) + 1) · log n) over T, never the job's other tasks. */
static cairn_status requeue(cairn__core *c, mjob *j, const uint32_t *seeds, uint32_t n, int lost,
                            int64_t *requeued, int64_t *tainted, json_t *ids, cairn_error *err) {
  uint32_t head = 0, tail = 0, cap = 0, *queue = NULL;
  cairn__hmap marks;
  cairn__hmap_init(&marks);
  cairn_status st = CAIRN_OK;
  for (uint32_t i = 0; i < n; i++)
    if (!cairn__hmap_get(&marks, (uint64_t)seeds[i] + 1) &&
        touch(&marks, &queue, &tail, &cap, seeds[i], 1))
      goto nomem;
  /* taint: every descendant of a re-queued task consumed a bad output */
  while (head < tail && (!lost || head < n)) {
    uint32_t v = queue[head++];
    for (uint32_t k = j->dag->ch_off[v]; k < j->dag->ch_off[v + 1]; k++) {
      uint32_t ch = j->dag->ch[k];
      if (!cairn__hmap_get(&marks, (uint64_t)ch + 1) && (!lost || j->tasks[ch].state != TS_DONE) &&
          touch(&marks, &queue, &tail, &cap, ch, 2))
        goto nomem;
    }
  }
  for (uint32_t q = 0; q < tail; q++) {
    uint32_t v = queue[q];
    mtask *t = &j->tasks[v];
    int seed = (uintptr_t)cairn__hmap_get(&marks, (uint64_t)v + 1) == 1;
    int had_work = t->rep != NULL || t->state == TS_DONE || t->state == TS_RUNNING;
    if (seed || had_work) {
      new_round(c, j, v, lost && seed ? -1 : OUT_TAINTED);
      if (seed) {
        *requeued += 1;
        if (ids)
          json_array_append_new(ids, json_pack("{s:I, s:s}", "job", (json_int_t)j->id, "task",
                                               t->name));
      } else if (tainted)
        *tainted += 1;
    }
    set_state(c, j, v, TS_WAITING);
    t->queued = 0; /* an entry in the urgent ring is stale now (trust.c) */
    j->pol->reset(j->pstate, v);
  }
  /* pending parents and states from scratch for what was touched */
  for (uint32_t q = 0; q < tail; q++) {
    uint32_t v = queue[q];
    mtask *t = &j->tasks[v];
    t->npending = 0;
    for (uint32_t p = j->dag->par_off[v]; p < j->dag->par_off[v + 1]; p++)
      t->npending += j->tasks[j->dag->par[p]].state != TS_DONE;
    if (t->npending == 0)
      set_state(c, j, v, TS_ELIGIBLE);
    j_task(c, j, v);
  }
  for (uint32_t q = 0; q < tail; q++)
    replan(c, j, queue[q]); /* an eligible one goes back to the policy (enqueue) */
  job_finish_check(c, j);
  goto out;
nomem:
  st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
out:
  cairn__hmap_free(&marks);
  free(queue);
  return st;
}

cairn_status cairn__core_requeue(cairn__core *c, mjob *j, const uint32_t *seeds, uint32_t n,
                                 int64_t *requeued, int64_t *tainted, json_t *ids,
                                 cairn_error *err) {
  return requeue(c, j, seeds, n, 0, requeued, tainted, ids, err);
}

cairn_status cairn__core_recompute(cairn__core *c, mjob *j, uint32_t parent, cairn_error *err) {
  int64_t requeued = 0, tainted = 0;
  return requeue(c, j, &parent, 1, 1, &requeued, &tainted, NULL, err);
}

void cairn__ban_mark(cairn__core *c, mvol *bad, const char *reason) {
  bad->banned = 1;
  cairn__ban_begin(c, bad);
  cairn__quar_drop(c, bad); /* a ban supersedes it (load.c agrees) */
  c->peer_gen++; /* every peer key changes: the grants it holds stop working */
  cairn__journal_put(c->journal, cairn__jrec_ban(bad->id, reason));
  cairn__dist_forget(c, bad); /* J_BAN deletes its holdings on disk */
  /* its leases are revoked: their tasks want other volunteers now */
  while (bad->nactive) {
    mlease *l = cairn__hmap_get(&c->leases, (uint64_t)bad->active[0]);
    if (!l) {
      bad->active[0] = bad->active[--bad->nactive];
      continue;
    }
    drop_lease(c, l, LEASE_EXPIRED);
    replan(c, l->job, l->task);
    free(l);
  }
}

cairn_status cairn__ban_tasks(cairn__core *c, mjob *j, int64_t vol, const uint32_t *tasks,
                              uint32_t n, cairn__ban_tally *tl, cairn_error *err) {
  uint32_t *seeds = malloc((n ? n : 1) * sizeof *seeds), nseeds = 0;
  if (!seeds)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  /* its results become invalid; tasks that no longer have a quorum are re-queued */
  for (uint32_t k = 0; k < n; k++) {
    uint32_t v = tasks[k];
    mtask *t = &j->tasks[v];
    int touched = 0;
    for (uint32_t i = 0; t->rep && i < t->rep->nres; i++)
      if (t->rep->res[i].vol == vol && t->rep->res[i].outcome != OUT_INVALID &&
          t->rep->res[i].outcome != OUT_TAINTED) {
        if (t->rep->res[i].ok)
          touched = 1;
        set_outcome(c, &t->rep->res[i], OUT_INVALID);
        tl->invalidated++;
      }
    if (!touched)
      continue;
    const mres *cn;
    if (t->state == TS_DONE) {
      if (cairn__valid_best(j, t->rep, &cn) >= (uint32_t)j->quorum) {
        t->accepted = cn->idx; /* still a quorum without it: name an honest result */
        j_task(c, j, v);
        continue;
      }
      seeds[nseeds++] = v;
    } else
      replan(c, j, v);
  }
  cairn_status st = CAIRN_OK;
  if (nseeds)
    st = cairn__core_requeue(c, j, seeds, nseeds, &tl->requeued, &tl->tainted, tl->ids, err);
  free(seeds);
  return st;
}

/* ---- distribution reports ---- */

cairn_status cairn__core_set_bplan(cairn__core *c, const char *algo, cairn_error *err) {
  pthread_mutex_lock(&c->lock);
  cairn_status st = cairn__dist_set_planner(c->dist, algo, err);
  cairn__core_unlock(c);
  return st;
}

void cairn__core_served_by_master(cairn__core *c, const char *sha256, uint64_t bytes) {
  pthread_mutex_lock(&c->lock);
  cairn__dist_served(c->dist, sha256, bytes, 0);
  cairn__core_unlock(c);
}
