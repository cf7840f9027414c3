/* dag_gen.c — the computation-dags of [Ros] §4.3.1 (Figure 8) in CSR form:
 * evolving 2-D mesh, reduction mesh, reduction tree, FFT; a random dag; and
 * relabelling. Each generator emits its edges in O(n) and builds the CSR dag
 * in O(n + m) (dag.h). */
#include "plan/dag_gen.h"

#include <stdlib.h>
#include <string.h>

static const char *const family_names[] = {"mesh", "rmesh", "tree", "fft"};

int cairn__gen_family_parse(const char *name, cairn__gen_family *f) {
  for (int i = 0; i < 4; i++)
    if (strcmp(name, family_names[i]) == 0) {
      *f = (cairn__gen_family)i;
      return 0;
    }
  return -1;
}

const char *cairn__gen_family_name(cairn__gen_family f) {
  return (unsigned)f < 4 ? family_names[f] : "?";
}

uint64_t cairn__rand64(uint64_t *state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

static uint64_t tri(uint64_t k) { return k * (k + 1) / 2; }

cairn_status cairn__gen_size(cairn__gen_family f, uint32_t N, uint32_t *n, cairn_error *err) {
  uint64_t count = 0;
  if (N < 1)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: N must be at least 1", cairn__gen_family_name(f));
  switch (f) {
  case CAIRN_GEN_MESH:
  case CAIRN_GEN_RMESH:
    count = N < 100000 ? tri(N) : UINT64_MAX;
    break;
  case CAIRN_GEN_TREE:
    count = N < 40 ? (2ull << N) - 1 : UINT64_MAX;
    break;
  case CAIRN_GEN_FFT:
    count = N < 40 ? ((uint64_t)N + 1) << N : UINT64_MAX;
    break;
  default:
    return cairn__error_set(err, CAIRN_EINVAL, "unknown dag family");
  }
  if (count > CAIRN_GEN_MAX_NODES)
    return cairn__error_set(err, CAIRN_EINVAL, "%s %u: more than %u nodes",
                           cairn__gen_family_name(f), N, CAIRN_GEN_MAX_NODES);
  *n = (uint32_t)count;
  return CAIRN_OK;
}

/* Index of mesh node <i,j> (diagonal d = i+j, then i). */
static uint32_t mesh_index(uint32_t i, uint32_t j) { return (uint32_t)(tri(i + j) + i); }

/* Index of reduction-mesh node <i,j> of L levels: diagonals from L-1 down. */
static uint32_t rmesh_index(uint32_t L, uint32_t i, uint32_t j) {
  return (uint32_t)(tri(L) - tri(i + j + 1) + i);
}

/* Largest d with tri(d) <= v. */
static uint32_t diag_of(uint64_t v) {
  uint64_t lo = 0, hi = 1;
  while (tri(hi) <= v)
    hi *= 2;
  while (hi - lo > 1) {
    uint64_t mid = (lo + hi) / 2;
    if (tri(mid) <= v)
      lo = mid;
    else
      hi = mid;
  }
  return (uint32_t)lo;
}

void cairn__gen_coords(cairn__gen_family f, uint32_t N, uint32_t v, uint32_t *a, uint32_t *b) {
  switch (f) {
  case CAIRN_GEN_MESH: {
    uint32_t d = diag_of(v);
    *a = v - (uint32_t)tri(d);
    *b = d - *a;
    return;
  }
  case CAIRN_GEN_RMESH: {
    /* rmesh_index(i,j) = tri(L) - tri(d+1) + i: invert through r = tri(L)-1-v. */
    uint64_t r = tri(N) - 1 - v;
    uint32_t d = diag_of(r); /* r = tri(d) + (d - i) */
    *a = d - (uint32_t)(r - tri(d));
    *b = d - *a;
    return;
  }
  case CAIRN_GEN_TREE: {
    uint32_t l = 0, off = 0;
    while (v >= off + (1u << (N - l))) {
      off += 1u << (N - l);
      l++;
    }
    *a = l;
    *b = v - off;
    return;
  }
  case CAIRN_GEN_FFT:
    *a = v >> N;
    *b = v & ((1u << N) - 1);
    return;
  }
  *a = *b = 0;
}

cairn__dag *cairn__gen_dag(cairn__gen_family f, uint32_t N, cairn_error *err) {
  uint32_t n;
  if (cairn__gen_size(f, N, &n, err) != CAIRN_OK)
    return NULL;
  cairn__edge *e = malloc(((size_t)n * 2 + 1) * sizeof *e);
  if (!e) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory generating %s %u", cairn__gen_family_name(f), N);
    return NULL;
  }
  uint64_t m = 0;
  switch (f) {
  case CAIRN_GEN_MESH:
    for (uint32_t d = 0; d < N; d++)
      for (uint32_t i = 0; i <= d; i++) {
        uint32_t j = d - i, v = mesh_index(i, j);
        if (i > 0)
          e[m++] = (cairn__edge){mesh_index(i - 1, j), v};
        if (j > 0)
          e[m++] = (cairn__edge){mesh_index(i, j - 1), v};
      }
    break;
  case CAIRN_GEN_RMESH:
    for (uint32_t d = 0; d + 1 < N; d++)
      for (uint32_t i = 0; i <= d; i++) {
        uint32_t j = d - i, v = rmesh_index(N, i, j);
        e[m++] = (cairn__edge){rmesh_index(N, i + 1, j), v};
        e[m++] = (cairn__edge){rmesh_index(N, i, j + 1), v};
      }
    break;
  case CAIRN_GEN_TREE: {
    uint32_t off = 0;
    for (uint32_t l = 1; l <= N; l++) {
      uint32_t below = off, width = 1u << (N - l);
      off += 1u << (N - l + 1);
      for (uint32_t i = 0; i < width; i++) {
        e[m++] = (cairn__edge){below + 2 * i, off + i};
        e[m++] = (cairn__edge){below + 2 * i + 1, off + i};
      }
    }
    break;
  }
  case CAIRN_GEN_FFT: {
    uint32_t w = 1u << N;
    for (uint32_t l = 1; l <= N; l++)
      for (uint32_t i = 0; i < w; i++) {
        e[m++] = (cairn__edge){(l - 1) * w + i, l * w + i};
        e[m++] = (cairn__edge){(l - 1) * w + (i ^ (1u << (l - 1))), l * w + i};
      }
    break;
  }
  }
  cairn__dag *d = cairn__dag_build(n, e, m, err);
  free(e);
  return d;
}

cairn__dag *cairn__gen_random(uint32_t n, uint32_t max_parents, uint32_t window, uint64_t seed,
                            cairn_error *err) {
  uint64_t st = seed, m = 0;
  cairn__edge *e = malloc(((size_t)n * max_parents + 1) * sizeof *e);
  if (!e) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory generating a random dag of %u nodes", n);
    return NULL;
  }
  for (uint32_t v = 1; v < n; v++) {
    uint32_t lo = v > window ? v - window : 0, span = v - lo;
    uint32_t k = (uint32_t)(cairn__rand64(&st) % ((uint64_t)max_parents + 1));
    if (k > span)
      k = span;
    uint64_t first = m;
    while (m - first < k) {
      uint32_t p = lo + (uint32_t)(cairn__rand64(&st) % span);
      int seen = 0;
      for (uint64_t q = first; q < m; q++)
        seen |= e[q].parent == p;
      if (!seen)
        e[m++] = (cairn__edge){p, v};
    }
  }
  cairn__dag *d = cairn__dag_build(n, e, m, err);
  free(e);
  return d;
}

cairn__dag *cairn__dag_relabel(const cairn__dag *d, const uint32_t *perm, cairn_error *err) {
  cairn__edge *e = malloc((d->m + 1) * sizeof *e);
  uint8_t *hit = calloc((size_t)d->n + 1, 1);
  cairn__dag *out = NULL;
  if (!e || !hit) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory relabelling a dag of %u nodes", d->n);
    goto done;
  }
  for (uint32_t v = 0; v < d->n; v++) {
    if (perm[v] >= d->n || hit[perm[v]]) {
      cairn__error_set(err, CAIRN_EINVAL, "relabel: not a permutation at %u", v);
      goto done;
    }
    hit[perm[v]] = 1;
  }
  uint64_t m = 0;
  for (uint32_t v = 0; v < d->n; v++)
    for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++)
      e[m++] = (cairn__edge){perm[v], perm[d->ch[i]]};
  out = cairn__dag_build(d->n, e, m, err);
done:
  free(e);
  free(hit);
  return out;
}
