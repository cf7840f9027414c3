/* validator.h — how replicas of a task are compared (docs/jobs.md,
 * "Validators"). Pure functions over plain structs; no allocation except
 * cairn__validator_json().
 *
 * exact:   two results agree when their digests are equal (stdout and
 *          output files byte-identical).
 * numeric: stdout is split into numbers and the text between them; two
 *          results agree when they have the same number of tokens of the
 *          same kinds, every text token is byte-identical and every pair
 *          of numbers a, b satisfies |a - b| <= abs + rel * max(|a|, |b|).
 *          Output files are compared by digest, exactly.
 * command: a program the job names decides for each pair of results
 *          (server/trust/vcmd.c runs it; docs/jobs.md gives its contract).
 */
#ifndef CAIRN_VALIDATOR_H
#define CAIRN_VALIDATOR_H

#include <jansson.h>
#include <stddef.h>

#include "common/error.h"

typedef enum {
  CAIRN_VALIDATOR_EXACT = 0,
  CAIRN_VALIDATOR_NUMERIC = 1,
  CAIRN_VALIDATOR_COMMAND = 2
} cairn__validator_kind;

typedef struct cairn__validator {
  cairn__validator_kind kind;
  double rel, abs; /* numeric only: finite, 0 <= x <= CAIRN_VALIDATOR_MAX_TOL */
  char **argv;     /* command only: the program (absolute path) and its
                    * arguments, NULL-terminated; owned (cairn__validator_free) */
  int argc;
} cairn__validator;

/* A command names at most this many strings (program included), each at
 * most CAIRN_VALIDATOR_MAX_ARG bytes. */
#define CAIRN_VALIDATOR_MAX_ARGS 16
#define CAIRN_VALIDATOR_MAX_ARG 1024
/* Seconds a command may run on one pair before it is killed (disagree). */
#define CAIRN_VALIDATOR_TIMEOUT_SECONDS 60

#define CAIRN_VALIDATOR_MAX_TOL 1e300
/* A number token longer than this many bytes is compared as text. */
#define CAIRN_VALIDATOR_MAX_NUMBER 80

/* Parses a job's "validator" value ("exact", {"numeric": {"rel": R,
 * "abs": A}} or {"command": ["/path/prog", "arg", ...]}); v NULL means
 * exact. what names the field in errors. out owns its argv (free it with
 * cairn__validator_free, also after a failure). */
cairn_status cairn__validator_parse(const json_t *v, const char *what, cairn__validator *out,
                                   cairn_error *err);

/* Its JSON form, as parse() accepts it (new reference; NULL: no memory). */
json_t *cairn__validator_json(const cairn__validator *v);

/* Frees v's argv and makes it exact. */
void cairn__validator_free(cairn__validator *v);

/* 1 when outputs a and b agree under the numeric rule with tolerances rel,
 * abs, else 0. O(alen + blen), no allocation. */
int cairn__numeric_agree(const char *a, size_t alen, const char *b, size_t blen, double rel,
                        double abs);

#endif
