/* autosize.h — tasks that size themselves (docs/jobs.md, "Automatic
 * sizes"): what a worker measured of a run (its usage: peak resident memory,
 * peak disk of its task directory, wall time; its CPU time is the result's
 * "cpu_seconds"), the largest measurements of a category of tasks, and the
 * policy that turns them into a request, or a failed attempt's amount into
 * the next one's. Pure functions over plain structs, used by the job file
 * parser, the worker's result and the master's sizing (server/core/size.c).
 *
 * The policy, in MiB:
 *   a category not measured yet    the asking worker's whole offer
 *   memory, disk once measured     the largest peak + 25 %, at least the
 *                                  peak + 64 MiB (cairn__autosize_amount)
 *   cores once measured            1, or ceil(CPU time / wall time - 0.25)
 *                                  when the largest ratio says more
 *   each field                     at most the largest offer seen
 *   after a kill for memory/disk   twice the amount the attempt ran under,
 *                                  at most a cap (cairn__autosize_grow)
 * It follows Work Queue's automatic categories ([WQ-categories],
 * docs/references.md: whole workers first, then what was measured), with
 * its own margin and a doubling instead of a jump to a whole worker.
 */
#ifndef CAIRN_AUTOSIZE_H
#define CAIRN_AUTOSIZE_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "common/resources.h"

/* The key of a result's measurements (feature "usage", docs/protocol.md),
 * and the bounds of its fields: bytes at most 2^50 (1 PiB), seconds at
 * most 30 days. */
#define CAIRN_USAGE_KEY "usage"
#define CAIRN_MAX_USAGE_BYTES (1ll << 50)
#define CAIRN_MAX_USAGE_SECONDS (30.0 * 24 * 3600)

/* A job's categories (distinct "category" labels, the job's default one
 * included) and a label's length: 1 to 64 printable ASCII bytes. */
#define CAIRN_MAX_CATEGORIES 64
#define CAIRN_MAX_CATEGORY_LEN 64

/* The margin over a measured peak: +25 %, at least +64 MiB; the CPU
 * ratio's slack before it asks one more core. */
#define CAIRN_AUTOSIZE_MARGIN_PCT 25
#define CAIRN_AUTOSIZE_MARGIN_MIB 64
#define CAIRN_AUTOSIZE_CORE_SLACK 0.25

/* A task's sizing flags (job file: "resources": "auto", "retry_larger"). */
enum { CAIRN_SIZE_AUTO = 1, CAIRN_SIZE_RETRY_LARGER = 2 };

/* One run's measurements; a field < 0: not measured. */
typedef struct cairn__usage {
  int64_t memory_bytes; /* peak resident memory of its processes */
  int64_t disk_bytes;   /* peak bytes allocated under its task directory */
  double wall_seconds;  /* wall-clock time of the run */
} cairn__usage;

#define CAIRN_USAGE_NONE ((cairn__usage){-1, -1, -1})

/* The largest measurements of a category's successful runs. */
typedef struct cairn__peak {
  int64_t memory_mib, disk_mib; /* rounded up to whole MiB */
  double cpu_ratio;             /* CPU time over wall time */
  int measured;                 /* 1 once a run with a usage was noted */
} cairn__peak;

/* Reads a result's "usage": an object with any of "memory_bytes",
 * "disk_bytes" (integers from 0 to CAIRN_MAX_USAGE_BYTES) and
 * "wall_seconds" (a finite number from 0 to CAIRN_MAX_USAGE_SECONDS); a
 * key absent is not measured. Anything else is CAIRN_EINVAL naming the
 * field, and *u is not to be used. */
cairn_status cairn__usage_parse(const json_t *v, cairn__usage *u, cairn_error *err);
/* u as that object (the fields measured); NULL when out of memory. */
json_t *cairn__usage_json(const cairn__usage *u);
/* 1 when u measured something. */
int cairn__usage_any(const cairn__usage *u);

/* Notes a successful run's usage u, with its CPU time (< 0: unknown), in
 * p: each peak is the largest seen. Returns 1 when p changed. O(1). */
int cairn__peak_note(cairn__peak *p, const cairn__usage *u, double cpu_seconds);

/* The amount asked for a peak of peak_mib MiB: max(peak + 25 %, peak + 64),
 * rounded up. */
int64_t cairn__autosize_amount(int64_t peak_mib);
/* The cores asked for a CPU ratio: max(1, ceil(ratio - 0.25)). */
int64_t cairn__autosize_cores(double cpu_ratio);
/* The request of a task of a category measured as p: whole (the asking
 * worker's whole offer) while p is not measured, else the amounts above;
 * each field at most cap's when cap is not NULL (the largest offer seen),
 * and cores at least 1. */
cairn__resources cairn__autosize_request(const cairn__peak *p, const cairn__resources *whole,
                                        const cairn__resources *cap);
/* The amount after an attempt killed at failed_mib: twice it, at most
 * cap_mib (< 0: no cap); 0 when that is not more than failed_mib (nothing
 * to grow to) or failed_mib <= 0. */
int64_t cairn__autosize_grow(int64_t failed_mib, int64_t cap_mib);

/* 1 when s is a category label (see CAIRN_MAX_CATEGORY_LEN). */
int cairn__category_valid(const char *s);

#endif
