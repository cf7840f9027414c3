/* limits.c — what the master knows of the limits tasks run under: the
 * server's ceiling, each task's run (limits, env, stdin, network) in its work
 * offers, the hard deadline of a lease (start + wall limit + grace, which
 * heartbeats do not move), the reasons of failed attempts (counted for
 * /metrics) and the preference for another volunteer after a failure.
 * Part of the scheduling core (core.h): functions named "under the lock"
 * are called with c->lock held; every one is O(1) unless it says. */
#include <stdlib.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/size.h"
#include "server/core/views.h"

static const char *const ceiling_flags[CAIRN_LIMIT_COUNT] = {
  "--max-wall-seconds", "--max-cpu-seconds", "--max-memory-mib", "--max-disk-mib",
  "--max-output-mib"};

cairn_status cairn__core_set_limits(cairn__core *c, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                    int wall_grace, cairn_error *err) {
  static const char *const names[CAIRN_LIMIT_COUNT] = CAIRN_LIMIT_NAMES;
  for (int i = 0; i < CAIRN_LIMIT_COUNT; i++)
    if (ceiling[i] < 0 || ceiling[i] > CAIRN_LIMIT_MAX)
      return cairn__error_set(err, CAIRN_EINVAL, "%s (the ceiling of %s) must be from 0 (none) "
                             "to %lld", ceiling_flags[i], names[i], (long long)CAIRN_LIMIT_MAX);
  if (wall_grace < 0 || wall_grace > CAIRN_MAX_LEASE_SECONDS)
    return cairn__error_set(err, CAIRN_EINVAL, "--wall-grace-seconds must be from 0 (default %d) "
                           "to %d", CAIRN_DEFAULT_WALL_GRACE_SECONDS, CAIRN_MAX_LEASE_SECONDS);
  pthread_mutex_lock(&c->lock);
  memcpy(c->ceiling, ceiling, sizeof c->ceiling);
  c->wall_grace = wall_grace ? wall_grace : CAIRN_DEFAULT_WALL_GRACE_SECONDS;
  for (size_t i = 0; i < c->leases.cap; i++) {
    mlease *l = c->leases.keys[i] ? c->leases.vals[i] : NULL;
    if (!l)
      continue;
    l->hard = cairn__lease_hard(c, &l->job->tasks[l->task], l->issued);
    int64_t e = cairn__lease_cap(l, l->expires);
    if (e != l->expires && cairn__lease_push(c, e, l->idx) == 0)
      l->expires = e;
  }
  cairn__core_unlock(c);
  return CAIRN_OK;
}

cairn_status cairn__core_check_limits(const cairn__core *c, cairn__jobspec *spec, cairn_error *err) {
  return cairn__jobspec_ceiling(spec, c->ceiling, ceiling_flags, err);
}

int64_t cairn__lease_hard(const cairn__core *c, const mtask *t, int64_t issued) {
  return t->wall > 0 ? issued + t->wall + c->wall_grace : 0;
}

int64_t cairn__lease_cap(const mlease *l, int64_t expires) {
  return l->hard > 0 && expires > l->hard ? l->hard : expires;
}

int cairn__task_set_run(mtask *t, const char *run_json) {
  free(t->run_json);
  t->run_json = NULL;
  t->wall = 0;
  t->out_mib = 0;
  if (!run_json)
    return 0;
  json_t *o = json_loads(run_json, 0, NULL);
  json_t *wall = json_object_get(json_object_get(o, "limits"), "wall_seconds");
  if (json_is_integer(wall) && json_integer_value(wall) > 0 &&
      json_integer_value(wall) <= CAIRN_LIMIT_MAX)
    t->wall = (int32_t)json_integer_value(wall);
  json_t *out = json_object_get(json_object_get(o, "limits"), "output_mib");
  if (json_is_integer(out) && json_integer_value(out) > 0 &&
      json_integer_value(out) <= INT32_MAX)
    t->out_mib = (int32_t)json_integer_value(out);
  json_decref(o);
  t->run_json = cairn__strdup(run_json);
  return t->run_json ? 0 : -1;
}

/* Under the lock, in every allocation: O(size of t's run), which the job
 * file's caps bound (5 limits, CAIRN_MAX_ENV_BYTES of env, one name). */
void cairn__task_offer_run(const mtask *t, json_t *task) {
  if (!t->run_json || !task)
    return;
  json_t *o = json_loads(t->run_json, 0, NULL);
  if (json_is_object(o))
    json_object_update(task, o);
  json_decref(o);
}

void cairn__task_failed(cairn__core *c, mtask *t, int64_t vol, const char *reason) {
  int kind = cairn__reason_kind(reason);
  if (kind >= 0)
    c->failures_total[kind]++;
  t->failed_vol = vol;
  t->failed_at = cairn__now();
}

/* FNV-1a of an app name, never 0 (the map's reserved key). */
static uint64_t app_key(const char *app) {
  uint64_t h = 1469598103934665603ULL;
  for (; *app; app++)
    h = (h ^ (uint8_t)*app) * 1099511628211ULL;
  return h | 1;
}

/* A volunteer that runs the signed apps of a platform ("@PLATFORM",
 * apps.h) counts as a runner of every app under the key of "@". */
int cairn__app_runners_add(cairn__core *c, const mvol *v) {
  for (int i = 0; i < v->napps; i++) {
    uint64_t k = app_key(v->apps[i][0] == '@' ? "@" : v->apps[i]);
    uintptr_t n = (uintptr_t)cairn__hmap_get(&c->app_runners, k);
    if (cairn__hmap_put(&c->app_runners, k, (void *)(n + 1)))
      return -1;
  }
  return 0;
}

int cairn__task_pass_over(const cairn__core *c, const mjob *j, const mtask *t, int64_t vol,
                          int64_t now) {
  return t->failed_vol == vol && now - t->failed_at < CAIRN_RETRY_HOLD_SECONDS &&
         (uintptr_t)cairn__hmap_get(&c->app_runners, app_key(j->app)) +
             (uintptr_t)cairn__hmap_get(&c->app_runners, app_key("@")) > 1;
}

typedef struct attempts_ctx {
  json_t *list;
  int64_t hard_after; /* wall + grace: a lease that expired this long after
                         it was issued ended at its hard deadline (0: none) */
} attempts_ctx;

static int attempt_row(void *ud, const cairn__store_audit_row *r) {
  attempts_ctx *a = ud;
  json_t *o = json_pack("{s:I, s:I, s:I, s:s, s:I, s:I}", "index", (json_int_t)r->idx,
                        "volunteer", (json_int_t)r->volunteer, "round", (json_int_t)r->round,
                        "lease", r->lease_state, "issued", (json_int_t)r->issued,
                        "lease_expires", (json_int_t)r->lease_expires);
  if (!o)
    return -1;
  if (r->has_result) {
    json_object_set_new(o, "exit_status", json_integer(r->exit_status));
    json_object_set_new(o, "outcome", json_string(r->outcome ? r->outcome : ""));
    if (r->reason)
      json_object_set_new(o, "reason", json_string(r->reason));
    if (r->cpu_seconds >= 0)
      json_object_set_new(o, "cpu_seconds", json_real(r->cpu_seconds));
    json_object_set_new(o, "credit", json_real(r->credit));
  } else if (a->hard_after && strcmp(r->lease_state, "expired") == 0 &&
             r->lease_expires - r->issued >= a->hard_after)
    json_object_set_new(o, "reason", json_string("wall")); /* the master's hard deadline */
  return json_array_append_new(a->list, o);
}

/* The attempts of list still leased (at most LEASED_MAX of them: a task has
 * that many leases out only with a replication that high) get the
 * "progress" their worker last reported: one hold of the lock, O(1) a
 * lease. */
#define LEASED_MAX 64
static void lease_progress(cairn__core *c, json_t *list) {
  json_t *e, *leased[LEASED_MAX];
  size_t i, n = 0;
  json_array_foreach(list, i, e) {
    const char *st = json_string_value(json_object_get(e, "lease"));
    if (n < LEASED_MAX && st && strcmp(st, "leased") == 0)
      leased[n++] = e;
  }
  if (!n)
    return;
  uint16_t p[LEASED_MAX];
  pthread_mutex_lock(&c->lock);
  for (size_t k = 0; k < n; k++) {
    const mlease *l = cairn__hmap_get(
      &c->leases, (uint64_t)json_integer_value(json_object_get(leased[k], "index")));
    p[k] = l ? l->progress : 0;
  }
  cairn__core_unlock(c);
  for (size_t k = 0; k < n; k++)
    if (p[k])
      json_object_set_new(leased[k], "progress", json_real(CAIRN__PROGRESS_DEC(p[k])));
}

json_t *cairn__core_task_json(cairn__core *c, int64_t job, int64_t key, cairn_error *err) {
  json_t *o = NULL;
  pthread_mutex_lock(&c->lock);
  if (job < 1 || (size_t)job > c->njobs || !c->jobs[job - 1]) { /* NULL: deleted */
    cairn__core_unlock(c);
    cairn__error_set(err, CAIRN_ENOTFOUND, "no job %lld", (long long)job);
    return NULL;
  }
  const mjob *j = c->jobs[job - 1];
  /* a job's tasks have consecutive keys from its first one */
  int64_t off = j->ntasks ? key - j->tasks[0].key : -1;
  if (off < 0 || off >= (int64_t)j->ntasks || j->tasks[off].key != key) {
    cairn__core_unlock(c);
    cairn__error_set(err, CAIRN_ENOTFOUND, "job %lld has no task with key %lld", (long long)job,
                    (long long)key);
    return NULL;
  }
  const mtask *t = &j->tasks[off];
  o = json_pack("{s:I, s:s, s:I, s:s, s:i, s:i}", "job", (json_int_t)job, "id", t->name, "key",
                (json_int_t)key, "state", cairn__tstate_name[t->state], "attempts", t->attempts,
                "max_attempts", j->max_attempts);
  if (o && t->progress)
    json_object_set_new(o, "progress", json_real(CAIRN__PROGRESS_DEC(t->progress)));
  if (o)
    cairn__size_task_json(j, (uint32_t)off, o); /* its sizing: O(1) */
  json_t *run = t->run_json ? json_loads(t->run_json, 0, NULL) : NULL;
  attempts_ctx a = {json_array(), t->wall ? t->wall + c->wall_grace : 0};
  cairn__core_unlock(c);
  if (!o) {
    json_decref(run);
    json_decref(a.list);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  if (run)
    json_object_update(o, run);
  json_decref(run);
  /* the store reads every allocation of the task: max_attempts per round */
  if (!a.list || cairn__core_audit(c, CAIRN_AUDIT_BY_TASK, key, attempt_row, &a, err) != CAIRN_OK) {
    json_decref(a.list);
    json_decref(o);
    if (err && err->status == CAIRN_OK)
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  lease_progress(c, a.list);
  if (cairn__size_history(c, key, a.list, err) != CAIRN_OK) { /* measurements, sizes */
    json_decref(a.list);
    json_decref(o);
    return NULL;
  }
  json_object_set_new(o, "history", a.list);
  return o;
}
