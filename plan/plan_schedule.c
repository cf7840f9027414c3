/* plan_schedule.c — the one schedule format shared by every planner, instance
 * validation and the dispatcher from an algorithm name to its planner.
 * Appending a transfer is amortised O(1 + receivers). */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "plan/plan.h"

const char *cairn__plan_model_name(cairn__plan_model m) {
  switch (m) {
  case CAIRN_PLAN_1C: return "1/C";
  case CAIRN_PLAN_POSTAL: return "postal";
  case CAIRN_PLAN_GRID: return "grid";
  case CAIRN_PLAN_HNOW: return "hnow";
  case CAIRN_PLAN_CDMD: return "cdmd";
  }
  return "?";
}

void cairn__plan_schedule_init(cairn__plan_schedule *s, cairn__plan_model m, const char *algorithm) {
  memset(s, 0, sizeof *s);
  s->model = m;
  if (algorithm) {
    strncpy(s->algorithm, algorithm, sizeof s->algorithm - 1);
    s->algorithm[sizeof s->algorithm - 1] = '\0';
  }
}

void cairn__plan_schedule_free(cairn__plan_schedule *s) {
  if (!s)
    return;
  free(s->t);
  free(s->to);
  s->t = NULL;
  s->to = NULL;
  s->n = s->cap = s->nto = s->capto = 0;
}

int cairn__plan_schedule_add(cairn__plan_schedule *s, size_t message, cairn__plan_node from,
                            const cairn__plan_node *to, size_t nto, double start, double end) {
  if (s->n == s->cap) {
    size_t nc = s->cap ? s->cap * 2 : 64;
    cairn__plan_transfer *t = realloc(s->t, nc * sizeof *t);
    if (!t)
      return -1;
    s->t = t;
    s->cap = nc;
  }
  if (s->nto + nto > s->capto) {
    size_t nc = s->capto ? s->capto * 2 : 64;
    while (nc < s->nto + nto)
      nc *= 2;
    cairn__plan_node *p = realloc(s->to, nc * sizeof *p);
    if (!p)
      return -1;
    s->to = p;
    s->capto = nc;
  }
  memcpy(s->to + s->nto, to, nto * sizeof *to);
  cairn__plan_transfer *t = &s->t[s->n++];
  t->message = message;
  t->from = from;
  t->to_off = s->nto;
  t->to_len = nto;
  t->start = start;
  t->end = end;
  s->nto += nto;
  return 0;
}

void cairn__plan_schedule_finish(cairn__plan_schedule *s) {
  double m = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->t[i].end > m)
      m = s->t[i].end;
  s->makespan = m;
}

void cairn__plan_instance_free(cairn__plan_instance *in) {
  if (!in || !in->owned)
    return;
  free(in->cl.size);
  free(in->cl.degree);
  free(in->cl.members);
  free(in->grid.L);
  free(in->grid.g);
  free(in->grid.T);
  free(in->hnow.S0);
  free(in->hnow.S1);
  free(in->hnow.R0);
  free(in->hnow.R1);
  free(in->hnow.X);
  for (size_t i = 0; i < in->hnow.nmsg; i++)
    free(in->hnow.msg[i].dests);
  free(in->hnow.msg);
  for (size_t i = 0; i < in->cdmd.nmsg; i++) {
    free(in->cdmd.msg[i].name);
    free(in->cdmd.msg[i].needed_by);
  }
  free(in->cdmd.msg);
  memset(in, 0, sizeof *in);
}

static int bad_real(double x) { return !isfinite(x) || x < 0; }

/* 1 if list has a duplicate or an entry >= n or == self. */
static int bad_list(const size_t *v, size_t nv, size_t n, size_t self, size_t *which) {
  for (size_t i = 0; i < nv; i++) {
    *which = i;
    if (v[i] >= n || v[i] == self)
      return 1;
    for (size_t j = 0; j < i; j++)
      if (v[j] == v[i])
        return 1;
  }
  return 0;
}

static cairn_status validate_clusters(const cairn__plan_clusters *c, cairn_error *err) {
  if (c->k < 1 || !c->size)
    return cairn__error_set(err, CAIRN_EINVAL, "instance has no clusters");
  if (c->k > UINT32_MAX - 1)
    return cairn__error_set(err, CAIRN_EINVAL, "too many clusters (%zu)", c->k);
  if (c->C < 1 || c->C > (INT64_C(1) << 40))
    return cairn__error_set(err, CAIRN_EINVAL, "C must be an integer in 1..2^40, got %lld",
                           (long long)c->C);
  if (c->source >= c->k)
    return cairn__error_set(err, CAIRN_EINVAL, "source cluster %zu out of range (k = %zu)",
                           c->source, c->k);
  if (c->B < 0)
    return cairn__error_set(err, CAIRN_EINVAL, "B must be >= 1 when given");
  int64_t total = 0;
  for (size_t i = 0; i < c->k; i++) {
    if (c->size[i] < 1 || c->size[i] > (INT64_C(1) << 40))
      return cairn__error_set(err, CAIRN_EINVAL, "clusters[%zu].size must be in 1..2^40", i);
    total += c->size[i];
    if (total > (INT64_C(1) << 42))
      return cairn__error_set(err, CAIRN_EINVAL, "too many nodes in total");
    if (c->degree && c->degree[i] < 1)
      return cairn__error_set(err, CAIRN_EINVAL, "clusters[%zu].degree must be >= 1", i);
    if (c->members && (c->members[i] < 0 || c->members[i] > c->size[i]))
      return cairn__error_set(err, CAIRN_EINVAL, "members[%zu] must be in 0..%lld", i,
                             (long long)c->size[i]);
  }
  return CAIRN_OK;
}

cairn_status cairn__plan_instance_validate(const cairn__plan_instance *in, cairn_error *err) {
  size_t w = 0;
  switch (in->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL:
    return validate_clusters(&in->cl, err);
  case CAIRN_PLAN_GRID: {
    const cairn__plan_grid *g = &in->grid;
    if (g->k < 1 || !g->L || !g->g || !g->T)
      return cairn__error_set(err, CAIRN_EINVAL, "grid instance needs L, g and T");
    if (g->root >= g->k)
      return cairn__error_set(err, CAIRN_EINVAL, "root %zu out of range (k = %zu)", g->root, g->k);
    for (size_t i = 0; i < g->k; i++) {
      if (bad_real(g->T[i]))
        return cairn__error_set(err, CAIRN_EINVAL, "T[%zu] must be a finite number >= 0", i);
      for (size_t j = 0; j < g->k; j++) {
        if (i == j)
          continue;
        if (bad_real(g->L[i * g->k + j]))
          return cairn__error_set(err, CAIRN_EINVAL, "L[%zu][%zu] must be a finite number >= 0", i, j);
        if (bad_real(g->g[i * g->k + j]))
          return cairn__error_set(err, CAIRN_EINVAL, "g[%zu][%zu] must be a finite number >= 0", i, j);
        if (g->L[i * g->k + j] + g->g[i * g->k + j] <= 0)
          return cairn__error_set(err, CAIRN_EINVAL, "L[%zu][%zu] + g[%zu][%zu] must be > 0", i, j, i, j);
      }
    }
    return CAIRN_OK;
  }
  case CAIRN_PLAN_HNOW: {
    const cairn__plan_hnow *h = &in->hnow;
    if (h->n < 1 || !h->S0 || !h->S1 || !h->R0 || !h->R1 || !h->X)
      return cairn__error_set(err, CAIRN_EINVAL, "hnow instance needs nodes and X");
    for (size_t i = 0; i < h->n; i++) {
      if (bad_real(h->S0[i]) || bad_real(h->S1[i]))
        return cairn__error_set(err, CAIRN_EINVAL, "nodes[%zu].S must be finite and >= 0", i);
      if (bad_real(h->R0[i]) || bad_real(h->R1[i]))
        return cairn__error_set(err, CAIRN_EINVAL, "nodes[%zu].R must be finite and >= 0", i);
      for (size_t j = 0; j < h->n; j++)
        if (i != j && bad_real(h->X[i * h->n + j]))
          return cairn__error_set(err, CAIRN_EINVAL, "X[%zu][%zu] must be finite and >= 0", i, j);
      if (h->cluster && h->cluster[i] >= h->nclusters)
        return cairn__error_set(err, CAIRN_EINVAL, "nodes[%zu].cluster %zu out of range", i, h->cluster[i]);
    }
    for (size_t m = 0; m < h->nmsg; m++) {
      const cairn__plan_hmsg *g = &h->msg[m];
      if (g->source >= h->n)
        return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].source %zu out of range", m, g->source);
      if (bad_real(g->length))
        return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].length must be >= 0", m);
      if (bad_list(g->dests, g->ndests, h->n, g->source, &w))
        return cairn__error_set(err, CAIRN_EINVAL,
                               "messages[%zu].dests[%zu] is out of range, the source or a duplicate", m, w);
    }
    return CAIRN_OK;
  }
  case CAIRN_PLAN_CDMD: {
    const cairn__plan_cdmd *c = &in->cdmd;
    if (c->n < 1)
      return cairn__error_set(err, CAIRN_EINVAL, "cdmd instance needs processors >= 1");
    for (size_t m = 0; m < c->nmsg; m++) {
      const cairn__plan_cmsg *g = &c->msg[m];
      if (g->length < 1 || g->length > (INT64_C(1) << 40))
        return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].length must be an integer in 1..2^40", m);
      if (g->holder >= c->n)
        return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].holder %zu out of range", m, g->holder);
      if (g->nneed < 1)
        return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].needed_by is empty", m);
      if (bad_list(g->needed_by, g->nneed, c->n, g->holder, &w))
        return cairn__error_set(err, CAIRN_EINVAL,
                               "messages[%zu].needed_by[%zu] is out of range, the holder or a duplicate", m, w);
      for (size_t j = 0; j < m; j++)
        if (g->name && c->msg[j].name && strcmp(g->name, c->msg[j].name) == 0)
          return cairn__error_set(err, CAIRN_EINVAL, "messages[%zu].name \"%s\" is used twice", m, g->name);
    }
    return CAIRN_OK;
  }
  }
  return cairn__error_set(err, CAIRN_EINVAL, "unknown model");
}

/* ---- dispatch ----------------------------------------------------------- */

static const char *const algos_1c[] = {"lcf", "bounded-degree", "bounded-matching", NULL};
static const char *const algos_postal[] = {"lcf", "interleaved-lcf", NULL};
static const char *const algos_grid[] = {"flat", "FEF", "ECEF", "ECEF-LA", "ECEF-LAt", "ECEF-LAT",
                                         "BottomUp", NULL};
static const char *const algos_hnow[] = {"FEF", "ECF", "WR", "WRP", NULL};
static const char *const algos_cdmd[] = {"LH-LS", NULL};

const char *const *cairn__plan_algorithms(cairn__plan_model m) {
  switch (m) {
  case CAIRN_PLAN_1C: return algos_1c;
  case CAIRN_PLAN_POSTAL: return algos_postal;
  case CAIRN_PLAN_GRID: return algos_grid;
  case CAIRN_PLAN_HNOW: return algos_hnow;
  case CAIRN_PLAN_CDMD: return algos_cdmd;
  }
  return algos_cdmd + 1;
}

/* Exact name first, then a unique case-insensitive match. */
static cairn_status resolve(cairn__plan_model m, const char *algo, const char **name, cairn_error *err) {
  const char *const *list = cairn__plan_algorithms(m);
  for (size_t i = 0; list[i]; i++)
    if (strcmp(list[i], algo) == 0) {
      *name = list[i];
      return CAIRN_OK;
    }
  const char *hit = NULL;
  for (size_t i = 0; list[i]; i++)
    if (strcasecmp(list[i], algo) == 0) {
      if (hit)
        return cairn__error_set(err, CAIRN_EINVAL, "algorithm \"%s\" is ambiguous: %s or %s", algo, hit,
                               list[i]);
      hit = list[i];
    }
  if (hit) {
    *name = hit;
    return CAIRN_OK;
  }
  char names[256] = "";
  for (size_t i = 0; list[i]; i++) {
    if (i)
      strncat(names, ", ", sizeof names - strlen(names) - 1);
    strncat(names, list[i], sizeof names - strlen(names) - 1);
  }
  return cairn__error_set(err, CAIRN_EINVAL, "unknown algorithm \"%s\" for model %s (one of: %s)", algo,
                         cairn__plan_model_name(m), names);
}

double cairn__plan_lower_bound(const cairn__plan_instance *in) {
  switch (in->model) {
  case CAIRN_PLAN_1C: return (double)cairn__bcast_lower_bound(&in->cl, 0);
  case CAIRN_PLAN_POSTAL: return (double)cairn__bcast_lower_bound(&in->cl, 1);
  case CAIRN_PLAN_GRID: return cairn__plan_grid_lower_bound(&in->grid);
  case CAIRN_PLAN_HNOW: return cairn__plan_hnow_lower_bound(&in->hnow);
  case CAIRN_PLAN_CDMD: return (double)cairn__plan_cdmd_degree(&in->cdmd);
  }
  return 0;
}

static cairn_status run_compact(const cairn__plan_instance *in, const char *name, cairn__plan_schedule *out,
                                cairn_error *err) {
  cairn__bcast_compact c = {0};
  cairn_status st;
  const cairn__plan_clusters *cl = &in->cl;
  if (in->model == CAIRN_PLAN_POSTAL) {
    if (cl->degree || cl->B || cl->members)
      return cairn__error_set(err, CAIRN_EINVAL,
                             "the postal planners handle plain broadcast only (no degree, B or members)");
    st = cairn__bcast_postal_lcf(cl, &c, err);
  } else if (strcmp(name, "lcf") == 0) {
    if (cl->degree || cl->B)
      return cairn__error_set(err, CAIRN_EINVAL,
                             "lcf ignores degree and B bounds; use bounded-degree or bounded-matching");
    st = cairn__bcast_lcf(cl, &c, err);
  } else if (strcmp(name, "bounded-degree") == 0) {
    if (!cl->degree || cl->B)
      return cairn__error_set(err, CAIRN_EINVAL, "bounded-degree needs a degree for the clusters and no B");
    st = cairn__bcast_bounded_degree(cl, &c, err);
  } else {
    if (cl->B < 1 || cl->degree)
      return cairn__error_set(err, CAIRN_EINVAL, "bounded-matching needs B >= 1 and no cluster degrees");
    st = cairn__bcast_bounded_matching(cl, &c, err);
  }
  if (st == CAIRN_OK)
    st = cairn__bcast_expand(&c, out, err);
  cairn__bcast_compact_free(&c);
  return st;
}

cairn_status cairn__plan_run(const cairn__plan_instance *in, const char *algo, cairn__plan_schedule *out,
                            cairn_error *err) {
  const char *name = NULL;
  cairn__plan_schedule_init(out, in->model, algo);
  cairn_status st = cairn__plan_instance_validate(in, err);
  if (st != CAIRN_OK)
    return st;
  st = resolve(in->model, algo, &name, err);
  if (st != CAIRN_OK)
    return st;
  cairn__plan_schedule_init(out, in->model, name);
  switch (in->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL:
    if (in->model == CAIRN_PLAN_POSTAL && strcmp(name, "interleaved-lcf") == 0) {
      if (in->cl.degree || in->cl.B || in->cl.members)
        return cairn__error_set(err, CAIRN_EINVAL,
                               "the postal planners handle plain broadcast only (no degree, B or members)");
      st = cairn__bcast_interleaved_lcf(&in->cl, out, err);
    } else {
      st = run_compact(in, name, out, err);
    }
    break;
  case CAIRN_PLAN_GRID: st = cairn__plan_grid_run(&in->grid, name, out, err); break;
  case CAIRN_PLAN_HNOW: st = cairn__plan_hnow_run(&in->hnow, name, out, err); break;
  case CAIRN_PLAN_CDMD: st = cairn__plan_cdmd_run(&in->cdmd, out, err); break;
  }
  if (st != CAIRN_OK)
    return st;
  cairn__plan_schedule_finish(out);
  out->lower_bound = cairn__plan_lower_bound(in);
  return CAIRN_OK;
}
