/* fit.h — resource requests against offers in the master (docs/jobs.md
 * "Resources"): which tasks a volunteer can take now, the tasks that fit no
 * worker seen ("unfit"), and the tasks set aside ("parked") because of it.
 * Part of the scheduling core: every function here runs under c->lock
 * (except cairn__core_set_offer and cairn__fit_job_init, see below) and
 * costs O(1), or O(the job's distinct requests) where it says so (at most
 * CAIRN_MAX_RESOURCE_CLASSES).
 *
 * A volunteer's free amount is its offer less what the tasks of its leases
 * request. A volunteer that never stated an offer (a worker without the
 * "resources" feature) is not limited: it gets tasks as before, one per
 * request it makes. The largest offer seen is the field-wise maximum over
 * every offer stated; it never shrinks. A task
 * is unfit when a field of its request exceeds it: such a task fits no
 * worker seen, is counted in its job's "unfit" and is parked when the
 * policy picks it, so it does not hold up the tasks behind it. When the
 * largest offer grows, parked tasks are given back to the policy, at most
 * CAIRN__FIT_UNPARK_MAX per job per work request. */
#ifndef CAIRN_FIT_H
#define CAIRN_FIT_H

#include "server/core/core.h"

/* Parked tasks a work request gives back to a job's policy at most. */
#define CAIRN__FIT_UNPARK_MAX 32u

/* Gives job j its request classes (copied; task classes are set by the
 * caller) with n >= 1. 0, or -1 out of memory. Before j is shared. */
int cairn__fit_job_init(mjob *j, const cairn__resources *classes, uint32_t n);
/* Adds a task of class k (counts), before j is shared. */
void cairn__fit_count_task(mjob *j, uint32_t k);
/* The class of request r in j, adding it (before j is shared): its index,
 * or -1 when j has CAIRN_MAX_RESOURCE_CLASSES already or out of memory. */
int cairn__fit_class_of(mjob *j, const cairn__resources *r);
/* Task v's request. */
const cairn__resources *cairn__fit_req(const mjob *j, uint32_t v);
/* What v offers (no limit when it stated nothing). */
cairn__resources cairn__fit_offer(const mvol *v);
/* What v has free now. */
cairn__resources cairn__fit_free(const mvol *v);
/* Sets v's offer (journals it when it changed). */
void cairn__fit_set_offer(cairn__core *c, mvol *v, const cairn__resources *offer);
/* A lease held by vol requesting req (size.h: the task's request then)
 * starts (add = 1) or ends (0). */
void cairn__fit_lease(mvol *vol, const cairn__resources *req, int add);
/* 1 when some request of j fits avail. O(classes). */
int cairn__fit_job_may(const mjob *j, const cairn__resources *avail);
/* 1 when a task requesting req fits avail; 0 when it does not now; -1
 * when req exceeds the largest offer seen (unfit). */
int cairn__fit_check(const cairn__core *c, const cairn__resources *req,
                     const cairn__resources *avail);
/* Parks task v (picked, unfit). 0, or -1 out of memory (then the caller
 * gives it back to the policy). */
int cairn__fit_park(mjob *j, uint32_t v);
/* Gives parked tasks back through requeue when the largest offer grew
 * since they were parked: at most CAIRN__FIT_UNPARK_MAX per call. */
void cairn__fit_unpark(const cairn__core *c, mjob *j, void (*requeue)(mjob *, uint32_t));
/* Adds "unfit" (tasks of j whose request exceeds the largest offer seen; 0
 * before any offer and once j is done) and "largest_offer" (or null) to o.
 * O(classes). */
void cairn__fit_job_json(const cairn__core *c, const mjob *j, json_t *o);
/* Takes the lock: sets volunteer vol's offer (a registration that stated
 * one) and waits until it is durable. */
cairn_status cairn__core_set_offer(cairn__core *c, int64_t vol, const cairn__resources *offer,
                                   cairn_error *err);

#endif
