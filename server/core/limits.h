/* limits.h — what tasks run under (limits.c): the ceiling of their limits,
 * hard deadlines, failure reasons and the retry hold. Private to server/. */
#ifndef CAIRN_SERVER_LIMITS_H
#define CAIRN_SERVER_LIMITS_H

#include <jansson.h>

#include "server/model/state.h"

/* ---- limits.c: what tasks run under, hard deadlines, failure reasons ---- */
/* The seconds a lease outlives its task's wall limit unless set. */
#define CAIRN_DEFAULT_WALL_GRACE_SECONDS 30
/* Seconds a task that failed on a volunteer is kept from that volunteer,
 * so that another one gets it first: longer than a worker's longest poll
 * back-off (5 s). */
#define CAIRN_RETRY_HOLD_SECONDS 6
/* Sets the ceiling (0: none for a limit) and the wall grace (0: the
 * default) before serving; recomputes the hard deadlines of the leases
 * loaded from the store (O(leases)). CAIRN_EINVAL naming a bad value. */
cairn_status cairn__core_set_limits(cairn__core *c, const int64_t ceiling[CAIRN_LIMIT_COUNT],
                                    int wall_grace, cairn_error *err);
/* Checks spec's limits against c's ceiling (refused naming the limit and
 * the flag) and gives unset limits the ceiling. O(tasks), no lock. */
cairn_status cairn__core_check_limits(const cairn__core *c, cairn__jobspec *spec, cairn_error *err);
/* The lease's hard deadline for task t issued at issued (0: none). O(1). */
int64_t cairn__lease_hard(const cairn__core *c, const mtask *t, int64_t issued);
/* expires, capped at l's hard deadline. O(1). */
int64_t cairn__lease_cap(const mlease *l, int64_t expires);
/* Sets t->run_json (owned copy; NULL for an empty run) and t->wall. 0, or -1
 * out of memory. */
int cairn__task_set_run(mtask *t, const char *run_json);
/* Adds t's "limits", "env", "stdin" to task (a work offer's "task"). */
void cairn__task_offer_run(const mtask *t, json_t *task);
/* Counts a failed attempt of t on volunteer vol by reason (under the lock):
 * cairn_task_failures_total, and vol is passed over for t a while. O(1). */
void cairn__task_failed(cairn__core *c, mtask *t, int64_t vol, const char *reason);
/* Counts v among the volunteers of each app it declared (under the lock at
 * registration, or at load). O(apps of v). 0, or -1 out of memory. */
int cairn__app_runners_add(cairn__core *c, const mvol *v);
/* 1 when task t of job j should go to another volunteer than vol first:
 * vol failed it last, less than CAIRN_RETRY_HOLD_SECONDS ago, and another
 * registered volunteer declared j's app. O(1). */
int cairn__task_pass_over(const cairn__core *c, const mjob *j, const mtask *t, int64_t vol,
                          int64_t now);
/* GET /v1/jobs/{id}/tasks/{key}: the task with its run and every attempt
 * (index, volunteer, lease state, exit status, reason), and the progress
 * its workers reported ("progress" of the task and of each attempt still
 * leased, when reported). Under the lock O(1) (the key is found by its
 * offset in the job); the attempts are read from the store after, and the
 * progress of those leased looked up in one more hold, O(1) each. NULL
 * with err (CAIRN_ENOTFOUND, ...). */
json_t *cairn__core_task_json(cairn__core *c, int64_t job, int64_t key, cairn_error *err);

#endif
