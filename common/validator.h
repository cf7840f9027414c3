/* validator.h — how replicas of a task are compared (docs/jobs.md,
 * "Validators"). Pure functions over plain structs; no allocation except
 * cairn_validator_json().
 *
 * exact:   two results agree when their digests are equal (stdout and
 *          output files byte-identical).
 * numeric: stdout is split into numbers and the text between them; two
 *          results agree when they have the same number of tokens of the
 *          same kinds, every text token is byte-identical and every pair
 *          of numbers a, b satisfies |a - b| <= abs + rel * max(|a|, |b|).
 *          Output files are compared by digest, exactly.
 */
#ifndef CAIRN_VALIDATOR_H
#define CAIRN_VALIDATOR_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

typedef enum { CAIRN_VALIDATOR_EXACT = 0, CAIRN_VALIDATOR_NUMERIC = 1 } cairn_validator_kind;

typedef struct cairn_validator {
  cairn_validator_kind kind;
  double rel, abs; /* numeric only: finite, 0 <= x <= CAIRN_VALIDATOR_MAX_TOL */
} cairn_validator;

#define CAIRN_VALIDATOR_MAX_TOL 1e300
/* A number token longer than this many bytes is compared as text. */
#define CAIRN_VALIDATOR_MAX_NUMBER 80

/* Parses a job's "validator" value ("exact" or {"numeric": {"rel": R,
 * "abs": A}}); v NULL means exact. what names the field in errors. */
cairn_status cairn_validator_parse(const json_t *v, const char *what, cairn_validator *out,
                                   cairn_error *err);

/* Its JSON form, as parse() accepts it (new reference; NULL: no memory). */
json_t *cairn_validator_json(const cairn_validator *v);

/* 1 when outputs a and b agree under the numeric rule with tolerances rel,
 * abs, else 0. O(alen + blen), no allocation. */
int cairn_numeric_agree(const char *a, size_t alen, const char *b, size_t blen, double rel,
                        double abs);

#endif
