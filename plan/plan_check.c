/* plan_check.c — the feasibility checker: replays any schedule in its model,
 * sharing no code with the planners.
 *
 * Rules per model (paper and section, docs/references.md):
 *   1/C ([KKW] §2): local transfer lasts 1, inter-cluster C; sender and
 *                   receivers are busy the whole transfer; one transfer per
 *                   node at a time; at most d_i inter-cluster transfers into
 *                   or out of cluster i (§5.1); at most B at once (§5.3).
 *   postal ([KKW] §6): sender busy [start, start+1), receiver busy
 *                   [end-1, end), end - start = 1 (local) or C.
 *   grid ([BSM] §3): inter-cluster i→j lasts g_ij + L_ij, the sender's port is
 *                   busy g_ij; the transfer i→i is cluster i's broadcast,
 *                   lasting T_i, once, after its arrival and after every
 *                   inter-cluster send of i.
 *   hnow ([WYL] §2): sender busy S(i,m) from the start, arrival at
 *                   start + S + X(i,j)m, receiver busy R(j,m) ending at end
 *                   and starting no earlier than the arrival; one operation
 *                   per node at a time; only the source and destinations of
 *                   a message relay it, only destinations receive it.
 *   cdmd ([Gon] §1): a (multicast) transfer of message x lasts exactly l_x
 *                   consecutive rounds; one send and one receive per
 *                   processor at a time.
 * In every model the sender holds the message at the start and everyone who
 * must receive does. The makespan is the latest end.
 *
 * Complexity: O(T log T + Σ receivers) for T transfers, plus O(N) memory for
 * the holding times of the N nodes (times messages for hnow and cdmd). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

#define CHECK_MAX_NODES (INT64_C(1) << 28)

typedef struct iv {
  uint64_t node;
  uint32_t port;
  double s, e;
  size_t tr;
} iv;

typedef struct ckr {
  const cairn__plan_instance *in;
  const cairn__plan_schedule *s;
  cairn_error *err;
  int64_t *prefix; /* cluster models: first node index of each cluster */
  uint64_t nnodes;
  size_t nmsg;
  double *hold; /* nmsg * nnodes */
  iv *ivs;
  size_t niv, capiv;
} ckr;

static double eps_of(double x) { return 1e-9 * (fabs(x) > 1 ? fabs(x) : 1); }
static int same(double a, double b) { return fabs(a - b) <= eps_of(a > b ? a : b); }

static int add_iv(ckr *c, uint64_t node, uint32_t port, double s, double e, size_t tr) {
  if (e <= s)
    return 0; /* an empty interval occupies nothing */
  if (c->niv == c->capiv) {
    size_t nc = c->capiv ? c->capiv * 2 : 256;
    iv *p = realloc(c->ivs, nc * sizeof *p);
    if (!p)
      return -1;
    c->ivs = p;
    c->capiv = nc;
  }
  c->ivs[c->niv++] = (iv){node, port, s, e, tr};
  return 0;
}

static int iv_cmp(const void *a, const void *b) {
  const iv *x = a, *y = b;
  if (x->node != y->node)
    return x->node < y->node ? -1 : 1;
  if (x->port != y->port)
    return x->port < y->port ? -1 : 1;
  if (x->s != y->s)
    return x->s < y->s ? -1 : 1;
  return (x->tr > y->tr) - (x->tr < y->tr);
}

typedef struct ord {
  double s, e;
  size_t i;
} ord;

static int ord_cmp(const void *a, const void *b) {
  const ord *x = a, *y = b;
  if (x->s != y->s)
    return x->s < y->s ? -1 : 1;
  if (x->e != y->e)
    return x->e < y->e ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

static int cluster_model(const ckr *c) {
  return c->in->model == CAIRN_PLAN_1C || c->in->model == CAIRN_PLAN_POSTAL;
}

static void node_str(const ckr *c, cairn__plan_node n, char *buf, size_t len) {
  if (cluster_model(c))
    snprintf(buf, len, "[%lld,%lld]", (long long)n.id, (long long)n.member);
  else
    snprintf(buf, len, "%lld", (long long)n.id);
}

/* Maps a node to its index, or returns -1 (with the error set). */
static int64_t node_index(ckr *c, size_t ti, cairn__plan_node n) {
  char b[64];
  node_str(c, n, b, sizeof b);
  if (cluster_model(c)) {
    const cairn__plan_clusters *cl = &c->in->cl;
    if (n.id < 0 || (size_t)n.id >= cl->k || n.member < 0 || n.member >= cl->size[n.id]) {
      cairn__error_set(c->err, CAIRN_EINVAL, "transfer %zu: node %s does not exist", ti, b);
      return -1;
    }
    return c->prefix[n.id] + n.member;
  }
  if (n.id < 0 || (uint64_t)n.id >= c->nnodes) {
    cairn__error_set(c->err, CAIRN_EINVAL, "transfer %zu: node %s does not exist", ti, b);
    return -1;
  }
  return n.id;
}

static double hnow_len(const ckr *c, size_t m) { return c->in->hnow.msg[m].length; }

/* Durations and busy intervals of one transfer. */
static cairn_status rules(ckr *c, size_t ti, int64_t from, const int64_t *to) {
  const cairn__plan_transfer *t = &c->s->t[ti];
  const cairn__plan_node *tn = c->s->to + t->to_off;
  double d = t->end - t->start;
  char fb[64], tb[64];
  node_str(c, t->from, fb, sizeof fb);
  node_str(c, tn[0], tb, sizeof tb);
  switch (c->in->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL: {
    int local = t->from.id == tn[0].id;
    double want = local ? 1.0 : (double)c->in->cl.C;
    if (!same(d, want))
      return cairn__error_set(c->err, CAIRN_EINVAL, "transfer %zu: %s -> %s lasts %g, the model says %g", ti,
                             fb, tb, d, want);
    int postal = c->in->model == CAIRN_PLAN_POSTAL;
    if (add_iv(c, (uint64_t)from, 0, t->start, postal ? t->start + 1 : t->end, ti) ||
        add_iv(c, (uint64_t)to[0], 0, postal ? t->end - 1 : t->start, t->end, ti))
      return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
    return CAIRN_OK;
  }
  case CAIRN_PLAN_GRID: {
    const cairn__plan_grid *g = &c->in->grid;
    size_t i = (size_t)from, j = (size_t)to[0];
    if (i == j) {
      if (!same(d, g->T[i]))
        return cairn__error_set(c->err, CAIRN_EINVAL,
                               "transfer %zu: broadcast inside cluster %zu lasts %g, T = %g", ti, i, d, g->T[i]);
      if (add_iv(c, i, 0, t->start, t->end, ti))
        return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
      return CAIRN_OK;
    }
    double gg = g->g[i * g->k + j], want = gg + g->L[i * g->k + j];
    if (!same(d, want))
      return cairn__error_set(c->err, CAIRN_EINVAL, "transfer %zu: %zu -> %zu lasts %g, g + L = %g", ti, i, j,
                             d, want);
    if (add_iv(c, i, 0, t->start, t->start + gg, ti))
      return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
    return CAIRN_OK;
  }
  case CAIRN_PLAN_HNOW: {
    const cairn__plan_hnow *h = &c->in->hnow;
    size_t i = (size_t)from, j = (size_t)to[0];
    double m = hnow_len(c, t->message);
    double S = h->S0[i] + h->S1[i] * m, R = h->R0[j] + h->R1[j] * m;
    double arrive = t->start + S + h->X[i * h->n + j] * m;
    if (t->end - R < arrive - eps_of(arrive))
      return cairn__error_set(c->err, CAIRN_EINVAL,
                             "transfer %zu: %zu -> %zu ends at %g, before arrival %g plus R %g", ti, i, j, t->end,
                             arrive, R);
    const cairn__plan_hmsg *g = &h->msg[t->message];
    int dest = 0;
    for (size_t x = 0; x < g->ndests; x++)
      dest |= g->dests[x] == j;
    if (!dest)
      return cairn__error_set(c->err, CAIRN_EINVAL, "transfer %zu: node %zu is not a destination of message %zu",
                             ti, j, t->message);
    if (add_iv(c, i, 0, t->start, t->start + S, ti) || add_iv(c, j, 0, t->end - R, t->end, ti))
      return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
    return CAIRN_OK;
  }
  case CAIRN_PLAN_CDMD: {
    double want = (double)c->in->cdmd.msg[t->message].length;
    if (!same(d, want))
      return cairn__error_set(c->err, CAIRN_EINVAL,
                             "transfer %zu: message %zu takes %g rounds, its length is %g (continuous delivery)",
                             ti, t->message, d, want);
    if (add_iv(c, (uint64_t)from, 0, t->start, t->end, ti))
      return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
    for (size_t r = 0; r < t->to_len; r++)
      if (add_iv(c, (uint64_t)to[r], 1, t->start, t->end, ti))
        return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
    return CAIRN_OK;
  }
  }
  return CAIRN_OK;
}

typedef struct sweep {
  double t;
  int d;
  uint32_t a, b;
} sweep;

static int sweep_cmp(const void *x, const void *y) {
  const sweep *p = x, *q = y;
  if (p->t != q->t)
    return p->t < q->t ? -1 : 1;
  return p->d - q->d; /* ends (-1) before starts (+1) */
}

/* §5.1 degree and §5.3 matching bounds on simultaneous inter-cluster transfers. */
static cairn_status check_bounds(ckr *c) {
  const cairn__plan_clusters *cl = &c->in->cl;
  if (c->in->model != CAIRN_PLAN_1C || (!cl->degree && cl->B <= 0))
    return CAIRN_OK;
  size_t n = 0;
  sweep *ev = malloc((2 * c->s->n + 1) * sizeof *ev);
  int64_t *load = calloc(cl->k, sizeof *load);
  if (!ev || !load) {
    free(ev);
    free(load);
    return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
  }
  for (size_t i = 0; i < c->s->n; i++) {
    const cairn__plan_transfer *t = &c->s->t[i];
    uint32_t a = (uint32_t)t->from.id, b = (uint32_t)c->s->to[t->to_off].id;
    if (a == b)
      continue;
    ev[n++] = (sweep){t->start, 1, a, b};
    ev[n++] = (sweep){t->end, -1, a, b};
  }
  qsort(ev, n, sizeof *ev, sweep_cmp);
  int64_t total = 0;
  cairn_status st = CAIRN_OK;
  for (size_t i = 0; i < n && st == CAIRN_OK; i++) {
    total += ev[i].d;
    load[ev[i].a] += ev[i].d;
    load[ev[i].b] += ev[i].d;
    if (cl->B > 0 && total > cl->B)
      st = cairn__error_set(c->err, CAIRN_EINVAL, "%lld inter-cluster transfers at time %g exceed B = %lld",
                           (long long)total, ev[i].t, (long long)cl->B);
    else if (cl->degree && load[ev[i].a] > cl->degree[ev[i].a])
      st = cairn__error_set(c->err, CAIRN_EINVAL, "cluster %u has %lld inter-cluster transfers at time %g, degree %lld",
                           ev[i].a, (long long)load[ev[i].a], ev[i].t, (long long)cl->degree[ev[i].a]);
    else if (cl->degree && load[ev[i].b] > cl->degree[ev[i].b])
      st = cairn__error_set(c->err, CAIRN_EINVAL, "cluster %u has %lld inter-cluster transfers at time %g, degree %lld",
                           ev[i].b, (long long)load[ev[i].b], ev[i].t, (long long)cl->degree[ev[i].b]);
  }
  free(ev);
  free(load);
  return st;
}

static cairn_status check_cover(ckr *c) {
  const cairn__plan_instance *in = c->in;
  switch (in->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL:
    for (size_t i = 0; i < in->cl.k; i++) {
      int64_t want = in->cl.members ? in->cl.members[i] : in->cl.size[i];
      for (int64_t m = 0; m < want; m++)
        if (isinf(c->hold[c->prefix[i] + m]))
          return cairn__error_set(c->err, CAIRN_EINVAL, "node [%zu,%lld] never receives the message", i,
                                 (long long)m);
    }
    return CAIRN_OK;
  case CAIRN_PLAN_GRID:
    for (size_t i = 0; i < in->grid.k; i++)
      if (isinf(c->hold[i]))
        return cairn__error_set(c->err, CAIRN_EINVAL, "cluster %zu never receives the message", i);
    return CAIRN_OK;
  case CAIRN_PLAN_HNOW:
    for (size_t m = 0; m < in->hnow.nmsg; m++)
      for (size_t x = 0; x < in->hnow.msg[m].ndests; x++)
        if (isinf(c->hold[m * c->nnodes + in->hnow.msg[m].dests[x]]))
          return cairn__error_set(c->err, CAIRN_EINVAL, "node %zu never receives message %zu",
                                 in->hnow.msg[m].dests[x], m);
    return CAIRN_OK;
  case CAIRN_PLAN_CDMD:
    for (size_t m = 0; m < in->cdmd.nmsg; m++)
      for (size_t x = 0; x < in->cdmd.msg[m].nneed; x++)
        if (isinf(c->hold[m * c->nnodes + in->cdmd.msg[m].needed_by[x]]))
          return cairn__error_set(c->err, CAIRN_EINVAL, "processor %zu never receives message %s",
                                 in->cdmd.msg[m].needed_by[x],
                                 in->cdmd.msg[m].name ? in->cdmd.msg[m].name : "?");
    return CAIRN_OK;
  }
  return CAIRN_OK;
}

/* Grid: one local broadcast per cluster, after its arrival and after the
 * port time of every inter-cluster send it makes. */
static cairn_status check_grid_local(ckr *c) {
  const cairn__plan_grid *g = &c->in->grid;
  double *local = malloc(g->k * sizeof *local), *lastsend = malloc(g->k * sizeof *lastsend);
  if (!local || !lastsend) {
    free(local);
    free(lastsend);
    return cairn__error_set(c->err, CAIRN_ENOMEM, "out of memory checking");
  }
  for (size_t i = 0; i < g->k; i++) {
    local[i] = NAN;
    lastsend[i] = -INFINITY;
  }
  cairn_status st = CAIRN_OK;
  for (size_t x = 0; x < c->s->n && st == CAIRN_OK; x++) {
    const cairn__plan_transfer *t = &c->s->t[x];
    size_t i = (size_t)t->from.id, j = (size_t)c->s->to[t->to_off].id;
    if (i == j) {
      if (!isnan(local[i]))
        st = cairn__error_set(c->err, CAIRN_EINVAL, "transfer %zu: cluster %zu broadcasts inside twice", x, i);
      local[i] = t->start;
    } else {
      double e = t->start + g->g[i * g->k + j];
      if (e > lastsend[i])
        lastsend[i] = e;
    }
  }
  for (size_t i = 0; i < g->k && st == CAIRN_OK; i++) {
    if (isnan(local[i]))
      st = cairn__error_set(c->err, CAIRN_EINVAL, "cluster %zu never broadcasts inside", i);
    else if (lastsend[i] > local[i] + eps_of(local[i]))
      st = cairn__error_set(c->err, CAIRN_EINVAL,
                           "cluster %zu broadcasts inside at %g before its last send ends at %g", i, local[i],
                           lastsend[i]);
  }
  free(local);
  free(lastsend);
  return st;
}

cairn_status cairn__plan_check(const cairn__plan_instance *in, const cairn__plan_schedule *s, double *makespan,
                              cairn_error *err) {
  ckr c = {.in = in, .s = s, .err = err};
  ord *idx = NULL;
  int64_t *to = NULL;
  size_t tocap = 0;
  cairn_status st = cairn__plan_instance_validate(in, err);
  if (st != CAIRN_OK)
    return st;
  if (s->model != in->model)
    return cairn__error_set(err, CAIRN_EINVAL, "plan is for model %s, instance for %s",
                           cairn__plan_model_name(s->model), cairn__plan_model_name(in->model));
  switch (in->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL: {
    c.prefix = malloc((in->cl.k + 1) * sizeof *c.prefix);
    if (!c.prefix)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory checking");
    c.prefix[0] = 0;
    for (size_t i = 0; i < in->cl.k; i++)
      c.prefix[i + 1] = c.prefix[i] + in->cl.size[i];
    c.nnodes = (uint64_t)c.prefix[in->cl.k];
    c.nmsg = 1;
    break;
  }
  case CAIRN_PLAN_GRID: c.nnodes = in->grid.k; c.nmsg = 1; break;
  case CAIRN_PLAN_HNOW: c.nnodes = in->hnow.n; c.nmsg = in->hnow.nmsg; break;
  case CAIRN_PLAN_CDMD: c.nnodes = in->cdmd.n; c.nmsg = in->cdmd.nmsg; break;
  }
  if (c.nmsg == 0)
    c.nmsg = 1;
  if (c.nnodes * c.nmsg > (uint64_t)CHECK_MAX_NODES) {
    st = cairn__error_set(err, CAIRN_ETOOBIG, "instance too large to check (%llu node-messages)",
                         (unsigned long long)(c.nnodes * c.nmsg));
    goto out;
  }
  c.hold = malloc(c.nnodes * c.nmsg * sizeof *c.hold);
  idx = malloc((s->n + 1) * sizeof *idx);
  if (!c.hold || !idx) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory checking");
    goto out;
  }
  for (uint64_t i = 0; i < c.nnodes * c.nmsg; i++)
    c.hold[i] = INFINITY;
  /* initial holders */
  switch (in->model) {
  case CAIRN_PLAN_1C:
  case CAIRN_PLAN_POSTAL: c.hold[c.prefix[in->cl.source]] = 0; break;
  case CAIRN_PLAN_GRID: c.hold[in->grid.root] = 0; break;
  case CAIRN_PLAN_HNOW:
    for (size_t m = 0; m < in->hnow.nmsg; m++)
      c.hold[m * c.nnodes + in->hnow.msg[m].source] = 0;
    break;
  case CAIRN_PLAN_CDMD:
    for (size_t m = 0; m < in->cdmd.nmsg; m++)
      c.hold[m * c.nnodes + in->cdmd.msg[m].holder] = 0;
    break;
  }
  /* per-transfer shape and duration rules */
  for (size_t i = 0; i < s->n; i++) {
    const cairn__plan_transfer *t = &s->t[i];
    idx[i] = (ord){t->start, t->end, i};
    if (!isfinite(t->start) || !isfinite(t->end) || t->start < 0 || t->end < t->start) {
      st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: bad times [%g, %g]", i, t->start, t->end);
      goto out;
    }
    size_t nm = (in->model == CAIRN_PLAN_HNOW || in->model == CAIRN_PLAN_CDMD) ? c.nmsg : 1;
    if (t->message >= nm || (in->model == CAIRN_PLAN_HNOW && in->hnow.nmsg == 0) ||
        (in->model == CAIRN_PLAN_CDMD && in->cdmd.nmsg == 0)) {
      st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: no message %zu", i, t->message);
      goto out;
    }
    if (t->to_len < 1 || (in->model != CAIRN_PLAN_CDMD && t->to_len != 1)) {
      st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: %zu receivers (this model sends to exactly one)", i,
                           t->to_len);
      goto out;
    }
    int64_t from = node_index(&c, i, t->from);
    if (from < 0) {
      st = CAIRN_EINVAL;
      goto out;
    }
    if (t->to_len > tocap) {
      int64_t *p = realloc(to, t->to_len * sizeof *p);
      if (!p) {
        st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory checking");
        goto out;
      }
      to = p;
      tocap = t->to_len;
    }
    for (size_t r = 0; r < t->to_len; r++) {
      to[r] = node_index(&c, i, s->to[t->to_off + r]);
      if (to[r] < 0) {
        st = CAIRN_EINVAL;
        goto out;
      }
      int self_ok = in->model == CAIRN_PLAN_GRID;
      if (to[r] == from && !self_ok) {
        st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: a node sends to itself", i);
        goto out;
      }
      for (size_t q = 0; q < r; q++)
        if (to[q] == to[r]) {
          st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: a receiver is listed twice", i);
          goto out;
        }
    }
    st = rules(&c, i, from, to);
    if (st != CAIRN_OK)
      goto out;
  }
  /* replay in time order: a sender must hold the message when it starts */
  qsort(idx, s->n, sizeof *idx, ord_cmp);
  for (size_t q = 0; q < s->n; q++) {
    size_t ti = idx[q].i;
    const cairn__plan_transfer *t = &s->t[ti];
    int64_t from = node_index(&c, ti, t->from);
    double *hold = c.hold + t->message * c.nnodes;
    if (!(hold[from] <= t->start + eps_of(t->start))) {
      char b[64];
      node_str(&c, t->from, b, sizeof b);
      if (isinf(hold[from]))
        st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: %s sends at %g but never holds the message", ti, b,
                             t->start);
      else
        st = cairn__error_set(err, CAIRN_EINVAL, "transfer %zu: %s sends at %g but holds the message only from %g",
                             ti, b, t->start, hold[from]);
      goto out;
    }
    for (size_t r = 0; r < t->to_len; r++) {
      int64_t j = node_index(&c, ti, s->to[t->to_off + r]);
      if (j != from && t->end < hold[j])
        hold[j] = t->end;
    }
  }
  /* ports: one operation per node and port at a time */
  if (c.niv)
    qsort(c.ivs, c.niv, sizeof *c.ivs, iv_cmp);
  for (size_t i = 1; i < c.niv; i++) {
    const iv *a = &c.ivs[i - 1], *b = &c.ivs[i];
    if (a->node == b->node && a->port == b->port && b->s < a->e - eps_of(a->e)) {
      st = cairn__error_set(err, CAIRN_EINVAL,
                           "transfers %zu and %zu overlap at node %llu (busy [%g, %g) and [%g, %g))", a->tr, b->tr,
                           (unsigned long long)a->node, a->s, a->e, b->s, b->e);
      goto out;
    }
  }
  st = check_bounds(&c);
  if (st == CAIRN_OK && in->model == CAIRN_PLAN_GRID)
    st = check_grid_local(&c);
  if (st == CAIRN_OK)
    st = check_cover(&c);
  if (st == CAIRN_OK && makespan) {
    double m = 0;
    for (size_t i = 0; i < s->n; i++)
      if (s->t[i].end > m)
        m = s->t[i].end;
    *makespan = m;
  }
out:
  free(c.prefix);
  free(c.hold);
  free(c.ivs);
  free(idx);
  free(to);
  return st;
}
