/* plan_postal.c — Interleaved LCF in the postal model ([KKW] §6.2).
 *
 * Model (§6): a sender is busy for one unit per transfer; a local message
 * arrives 1 unit after it is sent, an inter-cluster one C units after; the
 * receiver is busy the last unit. Every node that holds the message
 * alternates, one unit each, between a local step (send to a member of its
 * own cluster that has nothing yet) and a global step (send to member 0 of the
 * largest cluster not yet sent a copy), starting with a local step. When the
 * step it is due has no target it takes the other one; a node with neither
 * target left stops.
 *
 * Guarantee: makespan ≤ 2·OPT_S, where OPT_S is the best makespan among the
 * schedules that use the minimum number (k − 1) of inter-cluster transfers
 * (Theorem 6.4). Complexity: O(N + k log k) time, one step per transfer. */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

typedef struct actor {
  uint32_t c;
  int64_t m;
  int pref; /* 0: local step due, 1: global step due */
} actor;

typedef struct pending {
  int64_t t;
  uint32_t c;
} pending;

typedef struct ksz {
  int64_t n;
  uint32_t c;
} ksz;

static int ksz_cmp(const void *a, const void *b) {
  const ksz *x = a, *y = b;
  if (x->n != y->n)
    return x->n > y->n ? -1 : 1;
  return (x->c > y->c) - (x->c < y->c);
}

static int grow(actor **v, size_t *cap, size_t need) {
  if (need <= *cap)
    return 0;
  size_t nc = *cap ? *cap : 64;
  while (nc < need)
    nc *= 2;
  actor *p = realloc(*v, nc * sizeof *p);
  if (!p)
    return -1;
  *v = p;
  *cap = nc;
  return 0;
}

cairn_status cairn__bcast_interleaved_lcf(const cairn__plan_clusters *cl, cairn__plan_schedule *out,
                                         cairn_error *err) {
  size_t k = cl->k;
  cairn_status st = CAIRN_OK;
  if (cl->members)
    return cairn__error_set(err, CAIRN_EINVAL, "interleaved LCF is a broadcast: members not supported");
  ksz *order = malloc(k * sizeof *order);
  int64_t *next_member = calloc(k, sizeof *next_member);
  pending *arr = malloc(k * sizeof *arr);
  actor *cur = NULL, *nxt = NULL;
  size_t ccap = 0, ncap = 0, ncur = 0, nnxt = 0;
  if (!order || !next_member || !arr) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    goto out;
  }
  size_t norder = 0;
  for (size_t i = 0; i < k; i++)
    if (i != cl->source)
      order[norder++] = (ksz){cl->size[i], (uint32_t)i};
  qsort(order, norder, sizeof *order, ksz_cmp);
  size_t next_cluster = 0, arr_head = 0, arr_tail = 0;
  next_member[cl->source] = 1;
  if (grow(&cur, &ccap, 1)) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    goto out;
  }
  cur[ncur++] = (actor){(uint32_t)cl->source, 0, 0};
  for (int64_t t = 0; ncur > 0 || arr_head < arr_tail; t++) {
    /* global arrivals at t join the actors */
    while (arr_head < arr_tail && arr[arr_head].t <= t) {
      if (grow(&cur, &ccap, ncur + 1)) {
        st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
        goto out;
      }
      cur[ncur++] = (actor){arr[arr_head].c, 0, 0};
      arr_head++;
    }
    nnxt = 0;
    for (size_t a = 0; a < ncur; a++) {
      actor p = cur[a];
      int local_ok = next_member[p.c] < cl->size[p.c];
      int global_ok = next_cluster < norder;
      int act; /* 0 local, 1 global */
      if (p.pref == 0)
        act = local_ok ? 0 : (global_ok ? 1 : -1);
      else
        act = global_ok ? 1 : (local_ok ? 0 : -1);
      if (act < 0)
        continue; /* nothing left for this node, ever */
      if (grow(&nxt, &ncap, nnxt + 2)) {
        st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
        goto out;
      }
      cairn__plan_node from = {p.c, p.m}, to;
      double end;
      if (act == 0) {
        int64_t m = next_member[p.c]++;
        to = (cairn__plan_node){p.c, m};
        end = (double)t + 1;
        nxt[nnxt++] = (actor){p.c, m, 0};
      } else {
        uint32_t d = order[next_cluster++].c;
        next_member[d] = 1;
        to = (cairn__plan_node){d, 0};
        end = (double)(t + cl->C);
        arr[arr_tail++] = (pending){t + cl->C, d};
      }
      if (cairn__plan_schedule_add(out, 0, from, &to, 1, (double)t, end)) {
        st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
        goto out;
      }
      nxt[nnxt++] = (actor){p.c, p.m, act == 0 ? 1 : 0};
    }
    actor *tmp = cur;
    cur = nxt;
    nxt = tmp;
    size_t tc = ccap;
    ccap = ncap;
    ncap = tc;
    ncur = nnxt;
  }
out:
  free(order);
  free(next_member);
  free(arr);
  free(cur);
  free(nxt);
  return st;
}
