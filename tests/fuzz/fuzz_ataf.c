/* fuzz_ataf.c — libFuzzer target: the ATAF inverse (plan/ataf.c).
 * Byte 0 picks a named family (0..2) or a constructed one (3: the spec
 * follows: slope, offset, nkappa and up to 16 kappa bytes); then index
 * bytes. For each index n (8 bytes, little-endian), the inverse, when it
 * succeeds, must satisfy phi(invert(n)) == n, and so must the named
 * family's cairn__ataf_invert agree with the constructed family of its spec. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "plan/ataf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static uint64_t take64(const uint8_t **p, size_t *left) {
  uint64_t v = 0;
  size_t k = *left < 8 ? *left : 8;
  for (size_t i = 0; i < k; i++)
    v |= (uint64_t)(*p)[i] << (8 * i);
  *p += k;
  *left -= k;
  return v;
}

/* Checks one index against a constructed family. */
static void check_built(const cairn__ataf *a, uint64_t n) {
  cairn_error err = {0};
  uint64_t x = 0, t = 0, back = 0;
  if (cairn__ataf_phi_inverse(a, n, &x, &t, &err) != CAIRN_OK)
    return;
  if (x == 0 || t == 0)
    abort();
  if (cairn__ataf_phi(a, x, t, &back, &err) != CAIRN_OK || back != n)
    abort(); /* phi(phi^-1(n)) == n */
}

/* Checks one index against a named family and its constructed twin. */
static void check_named(cairn__ataf_family f, const cairn__ataf *twin, uint64_t n) {
  cairn_error err = {0};
  uint64_t x = 0, t = 0, back = 0;
  if (cairn__ataf_invert(f, n, &x, &t, &err) != CAIRN_OK) {
    if (n != 0 && n <= CAIRN_ATAF_MAX_INDEX)
      abort(); /* every n in range has a preimage */
    return;
  }
  if (cairn__ataf_index(f, x, t, &back, &err) != CAIRN_OK || back != n)
    abort();
  uint64_t x2 = 0, t2 = 0;
  if (cairn__ataf_phi_inverse(twin, n, &x2, &t2, &err) != CAIRN_OK || x2 != x || t2 != t)
    abort(); /* the named family is its constructor's */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const uint8_t *p = data + 1;
  size_t left = size - 1;
  unsigned sel = data[0] % 4;
  cairn__ataf a;
  cairn_error err = {0};
  if (sel < 3) {
    cairn__ataf_spec spec;
    if (cairn__ataf_family_spec((cairn__ataf_family)sel, &spec, &err) != CAIRN_OK ||
        cairn__ataf_build(&a, &spec, &err) != CAIRN_OK)
      abort();
  } else {
    if (left < 3)
      return 0;
    unsigned kappa[16];
    cairn__ataf_spec spec = {.slope = p[0] % 8, .offset = p[1] % 70, .nkappa = p[2] % 17};
    p += 3;
    left -= 3;
    if (left < spec.nkappa)
      return 0;
    for (size_t i = 0; i < spec.nkappa; i++)
      kappa[i] = p[i] % 70;
    spec.kappa = kappa;
    p += spec.nkappa;
    left -= spec.nkappa;
    if (cairn__ataf_build(&a, &spec, &err) != CAIRN_OK)
      abort();
  }
  while (left > 0) {
    uint64_t n = take64(&p, &left);
    /* also the neighbourhood of the index's top bit: group boundaries */
    uint64_t probe[3] = {n, n >> (n & 63), n & CAIRN_ATAF_MAX_INDEX};
    for (int i = 0; i < 3; i++) {
      if (sel < 3)
        check_named((cairn__ataf_family)sel, &a, probe[i]);
      check_built(&a, probe[i]);
    }
  }
  return 0;
}
