/* callback.h — runs a task with a C callback app (cairn_task_fn) on the
 * calling thread, presenting the task as a cairn_task and its output as a
 * capped cairn_task_output. Private to worker/.
 */
#ifndef CAIRN_CALLBACK_H
#define CAIRN_CALLBACK_H

#include "cairn/worker.h"
#include "worker/resume.h"
#include "worker/runner.h"
#include "worker/task.h"
#include "worker/taskdir.h"

/* Calls fn and fills *res like cairn__run() does for a program: EXITED with
 * the returned status (outside 0..255 becomes 255); OVERFLOW when it wrote
 * more than max_output (status as returned, or 1 when it returned 0);
 * CANCELLED when cancel fired meanwhile. res->cpu_seconds is the CPU time
 * of the calling thread during fn (CLOCK_THREAD_CPUTIME_ID). The task's
 * cairn_task_progress() reports go to slot's entry of rs (NULL: none). */
cairn_status cairn__callback_run(cairn_task_fn fn, void *userdata, const cairn__task *t,
                                 const cairn__taskdir *d, const cairn__cancel *cancel,
                                 size_t max_output, cairn__resume *rs, size_t slot,
                                 cairn__run_result *res, cairn_error *err);

#endif
