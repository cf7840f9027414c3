/* ataf.h — accountable task-allocation functions (ATAFs), seed 004 §4.3.2.
 *
 * A volunteer gets a row x >= 1; its t-th allocation (t >= 1) gets the index
 * phi(x, t) = B_x + (t-1) * S_x. Every ATAF is a bijection N+ x N+ -> N+, so
 * the index alone names the volunteer and the allocation (phi^-1).
 * Indices are 63-bit (what SQLite stores); a result that does not fit is
 * CAIRN_EOVERFLOW, never a silent wrap.
 */
#ifndef CAIRN_ATAF_H
#define CAIRN_ATAF_H

#include <stdint.h>

#include "common/error.h"

typedef enum cairn_ataf_family {
  CAIRN_ATAF_PHISHARP = 0, /* phi#: group g = floor(log2 x) on odd multiples of 2^g */
} cairn_ataf_family;

#define CAIRN_ATAF_MAX_INDEX ((uint64_t)INT64_MAX)

/* Parses "phisharp"; returns -1 for an unknown name. */
int cairn_ataf_parse_family(const char *name, cairn_ataf_family *out);
const char *cairn_ataf_family_name(cairn_ataf_family f);

/* *out = phi(x, t). CAIRN_EINVAL for x == 0 or t == 0, CAIRN_EOVERFLOW when
 * the index exceeds CAIRN_ATAF_MAX_INDEX. */
cairn_status cairn_ataf_index(cairn_ataf_family f, uint64_t x, uint64_t t, uint64_t *out,
                              cairn_error *err);

/* (x, t) = phi^-1(n) for n >= 1. CAIRN_EINVAL for n == 0 or n > max. */
cairn_status cairn_ataf_invert(cairn_ataf_family f, uint64_t n, uint64_t *x, uint64_t *t,
                               cairn_error *err);

#endif
