/* demand.h — what the master's work asks of a worker factory
 * (GET /v1/demand, admin; docs/protocol.md): the eligible tasks, the leases
 * out, the distinct resource requests of the eligible tasks, and the
 * volunteers present and idle.
 *
 * Bounds: every count is kept incrementally under c->lock, O(1) per change
 * (a task's state, a volunteer's request), so the read is O(E × K) under
 * the lock — E jobs with eligible work (c->runq), K <= 64 requests per job,
 * each found among the distinct ones kept (at most
 * CAIRN__DEMAND_MAX_REQUESTS) by a hash — plus O(CAIRN__DEMAND_WINDOW) for
 * the presence ring; never O(tasks) nor O(volunteers). */
#ifndef CAIRN_SERVER_DEMAND_H
#define CAIRN_SERVER_DEMAND_H

#include "server/core/core.h"

/* At most this many distinct requests are listed ("requests_truncated"). */
#define CAIRN__DEMAND_MAX_REQUESTS 64

/* Task t of j moves from state `from` to state `to` (-1: none, for a task
 * counted at submission or load): keeps j->rclass_eligible true. Under
 * c->lock, O(1). */
static inline void cairn__demand_move(mjob *j, const mtask *t, int from, int to) {
  if (!j->rclass_eligible || t->rclass >= j->nrclasses || from == to)
    return;
  if (from == TS_ELIGIBLE)
    j->rclass_eligible[t->rclass]--;
  if (to == TS_ELIGIBLE)
    j->rclass_eligible[t->rclass]++;
}

/* Volunteer v made a request at now (seconds): it is present, and idle when it
 * holds no lease, until CAIRN__DEMAND_WINDOW seconds pass without another.
 * Under c->lock, O(1). */
void cairn__demand_seen(cairn__core *c, mvol *v, int64_t now);

/* The body of GET /v1/demand (a new reference; NULL out of memory). Takes
 * c->lock; bound above. */
json_t *cairn__core_demand_json(cairn__core *c);

#endif
