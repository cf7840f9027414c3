/* validate.h — agreement between a task's replicas under its job's
 * validator (common/validator.h; docs/jobs.md, "Validators"). Part of the
 * core: every function runs under c->lock.
 *
 * exact keeps today's cost: digests compared, nothing kept. numeric keeps
 * each counted result's stdout (≤ CAIRN_MAX_OUTPUT) while its task is not
 * done, and compares a new result with the earlier ones once, when it
 * arrives: O(min(nres, 64) × CAIRN_MAX_OUTPUT) under the lock, nres being
 * the results of the task's current round. The answers are kept as a bit
 * mask per result, so quorum checks afterwards cost O(nres²) bit tests.
 * Agreement is not transitive under numeric: a task reaches quorum Q when
 * one result agrees with at least Q-1 others; the first such result (in
 * arrival order) is the canonical one, and the others are valid when they
 * agree with it. */
#ifndef CAIRN_SERVER_VALIDATE_H
#define CAIRN_SERVER_VALIDATE_H

#include "server/core.h"

/* Results beyond this many in one round are compared with nobody. */
#define CAIRN__VALID_MAX_COMPARED 64

/* The output files' key of a result: SHA-256 over, in name order, each
 * file's byte length of name, ':', name and its sha256 (files sorted). */
void cairn__valid_files_key(const cairn_output_file *files, size_t n, char out[65]);

/* Records what j's validator needs of r's last result (its stdout, its
 * files' key) and compares it with the earlier ones. -1: out of memory. */
int cairn__valid_add(const mjob *j, mrep *r, const void *out, size_t len, const char fkey[65]);

/* 1 when results a and b of one round agree under j's validator. */
int cairn__valid_agree(const mjob *j, const mrep *r, const mres *a, const mres *b);

/* The largest number of counted results one result agrees with (itself
 * included); *canon gets the first result reaching it (NULL if none). */
uint32_t cairn__valid_best(const mjob *j, const mrep *r, const mres **canon);

/* Frees the kept stdout of every result but the one with index keep. */
void cairn__valid_trim(mrep *r, int64_t keep);

#endif
