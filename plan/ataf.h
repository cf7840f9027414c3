/* ataf.h — accountable task-allocation functions (ATAFs): [Ros] (Rosenberg,
 * "Changing Challenges for Collaborative Algorithmics") §4.3.2, Procedure
 * ATAF-Constructor (Figure 9) and the sample ATAFs of Figure 10.
 *
 * A volunteer gets a row x >= 1; its t-th allocation (t >= 1) gets the index
 *
 *     phi(x, t) = B_x + (t-1) * S_x.
 *
 * Guarantee: every ATAF here is a bijection N+ x N+ -> N+, so the index alone
 * names the volunteer and the allocation (phi^-1), and a volunteer's indices
 * form the arithmetic progression B_x, B_x + S_x, B_x + 2 S_x, ...
 *
 * Construction: rows are split into groups g = 0, 1, 2, ... of 2^kappa(g)
 * consecutive rows. Group g owns the indices with exactly g trailing zero bits
 * (signature 2^g); its i-th row (1 <= i <= 2^kappa(g)) owns the odd numbers
 * congruent to 2i-1 modulo 2^(kappa(g)+1):
 *
 *     B_x = 2^g * (2i - 1),   S_x = 2^(g + kappa(g) + 1).
 *
 * The inverse reads g from the trailing zero bits of the index, then i and t
 * from the odd part.
 *
 * Named families (Figure 10, g = group, i = position in the group):
 *   phi1      phi<1>(x,y) = 2^(x-1) [2(y-1) + ((2x-1) mod 2)]           kappa(g) = 0
 *   phi3      phi<3>(x,y) = 2^floor((x-1)/4) [8(y-1) + ((2x-1) mod 8)]  kappa(g) = 2
 *   phisharp  phi#(x,y)   = 2^L [2^(1+L)(y-1) + ((2x+1) mod 2^(1+L))], L = floor(log2 x),
 *                                                                       kappa(g) = g
 *
 * Indices are 63-bit (what SQLite stores): 1 <= index <= CAIRN_ATAF_MAX_INDEX.
 * A result that does not fit is CAIRN_EOVERFLOW with a message, never a
 * silent wrap. Rows and allocation numbers are uint64.
 *
 * Limits (index <= 2^63-1; "prefix" = every row 1..X has phi(row, 1) in range,
 * and phi(X+1, 1) is not):
 *
 *   family    prefix X (t=1)   largest row with t=1   max t, row 1   row 1000   row 10^6
 *   phi1      63               63                     2^62           none       none
 *   phi3      246              249                    2^60           none       none
 *   phisharp  5368709119       2^62                   2^62           2^44       2^24
 *             (2^32+2^30-1)
 *
 * "none": phi(x, 1) itself exceeds 2^63-1. Beyond the prefix some rows fit
 * again: phi3 row 249 (but not 247, 248, 250), phisharp the rows
 * 2^g .. 2^g + 2^(62-g) - 1 of each group 33 <= g <= 62.
 *
 * Complexity: named families O(1) per call (forward, inverse, base, stride);
 * constructed families O(log G) forward (binary search over the G <= 63
 * groups) and O(1) inverse; building a family is O(G). No allocation, no I/O.
 */
#ifndef CAIRN_ATAF_H
#define CAIRN_ATAF_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum cairn__ataf_family {
  CAIRN_ATAF_PHISHARP = 0, /* phi#: group g = floor(log2 x) on odd multiples of 2^g */
  CAIRN_ATAF_PHI1 = 1,     /* phi<1>: one row per group, row x on signature 2^(x-1) */
  CAIRN_ATAF_PHI3 = 2,     /* phi<3>: four rows per group, rows 4g+1..4g+4 on 2^g */
} cairn__ataf_family;

#define CAIRN_ATAF_NFAMILIES 3

#define CAIRN_ATAF_MAX_INDEX ((uint64_t)INT64_MAX)

/* Signatures 2^0 .. 2^62: the groups that a 63-bit index can name. */
#define CAIRN_ATAF_MAX_GROUPS 63

/* Parses "phi1", "phi3" or "phisharp"; returns -1 (and leaves *out alone)
 * for an unknown name. */
int cairn__ataf_parse_family(const char *name, cairn__ataf_family *out);
/* "phi1", "phi3", "phisharp", or "unknown". Static storage. */
const char *cairn__ataf_family_name(cairn__ataf_family f);

/* *out = phi(x, t) for a named family. CAIRN_EINVAL for x == 0, t == 0 or an
 * unknown family; CAIRN_EOVERFLOW when the index exceeds CAIRN_ATAF_MAX_INDEX.
 * *out is written only on success. O(1). */
cairn_status cairn__ataf_index(cairn__ataf_family f, uint64_t x, uint64_t t, uint64_t *out,
                              cairn_error *err);

/* (x, t) = phi^-1(n) for a named family. CAIRN_EINVAL for n == 0,
 * n > CAIRN_ATAF_MAX_INDEX or an unknown family. Every n in range has a
 * preimage under the named families. *x, *t are written only on success. O(1). */
cairn_status cairn__ataf_invert(cairn__ataf_family f, uint64_t n, uint64_t *x, uint64_t *t,
                               cairn_error *err);

/* Base B_x = phi(x, 1) and stride S_x = phi(x, t+1) - phi(x, t) of row x of a
 * named family. CAIRN_EINVAL for x == 0; CAIRN_EOVERFLOW when the value
 * exceeds CAIRN_ATAF_MAX_INDEX (a stride that does not fit means the row has
 * no second allocation in range). O(1). */
cairn_status cairn__ataf_family_base(cairn__ataf_family f, uint64_t x, uint64_t *base,
                                    cairn_error *err);
cairn_status cairn__ataf_family_stride(cairn__ataf_family f, uint64_t x, uint64_t *stride,
                                      cairn_error *err);

/* ---- Procedure ATAF-Constructor ---------------------------------------- */

/* Group sizes of a constructed family: group g has 2^kappa(g) rows, where
 * kappa(g) = kappa[g] for g < nkappa (the explicit list), and
 * kappa(g) = slope * g + offset after it (the rule). A rule alone has
 * nkappa == 0; a list followed by equal groups of 2^c rows has slope 0,
 * offset c. The caller keeps ownership of kappa; it is read only by
 * cairn__ataf_build. */
typedef struct cairn__ataf_spec {
  const unsigned *kappa;
  size_t nkappa;
  unsigned slope;
  unsigned offset;
} cairn__ataf_spec;

/* A constructed family, filled by cairn__ataf_build; plain data, no
 * destructor. Groups are listed while their first row is a uint64 (at most
 * CAIRN_ATAF_MAX_GROUPS); kappa values of 64 and more are stored as 64 (such
 * a group holds every remaining uint64 row). */
typedef struct cairn__ataf {
  unsigned ngroups;
  uint8_t kappa[CAIRN_ATAF_MAX_GROUPS];
  uint64_t first_row[CAIRN_ATAF_MAX_GROUPS]; /* first_row[0] = 1, strictly increasing */
} cairn__ataf;

/* Where a row sits: its indices are 2^group * (odd numbers = 2*position-1
 * modulo 2^(kappa+1)). */
typedef struct cairn__ataf_row {
  unsigned group;    /* g: the row's indices have exactly g trailing zero bits */
  unsigned kappa;    /* the group has 2^kappa rows (64: runs past UINT64_MAX) */
  uint64_t position; /* i, 1 <= i <= 2^kappa */
} cairn__ataf_row;

/* Builds *a from spec. CAIRN_EINVAL when spec is NULL or the list is NULL
 * with nkappa > 0; *a is untouched on failure. O(CAIRN_ATAF_MAX_GROUPS). */
cairn_status cairn__ataf_build(cairn__ataf *a, const cairn__ataf_spec *spec, cairn_error *err);

/* The constructor spec of a named family (phi1: offset 0; phi3: offset 2;
 * phisharp: slope 1). CAIRN_EINVAL for an unknown family. */
cairn_status cairn__ataf_family_spec(cairn__ataf_family f, cairn__ataf_spec *out,
                                    cairn_error *err);

/* Locates row x. CAIRN_EINVAL for x == 0; CAIRN_EOVERFLOW when x lies beyond
 * group 62 (every index of such a row exceeds CAIRN_ATAF_MAX_INDEX). */
cairn_status cairn__ataf_locate(const cairn__ataf *a, uint64_t x, cairn__ataf_row *row,
                               cairn_error *err);

/* B_x, S_x and phi(x, t) of a constructed family; errors as for the named
 * families. Outputs are written only on success. O(log ngroups). */
cairn_status cairn__ataf_base(const cairn__ataf *a, uint64_t x, uint64_t *base, cairn_error *err);
cairn_status cairn__ataf_stride(const cairn__ataf *a, uint64_t x, uint64_t *stride,
                               cairn_error *err);
cairn_status cairn__ataf_phi(const cairn__ataf *a, uint64_t x, uint64_t t, uint64_t *out,
                            cairn_error *err);

/* (x, t) = phi^-1(n) of a constructed family. CAIRN_EINVAL for n == 0 or
 * n > CAIRN_ATAF_MAX_INDEX; CAIRN_EOVERFLOW when n has g trailing zero bits
 * and group g starts beyond UINT64_MAX (g >= ngroups: only for families whose
 * groups run past the uint64 rows). O(1). */
cairn_status cairn__ataf_phi_inverse(const cairn__ataf *a, uint64_t n, uint64_t *x, uint64_t *t,
                                    cairn_error *err);

#endif
