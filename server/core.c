/* core.c — the master's transitions: register, allocate, result, heartbeat,
 * expire, submit (see core.h for the task and lease life-cycles).
 *
 * Cost per request: picking work is O(J + policy pick) for J running jobs
 * (the policy's pick is O(1) for fifo, O(log n) for ic); a result costs
 * O(children of the task); leases live in a hash map and a min-heap, so
 * expiry is O(log L) per lease. Nothing scans the task table.
 */
#include "server/core.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#include "common/log.h"
#include "common/sha256.h"

const char *const cairn__tstate_name[TS_COUNT] = {"waiting", "eligible", "running", "done",
                                                  "failed"};
const char *const cairn__jstate_name[3] = {"running", "done", "failed"};

enum { LEASE_LEASED, LEASE_RETURNED, LEASE_EXPIRED };
enum { OUT_VALID, OUT_INVALID, OUT_PENDING, OUT_ERROR };

int64_t cairn__now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec;
}

char *cairn__strdup(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

uint64_t cairn__hash_key(const char *hex) {
  uint64_t k = 0;
  for (int i = 0; i < 16 && hex[i]; i++) {
    char ch = hex[i];
    k = (k << 4) | (uint64_t)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
  }
  return k ? k : 1;
}

/* ---- lease heap (min by expires) ---- */

int cairn__lease_push(cairn_core *c, int64_t expires, int64_t idx) {
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

static lease_heap_item heap_pop(cairn_core *c) {
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

/* ---- journal helpers ---- */

static void j_task(cairn_core *c, const mjob *j, uint32_t v) {
  const mtask *t = &j->tasks[v];
  cairn__journal_rec r = {.type = J_TASK, .a = t->key, .b = t->state, .c = t->attempts,
                          .d = t->accepted};
  if (cairn__journal_add(c, &r))
    CAIRN_ERR("out of memory journaling task %lld", (long long)t->key);
}

static void j_lease(cairn_core *c, const mlease *l, int state) {
  cairn__journal_rec r = {.type = J_LEASE, .a = l->idx, .b = l->expires, .c = state};
  if (cairn__journal_add(c, &r))
    CAIRN_ERR("out of memory journaling lease %lld", (long long)l->idx);
}

static void set_state(mjob *j, uint32_t v, int state) {
  j->counts[j->tasks[v].state]--;
  j->tasks[v].state = (uint8_t)state;
  j->counts[state]++;
}

static void job_finish_check(cairn_core *c, mjob *j) {
  int ns = j->state;
  if (j->counts[TS_FAILED] > 0)
    ns = JS_FAILED;
  else if (j->counts[TS_DONE] == j->ntasks)
    ns = JS_DONE;
  if (ns == j->state || j->state != JS_RUNNING)
    return;
  j->state = ns;
  j->finished = cairn__now();
  cairn__journal_rec r = {.type = J_JOBSTATE, .a = j->id, .b = ns, .c = j->finished};
  if (cairn__journal_add(c, &r))
    CAIRN_ERR("out of memory journaling job %lld", (long long)j->id);
  pthread_cond_broadcast(&c->job_cv);
}

/* Task v lost its allocation without success: back to ELIGIBLE, or FAILED
 * after max_attempts allocations. */
static void requeue_or_fail(cairn_core *c, mjob *j, uint32_t v) {
  if (j->tasks[v].attempts >= j->max_attempts) {
    set_state(j, v, TS_FAILED);
    j_task(c, j, v);
    job_finish_check(c, j);
    return;
  }
  set_state(j, v, TS_ELIGIBLE);
  j->pol->ready(j->pstate, v);
  j_task(c, j, v);
}

static void vol_drop_active(mvol *v, int64_t idx) {
  for (size_t i = 0; i < v->nactive; i++)
    if (v->active[i] == idx) {
      v->active[i] = v->active[--v->nactive];
      return;
    }
}

static int vol_add_active(mvol *v, int64_t idx) {
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

/* ---- register / auth ---- */

cairn_status cairn__core_register(cairn_core *c, const char *name, const char *cluster,
                                  char **apps, int napps, int slots, int64_t *id,
                                  char token[65], cairn_error *err) {
  unsigned char raw[32];
  static const char digits[] = "0123456789abcdef";
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return cairn_error_set(err, CAIRN_EIO, "no randomness for a token: %s", strerror(errno));
  for (int i = 0; i < 32; i++) {
    token[2 * i] = digits[raw[i] >> 4];
    token[2 * i + 1] = digits[raw[i] & 15];
  }
  token[64] = '\0';
  mvol *v = calloc(1, sizeof *v);
  if (!v)
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  v->name = cairn__strdup(name);
  v->cluster = cairn__strdup(cluster);
  v->apps = calloc((size_t)napps, sizeof(char *));
  v->slots = slots;
  v->created = v->last_seen = cairn__now();
  cairn_sha256_hex(token, 64, v->token_hash);
  int ok = v->name && v->cluster && v->apps;
  for (int i = 0; ok && i < napps; i++) {
    v->apps[i] = cairn__strdup(apps[i]);
    ok = v->apps[i] != NULL;
    v->napps = i + 1;
  }
  if (!ok) {
    cairn__vol_free(v);
    return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  pthread_mutex_lock(&c->lock);
  cairn_status st = CAIRN_OK;
  if (c->nvols == c->capvols) {
    size_t ncap = c->capvols ? 2 * c->capvols : 16;
    mvol **nv = realloc(c->vols, ncap * sizeof *nv);
    if (!nv) {
      st = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
      goto out;
    }
    c->vols = nv;
    c->capvols = ncap;
  }
  if (cairn_hmap_get(&c->vol_by_token, cairn__hash_key(v->token_hash))) {
    st = cairn_error_set(err, CAIRN_EINTERNAL, "token collision; register again");
    goto out;
  }
  if (cairn_hmap_put(&c->vol_by_token, cairn__hash_key(v->token_hash), v)) {
    st = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  v->id = (int64_t)c->nvols + 1;
  c->vols[c->nvols++] = v;
  *id = v->id;
  cairn__journal_rec r = {.type = J_VOL, .ref = v};
  v = NULL; /* the core owns it now */
  if (cairn__journal_add(c, &r))
    st = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
  else
    st = cairn__journal_wait(c, cairn__journal_pending(c), err);
out:
  pthread_mutex_unlock(&c->lock);
  cairn__vol_free(v);
  return st;
}

cairn_status cairn__core_auth(cairn_core *c, const char *token, mvol **out, cairn_error *err) {
  char hash[65];
  if (!token || strlen(token) != 64)
    return cairn_error_set(err, CAIRN_EAUTH, "missing or malformed volunteer token");
  cairn_sha256_hex(token, 64, hash);
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn_hmap_get(&c->vol_by_token, cairn__hash_key(hash));
  cairn_status st = CAIRN_OK;
  if (!v || strcmp(v->token_hash, hash) != 0)
    st = cairn_error_set(err, CAIRN_EAUTH, "unknown volunteer token");
  else if (v->banned)
    st = cairn_error_set(err, CAIRN_EFORBIDDEN, "volunteer %lld is banned", (long long)v->id);
  else {
    v->last_seen = cairn__now();
    *out = v;
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

/* ---- work ---- */

static int runs_app(const mvol *v, char **apps, int napps, const char *app) {
  int declared = 0;
  for (int i = 0; i < v->napps; i++)
    if (strcmp(v->apps[i], app) == 0)
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

static json_t *work_json(const mlease *l) {
  const mjob *j = l->job;
  const mtask *t = &j->tasks[l->task];
  json_t *inputs = json_array(), *parents = json_array();
  char url[128];
  for (uint32_t k = 0; k < t->ninputs; k++) {
    const mfile *f = &j->files[t->inputs[k]];
    snprintf(url, sizeof url, "/v1/files/%s", f->sha256);
    json_array_append_new(inputs, json_pack("{s:s, s:s, s:I, s:s}", "name", f->name, "sha256",
                                            f->sha256, "size", (json_int_t)f->size, "url", url));
  }
  for (uint32_t p = j->dag->par_off[l->task]; p < j->dag->par_off[l->task + 1]; p++) {
    const mtask *pt = &j->tasks[j->dag->par[p]];
    snprintf(url, sizeof url, "/v1/tasks/%lld/output", (long long)pt->key);
    json_array_append_new(parents, json_pack("{s:s, s:s}", "id", pt->name, "url", url));
  }
  json_t *args = json_loads(t->args_json, 0, NULL);
  return json_pack("{s:I, s:I, s:i, s:{s:I, s:s, s:s, s:o, s:o, s:o}}", "index",
                   (json_int_t)l->idx, "lease_expires", (json_int_t)l->expires, "lease_seconds",
                   j->lease_seconds, "task", "job", (json_int_t)j->id, "id", t->name, "app",
                   j->app, "args", args ? args : json_array(), "inputs", inputs, "parents",
                   parents);
}

/* Allocates the best eligible task for v (under the lock); journals it.
 * Returns the /v1/work body, or NULL with *st = CAIRN_OK when none. */
static json_t *allocate_locked(cairn_core *c, mvol *v, char **apps, int napps, cairn_status *st,
                               cairn_error *err) {
  *st = CAIRN_OK;
  for (size_t ji = 0; ji < c->njobs; ji++) {
    mjob *j = c->jobs[ji];
    uint32_t task;
    if (j->counts[TS_ELIGIBLE] == 0 || !runs_app(v, apps, napps, j->app))
      continue;
    if (j->pol->pick(j->pstate, &task))
      continue;
    int64_t t = v->allocations + 1, idx = 0;
    uint64_t uidx;
    *st = cairn_ataf_index(c->family, (uint64_t)v->id, (uint64_t)t, &uidx, err);
    if (*st != CAIRN_OK) {
      j->pol->ready(j->pstate, task);
      return NULL;
    }
    idx = (int64_t)uidx;
    mlease *l = calloc(1, sizeof *l);
    if (!l || cairn_hmap_put(&c->leases, (uint64_t)idx, l) || vol_add_active(v, idx)) {
      if (l && cairn_hmap_get(&c->leases, (uint64_t)idx) == l)
        cairn_hmap_del(&c->leases, (uint64_t)idx);
      free(l);
      j->pol->ready(j->pstate, task);
      *st = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
      return NULL;
    }
    *l = (mlease){.idx = idx, .t = t, .issued = cairn__now(), .vol = v, .job = j, .task = task};
    l->expires = l->issued + j->lease_seconds;
    if (cairn__lease_push(c, l->expires, idx))
      CAIRN_ERR("out of memory queuing lease %lld", (long long)idx);
    v->allocations = t;
    set_state(j, task, TS_RUNNING);
    j->tasks[task].attempts++;
    c->allocations_total++;
    cairn__journal_rec r = {.type = J_ALLOC, .a = idx, .b = v->id, .c = t,
                            .d = j->tasks[task].key, .e = l->issued, .f = l->expires};
    if (cairn__journal_add(c, &r))
      CAIRN_ERR("out of memory journaling allocation %lld", (long long)idx);
    j_task(c, j, task);
    return work_json(l);
  }
  return NULL;
}

cairn_status cairn__core_work(cairn_core *c, mvol *v, char **apps, int napps, json_t **resp,
                              cairn_error *err) {
  cairn_status st;
  pthread_mutex_lock(&c->lock);
  *resp = allocate_locked(c, v, apps, napps, &st, err);
  if (*resp) {
    st = cairn__journal_wait(c, cairn__journal_pending(c), err);
    if (st != CAIRN_OK) {
      json_decref(*resp);
      *resp = NULL;
    }
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

/* ---- results ---- */

static void release_children(cairn_core *c, mjob *j, uint32_t v) {
  const cairn_dag *d = j->dag;
  for (uint32_t k = d->ch_off[v]; k < d->ch_off[v + 1]; k++) {
    uint32_t ch = d->ch[k];
    mtask *t = &j->tasks[ch];
    if (t->npending > 0 && --t->npending == 0 && t->state == TS_WAITING) {
      set_state(j, ch, TS_ELIGIBLE);
      j->pol->ready(j->pstate, ch);
      j_task(c, j, ch);
    }
  }
}

cairn_status cairn__core_result(cairn_core *c, mvol *v, int64_t idx, int exit_status,
                                const void *output, size_t len, json_t **next, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  if (next)
    *next = NULL;
  char digest[65];
  cairn_sha256_hex(output, len, digest);
  pthread_mutex_lock(&c->lock);
  mlease *l = idx > 0 ? cairn_hmap_get(&c->leases, (uint64_t)idx) : NULL;
  if (!l) {
    uint64_t x = 0, t = 0;
    if (idx <= 0 || cairn_ataf_invert(c->family, (uint64_t)idx, &x, &t, NULL) != CAIRN_OK ||
        x > c->nvols || (int64_t)t > c->vols[x - 1]->allocations)
      st = cairn_error_set(err, CAIRN_ENOTFOUND, "index %lld was never allocated",
                           (long long)idx);
    else if ((int64_t)x != v->id)
      st = cairn_error_set(err, CAIRN_EFORBIDDEN, "index %lld belongs to another volunteer",
                           (long long)idx);
    else
      st = cairn_error_set(err, CAIRN_ECONFLICT,
                           "the lease of index %lld is no longer held (expired or already "
                           "returned); result discarded", (long long)idx);
    goto out;
  }
  if (l->vol != v) {
    st = cairn_error_set(err, CAIRN_EFORBIDDEN, "index %lld belongs to another volunteer",
                         (long long)idx);
    goto out;
  }
  void *copy = malloc(len ? len : 1);
  char *dg = cairn__strdup(digest);
  if (!copy || !dg) {
    free(copy);
    free(dg);
    st = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  if (len)
    memcpy(copy, output, len);
  mjob *j = l->job;
  uint32_t task = l->task;
  int outcome = exit_status == 0 ? OUT_VALID : OUT_ERROR;
  int64_t now = cairn__now();
  cairn__journal_rec r = {.type = J_RESULT, .a = idx, .b = j->tasks[task].key, .c = v->id,
                          .d = exit_status, .e = now, .f = outcome, .s1 = dg, .blob = copy,
                          .bloblen = len};
  if (cairn__journal_add(c, &r)) {
    free(copy);
    free(dg);
    st = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  j_lease(c, l, LEASE_RETURNED);
  cairn_hmap_del(&c->leases, (uint64_t)idx);
  vol_drop_active(v, idx);
  free(l);
  c->results_total[outcome]++;
  j->tasks[task].accepted = idx;
  if (outcome == OUT_VALID) {
    v->valid++;
    set_state(j, task, TS_DONE);
    j->pol->executed(j->pstate, task);
    j_task(c, j, task);
    release_children(c, j, task);
    job_finish_check(c, j);
  } else {
    v->errors++;
    requeue_or_fail(c, j, task);
  }
  if (next) {
    cairn_status ast;
    cairn_error aerr = {0};
    *next = allocate_locked(c, v, NULL, 0, &ast, &aerr);
    if (ast != CAIRN_OK)
      CAIRN_WARN("no next task for volunteer %lld: %s", (long long)v->id, aerr.text);
  }
  st = cairn__journal_wait(c, cairn__journal_pending(c), err);
  if (st != CAIRN_OK && next) {
    json_decref(*next);
    *next = NULL;
  }
out:
  pthread_mutex_unlock(&c->lock);
  return st;
}

/* ---- heartbeat and expiry ---- */

cairn_status cairn__core_heartbeat(cairn_core *c, mvol *v, json_t **resp, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  json_t *held = json_array();
  int64_t now = cairn__now();
  int lease_seconds = 0;
  pthread_mutex_lock(&c->lock);
  for (size_t i = 0; i < v->nactive; i++) {
    mlease *l = cairn_hmap_get(&c->leases, (uint64_t)v->active[i]);
    if (!l)
      continue;
    int64_t ne = now + l->job->lease_seconds;
    if (l->job->lease_seconds > lease_seconds)
      lease_seconds = l->job->lease_seconds;
    if (ne > l->expires) {
      l->expires = ne;
      if (cairn__lease_push(c, ne, l->idx))
        CAIRN_ERR("out of memory queuing lease %lld", (long long)l->idx);
      j_lease(c, l, LEASE_LEASED);
    }
    json_array_append_new(held, json_integer(l->idx));
  }
  if (v->nactive)
    st = cairn__journal_wait(c, cairn__journal_pending(c), err);
  pthread_mutex_unlock(&c->lock);
  *resp = json_pack("{s:o, s:i}", "extended", held, "lease_seconds", lease_seconds);
  return st;
}

int cairn__core_expire(cairn_core *c, int64_t now) {
  int n = 0;
  pthread_mutex_lock(&c->lock);
  while (c->nheap && c->heap[0].expires <= now) {
    lease_heap_item it = heap_pop(c);
    mlease *l = cairn_hmap_get(&c->leases, (uint64_t)it.idx);
    if (!l || l->expires != it.expires)
      continue; /* returned, or extended (a newer heap item exists) */
    cairn_hmap_del(&c->leases, (uint64_t)it.idx);
    vol_drop_active(l->vol, l->idx);
    j_lease(c, l, LEASE_EXPIRED);
    c->expired_total++;
    CAIRN_INFO("lease %lld of volunteer %lld expired (job %lld task %s)", (long long)l->idx,
               (long long)l->vol->id, (long long)l->job->id, l->job->tasks[l->task].name);
    requeue_or_fail(c, l->job, l->task);
    free(l);
    n++;
  }
  pthread_mutex_unlock(&c->lock);
  return n;
}
