/* plan_grid.c — two-level grid broadcast heuristics ([BSM]:
 * Barchet-Steffenel, Mounié, "Scheduling Heuristics for Efficient Broadcast
 * Operations on Grid Environments").
 *
 * Model (§3): clusters are represented by their coordinators. Set A holds
 * the clusters that have the message, B the others. Sending from i to j
 * occupies i for the gap g_ij(m) from the moment i is ready (RT_i) and
 * delivers at RT_i + g_ij + L_ij; then RT_i grows by g_ij and RT_j is the
 * arrival. When a cluster has made all its inter-cluster sends it
 * broadcasts inside, taking T_i. Makespan = max_i (RT_i + T_i).
 *
 * One step moves one cluster from B to A; the heuristics differ in the pair
 * they pick:
 *   flat      §4.1  the root sends to every cluster in index order
 *   FEF       §4.2  min L_ij                       (Bhat's fastest edge first)
 *   ECEF      §4.3  min RT_i + g_ij + L_ij
 *   ECEF-LA   §4.4  min RT_i + g_ij + L_ij + F_j,  F_j = min_{k∈B} g_jk + L_jk
 *   ECEF-LAt  §5.1  same with F_j = min_{k∈B} (g_jk + L_jk + T_k)
 *   ECEF-LAT  §5.2  same with F_j = max_{k∈B} (g_jk + L_jk + T_k)
 *   BottomUp  §5.3  max_{j∈B} min_{i∈A} (g_ij + L_ij + T_j)
 * (k ranges over B without j; F_j = 0 when j is the last one; ties go to the
 * lowest index). These are heuristics: no approximation guarantee.
 *
 * Lower bound: every cluster j receives no earlier than the shortest path
 * from the root under g + L and then broadcasts for T_j; the root sends at
 * least once before its own broadcast: max_j(dist_j + T_j), O(k²).
 *
 * Complexity: flat O(k); FEF and BottomUp O(k²); the ECEF family O(k² log k)
 * to sort each row once for the lookahead pointers, then O(k²) per run plus
 * O(|A|) each time the chosen sender was the best sender of a receiver
 * (O(k³) in the worst case, O(k²) on the random instances of §6). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

enum { FLAT, FEF, ECEF, ECEF_LA, ECEF_LAT_MIN, ECEF_LAT_MAX, BOTTOMUP };

typedef struct gstate {
  const cairn__plan_grid *g;
  size_t k;
  int algo;
  uint8_t *inA;
  double *rt;
  /* best sender of each j in B */
  double *best;
  size_t *arg;
  /* lookahead: row j sorted by key, pointer to the current best k in B */
  uint32_t *rows;
  size_t *ptr;
} gstate;

static double cost(const cairn__plan_grid *g, size_t i, size_t j) { return g->g[i * g->k + j] + g->L[i * g->k + j]; }

typedef struct rk {
  double key;
  uint32_t c;
} rk;

static int rk_asc(const void *a, const void *b) {
  const rk *x = a, *y = b;
  if (x->key != y->key)
    return x->key < y->key ? -1 : 1;
  return (x->c > y->c) - (x->c < y->c);
}

static double la_key(const gstate *s, size_t j, size_t k) {
  double c = cost(s->g, j, k);
  if (s->algo == ECEF_LA)
    return c;
  return c + s->g->T[k];
}

/* F_j of the lookahead variants, advancing row j's pointer past clusters
 * that left B (they never come back, so the pointer only moves forward). */
static double lookahead(gstate *s, size_t j) {
  if (s->algo != ECEF_LA && s->algo != ECEF_LAT_MIN && s->algo != ECEF_LAT_MAX)
    return 0;
  uint32_t *row = s->rows + j * s->k;
  while (s->ptr[j] < s->k && (s->inA[row[s->ptr[j]]] || row[s->ptr[j]] == j))
    s->ptr[j]++;
  if (s->ptr[j] >= s->k)
    return 0;
  return la_key(s, j, row[s->ptr[j]]);
}

static double sender_key(const gstate *s, size_t i, size_t j) {
  switch (s->algo) {
  case FEF: return s->g->L[i * s->k + j];
  case BOTTOMUP: return cost(s->g, i, j);
  default: return s->rt[i] + cost(s->g, i, j);
  }
}

static void recompute(gstate *s, size_t j) {
  s->best[j] = INFINITY;
  for (size_t i = 0; i < s->k; i++)
    if (s->inA[i]) {
      double v = sender_key(s, i, j);
      if (v < s->best[j]) {
        s->best[j] = v;
        s->arg[j] = i;
      }
    }
}

static void join(gstate *s, size_t a) {
  s->inA[a] = 1;
  for (size_t j = 0; j < s->k; j++)
    if (!s->inA[j]) {
      double v = sender_key(s, a, j);
      if (v < s->best[j] || (v == s->best[j] && a < s->arg[j])) {
        s->best[j] = v;
        s->arg[j] = a;
      }
    }
}

static void free_state(gstate *s) {
  free(s->inA);
  free(s->rt);
  free(s->best);
  free(s->arg);
  free(s->rows);
  free(s->ptr);
}

cairn_status cairn__plan_grid_run(const cairn__plan_grid *g, const char *algo, cairn__plan_schedule *out,
                                 cairn_error *err) {
  static const char *const names[] = {"flat", "FEF", "ECEF", "ECEF-LA", "ECEF-LAt", "ECEF-LAT", "BottomUp"};
  gstate s = {.g = g, .k = g->k, .algo = -1};
  for (int a = 0; a < 7; a++)
    if (strcmp(algo, names[a]) == 0)
      s.algo = a;
  if (s.algo < 0)
    return cairn__error_set(err, CAIRN_EINVAL, "unknown grid algorithm \"%s\"", algo);
  size_t k = g->k;
  cairn_status st = CAIRN_OK;
  s.inA = calloc(k, 1);
  s.rt = calloc(k, sizeof *s.rt);
  s.best = malloc(k * sizeof *s.best);
  s.arg = calloc(k, sizeof *s.arg);
  s.ptr = calloc(k, sizeof *s.ptr);
  int la = s.algo == ECEF_LA || s.algo == ECEF_LAT_MIN || s.algo == ECEF_LAT_MAX;
  if (la)
    s.rows = malloc(k * k * sizeof *s.rows);
  if (!s.inA || !s.rt || !s.best || !s.arg || !s.ptr || (la && !s.rows)) {
    free_state(&s);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning %zu clusters", k);
  }
  if (la) {
    rk *tmp = malloc(k * sizeof *tmp);
    if (!tmp) {
      free_state(&s);
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning %zu clusters", k);
    }
    for (size_t j = 0; j < k; j++) {
      for (size_t x = 0; x < k; x++) {
        double key = x == j ? 0 : la_key(&s, j, x);
        tmp[x] = (rk){s.algo == ECEF_LAT_MAX ? -key : key, (uint32_t)x};
      }
      qsort(tmp, k, sizeof *tmp, rk_asc);
      for (size_t x = 0; x < k; x++)
        s.rows[j * k + x] = tmp[x].c;
    }
    free(tmp);
  }
  for (size_t j = 0; j < k; j++)
    s.best[j] = INFINITY;
  join(&s, g->root);
  size_t next_flat = 0;
  for (size_t step = 1; step < k; step++) {
    size_t i = g->root, j = k;
    if (s.algo == FLAT) {
      while (s.inA[next_flat])
        next_flat++;
      j = next_flat;
    } else {
      double bestv = s.algo == BOTTOMUP ? -INFINITY : INFINITY;
      for (size_t c = 0; c < k; c++) {
        if (s.inA[c])
          continue;
        double v = s.best[c];
        if (s.algo == BOTTOMUP)
          v += g->T[c];
        else
          v += lookahead(&s, c);
        if (s.algo == BOTTOMUP ? v > bestv : v < bestv) {
          bestv = v;
          j = c;
        }
      }
      i = s.arg[j];
    }
    double start = s.rt[i], arrive = start + cost(g, i, j);
    cairn__plan_node from = {(int64_t)i, -1}, to = {(int64_t)j, -1};
    if (cairn__plan_schedule_add(out, 0, from, &to, 1, start, arrive)) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
      goto out;
    }
    s.rt[i] = start + g->g[i * k + j];
    s.rt[j] = arrive;
    join(&s, j);
    /* i is ready later now: receivers whose best sender was i look again */
    if (s.algo != FEF && s.algo != BOTTOMUP && s.algo != FLAT)
      for (size_t c = 0; c < k; c++)
        if (!s.inA[c] && s.arg[c] == i)
          recompute(&s, c);
  }
  for (size_t c = 0; c < k; c++) {
    cairn__plan_node n = {(int64_t)c, -1};
    if (cairn__plan_schedule_add(out, 0, n, &n, 1, s.rt[c], s.rt[c] + g->T[c])) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
      goto out;
    }
  }
out:
  free_state(&s);
  return st;
}

double cairn__plan_grid_lower_bound(const cairn__plan_grid *g) {
  size_t k = g->k;
  double *dist = malloc(k * sizeof *dist);
  uint8_t *done = calloc(k, 1);
  double lb = g->T[g->root];
  if (!dist || !done) {
    free(dist);
    free(done);
    return lb;
  }
  for (size_t i = 0; i < k; i++)
    dist[i] = INFINITY;
  dist[g->root] = 0;
  for (size_t it = 0; it < k; it++) {
    size_t u = k;
    for (size_t i = 0; i < k; i++)
      if (!done[i] && (u == k || dist[i] < dist[u]))
        u = i;
    done[u] = 1;
    for (size_t v = 0; v < k; v++)
      if (!done[v] && dist[u] + cost(g, u, v) < dist[v])
        dist[v] = dist[u] + cost(g, u, v);
  }
  double first = INFINITY;
  for (size_t j = 0; j < k; j++) {
    if (dist[j] + g->T[j] > lb)
      lb = dist[j] + g->T[j];
    if (j != g->root && g->g[g->root * k + j] < first)
      first = g->g[g->root * k + j];
  }
  if (k > 1 && first + g->T[g->root] > lb)
    lb = first + g->T[g->root];
  free(dist);
  free(done);
  return lb;
}
