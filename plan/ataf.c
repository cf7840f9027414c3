/* ataf.c — ATAF pairing functions of [Ros] (docs/references.md)
 * §4.3.2: Procedure ATAF-Constructor (Figure 9) and the sample ATAFs
 * phi<1>, phi<3>, phi# of Figure 10.
 *
 * Every family is described by where a row sits: its group g (the signature
 * 2^g, i.e. the trailing zero bits of all its indices), the group's size
 * 2^kappa, and its position i in the group. Then
 *
 *     phi(x, t) = 2^g * (2i - 1 + (t-1) * 2^(kappa+1))
 *
 * which is B_x + (t-1) S_x with B_x = 2^g (2i-1) and S_x = 2^(g+kappa+1).
 * Since every odd number is 2i-1 + q 2^(kappa+1) for exactly one
 * i in 1..2^kappa and q >= 0, and every positive integer is 2^g times exactly
 * one odd number, phi is a bijection (the guarantee in ataf.h).
 *
 * The explicit expression printed after Figure 9 writes the residue as
 * (2 x_{g,i} + 1) mod 2^(1+kappa(g)). Read with x_{g,i} = the row number it
 * reproduces phi# (and phi<1>, where every residue mod 2 is 1) but not phi<3>,
 * whose Figure 10 definition and table use (2x - 1) mod 8 (row 14 -> 24).
 * "The i-th row of the group gets residue 2i - 1" agrees with all three
 * definitions and all Figure 10 values, so that is what the constructor does.
 *
 * Named families locate a row in closed form (O(1)); constructed families by
 * binary search over their first rows (O(log G), G <= 63). The inverse is
 * O(1) for both. All arithmetic is on uint64 with explicit range checks.
 */
#include "plan/ataf.h"

#include <assert.h>
#include <string.h>

#define MAXI CAIRN_ATAF_MAX_INDEX

static unsigned floor_log2(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

static const char *const family_names[CAIRN_ATAF_NFAMILIES] = {
  [CAIRN_ATAF_PHISHARP] = "phisharp",
  [CAIRN_ATAF_PHI1] = "phi1",
  [CAIRN_ATAF_PHI3] = "phi3",
};

static int family_valid(cairn__ataf_family f) {
  return (unsigned)f < CAIRN_ATAF_NFAMILIES;
}

int cairn__ataf_parse_family(const char *name, cairn__ataf_family *out) {
  for (unsigned i = 0; i < CAIRN_ATAF_NFAMILIES; i++)
    if (strcmp(name, family_names[i]) == 0) {
      *out = (cairn__ataf_family)i;
      return 0;
    }
  return -1;
}

const char *cairn__ataf_family_name(cairn__ataf_family f) {
  return family_valid(f) ? family_names[f] : "unknown";
}

/* ---- shared arithmetic on (group, kappa, position) ---------------------- */

typedef enum want { WANT_PHI, WANT_BASE, WANT_STRIDE } want;

/* The wanted value of a located row: B = 2^g (2i - 1), S = 2^(g + kappa + 1)
 * or phi = B + (t-1) S. Returns -1 when it exceeds CAIRN_ATAF_MAX_INDEX. */
static int row_value(const cairn__ataf_row *r, want w, uint64_t t, uint64_t *out) {
  assert(r->group < CAIRN_ATAF_MAX_GROUPS && r->position >= 1);
  unsigned e = r->group + r->kappa + 1;
  uint64_t base, step;
  if (w == WANT_STRIDE) {
    if (e > 62)
      return -1;
    *out = 1ull << e;
    return 0;
  }
  uint64_t lim = MAXI >> r->group; /* largest odd part that fits, >= 1 */
  if (r->position - 1 > (lim - 1) / 2)
    return -1;
  base = (2 * (r->position - 1) + 1) << r->group;
  if (w == WANT_BASE || t == 1) {
    *out = base;
    return 0;
  }
  if (e > 62 || __builtin_mul_overflow(t - 1, 1ull << e, &step) || step > MAXI - base)
    return -1;
  *out = base + step;
  return 0;
}

/* Evaluates a row found by a locate step (located == 0; -1 means the row
 * lies beyond group 62) and words the overflow message. */
static cairn_status evaluate(const char *name, int located, const cairn__ataf_row *r, uint64_t x,
                             uint64_t t, want w, uint64_t *out, cairn_error *err) {
  uint64_t v = 0;
  if (located == 0 && row_value(r, w, t, &v) == 0) {
    *out = v;
    return CAIRN_OK;
  }
  if (w == WANT_PHI)
    return cairn__error_set(err, CAIRN_EOVERFLOW,
                           "%s(%llu, %llu) exceeds the 63-bit index range (2^63-1)", name,
                           (unsigned long long)x, (unsigned long long)t);
  return cairn__error_set(err, CAIRN_EOVERFLOW,
                         "%s: %s of row %llu exceeds the 63-bit index range (2^63-1)", name,
                         w == WANT_BASE ? "base" : "stride", (unsigned long long)x);
}

/* Splits the odd part of an index of group g (size 2^kappa) into the position
 * i and the allocation number t. */
static void split_odd(uint64_t odd, unsigned kappa, uint64_t *position, uint64_t *t) {
  uint64_t r = odd, q = 0;
  if (kappa + 1 < 64) {
    r = odd & ((1ull << (kappa + 1)) - 1);
    q = odd >> (kappa + 1);
  }
  *position = (r + 1) / 2;
  *t = q + 1;
}

static cairn_status check_args(const char *name, uint64_t x, uint64_t t, cairn_error *err) {
  if (x == 0 || t == 0)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: rows and allocations start at 1 (got x=%llu "
                                              "t=%llu)",
                           name, (unsigned long long)x, (unsigned long long)t);
  return CAIRN_OK;
}

static cairn_status check_index(const char *name, uint64_t n, cairn_error *err) {
  if (n == 0 || n > MAXI)
    return cairn__error_set(err, CAIRN_EINVAL, "%s: index %llu is outside 1..2^63-1", name,
                           (unsigned long long)n);
  return CAIRN_OK;
}

/* ---- named families: closed forms --------------------------------------- */

/* Where row x >= 1 of a valid named family sits; -1 when its group is
 * beyond 62. */
static int family_locate(cairn__ataf_family f, uint64_t x, cairn__ataf_row *r) {
  uint64_t g = 0;
  switch (f) {
  case CAIRN_ATAF_PHISHARP:
    g = floor_log2(x);
    r->kappa = (unsigned)g;
    r->position = x - (1ull << g) + 1;
    break;
  case CAIRN_ATAF_PHI1:
    g = x - 1;
    r->kappa = 0;
    r->position = 1;
    break;
  case CAIRN_ATAF_PHI3:
    g = (x - 1) / 4;
    r->kappa = 2;
    r->position = (x - 1) % 4 + 1;
    break;
  }
  if (g >= CAIRN_ATAF_MAX_GROUPS)
    return -1;
  r->group = (unsigned)g;
  return 0;
}

static cairn_status family_eval(cairn__ataf_family f, uint64_t x, uint64_t t, want w,
                                uint64_t *out, cairn_error *err) {
  if (!family_valid(f))
    return cairn__error_set(err, CAIRN_EINVAL, "unknown ATAF family %d", (int)f);
  const char *name = family_names[f];
  cairn_status st = check_args(name, x, t, err);
  if (st != CAIRN_OK)
    return st;
  cairn__ataf_row r;
  int located = family_locate(f, x, &r);
  return evaluate(name, located, &r, x, t, w, out, err);
}

cairn_status cairn__ataf_index(cairn__ataf_family f, uint64_t x, uint64_t t, uint64_t *out,
                              cairn_error *err) {
  return family_eval(f, x, t, WANT_PHI, out, err);
}

cairn_status cairn__ataf_family_base(cairn__ataf_family f, uint64_t x, uint64_t *base,
                                    cairn_error *err) {
  return family_eval(f, x, 1, WANT_BASE, base, err);
}

cairn_status cairn__ataf_family_stride(cairn__ataf_family f, uint64_t x, uint64_t *stride,
                                      cairn_error *err) {
  return family_eval(f, x, 1, WANT_STRIDE, stride, err);
}

cairn_status cairn__ataf_invert(cairn__ataf_family f, uint64_t n, uint64_t *x, uint64_t *t,
                               cairn_error *err) {
  if (!family_valid(f))
    return cairn__error_set(err, CAIRN_EINVAL, "unknown ATAF family %d", (int)f);
  const char *name = cairn__ataf_family_name(f);
  cairn_status st = check_index(name, n, err);
  if (st != CAIRN_OK)
    return st;
  unsigned g = (unsigned)__builtin_ctzll(n);
  uint64_t odd = n >> g, i = 0, tt = 0;
  switch (f) {
  case CAIRN_ATAF_PHISHARP: /* rows 2^g .. 2^(g+1)-1, so x < 2^63 */
    split_odd(odd, g, &i, &tt);
    *x = (1ull << g) + i - 1;
    break;
  case CAIRN_ATAF_PHI1:
    split_odd(odd, 0, &i, &tt);
    *x = (uint64_t)g + 1;
    break;
  case CAIRN_ATAF_PHI3:
    split_odd(odd, 2, &i, &tt);
    *x = 4 * (uint64_t)g + i;
    break;
  }
  *t = tt;
  return CAIRN_OK;
}

/* ---- Procedure ATAF-Constructor ---------------------------------------- */

cairn_status cairn__ataf_family_spec(cairn__ataf_family f, cairn__ataf_spec *out,
                                    cairn_error *err) {
  cairn__ataf_spec s = {NULL, 0, 0, 0};
  switch (f) {
  case CAIRN_ATAF_PHISHARP: s.slope = 1; break;
  case CAIRN_ATAF_PHI1: break;
  case CAIRN_ATAF_PHI3: s.offset = 2; break;
  default: return cairn__error_set(err, CAIRN_EINVAL, "unknown ATAF family %d", (int)f);
  }
  *out = s;
  return CAIRN_OK;
}

cairn_status cairn__ataf_build(cairn__ataf *a, const cairn__ataf_spec *spec, cairn_error *err) {
  if (spec == NULL || (spec->kappa == NULL && spec->nkappa > 0))
    return cairn__error_set(err, CAIRN_EINVAL, "ATAF spec: missing group-size list");
  cairn__ataf b;
  memset(&b, 0, sizeof b);
  uint64_t first = 1;
  for (unsigned g = 0; g < CAIRN_ATAF_MAX_GROUPS; g++) {
    uint64_t k = g < spec->nkappa ? spec->kappa[g]
                                  : (uint64_t)spec->slope * g + (uint64_t)spec->offset;
    b.kappa[g] = (uint8_t)(k < 64 ? k : 64);
    b.first_row[g] = first;
    b.ngroups = g + 1;
    /* the next group starts after 2^kappa rows, if that is still a uint64 */
    if (k >= 64 || __builtin_add_overflow(first, 1ull << k, &first))
      break;
  }
  *a = b;
  return CAIRN_OK;
}

/* Where row x >= 1 sits; -1 when it lies beyond group 62. */
static int table_locate(const cairn__ataf *a, uint64_t x, cairn__ataf_row *row) {
  assert(a->ngroups >= 1 && a->ngroups <= CAIRN_ATAF_MAX_GROUPS && a->first_row[0] == 1);
  /* largest g with first_row[g] <= x: branch-free binary search */
  unsigned lo = 0, n = a->ngroups;
  while (n > 1) {
    unsigned half = n / 2;
    lo = a->first_row[lo + half] <= x ? lo + half : lo;
    n -= half;
  }
  uint64_t pos = x - a->first_row[lo] + 1;
  if (a->kappa[lo] < 64 && pos - 1 >= (1ull << a->kappa[lo]))
    return -1;
  row->group = lo;
  row->kappa = a->kappa[lo];
  row->position = pos;
  return 0;
}

cairn_status cairn__ataf_locate(const cairn__ataf *a, uint64_t x, cairn__ataf_row *row,
                               cairn_error *err) {
  cairn_status st = check_args("ATAF", x, 1, err);
  if (st == CAIRN_OK && table_locate(a, x, row) != 0)
    st = cairn__error_set(err, CAIRN_EOVERFLOW,
                         "ATAF: row %llu lies beyond group 62; its indices exceed the 63-bit "
                         "index range (2^63-1)",
                         (unsigned long long)x);
  return st;
}

static cairn_status table_eval(const cairn__ataf *a, uint64_t x, uint64_t t, want w,
                               uint64_t *out, cairn_error *err) {
  cairn_status st = check_args("ATAF", x, t, err);
  if (st != CAIRN_OK)
    return st;
  cairn__ataf_row r;
  int located = table_locate(a, x, &r);
  return evaluate("ATAF", located, &r, x, t, w, out, err);
}

cairn_status cairn__ataf_base(const cairn__ataf *a, uint64_t x, uint64_t *base, cairn_error *err) {
  return table_eval(a, x, 1, WANT_BASE, base, err);
}

cairn_status cairn__ataf_stride(const cairn__ataf *a, uint64_t x, uint64_t *stride,
                               cairn_error *err) {
  return table_eval(a, x, 1, WANT_STRIDE, stride, err);
}

cairn_status cairn__ataf_phi(const cairn__ataf *a, uint64_t x, uint64_t t, uint64_t *out,
                            cairn_error *err) {
  return table_eval(a, x, t, WANT_PHI, out, err);
}

cairn_status cairn__ataf_phi_inverse(const cairn__ataf *a, uint64_t n, uint64_t *x, uint64_t *t,
                                    cairn_error *err) {
  cairn_status st = check_index("ATAF", n, err);
  if (st != CAIRN_OK)
    return st;
  unsigned g = (unsigned)__builtin_ctzll(n);
  uint64_t i = 0, tt = 0, row = 0;
  if (g >= a->ngroups)
    return cairn__error_set(err, CAIRN_EOVERFLOW,
                           "ATAF: index %llu belongs to group %u, whose rows lie beyond 2^64-1",
                           (unsigned long long)n, g);
  split_odd(n >> g, a->kappa[g], &i, &tt);
  /* first_row[g] - 1 is a sum of g powers of two below 2^64, so it has at
   * most g one bits and is at most 2^64 - 2^(64-g): room for the fewer than
   * 2^(62-g) positions whose odd part 2i-1 keeps the index within 63 bits. */
  assert(i - 1 <= UINT64_MAX - a->first_row[g]);
  row = a->first_row[g] + (i - 1);
  *x = row;
  *t = tt;
  return CAIRN_OK;
}
