/* dag.h — a task graph in compact (CSR) form: parents and children of every node.
 *
 * Nodes are 0..n-1. Building from an edge list costs O(n + m) time and
 * 8(n+1) + 8m bytes; validation (cycle detection) is O(n + m).
 */
#ifndef CAIRN_DAG_H
#define CAIRN_DAG_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef struct cairn__dag {
  uint32_t n;         /* nodes */
  uint64_t m;         /* edges */
  uint32_t *par_off;  /* n+1 offsets into par */
  uint32_t *par;      /* parents of v: par[par_off[v] .. par_off[v+1]) */
  uint32_t *ch_off;   /* n+1 offsets into ch */
  uint32_t *ch;       /* children of v: ch[ch_off[v] .. ch_off[v+1]) */
} cairn__dag;

typedef struct cairn__edge {
  uint32_t parent, child;
} cairn__edge;

/* Builds a dag of n nodes from m edges (parent -> child). Rejects (NULL, err
 * set to CAIRN_EINVAL) out-of-range nodes and duplicate edges; does not check
 * for cycles (see cairn_dag_find_cycle). The caller frees with cairn__dag_free. */
cairn__dag *cairn__dag_build(uint32_t n, const cairn__edge *edges, uint64_t m, cairn_error *err);
void cairn__dag_free(cairn__dag *d);

static inline uint32_t cairn__dag_nparents(const cairn__dag *d, uint32_t v) {
  return d->par_off[v + 1] - d->par_off[v];
}
static inline uint32_t cairn__dag_nchildren(const cairn__dag *d, uint32_t v) {
  return d->ch_off[v + 1] - d->ch_off[v];
}

/* Writes a topological order into order[n] (Kahn, smallest index first among
 * ready nodes is NOT promised) and returns 0; returns -1 if the dag has a
 * cycle, and then sets *on_cycle (if not NULL) to a node that lies on one. */
int cairn__dag_topo_order(const cairn__dag *d, uint32_t *order, uint32_t *on_cycle);

/* Static levels used by schedulers: depth[v] = edges on the longest path from
 * a source to v, height[v] = edges on the longest path from v to a sink
 * (either array may be NULL). Returns 0; -1 on a cycle; -2 out of memory.
 * O(n + m) time, 4n bytes of scratch. */
int cairn__dag_levels(const cairn__dag *d, uint32_t *depth, uint32_t *height);

#endif
