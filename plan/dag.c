/* dag.c — CSR task graph: construction and cycle detection (Kahn's algorithm). */
#include "plan/dag.h"

#include <stdlib.h>
#include <string.h>

void cairn__dag_free(cairn__dag *d) {
  if (!d)
    return;
  free(d->par_off);
  free(d->par);
  free(d->ch_off);
  free(d->ch);
  free(d);
}

static int cmp_u32(const void *a, const void *b) {
  uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
  return (x > y) - (x < y);
}

cairn__dag *cairn__dag_build(uint32_t n, const cairn__edge *edges, uint64_t m, cairn_error *err) {
  cairn__dag *d = calloc(1, sizeof *d);
  if (!d)
    goto nomem;
  d->n = n;
  d->m = m;
  d->par_off = calloc((size_t)n + 1, sizeof(uint32_t));
  d->ch_off = calloc((size_t)n + 1, sizeof(uint32_t));
  d->par = malloc((m ? m : 1) * sizeof(uint32_t));
  d->ch = malloc((m ? m : 1) * sizeof(uint32_t));
  if (!d->par_off || !d->ch_off || !d->par || !d->ch)
    goto nomem;
  if (m > UINT32_MAX) {
    cairn__error_set(err, CAIRN_EINVAL, "too many edges (%llu)", (unsigned long long)m);
    goto fail;
  }
  for (uint64_t i = 0; i < m; i++) {
    if (edges[i].parent >= n || edges[i].child >= n) {
      cairn__error_set(err, CAIRN_EINVAL, "edge %llu names node outside 0..%u",
                      (unsigned long long)i, n ? n - 1 : 0);
      goto fail;
    }
    d->par_off[edges[i].child + 1]++;
    d->ch_off[edges[i].parent + 1]++;
  }
  for (uint32_t v = 0; v < n; v++) {
    d->par_off[v + 1] += d->par_off[v];
    d->ch_off[v + 1] += d->ch_off[v];
  }
  {
    uint32_t *pfill = malloc(((size_t)n + 1) * sizeof(uint32_t));
    uint32_t *cfill = malloc(((size_t)n + 1) * sizeof(uint32_t));
    if (!pfill || !cfill) {
      free(pfill);
      free(cfill);
      goto nomem;
    }
    memcpy(pfill, d->par_off, ((size_t)n + 1) * sizeof(uint32_t));
    memcpy(cfill, d->ch_off, ((size_t)n + 1) * sizeof(uint32_t));
    for (uint64_t i = 0; i < m; i++) {
      d->par[pfill[edges[i].child]++] = edges[i].parent;
      d->ch[cfill[edges[i].parent]++] = edges[i].child;
    }
    free(pfill);
    free(cfill);
  }
  for (uint32_t v = 0; v < n; v++) {
    uint32_t *p = d->par + d->par_off[v];
    uint32_t k = cairn__dag_nparents(d, v);
    qsort(p, k, sizeof *p, cmp_u32);
    for (uint32_t i = 1; i < k; i++)
      if (p[i] == p[i - 1]) {
        cairn__error_set(err, CAIRN_EINVAL, "duplicate edge %u -> %u", p[i], v);
        goto fail;
      }
    qsort(d->ch + d->ch_off[v], cairn__dag_nchildren(d, v), sizeof(uint32_t), cmp_u32);
  }
  return d;
nomem:
  cairn__error_set(err, CAIRN_ENOMEM, "out of memory building a dag of %u nodes", n);
fail:
  cairn__dag_free(d);
  return NULL;
}

int cairn__dag_topo_order(const cairn__dag *d, uint32_t *order, uint32_t *on_cycle) {
  uint32_t n = d->n, head = 0, tail = 0;
  uint32_t *indeg = malloc(((size_t)n + 1) * sizeof(uint32_t));
  if (!indeg)
    return -2;
  for (uint32_t v = 0; v < n; v++) {
    indeg[v] = cairn__dag_nparents(d, v);
    if (indeg[v] == 0)
      order[tail++] = v;
  }
  while (head < tail) {
    uint32_t v = order[head++];
    for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++)
      if (--indeg[d->ch[i]] == 0)
        order[tail++] = d->ch[i];
  }
  if (tail == n) {
    free(indeg);
    return 0;
  }
  /* Every remaining node has a remaining parent; walking remaining parents
   * must revisit a node within n steps, and that node lies on a cycle. */
  uint32_t v = 0;
  while (indeg[v] == 0)
    v++;
  for (uint32_t step = 0; step < n; step++) {
    for (uint32_t i = d->par_off[v]; i < d->par_off[v + 1]; i++)
      if (indeg[d->par[i]] > 0) {
        v = d->par[i];
        break;
      }
  }
  if (on_cycle)
    *on_cycle = v;
  free(indeg);
  return -1;
}

int cairn__dag_levels(const cairn__dag *d, uint32_t *depth, uint32_t *height) {
  uint32_t n = d->n;
  uint32_t *order = malloc(((size_t)n + 1) * sizeof(uint32_t));
  if (!order)
    return -2;
  int rc = cairn__dag_topo_order(d, order, NULL);
  if (rc != 0) {
    free(order);
    return rc;
  }
  if (depth)
    for (uint32_t k = 0; k < n; k++) {
      uint32_t v = order[k], best = 0;
      for (uint32_t i = d->par_off[v]; i < d->par_off[v + 1]; i++)
        if (depth[d->par[i]] + 1 > best)
          best = depth[d->par[i]] + 1;
      depth[v] = best;
    }
  if (height)
    for (uint32_t k = n; k-- > 0;) {
      uint32_t v = order[k], best = 0;
      for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++)
        if (height[d->ch[i]] + 1 > best)
          best = height[d->ch[i]] + 1;
      height[v] = best;
    }
  free(order);
  return 0;
}
