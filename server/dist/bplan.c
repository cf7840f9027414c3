/* bplan.c — the broadcast plan of a file over the clusters present, and the
 * measured transfer rates it is costed with.
 *
 * Rates. Workers report each download they made (file, source, bytes, ms;
 * docs/protocol.md "Data distribution"). The master keys a sample by
 * (source cluster, receiving cluster), the master being the cluster "" (a
 * worker's cluster is never empty), and keeps an exponentially weighted mean
 * (weight 1/2 for the newest) in bytes per second. A pair never measured is
 * estimated from its class: the mean of the measured local pairs (i → i),
 * of the master's pairs, or of the other inter-cluster pairs; with nothing
 * measured the defaults are 1 Gbit/s inside a cluster and 100 Mbit/s
 * between clusters and from the master. Lookups are O(1) (a hash map keyed
 * by the pair and running sums per class). Every sample is journaled
 * (J_RATE, table link_rates), so a restarted master plans with the rates
 * it had measured.
 *
 * Plans. cairn__bplan_build runs one planner of plan/plan.h on an instance
 * made of the master as cluster 0 (one node, the source) and every cluster
 * present with its number of workers:
 *   lcf             1/C model ([KKW] §3): a local copy takes 1 unit =
 *                   size / (median local rate); C = round(size / mean
 *                   inter-cluster rate / unit), at least 1.
 *   bounded-degree  the same with degree 1 per cluster ([KKW] §5.1): one
 *                   inter-cluster copy in or out of a cluster at a time, as
 *                   over one shared uplink.
 *   flat, FEF, ECEF, ECEF-LA, ECEF-LAt, ECEF-LAT, BottomUp
 *                   grid model ([BSM] §3–5) in seconds: g_ij = size /
 *                   rate(i → j) for every pair, L_ij = 0 (latency is part of
 *                   the measured rate), T_i = ceil(log2 n_i) · size /
 *                   rate(i → i) (binomial doubling inside the cluster).
 *                   A cluster that holds the file already (or has a copy
 *                   landing) when the plan is rebuilt costs next to nothing
 *                   to reach from the master (g_0j = 1 ns; the model wants
 *                   g + L > 0), so the heuristics use it as a source from
 *                   the start. The 1/C planners have a single source and
 *                   plan from scratch; executed, their plan still lets
 *                   informed clusters feed themselves.
 * The plan keeps, per cluster, only what the master needs to execute it
 * online: the cluster it receives its first copy from, the planned start of
 * that copy (seconds from the start of the broadcast) and its rank among its
 * sender's receivers; per sender, how many inter-cluster copies the plan has
 * it send at once (the largest overlap of its sends). Inside a cluster the
 * file spreads from holder to holder; the plan does not fix who.
 *
 * Cost: building is the planner's cost (lcf O(k log k + N), the ECEF family
 * O(k² log k), k clusters, N workers) plus O(k²) rate lookups for the grid
 * model. Over CAIRN__BPLAN_GRID_MAX (64) clusters the grid heuristics give
 * way to lcf, and the master plans over at most CAIRN__PLAN_MAX_CLUSTERS
 * (512; distribution.c's ensure_plan takes the first present, e.g. of
 * volunteers each in their own /24), so that a plan never needs more than
 * a few MB or more than a millisecond or so under the master's lock. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plan/plan.h"
#include "server/dist/dist_int.h"

#define DEFAULT_LOCAL_BPS 125e6 /* 1 Gbit/s */
#define DEFAULT_INTER_BPS 12.5e6 /* 100 Mbit/s */
#define MIN_SAMPLE_BYTES 65536
/* Rates are clamped to this range (a volunteer's report is not trusted to
 * stay in the range of a double-to-int64 cast or to make sense): 1 B/s to
 * 1 TB/s. */
#define MIN_RATE_BPS 1.0
#define MAX_RATE_BPS 1e12

static double clamp_rate(double bps) {
  return !(bps >= MIN_RATE_BPS) ? MIN_RATE_BPS : bps > MAX_RATE_BPS ? MAX_RATE_BPS : bps;
}

enum { RATE_LOCAL, RATE_MASTER, RATE_INTER };

static const char *const algorithms[] = {"online", "lcf", "bounded-degree", "flat", "FEF",
                                         "ECEF", "ECEF-LA", "ECEF-LAt", "ECEF-LAT", "BottomUp",
                                         NULL};

const char *cairn__bplan_algorithm(const char *name) {
  for (size_t i = 0; algorithms[i]; i++)
    if (strcmp(algorithms[i], name) == 0)
      return algorithms[i];
  return NULL;
}

const char *cairn__bplan_algorithms(void) {
  return "online, lcf, bounded-degree, flat, FEF, ECEF, ECEF-LA, ECEF-LAt, ECEF-LAT, BottomUp";
}

/* FNV-1a over "src\0dst", never 0 (reserved by the map). */
static uint64_t pair_key(const char *src, const char *dst) {
  uint64_t h = 1469598103934665603ULL;
  for (const char *p = src; *p; p++)
    h = (h ^ (uint8_t)*p) * 1099511628211ULL;
  h = (h ^ 0xffu) * 1099511628211ULL;
  for (const char *p = dst; *p; p++)
    h = (h ^ (uint8_t)*p) * 1099511628211ULL;
  return h ? h : 1;
}

static int rate_class(const char *src, const char *dst) {
  if (!*src)
    return RATE_MASTER;
  return strcmp(src, dst) == 0 ? RATE_LOCAL : RATE_INTER;
}

static mrate *rate_find(const cairn__dist *d, const char *src, const char *dst) {
  mrate *r = cairn__hmap_get(&d->rates, pair_key(src, dst));
  return r && strcmp(r->src, src) == 0 && strcmp(r->dst, dst) == 0 ? r : NULL;
}

void cairn__rates_free(cairn__dist *d) {
  for (size_t i = 0; i < d->rates.cap; i++) {
    mrate *r = d->rates.keys && d->rates.keys[i] ? d->rates.vals[i] : NULL;
    if (r) {
      free(r->src);
      free(r->dst);
      free(r);
    }
  }
  cairn__hmap_free(&d->rates);
}

/* Adds pair src -> dst at bps; NULL when out of memory or on a 64-bit hash
 * collision with another pair (the first pair keeps the slot). */
static mrate *rate_add(cairn__dist *d, const char *src, const char *dst, double bps) {
  uint64_t key = pair_key(src, dst);
  if (cairn__hmap_get(&d->rates, key))
    return NULL;
  mrate *r = calloc(1, sizeof *r);
  if (!r || !(r->src = cairn__strdup(src)) || !(r->dst = cairn__strdup(dst)) ||
      cairn__hmap_put(&d->rates, key, r)) {
    if (r) {
      free(r->src);
      free(r->dst);
    }
    free(r);
    return NULL;
  }
  r->cls = rate_class(src, dst);
  r->bps = r->base = bps;
  d->rate_sum[r->cls] += bps;
  d->rate_n[r->cls]++;
  return r;
}

int cairn__rate_restore(cairn__dist *d, const char *src, const char *dst, double bps,
                        int64_t samples) {
  if (!*dst || bps <= 0 || rate_find(d, src, dst))
    return 0;
  mrate *r = rate_add(d, src, dst, clamp_rate(bps));
  if (!r)
    return cairn__hmap_get(&d->rates, pair_key(src, dst)) ? 0 : -1;
  r->samples = samples;
  return 0;
}

void cairn__rate_sample(cairn__core *c, const char *src, const char *dst, int64_t bytes,
                        int64_t ms) {
  if (bytes < MIN_SAMPLE_BYTES || ms <= 0 || !dst || !*dst)
    return; /* small files measure latency more than rate */
  cairn__dist *d = c->dist;
  double bps = clamp_rate((double)bytes * 1000.0 / (double)ms);
  mrate *r = rate_find(d, src, dst);
  if (!r) {
    if (!(r = rate_add(d, src, dst, bps)))
      return;
    d->rates_epoch++;
  } else {
    double nb = 0.5 * r->bps + 0.5 * bps;
    d->rate_sum[r->cls] += nb - r->bps;
    if (fabs(nb - r->base) > 0.25 * r->base) {
      d->rates_epoch++; /* plans costed before are off by more than a quarter */
      r->base = nb;
    }
    r->bps = nb;
  }
  r->samples++;
  cairn__journal_put(c->journal, cairn__jrec_rate(src, dst, (int64_t)r->bps, r->samples));
}

double cairn__rate_get(const cairn__dist *d, const char *src, const char *dst) {
  const mrate *r = rate_find(d, src, dst);
  if (r)
    return r->bps;
  int cls = rate_class(src, dst);
  if (d->rate_n[cls])
    return d->rate_sum[cls] / (double)d->rate_n[cls];
  if (cls == RATE_LOCAL)
    return DEFAULT_LOCAL_BPS;
  /* the master's and other clusters' links: whichever is known */
  int other = cls == RATE_MASTER ? RATE_INTER : RATE_MASTER;
  if (d->rate_n[other])
    return d->rate_sum[other] / (double)d->rate_n[other];
  return DEFAULT_INTER_BPS;
}

json_t *cairn__rates_json(const cairn__dist *d) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < d->rates.cap; i++) {
    const mrate *r = d->rates.keys && d->rates.keys[i] ? d->rates.vals[i] : NULL;
    if (r)
      json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:I}", "from", *r->src ? r->src : "master",
                                         "to", r->dst, "bytes_per_second", (json_int_t)r->bps,
                                         "samples", (json_int_t)r->samples));
  }
  return a;
}

void cairn__bplan_free(mplan *p) {
  if (!p)
    return;
  for (size_t i = 0; i < p->k; i++)
    free(p->label[i]);
  free(p->label);
  free(p->parent);
  free(p->at);
  free(p->end);
  free(p->done);
  free(p->workers);
  free(p->rank);
  free(p->conc);
  free(p->want);
  free(p);
}

int cairn__bplan_find(const mplan *p, const char *label) {
  size_t lo = 1, hi = p->k; /* labels 1..k-1 are sorted */
  while (lo < hi) {
    size_t mid = lo + (hi - lo) / 2;
    int d = strcmp(p->label[mid], label);
    if (d == 0)
      return (int)mid;
    if (d < 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return *label ? -1 : 0;
}

static int cmp_dbl(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* An inter-cluster send starting (+1) or ending (-1) at t, by sender. */
typedef struct send_ev {
  size_t from;
  double t;
  int delta;
} send_ev;

static int cmp_ev(const void *a, const void *b) {
  const send_ev *x = a, *y = b;
  if (x->from != y->from)
    return x->from < y->from ? -1 : 1;
  if (x->t != y->t)
    return x->t < y->t ? -1 : 1;
  return x->delta - y->delta; /* an end before a start at the same time */
}

/* A receiving cluster, ordered by parent, planned start, index. */
typedef struct recv_key {
  int64_t parent;
  double at;
  size_t idx;
} recv_key;

static int cmp_recv(const void *a, const void *b) {
  const recv_key *x = a, *y = b;
  if (x->parent != y->parent)
    return x->parent < y->parent ? -1 : 1;
  if (x->at != y->at)
    return x->at < y->at ? -1 : 1;
  return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Fills parent/at/rank/conc from schedule s (times scaled by unit).
 * O(T log T) for T transfers. */
static int extract(mplan *p, const cairn__plan_schedule *s, double unit) {
  size_t k = p->k, n = 0;
  send_ev *ev = malloc((2 * s->nto + 1) * sizeof *ev);
  recv_key *order = malloc(k * sizeof *order);
  if (!ev || !order) {
    free(ev);
    free(order);
    return -1;
  }
  for (size_t t = 0; t < s->n; t++) {
    const cairn__plan_transfer *x = &s->t[t];
    for (size_t r = 0; r < x->to_len; r++) {
      int64_t dst = s->to[x->to_off + r].id;
      if (dst < 0 || (size_t)dst >= k || x->from.id < 0 || (size_t)x->from.id >= k)
        continue;
      if (x->end * unit > p->done[dst])
        p->done[dst] = x->end * unit;
      if (dst == x->from.id)
        continue; /* local copies and internal broadcasts */
      if (p->parent[dst] < 0 && dst != 0) {
        p->parent[dst] = x->from.id;
        p->at[dst] = x->start * unit;
        p->end[dst] = x->end * unit;
      }
      ev[n++] = (send_ev){(size_t)x->from.id, x->start, +1};
      ev[n++] = (send_ev){(size_t)x->from.id, x->end, -1};
    }
  }
  for (size_t i = 1; i < k; i++)
    if (p->parent[i] < 0)
      p->parent[i] = 0; /* not reached by the plan (cannot happen for a broadcast) */
  /* rank among the sender's receivers */
  for (size_t i = 1; i < k; i++)
    order[i - 1] = (recv_key){p->parent[i], p->at[i], i};
  qsort(order, k - 1, sizeof *order, cmp_recv);
  for (size_t i = 0; i + 1 < k; i++)
    p->rank[order[i].idx] = i && order[i].parent == order[i - 1].parent
                                ? p->rank[order[i - 1].idx] + 1
                                : 0;
  /* the largest number of overlapping sends of each sender */
  qsort(ev, n, sizeof *ev, cmp_ev);
  for (size_t c = 0; c < k; c++)
    p->conc[c] = 1;
  for (size_t i = 0, open = 0; i < n; i++) {
    if (i && ev[i].from != ev[i - 1].from)
      open = 0;
    open = (size_t)((long)open + ev[i].delta);
    if ((long)open > p->conc[ev[i].from])
      p->conc[ev[i].from] = (int)open;
  }
  free(ev);
  free(order);
  return 0;
}

mplan *cairn__bplan_build(const cairn__dist *d, const char *algo, int64_t size,
                          char *const *labels, const int64_t *counts,
                          const uint8_t *informed, size_t m, cairn_error *err) {
  size_t k = m + 1;
  mplan *p = calloc(1, sizeof *p);
  if (!p)
    goto oom;
  p->k = k;
  p->label = calloc(k, sizeof *p->label);
  p->parent = malloc(k * sizeof *p->parent);
  p->at = calloc(k, sizeof *p->at);
  p->rank = calloc(k, sizeof *p->rank);
  p->conc = calloc(k, sizeof *p->conc);
  p->want = calloc(k, sizeof *p->want);
  p->end = calloc(k, sizeof *p->end);
  p->done = calloc(k, sizeof *p->done);
  p->workers = calloc(k, sizeof *p->workers);
  if (!p->label || !p->parent || !p->at || !p->rank || !p->conc || !p->want || !p->end ||
      !p->done || !p->workers)
    goto oom;
  p->workers[0] = 1;
  for (size_t i = 1; i < k; i++)
    p->workers[i] = counts[i - 1];
  if (m > CAIRN__BPLAN_GRID_MAX && strcmp(algo, "bounded-degree") != 0)
    algo = "lcf"; /* the grid heuristics' O(k^2) memory and O(k^2 log k) time */
  snprintf(p->algorithm, sizeof p->algorithm, "%s", algo);
  for (size_t i = 0; i < k; i++) {
    p->parent[i] = -1;
    if (!(p->label[i] = cairn__strdup(i ? labels[i - 1] : "")))
      goto oom;
  }
  double sz = (double)(size > 0 ? size : 1);
  cairn__plan_instance in = {0};
  cairn__plan_schedule s;
  double unit = 1.0;
  int64_t *sizes = NULL, *degree = NULL;
  double *L = NULL, *g = NULL, *T = NULL;
  int grid = strcmp(algo, "lcf") != 0 && strcmp(algo, "bounded-degree") != 0;
  if (!grid) {
    double *loc = malloc(k * sizeof *loc);
    sizes = malloc(k * sizeof *sizes);
    degree = malloc(k * sizeof *degree);
    if (!loc || !sizes || !degree) {
      free(loc);
      free(sizes);
      free(degree);
      goto oom;
    }
    for (size_t i = 1; i < k; i++)
      loc[i - 1] = sz / cairn__rate_get(d, labels[i - 1], labels[i - 1]);
    qsort(loc, m, sizeof *loc, cmp_dbl);
    unit = m ? loc[m / 2] : 1.0;
    free(loc);
    if (unit <= 0)
      unit = 1e-6;
    double inter = sz / cairn__rate_get(d, "", m ? labels[0] : "");
    long long C = llround(inter / unit);
    in.model = CAIRN_PLAN_1C;
    in.cl.C = C < 1 ? 1 : C;
    in.cl.k = k;
    sizes[0] = 1;
    degree[0] = 1;
    for (size_t i = 1; i < k; i++) {
      sizes[i] = counts[i - 1] > 0 ? counts[i - 1] : 1;
      degree[i] = 1;
    }
    in.cl.size = sizes;
    in.cl.degree = strcmp(algo, "bounded-degree") == 0 ? degree : NULL;
    in.cl.source = 0;
  } else {
    L = calloc(k * k, sizeof *L);
    g = calloc(k * k, sizeof *g);
    T = calloc(k, sizeof *T);
    if (!L || !g || !T) {
      free(L);
      free(g);
      free(T);
      goto oom;
    }
    for (size_t i = 0; i < k; i++) {
      for (size_t j = 0; j < k; j++)
        if (i != j)
          g[i * k + j] = i == 0 && j && informed && informed[j - 1]
                             ? 1e-9 /* it has the file (or soon): a source from the start */
                             : sz / cairn__rate_get(d, p->label[i], p->label[j]);
      int64_t n = i ? counts[i - 1] : 1;
      if (n > 1)
        T[i] = ceil(log2((double)n)) * sz / cairn__rate_get(d, p->label[i], p->label[i]);
    }
    in.model = CAIRN_PLAN_GRID;
    in.grid.k = k;
    in.grid.root = 0;
    in.grid.L = L;
    in.grid.g = g;
    in.grid.T = T;
  }
  cairn_status st = cairn__plan_run(&in, algo, &s, err);
  if (st == CAIRN_OK) {
    p->predicted = s.makespan * unit;
    p->lower_bound = s.lower_bound * unit;
    p->unit = unit;
    p->C = grid ? 0 : in.cl.C;
    if (extract(p, &s, unit))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  cairn__plan_schedule_free(&s);
  free(sizes);
  free(degree);
  free(L);
  free(g);
  free(T);
  if (st != CAIRN_OK) {
    cairn__bplan_free(p);
    return NULL;
  }
  return p;
oom:
  cairn__bplan_free(p);
  cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return NULL;
}

json_t *cairn__bplan_json(const mplan *p, size_t max_clusters) {
  json_t *order = json_array();
  for (size_t i = 1; i < p->k && i <= max_clusters; i++)
    json_array_append_new(order, json_pack("{s:s, s:s, s:f}", "cluster", p->label[i], "from",
                                           p->parent[i] > 0 ? p->label[p->parent[i]] : "master",
                                           "at_s", p->at[i]));
  return json_pack("{s:s, s:i, s:f, s:i, s:f, s:f, s:o}", "algorithm", p->algorithm,
                   "clusters", (int)(p->k - 1), "built_s", p->built, "informed", p->informed,
                   "predicted_s", p->predicted, "lower_bound_s", p->lower_bound,
                   "clusters_order", order);
}

json_t *cairn__bplan_record(const mplan *p, size_t max_clusters) {
  json_t *o = cairn__bplan_json(p, max_clusters);
  json_t *order = json_object_get(o, "clusters_order");
  for (size_t i = 1; i < p->k && i <= max_clusters; i++) {
    json_t *c = json_array_get(order, i - 1);
    json_object_set_new(c, "workers", json_integer(p->workers[i]));
    json_object_set_new(c, "end_s", json_real(p->end[i]));
    json_object_set_new(c, "done_s", json_real(p->done[i] > p->end[i] ? p->done[i] : p->end[i]));
  }
  json_object_set_new(o, "built_ms", json_integer(p->built_ms));
  return o;
}
