/* plan_hnow.c — multiple multicast on a heterogeneous network of
 * workstations with non-blocking send and blocking receive ([WYL]: Wu,
 * Yeh, Liu, "Scheduling Multiple Multicast for Heterogeneous NOW with
 * Non-blocking Message-Passing").
 *
 * Model (§2, eqs. 1, 3, 4): sending m_k (length l) from i to j issued at
 * Avail_i keeps i busy S(i,l) (non-blocking send), the message reaches j's
 * buffer at Avail_i + S(i,l) + X(i,j)·l, and j, whose receive blocks, ends
 * the receive at max(arrival, Avail_j) + R(j,l). Only the source of m_k and
 * its destinations relay m_k (§3). A transfer in the plan starts when the
 * send starts and ends when the receive completes.
 *
 * Planners (each step sends one message to one more destination):
 *   FEF  §4.1  smallest T(i,j,l) = S + X·l + R over (k, i ∈ A_k, j ∈ B_k)
 *   ECF  §4.2  smallest CompleteTime (eq. 4) over all such triples
 *   WR   §4.3  receiver = least virtual time W (eqs. 5–6; ties: the fastest,
 *              i.e. least R(i, mean length), then index), then the source and
 *              sender of least CompleteTime; tasks appended to task lists
 *   WRP  §4.4  WR where a send may be placed in an idle gap of the sender
 *              before already scheduled receives (after its previous send
 *              and after it received the message, without moving a
 *              receive); receives are appended after the last operation
 * Heuristics, no approximation guarantee.
 *
 * Lower bound (§3.1, eq. 2): earliest-reach times by shortest paths over the
 * source and destinations of each message with edge cost T(a,b,l), then per
 * node the receive overheads in earliest-reach-first order.
 *
 * Complexity (n nodes, q = Σ|D_k| receptions): FEF O(q²); ECF O(q·Σ_k
 * |A_k||B_k|) ⊆ O(q·M·n²); WR O(q·(n + Σ_{k∈SR_i}|A_k|)), i.e. O(n²) for one
 * broadcast; WRP the same times the sender's operations scanned for a gap
 * (O(n³) worst case, ~O(n²) in practice); lower bound O(M·n²).
 *
 * Shared uplinks (an extension of [WYL]'s model, not the paper's; used when
 * the instance gives clusters, docs/planning.md): a transfer from i to j in
 * another cluster keeps i, the uplink out of i's cluster and the uplink
 * into j's busy from its start until the message has crossed, at start +
 * S(i,l) + X(i,j)·l (the sender's send is as slow as the uplink); it
 * starts when the three are free (WRP: the earliest common gap of i's
 * timeline and the two uplinks' after i's last send and its reception of
 * m_k), and j receives it as in §2, for R(j,l) after the crossing and its
 * own earlier operations. Transfers inside a cluster follow §2
 * unchanged. The cost: a cross transfer's timing O(1) (WR) or the three
 * timelines scanned until they agree, O(q) each pass and at most O(q)
 * passes (WRP). The lower bound adds the uplinks' load: per cluster and
 * direction, the sum over messages that must cross it of their cheapest
 * crossing, O(M·n²). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

enum { H_FEF, H_ECF, H_WR, H_WRP };

typedef struct ivl {
  double s, e;
} ivl;

typedef struct tl {
  ivl *v;
  size_t n, cap;
} tl;

typedef struct hs {
  const cairn__plan_hnow *h;
  size_t n, M;
  uint8_t *inA, *inB;  /* M*n */
  double *got;         /* M*n: when the node holds m_k */
  double *avail;       /* non-preemptive: next free time */
  double *W, *vt_got;  /* virtual times (WR, WRP) */
  double *last_send, *last_recv;
  tl *line;            /* WRP timelines */
  size_t *left;        /* per node: messages still to receive */
  /* shared uplinks, per cluster (NULL without clusters): next free time
   * out and in (WR), timelines out and in (WRP) */
  double *up_out, *up_in;
  tl *uline_out, *uline_in;
} hs;

static double S_(const hs *s, size_t i, double l) { return s->h->S0[i] + s->h->S1[i] * l; }
static double R_(const hs *s, size_t j, double l) { return s->h->R0[j] + s->h->R1[j] * l; }
static double X_(const hs *s, size_t i, size_t j) { return s->h->X[i * s->n + j]; }
static double L_(const hs *s, size_t k) { return s->h->msg[k].length; }

/* earliest start >= t0 of a free slot of length d in node i's timeline */
static double gap(const tl *t, double t0, double d) {
  double x = t0;
  for (size_t q = 0; q < t->n; q++) {
    if (t->v[q].e <= x)
      continue;
    if (x + d <= t->v[q].s)
      return x;
    x = t->v[q].e;
  }
  return x;
}

static int tl_insert(tl *t, double a, double b) {
  if (b <= a)
    return 0;
  if (t->n == t->cap) {
    size_t nc = t->cap ? 2 * t->cap : 8;
    ivl *p = realloc(t->v, nc * sizeof *p);
    if (!p)
      return -1;
    t->v = p;
    t->cap = nc;
  }
  size_t q = t->n;
  while (q > 0 && t->v[q - 1].s > a) {
    t->v[q] = t->v[q - 1];
    q--;
  }
  t->v[q] = (ivl){a, b};
  t->n++;
  return 0;
}

/* 1 when a transfer from i to j crosses uplinks (the extension). */
static int cross(const hs *s, size_t i, size_t j) {
  return s->h->cluster && s->h->cluster[i] != s->h->cluster[j];
}

/* Earliest start >= t0 of a slot of length d free in the three timelines
 * (each pass moves x forward past an interval, so at most their length
 * sum of passes). */
static double gap3(const tl *a, const tl *b, const tl *c, double t0, double d) {
  double x = t0;
  for (;;) {
    double y = gap(c, gap(b, gap(a, x, d), d), d);
    if (y == x)
      return x;
    x = y;
  }
}

/* A cross transfer's start and end (the extension): it starts when its
 * sender holds m_k and is free and both uplinks are free, keeps them busy
 * until the message has crossed, and the receiver then receives as in §2
 * (after its earlier operations, for R). */
static void cross_timing(const hs *s, int algo, size_t k, size_t i, size_t j, double *start,
                         double *done) {
  double l = L_(s, k), busy = S_(s, i, l) + X_(s, i, j) * l;
  size_t ci = s->h->cluster[i], cj = s->h->cluster[j];
  if (algo == H_WRP) {
    double t0 = fmax(s->last_send[i], s->got[k * s->n + i]);
    *start = gap3(&s->line[i], &s->uline_out[ci], &s->uline_in[cj], t0, busy);
    *done = fmax(*start + busy, fmax(s->last_send[j], s->last_recv[j])) + R_(s, j, l);
  } else {
    *start = fmax(s->avail[i], fmax(s->up_out[ci], s->up_in[cj]));
    *done = fmax(*start + busy, s->avail[j]) + R_(s, j, l);
  }
}

/* Start of a send of m_k by i and the receive completion at j. */
static void timing(const hs *s, int algo, size_t k, size_t i, size_t j, double *start, double *done) {
  double l = L_(s, k);
  if (cross(s, i, j))
    cross_timing(s, algo, k, i, j, start, done);
  else if (algo == H_WRP) {
    double t0 = fmax(s->last_send[i], s->got[k * s->n + i]);
    *start = gap(&s->line[i], t0, S_(s, i, l));
    double arrive = *start + S_(s, i, l) + X_(s, i, j) * l;
    *done = fmax(arrive, fmax(s->last_send[j], s->last_recv[j])) + R_(s, j, l);
  } else {
    *start = s->avail[i];
    double arrive = *start + S_(s, i, l) + X_(s, i, j) * l;
    *done = fmax(arrive, s->avail[j]) + R_(s, j, l);
  }
}

static cairn_status commit(hs *s, int algo, size_t k, size_t i, size_t j, cairn__plan_schedule *out,
                           cairn_error *err) {
  double l = L_(s, k), start, done;
  timing(s, algo, k, i, j, &start, &done);
  cairn__plan_node from = {(int64_t)i, -1}, to = {(int64_t)j, -1};
  if (cairn__plan_schedule_add(out, k, from, &to, 1, start, done))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  if (cross(s, i, j)) {
    double crossed = start + S_(s, i, l) + X_(s, i, j) * l;
    size_t ci = s->h->cluster[i], cj = s->h->cluster[j];
    if (algo == H_WRP) {
      if (tl_insert(&s->line[i], start, crossed) || tl_insert(&s->line[j], done - R_(s, j, l), done) ||
          tl_insert(&s->uline_out[ci], start, crossed) || tl_insert(&s->uline_in[cj], start, crossed))
        return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
      s->last_send[i] = crossed;
      s->last_recv[j] = done;
    } else {
      s->avail[i] = crossed;
      s->avail[j] = done;
      s->up_out[ci] = s->up_in[cj] = crossed;
    }
  } else if (algo == H_WRP) {
    if (tl_insert(&s->line[i], start, start + S_(s, i, l)) || tl_insert(&s->line[j], done - R_(s, j, l), done))
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    s->last_send[i] = start + S_(s, i, l);
    s->last_recv[j] = done;
  } else {
    s->avail[i] = start + S_(s, i, l);
    s->avail[j] = done;
  }
  /* virtual time, eqs. (5)-(6) */
  double base = s->h->msg[k].source == i ? 0 : s->vt_got[k * s->n + i];
  double ar = base + S_(s, i, l) + X_(s, i, j) * l;
  s->W[j] = fmax(s->W[j], ar) + R_(s, j, l);
  s->vt_got[k * s->n + j] = s->W[j];
  s->got[k * s->n + j] = done;
  s->inA[k * s->n + j] = 1;
  s->inB[k * s->n + j] = 0;
  s->left[j]--;
  return CAIRN_OK;
}

static void hs_free(hs *s) {
  free(s->inA);
  free(s->inB);
  free(s->got);
  free(s->avail);
  free(s->W);
  free(s->vt_got);
  free(s->last_send);
  free(s->last_recv);
  if (s->line)
    for (size_t i = 0; i < s->n; i++)
      free(s->line[i].v);
  free(s->line);
  free(s->left);
  free(s->up_out);
  free(s->up_in);
  for (size_t c = 0; c < (s->h->cluster ? s->h->nclusters : 0); c++) {
    if (s->uline_out)
      free(s->uline_out[c].v);
    if (s->uline_in)
      free(s->uline_in[c].v);
  }
  free(s->uline_out);
  free(s->uline_in);
}

cairn_status cairn__plan_hnow_run(const cairn__plan_hnow *h, const char *algo, cairn__plan_schedule *out,
                                 cairn_error *err) {
  static const char *const names[] = {"FEF", "ECF", "WR", "WRP"};
  int a = -1;
  for (int x = 0; x < 4; x++)
    if (strcmp(algo, names[x]) == 0)
      a = x;
  if (a < 0)
    return cairn__error_set(err, CAIRN_EINVAL, "unknown hnow algorithm \"%s\"", algo);
  hs s = {.h = h, .n = h->n, .M = h->nmsg};
  size_t n = h->n, M = h->nmsg, nm = (M ? M : 1) * n;
  s.inA = calloc(nm, 1);
  s.inB = calloc(nm, 1);
  s.got = calloc(nm, sizeof *s.got);
  s.vt_got = calloc(nm, sizeof *s.vt_got);
  s.avail = calloc(n, sizeof *s.avail);
  s.W = calloc(n, sizeof *s.W);
  s.last_send = calloc(n, sizeof *s.last_send);
  s.last_recv = calloc(n, sizeof *s.last_recv);
  s.line = calloc(n, sizeof *s.line);
  s.left = calloc(n, sizeof *s.left);
  size_t nc = h->cluster ? h->nclusters : 0;
  if (nc) {
    s.up_out = calloc(nc, sizeof *s.up_out);
    s.up_in = calloc(nc, sizeof *s.up_in);
    s.uline_out = calloc(nc, sizeof *s.uline_out);
    s.uline_in = calloc(nc, sizeof *s.uline_in);
  }
  double *bw = NULL;
  size_t *bs = NULL;
  cairn_status st = CAIRN_OK;
  if (!s.inA || !s.inB || !s.got || !s.vt_got || !s.avail || !s.W || !s.last_send || !s.last_recv || !s.line ||
      !s.left || (nc && (!s.up_out || !s.up_in || !s.uline_out || !s.uline_in))) {
    hs_free(&s);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
  }
  size_t q = 0;
  double meanlen = 0;
  for (size_t k = 0; k < M; k++) {
    s.inA[k * n + h->msg[k].source] = 1;
    for (size_t x = 0; x < h->msg[k].ndests; x++) {
      s.inB[k * n + h->msg[k].dests[x]] = 1;
      s.left[h->msg[k].dests[x]]++;
      q++;
    }
    meanlen += h->msg[k].length / (double)M;
  }
  if (a == H_FEF) {
    /* best (least weight) sender of each (k, j in B_k); weights are static */
    bw = malloc(nm * sizeof *bw);
    bs = malloc(nm * sizeof *bs);
    if (!bw || !bs) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
      goto out;
    }
    for (size_t x = 0; x < nm; x++)
      bw[x] = INFINITY;
    for (size_t k = 0; k < M; k++) {
      size_t i = h->msg[k].source;
      for (size_t j = 0; j < n; j++)
        if (s.inB[k * n + j]) {
          double l = L_(&s, k);
          bw[k * n + j] = S_(&s, i, l) + X_(&s, i, j) * l + R_(&s, j, l);
          bs[k * n + j] = i;
        }
    }
  }
  for (size_t step = 0; step < q; step++) {
    size_t bk = 0, bi = 0, bj = 0;
    double best = INFINITY;
    if (a == H_FEF) {
      for (size_t k = 0; k < M; k++)
        for (size_t j = 0; j < n; j++)
          if (s.inB[k * n + j] && bw[k * n + j] < best) {
            best = bw[k * n + j];
            bk = k;
            bj = j;
            bi = bs[k * n + j];
          }
    } else if (a == H_ECF) {
      for (size_t k = 0; k < M; k++)
        for (size_t i = 0; i < n; i++) {
          if (!s.inA[k * n + i])
            continue;
          for (size_t j = 0; j < n; j++) {
            if (!s.inB[k * n + j])
              continue;
            double st0, done;
            timing(&s, a, k, i, j, &st0, &done);
            if (done < best) {
              best = done;
              bk = k;
              bi = i;
              bj = j;
            }
          }
        }
    } else {
      /* Step 1: the receiver with the least completed work */
      size_t r = n;
      for (size_t j = 0; j < n; j++) {
        if (!s.left[j])
          continue;
        if (r == n || s.W[j] < s.W[r] ||
            (s.W[j] == s.W[r] && R_(&s, j, meanlen) < R_(&s, r, meanlen)))
          r = j;
      }
      bj = r;
      /* Step 2: source and sender of the earliest completion */
      for (size_t k = 0; k < M; k++) {
        if (!s.inB[k * n + r])
          continue;
        for (size_t i = 0; i < n; i++) {
          if (!s.inA[k * n + i])
            continue;
          double st0, done;
          timing(&s, a, k, i, r, &st0, &done);
          if (done < best) {
            best = done;
            bk = k;
            bi = i;
          }
        }
      }
    }
    st = commit(&s, a, bk, bi, bj, out, err);
    if (st != CAIRN_OK)
      goto out;
    if (a == H_FEF) {
      double l = L_(&s, bk);
      for (size_t j = 0; j < n; j++)
        if (s.inB[bk * n + j]) {
          double w = S_(&s, bj, l) + X_(&s, bj, j) * l + R_(&s, j, l);
          if (w < bw[bk * n + j]) {
            bw[bk * n + j] = w;
            bs[bk * n + j] = bj;
          }
        }
    }
  }
out:
  free(bw);
  free(bs);
  hs_free(&s);
  return st;
}

typedef struct rr {
  double reach, R;
} rr;

static int rr_cmp(const void *a, const void *b) {
  const rr *x = a, *y = b;
  return (x->reach > y->reach) - (x->reach < y->reach);
}

/* The cheapest crossing of m_k from a node of `from` (1 when in the set)
 * to a destination of m_k in `to` (the extension); INFINITY when none. */
static double cheapest(const cairn__plan_hnow *h, size_t k, const uint8_t *from, const uint8_t *to) {
  const cairn__plan_hmsg *g = &h->msg[k];
  double best = INFINITY, l = g->length;
  for (size_t a = 0; a <= g->ndests; a++) {
    size_t i = a < g->ndests ? g->dests[a] : g->source; /* only A_k ∪ B_k relay m_k */
    for (size_t b = 0; b < g->ndests && from[i]; b++) {
      size_t j = g->dests[b];
      if (to[j])
        best = fmin(best, h->S0[i] + h->S1[i] * l + h->X[i * h->n + j] * l);
    }
  }
  return best;
}

/* The uplinks' load (the extension): every message with a destination in
 * cluster c and its source outside crosses into c at least once, and one
 * with its source in c and a destination outside crosses out of it; each
 * direction carries one crossing at a time. O(M·n²) per cluster. */
static double uplink_bound(const cairn__plan_hnow *h) {
  size_t n = h->n;
  uint8_t *in = malloc(n ? n : 1), *out = malloc(n ? n : 1);
  double lb = 0;
  for (size_t c = 0; in && out && c < h->nclusters; c++) {
    double load_in = 0, load_out = 0;
    for (size_t i = 0; i < n; i++) {
      in[i] = h->cluster[i] == c;
      out[i] = !in[i];
    }
    for (size_t k = 0; k < h->nmsg; k++) {
      double x = in[h->msg[k].source] ? cheapest(h, k, in, out) : cheapest(h, k, out, in);
      if (isfinite(x))
        *(in[h->msg[k].source] ? &load_out : &load_in) += x;
    }
    lb = fmax(lb, fmax(load_in, load_out));
  }
  free(in);
  free(out);
  return lb;
}

double cairn__plan_hnow_lower_bound(const cairn__plan_hnow *h) {
  size_t n = h->n, M = h->nmsg;
  double lb = 0;
  double *reach = malloc((M ? M : 1) * n * sizeof *reach);
  uint8_t *member = malloc(n), *done = malloc(n);
  rr *list = malloc((M ? M : 1) * sizeof *list);
  if (!reach || !member || !done || !list)
    goto out;
  for (size_t k = 0; k < M; k++) {
    const cairn__plan_hmsg *g = &h->msg[k];
    double l = g->length, *d = reach + k * n;
    memset(member, 0, n);
    memset(done, 0, n);
    member[g->source] = 1;
    for (size_t x = 0; x < g->ndests; x++)
      member[g->dests[x]] = 1;
    for (size_t i = 0; i < n; i++)
      d[i] = INFINITY;
    d[g->source] = 0;
    for (;;) {
      size_t u = n;
      for (size_t i = 0; i < n; i++)
        if (member[i] && !done[i] && isfinite(d[i]) && (u == n || d[i] < d[u]))
          u = i;
      if (u == n)
        break;
      done[u] = 1;
      for (size_t v = 0; v < n; v++) {
        if (!member[v] || done[v])
          continue;
        double c = d[u] + h->S0[u] + h->S1[u] * l + h->X[u * n + v] * l + h->R0[v] + h->R1[v] * l;
        if (c < d[v])
          d[v] = c;
      }
    }
  }
  for (size_t i = 0; i < n; i++) {
    size_t c = 0;
    for (size_t k = 0; k < M; k++)
      for (size_t x = 0; x < h->msg[k].ndests; x++)
        if (h->msg[k].dests[x] == i)
          list[c++] = (rr){reach[k * n + i], h->R0[i] + h->R1[i] * h->msg[k].length};
    qsort(list, c, sizeof *list, rr_cmp);
    double tr = 0;
    for (size_t x = 0; x < c; x++)
      tr = x == 0 ? list[x].reach : fmax(tr + list[x].R, list[x].reach);
    if (c && tr > lb)
      lb = tr;
  }
out:
  free(reach);
  free(member);
  free(done);
  free(list);
  return h->cluster ? fmax(lb, uplink_bound(h)) : lb;
}
