/* dag_gen.h — generators for the computation-dags of [Ros] §4.3.1
 * (Figure 8): the evolving 2-D mesh truncated to L levels, the reduction mesh,
 * the binary reduction tree and the FFT dag; plus a random dag for tests and
 * benchmarks, and relabelling (a permutation of the node numbers).
 *
 * Parameter N and numbering, per family (a node's coordinates (a,b)):
 *   mesh  N = L levels: nodes <i,j> with i+j < L, arcs <i,j> -> <i+1,j> and
 *         <i,j> -> <i,j+1>; n = L(L+1)/2; numbered diagonal by diagonal.
 *   rmesh N = L levels: nodes <i,j> with i+j < L, arcs <i+1,j> -> <i,j> and
 *         <i,j+1> -> <i,j>: L sources on the diagonal i+j = L-1, one sink
 *         <0,0>; n = L(L+1)/2; numbered from the sources.
 *   tree  N = k: 2^k leaves (sources), root the sink; node (l,i) at level l
 *         (0 = leaves) has parents (l-1,2i) and (l-1,2i+1); n = 2^(k+1) - 1.
 *   fft   N = k: 2^k inputs, k+1 levels; node (l,i), l >= 1, has parents
 *         (l-1,i) and (l-1,i XOR 2^(l-1)) (butterfly partners share both
 *         children); n = (k+1) 2^k.
 * Every generator is O(n) time; the dag takes 8(n+1) + 8m bytes (dag.h).
 */
#ifndef CAIRN_DAG_GEN_H
#define CAIRN_DAG_GEN_H

#include <stdint.h>

#include "common/error.h"
#include "plan/dag.h"

typedef enum cairn__gen_family {
  CAIRN_GEN_MESH,
  CAIRN_GEN_RMESH,
  CAIRN_GEN_TREE,
  CAIRN_GEN_FFT
} cairn__gen_family;

/* Largest node count a generator produces. */
#define CAIRN_GEN_MAX_NODES (1u << 28)

/* "mesh", "rmesh", "tree", "fft" -> family; 0 on success, -1 if unknown. */
int cairn__gen_family_parse(const char *name, cairn__gen_family *f);
const char *cairn__gen_family_name(cairn__gen_family f);

/* Node count of family f with parameter N into *n. CAIRN_EINVAL if N is out
 * of range (N < 1, or more than CAIRN_GEN_MAX_NODES nodes). */
cairn_status cairn__gen_size(cairn__gen_family f, uint32_t N, uint32_t *n, cairn_error *err);

/* Builds family f with parameter N; NULL (err set) on a bad N or no memory.
 * The caller frees with cairn__dag_free. */
cairn__dag *cairn__gen_dag(cairn__gen_family f, uint32_t N, cairn_error *err);

/* Coordinates (a,b) of node v of family f with parameter N: <i,j> for the
 * meshes, (level, index) for tree and fft. O(1). */
void cairn__gen_coords(cairn__gen_family f, uint32_t N, uint32_t v, uint32_t *a, uint32_t *b);

/* A random dag on n nodes, numbered in a topological order: node v draws a
 * number of parents uniformly in 0..max_parents and takes them uniformly among
 * the nodes v-window .. v-1 (fewer if that range is smaller; no repeats).
 * Deterministic in seed. O(n * max_parents^2). */
cairn__dag *cairn__gen_random(uint32_t n, uint32_t max_parents, uint32_t window, uint64_t seed,
                            cairn_error *err);

/* The dag d with node v renamed perm[v] (perm a permutation of 0..n-1); the
 * caller frees it. NULL on no memory or if perm is not a permutation. O(n+m). */
cairn__dag *cairn__dag_relabel(const cairn__dag *d, const uint32_t *perm, cairn_error *err);

/* splitmix64 step: advances *state and returns 64 random bits. */
uint64_t cairn__rand64(uint64_t *state);

#endif
