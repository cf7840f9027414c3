/* validate.h — agreement between a task's replicas under its job's
 * validator (plan/validator.h; docs/jobs.md, "Validators"). Part of the
 * core: every function here runs under c->lock, except the command
 * runner's thread (vcmd.c), which takes it only to fetch a pair and to
 * apply a verdict.
 *
 * exact keeps today's cost: digests compared, nothing kept. numeric and
 * command keep each counted result's stdout (≤ CAIRN_MAX_OUTPUT) while its
 * task needs it, and compare a new result once with each earlier result of
 * the round when it arrives. numeric does so at once: at most 15 pairs
 * (CAIRN__VALID_MAX_COMPARED − 1) of O(CAIRN_MAX_OUTPUT) each under the
 * lock: two 1 MiB outputs of 65,536 numbers compare in about 11 ms when
 * every number differs, 3 ms when they are identical (release build), so a
 * result costs at most about 165 ms, and with replication 3 about 22 ms. command queues those pairs (O(1) each under the lock);
 * the runner's thread runs the job's program on each pair without the lock
 * and applies the verdict (c->calls.verdict, the core's cairn__core_verdict) later. The answers are
 * kept as bit masks per result, so quorum checks cost O(nres²) bit tests.
 *
 * Agreement is not transitive: a task reaches quorum Q when one result
 * agrees with at least Q-1 others; the first such result (in the round's
 * order) is the canonical one, and the others are valid when they agree
 * with it, invalid when they do not, pending while that is undecided. */
#ifndef CAIRN_SERVER_VALIDATE_H
#define CAIRN_SERVER_VALIDATE_H

#include "server/model/state.h"

/* Results beyond this many in one round are compared with nobody (as many
 * as the largest replication: a quorum needs no more). At most 64 (bits). */
#define CAIRN__VALID_MAX_COMPARED CAIRN_MAX_REPLICATION

/* One pair for the command validator: results idx[0], idx[1] of the task
 * at position task of job, in round round. */
typedef struct cairn__vpair {
  int64_t job, round, idx[2];
  uint32_t task;
} cairn__vpair;

/* The output files' key of a result: SHA-256 over, in name order, each
 * file's byte length of name, ':', name and its sha256 (files sorted). */
void cairn__valid_files_key(const cairn__output_file *files, size_t n, char out[65]);
/* The files that text (the string the key hashes) names; *files malloc'd
 * (NULL when none). -1: malformed or out of memory. */
int cairn__valid_files_parse(const char *text, cairn__output_file **files, uint32_t *n);

/* Records what j's validator needs of the last result of task seq (its
 * stdout, its files and their key) and compares it with the earlier ones,
 * or queues the pairs (command). -1: out of memory. */
int cairn__valid_add(cairn__core *c, const mjob *j, uint32_t seq, const void *out, size_t len,
                     const cairn__output_file *files, size_t nfiles, const char fkey[65]);

/* 1 when results a and b of one round agree under j's validator. */
int cairn__valid_agree(const mjob *j, const mrep *r, const mres *a, const mres *b);
/* 1 when whether a and b agree is decided (always, but for command). */
int cairn__valid_known(const mjob *j, const mrep *r, const mres *a, const mres *b);
/* The outcome of m judged against the canonical result cn. */
int cairn__valid_outcome(const mjob *j, const mrep *r, const mres *cn, const mres *m);

/* The largest number of counted results one result agrees with (itself
 * included); *canon gets the first result reaching it (NULL if none). */
uint32_t cairn__valid_best(const mjob *j, const mrep *r, const mres **canon);

/* A done task: frees the kept outputs it needs no more (all once no copy
 * is out and no pair is queued, else all but the accepted one's). */
void cairn__valid_settle(mrep *r, int64_t accepted);
/* Frees every kept output and file list (the round ends or the task failed). */
void cairn__valid_free(mrep *r);

/* The result of r with index idx, or NULL. */
mres *cairn__valid_find(mrep *r, int64_t idx);
/* Records the verdict on a and b. */
void cairn__valid_set(mrep *r, mres *a, mres *b, int agree);

/* The command runner (vcmd.c). open: its queue, before the core loads
 * (a restart queues the pairs still undecided); start: its thread, once
 * the journal is open; close: stops it (kills a running program), before
 * the journal closes. push runs under c->lock, O(1) amortised. */
int cairn__vcmd_open(cairn__core *c);
int cairn__vcmd_start(cairn__core *c);
void cairn__vcmd_close(cairn__core *c);
int cairn__vcmd_push(cairn__core *c, const cairn__vpair *p);


#endif
