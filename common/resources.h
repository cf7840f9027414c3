/* resources.h — what a task requests and what a worker offers: cores,
 * memory and disk (docs/jobs.md "Resources", docs/worker.md). Pure
 * functions over a plain struct, used by the job file parser, the worker
 * report, the master's fit checks (server/core/fit.c) and the worker's local
 * pool (worker/respool.c).
 *
 * A request is {cores >= 1, memory_mib >= 0, disk_mib >= 0}; the default
 * is one core and no memory or disk. An offer has the same fields (cores
 * >= 1). A request fits an amount when each of its fields is at most the
 * amount's. */
#ifndef CAIRN_RESOURCES_H
#define CAIRN_RESOURCES_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"

/* Bounds of each field (job file, report, worker flags). */
#define CAIRN_MAX_CORES        4096
#define CAIRN_MAX_RES_MIB      (1ll << 30) /* 1 PiB in MiB */
/* The key of the object in a job file, a task, a report and a work offer. */
#define CAIRN_RESOURCES_KEY    "resources"

typedef struct cairn__resources {
  int64_t cores, memory_mib, disk_mib;
} cairn__resources;

/* One core, no memory, no disk. */
#define CAIRN_RESOURCES_DEFAULT ((cairn__resources){1, 0, 0})

/* 1 when every field of req is at most avail's. */
int cairn__resources_fit(const cairn__resources *req, const cairn__resources *avail);
/* *acc += r (add = 1) or *acc -= r (add = 0); fields never go below 0. */
void cairn__resources_add(cairn__resources *acc, const cairn__resources *r, int add);
/* Field-wise largest of *acc and r, into *acc. */
void cairn__resources_max(cairn__resources *acc, const cairn__resources *r);
int cairn__resources_equal(const cairn__resources *a, const cairn__resources *b);

/* Tasks that fit no worker: the sum of counts[k] over the requests
 * classes[k] (k < n) that do not fit largest. O(n). */
uint64_t cairn__resources_unfit(const cairn__resources *classes, const uint32_t *counts, uint32_t n,
                               const cairn__resources *largest);

/* Reads a "resources" object: keys "cores" (1 to CAIRN_MAX_CORES),
 * "memory_mib" and "disk_mib" (0 to CAIRN_MAX_RES_MIB); a missing key keeps
 * its value from *def. Any other key, a value that is not an integer in
 * range or v not an object: CAIRN_EINVAL with err naming where and the
 * key (e.g. `task "a": resources: "cores" must be an integer from 1 to
 * 4096`). */
cairn_status cairn__resources_parse(const json_t *v, const cairn__resources *def,
                                   cairn__resources *out, const char *where, cairn_error *err);
/* {"cores": .., "memory_mib": .., "disk_mib": ..}; NULL when out of memory. */
json_t *cairn__resources_json(const cairn__resources *r);

#endif
