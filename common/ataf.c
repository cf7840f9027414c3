/* ataf.c — ATAF pairing functions of seed 004 §4.3.2, Figure 10.
 *
 * phi#(x, t) = 2^g * (2^(g+1) * (t-1) + ((2x+1) mod 2^(g+1))), g = floor(log2 x).
 * Rows x in [2^g, 2^(g+1)) form group g; they share the signature 2^g (the
 * index's trailing zero bits) and split the odd integers by residue mod
 * 2^(g+1). Base B_x = 2^g * ((2x+1) mod 2^(g+1)), stride S_x = 2^(2g+1).
 * Forward and inverse are O(1).
 */
#include "common/ataf.h"

#include <string.h>

static unsigned floor_log2(uint64_t x) { return 63u - (unsigned)__builtin_clzll(x); }

int cairn_ataf_parse_family(const char *name, cairn_ataf_family *out) {
  if (strcmp(name, "phisharp") == 0) {
    *out = CAIRN_ATAF_PHISHARP;
    return 0;
  }
  return -1;
}

const char *cairn_ataf_family_name(cairn_ataf_family f) {
  switch (f) {
  case CAIRN_ATAF_PHISHARP: return "phisharp";
  }
  return "unknown";
}

static cairn_status phisharp(uint64_t x, uint64_t t, uint64_t *out, cairn_error *err) {
  unsigned g = floor_log2(x);
  /* base = 2^g * ((2x+1) mod 2^(g+1)); stride = 2^(2g+1). */
  if (2 * g + 1 >= 63)
    return cairn_error_set(err, CAIRN_EOVERFLOW, "phisharp: row %llu is beyond the 63-bit range",
                           (unsigned long long)x);
  uint64_t modulus = 1ull << (g + 1);
  uint64_t base = ((2 * x + 1) & (modulus - 1)) << g;
  uint64_t stride = 1ull << (2 * g + 1);
  uint64_t step;
  if (__builtin_mul_overflow(t - 1, stride, &step) || step > CAIRN_ATAF_MAX_INDEX - base)
    return cairn_error_set(err, CAIRN_EOVERFLOW,
                           "phisharp(%llu, %llu) exceeds the 63-bit index range",
                           (unsigned long long)x, (unsigned long long)t);
  *out = base + step;
  return CAIRN_OK;
}

cairn_status cairn_ataf_index(cairn_ataf_family f, uint64_t x, uint64_t t, uint64_t *out,
                              cairn_error *err) {
  if (x == 0 || t == 0)
    return cairn_error_set(err, CAIRN_EINVAL, "ATAF arguments start at 1 (got x=%llu t=%llu)",
                           (unsigned long long)x, (unsigned long long)t);
  switch (f) {
  case CAIRN_ATAF_PHISHARP: return phisharp(x, t, out, err);
  }
  return cairn_error_set(err, CAIRN_EINVAL, "unknown ATAF family %d", (int)f);
}

cairn_status cairn_ataf_invert(cairn_ataf_family f, uint64_t n, uint64_t *x, uint64_t *t,
                               cairn_error *err) {
  if (n == 0 || n > CAIRN_ATAF_MAX_INDEX)
    return cairn_error_set(err, CAIRN_EINVAL, "index %llu is outside 1..2^63-1",
                           (unsigned long long)n);
  if (f != CAIRN_ATAF_PHISHARP)
    return cairn_error_set(err, CAIRN_EINVAL, "unknown ATAF family %d", (int)f);
  unsigned g = (unsigned)__builtin_ctzll(n);
  uint64_t odd = n >> g;
  if (g + 1 >= 63)
    return cairn_error_set(err, CAIRN_EINVAL, "index %llu is no phisharp value",
                           (unsigned long long)n);
  uint64_t modulus = 1ull << (g + 1);
  uint64_t r = odd & (modulus - 1);
  *t = (odd >> (g + 1)) + 1;
  *x = (r + modulus - 1) / 2;
  return CAIRN_OK;
}
