/* result.h — deliver a task's result: PUT /v1/results/{index} with
 * {"exit_status": N, "output": "..."}; the output goes as a JSON string when
 * it is valid UTF-8 without NUL bytes, else as base64 with
 * "encoding": "base64". Private to worker/.
 */
#ifndef CAIRN_RESULT_H
#define CAIRN_RESULT_H

#include <jansson.h>
#include <stddef.h>

#include "common/autosize.h"
#include "worker/outputs.h"
#include "worker/session.h"

typedef enum cairn__delivery {
  CAIRN__DELIVERED,  /* 200: the master stored it */
  CAIRN__DROPPED,    /* refused for good (409 lease lost, 403, 404, 400, 413) */
  CAIRN__ABANDONED,  /* the worker stopped before the master answered */
  CAIRN__FATAL,      /* re-registration was refused: the worker must stop */
  CAIRN__UNREACHABLE /* cairn__result_try only: no answer, 429 or 5xx */
} cairn__delivery;

/* The request body (caller frees), or NULL on out of memory. next != 0 adds
 * "next": true; a non-empty reason adds "reason" (send it only to a master
 * that lists the feature "reason"); x (may be NULL) adds "stderr" (+
 * "stderr_encoding": "base64" when it is not UTF-8 without NUL) and
 * "outputs"; cpu_seconds >= 0 adds "cpu_seconds" (capped at
 * CAIRN_MAX_CPU_SECONDS; send it only to a master that lists "cpu");
 * usage (may be NULL) adds "usage" when it measured something (send it
 * only to a master that lists "usage"). */
char *cairn__result_json(int exit_status, const char *reason, const void *output, size_t len,
                         int next, const cairn__outputs *x, double cpu_seconds,
                         const cairn__usage *usage);

/* The same body as a JSON object (caller owns), for an entry of a batch. */
json_t *cairn__result_obj(int exit_status, const char *reason, const void *output, size_t len,
                          int next, const cairn__outputs *x, double cpu_seconds,
                          const cairn__usage *usage);

/* POST /v1/results with body, a batch of n results (feature "batch"), as
 * cairn__result_deliver sends one; the 200 answer's per-entry statuses are
 * the caller's to read. */
cairn__delivery cairn__results_deliver(cairn__session *s, cairn__conn *c, size_t n,
                                       const char *body, size_t max_answer, cairn__buf *answer,
                                       long *status_out, cairn_error *err);

/* Sends body for index, retrying transient failures (master down or
 * restarting, 429, 5xx) with backoff until delivered or the stopper stops.
 * err explains DROPPED and FATAL; *status is the last HTTP status (0: none).
 * When answer is not NULL it receives the body of the 200 answer, capped at
 * max_answer bytes (caller frees with cairn__buf_free; empty otherwise). */
cairn__delivery cairn__result_deliver(cairn__session *s, cairn__conn *c, long long index,
                                      const char *body, size_t max_answer, cairn__buf *answer,
                                      long *status, cairn_error *err);

/* cairn__result_deliver's first try only: UNREACHABLE (err saying why)
 * where it would try again. */
cairn__delivery cairn__result_try(cairn__session *s, cairn__conn *c, long long index,
                                  const char *body, size_t max_answer, cairn__buf *answer,
                                  long *status, cairn_error *err);

#endif
