/* size.c — tasks that size themselves, in the master (size.h).
 *
 * An allocation of a task with "resources": "auto" asks for its category's
 * size (cairn__autosize_request): the asking worker's whole offer while no
 * successful run of the category was measured, else the largest peaks plus
 * the margin, each at most the largest offer seen and at most the task's own
 * memory_mib and disk_mib limits (its job's, or the server's ceiling); its
 * memory and disk limits are that size. A task's growth (a kill for memory
 * or disk of a task that sizes itself, or has "retry_larger": true) is
 * twice the limit the killed attempt ran under, at most the largest offer
 * seen, the server's ceiling, and, without "retry_larger", the task's own
 * limit; its later attempts request and run under at least that, and the
 * killed attempt does not count against max_attempts. When the amount
 * cannot grow (it is at its cap already) the attempt counts as any
 * failure. */
#include "server/core/size.h"

#include <stdlib.h>
#include <string.h>

#include "server/core/fit.h"
#include "server/store/store_sizing.h"

/* ---- categories ---- */

/* The index of category label in j, added when new: -1 when j has
 * CAIRN_MAX_CATEGORIES already or out of memory. O(categories). */
static int cat_index(mjob *j, const char *label) {
  uint32_t k = 0;
  while (k < j->ncats && strcmp(j->cats[k].label, label) != 0)
    k++;
  if (k < j->ncats)
    return (int)k;
  if (k == CAIRN_MAX_CATEGORIES)
    return -1;
  if (j->ncats == j->capcats) {
    uint32_t ncap = j->capcats ? 2 * j->capcats : 2;
    cairn__jcat *nc = realloc(j->cats, ncap * sizeof *nc);
    if (!nc)
      return -1;
    j->cats = nc;
    j->capcats = ncap;
  }
  j->cats[k] = (cairn__jcat){.label = strdup(label)};
  if (!j->cats[k].label)
    return -1;
  j->ncats++;
  return (int)k;
}

static int32_t mib32(int64_t v) { return v <= 0 ? 0 : v > INT32_MAX ? INT32_MAX : (int32_t)v; }

int cairn__size_job_init(mjob *j, const cairn__jobspec *spec) {
  for (uint32_t k = 0; k < spec->ncategories; k++)
    if (cat_index(j, spec->categories[k]) != (int)k)
      return -1;
  if (!j->ncats && cat_index(j, "") != 0)
    return -1;
  for (uint32_t i = 0; i < j->ntasks; i++) {
    const cairn__jobspec_task *st = &spec->tasks[i];
    uint32_t cat = st->category < j->ncats ? st->category : 0;
    j->cats[cat].tasks++;
    j->cats[cat].autos += (st->sizing & CAIRN_SIZE_AUTO) != 0;
    if (!st->sizing && !cat)
      continue;
    cairn__tsz *s = calloc(1, sizeof *s);
    if (!s)
      return -1;
    *s = (cairn__tsz){.flags = st->sizing, .cat = (uint8_t)cat,
                      .lim_mem = mib32(st->run.limits[CAIRN_LIMIT_MEMORY]),
                      .lim_disk = mib32(st->run.limits[CAIRN_LIMIT_DISK])};
    j->tasks[i].sz = s;
  }
  return 0;
}

cairn__jrec *cairn__size_job_record(const mjob *j, int *none) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < j->ntasks; i++)
    n += j->tasks[i].sz != NULL;
  *none = n == 0;
  if (!n)
    return NULL;
  uint32_t *seq = malloc(n * sizeof *seq);
  uint8_t *flags = malloc(n), *cat = malloc(n);
  const char **labels = malloc(j->ncats * sizeof *labels);
  cairn__jrec *r = NULL;
  if (seq && flags && cat && labels) {
    for (uint32_t i = 0, k = 0; i < j->ntasks; i++)
      if (j->tasks[i].sz) {
        seq[k] = i;
        flags[k] = j->tasks[i].sz->flags;
        cat[k++] = j->tasks[i].sz->cat;
      }
    for (uint32_t k = 0; k < j->ncats; k++)
      labels[k] = j->cats[k].label;
    r = cairn__jrec_sizing_tasks(n, seq, flags, cat, labels, j->ncats);
  }
  free(seq);
  free(flags);
  free(cat);
  free(labels);
  return r;
}

void cairn__size_job_free(mjob *j) {
  for (uint32_t k = 0; k < j->ncats; k++)
    free(j->cats[k].label);
  free(j->cats);
  j->cats = NULL;
  j->ncats = j->capcats = 0;
  for (uint32_t i = 0; j->tasks && i < j->ntasks; i++) {
    free(j->tasks[i].sz);
    j->tasks[i].sz = NULL;
  }
}

/* ---- allocations ---- */

void cairn__size_of(const cairn__core *c, const mjob *j, uint32_t v, const mvol *vol,
                    cairn__tsize *out) {
  const cairn__tsz *s = j->tasks[v].sz;
  out->req = *cairn__fit_req(j, v);
  out->mem_mib = s ? s->lim_mem : 0;
  out->disk_mib = s ? s->lim_disk : 0;
  out->sized = out->whole = 0;
  if (!s)
    return;
  if (s->flags & CAIRN_SIZE_AUTO) {
    cairn__resources whole = vol && vol->has_offer ? vol->offer
                             : c->any_offer        ? c->largest
                                                   : CAIRN_RESOURCES_DEFAULT;
    cairn__resources r = cairn__autosize_request(&j->cats[s->cat].peak, &whole,
                                                 c->any_offer ? &c->largest : NULL);
    if (s->lim_mem > 0 && r.memory_mib > s->lim_mem)
      r.memory_mib = s->lim_mem;
    if (s->lim_disk > 0 && r.disk_mib > s->lim_disk)
      r.disk_mib = s->lim_disk;
    out->req = r;
    out->whole = !j->cats[s->cat].peak.measured;
    out->mem_mib = mib32(r.memory_mib);
    out->disk_mib = mib32(r.disk_mib);
    out->sized = 1;
  }
  if (s->grow_mem > out->mem_mib) {
    out->mem_mib = s->grow_mem;
    out->sized = 1;
  }
  if (s->grow_disk > out->disk_mib) {
    out->disk_mib = s->grow_disk;
    out->sized = 1;
  }
  if (s->grow_mem > out->req.memory_mib)
    out->req.memory_mib = s->grow_mem;
  if (s->grow_disk > out->req.disk_mib)
    out->req.disk_mib = s->grow_disk;
}

/* Sets limits[key] to mib, or removes it for 0. */
static void set_limit(json_t *limits, const char *key, int32_t mib) {
  if (mib > 0)
    json_object_set_new(limits, key, json_integer(mib));
  else
    json_object_del(limits, key);
}

void cairn__size_offer(const mlease *l, json_t *task) {
  if (!l->sized || !task)
    return;
  json_t *limits = json_object_get(task, "limits");
  if (!json_is_object(limits)) {
    if (l->mem_mib <= 0 && l->disk_mib <= 0)
      return;
    json_object_set_new(task, "limits", limits = json_object());
  }
  set_limit(limits, "memory_mib", l->mem_mib);
  set_limit(limits, "disk_mib", l->disk_mib);
}

/* ---- results ---- */

/* The most a task of s may grow a resource to: the largest offer's field
 * (when an offer was seen), the server's ceiling (when set), and without
 * "retry_larger" its own limit (when set); -1: none of them. */
static int64_t grow_cap(const cairn__tsz *s, int any_offer, int64_t largest, int64_t ceiling,
                        int64_t own) {
  int64_t cap = any_offer ? largest : -1;
  if (ceiling > 0 && (cap < 0 || ceiling < cap))
    cap = ceiling;
  if (!(s->flags & CAIRN_SIZE_RETRY_LARGER) && own > 0 && (cap < 0 || own < cap))
    cap = own;
  return cap;
}

/* Grows s's memory (disk when !mem) after a kill at failed MiB: the new
 * amount, or -1 when it cannot grow. */
static int64_t grow(const cairn__core *c, cairn__tsz *s, int mem, int32_t failed) {
  int64_t cap = mem ? grow_cap(s, c->any_offer, c->largest.memory_mib,
                               c->ceiling[CAIRN_LIMIT_MEMORY], s->lim_mem)
                    : grow_cap(s, c->any_offer, c->largest.disk_mib,
                               c->ceiling[CAIRN_LIMIT_DISK], s->lim_disk);
  int64_t next = cairn__autosize_grow(failed, cap);
  int32_t *at = mem ? &s->grow_mem : &s->grow_disk;
  if (next <= *at)
    return -1;
  *at = mib32(next);
  return next;
}

int cairn__size_result(cairn__core *c, const mlease *l, int ok, const char *reason,
                       const cairn__result_extra *x, cairn__size_note *n) {
  mjob *j = l->job;
  cairn__tsz *s = j->tasks[l->task].sz;
  *n = (cairn__size_note){.job = j, .task = l->task, .usage = CAIRN_USAGE_NONE,
                          .sized_mem = l->sized && l->mem_mib > 0 ? l->mem_mib : -1,
                          .sized_disk = l->sized && l->disk_mib > 0 ? l->disk_mib : -1,
                          .retry_mib = -1};
  if (x && x->has_usage)
    n->usage = x->usage;
  if (ok && x && x->has_usage)
    n->peak = cairn__peak_note(&j->cats[s ? s->cat : 0].peak, &x->usage,
                               x->has_cpu ? x->cpu_seconds : -1);
  if (ok || !s || !(s->flags & (CAIRN_SIZE_AUTO | CAIRN_SIZE_RETRY_LARGER)) || !reason)
    return 0;
  int mem = strcmp(reason, "memory") == 0;
  if (!mem && strcmp(reason, "disk") != 0)
    return 0;
  int64_t next = grow(c, s, mem, mem ? l->mem_mib : l->disk_mib);
  if (next < 0)
    return 0;
  n->retry_mib = next;
  n->grew = 1;
  return 1;
}

void cairn__size_freed(cairn__core *c, const mlease *l) {
  uint32_t eligible = l->job->counts[TS_ELIGIBLE];
  if (l->req.cores > 1 && eligible && l->job->state == JS_RUNNING)
    cairn__wake_note(c, l->job->app, l->req.cores - 1 < eligible ? (uint32_t)l->req.cores - 1
                                                                 : eligible);
}

void cairn__size_journal(cairn__core *c, int64_t idx, const cairn__size_note *n) {
  const mtask *t = &n->job->tasks[n->task];
  const cairn__tsz *s = t->sz;
  if (cairn__usage_any(&n->usage) || n->sized_mem >= 0 || n->sized_disk >= 0 ||
      n->retry_mib >= 0)
    cairn__journal_put(c->journal, cairn__jrec_sizing_usage(idx, &n->usage, n->sized_mem,
                                                            n->sized_disk, n->retry_mib));
  if (n->peak) {
    const cairn__jcat *k = &n->job->cats[s ? s->cat : 0];
    cairn__journal_put(c->journal, cairn__jrec_sizing_peak(n->job->id, k->label, &k->peak));
  }
  if (n->grew && s)
    cairn__journal_put(c->journal, cairn__jrec_sizing_grow(t->key, s->grow_mem, s->grow_disk));
}

/* ---- views ---- */

void cairn__size_job_json(const cairn__core *c, const mjob *j, json_t *o) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < j->ncats; i++) {
    const cairn__jcat *k = &j->cats[i];
    if (!k->tasks)
      continue;
    json_t *e = json_pack("{s:s, s:i, s:i, s:b}", "category", k->label, "tasks", (int)k->tasks,
                          "auto", (int)k->autos, "measured", k->peak.measured);
    if (e && k->peak.measured) {
      json_object_set_new(e, "memory_mib", json_integer(k->peak.memory_mib));
      json_object_set_new(e, "disk_mib", json_integer(k->peak.disk_mib));
      json_object_set_new(e, "cpu_ratio", json_real(k->peak.cpu_ratio));
    }
    if (e && k->autos) { /* what its automatic tasks ask now */
      cairn__resources r = cairn__autosize_request(&k->peak, &c->largest,
                                                  c->any_offer ? &c->largest : NULL);
      json_object_set_new(e, "size", k->peak.measured ? cairn__resources_json(&r)
                                                      : json_string("whole"));
    }
    json_array_append_new(a, e);
  }
  json_object_set_new(o, "categories", a);
}

void cairn__size_task_json(const mjob *j, uint32_t v, json_t *o) {
  const mtask *t = &j->tasks[v];
  const cairn__tsz *s = t->sz;
  json_object_set_new(o, "category", json_string(j->cats ? j->cats[s ? s->cat : 0].label : ""));
  json_object_set_new(o, CAIRN_RESOURCES_KEY,
                      s && (s->flags & CAIRN_SIZE_AUTO)
                        ? json_string("auto")
                        : cairn__resources_json(cairn__fit_req(j, v)));
  json_object_set_new(o, "retry_larger",
                      json_boolean(s && (s->flags & CAIRN_SIZE_RETRY_LARGER)));
  if (s && (s->grow_mem || s->grow_disk)) {
    json_t *g = json_object();
    if (s->grow_mem)
      json_object_set_new(g, "memory_mib", json_integer(s->grow_mem));
    if (s->grow_disk)
      json_object_set_new(g, "disk_mib", json_integer(s->grow_disk));
    json_object_set_new(o, "grown", g);
  }
}

static int history_row(void *ud, const cairn__store_usage_row *r) {
  json_t *e = r->key > 0 ? cairn__hmap_get(ud, (uint64_t)r->key) : NULL; /* by "index" */
  if (!e)
    return 0;
  if (cairn__usage_any(&r->usage))
    json_object_set_new(e, CAIRN_USAGE_KEY, cairn__usage_json(&r->usage));
  if (r->sized_mem >= 0 || r->sized_disk >= 0) {
    json_t *z = json_object();
    if (r->sized_mem >= 0)
      json_object_set_new(z, "memory_mib", json_integer(r->sized_mem));
    if (r->sized_disk >= 0)
      json_object_set_new(z, "disk_mib", json_integer(r->sized_disk));
    json_object_set_new(e, "sized", z);
  }
  const char *reason = json_string_value(json_object_get(e, "reason"));
  if (r->retry_mib >= 0)
    json_object_set_new(e, "retry",
                        json_pack("{s:I}", reason && strcmp(reason, "disk") == 0 ? "disk_mib"
                                                                                 : "memory_mib",
                                  (json_int_t)r->retry_mib));
  return 0;
}

cairn_status cairn__size_history(cairn__core *c, int64_t key, json_t *history, cairn_error *err) {
  cairn__hmap by_index; /* an attempt's index to its entry: O(1) a row */
  json_t *e;
  size_t i;
  cairn__hmap_init(&by_index);
  json_array_foreach(history, i, e) {
    json_int_t idx = json_integer_value(json_object_get(e, "index"));
    if (idx > 0 && cairn__hmap_put(&by_index, (uint64_t)idx, e)) {
      cairn__hmap_free(&by_index);
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  }
  cairn_status st = cairn__store_task_usage(c->store, key, history_row, &by_index, err);
  cairn__hmap_free(&by_index);
  return st;
}

typedef struct page_ctx {
  json_t *tasks;
  uint32_t start;
} page_ctx;

static int page_row(void *ud, const cairn__store_usage_row *r) {
  page_ctx *p = ud;
  json_t *t = r->key >= p->start ? json_array_get(p->tasks, (size_t)(r->key - p->start)) : NULL;
  if (!t)
    return 0;
  if (cairn__usage_any(&r->usage))
    json_object_set_new(t, CAIRN_USAGE_KEY, cairn__usage_json(&r->usage));
  if (r->cpu_seconds >= 0)
    json_object_set_new(t, "cpu_seconds", json_real(r->cpu_seconds));
  return 0;
}

cairn_status cairn__size_page(cairn__core *c, int64_t job, uint32_t start, json_t *tasks,
                              cairn_error *err) {
  page_ctx p = {tasks, start};
  return cairn__store_job_usage(c->store, job, start, start + json_array_size(tasks), page_row,
                                &p, err);
}

/* ---- start-up ---- */

typedef struct size_loader {
  cairn__core *c;
  const cairn__hmap *by_key;
} size_loader;

/* A task's own memory_mib and disk_mib limits, from its run's JSON. */
static void own_limits(const char *run_json, int32_t *mem, int32_t *disk) {
  json_t *o = run_json ? json_loads(run_json, 0, NULL) : NULL, *l = json_object_get(o, "limits");
  *mem = mib32(json_integer_value(json_object_get(l, "memory_mib")));
  *disk = mib32(json_integer_value(json_object_get(l, "disk_mib")));
  json_decref(o);
}

static int load_tsize(void *ud, const cairn__store_tsize_row *r) {
  size_loader *sl = ud;
  uintptr_t loc = (uintptr_t)cairn__hmap_get(sl->by_key, (uint64_t)r->task);
  if (!loc)
    return -1;
  mjob *j = sl->c->jobs[(loc >> 32) - 1];
  mtask *t = &j->tasks[loc & 0xffffffffu];
  int k = cat_index(j, r->category);
  if (k < 0 || t->sz || !(t->sz = calloc(1, sizeof *t->sz)))
    return -1;
  *t->sz = (cairn__tsz){.flags = (uint8_t)r->flags, .cat = (uint8_t)k,
                        .grow_mem = mib32(r->grow_mem), .grow_disk = mib32(r->grow_disk)};
  own_limits(t->run_json, &t->sz->lim_mem, &t->sz->lim_disk);
  return 0;
}

static int load_peak(void *ud, const cairn__store_peak_row *r) {
  size_loader *sl = ud;
  mjob *j = r->job >= 1 && (size_t)r->job <= sl->c->njobs ? sl->c->jobs[r->job - 1] : NULL;
  if (!j)
    return 0; /* a job not loaded (being deleted) */
  int k = cat_index(j, r->category);
  if (k < 0)
    return -1;
  j->cats[k].peak = r->peak;
  return 0;
}

cairn_status cairn__size_load(cairn__core *c, const cairn__hmap *by_key, cairn_error *err) {
  size_loader sl = {c, by_key};
  for (size_t ji = 0; ji < c->njobs; ji++)
    if (c->jobs[ji] && cat_index(c->jobs[ji], "") != 0)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory loading the store");
  cairn_status st = cairn__store_load_task_sizing(c->store, load_tsize, &sl, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_peaks(c->store, load_peak, &sl, err);
  for (size_t ji = 0; st == CAIRN_OK && ji < c->njobs; ji++) {
    mjob *j = c->jobs[ji];
    for (uint32_t v = 0; j && v < j->ntasks; v++) {
      const cairn__tsz *s = j->tasks[v].sz;
      j->cats[s ? s->cat : 0].tasks++;
      j->cats[s ? s->cat : 0].autos += s && (s->flags & CAIRN_SIZE_AUTO);
    }
  }
  return st;
}
