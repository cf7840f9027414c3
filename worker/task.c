/* task.c — parse and validate the work offer (POST /v1/work, 200). */
#include "worker/task.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/appsig.h"
#include "common/limits.h"
#include "common/sha256.h"

void cairn__task_free(cairn__task *t) {
  if (!t)
    return;
  free(t->id);
  free(t->app);
  free(t->app_version);
  free(t->app_platform);
  for (size_t i = 0; i < t->nargs; i++)
    free(t->args[i]);
  free(t->args);
  for (size_t i = 0; i < t->ninputs; i++) {
    free(t->inputs[i].name);
    free(t->inputs[i].url);
    for (size_t k = 0; k < t->inputs[i].nsources; k++)
      free(t->inputs[i].sources[k]);
    free(t->inputs[i].sources);
    free(t->inputs[i].parent);
    free(t->inputs[i].file);
  }
  cairn__output_specs_free(&t->outputs);
  free(t->inputs);
  for (size_t i = 0; i < t->nparents; i++) {
    free(t->parents[i].id);
    free(t->parents[i].url);
  }
  free(t->parents);
  cairn__task_run_free(&t->run);
  json_decref(t->offer);
  free(t);
}

/* A string member of obj, or NULL. */
static const char *str_member(json_t *obj, const char *key) {
  return json_string_value(json_object_get(obj, key));
}

static cairn_status parse_args(cairn__task *t, json_t *args, cairn_error *err) {
  if (!json_is_array(args))
    return cairn__error_set(err, CAIRN_EINVAL, "task.args is not an array");
  size_t n = json_array_size(args);
  if (n > CAIRN_MAX_ARGS)
    return cairn__error_set(err, CAIRN_EINVAL, "task has %zu args (limit %u)", n, CAIRN_MAX_ARGS);
  t->args = calloc(n + 1, sizeof *t->args);
  if (!t->args)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *a = json_array_get(args, i);
    if (!json_is_string(a))
      return cairn__error_set(err, CAIRN_EINVAL, "task.args[%zu] is not a string", i);
    if (json_string_length(a) > CAIRN_MAX_ARG_LEN ||
        strlen(json_string_value(a)) != json_string_length(a))
      return cairn__error_set(err, CAIRN_EINVAL, "task.args[%zu] is too long or has a NUL", i);
    t->args[i] = strdup(json_string_value(a));
    if (!t->args[i])
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    t->nargs = i + 1;
  }
  return CAIRN_OK;
}

/* 1 when url is a path on the master or a full http(s) URL. */
static int url_ok(const char *url) {
  return url[0] == '/' || strncmp(url, "http://", 7) == 0 || strncmp(url, "https://", 8) == 0;
}

/* Reads input x's "sources" (absent: none). */
static cairn_status parse_sources(cairn__input *x, size_t i, json_t *sources, cairn_error *err) {
  if (!sources)
    return CAIRN_OK;
  size_t n = json_array_size(sources);
  if (!json_is_array(sources) || n > CAIRN_MAX_SOURCES)
    return cairn__error_set(err, CAIRN_EINVAL,
                           "task.inputs[%zu].sources is not an array of at most %u URLs", i,
                           CAIRN_MAX_SOURCES);
  x->sources = calloc(n + 1, sizeof *x->sources);
  if (!x->sources)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t k = 0; k < n; k++) {
    const char *url = json_string_value(json_array_get(sources, k));
    if (!url || !url_ok(url) || strlen(url) > CAIRN_MAX_ARG_LEN)
      return cairn__error_set(err, CAIRN_EINVAL, "task.inputs[%zu].sources[%zu] is not a URL", i,
                             k);
    x->sources[k] = strdup(url);
    if (!x->sources[k])
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    x->nsources = k + 1;
  }
  return CAIRN_OK;
}

static cairn_status parse_inputs(cairn__task *t, json_t *inputs, cairn_error *err) {
  if (!inputs)
    return CAIRN_OK;
  if (!json_is_array(inputs))
    return cairn__error_set(err, CAIRN_EINVAL, "task.inputs is not an array");
  size_t n = json_array_size(inputs);
  if (n > CAIRN_MAX_ARGS)
    return cairn__error_set(err, CAIRN_EINVAL, "task has %zu inputs (limit %u)", n,
                           CAIRN_MAX_ARGS);
  t->inputs = calloc(n ? n : 1, sizeof *t->inputs);
  if (!t->inputs)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *in = json_array_get(inputs, i);
    const char *name = str_member(in, "name"), *sha = str_member(in, "sha256");
    const char *url = str_member(in, "url");
    json_t *size = json_object_get(in, "size");
    if (!name || !sha || !cairn__sha256_valid_hex(sha))
      return cairn__error_set(err, CAIRN_EINVAL, "task.inputs[%zu] (%.200s) lacks a name or a "
                             "sha256%s", i, name ? name : "?",
                             str_member(in, "parent") ? ": the parent did not produce that "
                             "output file" : "");
    if (size && (!json_is_integer(size) || json_integer_value(size) < 0 ||
                 (unsigned long long)json_integer_value(size) > CAIRN_MAX_FILE))
      return cairn__error_set(err, CAIRN_EINVAL, "task.inputs[%zu].size is not a size of at most "
                             "%llu bytes", i, (unsigned long long)CAIRN_MAX_FILE);
    cairn__input *x = &t->inputs[i];
    t->ninputs = i + 1;
    x->name = strdup(name);
    memcpy(x->sha256, sha, 65);
    x->size = size ? (long long)json_integer_value(size) : -1;
    if (url)
      x->url = strdup(url);
    else if (asprintf(&x->url, "/v1/files/%s", sha) < 0)
      x->url = NULL;
    if (!x->name || !x->url)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    if (!url_ok(x->url))
      return cairn__error_set(err, CAIRN_EINVAL, "task.inputs[%zu].url is not a URL", i);
    const char *parent = str_member(in, "parent"), *file = str_member(in, "file");
    if (!parent != !file || (parent && (!*parent || !cairn__output_name_ok(file))))
      return cairn__error_set(err, CAIRN_EINVAL, "task.inputs[%zu] must have both \"parent\" and "
                             "\"file\" (an output path) or neither", i);
    if (parent && (!(x->parent = strdup(parent)) || !(x->file = strdup(file))))
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    cairn_status rc = parse_sources(x, i, json_object_get(in, "sources"), err);
    if (rc != CAIRN_OK)
      return rc;
  }
  return CAIRN_OK;
}

static cairn_status parse_parents(cairn__task *t, json_t *parents, cairn_error *err) {
  if (!parents)
    return CAIRN_OK;
  if (!json_is_array(parents))
    return cairn__error_set(err, CAIRN_EINVAL, "task.parents is not an array");
  size_t n = json_array_size(parents);
  if (n > CAIRN_MAX_PARENTS)
    return cairn__error_set(err, CAIRN_EINVAL, "task has %zu parents (limit %u)", n,
                           CAIRN_MAX_PARENTS);
  t->parents = calloc(n ? n : 1, sizeof *t->parents);
  if (!t->parents)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *p = json_array_get(parents, i);
    const char *id = str_member(p, "id"), *url = str_member(p, "url");
    if (!id || !url)
      return cairn__error_set(err, CAIRN_EINVAL, "task.parents[%zu] lacks an id or a url", i);
    t->nparents = i + 1;
    t->parents[i].id = strdup(id);
    t->parents[i].url = strdup(url);
    if (!t->parents[i].id || !t->parents[i].url)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  return CAIRN_OK;
}

/* Reads the offer root (a 200 answer of POST /v1/work); borrows root. */
/* "app_version": {"version", "platform"} of a signed app (docs/apps.md). */
static cairn_status parse_app_version(cairn__task *t, json_t *av, cairn_error *err) {
  if (!av)
    return CAIRN_OK;
  const char *v = str_member(av, "version"), *p = str_member(av, "platform");
  if (!json_is_object(av) || !v || !p || !cairn__app_version_ok(v) || !cairn__app_platform_ok(p))
    return cairn__error_set(err, CAIRN_EINVAL,
                           "work offer %lld: app_version must be {\"version\", \"platform\"}",
                           t->index);
  if (!cairn__app_name_ok(t->app))
    return cairn__error_set(err, CAIRN_EINVAL, "work offer %lld: \"%.64s\" is not a signed "
                           "app's name", t->index, t->app);
  t->app_version = strdup(v);
  t->app_platform = strdup(p);
  if (!t->app_version || !t->app_platform)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return CAIRN_OK;
}

static cairn__task *from_json(json_t *root, long long *index, cairn_error *err) {
  cairn__task *t = NULL;
  cairn_status rc = CAIRN_OK;
  *index = -1;
  json_t *jindex = json_object_get(root, "index");
  json_t *task = json_object_get(root, "task");
  json_t *lease = json_object_get(root, "lease_seconds");
  if (!json_is_integer(jindex) || json_integer_value(jindex) < 0) {
    cairn__error_set(err, CAIRN_EINVAL, "work offer has no index");
    return NULL;
  }
  *index = (long long)json_integer_value(jindex);
  t = calloc(1, sizeof *t);
  if (!t) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  t->index = *index;
  t->offer = json_incref(root);
  t->lease_seconds = json_is_integer(lease) && json_integer_value(lease) > 0
                       ? (long long)json_integer_value(lease)
                       : CAIRN_DEFAULT_LEASE_SECONDS;
  const char *id = str_member(task, "id"), *app = str_member(task, "app");
  json_t *job = json_object_get(task, "job");
  if (!json_is_object(task) || !id || !app || !json_is_integer(job)) {
    rc = cairn__error_set(err, CAIRN_EINVAL, "work offer %lld: task lacks job, id or app", *index);
    goto out;
  }
  t->job = (long long)json_integer_value(job);
  t->resources = CAIRN_RESOURCES_DEFAULT; /* a master without resources: one core */
  json_t *res = json_object_get(task, CAIRN_RESOURCES_KEY);
  if (res && (rc = cairn__resources_parse(res, &CAIRN_RESOURCES_DEFAULT, &t->resources,
                                         "work offer", err)) != CAIRN_OK)
    goto out;
  t->id = strdup(id);
  t->app = strdup(app);
  if (!t->id || !t->app) {
    rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  json_t *args = json_object_get(task, "args");
  json_t *none = args ? NULL : json_array();
  rc = parse_args(t, args ? args : none, err);
  json_decref(none);
  if (rc == CAIRN_OK)
    rc = parse_inputs(t, json_object_get(task, "inputs"), err);
  if (rc == CAIRN_OK)
    rc = parse_parents(t, json_object_get(task, "parents"), err);
  if (rc == CAIRN_OK)
    rc = cairn__task_run_parse(task, "task", &t->run, err);
  if (rc == CAIRN_OK && t->run.stdin_name) {
    size_t k = 0;
    while (k < t->ninputs && strcmp(t->inputs[k].name, t->run.stdin_name) != 0)
      k++;
    if (k == t->ninputs)
      rc = cairn__error_set(err, CAIRN_EINVAL, "task.stdin \"%.100s\" is not one of its inputs",
                           t->run.stdin_name);
  }
  json_t *outs = json_object_get(task, "outputs");
  if (rc == CAIRN_OK && outs)
    rc = cairn__outputs_parse(outs, "task", &t->outputs, err);
  const char *keep = str_member(task, "keep"); /* another value: uploaded as before */
  t->keep = keep && strcmp(keep, "workers") == 0;
  if (rc == CAIRN_OK)
    rc = parse_app_version(t, json_object_get(task, "app_version"), err);
out:
  if (rc != CAIRN_OK) {
    cairn__task_free(t);
    return NULL;
  }
  return t;
}

cairn__task *cairn__task_parse(const char *body, size_t len, long long *index, cairn_error *err) {
  json_error_t jerr;
  *index = -1;
  json_t *root = json_loadb(body ? body : "", len, 0, &jerr);
  if (!root) {
    cairn__error_set(err, CAIRN_EINVAL, "work offer is not JSON: %s", jerr.text);
    return NULL;
  }
  cairn__task *t = from_json(root, index, err);
  json_decref(root);
  return t;
}

cairn__task *cairn__task_parse_next(const char *body, size_t len, int *present, long long *index,
                                    cairn_error *err) {
  json_error_t jerr;
  *present = 0;
  *index = -1;
  json_t *root = json_loadb(body ? body : "", len, 0, &jerr);
  json_t *next = json_object_get(root, "next");
  cairn__task *t = NULL;
  if (next && !json_is_null(next)) {
    *present = 1;
    if (json_is_object(next))
      t = from_json(next, index, err);
    else
      cairn__error_set(err, CAIRN_EINVAL, "\"next\" in the result answer is not a work offer");
  }
  json_decref(root);
  return t;
}

cairn__task *cairn__task_from_json(json_t *offer, long long *index, cairn_error *err) {
  *index = -1;
  if (!json_is_object(offer)) {
    cairn__error_set(err, CAIRN_EINVAL, "an entry of \"tasks\" is not a work offer");
    return NULL;
  }
  return from_json(offer, index, err);
}
