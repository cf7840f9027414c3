/* plan_json.c — JSON instances and plans (formats in docs/planning.md).
 * Parsing is strict: unknown fields, wrong types and out-of-range values fail
 * with one line naming the field. Writing streams into a buffer, one transfer
 * per line; numbers are written in the shortest form that reads back exactly.
 * O(size of the text). */
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "plan/plan.h"
#include "plan/plan_internal.h"

#define PLAN_JSON_MAX ((size_t)1 << 34)

void cairn__plan_num(char *out, size_t len, double x) {
  if (x == floor(x) && fabs(x) < 1e15) {
    snprintf(out, len, "%.0f", x);
    return;
  }
  snprintf(out, len, "%.15g", x);
  if (strtod(out, NULL) != x)
    snprintf(out, len, "%.17g", x);
}

/* ---- reading helpers ------------------------------------------------------ */

static cairn_status only_keys(json_t *obj, const char *const *allowed, const char *where, cairn_error *err) {
  const char *key;
  json_t *v;
  json_object_foreach(obj, key, v) {
    int ok = 0;
    for (size_t i = 0; allowed[i]; i++)
      ok |= strcmp(allowed[i], key) == 0;
    if (!ok)
      return cairn__error_set(err, CAIRN_EINVAL, "unknown field \"%s\" in %s", key, where);
  }
  return CAIRN_OK;
}

static cairn_status get_i64(json_t *v, const char *what, int64_t lo, int64_t hi, int64_t *out, cairn_error *err) {
  if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be an integer in %lld..%lld", what, (long long)lo,
                           (long long)hi);
  *out = json_integer_value(v);
  return CAIRN_OK;
}

static cairn_status get_num(json_t *v, const char *what, double *out, cairn_error *err) {
  if (!json_is_number(v) || !isfinite(json_number_value(v)) || json_number_value(v) < 0)
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be a number >= 0", what);
  *out = json_number_value(v);
  return CAIRN_OK;
}

static cairn_status get_index(json_t *v, const char *what, size_t n, size_t *out, cairn_error *err) {
  int64_t x = 0;
  if (n == 0)
    return cairn__error_set(err, CAIRN_EINVAL, "%s refers to an empty set", what);
  cairn_status st = get_i64(v, what, 0, (int64_t)n - 1, &x, err);
  if (st == CAIRN_OK)
    *out = (size_t)x;
  return st;
}

static cairn_status get_index_list(json_t *v, const char *what, size_t n, size_t **out, size_t *nout,
                                   cairn_error *err) {
  if (!json_is_array(v))
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be an array of indices", what);
  size_t m = json_array_size(v);
  *out = calloc(m ? m : 1, sizeof **out);
  if (!*out)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory reading %s", what);
  *nout = m;
  for (size_t i = 0; i < m; i++) {
    char w[96];
    snprintf(w, sizeof w, "%s[%zu]", what, i);
    cairn_status st = get_index(json_array_get(v, i), w, n, &(*out)[i], err);
    if (st != CAIRN_OK)
      return st;
  }
  return CAIRN_OK;
}

/* k×k matrix of numbers >= 0; null allowed on the diagonal (read as 0). */
static cairn_status get_matrix(json_t *v, const char *name, size_t k, double **out, cairn_error *err) {
  if (!json_is_array(v) || json_array_size(v) != k)
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be a %zu x %zu matrix (array of %zu rows)", name, k, k, k);
  *out = calloc(k > 0 ? k * k : 1, sizeof **out);
  if (!*out)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory reading %s", name);
  for (size_t i = 0; i < k; i++) {
    json_t *row = json_array_get(v, i);
    if (!json_is_array(row) || json_array_size(row) != k)
      return cairn__error_set(err, CAIRN_EINVAL, "%s[%zu] must be an array of %zu numbers", name, i, k);
    for (size_t j = 0; j < k; j++) {
      json_t *x = json_array_get(row, j);
      char w[96];
      snprintf(w, sizeof w, "%s[%zu][%zu]", name, i, j);
      if (i == j && (json_is_null(x) || json_is_number(x)))
        continue;
      cairn_status st = get_num(x, w, &(*out)[i * k + j], err);
      if (st != CAIRN_OK)
        return st;
    }
  }
  return CAIRN_OK;
}

/* number a, or [a, b]: a + b·m */
static cairn_status get_affine(json_t *v, const char *what, double *a, double *b, cairn_error *err) {
  *b = 0;
  if (json_is_array(v)) {
    if (json_array_size(v) != 2)
      return cairn__error_set(err, CAIRN_EINVAL, "%s must be a number or [constant, per_unit_length]", what);
    cairn_status st = get_num(json_array_get(v, 0), what, a, err);
    return st != CAIRN_OK ? st : get_num(json_array_get(v, 1), what, b, err);
  }
  return get_num(v, what, a, err);
}

static cairn_status need(json_t *obj, const char *key, const char *where, json_t **out, cairn_error *err) {
  *out = json_object_get(obj, key);
  if (!*out)
    return cairn__error_set(err, CAIRN_EINVAL, "missing field \"%s\" in %s", key, where);
  return CAIRN_OK;
}

#define TRY(x)                                                                                                     \
  do {                                                                                                             \
    st = (x);                                                                                                      \
    if (st != CAIRN_OK)                                                                                            \
      goto out;                                                                                                    \
  } while (0)

static cairn_status parse_clusters(json_t *root, cairn__plan_instance *in, cairn_error *err) {
  static const char *const keys[] = {"model", "C", "clusters", "source", "B", "members", NULL};
  static const char *const ckeys[] = {"size", "degree", "members", NULL};
  cairn_status st;
  cairn__plan_clusters *cl = &in->cl;
  json_t *v, *cls;
  TRY(only_keys(root, keys, "the instance", err));
  TRY(need(root, "C", "the instance", &v, err));
  TRY(get_i64(v, "C", 1, INT64_C(1) << 40, &cl->C, err));
  TRY(need(root, "clusters", "the instance", &cls, err));
  if (!json_is_array(cls) || json_array_size(cls) == 0)
    return cairn__error_set(err, CAIRN_EINVAL, "clusters must be a non-empty array");
  size_t k = json_array_size(cls);
  cl->k = k;
  cl->size = calloc(k, sizeof *cl->size);
  if (!cl->size)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  json_t *top_members = json_object_get(root, "members");
  int any_deg = 0, any_mem = 0;
  for (size_t i = 0; i < k; i++) {
    json_t *c = json_array_get(cls, i), *x;
    char w[64];
    snprintf(w, sizeof w, "clusters[%zu]", i);
    if (!json_is_object(c))
      return cairn__error_set(err, CAIRN_EINVAL, "%s must be an object {\"size\": n}", w);
    TRY(only_keys(c, ckeys, w, err));
    TRY(need(c, "size", w, &x, err));
    snprintf(w, sizeof w, "clusters[%zu].size", i);
    TRY(get_i64(x, w, 1, INT64_C(1) << 40, &cl->size[i], err));
    any_deg |= json_object_get(c, "degree") != NULL;
    any_mem |= json_object_get(c, "members") != NULL;
  }
  if (any_mem && top_members)
    return cairn__error_set(err, CAIRN_EINVAL, "members given both per cluster and at the top level");
  if (any_deg || any_mem || top_members) {
    if (any_deg && !(cl->degree = calloc(k, sizeof *cl->degree)))
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    if ((any_mem || top_members) && !(cl->members = calloc(k, sizeof *cl->members)))
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (top_members && (!json_is_array(top_members) || json_array_size(top_members) != k))
    return cairn__error_set(err, CAIRN_EINVAL, "members must be an array of %zu receiver counts", k);
  for (size_t i = 0; i < k; i++) {
    json_t *c = json_array_get(cls, i), *x;
    char w[64];
    if (cl->degree) {
      x = json_object_get(c, "degree");
      snprintf(w, sizeof w, "clusters[%zu].degree", i);
      if (x)
        TRY(get_i64(x, w, 1, INT64_C(1) << 40, &cl->degree[i], err));
      else
        cl->degree[i] = cl->size[i];
    }
    if (cl->members) {
      x = top_members ? json_array_get(top_members, i) : json_object_get(c, "members");
      snprintf(w, sizeof w, top_members ? "members[%zu]" : "clusters[%zu].members", i);
      if (x)
        TRY(get_i64(x, w, 0, cl->size[i], &cl->members[i], err));
      else
        cl->members[i] = 0;
    }
  }
  if ((v = json_object_get(root, "source")))
    TRY(get_index(v, "source", k, &cl->source, err));
  if ((v = json_object_get(root, "B")))
    TRY(get_i64(v, "B", 1, INT64_C(1) << 40, &cl->B, err));
  st = CAIRN_OK;
out:
  return st;
}

static cairn_status parse_grid(json_t *root, cairn__plan_instance *in, cairn_error *err) {
  static const char *const keys[] = {"model", "L", "g", "T", "root", NULL};
  cairn_status st;
  cairn__plan_grid *g = &in->grid;
  json_t *v;
  TRY(only_keys(root, keys, "the instance", err));
  TRY(need(root, "T", "the instance", &v, err));
  if (!json_is_array(v) || json_array_size(v) == 0)
    return cairn__error_set(err, CAIRN_EINVAL, "T must be a non-empty array of intra-cluster broadcast times");
  g->k = json_array_size(v);
  if (!(g->T = calloc(g->k, sizeof *g->T)))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < g->k; i++) {
    char w[48];
    snprintf(w, sizeof w, "T[%zu]", i);
    TRY(get_num(json_array_get(v, i), w, &g->T[i], err));
  }
  TRY(need(root, "L", "the instance", &v, err));
  TRY(get_matrix(v, "L", g->k, &g->L, err));
  TRY(need(root, "g", "the instance", &v, err));
  TRY(get_matrix(v, "g", g->k, &g->g, err));
  if ((v = json_object_get(root, "root")))
    TRY(get_index(v, "root", g->k, &g->root, err));
  st = CAIRN_OK;
out:
  return st;
}

static cairn_status parse_hnow(json_t *root, cairn__plan_instance *in, cairn_error *err) {
  static const char *const keys[] = {"model", "nodes", "X", "messages", NULL};
  static const char *const nkeys[] = {"S", "R", NULL};
  static const char *const mkeys[] = {"source", "length", "dests", NULL};
  cairn_status st;
  cairn__plan_hnow *h = &in->hnow;
  json_t *v, *x;
  TRY(only_keys(root, keys, "the instance", err));
  TRY(need(root, "nodes", "the instance", &v, err));
  if (!json_is_array(v) || json_array_size(v) == 0)
    return cairn__error_set(err, CAIRN_EINVAL, "nodes must be a non-empty array of {\"S\":…, \"R\":…}");
  size_t n = h->n = json_array_size(v);
  h->S0 = calloc(n, sizeof *h->S0);
  h->S1 = calloc(n, sizeof *h->S1);
  h->R0 = calloc(n, sizeof *h->R0);
  h->R1 = calloc(n, sizeof *h->R1);
  if (!h->S0 || !h->S1 || !h->R0 || !h->R1)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_array_get(v, i);
    char w[64];
    snprintf(w, sizeof w, "nodes[%zu]", i);
    if (!json_is_object(o))
      return cairn__error_set(err, CAIRN_EINVAL, "%s must be an object {\"S\":…, \"R\":…}", w);
    TRY(only_keys(o, nkeys, w, err));
    TRY(need(o, "S", w, &x, err));
    snprintf(w, sizeof w, "nodes[%zu].S", i);
    TRY(get_affine(x, w, &h->S0[i], &h->S1[i], err));
    snprintf(w, sizeof w, "nodes[%zu]", i);
    TRY(need(o, "R", w, &x, err));
    snprintf(w, sizeof w, "nodes[%zu].R", i);
    TRY(get_affine(x, w, &h->R0[i], &h->R1[i], err));
  }
  TRY(need(root, "X", "the instance", &v, err));
  TRY(get_matrix(v, "X", n, &h->X, err));
  TRY(need(root, "messages", "the instance", &v, err));
  if (!json_is_array(v))
    return cairn__error_set(err, CAIRN_EINVAL, "messages must be an array");
  h->nmsg = json_array_size(v);
  if (!(h->msg = calloc(h->nmsg ? h->nmsg : 1, sizeof *h->msg)))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t m = 0; m < h->nmsg; m++) {
    json_t *o = json_array_get(v, m);
    char w[64];
    snprintf(w, sizeof w, "messages[%zu]", m);
    if (!json_is_object(o))
      return cairn__error_set(err, CAIRN_EINVAL, "%s must be an object", w);
    TRY(only_keys(o, mkeys, w, err));
    TRY(need(o, "source", w, &x, err));
    snprintf(w, sizeof w, "messages[%zu].source", m);
    TRY(get_index(x, w, n, &h->msg[m].source, err));
    snprintf(w, sizeof w, "messages[%zu]", m);
    TRY(need(o, "length", w, &x, err));
    snprintf(w, sizeof w, "messages[%zu].length", m);
    TRY(get_num(x, w, &h->msg[m].length, err));
    snprintf(w, sizeof w, "messages[%zu]", m);
    TRY(need(o, "dests", w, &x, err));
    snprintf(w, sizeof w, "messages[%zu].dests", m);
    TRY(get_index_list(x, w, n, &h->msg[m].dests, &h->msg[m].ndests, err));
  }
  st = CAIRN_OK;
out:
  return st;
}

static cairn_status parse_cdmd(json_t *root, cairn__plan_instance *in, cairn_error *err) {
  static const char *const keys[] = {"model", "processors", "messages", NULL};
  static const char *const mkeys[] = {"name", "length", "holder", "needed_by", NULL};
  cairn_status st;
  cairn__plan_cdmd *c = &in->cdmd;
  json_t *v, *x;
  int64_t n = 0;
  TRY(only_keys(root, keys, "the instance", err));
  TRY(need(root, "processors", "the instance", &v, err));
  TRY(get_i64(v, "processors", 1, 1 << 24, &n, err));
  c->n = (size_t)n;
  TRY(need(root, "messages", "the instance", &v, err));
  if (!json_is_array(v))
    return cairn__error_set(err, CAIRN_EINVAL, "messages must be an array");
  c->nmsg = json_array_size(v);
  if (!(c->msg = calloc(c->nmsg ? c->nmsg : 1, sizeof *c->msg)))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t m = 0; m < c->nmsg; m++) {
    json_t *o = json_array_get(v, m);
    char w[64];
    snprintf(w, sizeof w, "messages[%zu]", m);
    if (!json_is_object(o))
      return cairn__error_set(err, CAIRN_EINVAL, "%s must be an object", w);
    TRY(only_keys(o, mkeys, w, err));
    x = json_object_get(o, "name");
    if (x && (!json_is_string(x) || json_string_length(x) == 0 || json_string_length(x) > 64))
      return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].name must be a string of 1..64 bytes", m);
    char def[32];
    snprintf(def, sizeof def, "m%zu", m);
    if (!(c->msg[m].name = strdup(x ? json_string_value(x) : def)))
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    TRY(need(o, "length", w, &x, err));
    snprintf(w, sizeof w, "messages[%zu].length", m);
    TRY(get_i64(x, w, 1, INT64_C(1) << 40, &c->msg[m].length, err));
    snprintf(w, sizeof w, "messages[%zu]", m);
    TRY(need(o, "holder", w, &x, err));
    snprintf(w, sizeof w, "messages[%zu].holder", m);
    TRY(get_index(x, w, c->n, &c->msg[m].holder, err));
    snprintf(w, sizeof w, "messages[%zu]", m);
    TRY(need(o, "needed_by", w, &x, err));
    snprintf(w, sizeof w, "messages[%zu].needed_by", m);
    TRY(get_index_list(x, w, c->n, &c->msg[m].needed_by, &c->msg[m].nneed, err));
  }
  st = CAIRN_OK;
out:
  return st;
}

static cairn_status model_of(json_t *v, cairn__plan_model *m, cairn_error *err) {
  static const char *const names[] = {"1/C", "postal", "grid", "hnow", "cdmd"};
  if (!json_is_string(v))
    return cairn__error_set(err, CAIRN_EINVAL, "model must be one of \"1/C\", \"postal\", \"grid\", \"hnow\", \"cdmd\"");
  for (int i = 0; i < 5; i++)
    if (strcmp(json_string_value(v), names[i]) == 0) {
      *m = (cairn__plan_model)i;
      return CAIRN_OK;
    }
  return cairn__error_set(err, CAIRN_EINVAL,
                         "unknown model \"%s\" (one of \"1/C\", \"postal\", \"grid\", \"hnow\", \"cdmd\")",
                         json_string_value(v));
}

cairn_status cairn__plan_instance_parse(const char *json, size_t len, cairn__plan_instance *out, cairn_error *err) {
  memset(out, 0, sizeof *out);
  out->owned = 1;
  json_error_t jerr;
  json_t *root = json_loadb(json, len, 0, &jerr);
  cairn_status st;
  if (!root)
    return cairn__error_set(err, CAIRN_EINVAL, "instance is not valid JSON (line %d: %s)", jerr.line, jerr.text);
  json_t *m;
  if (!json_is_object(root)) {
    st = cairn__error_set(err, CAIRN_EINVAL, "instance must be a JSON object");
    goto out;
  }
  TRY(need(root, "model", "the instance", &m, err));
  TRY(model_of(m, &out->model, err));
  switch (out->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL: st = parse_clusters(root, out, err); break;
  case CAIRN_PLAN_GRID: st = parse_grid(root, out, err); break;
  case CAIRN_PLAN_HNOW: st = parse_hnow(root, out, err); break;
  case CAIRN_PLAN_CDMD: st = parse_cdmd(root, out, err); break;
  }
  if (st == CAIRN_OK)
    st = cairn__plan_instance_validate(out, err);
out:
  json_decref(root);
  if (st != CAIRN_OK)
    cairn__plan_instance_free(out);
  return st;
}

/* ---- plans ----------------------------------------------------------------- */

/* 1 when s fits in cap bytes and is printable ASCII without '"' or '\\'
 * (so the writer may print it as is). */
static int plain_name(const char *s, size_t cap) {
  size_t n = 0;
  for (; s[n]; n++)
    if (s[n] < 0x20 || s[n] > 0x7e || s[n] == '"' || s[n] == '\\')
      return 0;
  return n < cap;
}

static int cluster_model(cairn__plan_model m) { return m == CAIRN_PLAN_1C || m == CAIRN_PLAN_POSTAL; }

static int put_node(cairn__buf *b, cairn__plan_model m, cairn__plan_node n) {
  if (cluster_model(m))
    return cairn__buf_printf(b, "[%lld,%lld]", (long long)n.id, (long long)n.member);
  return cairn__buf_printf(b, "%lld", (long long)n.id);
}

char *cairn__plan_schedule_to_json(const cairn__plan_schedule *s, const cairn__plan_instance *in) {
  cairn__buf b;
  cairn__buf_init(&b, PLAN_JSON_MAX);
  char ms[40], lb[40], st[40], en[40];
  cairn__plan_num(ms, sizeof ms, s->makespan);
  cairn__plan_num(lb, sizeof lb, s->lower_bound);
  int bad = cairn__buf_printf(&b, "{\"algorithm\":\"%s\",\"model\":\"%s\",\"makespan\":%s,\"lower_bound\":%s,"
                                   "\"transfers\":[",
                               s->algorithm, cairn__plan_model_name(s->model), ms, lb);
  for (size_t i = 0; i < s->n && !bad; i++) {
    const cairn__plan_transfer *t = &s->t[i];
    bad |= cairn__buf_printf(&b, "%s\n{\"message\":", i ? "," : "");
    if (in && in->model == CAIRN_PLAN_CDMD && t->message < in->cdmd.nmsg && in->cdmd.msg[t->message].name) {
      json_t *str = json_string(in->cdmd.msg[t->message].name);
      char *enc = str ? json_dumps(str, JSON_ENCODE_ANY) : NULL;
      bad |= !enc || cairn__buf_printf(&b, "%s", enc);
      free(enc);
      json_decref(str);
    } else {
      bad |= cairn__buf_printf(&b, "%zu", t->message);
    }
    bad |= cairn__buf_printf(&b, ",\"from\":");
    bad |= put_node(&b, s->model, t->from);
    bad |= cairn__buf_printf(&b, ",\"to\":");
    if (t->to_len == 1 && s->model != CAIRN_PLAN_CDMD) {
      bad |= put_node(&b, s->model, s->to[t->to_off]);
    } else {
      bad |= cairn__buf_printf(&b, "[");
      for (size_t r = 0; r < t->to_len; r++) {
        bad |= r ? cairn__buf_printf(&b, ",") : 0;
        bad |= put_node(&b, s->model, s->to[t->to_off + r]);
      }
      bad |= cairn__buf_printf(&b, "]");
    }
    cairn__plan_num(st, sizeof st, t->start);
    cairn__plan_num(en, sizeof en, t->end);
    bad |= cairn__buf_printf(&b, ",\"start\":%s,\"end\":%s}", st, en);
  }
  bad |= cairn__buf_printf(&b, "%s]}\n", s->n ? "\n" : "");
  if (bad) {
    cairn__buf_free(&b);
    return NULL;
  }
  return cairn__buf_take(&b, NULL);
}

static cairn_status read_node(json_t *v, cairn__plan_model m, const char *what, cairn__plan_node *n,
                              cairn_error *err) {
  if (cluster_model(m)) {
    if (!json_is_array(v) || json_array_size(v) != 2 || !json_is_integer(json_array_get(v, 0)) ||
        !json_is_integer(json_array_get(v, 1)))
      return cairn__error_set(err, CAIRN_EINVAL, "%s must be a node [cluster, member]", what);
    *n = (cairn__plan_node){json_integer_value(json_array_get(v, 0)), json_integer_value(json_array_get(v, 1))};
    return CAIRN_OK;
  }
  if (!json_is_integer(v))
    return cairn__error_set(err, CAIRN_EINVAL, "%s must be a node index", what);
  *n = (cairn__plan_node){json_integer_value(v), -1};
  return CAIRN_OK;
}

cairn_status cairn__plan_schedule_parse(const char *json, size_t len, const cairn__plan_instance *in,
                                       cairn__plan_schedule *out, cairn_error *err) {
  static const char *const keys[] = {"algorithm", "model", "makespan", "lower_bound", "transfers", NULL};
  static const char *const tkeys[] = {"message", "from", "to", "start", "end", NULL};
  cairn__plan_schedule_init(out, in->model, "");
  json_error_t jerr;
  json_t *root = json_loadb(json, len, 0, &jerr), *v, *ts;
  cairn_status st;
  cairn__plan_node *to = NULL;
  if (!root)
    return cairn__error_set(err, CAIRN_EINVAL, "plan is not valid JSON (line %d: %s)", jerr.line, jerr.text);
  if (!json_is_object(root)) {
    st = cairn__error_set(err, CAIRN_EINVAL, "plan must be a JSON object");
    goto out;
  }
  TRY(only_keys(root, keys, "the plan", err));
  if ((v = json_object_get(root, "algorithm"))) {
    if (!json_is_string(v) || !plain_name(json_string_value(v), sizeof out->algorithm)) {
      st = cairn__error_set(err, CAIRN_EINVAL, "algorithm must be a string of at most %zu "
                           "printable characters, without quotes or backslashes",
                           sizeof out->algorithm - 1);
      goto out;
    }
    cairn__plan_schedule_init(out, in->model, json_string_value(v));
  }
  if ((v = json_object_get(root, "model"))) {
    cairn__plan_model m = CAIRN_PLAN_1C;
    TRY(model_of(v, &m, err));
    if (m != in->model) {
      st = cairn__error_set(err, CAIRN_EINVAL, "model \"%s\" is not the instance's model \"%s\"",
                           cairn__plan_model_name(m), cairn__plan_model_name(in->model));
      goto out;
    }
  }
  if ((v = json_object_get(root, "makespan")))
    TRY(get_num(v, "makespan", &out->makespan, err));
  if ((v = json_object_get(root, "lower_bound")))
    TRY(get_num(v, "lower_bound", &out->lower_bound, err));
  TRY(need(root, "transfers", "the plan", &ts, err));
  if (!json_is_array(ts)) {
    st = cairn__error_set(err, CAIRN_EINVAL, "transfers must be an array");
    goto out;
  }
  for (size_t i = 0; i < json_array_size(ts); i++) {
    json_t *t = json_array_get(ts, i), *x;
    char w[80];
    snprintf(w, sizeof w, "transfers[%zu]", i);
    if (!json_is_object(t)) {
      st = cairn__error_set(err, CAIRN_EINVAL, "%s must be an object", w);
      goto out;
    }
    TRY(only_keys(t, tkeys, w, err));
    size_t msg = 0;
    x = json_object_get(t, "message");
    if (x && json_is_string(x) && in->model == CAIRN_PLAN_CDMD) {
      size_t m = 0;
      while (m < in->cdmd.nmsg && strcmp(in->cdmd.msg[m].name ? in->cdmd.msg[m].name : "", json_string_value(x)))
        m++;
      if (m == in->cdmd.nmsg) {
        st = cairn__error_set(err, CAIRN_EINVAL, "%s.message \"%s\" is not in the instance", w, json_string_value(x));
        goto out;
      }
      msg = m;
    } else if (x) {
      int64_t mm = 0;
      snprintf(w, sizeof w, "transfers[%zu].message", i);
      TRY(get_i64(x, w, 0, INT64_C(1) << 40, &mm, err));
      msg = (size_t)mm;
    }
    cairn__plan_node from;
    snprintf(w, sizeof w, "transfers[%zu]", i);
    TRY(need(t, "from", w, &x, err));
    snprintf(w, sizeof w, "transfers[%zu].from", i);
    TRY(read_node(x, in->model, w, &from, err));
    snprintf(w, sizeof w, "transfers[%zu]", i);
    TRY(need(t, "to", w, &x, err));
    snprintf(w, sizeof w, "transfers[%zu].to", i);
    int list = json_is_array(x) && (!cluster_model(in->model) || json_is_array(json_array_get(x, 0)));
    size_t nto = list ? json_array_size(x) : 1;
    if (nto == 0) {
      st = cairn__error_set(err, CAIRN_EINVAL, "%s is an empty list", w);
      goto out;
    }
    free(to);
    if (!(to = calloc(nto, sizeof *to))) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      goto out;
    }
    for (size_t r = 0; r < nto; r++)
      TRY(read_node(list ? json_array_get(x, r) : x, in->model, w, &to[r], err));
    double s0 = 0, e0 = 0;
    snprintf(w, sizeof w, "transfers[%zu]", i);
    TRY(need(t, "start", w, &x, err));
    snprintf(w, sizeof w, "transfers[%zu].start", i);
    TRY(get_num(x, w, &s0, err));
    snprintf(w, sizeof w, "transfers[%zu]", i);
    TRY(need(t, "end", w, &x, err));
    snprintf(w, sizeof w, "transfers[%zu].end", i);
    TRY(get_num(x, w, &e0, err));
    if (cairn__plan_schedule_add(out, msg, from, to, nto, s0, e0)) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      goto out;
    }
  }
  st = CAIRN_OK;
out:
  free(to);
  json_decref(root);
  return st;
}
