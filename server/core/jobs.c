/* jobs.c — job submission, files, waiting, and the read-only JSON views of
 * the core (jobs, tasks, volunteers, metrics). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/base64.h"
#include "common/buf.h"
#include "common/grant.h"
#include "common/log.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/core/demand.h"
#include "server/core/outputs.h"
#include "server/dist/dist.h"
#include "server/core/apps.h"
#include "server/core/fit.h"
#include "server/core/size.h"
#include "server/store/store_sizing.h"

void cairn__job_free(mjob *j) {
  if (!j)
    return;
  if (j->pol && j->pstate)
    j->pol->destroy(j->pstate);
  free(j->name);
  free(j->app);
  free(j->app_version);
  free(j->policy_name);
  cairn__validator_free(&j->validator);
  for (uint32_t i = 0; i < j->nfiles; i++) {
    free(j->files[i].name);
    free(j->files[i].assigned);
  }
  free(j->files);
  for (uint32_t i = 0; j->tasks && i < j->ntasks; i++) {
    cairn__rep_free(j->tasks[i].rep);
    free(j->tasks[i].name);
    free(j->tasks[i].args_json);
    free(j->tasks[i].run_json);
    free(j->tasks[i].inputs);
    cairn__tio_free(j->tasks[i].io);
  }
  cairn__size_job_free(j);
  free(j->tasks);
  free(j->rclasses);
  free(j->rclass_tasks);
  free(j->rclass_eligible);
  free(j->parked);
  free(j->urgent);
  cairn__dag_free(j->dag);
  free(j);
}

void cairn__vol_free(mvol *v) {
  if (!v)
    return;
  free(v->name);
  free(v->cluster);
  free(v->peer_url);
  free(v->team);
  for (int i = 0; v->apps && i < v->napps; i++)
    free(v->apps[i]);
  free(v->apps);
  free(v->active);
  free(v->did);
  cairn__trust_free(v);
  free(v);
}

int cairn__job_start_policy(mjob *j, cairn_error *err) {
  j->pol = cairn__policy_find(j->policy_name);
  if (!j->pol) {
    cairn__error_set(err, CAIRN_EINVAL, "job: unknown policy \"%s\"", j->policy_name);
    return -1;
  }
  j->pstate = j->pol->create(j->dag, (uint64_t)j->id);
  if (!j->pstate) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory creating the %s policy", j->policy_name);
    return -1;
  }
  return 0;
}

int cairn__job_rebuild_policy(mjob *j, cairn_error *err) {
  if (j->pol && j->pstate)
    j->pol->destroy(j->pstate);
  j->pstate = NULL;
  if (cairn__job_start_policy(j, err))
    return -1;
  j->nurgent = j->urgent_head = 0; /* every eligible task goes to the policy (trust.c) */
  uint32_t *order = malloc((j->ntasks + 1) * sizeof *order);
  if (!order || cairn__dag_topo_order(j->dag, order, NULL)) {
    free(order);
    cairn__error_set(err, CAIRN_EINTERNAL, "job %lld: cannot order its dag", (long long)j->id);
    return -1;
  }
  for (uint32_t k = 0; k < j->ntasks; k++)
    if (j->tasks[order[k]].state == TS_DONE)
      j->pol->executed(j->pstate, order[k]);
  for (uint32_t k = 0; k < j->ntasks; k++) {
    mtask *t = &j->tasks[order[k]];
    t->queued = t->state == TS_ELIGIBLE;
    if (t->queued)
      j->pol->ready(j->pstate, order[k]);
  }
  free(order);
  return 0;
}

static int grow_jobs(cairn__core *c) {
  if (c->njobs < c->capjobs)
    return 0;
  size_t ncap = c->capjobs ? 2 * c->capjobs : 16;
  mjob **nj = realloc(c->jobs, ncap * sizeof *nj);
  if (!nj)
    return -1;
  c->jobs = nj;
  c->capjobs = ncap;
  return 0;
}

/* Turns a validated spec into a job (no lock needed: the job is not shared yet). */
static mjob *job_from_spec(cairn__jobspec *spec, cairn_error *err) {
  mjob *j = calloc(1, sizeof *j);
  if (!j)
    goto nomem;
  j->name = cairn__strdup(spec->name);
  j->app = cairn__strdup(spec->app);
  if (spec->app_version && !(j->app_version = cairn__strdup(spec->app_version)))
    goto nomem;
  j->policy_name = cairn__strdup(spec->policy);
  j->replication = spec->replication;
  j->quorum = spec->quorum;
  j->lease_seconds = spec->lease_seconds;
  j->max_attempts = spec->max_attempts;
  j->priority = spec->priority;
  j->adaptive = spec->adaptive;
  j->keep_workers = !spec->keep_master;
  j->validator = spec->validator; /* its argv moves to the job */
  spec->validator = (cairn__validator){0};
  j->created = cairn__now();
  j->nfiles = spec->nfiles;
  j->files = calloc(spec->nfiles ? spec->nfiles : 1, sizeof *j->files);
  j->ntasks = spec->ntasks;
  j->tasks = calloc(spec->ntasks, sizeof *j->tasks);
  if (!j->name || !j->app || !j->policy_name || !j->files || !j->tasks ||
      cairn__fit_job_init(j, spec->rclasses, spec->nrclasses))
    goto nomem;
  for (uint32_t i = 0; i < spec->nfiles; i++) {
    j->files[i].name = cairn__strdup(spec->files[i].name);
    if (!j->files[i].name)
      goto nomem;
    memcpy(j->files[i].sha256, spec->files[i].sha256, 65);
    j->files[i].size = spec->files[i].size;
    j->files[i].broadcast = spec->files[i].broadcast;
  }
  for (uint32_t i = 0; i < spec->ntasks; i++) {
    cairn__jobspec_task *st = &spec->tasks[i];
    mtask *t = &j->tasks[i];
    json_t *args = json_array();
    for (uint32_t k = 0; k < st->nargs; k++)
      json_array_append_new(args, json_string(st->args[k]));
    t->args_json = json_dumps(args, JSON_COMPACT);
    json_decref(args);
    t->name = st->id;
    st->id = NULL;
    t->inputs = st->inputs;
    t->ninputs = st->ninputs;
    st->inputs = NULL;
    st->ninputs = 0;
    t->rclass = st->rclass;
    cairn__fit_count_task(j, t->rclass);
    char *run = NULL;
    if (!cairn__task_run_empty(&st->run)) {
      json_t *r = cairn__task_run_json(&st->run);
      run = r ? json_dumps(r, JSON_COMPACT) : NULL;
      json_decref(r);
      if (!run)
        goto nomem;
    }
    int bad = cairn__task_set_run(t, run);
    free(run);
    if (bad || !t->args_json || !t->name || cairn__tio_from_spec(t, st))
      goto nomem;
  }
  if (cairn__size_job_init(j, spec))
    goto nomem;
  j->dag = spec->dag;
  spec->dag = NULL;
  return j;
nomem:
  cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn__job_free(j);
  return NULL;
}

/* The job's store record, its id and task keys left for later (they are
 * assigned under the lock). NULL when out of memory. */
static cairn__jrec *job_record(const mjob *j) {
  cairn__jrec *r = cairn__jrec_job(j->name, j->app, j->policy_name, j->replication, j->quorum,
                                   j->lease_seconds, j->max_attempts, j->created, j->nfiles,
                                   j->ntasks);
  r = cairn__jrec_job_priority(r, j->priority);
  r = cairn__jrec_job_adaptive(r, j->adaptive);
  r = cairn__jrec_job_keep(r, j->keep_workers);
  r = cairn__jrec_job_app_version(r, j->app_version);
  if (j->validator.kind != CAIRN_VALIDATOR_EXACT) {
    json_t *vj = cairn__validator_json(&j->validator);
    char *text = vj ? json_dumps(vj, JSON_COMPACT) : NULL;
    r = text ? cairn__jrec_job_validator(r, text) : (cairn__jrec_free(r), NULL);
    free(text);
    json_decref(vj);
  }
  for (uint32_t i = 0; r && i < j->nfiles; i++)
    r = cairn__jrec_job_file(r, i, j->files[i].name, j->files[i].sha256, j->files[i].broadcast);
  for (uint32_t i = 0; r && i < j->ntasks; i++) {
    const mtask *t = &j->tasks[i];
    uint32_t p0 = j->dag->par_off[i], np = j->dag->par_off[i + 1] - p0;
    r = cairn__jrec_job_task(r, i, t->name, t->args_json, t->run_json, t->inputs, t->ninputs,
                             j->dag->par + p0, np);
    const cairn__resources *req = cairn__fit_req(j, i);
    if (!cairn__resources_equal(req, &CAIRN_RESOURCES_DEFAULT))
      r = cairn__jrec_job_task_res(r, i, req->cores, req->memory_mib, req->disk_mib);
    r = cairn__tio_record(r, i, t->io);
  }
  return r;
}

/* Builds j's policy state for job id id and hands it the job's sources:
 * O((n + m) log n) (policy.h), so cairn__core_submit does it before taking
 * c->lock, for the id the job will most likely get. */
static int prime_policy(mjob *j, int64_t id, cairn_error *err) {
  if (j->pol && j->pstate)
    j->pol->destroy(j->pstate);
  j->pstate = NULL;
  j->id = id;
  if (cairn__job_start_policy(j, err))
    return -1;
  for (uint32_t i = 0; i < j->ntasks; i++)
    if (cairn__dag_nparents(j->dag, i) == 0)
      j->pol->ready(j->pstate, i);
  return 0;
}

cairn_status cairn__core_submit(cairn__core *c, cairn__jobspec *spec, int64_t *job_id,
                                cairn_error *err) {
  cairn_status st = CAIRN_OK;
  mjob *j = NULL;
  cairn__jrec *rec = NULL, *srec = NULL;
  int unsized = 1;
  if ((st = cairn__core_check_limits(c, spec, err)) != CAIRN_OK)
    goto done;
  if (!cairn__policy_find(spec->policy)) {
    st = cairn__error_set(err, CAIRN_EINVAL, "job: unknown policy \"%s\"", spec->policy);
    goto done;
  }
  for (uint32_t i = 0; i < spec->nfiles; i++) {
    int64_t size;
    if (!cairn__core_has_file(c, spec->files[i].sha256, &size)) {
      st = cairn__error_set(err, CAIRN_EINVAL, "file \"%s\" (sha256 %s) has not been uploaded",
                           spec->files[i].name, spec->files[i].sha256);
      goto done;
    }
    if (spec->files[i].size >= 0 && spec->files[i].size != size) {
      st = cairn__error_set(err, CAIRN_EINVAL, "file \"%s\": size %lld does not match the "
                           "uploaded %lld bytes", spec->files[i].name,
                           (long long)spec->files[i].size, (long long)size);
      goto done;
    }
    spec->files[i].size = size;
  }
  j = job_from_spec(spec, err);
  if (!j) {
    st = err ? err->status : CAIRN_ENOMEM;
    goto done;
  }
  rec = job_record(j); /* before the lock: O(job) copying */
  srec = cairn__size_job_record(j, &unsized); /* its tasks' sizing rows: the same */
  if (!rec || (!srec && !unsized)) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto done;
  }
  pthread_mutex_lock(&c->lock);
  int64_t id = (int64_t)c->njobs + 1;
  cairn__core_unlock(c);
  if (prime_policy(j, id, err)) { /* before the lock: O((n + m) log n) */
    st = err ? err->status : CAIRN_ENOMEM;
    goto done;
  }
  pthread_mutex_lock(&c->lock);
  if (grow_jobs(c) || cairn__jobq_reserve(c)) {
    cairn__core_unlock(c);
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto done;
  }
  for (uint32_t i = 0; i < j->nfiles; i++) /* O(files): a deletion may be removing one */
    if (cairn__dist_file_dying(c->dist, j->files[i].sha256)) {
      cairn__core_unlock(c);
      st = cairn__error_set(err, CAIRN_ECONFLICT, "file \"%s\" (sha256 %s) is being removed with "
                           "a deleted job; upload it again", j->files[i].name, j->files[i].sha256);
      goto done;
    }
  /* another job took the id meanwhile (rare): the seed changes, build again */
  if (j->id != (int64_t)c->njobs + 1 && prime_policy(j, (int64_t)c->njobs + 1, err)) {
    cairn__core_unlock(c);
    st = err ? err->status : CAIRN_ENOMEM;
    goto done;
  }
  for (uint32_t i = 0; i < j->ntasks; i++) {
    mtask *t = &j->tasks[i];
    t->key = c->next_task_key++;
    t->npending = cairn__dag_nparents(j->dag, i);
    t->state = t->npending ? TS_WAITING : TS_ELIGIBLE;
    j->counts[t->state]++;
    cairn__demand_move(j, t, -1, t->state);
  }
  for (uint32_t i = 0; i < j->ntasks; i++) /* the policy has them: prime_policy */
    j->tasks[i].queued = j->tasks[i].state == TS_ELIGIBLE;
  c->jobs[c->njobs++] = j;
  cairn__jobq_update(c, j); /* O(E): its place by priority */
  *job_id = j->id;
  cairn__journal_put(c->journal, cairn__jrec_job_keys(rec, j->id, j->ntasks ? j->tasks[0].key : 0));
  rec = NULL;
  if (srec) {
    cairn__jrec_sizing_keys(srec, j->tasks[0].key);
    cairn__journal_put(c->journal, srec);
    srec = NULL;
  }
  cairn__handoff_locked(c, j); /* tasks to held requests, in this group (handoff.c) */
  cairn__wake_note(c, j->app, j->counts[TS_ELIGIBLE]);
  j = NULL;
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  st = cairn__journal_wait(c->journal, seq, err);
done:
  cairn__jrec_free(rec);
  cairn__jrec_free(srec);
  cairn__job_free(j);
  cairn__jobspec_free(spec);
  return st;
}

int cairn__core_has_file(cairn__core *c, const char *sha256, int64_t *size) {
  pthread_mutex_lock(&c->lock);
  int found = cairn__dist_has_file(c->dist, sha256, size) && !cairn__dist_remote(c->dist, sha256);
  cairn__core_unlock(c);
  return found;
}

cairn_status cairn__core_add_file(cairn__core *c, const char *sha256, int64_t size, int *existed,
                                  cairn_error *err) {
  pthread_mutex_lock(&c->lock);
  cairn_status st = cairn__dist_add_file(c, sha256, size, existed, err);
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

/* Views are built under the lock from memory, which may run ahead of the
 * store by batches nobody was told about. Before such a view leaves the
 * master, it waits (after the lock) until every change it shows is durable
 * (seq: cairn__journal_last() under the lock), so a reader never sees what
 * a crash could take back. */
static void settle(cairn__core *c, uint64_t seq) { cairn__journal_wait(c->journal, seq, NULL); }

/* Now plus ms, as an absolute CLOCK_REALTIME time. */
static struct timespec after_ms(long ms) {
  struct timespec t;
  clock_gettime(CLOCK_REALTIME, &t);
  t.tv_sec += ms / 1000;
  t.tv_nsec += (ms % 1000) * 1000000L;
  if (t.tv_nsec >= 1000000000L) {
    t.tv_sec++;
    t.tv_nsec -= 1000000000L;
  }
  return t;
}

static int before(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec < b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec < b->tv_nsec);
}

cairn_status cairn__core_wait_job(cairn__core *c, int64_t id, long timeout_ms, int *state,
                                 cairn_error *err) {
  struct timespec until = after_ms(timeout_ms < 0 ? 0 : timeout_ms);
  cairn_status st = CAIRN_OK;
  *state = JS_RUNNING;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    if (id < 1 || (size_t)id > c->njobs || !c->jobs[id - 1]) {
      st = cairn__error_set(err, CAIRN_ENOTFOUND, "no job %lld", (long long)id);
      break;
    }
    *state = c->jobs[id - 1]->state;
    if (*state != JS_RUNNING || cairn__journal_failed(c->journal, NULL) != CAIRN_OK)
      break;
    /* wakes at least once a second to notice a failed master */
    struct timespec wake = after_ms(1000);
    int last = timeout_ms >= 0 && before(&until, &wake);
    if (pthread_cond_timedwait(&c->job_cv, &c->lock, last ? &until : &wake) && last) {
      *state = c->jobs[id - 1]->state;
      if (*state == JS_RUNNING)
        st = cairn__error_set(err, CAIRN_ETIMEOUT, "job %lld is still running", (long long)id);
      break;
    }
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  if (st == CAIRN_OK) /* the end is told once durable, and never by a failed master */
    st = cairn__journal_wait(c->journal, seq, err);
  return st;
}

cairn_status cairn__core_probe_write(cairn__core *c, cairn_error *err) {
  char now[32];
  snprintf(now, sizeof now, "%lld", (long long)cairn__now());
  pthread_mutex_lock(&c->lock);
  cairn__journal_put(c->journal, cairn__jrec_meta("last_probe", now));
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return cairn__journal_wait(c->journal, seq, err);
}
/* ---- views ---- */

cairn_status cairn__core_volunteer(cairn__core *c, int64_t id, cairn__vol_info *out,
                                   cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  if (id < 1 || (size_t)id > c->nvols)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)id);
  else {
    const mvol *v = c->vols[id - 1];
    *out = (cairn__vol_info){.id = v->id, .allocations = v->allocations, .valid = v->valid,
                             .invalid = v->invalid, .pending = v->pending, .errors = v->errors,
                             .last_seen = v->last_seen, .banned = v->banned, .slots = v->slots,
                             .quarantined = v->quarantined, .napps = v->napps,
                             .trust = v->trust, .trusted = cairn__trust_trusted(c, v),
                             .q_seen = v->q_seen, .peer_max = v->peer_max,
                             .credit = v->credit, .cpu_seconds = v->cpu_seconds,
                             .credited = v->credited};
    snprintf(out->name, sizeof out->name, "%s", v->name);
    snprintf(out->cluster, sizeof out->cluster, "%s", v->cluster);
    snprintf(out->team, sizeof out->team, "%s", v->team ? v->team : "");
  }
  cairn__core_unlock(c);
  return st;
}

void cairn__core_set_peer_seed(cairn__core *c, const char *seed) {
  cairn__grant_secret(seed, c->peer_secret);
}

void cairn__core_peer_key(cairn__core *c, int64_t id, char key[65]) {
  pthread_mutex_lock(&c->lock);
  uint64_t gen = c->peer_gen;
  if (id >= 1 && (size_t)id <= c->nvols && c->vols[id - 1])
    c->vols[id - 1]->key_gen = gen; /* grants for its copies use this key from now on */
  cairn__core_unlock(c);
  cairn__grant_key(c->peer_secret, id, gen, key);
}

/* Set at open, never changed: read without the lock. */
cairn__ataf_family cairn__core_family(const cairn__core *c) { return c->family; }
const char *cairn__core_files_dir(const cairn__core *c) { return c->files_dir; }

/* The store serializes its own reads (it has a read connection and lock). */
cairn_status cairn__core_audit(cairn__core *c, int by, int64_t key,
                               int (*cb)(void *, const cairn__store_audit_row *), void *ud,
                               cairn_error *err) {
  return cairn__store_audit(c->store, by, key, cb, ud, err);
}

cairn_status cairn__core_task_output(cairn__core *c, int64_t key, char **out, size_t *len,
                                     cairn_error *err) {
  return cairn__store_task_output(c->store, key, out, len, err);
}


static json_t *counts_json(const mjob *j) {
  return json_pack("{s:i, s:i, s:i, s:i, s:i}", "waiting", (int)j->counts[TS_WAITING],
                   "eligible", (int)j->counts[TS_ELIGIBLE], "running", (int)j->counts[TS_RUNNING],
                   "done", (int)j->counts[TS_DONE], "failed", (int)j->counts[TS_FAILED]);
}

static json_t *job_json_locked(const mjob *j, int detail) {
  json_t *o = json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, s:o, s:I, s:I}", "id",
                        (json_int_t)j->id, "name", j->name, "app", j->app, "policy",
                        j->policy_name, "state", cairn__jstate_name[j->state], "tasks",
                        (int)j->ntasks, "counts", counts_json(j), "created",
                        (json_int_t)j->created, "priority", (json_int_t)j->priority);
  if (detail) {
    json_object_set_new(o, "replication", json_integer(j->replication));
    json_object_set_new(o, "quorum", json_integer(j->quorum));
    json_object_set_new(o, "adaptive", json_boolean(j->adaptive));
    json_object_set_new(o, "keep", json_string(j->keep_workers ? "workers" : "master"));
    json_object_set_new(o, "validator", cairn__validator_json(&j->validator));
    json_object_set_new(o, "lease_seconds", json_integer(j->lease_seconds));
    json_object_set_new(o, "max_attempts", json_integer(j->max_attempts));
    json_object_set_new(o, "finished", j->finished ? json_integer(j->finished) : json_null());
  }
  return o;
}

static json_t *job_json_dist(cairn__core *c, const mjob *j, int detail) {
  json_t *o = job_json_locked(j, detail);
  cairn__fit_job_json(c, j, o);
  if (detail)
    cairn__size_job_json(c, j, o); /* O(its categories) */
  json_t *d = cairn__dist_job_json(c, j);
  json_object_update(o, d);
  json_decref(d);
  return o;
}

json_t *cairn__core_job_json(cairn__core *c, int64_t id, int detail) {
  json_t *o = NULL;
  pthread_mutex_lock(&c->lock);
  if (id >= 1 && (size_t)id <= c->njobs && c->jobs[id - 1])
    o = job_json_dist(c, c->jobs[id - 1], detail);
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  settle(c, seq);
  return o;
}

int cairn__core_job_state(cairn__core *c, int64_t id) {
  int state = -1;
  pthread_mutex_lock(&c->lock);
  if (id >= 1 && (size_t)id <= c->njobs && c->jobs[id - 1])
    state = c->jobs[id - 1]->state;
  cairn__core_unlock(c);
  return state;
}

json_t *cairn__core_jobs_json(cairn__core *c) {
  json_t *a = json_array();
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->njobs; i++)
    if (c->jobs[i]) /* NULL: deleted */
      json_array_append_new(a, job_json_locked(c->jobs[i], 0));
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  settle(c, seq);
  return json_pack("{s:o}", "jobs", a);
}

typedef struct results_ctx {
  json_t *tasks;
  uint32_t base;  /* the job-file position of tasks[0] */
} results_ctx;

static json_t *output_json(const void *p, size_t n, json_t *into) {
  /* json_stringn refuses anything that is not valid UTF-8; NUL is refused here. */
  json_t *text = n == 0 ? json_string("") : memchr(p, 0, n) ? NULL : json_stringn(p, n);
  if (text) {
    json_object_set_new(into, "output", text);
    return into;
  }
  char *out = malloc(cairn__base64_encoded_len(n) + 1);
  if (!out)
    return into;
  cairn__base64_encode(p, n, out);
  json_object_set_new(into, "output", json_string(out));
  json_object_set_new(into, "encoding", json_string("base64"));
  free(out);
  return into;
}

static int result_row(void *ud, const cairn__store_result_row *r) {
  results_ctx *ctx = ud;
  json_t *t = r->seq >= ctx->base ? json_array_get(ctx->tasks, r->seq - ctx->base) : NULL;
  if (!t)
    return 0;
  json_object_set_new(t, "volunteer", json_integer(r->volunteer));
  json_object_set_new(t, "index", json_integer(r->idx));
  json_object_set_new(t, "exit_status", json_integer(r->exit_status));
  json_object_set_new(t, "reason", r->reason ? json_string(r->reason) : json_null());
  output_json(r->output, r->len, t);
  /* the stderr tail: a JSON string when valid UTF-8 without NUL, else base64 */
  json_t *e = json_object();
  output_json(r->stderr_tail, r->stderr_len, e);
  json_object_set(t, "stderr", json_object_get(e, "output"));
  if (json_object_get(e, "encoding"))
    json_object_set_new(t, "stderr_encoding", json_string("base64"));
  json_decref(e);
  return 0;
}

static int file_row(void *ud, const cairn__store_output_row *r) {
  results_ctx *ctx = ud;
  json_t *t = r->key >= ctx->base ? json_array_get(ctx->tasks, (size_t)(r->key - ctx->base))
                                   : NULL;
  json_t *files = json_object_get(t, "outputs");
  if (t && !files)
    json_object_set_new(t, "outputs", files = json_array());
  json_t *f = json_pack("{s:s, s:s, s:I}", "name", r->name, "sha256", r->sha256, "size",
                         (json_int_t)r->size);
  if (r->kept)
    json_object_set_new(f, "kept", json_true());
  json_array_append_new(files, f);
  return 0;
}

/* Appends up to limit - got tasks of job id from position start + got (at
 * most CAIRN__TASKS_CHUNK) to tasks, under one hold of the lock; *first
 * (< 0 the first time) becomes the job's first key and *start the position
 * after `after`, checked then. Returns how many, -1 with err. */
static long tasks_chunk(cairn__core *c, int64_t id, int64_t after, size_t limit, size_t got,
                        int64_t *first, uint32_t *start, uint32_t *total, uint64_t *seq,
                        json_t *tasks, cairn_error *err) {
  pthread_mutex_lock(&c->lock);
  const mjob *j = id >= 1 && (size_t)id <= c->njobs ? c->jobs[id - 1] : NULL;
  long n = -1;
  if (!j) {
    cairn__error_set(err, CAIRN_ENOTFOUND, "no job %lld", (long long)id);
    goto out;
  }
  if (*first < 0) {
    *first = j->ntasks ? j->tasks[0].key : 0;
    if (after && (after < *first || after - *first >= (int64_t)j->ntasks)) {
      cairn__error_set(err, CAIRN_EINVAL, "\"after\" (%lld) names no task of job %lld",
                      (long long)after, (long long)id);
      goto out;
    }
    *start = after ? (uint32_t)(after - *first + 1) : 0;
  }
  *total = j->ntasks;
  size_t at = *start + got, left = at < j->ntasks ? j->ntasks - at : 0;
  n = (long)(left < limit - got ? left : limit - got);
  n = n < CAIRN__TASKS_CHUNK ? n : CAIRN__TASKS_CHUNK;
  for (size_t i = at; i < at + (size_t)n; i++) {
    json_t *o = json_pack("{s:s, s:I, s:s, s:i, s:n, s:n, s:n, s:n, s:n}", "id",
                          j->tasks[i].name, "key", (json_int_t)j->tasks[i].key, "state",
                          cairn__tstate_name[j->tasks[i].state], "attempts",
                          j->tasks[i].attempts, "volunteer", "index", "exit_status", "output",
                          "reason");
    if (o && j->tasks[i].progress) /* a lease out whose worker reported it */
      json_object_set_new(o, "progress", json_real(CAIRN__PROGRESS_DEC(j->tasks[i].progress)));
    json_array_append_new(tasks, o);
  }
  *seq = cairn__journal_last(c->journal);
out:
  cairn__core_unlock(c);
  return n;
}

json_t *cairn__core_tasks_json(cairn__core *c, int64_t id, int64_t after, size_t limit,
                               cairn_error *err) {
  json_t *tasks = json_array();
  int64_t first = -1;
  uint32_t start = 0, total = 0;
  uint64_t seq = 0;
  size_t got = 0;
  for (long n = 1; n > 0 && got < limit; got += (size_t)n) {
    n = tasks_chunk(c, id, after, limit, got, &first, &start, &total, &seq, tasks, err);
    if (n < 0) {
      json_decref(tasks);
      return NULL;
    }
  }
  settle(c, seq);
  results_ctx ctx = {tasks, start};
  if (cairn__store_job_results(c->store, id, start, start + got, result_row, &ctx, err) !=
        CAIRN_OK ||
      cairn__store_job_files(c->store, id, start, start + got, file_row, &ctx, err) != CAIRN_OK ||
      cairn__size_page(c, id, start, tasks, err) != CAIRN_OK) {
    json_decref(tasks);
    return NULL;
  }
  /* a job's keys are consecutive in job-file order (given in one hold) */
  json_t *next = start + got < total && got ? json_integer(first + start + (int64_t)got - 1)
                                            : json_null();
  return json_pack("{s:o, s:o}", "tasks", tasks, "next", next);
}

/* One volunteer's entry of GET /v1/volunteers (under c->lock; c for the
 * entries that depend on the core's settings). */
static json_t *volunteer_row(const cairn__core *c, const mvol *v) {
  json_t *apps = json_array();
  for (int k = 0; k < v->napps; k++)
    if (v->apps[k][0] != '@') /* its platform: "platform" below */
      json_array_append_new(apps, json_string(v->apps[k]));
  json_t *o = json_pack(
    "{s:I, s:s, s:s, s:I, s:o, s:i, s:I, s:I, s:I, s:I, s:I, s:b, s:I}", "id", (json_int_t)v->id,
    "name", v->name, "cluster", v->cluster, "row", (json_int_t)v->id, "apps", apps, "slots",
    v->slots, "allocations", (json_int_t)v->allocations, "valid", (json_int_t)v->valid,
    "invalid", (json_int_t)v->invalid, "pending", (json_int_t)v->pending, "errors",
    (json_int_t)v->errors, "banned", v->banned, "last_seen", (json_int_t)v->last_seen);
  json_object_set_new(o, "quarantined", json_boolean(v->quarantined));
  const char *platform = cairn__vol_platform(v);
  json_object_set_new(o, "platform", platform ? json_string(platform) : json_null());
  json_object_set_new(o, "team", v->team ? json_string(v->team) : json_null());
  json_object_set_new(o, "account", v->account ? json_integer(v->account->id) : json_null());
  json_object_set_new(o, "expavg_credit",
                      json_real(cairn__expavg_at((double)cairn__now(), v->expavg, v->expavg_time)));
  json_object_set_new(o, "sandbox", v->sandbox[0] ? json_string(v->sandbox) : json_null());
  json_object_set_new(o, "credit", json_real(v->credit));
  json_object_set_new(o, "cpu_seconds", json_real(v->cpu_seconds));
  json_object_set_new(o, "trust", json_integer(v->trust));
  json_object_set_new(o, "trusted", json_boolean(cairn__trust_trusted(c, v)));
  json_object_set_new(o, "resources", v->has_offer ? cairn__resources_json(&v->offer) : json_null());
  json_object_set_new(o, "resources_held", cairn__resources_json(&v->used));
  return o;
}

/* Volunteers listed under one hold of c->lock: a listing of the whole
 * population lets requests in between chunks. */
#define VOL_LIST_CHUNK 256

static int append_json(const char *p, size_t n, void *b) {
  return cairn__buf_append(b, p, n);
}

char *cairn__core_volunteers_text(cairn__core *c, size_t *len) {
  cairn__buf out;
  cairn__buf_init(&out, (size_t)-1);
  json_t *rows[VOL_LIST_CHUNK];
  int bad = cairn__buf_append(&out, "{\"volunteers\":[", 15);
  uint64_t seq = 0;
  size_t total = SIZE_MAX; /* those registered at the first hold */
  for (size_t i = 0, n = 1; n > 0; i += n) {
    pthread_mutex_lock(&c->lock);
    total = total < c->nvols ? total : c->nvols; /* volunteers are only ever added */
    n = total - i < VOL_LIST_CHUNK ? total - i : VOL_LIST_CHUNK;
    for (size_t k = 0; k < n; k++)
      rows[k] = volunteer_row(c, c->vols[i + k]);
    seq = cairn__journal_last(c->journal);
    cairn__core_unlock(c);
    for (size_t k = 0; k < n; k++) { /* rendered outside the lock */
      bad |= (i + k && cairn__buf_append(&out, ",", 1)) ||
             !rows[k] || json_dump_callback(rows[k], append_json, &out, JSON_COMPACT);
      json_decref(rows[k]);
    }
  }
  settle(c, seq);
  bad |= cairn__buf_append(&out, "]}", 2);
  if (bad) {
    cairn__buf_free(&out);
    return NULL;
  }
  return cairn__buf_take(&out, len);
}

json_t *cairn__core_volunteers_json(cairn__core *c) {
  size_t len = 0;
  char *text = cairn__core_volunteers_text(c, &len);
  json_t *o = text ? json_loadb(text, len, 0, NULL) : NULL;
  free(text);
  return o;
}

static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
  __attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static void appendf(char **buf, size_t *len, size_t *cap, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
    va_end(ap);
    if (n < 0)
      return;
    if (*buf && *len + (size_t)n < *cap) {
      *len += (size_t)n;
      return;
    }
    size_t ncap = (*cap ? *cap * 2 : 4096) + (size_t)n;
    char *nb = realloc(*buf, ncap);
    if (!nb)
      return;
    *buf = nb;
    *cap = ncap;
  }
}

void cairn__core_metrics(cairn__core *c, char **buf, size_t *len, size_t *cap) {
  uint64_t counts[TS_COUNT] = {0};
  size_t running = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < c->njobs; i++) {
    if (!c->jobs[i])
      continue;
    for (int s = 0; s < TS_COUNT; s++)
      counts[s] += c->jobs[i]->counts[s];
    running += c->jobs[i]->state == JS_RUNNING;
  }
  uint64_t allocs = c->allocations_total, expired = c->expired_total, handed = c->handoffs_total;
  uint64_t res[OUT_COUNT], bans, ban_slices, ban_hold, quar_now, quars, trust[4];
  cairn__ban_counts(c, &bans, &ban_slices, &ban_hold);
  cairn__quar_counts(c, &quar_now, &quars);
  cairn__trust_counts(c, trust);
  cairn__dist_counters dc;
  cairn__dist_get_counters(c->dist, &dc);
  memcpy(res, c->results_total, sizeof res);
  uint64_t failures[CAIRN_REASON_KINDS];
  memcpy(failures, c->failures_total, sizeof failures);
  size_t leases = c->leases.count, vols = c->nvols, jobs = c->njobs;
  uint64_t recomputed = dc.recomputed;
  uint64_t up[4] = {c->uploads.count, (uint64_t)c->upload_bytes, c->uploads_reclaimed,
                    c->upload_bytes_reclaimed};
  cairn__core_unlock(c);
  uint64_t committed = cairn__journal_committed(c->journal);
  appendf(buf, len, cap, "# HELP cairn_tasks Tasks by state.\n# TYPE cairn_tasks gauge\n");
  for (int s = 0; s < TS_COUNT; s++)
    appendf(buf, len, cap, "cairn_tasks{state=\"%s\"} %llu\n", cairn__tstate_name[s],
            (unsigned long long)counts[s]);
  appendf(buf, len, cap,
          "# HELP cairn_jobs Jobs known, and those still running.\n# TYPE cairn_jobs gauge\n"
          "cairn_jobs{state=\"all\"} %zu\ncairn_jobs{state=\"running\"} %zu\n"
          "# HELP cairn_volunteers Registered volunteers.\n# TYPE cairn_volunteers gauge\n"
          "cairn_volunteers %zu\n"
          "# HELP cairn_leases Leases currently held.\n# TYPE cairn_leases gauge\n"
          "cairn_leases %zu\n"
          "# HELP cairn_allocations_total Allocations issued since start.\n"
          "# TYPE cairn_allocations_total counter\ncairn_allocations_total %llu\n"
          "# HELP cairn_handoffs_total Allocations handed to a held work request in the "
          "commit of their job's submission.\n"
          "# TYPE cairn_handoffs_total counter\ncairn_handoffs_total %llu\n"
          "# HELP cairn_leases_expired_total Leases that expired since start.\n"
          "# TYPE cairn_leases_expired_total counter\ncairn_leases_expired_total %llu\n"
          "# HELP cairn_commits_total Store transactions (group commits) since start.\n"
          "# TYPE cairn_commits_total counter\ncairn_commits_total %llu\n"
          "# HELP cairn_results_total Results received since start, by outcome.\n"
          "# TYPE cairn_results_total counter\n",
          jobs, running, vols, leases, (unsigned long long)allocs, (unsigned long long)handed,
          (unsigned long long)expired,
          (unsigned long long)committed);
  for (int i = 0; i < OUT_COUNT; i++)
    appendf(buf, len, cap, "cairn_results_total{outcome=\"%s\"} %llu\n",
            cairn__outcome_name[i], (unsigned long long)res[i]);
  appendf(buf, len, cap, "# HELP cairn_bans_total Volunteers banned since start.\n"
          "# TYPE cairn_bans_total counter\ncairn_bans_total %llu\n"
          "# HELP cairn_ban_slices_total Slices of bans done since start (at most --ban-slice "
          "results each).\n# TYPE cairn_ban_slices_total counter\ncairn_ban_slices_total %llu\n",
          (unsigned long long)bans, (unsigned long long)ban_slices);
  appendf(buf, len, cap, "# HELP cairn_volunteers_quarantined Volunteers in quarantine.\n"
          "# TYPE cairn_volunteers_quarantined gauge\ncairn_volunteers_quarantined %llu\n"
          "# HELP cairn_quarantines_total Volunteers quarantined since start.\n"
          "# TYPE cairn_quarantines_total counter\ncairn_quarantines_total %llu\n",
          (unsigned long long)quar_now, (unsigned long long)quars);
  appendf(buf, len, cap, "# HELP cairn_tasks_unreplicated_total Tasks accepted on the single "
          "result of a trusted volunteer (adaptive replication).\n"
          "# TYPE cairn_tasks_unreplicated_total counter\ncairn_tasks_unreplicated_total %llu\n"
          "# HELP cairn_spot_checks_total Tasks of trusted volunteers replicated by a spot check.\n"
          "# TYPE cairn_spot_checks_total counter\ncairn_spot_checks_total %llu\n"
          "# HELP cairn_trust_resets_total Invalid results that reset a volunteer's trust.\n"
          "# TYPE cairn_trust_resets_total counter\ncairn_trust_resets_total %llu\n"
          "# HELP cairn_trust_rechecks_total Unreplicated accepted tasks re-queued by a reset.\n"
          "# TYPE cairn_trust_rechecks_total counter\ncairn_trust_rechecks_total %llu\n",
          (unsigned long long)trust[0], (unsigned long long)trust[1],
          (unsigned long long)trust[2], (unsigned long long)trust[3]);
  appendf(buf, len, cap, "# HELP cairn_file_bytes_served_total Input bytes sent to workers, by "
          "the master or by peers (as the peers report).\n"
          "# TYPE cairn_file_bytes_served_total counter\n"
          "cairn_file_bytes_served_total{source=\"master\"} %llu\n"
          "cairn_file_bytes_served_total{source=\"peer\"} %llu\n",
          (unsigned long long)dc.bytes_master, (unsigned long long)dc.bytes_peer);
  appendf(buf, len, cap, "# HELP cairn_file_bytes_received_total Bytes of files uploaded to the "
          "master (inputs, and outputs it keeps).\n"
          "# TYPE cairn_file_bytes_received_total counter\ncairn_file_bytes_received_total %llu\n"
          "# HELP cairn_outputs_recomputed_total Done tasks made eligible again because an output "
          "kept on workers had no holder left.\n"
          "# TYPE cairn_outputs_recomputed_total counter\ncairn_outputs_recomputed_total %llu\n",
          (unsigned long long)dc.bytes_received, (unsigned long long)recomputed);
  appendf(buf, len, cap, "# HELP cairn_uploads_unclaimed Output files uploaded under live "
          "leases that no result named yet, and their bytes.\n"
          "# TYPE cairn_uploads_unclaimed gauge\ncairn_uploads_unclaimed{unit=\"files\"} %llu\n"
          "cairn_uploads_unclaimed{unit=\"bytes\"} %llu\n"
          "# HELP cairn_uploads_reclaimed_total Unclaimed output files removed from the file "
          "store since start (their leases ended, or found at start-up), and their bytes.\n"
          "# TYPE cairn_uploads_reclaimed_total counter\n"
          "cairn_uploads_reclaimed_total{unit=\"files\"} %llu\n"
          "cairn_uploads_reclaimed_total{unit=\"bytes\"} %llu\n",
          (unsigned long long)up[0], (unsigned long long)up[1], (unsigned long long)up[2],
          (unsigned long long)up[3]);
  /* measured link rates (cluster labels carry no quotes, backslashes or
   * control characters: checked at registration) */
  pthread_mutex_lock(&c->lock);
  json_t *rates = cairn__rates_json(c->dist);
  cairn__core_unlock(c);
  appendf(buf, len, cap, "# HELP cairn_link_rate_bytes_per_second Measured download rate from "
          "a cluster (or the master) into a cluster, weighted towards recent transfers.\n"
          "# TYPE cairn_link_rate_bytes_per_second gauge\n");
  size_t i;
  json_t *r;
  json_array_foreach(rates, i, r) {
    appendf(buf, len, cap, "cairn_link_rate_bytes_per_second{from=\"%s\",to=\"%s\"} %lld\n",
            json_string_value(json_object_get(r, "from")),
            json_string_value(json_object_get(r, "to")),
            (long long)json_integer_value(json_object_get(r, "bytes_per_second")));
  }
  json_decref(rates);
  appendf(buf, len, cap, "# HELP cairn_fetch_reports_total Input downloads workers measured and "
          "reported (source, bytes, time).\n"
          "# TYPE cairn_fetch_reports_total counter\ncairn_fetch_reports_total %llu\n",
          (unsigned long long)dc.fetch_reports);
  appendf(buf, len, cap, "# HELP cairn_relay_sources_total Sources named that were still "
          "receiving the file (cut-through relays).\n"
          "# TYPE cairn_relay_sources_total counter\ncairn_relay_sources_total %llu\n",
          (unsigned long long)dc.relay_sources);
  appendf(buf, len, cap, "# HELP cairn_multicast_plans_total Multicast plans of outputs kept on "
          "workers built (--multicast-plan).\n"
          "# TYPE cairn_multicast_plans_total counter\ncairn_multicast_plans_total %llu\n"
          "# HELP cairn_kept_copies_total Copies of outputs kept on workers handed out, by whether "
          "their first source was the planned sender or the online rule's; from_plan: copies "
          "reported from the planned sender.\n# TYPE cairn_kept_copies_total counter\n"
          "cairn_kept_copies_total{source=\"planned\"} %llu\n"
          "cairn_kept_copies_total{source=\"online\"} %llu\n"
          "cairn_kept_copies_total{source=\"from_plan\"} %llu\n",
          (unsigned long long)dc.mcast_plans, (unsigned long long)dc.kept_planned,
          (unsigned long long)dc.kept_online, (unsigned long long)dc.kept_from_plan);
  static const char *const kinds[CAIRN_REASON_KINDS] = CAIRN_REASON_KIND_NAMES;
  appendf(buf, len, cap, "# HELP cairn_task_failures_total Failed attempts since start, by "
          "reason (a limit, a signal, an exit status, a lease past its hard deadline: wall).\n"
          "# TYPE cairn_task_failures_total counter\n");
  for (int k = 0; k < CAIRN_REASON_KINDS; k++)
    appendf(buf, len, cap, "cairn_task_failures_total{reason=\"%s\"} %llu\n", kinds[k],
            (unsigned long long)failures[k]);
  static const char *const reasons[CAIRN_FAIL_REASONS] = CAIRN_FAIL_REASON_NAMES;
  appendf(buf, len, cap, "# HELP cairn_peer_failures_total Peer sources workers reported as "
          "having failed a download, by reason.\n"
          "# TYPE cairn_peer_failures_total counter\n");
  for (int k = 0; k < CAIRN_FAIL_REASONS; k++)
    appendf(buf, len, cap, "cairn_peer_failures_total{reason=\"%s\"} %llu\n", reasons[k],
            (unsigned long long)dc.peer_failures[k]);
}
