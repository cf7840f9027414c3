/* jobspec.c — job file parser and validator (jansson). Every rejection names
 * the field or task at fault. Cost: O(T log T + E) for T tasks and E edges. */
#include "plan/jobspec.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/sha256.h"

static char *dupstr(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d)
    memcpy(d, s, n);
  return d;
}

void cairn__jobspec_free(cairn__jobspec *j) {
  if (!j)
    return;
  free(j->name);
  free(j->app);
  free(j->app_version);
  free(j->policy);
  cairn__validator_free(&j->validator);
  for (uint32_t i = 0; i < j->nfiles; i++) {
    free(j->files[i].name);
    free(j->files[i].path);
    free(j->files[i].sha256);
  }
  free(j->files);
  for (uint32_t i = 0; i < j->ntasks; i++) {
    free(j->tasks[i].id);
    for (uint32_t k = 0; k < j->tasks[i].nargs; k++)
      free(j->tasks[i].args[k]);
    free(j->tasks[i].args);
    free(j->tasks[i].inputs);
    cairn__task_run_free(&j->tasks[i].run);
    for (uint32_t k = 0; k < j->tasks[i].npins; k++)
      free(j->tasks[i].pins[k].file);
    free(j->tasks[i].pins);
    cairn__output_specs_free(&j->tasks[i].outputs);
  }
  cairn__task_run_free(&j->defaults);
  for (uint32_t i = 0; i < j->ncategories; i++)
    free(j->categories[i]);
  free(j->tasks);
  cairn__dag_free(j->dag);
  free(j);
}

int cairn__jobspec_file_index(const cairn__jobspec *j, const char *name) {
  for (uint32_t i = 0; i < j->nfiles; i++)
    if (strcmp(j->files[i].name, name) == 0)
      return (int)i;
  return -1;
}

/* Checks that every key of obj is one of allowed (NULL-terminated). */
static int only_keys(json_t *obj, const char *const *allowed, const char *where, cairn_error *err) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int ok = 0;
    for (const char *const *a = allowed; *a; a++)
      if (strcmp(*a, key) == 0)
        ok = 1;
    if (!ok) {
      cairn__error_set(err, CAIRN_EINVAL, "%s: unknown field \"%s\"", where, key);
      return -1;
    }
  }
  return 0;
}

static int valid_name(const char *s) {
  size_t n = strlen(s);
  if (n == 0 || n > CAIRN_MAX_NAME)
    return 0;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)s[i] < 0x20)
      return 0;
  return 1;
}

/* A file name is also the name of inputs/NAME in a worker's task directory
 * (docs/protocol.md): it must name one entry there, never a path. */
static int safe_file_name(const char *s) {
  return strchr(s, '/') == NULL && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
}

static int get_int(json_t *root, const char *key, int def, int lo, int hi, int *out,
                   cairn_error *err) {
  json_t *v = json_object_get(root, key);
  if (!v) {
    *out = def;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
    cairn__error_set(err, CAIRN_EINVAL, "job: \"%s\" must be an integer from %d to %d", key, lo, hi);
    return -1;
  }
  *out = (int)json_integer_value(v);
  return 0;
}

static int get_str(json_t *obj, const char *key, int required, char **out, const char *where,
                   cairn_error *err) {
  json_t *v = json_object_get(obj, key);
  if (!v) {
    if (required) {
      cairn__error_set(err, CAIRN_EINVAL, "%s: missing \"%s\"", where, key);
      return -1;
    }
    return 0;
  }
  if (!json_is_string(v) || !valid_name(json_string_value(v))) {
    cairn__error_set(err, CAIRN_EINVAL, "%s: \"%s\" must be a non-empty string of at most %u bytes",
                    where, key, CAIRN_MAX_NAME);
    return -1;
  }
  *out = dupstr(json_string_value(v));
  if (!*out) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return -1;
  }
  return 0;
}

static int parse_files(cairn__jobspec *j, json_t *files, cairn__jobspec_mode mode, cairn_error *err) {
  static const char *const keys[] = {"name", "path", "sha256", "size", "broadcast", NULL};
  if (!files)
    return 0;
  if (!json_is_array(files)) {
    cairn__error_set(err, CAIRN_EINVAL, "job: \"files\" must be an array");
    return -1;
  }
  size_t n = json_array_size(files);
  j->files = calloc(n ? n : 1, sizeof *j->files);
  if (!j->files) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return -1;
  }
  for (size_t i = 0; i < n; i++) {
    json_t *f = json_array_get(files, i);
    char where[64];
    snprintf(where, sizeof where, "files[%zu]", i);
    if (!json_is_object(f)) {
      cairn__error_set(err, CAIRN_EINVAL, "%s: must be an object", where);
      return -1;
    }
    cairn__jobspec_file *jf = &j->files[j->nfiles++];
    jf->size = -1;
    if (only_keys(f, keys, where, err) || get_str(f, "name", 1, &jf->name, where, err) ||
        get_str(f, "path", mode == CAIRN_JOBSPEC_CLIENT && !json_object_get(f, "sha256"),
                &jf->path, where, err))
      return -1;
    if (!safe_file_name(jf->name)) {
      cairn__error_set(err, CAIRN_EINVAL,
                      "file \"%s\": the name must not contain '/' or be \".\" or \"..\" "
                      "(it names inputs/NAME in the worker's task directory)", jf->name);
      return -1;
    }
    json_t *sha = json_object_get(f, "sha256");
    if (sha) {
      if (!json_is_string(sha) || !cairn__sha256_valid_hex(json_string_value(sha))) {
        cairn__error_set(err, CAIRN_EINVAL, "file \"%s\": \"sha256\" must be 64 lowercase hex digits",
                        jf->name);
        return -1;
      }
      jf->sha256 = dupstr(json_string_value(sha));
    } else if (mode == CAIRN_JOBSPEC_SERVER) {
      cairn__error_set(err, CAIRN_EINVAL, "file \"%s\": missing \"sha256\" (upload it first)",
                      jf->name);
      return -1;
    }
    json_t *size = json_object_get(f, "size");
    if (size) {
      if (!json_is_integer(size) || json_integer_value(size) < 0) {
        cairn__error_set(err, CAIRN_EINVAL, "file \"%s\": \"size\" must be a non-negative integer",
                        jf->name);
        return -1;
      }
      jf->size = json_integer_value(size);
    }
    json_t *b = json_object_get(f, "broadcast");
    if (b && !json_is_boolean(b)) {
      cairn__error_set(err, CAIRN_EINVAL, "file \"%s\": \"broadcast\" must be true or false",
                      jf->name);
      return -1;
    }
    jf->broadcast = b && json_is_true(b);
    for (uint32_t k = 0; k + 1 < j->nfiles; k++)
      if (strcmp(j->files[k].name, jf->name) == 0) {
        cairn__error_set(err, CAIRN_EINVAL, "file \"%s\" is listed twice", jf->name);
        return -1;
      }
  }
  return 0;
}

typedef struct id_slot {
  const char *id;
  uint32_t idx;
} id_slot;

static int cmp_slot(const void *a, const void *b) {
  return strcmp(((const id_slot *)a)->id, ((const id_slot *)b)->id);
}

static int find_id(const id_slot *sorted, uint32_t n, const char *id) {
  id_slot key = {id, 0};
  const id_slot *s = bsearch(&key, sorted, n, sizeof key, cmp_slot);
  return s ? (int)s->idx : -1;
}

/* Gives task jt the class of request r, adding it when new. O(classes). */
static int add_rclass(cairn__jobspec *j, const cairn__resources *r, cairn__jobspec_task *jt,
                      cairn_error *err) {
  uint32_t k = 0;
  while (k < j->nrclasses && !cairn__resources_equal(&j->rclasses[k], r))
    k++;
  if (k == CAIRN_MAX_RESOURCE_CLASSES) {
    cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": a job may make at most %d distinct "
                    "resource requests", jt->id, CAIRN_MAX_RESOURCE_CLASSES);
    return -1;
  }
  if (k == j->nrclasses)
    j->rclasses[j->nrclasses++] = *r;
  jt->rclass = (uint8_t)k;
  return 0;
}

/* The index of category label in j (added when new). O(categories). */
static int category_of(cairn__jobspec *j, const char *label, const char *where,
                       cairn_error *err) {
  uint32_t k = 0;
  while (k < j->ncategories && strcmp(j->categories[k], label) != 0)
    k++;
  if (k == CAIRN_MAX_CATEGORIES) {
    cairn__error_set(err, CAIRN_EINVAL, "%s: a job may have at most %d categories", where,
                    CAIRN_MAX_CATEGORIES - 1);
    return -1;
  }
  if (k == j->ncategories) {
    if (!(j->categories[k] = dupstr(label))) {
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return -1;
    }
    j->ncategories++;
  }
  return (int)k;
}

/* Reads obj's sizing (docs/jobs.md, "Automatic sizes") on top of *sizing
 * and *category: "resources" "auto" (an object clears CAIRN_SIZE_AUTO),
 * "retry_larger" (true or false) and "category" (a label). 0, or -1 with
 * err naming where and the field. */
static int parse_sizing(cairn__jobspec *j, json_t *obj, const char *where, uint8_t *sizing,
                        uint8_t *category, cairn_error *err) {
  json_t *res = json_object_get(obj, "resources"), *retry = json_object_get(obj, "retry_larger");
  json_t *cat = json_object_get(obj, "category");
  if (res && json_is_string(res) && strcmp(json_string_value(res), "auto") == 0)
    *sizing |= CAIRN_SIZE_AUTO;
  else if (res && !json_is_object(res)) {
    cairn__error_set(err, CAIRN_EINVAL, "%s: \"resources\" must be \"auto\" or an object with "
                    "\"cores\", \"memory_mib\" and/or \"disk_mib\"", where);
    return -1;
  } else if (res)
    *sizing &= (uint8_t)~CAIRN_SIZE_AUTO;
  if (retry && !json_is_boolean(retry)) {
    cairn__error_set(err, CAIRN_EINVAL, "%s: \"retry_larger\" must be true or false", where);
    return -1;
  }
  if (retry)
    *sizing = json_is_true(retry) ? (uint8_t)(*sizing | CAIRN_SIZE_RETRY_LARGER)
                                  : (uint8_t)(*sizing & ~CAIRN_SIZE_RETRY_LARGER);
  if (cat && (!json_is_string(cat) || !cairn__category_valid(json_string_value(cat)))) {
    cairn__error_set(err, CAIRN_EINVAL, "%s: \"category\" must be 1 to %d printable ASCII "
                    "characters", where, CAIRN_MAX_CATEGORY_LEN);
    return -1;
  }
  int k = cat ? category_of(j, json_string_value(cat), where, err) : *category;
  if (k < 0)
    return -1;
  *category = (uint8_t)k;
  return 0;
}

static int parse_task(cairn__jobspec *j, json_t *t, size_t i, const cairn__output_patterns *deflt,
                      cairn_error *err) {
  static const char *const keys[] = {"id", "args", "inputs", "after", "resources", "limits",
                                     "env", "stdin", "network", "outputs", "category",
                                     "retry_larger", NULL};
  char where[64];
  snprintf(where, sizeof where, "tasks[%zu]", i);
  if (!json_is_object(t)) {
    cairn__error_set(err, CAIRN_EINVAL, "%s: must be an object", where);
    return -1;
  }
  cairn__jobspec_task *jt = &j->tasks[i];
  if (get_str(t, "id", 1, &jt->id, where, err))
    return -1;
  char tw[CAIRN_MAX_NAME + 16];
  snprintf(tw, sizeof tw, "task \"%s\"", jt->id);
  if (only_keys(t, keys, tw, err))
    return -1;
  json_t *args = json_object_get(t, "args");
  if (args) {
    if (!json_is_array(args) || json_array_size(args) > CAIRN_MAX_ARGS) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": \"args\" must be an array of at most %u strings",
                      jt->id, CAIRN_MAX_ARGS);
      return -1;
    }
    jt->args = calloc(json_array_size(args) + 1, sizeof(char *));
    if (!jt->args) {
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return -1;
    }
    for (size_t k = 0; k < json_array_size(args); k++) {
      json_t *a = json_array_get(args, k);
      if (!json_is_string(a) || json_string_length(a) > CAIRN_MAX_ARG_LEN ||
          strlen(json_string_value(a)) != json_string_length(a)) {
        cairn__error_set(err, CAIRN_EINVAL,
                        "task \"%s\": args[%zu] must be a string of at most %u bytes without NUL",
                        jt->id, k, CAIRN_MAX_ARG_LEN);
        return -1;
      }
      jt->args[jt->nargs++] = dupstr(json_string_value(a));
    }
  }
  json_t *inputs = json_object_get(t, "inputs");
  if (inputs) {
    if (!json_is_array(inputs) || json_array_size(inputs) > CAIRN_MAX_ARGS) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": \"inputs\" must be an array of file names",
                      jt->id);
      return -1;
    }
    jt->inputs = calloc(json_array_size(inputs) + 1, sizeof(uint32_t));
    if (!jt->inputs) {
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return -1;
    }
    for (size_t k = 0; k < json_array_size(inputs); k++) {
      json_t *a = json_array_get(inputs, k);
      if (json_is_string(a) && strchr(json_string_value(a), '/'))
        continue; /* a parent's output file: resolve_pins(), once parents are known */
      int fi = json_is_string(a) ? cairn__jobspec_file_index(j, json_string_value(a)) : -1;
      if (fi < 0) {
        cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": input %s is not in \"files\"", jt->id,
                        json_is_string(a) ? json_string_value(a) : "(not a string)");
        return -1;
      }
      for (uint32_t q = 0; q < jt->ninputs; q++)
        if (jt->inputs[q] == (uint32_t)fi) {
          cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": input %s is listed twice", jt->id,
                          json_string_value(a));
          return -1;
        }
      jt->inputs[jt->ninputs++] = (uint32_t)fi;
    }
  }
  cairn__task_run own = {0};
  int rc = cairn__task_run_parse(t, tw, &own, err) != CAIRN_OK ||
           cairn__task_run_merge(&j->defaults, &own, &jt->run, err) != CAIRN_OK;
  cairn__task_run_free(&own);
  if (rc)
    return -1;
  if (jt->run.stdin_name) {
    int fi = cairn__jobspec_file_index(j, jt->run.stdin_name), found = 0;
    for (uint32_t q = 0; fi >= 0 && q < jt->ninputs; q++)
      found |= jt->inputs[q] == (uint32_t)fi;
    if (!found) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": stdin \"%.256s\" is not one of its inputs",
                      jt->id, jt->run.stdin_name);
      return -1;
    }
  }
  cairn__resources res = j->resources;
  json_t *rv = json_object_get(t, "resources");
  jt->sizing = j->def_sizing;
  jt->category = j->def_category;
  if (parse_sizing(j, t, tw, &jt->sizing, &jt->category, err))
    return -1;
  if (rv && !(jt->sizing & CAIRN_SIZE_AUTO) &&
      cairn__resources_parse(rv, &j->resources, &res, tw, err) != CAIRN_OK)
    return -1;
  if (jt->sizing & CAIRN_SIZE_AUTO)
    res = CAIRN_RESOURCES_DEFAULT; /* its class: the least it can ask (the master sizes it) */
  if (add_rclass(j, &res, jt, err))
    return -1;
  json_t *outs = json_object_get(t, "outputs");
  if (outs ? cairn__outputs_parse(outs, tw, &jt->outputs, err) != CAIRN_OK
           : cairn__outputs_copy(deflt, &jt->outputs) != 0) {
    if (!outs)
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return -1;
  }
  return 0;
}

/* Reads task i's inputs "PARENT_ID/NAME": PARENT_ID (the longest prefix
 * before a '/' that names one of its parents) must be in "after" and NAME
 * must match one of that parent's "outputs". O(inputs × parents × id
 * length). */
static int resolve_pins(cairn__jobspec *j, json_t *t, uint32_t i, cairn_error *err) {
  cairn__jobspec_task *jt = &j->tasks[i];
  json_t *inputs = json_object_get(t, "inputs");
  for (size_t k = 0; k < json_array_size(inputs); k++) {
    const char *s = json_string_value(json_array_get(inputs, k));
    if (!s || !strchr(s, '/'))
      continue;
    int parent = -1;
    const char *file = NULL;
    size_t best = 0, len = strlen(s);
    for (uint32_t p = j->dag->par_off[i]; p < j->dag->par_off[i + 1]; p++) {
      const char *pid = j->tasks[j->dag->par[p]].id;
      size_t n = strlen(pid);
      if (n > best && n < len && s[n] == '/' && strncmp(pid, s, n) == 0) {
        best = n; /* the longest parent id that is a prefix */
        parent = (int)j->dag->par[p];
        file = s + n + 1;
      }
    }
    if (parent < 0) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": input \"%s\" names no parent: "
                      "PARENT_ID/NAME needs PARENT_ID in \"after\"", jt->id, s);
      return -1;
    }
    if (!cairn__output_name_ok(file) || cairn__outputs_match(&j->tasks[parent].outputs, file) < 0) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": input \"%s\": \"%s\" is not among "
                      "the \"outputs\" of task \"%s\"", jt->id, s, file, j->tasks[parent].id);
      return -1;
    }
    for (uint32_t q = 0; q < jt->npins; q++)
      if (jt->pins[q].parent == (uint32_t)parent && strcmp(jt->pins[q].file, file) == 0) {
        cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": input %s is listed twice", jt->id, s);
        return -1;
      }
    if (!jt->pins && !(jt->pins = calloc(json_array_size(inputs), sizeof *jt->pins))) {
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return -1;
    }
    jt->pins[jt->npins].parent = (uint32_t)parent;
    if (!(jt->pins[jt->npins].file = dupstr(file))) {
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      return -1;
    }
    jt->npins++;
  }
  return 0;
}

cairn_status cairn__jobspec_ceiling(cairn__jobspec *j, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                   const char *const *flag, cairn_error *err) {
  cairn__task_run def;
  memset(&def, 0, sizeof def);
  memcpy(def.limits, j->defaults.limits, sizeof def.limits);
  cairn_status st = cairn__task_run_ceiling(&def, ceiling, "job", flag, err);
  for (uint32_t i = 0; st == CAIRN_OK && i < j->ntasks; i++) {
    char where[CAIRN_MAX_NAME + 16];
    snprintf(where, sizeof where, "task \"%s\"", j->tasks[i].id);
    st = cairn__task_run_ceiling(&j->tasks[i].run, ceiling, where, flag, err);
  }
  return st;
}

static int build_dag(cairn__jobspec *j, json_t *tasks, cairn_error *err) {
  uint32_t n = j->ntasks;
  int rc = -1;
  id_slot *sorted = malloc((n ? n : 1) * sizeof *sorted);
  cairn__edge *edges = NULL;
  uint64_t m = 0, cap = 0;
  uint32_t *order = NULL;
  if (!sorted)
    goto nomem;
  for (uint32_t i = 0; i < n; i++)
    sorted[i] = (id_slot){j->tasks[i].id, i};
  qsort(sorted, n, sizeof *sorted, cmp_slot);
  for (uint32_t i = 1; i < n; i++)
    if (strcmp(sorted[i].id, sorted[i - 1].id) == 0) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": duplicate id", sorted[i].id);
      goto out;
    }
  for (uint32_t i = 0; i < n; i++) {
    json_t *after = json_object_get(json_array_get(tasks, i), "after");
    const char *id = j->tasks[i].id;
    if (!after)
      continue;
    if (!json_is_array(after) || json_array_size(after) > CAIRN_MAX_PARENTS) {
      cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": \"after\" must be an array of task ids", id);
      goto out;
    }
    for (size_t k = 0; k < json_array_size(after); k++) {
      json_t *p = json_array_get(after, k);
      int pi = json_is_string(p) ? find_id(sorted, n, json_string_value(p)) : -1;
      if (pi < 0) {
        cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": unknown parent %s%s%s", id,
                        json_is_string(p) ? "\"" : "",
                        json_is_string(p) ? json_string_value(p) : "(not a string)",
                        json_is_string(p) ? "\"" : "");
        goto out;
      }
      if (m == cap) {
        cap = cap ? 2 * cap : 1024;
        cairn__edge *e = realloc(edges, cap * sizeof *e);
        if (!e)
          goto nomem;
        edges = e;
      }
      edges[m++] = (cairn__edge){(uint32_t)pi, i};
    }
  }
  j->dag = cairn__dag_build(n, edges, m, err);
  if (!j->dag) {
    /* Out-of-range cannot happen here: the only error left is a repeat. */
    if (err && err->status == CAIRN_EINVAL) {
      unsigned pv = 0, cv = 0;
      if (sscanf(err->text, "duplicate edge %u -> %u", &pv, &cv) == 2 && pv < n && cv < n)
        cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": parent \"%s\" is listed twice",
                        j->tasks[cv].id, j->tasks[pv].id);
    }
    goto out;
  }
  order = malloc((n ? n : 1) * sizeof *order);
  if (!order)
    goto nomem;
  uint32_t bad = 0;
  int t = cairn__dag_topo_order(j->dag, order, &bad);
  if (t == -1) {
    cairn__error_set(err, CAIRN_EINVAL, "task \"%s\": lies on a dependency cycle", j->tasks[bad].id);
    goto out;
  }
  if (t < 0)
    goto nomem;
  rc = 0;
  goto out;
nomem:
  cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
out:
  free(sorted);
  free(edges);
  free(order);
  return rc;
}

cairn__jobspec *cairn__jobspec_parse(const char *text, size_t len, cairn__jobspec_mode mode,
                                   cairn_error *err) {
  static const char *const keys[] = {"name", "app", "app_version", "policy", "replication", "quorum",
                                     "lease_seconds", "max_attempts", "priority", "files", "tasks",
                                     "resources", "limits", "env", "stdin", "network", "outputs",
                                     "validator", "adaptive", "keep", "category", "retry_larger",
                                     NULL};
  cairn__output_patterns deflt = {0};
  json_error_t jerr;
  cairn__jobspec *j = NULL;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    cairn__error_set(err, CAIRN_EINVAL, "job: malformed JSON at line %d column %d: %s", jerr.line,
                    jerr.column, jerr.text);
    return NULL;
  }
  if (!json_is_object(root)) {
    cairn__error_set(err, CAIRN_EINVAL, "job: must be a JSON object");
    goto fail;
  }
  j = calloc(1, sizeof *j);
  if (!j) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto fail;
  }
  if (only_keys(root, keys, "job", err) || get_str(root, "name", 0, &j->name, "job", err) ||
      get_str(root, "app", 1, &j->app, "job", err) ||
      get_str(root, "app_version", 0, &j->app_version, "job", err) ||
      get_str(root, "policy", 0, &j->policy, "job", err) ||
      get_int(root, "replication", 1, 1, CAIRN_MAX_REPLICATION, &j->replication, err) ||
      get_int(root, "quorum", 1, 1, CAIRN_MAX_REPLICATION, &j->quorum, err) ||
      get_int(root, "lease_seconds", CAIRN_DEFAULT_LEASE_SECONDS, 1, CAIRN_MAX_LEASE_SECONDS,
              &j->lease_seconds, err) ||
      get_int(root, "max_attempts", CAIRN_DEFAULT_MAX_ATTEMPTS, 1, CAIRN_MAX_ATTEMPTS_LIMIT,
              &j->max_attempts, err) ||
      get_int(root, "priority", 0, -CAIRN_MAX_PRIORITY, CAIRN_MAX_PRIORITY, &j->priority, err))
    goto fail;
  if (cairn__validator_parse(json_object_get(root, "validator"), "job: validator", &j->validator,
                            err) != CAIRN_OK)
    goto fail;
  j->resources = CAIRN_RESOURCES_DEFAULT;
  json_t *jres = json_object_get(root, "resources");
  if (category_of(j, "", "job", err) < 0 ||
      parse_sizing(j, root, "job", &j->def_sizing, &j->def_category, err))
    goto fail;
  if (jres && !(j->def_sizing & CAIRN_SIZE_AUTO) &&
      cairn__resources_parse(jres, &j->resources, &j->resources, "job", err) != CAIRN_OK)
    goto fail;
  if (!j->name && !(j->name = dupstr("job")))
    goto nomem;
  if (!j->policy && !(j->policy = dupstr("ic")))
    goto nomem;
  if (j->quorum > j->replication) {
    cairn__error_set(err, CAIRN_EINVAL, "job: quorum (%d) exceeds replication (%d)", j->quorum,
                    j->replication);
    goto fail;
  }
  json_t *adaptive = json_object_get(root, "adaptive");
  if (adaptive && !json_is_boolean(adaptive)) {
    cairn__error_set(err, CAIRN_EINVAL, "job: \"adaptive\" must be true or false");
    goto fail;
  }
  j->adaptive = adaptive && json_is_true(adaptive);
  if (j->adaptive && j->quorum < 2) {
    cairn__error_set(err, CAIRN_EINVAL, "job: \"adaptive\" needs a quorum of at least 2 (it "
                    "is %d): with 1, every task already runs once", j->quorum);
    goto fail;
  }
  json_t *keep = json_object_get(root, "keep");
  const char *keep_s = json_string_value(keep);
  if (keep && (!keep_s || (strcmp(keep_s, "master") != 0 && strcmp(keep_s, "workers") != 0))) {
    cairn__error_set(err, CAIRN_EINVAL, "job: \"keep\" must be \"master\" or \"workers\"");
    goto fail;
  }
  j->keep_master = keep_s && strcmp(keep_s, "master") == 0;
  if (parse_files(j, json_object_get(root, "files"), mode, err) ||
      cairn__task_run_parse(root, "job", &j->defaults, err) != CAIRN_OK)
    goto fail;
  if (j->defaults.stdin_name && cairn__jobspec_file_index(j, j->defaults.stdin_name) < 0) {
    cairn__error_set(err, CAIRN_EINVAL, "job: stdin \"%.256s\" is not in \"files\"",
                    j->defaults.stdin_name);
    goto fail;
  }
  json_t *outs = json_object_get(root, "outputs");
  if (outs && cairn__outputs_parse(outs, "job", &deflt, err) != CAIRN_OK)
    goto fail;
  json_t *tasks = json_object_get(root, "tasks");
  if (!tasks || !json_is_array(tasks) || json_array_size(tasks) == 0) {
    cairn__error_set(err, CAIRN_EINVAL, "job: \"tasks\" must be a non-empty array");
    goto fail;
  }
  if (json_array_size(tasks) > CAIRN_MAX_TASKS) {
    cairn__error_set(err, CAIRN_ETOOBIG, "job: %zu tasks exceed the limit of %u",
                    json_array_size(tasks), CAIRN_MAX_TASKS);
    goto fail;
  }
  j->tasks = calloc(json_array_size(tasks), sizeof *j->tasks);
  if (!j->tasks)
    goto nomem;
  for (size_t i = 0; i < json_array_size(tasks); i++) {
    j->ntasks = (uint32_t)i + 1;
    if (parse_task(j, json_array_get(tasks, i), i, &deflt, err))
      goto fail;
  }
  if (build_dag(j, tasks, err))
    goto fail;
  for (uint32_t i = 0; i < j->ntasks; i++)
    if (resolve_pins(j, json_array_get(tasks, i), i, err))
      goto fail;
  cairn__output_specs_free(&deflt);
  json_decref(root);
  return j;
nomem:
  cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
fail:
  cairn__output_specs_free(&deflt);
  json_decref(root);
  cairn__jobspec_free(j);
  return NULL;
}
