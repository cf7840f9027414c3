/* load.c — opening the core: the store, the ATAF family fixed at creation,
 * and the in-memory state rebuilt from the durable rows (jobs, tasks, their
 * dags and policies, volunteers, leases still held, file holdings). Cost
 * O(rows). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

#include "common/log.h"
#include "server/store/chain.h"
#include "server/core/apps.h"
#include "server/core/core.h"
#include "server/core/demand.h"
#include "server/core/outputs.h"
#include "server/core/size.h"
#include "server/core/uploads.h"
#include "server/dist/dist.h"
#include "server/core/accounts.h"
#include "server/core/sessions.h"
#include "server/core/teams.h"
#include "server/core/fit.h"
#include "server/trust/validate.h"
#include "common/sha256.h"


static int load_vol(void *ud, const cairn__store_volunteer_row *r) {
  cairn__core *c = ud;
  mvol *v = calloc(1, sizeof *v);
  json_t *apps = json_loads(r->apps_json, 0, NULL);
  if (!v || !apps || !json_is_array(apps))
    goto fail;
  v->id = r->id;
  v->name = cairn__strdup(r->name);
  v->cluster = cairn__strdup(r->cluster);
  v->slots = r->slots;
  v->banned = r->banned != 0;
  cairn__ban_load_vol(v, r->banned > 1); /* pending: cairn__core_ban_resume finishes it */
  cairn__quar_load(c, v, r->quarantined);
  cairn__trust_load_vol(v, r->trust);
  c->peer_gen += (uint64_t)(r->banned != 0);
  v->allocations = r->allocations;
  v->created = v->last_seen = r->created;
  snprintf(v->token_hash, sizeof v->token_hash, "%s", r->token_hash);
  if (r->peer_url && !(v->peer_url = cairn__strdup(r->peer_url)))
    goto fail;
  if (cairn__credit_load_vol(v, r->team, r->credit, r->cpu_seconds, r->credited, r->expavg,
                             r->expavg_time))
    goto fail;
  v->apps = calloc(json_array_size(apps) + 1, sizeof(char *));
  if (!v->name || !v->cluster || !v->apps)
    goto fail;
  for (size_t i = 0; i < json_array_size(apps); i++) {
    v->apps[i] = cairn__strdup(json_string_value(json_array_get(apps, i)));
    if (!v->apps[i])
      goto fail;
    v->napps = (int)i + 1;
  }
  json_decref(apps);
  apps = NULL;
  if ((size_t)r->id != c->nvols + 1) {
    CAIRN_ERR(&c->log, "store: volunteer ids are not dense (found %lld after %zu)", (long long)r->id,
              c->nvols);
    goto fail;
  }
  if (c->nvols == c->capvols) {
    size_t ncap = c->capvols ? 2 * c->capvols : 16;
    mvol **nv = realloc(c->vols, ncap * sizeof *nv);
    if (!nv)
      goto fail;
    c->vols = nv;
    c->capvols = ncap;
  }
  if (cairn__hmap_put(&c->vol_by_token, cairn__hash_key(v->token_hash), v))
    goto fail;
  c->vols[c->nvols++] = v;
  if (cairn__accounts_attach_loaded(c, v, r->account)) /* its account's list of hosts */
    return -1;
  cairn__dist_peer_url(c->dist, v);
  if (cairn__app_runners_add(c, v))
    return -1;
  return 0;
fail:
  json_decref(apps);
  cairn__vol_free(v);
  return -1;
}

static int load_trust(void *ud, const cairn__store_trust_row *r) {
  return cairn__trust_load(ud, r);
}

static int load_outcome(void *ud, const cairn__store_outcome_row *r) {
  cairn__core *c = ud;
  if (r->volunteer < 1 || (size_t)r->volunteer > c->nvols)
    return 0;
  mvol *v = c->vols[r->volunteer - 1];
  if (strcmp(r->outcome, "valid") == 0)
    v->valid = r->count;
  else if (strcmp(r->outcome, "invalid") == 0)
    v->invalid = r->count;
  else if (strcmp(r->outcome, "pending") == 0)
    v->pending = r->count;
  else if (strcmp(r->outcome, "error") == 0)
    v->errors = r->count;
  return 0;
}

static int load_file(void *ud, const cairn__store_file_row *r) {
  cairn__core *c = ud;
  return cairn__dist_restore_file(c->dist, r->sha256, r->size);
}

/* A file of those whose bytes only workers hold (keep.c). */
static int load_kept(void *ud, const char *sha256) {
  cairn__dist_set_remote(((cairn__core *)ud)->dist, sha256, 1);
  return 0;
}

/* Holdings of volunteers in good standing, of files loaded before. */
static int load_rate(void *ud, const cairn__store_rate_row *r) {
  return cairn__rate_restore(((cairn__core *)ud)->dist, r->src, r->dst, (double)r->bytes_per_second, r->samples);
}

static int load_holder(void *ud, const cairn__store_holder_row *r) {
  cairn__core *c = ud;
  if (r->volunteer < 1 || (size_t)r->volunteer > c->nvols)
    return 0;
  return cairn__dist_restore_holder(c, c->vols[r->volunteer - 1], r->sha256, r->since);
}

static int load_job(void *ud, const cairn__store_job_row *r) {
  cairn__core *c = ud;
  if ((size_t)r->id != c->njobs + 1)
    return -1;
  if (c->njobs == c->capjobs) {
    size_t ncap = c->capjobs ? 2 * c->capjobs : 16;
    mjob **nj = realloc(c->jobs, ncap * sizeof *nj);
    if (!nj)
      return -1;
    c->jobs = nj;
    c->capjobs = ncap;
  }
  int deleting = strcmp(r->state, "deleting") == 0, purging = strcmp(r->state, "purging") == 0;
  if (deleting || purging) { /* a stop interrupted its deletion: finished at open */
    __typeof__(c->resume) nr = realloc(c->resume, (c->nresume + 1) * sizeof *nr);
    if (!nr)
      return -1;
    c->resume = nr;
    c->resume[c->nresume].id = r->id;
    c->resume[c->nresume++].purge = purging;
  }
  if (deleting || purging || strcmp(r->state, "deleted") == 0) { /* it keeps its id, as NULL */
    c->jobs[c->njobs++] = NULL;
    return 0;
  }
  mjob *j = calloc(1, sizeof *j);
  if (!j)
    return -1;
  j->id = r->id;
  j->name = cairn__strdup(r->name);
  j->app = cairn__strdup(r->app);
  if (r->app_version && !(j->app_version = cairn__strdup(r->app_version))) {
    cairn__job_free(j);
    return -1;
  }
  j->policy_name = cairn__strdup(r->policy);
  j->replication = r->replication;
  j->quorum = r->quorum;
  j->lease_seconds = r->lease_seconds;
  j->max_attempts = r->max_attempts;
  j->created = r->created;
  j->finished = r->finished;
  j->priority = r->priority;
  j->adaptive = r->adaptive;
  j->keep_workers = r->keep_workers;
  json_t *vj = r->validator ? json_loads(r->validator, JSON_DECODE_ANY, NULL) : NULL;
  cairn_status vst = r->validator && !vj ? CAIRN_EINVAL
                     : cairn__validator_parse(vj, "stored validator", &j->validator, NULL);
  json_decref(vj);
  if (vst != CAIRN_OK) {
    CAIRN_ERR(&c->log, "store: job %lld has a validator this master cannot read: %.200s",
              (long long)r->id, r->validator);
    cairn__job_free(j);
    return -1;
  }
  j->state = strcmp(r->state, "done") == 0        ? JS_DONE
             : strcmp(r->state, "failed") == 0    ? JS_FAILED
             : strcmp(r->state, "cancelled") == 0 ? JS_CANCELLED
                                                  : JS_RUNNING;
  if (!j->name || !j->app || !j->policy_name) {
    cairn__job_free(j);
    return -1;
  }
  c->jobs[c->njobs++] = j;
  return 0;
}

static int load_job_file(void *ud, const cairn__store_job_file_row *r) {
  cairn__core *c = ud;
  if (r->job < 1 || (size_t)r->job > c->njobs || !c->jobs[r->job - 1])
    return -1;
  mjob *j = c->jobs[r->job - 1];
  if ((uint32_t)r->seq != j->nfiles)
    return -1;
  mfile *nf = realloc(j->files, (j->nfiles + 1) * sizeof *nf);
  if (!nf)
    return -1;
  j->files = nf;
  mfile *f = &j->files[j->nfiles];
  memset(f, 0, sizeof *f);
  f->name = cairn__strdup(r->name);
  if (!f->name)
    return -1;
  snprintf(f->sha256, sizeof f->sha256, "%s", r->sha256);
  f->size = r->size;
  f->broadcast = r->broadcast;
  j->nfiles++;
  return 0;
}

/* Tasks arrive in (job, seq) order; a job's task array grows by doubling. */
typedef struct task_loader {
  cairn__core *c;
  uint32_t *cap; /* per job */
  cairn__hmap by_key; /* task key -> (job index + 1) << 32 | seq, boxed in the pointer */
} task_loader;

static int load_task(void *ud, const cairn__store_task_row *r) {
  task_loader *tl = ud;
  cairn__core *c = tl->c;
  if (r->job < 1 || (size_t)r->job > c->njobs || !c->jobs[r->job - 1])
    return -1;
  mjob *j = c->jobs[r->job - 1];
  if (r->seq != j->ntasks)
    return -1;
  if (j->ntasks == tl->cap[r->job - 1]) {
    uint32_t ncap = j->ntasks ? 2 * j->ntasks : 64;
    mtask *nt = realloc(j->tasks, ncap * sizeof *nt);
    if (!nt)
      return -1;
    j->tasks = nt;
    tl->cap[r->job - 1] = ncap;
  }
  mtask *t = &j->tasks[j->ntasks];
  memset(t, 0, sizeof *t);
  t->key = r->key;
  t->name = cairn__strdup(r->name);
  t->args_json = cairn__strdup(r->args_json);
  if (cairn__task_set_run(t, r->run_json))
    return -1;
  t->attempts = (uint16_t)r->attempts;
  t->accepted = r->accepted;
  t->round = r->round;
  t->state = TS_WAITING;
  for (int s = 0; s < TS_COUNT; s++)
    if (strcmp(cairn__tstate_name[s], r->state) == 0)
      t->state = (uint8_t)s;
  j->ntasks++;
  if (!t->name || !t->args_json)
    return -1;
  json_t *in = json_loads(r->inputs_json, 0, NULL);
  if (!in || !json_is_array(in)) {
    json_decref(in);
    return -1;
  }
  t->inputs = calloc(json_array_size(in) + 1, sizeof(uint32_t));
  if (!t->inputs) {
    json_decref(in);
    return -1;
  }
  for (size_t k = 0; k < json_array_size(in); k++)
    t->inputs[t->ninputs++] = (uint32_t)json_integer_value(json_array_get(in, k));
  json_decref(in);
  if (r->key >= c->next_task_key)
    c->next_task_key = r->key + 1;
  uintptr_t loc = ((uintptr_t)r->job << 32) | r->seq;
  return cairn__hmap_put(&tl->by_key, (uint64_t)r->key, (void *)loc);
}

typedef struct edge_loader {
  task_loader *tl;
  cairn__edge **edges; /* per job */
  uint64_t *n, *cap;
} edge_loader;

static int load_edge(void *ud, const cairn__store_edge_row *r) {
  edge_loader *el = ud;
  uintptr_t tloc = (uintptr_t)cairn__hmap_get(&el->tl->by_key, (uint64_t)r->task);
  uintptr_t ploc = (uintptr_t)cairn__hmap_get(&el->tl->by_key, (uint64_t)r->parent);
  if (!tloc || !ploc || (tloc >> 32) != (ploc >> 32))
    return -1;
  size_t ji = (size_t)(tloc >> 32) - 1;
  if (el->n[ji] == el->cap[ji]) {
    uint64_t ncap = el->cap[ji] ? 2 * el->cap[ji] : 64;
    cairn__edge *ne = realloc(el->edges[ji], ncap * sizeof *ne);
    if (!ne)
      return -1;
    el->edges[ji] = ne;
    el->cap[ji] = ncap;
  }
  el->edges[ji][el->n[ji]++] = (cairn__edge){(uint32_t)(ploc & 0xffffffffu),
                                            (uint32_t)(tloc & 0xffffffffu)};
  return 0;
}

static int outcome_of(const char *name) {
  for (int i = 0; i < OUT_COUNT; i++)
    if (strcmp(cairn__outcome_name[i], name) == 0)
      return i;
  return OUT_INVALID;
}

/* A task's request other than the default (before its allocations). */
static int load_task_res(void *ud, const cairn__store_res_row *r) {
  task_loader *tl = ud;
  uintptr_t loc = (uintptr_t)cairn__hmap_get(&tl->by_key, (uint64_t)r->id);
  if (!loc)
    return -1;
  mjob *j = tl->c->jobs[(loc >> 32) - 1];
  int k = cairn__fit_class_of(j, &(cairn__resources){r->cores, r->memory_mib, r->disk_mib});
  if (k < 0)
    return -1;
  j->tasks[loc & 0xffffffffu].rclass = (uint8_t)k;
  return 0;
}

/* A volunteer's offer. */
static int load_offer(void *ud, const cairn__store_res_row *r) {
  cairn__core *c = ud;
  if (r->id < 1 || (size_t)r->id > c->nvols)
    return -1;
  mvol *v = c->vols[r->id - 1];
  v->offer = (cairn__resources){r->cores, r->memory_mib, r->disk_mib};
  v->has_offer = 1;
  cairn__resources_max(&c->largest, &v->offer);
  c->any_offer = 1;
  return 0;
}

/* Allocations of the tasks' current rounds: replicas, results, leases held. */
static int load_alloc(void *ud, const cairn__store_alloc_row *r) {
  task_loader *tl = ud;
  cairn__core *c = tl->c;
  uintptr_t loc = (uintptr_t)cairn__hmap_get(&tl->by_key, (uint64_t)r->task);
  if (!loc || r->volunteer < 1 || (size_t)r->volunteer > c->nvols)
    return -1;
  mjob *j = c->jobs[(loc >> 32) - 1];
  uint32_t seq = (uint32_t)(loc & 0xffffffffu);
  mtask *t = &j->tasks[seq];
  if (cairn__rep_add_vol(t, r->volunteer))
    return -1;
  if (r->outcome[0]) {
    int outcome = outcome_of(r->outcome);
    if (cairn__ban_note(c, c->vols[r->volunteer - 1], j, seq) || /* ban.c */
        cairn__rep_add_result(t, r->idx, r->volunteer, r->digest,
                              r->exit_status == 0 && outcome != OUT_ERROR, outcome))
      return -1;
    mres *m = &t->rep->res[t->rep->nres - 1];
    cairn__credit_load_res(c, m, r->cpu_seconds, r->credit, r->team, outcome == OUT_VALID);
    if (r->output) { /* validate.h: the files' key is the SHA-256 of files_key */
      const char *fk = r->files_key ? r->files_key : "";
      cairn__output_file *files;
      uint32_t nfiles;
      cairn__sha256_hex(fk, strlen(fk), m->fkey);
      if (cairn__valid_files_parse(fk, &files, &nfiles))
        return -1;
      int bad = cairn__valid_add(c, j, seq, r->output, r->output_len, files, nfiles, m->fkey);
      free(files);
      if (bad)
        return -1;
    }
  }
  if (strcmp(r->state, "leased") != 0)
    return 0;
  mlease *l = calloc(1, sizeof *l);
  if (!l)
    return -1;
  *l = (mlease){.idx = r->idx, .t = r->t, .issued = r->issued, .expires = r->expires,
                .hard = cairn__lease_hard(c, t, r->issued), .vol = c->vols[r->volunteer - 1],
                .job = j, .task = seq};
  mvol *v = l->vol;
  cairn__tsize size; /* what it is sized to now: what it was, unless a peak rose since */
  cairn__size_of(c, j, seq, v, &size);
  l->req = size.req;
  l->mem_mib = size.mem_mib;
  l->disk_mib = size.disk_mib;
  l->sized = (uint8_t)size.sized;
  if (cairn__hmap_put(&c->leases, (uint64_t)r->idx, l) || cairn__lease_push(c, r->expires, r->idx)) {
    free(l);
    return -1;
  }
  t->rep->active++;
  j->nleases++;
  cairn__fit_lease(v, &l->req, 1);
  return cairn__vol_add_active(v, r->idx);
}

/* Builds each job's dag, counts, pending parents and policy state. A task
 * recorded running without a lease out or a verdict to wait for (cannot
 * happen while batches are atomic) is made eligible again. */
static int finish_jobs(cairn__core *c, edge_loader *el, cairn_error *err) {
  for (size_t ji = 0; ji < c->njobs; ji++) {
    mjob *j = c->jobs[ji];
    if (!j)
      continue; /* deleted */
    j->dag = cairn__dag_build(j->ntasks, el->edges[ji], el->n[ji], err);
    if (!j->dag)
      return -1;
    for (uint32_t v = 0; v < j->ntasks; v++) {
      mtask *t = &j->tasks[v];
      t->npending = 0;
      for (uint32_t p = j->dag->par_off[v]; p < j->dag->par_off[v + 1]; p++)
        t->npending += j->tasks[j->dag->par[p]].state != TS_DONE;
      if (t->state == TS_DONE)
        cairn__valid_settle(t->rep, t->accepted); /* outputs it needs no more */
      else if (t->state == TS_FAILED)
        cairn__valid_free(t->rep);
      if (t->state == TS_RUNNING && (!t->rep || (!t->rep->active && !t->rep->checking))) {
        CAIRN_WARN(&c->log, "store: task %lld was running without a lease; eligible again",
                   (long long)t->key);
        t->state = TS_ELIGIBLE;
      }
      j->counts[t->state]++;
      cairn__demand_move(j, t, -1, t->state);
    }
    if (cairn__job_rebuild_policy(j, err))
      return -1;
    if (cairn__jobq_reserve(c)) {
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return -1;
    }
    cairn__jobq_update(c, j);
  }
  int64_t kept = cairn__store_max_task_key(c->store); /* deleted jobs' kept tasks too */
  if (kept >= c->next_task_key)
    c->next_task_key = kept + 1;
  return 0;
}

cairn_status cairn__core_load(cairn__core *c, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  task_loader tl = {.c = c};
  edge_loader el = {.tl = &tl};
  cairn__hmap_init(&tl.by_key);
  c->next_task_key = 1;
  c->loaded_at = cairn__now();
  st = cairn__accounts_load(c, err); /* before the volunteers attached to them */
  if (st == CAIRN_OK) /* after the accounts: founders, members, sessions */
    st = cairn__acteams_load(c, err);
  if (st == CAIRN_OK)
    st = cairn__sessions_load(c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_volunteers(c->store, load_vol, c, err);
  for (size_t i = 0; i < c->nvols; i++) /* their keys outlived the restart (jobs.c) */
    if (c->vols[i])
      c->vols[i]->key_gen = c->peer_gen;
  if (st == CAIRN_OK)
    st = cairn__store_load_offers(c->store, load_offer, c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_outcomes(c->store, load_outcome, c, err);
  if (st == CAIRN_OK) /* before the results that name them */
    st = cairn__store_load_teams(c->store, cairn__team_load, c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_files(c->store, load_file, c, err);
  if (st == CAIRN_OK)
    st = cairn__apps_load(c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_kept(c->store, load_kept, c, err); /* before their holders */
  if (st == CAIRN_OK)
    st = cairn__store_load_holders(c->store, load_holder, c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_rates(c->store, load_rate, c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_jobs(c->store, load_job, c, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_job_files(c->store, load_job_file, c, err);
  if (st != CAIRN_OK)
    goto out;
  tl.cap = calloc(c->njobs + 1, sizeof *tl.cap);
  el.edges = calloc(c->njobs + 1, sizeof *el.edges);
  el.n = calloc(c->njobs + 1, sizeof *el.n);
  el.cap = calloc(c->njobs + 1, sizeof *el.cap);
  if (!tl.cap || !el.edges || !el.n || !el.cap) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory loading the store");
    goto out;
  }
  st = cairn__store_load_tasks(c->store, load_task, &tl, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_parents(c->store, load_edge, &el, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_task_resources(c->store, load_task_res, &tl, err);
  for (size_t ji = 0; st == CAIRN_OK && ji < c->njobs; ji++) {
    mjob *j = c->jobs[ji];
    if (!j)
      continue; /* deleted */
    if (!j->rclasses && cairn__fit_class_of(j, &CAIRN_RESOURCES_DEFAULT) < 0)
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory loading the store");
    for (uint32_t v = 0; st == CAIRN_OK && v < j->ntasks; v++)
      cairn__fit_count_task(j, j->tasks[v].rclass);
  }
  if (st == CAIRN_OK) /* categories, sizing, peaks (size.h): before the leases' sizes */
    st = cairn__size_load(c, &tl.by_key, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_allocs(c->store, load_alloc, &tl, err);
  if (st == CAIRN_OK)
    st = cairn__outputs_load(c, &tl.by_key, err);
  if (st == CAIRN_OK) /* rings of unreplicated results (trust.c) */
    st = cairn__store_load_trust(c->store, load_trust, c, err);
  if (st != CAIRN_OK)
    goto out;
  if (finish_jobs(c, &el, err))
    st = err ? err->status : CAIRN_EIO;
out:
  for (size_t i = 0; el.edges && i < c->njobs; i++)
    free(el.edges[i]);
  free(el.edges);
  free(el.n);
  free(el.cap);
  free(tl.cap);
  cairn__hmap_free(&tl.by_key);
  return st;
}

cairn__core *cairn__core_open(const char *db_path, int durable, const char *family,
                             const cairn__logger *log, int fail_fd, cairn_error *err) {
  cairn__core *c = calloc(1, sizeof *c);
  if (!c) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  if (log)
    c->log = *log;
  else
    cairn__logger_init(&c->log, CAIRN_LOG_DEFAULT, NULL, NULL);
  pthread_mutex_init(&c->lock, NULL);
  pthread_cond_init(&c->job_cv, NULL);
  c->calls = (cairn__core_calls){.unlock_wake = cairn__core_unlock_wake,
                                 .lost_flush = cairn__lost_flush,
                                 .requeue = cairn__core_requeue,
                                 .verdict = cairn__core_verdict,
                                 .recompute = cairn__core_recompute};
  c->wall_grace = CAIRN_DEFAULT_WALL_GRACE_SECONDS;
  if (cairn__ban_open(c) || cairn__quar_open(c) || cairn__trust_open(c) || cairn__teams_open(c) ||
      cairn__apps_open(c) || cairn__accounts_open(c) || cairn__acteams_open(c) ||
      cairn__sessions_open(c)) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto fail;
  }
  cairn__hmap_init(&c->vol_by_token);
  cairn__hmap_init(&c->app_runners);
  cairn__hmap_init(&c->leases);
  cairn__hmap_init(&c->uploads);
  if (!(c->dist = cairn__dist_create())) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto fail;
  }
  if (snprintf(c->files_dir, sizeof c->files_dir, "%s.files", db_path) >=
      (int)sizeof c->files_dir) {
    cairn__error_set(err, CAIRN_EINVAL, "database path too long");
    goto fail;
  }
  if (mkdir(c->files_dir, 0755) && errno != EEXIST) {
    cairn__error_set(err, CAIRN_EIO, "cannot create %s: %s", c->files_dir, strerror(errno));
    goto fail;
  }
  c->store = cairn__store_open(db_path, durable, err);
  if (!c->store)
    goto fail;
  char fam[64];
  cairn__ataf_family want = CAIRN_ATAF_PHISHARP;
  if (family && cairn__ataf_parse_family(family, &want)) {
    cairn__error_set(err, CAIRN_EINVAL, "unknown ATAF family \"%s\" (phi1, phi3 or phisharp)",
                    family);
    goto fail;
  }
  if (cairn__store_meta_get(c->store, "ataf_family", fam, sizeof fam) == 0) {
    if (cairn__ataf_parse_family(fam, &c->family)) {
      cairn__error_set(err, CAIRN_EINVAL, "store: unknown ATAF family \"%s\"", fam);
      goto fail;
    }
    if (family && want != c->family) {
      cairn__error_set(err, CAIRN_EINVAL, "%s was created with the ATAF family %s, which is fixed "
                      "for its life (asked for %s)", db_path, fam, family);
      goto fail;
    }
  } else {
    c->family = want;
    if (cairn__store_begin(c->store, err) ||
        cairn__store_meta_set(c->store, "ataf_family", cairn__ataf_family_name(c->family), err) ||
        cairn__store_commit(c->store, err)) {
      cairn__store_rollback(c->store);
      goto fail;
    }
  }
  unsigned char raw[32];
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw) {
    cairn__error_set(err, CAIRN_EIO, "no randomness for the peer secret");
    goto fail;
  }
  for (int i = 0; i < 32; i++)
    snprintf(c->peer_secret + 2 * i, 3, "%02x", raw[i]);
  /* a database from before peer grants kept a shared peer token: drop it;
   * records from before the audit chain are noted (chain.h) */
  if (cairn__store_begin(c->store, err) || cairn__store_meta_delete(c->store, "peer_token", err) ||
      cairn__store_chain_note_gap(c->store, err) || cairn__store_commit(c->store, err)) {
    cairn__store_rollback(c->store);
    goto fail;
  }
  if (cairn__vcmd_open(c)) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto fail;
  }
  if (cairn__core_load(c, err) != CAIRN_OK ||
      !(c->journal = cairn__journal_open(c->store, &c->log, fail_fd, err)) ||
      cairn__core_resume_deletes(c, err) != CAIRN_OK ||
      cairn__uploads_sweep(c, err) != CAIRN_OK) /* uploads.h: after the deletions' ends */
    goto fail;
  if (cairn__vcmd_start(c)) {
    cairn__error_set(err, CAIRN_ENOMEM, "cannot start the validator thread");
    goto fail;
  }
  return c;
fail:
  cairn__core_close(c);
  return NULL;
}

cairn_status cairn__core_health(cairn__core *c, cairn_error *err) {
  return cairn__journal_failed(c->journal, err);
}

void cairn__core_close(cairn__core *c) {
  if (!c)
    return;
  cairn__vcmd_close(c); /* its verdicts journal: before the journal closes */
  cairn__journal_close(c->journal);
  cairn__store_close(c->store);
  for (size_t i = 0; i < c->njobs; i++)
    cairn__job_free(c->jobs[i]);
  free(c->jobs);
  free(c->runq);
  free(c->resume);
  cairn__trust_close(c);
  cairn__quar_close(c);
  cairn__ban_close(c);
  for (size_t i = 0; i < c->nvols; i++)
    cairn__vol_free(c->vols[i]);
  free(c->vols);
  for (size_t i = 0; i < c->leases.cap; i++)
    if (c->leases.keys[i]) {
      free(((mlease *)c->leases.vals[i])->up);
      free(c->leases.vals[i]);
    }
  cairn__hmap_free(&c->leases);
  cairn__uploads_free(c);
  cairn__hmap_free(&c->vol_by_token);
  cairn__hmap_free(&c->app_runners);
  cairn__teams_free(c);
  cairn__apps_close(c);
  cairn__sessions_close(c);
  cairn__acteams_close(c);
  cairn__accounts_close(c);
  cairn__dist_destroy(c->dist);
  free(c->heap);
  pthread_mutex_destroy(&c->lock);
  pthread_cond_destroy(&c->job_cv);
  free(c);
}
