/* outputs.c — output files in the scheduling core (outputs.h): declared
 * patterns, parents' files read, accepted files, upload budgets, result
 * checks. Functions named *_locked or documented "under c->lock" run inside
 * the core's lock; their bounds are stated in outputs.h. */
#include "server/core/outputs.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/dist/chunks.h"
#include "server/dist/dist.h"
#include "server/dist/dist_int.h"
#include "server/core/uploads.h"

int cairn__tio_from_spec(mtask *t, cairn__jobspec_task *st) {
  if (st->outputs.n == 0 && st->npins == 0)
    return 0;
  cairn__tio *io = calloc(1, sizeof *io);
  if (!io)
    return -1;
  io->outputs = st->outputs;
  st->outputs = (cairn__output_patterns){0};
  io->npins = st->npins;
  io->pins = calloc(st->npins ? st->npins : 1, sizeof *io->pins);
  if (!io->pins) {
    cairn__tio_free(io);
    return -1;
  }
  for (uint32_t k = 0; k < st->npins; k++) {
    io->pins[k].parent = st->pins[k].parent;
    io->pins[k].file = st->pins[k].file;
    st->pins[k].file = NULL;
  }
  t->io = io;
  return 0;
}

void cairn__tio_free(cairn__tio *io) {
  if (!io)
    return;
  cairn__output_specs_free(&io->outputs);
  for (uint32_t k = 0; io->pins && k < io->npins; k++)
    free(io->pins[k].file);
  free(io->pins);
  free(io->files);
  free(io);
}

cairn__jrec *cairn__tio_record(cairn__jrec *r, uint32_t i, const cairn__tio *io) {
  if (!r || !io)
    return r;
  json_t *outs = cairn__outputs_json(&io->outputs), *pins = json_array();
  for (uint32_t k = 0; pins && k < io->npins; k++)
    json_array_append_new(pins, json_pack("[I, s]", (json_int_t)io->pins[k].parent,
                                          io->pins[k].file));
  char *a = outs ? json_dumps(outs, JSON_COMPACT) : NULL;
  char *b = pins ? json_dumps(pins, JSON_COMPACT) : NULL;
  json_decref(outs);
  json_decref(pins);
  if (a && b)
    r = cairn__jrec_job_task_io(r, i, a, b);
  else {
    cairn__jrec_free(r);
    r = NULL;
  }
  free(a);
  free(b);
  return r;
}

static mtask *task_of_key(cairn__core *c, cairn__hmap *by_key, int64_t key, mjob **jp) {
  uintptr_t loc = (uintptr_t)cairn__hmap_get(by_key, (uint64_t)key);
  if (!loc)
    return NULL;
  mjob *j = c->jobs[(loc >> 32) - 1];
  uint32_t seq = (uint32_t)(loc & 0xffffffffu);
  if (seq >= j->ntasks)
    return NULL;
  *jp = j;
  return &j->tasks[seq];
}

typedef struct io_loader {
  cairn__core *c;
  cairn__hmap *by_key;
} io_loader;

static int load_io(void *ud, const cairn__store_task_io_row *r) {
  io_loader *il = ud;
  mjob *j = NULL;
  mtask *t = task_of_key(il->c, il->by_key, r->task, &j);
  if (!t || t->io)
    return -1;
  cairn__jobspec_task st = {0};
  json_t *outs = json_loads(r->outputs_json, 0, NULL);
  json_t *pins = json_loads(r->parent_files_json, 0, NULL);
  int rc = -1;
  if (!outs || !pins || !json_is_array(pins) ||
      cairn__outputs_parse(outs, "store", &st.outputs, NULL) != CAIRN_OK)
    goto out;
  st.pins = calloc(json_array_size(pins) + 1, sizeof *st.pins);
  if (!st.pins)
    goto out;
  for (size_t k = 0; k < json_array_size(pins); k++) {
    json_t *e = json_array_get(pins, k);
    json_int_t p = json_integer_value(json_array_get(e, 0));
    const char *f = json_string_value(json_array_get(e, 1));
    if (!f || p < 0 || (uint64_t)p >= j->ntasks)
      goto out;
    st.pins[st.npins].parent = (uint32_t)p;
    if (!(st.pins[st.npins].file = strdup(f)))
      goto out;
    st.npins++;
  }
  rc = cairn__tio_from_spec(t, &st);
out:
  for (uint32_t k = 0; k < st.npins; k++)
    free(st.pins[k].file);
  free(st.pins);
  cairn__output_specs_free(&st.outputs);
  json_decref(outs);
  json_decref(pins);
  return rc;
}

static int load_file_row(void *ud, const cairn__store_output_row *r) {
  io_loader *il = ud;
  mjob *j = NULL;
  mtask *t = task_of_key(il->c, il->by_key, r->key, &j);
  if (!t || !t->io || strlen(r->name) > CAIRN_MAX_OUTPUT_NAME || t->io->nfiles >= CAIRN_MAX_OUTPUT_FILES)
    return -1;
  cairn__output_file *nf = realloc(t->io->files, (t->io->nfiles + 1) * sizeof *nf);
  if (!nf)
    return -1;
  t->io->files = nf;
  cairn__output_file *f = &nf[t->io->nfiles++];
  snprintf(f->name, sizeof f->name, "%s", r->name);
  snprintf(f->sha256, sizeof f->sha256, "%s", r->sha256);
  f->size = r->size;
  return 0;
}

cairn_status cairn__outputs_load(cairn__core *c, cairn__hmap *by_key, cairn_error *err) {
  io_loader il = {c, by_key};
  cairn_status st = cairn__store_load_task_io(c->store, load_io, &il, err);
  if (st == CAIRN_OK)
    st = cairn__store_load_accepted_files(c->store, load_file_row, &il, err);
  return st;
}

void cairn__outputs_offer(cairn__core *c, const mlease *l, json_t *task_obj, json_t *inputs) {
  const mjob *j = l->job;
  const mtask *t = &j->tasks[l->task];
  if (!t->io)
    return;
  if (t->io->outputs.n)
    json_object_set_new(task_obj, "outputs", cairn__outputs_json(&t->io->outputs));
  if (cairn__keep_wanted(j, l->task, l->vol))
    json_object_set_new(task_obj, "keep", json_string("workers"));
  for (uint32_t k = 0; k < t->io->npins; k++) {
    const mtask *p = &j->tasks[t->io->pins[k].parent];
    const cairn__output_file *f = cairn__outputs_file(p, t->io->pins[k].file);
    char *name = NULL;
    if (asprintf(&name, "%s/%s", p->name, t->io->pins[k].file) < 0)
      continue;
    json_t *in = json_pack("{s:s, s:s, s:s}", "name", name, "parent", p->name, "file",
                           t->io->pins[k].file);
    free(name);
    if (in && f) { /* without a sha256 the worker refuses the offer (the file is missing) */
      char url[128];
      snprintf(url, sizeof url, "/v1/files/%s", f->sha256);
      json_object_set_new(in, "sha256", json_string(f->sha256));
      json_object_set_new(in, "size", json_integer(f->size));
      json_object_set_new(in, "url", json_string(url));
      if (j->keep_workers) /* holders first (keep.c) */
        cairn__keep_sources(c, l->vol, f->sha256, in);
    }
    json_array_append_new(inputs, in);
  }
}

int cairn__outputs_reads(const mjob *j, uint32_t v, const char *sha256) {
  const mtask *t = &j->tasks[v];
  for (uint32_t k = 0; t->io && k < t->io->npins; k++) {
    const cairn__output_file *f = cairn__outputs_file(&j->tasks[t->io->pins[k].parent],
                                               t->io->pins[k].file);
    if (f && strcmp(f->sha256, sha256) == 0)
      return 1;
  }
  return 0;
}

cairn_status cairn__outputs_check(cairn__core *c, const mlease *l, int es,
                                  const cairn__output_file *files, size_t n, cairn_error *err) {
  const mtask *t = &l->job->tasks[l->task];
  static const cairn__output_patterns none = {0};
  const cairn__output_patterns *p = t->io ? &t->io->outputs : &none;
  for (size_t i = 0; i < n; i++) {
    int64_t size = -1;
    int k = cairn__outputs_match(p, files[i].name);
    if (k < 0)
      return cairn__error_set(err, CAIRN_EINVAL, "output file \"%.200s\" matches none of the "
                             "task's declared outputs", files[i].name);
    if (files[i].size > p->v[k].max_mib * 1024 * 1024)
      return cairn__error_set(err, CAIRN_ETOOBIG, "output file \"%.200s\" of %lld bytes exceeds "
                             "the cap of its pattern \"%.200s\" (%lld MiB)", files[i].name,
                             (long long)files[i].size, p->v[k].name, (long long)p->v[k].max_mib);
    int64_t up = cairn__uploads_of(c, l, files[i].sha256); /* uploaded under l: uploads.h */
    int have = cairn__dist_has_file(c->dist, files[i].sha256, &size), kept = cairn__keep_may(l);
    if (up >= 0 ? up != files[i].size
        : have ? size != files[i].size || (cairn__dist_remote(c->dist, files[i].sha256) && !kept)
               : !kept) /* a file kept on the worker needs no upload (keep.c) */
      return cairn__error_set(err, CAIRN_EINVAL, "output file \"%.200s\" (sha256 %s, %lld bytes) "
                             "was not uploaded: PUT /v1/results/%lld/files/%s first",
                             files[i].name, files[i].sha256, (long long)files[i].size,
                             (long long)l->idx, files[i].sha256);
  }
  for (uint32_t k = 0; es == 0 && k < p->n; k++) {
    int named = p->v[k].glob;
    for (size_t i = 0; !named && i < n; i++)
      named = strcmp(files[i].name, p->v[k].name) == 0;
    if (!named)
      return cairn__error_set(err, CAIRN_EINVAL, "the required output \"%.200s\" is missing "
                             "from a result with exit status 0", p->v[k].name);
  }
  /* a file uploaded under l is recorded now (uploads.h), and a file a
   * job's deletion may be removing (life.c) stays: recorded again (both
   * journaled before the result that names it) */
  for (size_t i = 0; i < n; i++) {
    int existed = 0, mine = cairn__uploads_of(c, l, files[i].sha256) >= 0;
    const char *sha = files[i].sha256;
    cairn_status st = CAIRN_OK;
    if ((mine ? !cairn__dist_has_file(c->dist, sha, NULL) || cairn__dist_remote(c->dist, sha) ||
                    cairn__dist_file_dying(c->dist, sha)
              : cairn__dist_file_dying(c->dist, sha) && !cairn__dist_remote(c->dist, sha)) &&
        (st = cairn__dist_add_file(c, sha, files[i].size, &existed, err)))
      return st;
  }
  if (cairn__keep_may(l) && cairn__keep_hold(c, l, files, n))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return CAIRN_OK;
}

int cairn__outputs_accepted(cairn__core *c, mtask *t, const mres *cn,
                            const cairn__output_file *files, size_t n) {
  if (!t->io)
    return 0;
  for (size_t i = 0; i < n; i++) {
    mfilerec *f = cairn__dist_file_of(c->dist, files[i].sha256);
    for (uint32_t k = 0; f && f->remote && t->rep && k < t->rep->nres; k++)
      if (t->rep->res[k].idx != cn->idx && t->rep->res[k].vol != cn->vol)
        cairn__chunks_settle(c->files_dir, f->sha256, t->rep->res[k].vol, 0);
    if (f && f->remote)
      f->chunked = (uint8_t)cairn__chunks_settle(c->files_dir, f->sha256, cn->vol, 1);
  }
  cairn__output_file *copy = malloc((n ? n : 1) * sizeof *copy);
  if (!copy)
    return -1;
  if (n)
    memcpy(copy, files, n * sizeof *copy);
  free(t->io->files);
  t->io->files = copy;
  t->io->nfiles = (uint32_t)n;
  return 0;
}

/* The bytes all uploads of one lease of t may announce: the per-file cap
 * times CAIRN_OUTPUT_LEASE_FACTOR, or less when the task's output_mib
 * (common/taskrun.h) says so. */
static int64_t lease_budget(const mtask *t, int64_t cap) {
  int64_t b = cap * CAIRN_OUTPUT_LEASE_FACTOR;
  if (t->out_mib > 0 && ((int64_t)t->out_mib << 20) < b)
    b = (int64_t)t->out_mib << 20;
  return b;
}

cairn_status cairn__core_output_upload(cairn__core *c, int64_t vol, int64_t idx,
                                       uint64_t declared, int64_t server_cap, int64_t vol_cap,
                                       cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  mlease *l = idx > 0 ? cairn__hmap_get(&c->leases, (uint64_t)idx) : NULL;
  const mtask *t = l ? &l->job->tasks[l->task] : NULL;
  int64_t cap = t && t->io ? cairn__outputs_max_bytes(&t->io->outputs) : 0;
  if (cap > server_cap)
    cap = server_cap;
  if (!l || l->vol->id != vol || l->vol->banned)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "volunteer %lld holds no lease with index %lld: "
                         "only the holder of a lease uploads its output files", (long long)vol,
                         (long long)idx);
  else if (cap == 0)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "the task of index %lld declares no outputs",
                         (long long)idx);
  else if ((int64_t)declared > cap)
    st = cairn__error_set(err, CAIRN_ETOOBIG, "an output file of %llu bytes exceeds the cap of "
                         "%lld bytes per file", (unsigned long long)declared, (long long)cap);
  else if (l->out_files >= CAIRN_MAX_OUTPUT_FILES ||
           l->out_bytes + (int64_t)declared > lease_budget(t, cap))
    st = cairn__error_set(err, CAIRN_ETOOBIG, "the uploads of index %lld exceed its budget (%u "
                         "files, %lld bytes%s)", (long long)idx, CAIRN_MAX_OUTPUT_FILES,
                         (long long)lease_budget(t, cap),
                         t->out_mib ? ": the task's limits.output_mib" : "");
  else if (l->vol->up_bytes + (int64_t)declared > vol_cap) /* uploads.h */
    st = cairn__error_set(err, CAIRN_ERATE, "the uploads of volunteer %lld that no result "
                         "claimed yet would pass its cap of %lld bytes in flight "
                         "(--max-pending-upload-mib): send the results of its other leases "
                         "first, or retry later", (long long)vol, (long long)vol_cap);
  else {
    l->out_files++;
    l->out_bytes += (int64_t)declared;
    l->vol->up_bytes += (int64_t)declared;
  }
  pthread_mutex_unlock(&c->lock);
  return st;
}

cairn_status cairn__core_output_file(cairn__core *c, int64_t job, const char *task,
                                     const char *name, char sha256[65], int64_t *size,
                                     cairn_error *err) {
  uint64_t seq = 0;
  pthread_mutex_lock(&c->lock);
  seq = cairn__journal_last(c->journal);
  pthread_mutex_unlock(&c->lock);
  cairn__journal_wait(c->journal, seq, NULL); /* read what was acknowledged */
  return cairn__store_output_file(c->store, job, task, name, sha256, size, err);
}

void cairn__outputs_late(cairn__core *c, int64_t vol, const cairn__output_file *files, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (cairn__dist_remote(c->dist, files[i].sha256))
      cairn__chunks_settle(c->files_dir, files[i].sha256, vol, 0);
}
