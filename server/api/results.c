/* results.c — result bodies: PUT /v1/results/{n} (one result) and, with the
 * feature "batch", POST /v1/results (several, and the next tasks) and POST
 * /v1/work with "max" (several tasks). Parses and checks, calls the core,
 * renders JSON; bad input gets 400 naming the field (and the entry), and
 * nothing changes. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/autosize.h"
#include "common/base64.h"
#include "common/limits.h"
#include "common/protocol.h"
#include "common/sha256.h"
#include "server/dist/chunks.h"
#include "server/api/api.h"

/* A result body being read: the core's entry, and what the entry borrows
 * that is owned here (decoded output and stderr, the files' list). */
typedef struct rbody {
  cairn__batch_result r;
  unsigned char *dec, *edec;
  /* lists[i]: the chunk digests of r.x.files[i] (32 bytes each, nlists[i]
   * of them) when its entry carries "chunks" (feature "kept_chunks"), else
   * NULL; allocated to the files' number */
  unsigned char **lists;
  size_t *nlists;
} rbody;

static void rbody_free(rbody *b) {
  free(b->dec);
  free(b->edec);
  for (size_t i = 0; b->lists && i < b->r.x.nfiles; i++)
    free(b->lists[i]);
  free(b->lists);
  free(b->nlists);
  free(b->r.x.files);
}

/* Stores the chunk digests b carries (feature "kept_chunks") as volunteer
 * v's lists, durably, before the core takes the result (chunks.h). Outside
 * c->lock; O(the digests). */
static cairn_status store_lists(cairn_master *m, int64_t v, const rbody *b, cairn_error *err) {
  for (size_t i = 0; b->lists && i < b->r.x.nfiles; i++)
    if (b->lists[i] && cairn__chunks_put_kept(cairn__core_files_dir(m->core),
                                              b->r.x.files[i].sha256, v, b->lists[i],
                                              b->nlists[i]) != 0)
      return cairn__error_set(err, CAIRN_EIO, "the chunk digests of output file \"%.200s\" "
                             "could not be stored", b->r.x.files[i].name);
  return CAIRN_OK;
}

/* Reads outputs[i].chunks of file of (absent: none), within *budget
 * chunks for the whole result. */
static cairn_status entry_chunks(json_t *f, size_t i, const cairn__output_file *of, rbody *b,
                                 size_t *budget, cairn_error *err) {
  json_t *ch = json_object_get(f, "chunks");
  char where[48];
  if (!ch)
    return CAIRN_OK;
  snprintf(where, sizeof where, "outputs[%zu].chunks", i);
  if (cairn__chunks_parse(ch, of->size, where, &b->lists[i], &b->nlists[i], err) != CAIRN_OK)
    return err->status;
  if (b->nlists[i] > *budget)
    return cairn__error_set(err, CAIRN_ETOOBIG, "%s: the result's kept files have more than %u "
                           "chunk digests in all", where, CAIRN_MAX_RESULT_CHUNKS);
  *budget -= b->nlists[i];
  return CAIRN_OK;
}

/* Reads a result's "stderr" (+ "stderr_encoding"), its "outputs" into x
 * (the files' list allocated to their number; *edec: decoded stderr), its
 * "cpu_seconds" (cairn__result_cpu_parse) and "usage" (cairn__usage_parse). */
static cairn_status result_extra(json_t *o, rbody *rb, cairn_error *err) {
  cairn__result_extra *x = &rb->r.x;
  unsigned char **edec = &rb->edec;
  size_t budget = CAIRN_MAX_RESULT_CHUNKS;
  json_t *e = json_object_get(o, "stderr"), *enc = json_object_get(o, "stderr_encoding");
  json_t *outs = json_object_get(o, "outputs");
  json_t *usage = json_object_get(o, CAIRN_USAGE_KEY);
  if (cairn__result_cpu_parse(o, &x->cpu_seconds, &x->has_cpu, err) != CAIRN_OK)
    return err->status;
  if (usage && cairn__usage_parse(usage, &x->usage, err) != CAIRN_OK) /* feature "usage" */
    return err->status;
  x->has_usage = usage != NULL;
  if (e && !json_is_string(e))
    return cairn__error_set(err, CAIRN_EINVAL, "\"stderr\" must be a string");
  if (enc && (!e || !json_is_string(enc) || strcmp(json_string_value(enc), "base64") != 0))
    return cairn__error_set(err, CAIRN_EINVAL,
                           "\"stderr_encoding\" must be \"base64\" (with \"stderr\")");
  x->err_tail = e ? json_string_value(e) : NULL;
  x->err_len = e ? json_string_length(e) : 0;
  if (enc) {
    size_t cap = cairn__base64_decoded_max(x->err_len), n = 0;
    *edec = malloc(cap + 1);
    if (!*edec || cairn__base64_decode(x->err_tail, x->err_len, *edec, cap + 1, &n))
      return cairn__error_set(err, CAIRN_EINVAL, "\"stderr\" is not valid base64");
    x->err_tail = *edec;
    x->err_len = n;
  }
  if (x->err_len > CAIRN_STDERR_TAIL)
    return cairn__error_set(err, CAIRN_ETOOBIG, "\"stderr\" of %zu bytes exceeds the tail of %u bytes",
                           x->err_len, CAIRN_STDERR_TAIL);
  if (!outs)
    return CAIRN_OK;
  if (!json_is_array(outs) || json_array_size(outs) > CAIRN_MAX_OUTPUT_FILES)
    return cairn__error_set(err, CAIRN_EINVAL, "\"outputs\" must be an array of at most %u files",
                           CAIRN_MAX_OUTPUT_FILES);
  size_t nouts = json_array_size(outs);
  if (nouts && (!(x->files = calloc(nouts, sizeof *x->files)) ||
                !(rb->lists = calloc(nouts, sizeof *rb->lists)) ||
                !(rb->nlists = calloc(nouts, sizeof *rb->nlists))))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < json_array_size(outs); i++) {
    json_t *f = json_array_get(outs, i), *sz = json_object_get(f, "size");
    const char *name = json_string_value(json_object_get(f, "name"));
    const char *sha = json_string_value(json_object_get(f, "sha256"));
    size_t keys = 3 + (json_object_get(f, "chunks") != NULL); /* "kept_chunks" */
    if (!json_is_object(f) || json_object_size(f) != keys || !name ||
        strlen(name) != json_string_length(json_object_get(f, "name")) ||
        !cairn__output_name_ok(name) || !sha || !cairn__sha256_valid_hex(sha) ||
        !json_is_integer(sz) || json_integer_value(sz) < 0)
      return cairn__error_set(err, CAIRN_EINVAL, "outputs[%zu] must be {\"name\": a relative "
                             "path, \"sha256\": 64 lowercase hex, \"size\": bytes} (and "
                             "\"chunks\" of a kept file)", i);
    for (size_t k = 0; k < x->nfiles; k++)
      if (strcmp(x->files[k].name, name) == 0)
        return cairn__error_set(err, CAIRN_EINVAL, "output file \"%.200s\" is named twice", name);
    cairn__output_file *of = &x->files[x->nfiles++];
    snprintf(of->name, sizeof of->name, "%s", name);
    memcpy(of->sha256, sha, 65);
    of->size = json_integer_value(sz);
    if (entry_chunks(f, i, of, rb, &budget, err) != CAIRN_OK)
      return err->status;
  }
  return CAIRN_OK;
}

/* Reads the result fields of o ("exit_status", "output", "encoding",
 * "reason", "stderr", "stderr_encoding", "outputs"; the caller checked the
 * keys) into b, borrowing from o. O(the body). */
static cairn_status result_body(json_t *o, rbody *b, cairn_error *err) {
  json_t *es = json_object_get(o, "exit_status"), *out = json_object_get(o, "output");
  json_t *enc = json_object_get(o, "encoding"), *reason = json_object_get(o, "reason");
  if (!es || !json_is_integer(es) || json_integer_value(es) < -1 ||
      json_integer_value(es) > 65535)
    return cairn__error_set(err, CAIRN_EINVAL, "\"exit_status\" must be an integer from -1 to 65535");
  if (!out || !json_is_string(out))
    return cairn__error_set(err, CAIRN_EINVAL, "\"output\" must be a string");
  b->r.exit_status = (int)json_integer_value(es);
  b->r.output = json_string_value(out);
  b->r.len = json_string_length(out);
  if (enc && (!json_is_string(enc) || (strcmp(json_string_value(enc), "base64") != 0 &&
                                       strcmp(json_string_value(enc), "utf-8") != 0)))
    return cairn__error_set(err, CAIRN_EINVAL, "\"encoding\" must be \"base64\" or \"utf-8\"");
  if (enc && strcmp(json_string_value(enc), "base64") == 0) {
    size_t cap = cairn__base64_decoded_max(b->r.len), n = 0;
    b->dec = malloc(cap + 1);
    if (!b->dec || cairn__base64_decode(b->r.output, b->r.len, b->dec, cap + 1, &n))
      return cairn__error_set(err, CAIRN_EINVAL, "\"output\" is not valid base64");
    b->r.output = b->dec;
    b->r.len = n;
  }
  if (b->r.len > CAIRN_MAX_OUTPUT)
    return cairn__error_set(err, CAIRN_ETOOBIG, "output of %zu bytes exceeds the cap of %u bytes",
                           b->r.len, CAIRN_MAX_OUTPUT);
  if (reason && (!json_is_string(reason) || !cairn__reason_valid(json_string_value(reason))))
    return cairn__error_set(err, CAIRN_EINVAL, "\"reason\" must be \"wall\", \"cpu\", \"memory\", "
                           "\"disk\", \"output\", \"signal N\" (1-64) or \"exit N\" (1-255)");
  b->r.reason = reason ? json_string_value(reason) : NULL;
  return result_extra(o, b, err);
}

void cairn__api_result(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"exit_status", "output", "encoding", "next", "reason",
                                     "stderr", "stderr_encoding", "outputs", CAIRN_CPU_KEY,
                                     CAIRN_USAGE_KEY, NULL};
  int64_t v = cairn__api_volunteer(m, rq, rs);
  if (!v)
    return;
  const char *s = rq->path + strlen("/v1/results/"), *end = NULL;
  int64_t idx = cairn__api_id(s, &end);
  if (idx < 0 || *end) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\" is not an allocation index", s);
    return;
  }
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  rbody b = {0};
  cairn_error err = {0};
  json_t *want_next = json_object_get(o, "next"), *next = NULL;
  if (want_next && !json_is_boolean(want_next))
    cairn__error_set(&err, CAIRN_EINVAL, "\"next\" must be true or false");
  else if (result_body(o, &b, &err) == CAIRN_OK && store_lists(m, v, &b, &err) == CAIRN_OK)
    cairn__core_result(m->core, v, idx, b.r.exit_status, b.r.reason, b.r.output, b.r.len,
                       &b.r.x, json_is_true(want_next) ? &next : NULL, &err);
  if (err.status != CAIRN_OK)
    cairn__api_error(rs, err.status, err.text);
  else {
    json_t *body = json_pack("{s:s}", "state", "accepted");
    json_t *receipt = cairn__api_log_receipt(m, idx); /* durable: its entry's leaf */
    if (receipt)
      json_object_set_new(body, "receipt", receipt);
    if (next)
      json_object_set_new(body, "next", next);
    cairn__api_json(rs, 200, body);
  }
  rbody_free(&b);
  json_decref(o);
}

/* ---- batches (feature "batch") ---- */

/* The answer to a batch that took tasks: 200 {"tasks": [...]}, or 204 when
 * none (with the retry the core asks for). */
static void tasks_answer(cairn__resp *rs, json_t *tasks, int retry_ms) {
  if (json_array_size(tasks) > 0) {
    cairn__api_json(rs, 200, json_pack("{s:o}", "tasks", tasks));
    return;
  }
  json_decref(tasks);
  rs->status = 204;
  if (retry_ms > 0)
    cairn__api_retry(rs, retry_ms);
}

void cairn__api_work_many(cairn_master *m, int64_t v, const cairn__report *r, char **apps,
                          int napps, json_t *max, cairn__resp *rs) {
  if (!json_is_integer(max) || json_integer_value(max) < 1 ||
      json_integer_value(max) > CAIRN_MAX_BATCH) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"max\" must be an integer from 1 to %u", CAIRN_MAX_BATCH);
    return;
  }
  json_t *tasks = NULL;
  int retry_ms = 0;
  cairn_error err = {0};
  if (cairn__core_work_many(m->core, v, r, apps, napps, (unsigned)json_integer_value(max), &tasks,
                            &retry_ms, &err) != CAIRN_OK) {
    cairn__api_error(rs, err.status, err.text);
    if (retry_ms > 0) /* at its lease bound */
      cairn__api_retry(rs, retry_ms);
  } else
    tasks_answer(rs, tasks, retry_ms);
}

/* Reads entry i of "results" into b; CAIRN_EINVAL naming it when it is
 * malformed or repeats an index of b[0..i). */
static cairn_status batch_entry(json_t *e, size_t i, rbody *b, cairn_error *err) {
  static const char *const keys[] = {"index", "exit_status", "output", "encoding", "reason",
                                     "stderr", "stderr_encoding", "outputs", CAIRN_CPU_KEY,
                                     CAIRN_USAGE_KEY, NULL};
  cairn_error why = {0};
  const char *k;
  json_t *val;
  if (!json_is_object(e))
    return cairn__error_set(err, CAIRN_EINVAL, "results[%zu] must be an object", i);
  json_object_foreach(e, k, val) {
    const char *const *a = keys;
    while (*a && strcmp(*a, k) != 0)
      a++;
    if (!*a)
      return cairn__error_set(err, CAIRN_EINVAL, "results[%zu]: unknown field \"%.64s\"", i, k);
  }
  json_t *idx = json_object_get(e, "index");
  if (!json_is_integer(idx) || json_integer_value(idx) < 1)
    return cairn__error_set(err, CAIRN_EINVAL, "results[%zu]: \"index\" must be an allocation "
                           "index (an integer from 1)", i);
  b[i].r.idx = json_integer_value(idx);
  for (size_t k2 = 0; k2 < i; k2++)
    if (b[k2].r.idx == b[i].r.idx)
      return cairn__error_set(err, CAIRN_EINVAL, "results[%zu]: index %lld is also results[%zu]",
                             i, (long long)b[i].r.idx, k2);
  if (result_body(e, &b[i], &why) != CAIRN_OK)
    return cairn__error_set(err, why.status, "results[%zu]: %s", i, why.text);
  return CAIRN_OK;
}

/* {"results": [{"index", "status", "state", "receipt"} or {"index",
 * "status", "error"}], "tasks": [...] when "next" asked for some}; each
 * receipt O(log n) reads of the audit log, outside c->lock. */
static json_t *results_answer(cairn_master *m, const rbody *b, size_t n, json_t *tasks) {
  json_t *list = json_array();
  for (size_t i = 0; i < n; i++) {
    const cairn__batch_result *e = &b[i].r;
    json_t *receipt = e->st == CAIRN_OK ? cairn__api_log_receipt(m, e->idx) : NULL;
    json_t *o = e->st == CAIRN_OK
                    ? json_pack("{s:I, s:i, s:s}", "index", (json_int_t)e->idx, "status", 200,
                                "state", "accepted")
                    : json_pack("{s:I, s:i, s:{s:s, s:s}}", "index", (json_int_t)e->idx,
                                "status", cairn__status_http(e->st), "error", "code",
                                cairn__status_code(e->st), "message", e->err.text);
    if (receipt)
      json_object_set_new(o, "receipt", receipt);
    json_array_append_new(list, o);
  }
  json_t *body = json_pack("{s:o}", "results", list);
  if (tasks)
    json_object_set_new(body, "tasks", tasks);
  return body;
}

void cairn__api_results(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"results", "next", NULL};
  int64_t v = cairn__api_volunteer(m, rq, rs);
  if (!v)
    return;
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  json_t *list = json_object_get(o, "results"), *next = json_object_get(o, "next");
  size_t n = json_array_size(list);
  rbody *b = NULL;
  cairn_error err = {0};
  if (!json_is_array(list) || n == 0)
    cairn__error_set(&err, CAIRN_EINVAL, "\"results\" must be an array of 1 to %u results",
                    CAIRN_MAX_BATCH);
  else if (n > CAIRN_MAX_BATCH)
    cairn__error_set(&err, CAIRN_ETOOBIG, "%zu results exceed the cap of %u a request", n,
                    CAIRN_MAX_BATCH);
  else if (next && (!json_is_integer(next) || json_integer_value(next) < 0 ||
                    json_integer_value(next) > CAIRN_MAX_BATCH))
    cairn__error_set(&err, CAIRN_EINVAL, "\"next\" must be an integer from 0 to %u",
                    CAIRN_MAX_BATCH);
  else if (!(b = calloc(n, sizeof *b)))
    cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; b && i < n && err.status == CAIRN_OK; i++)
    batch_entry(json_array_get(list, i), i, b, &err);
  for (size_t i = 0; b && i < n && err.status == CAIRN_OK; i++)
    store_lists(m, v, &b[i], &err);
  json_t *tasks = NULL;
  if (err.status == CAIRN_OK) { /* every entry read: apply them all */
    cairn__batch_result *res = malloc(n * sizeof *res);
    for (size_t i = 0; res && i < n; i++)
      res[i] = b[i].r;
    if (!res)
      cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
    else if (cairn__core_results(m->core, v, res, n, next ? (unsigned)json_integer_value(next) : 0,
                                 &tasks, &err) == CAIRN_OK)
      for (size_t i = 0; i < n; i++)
        b[i].r = res[i];
    free(res);
  }
  if (err.status != CAIRN_OK)
    cairn__api_error(rs, err.status, err.text);
  else
    cairn__api_json(rs, 200, results_answer(m, b, n, tasks));
  for (size_t i = 0; b && i < n; i++)
    rbody_free(&b[i]);
  free(b);
  json_decref(o);
}
