/* appenv.h — the whole environment of a program app (docs/worker.md,
 * "The app's environment"): nothing of the worker's own (no
 * CAIRN_INVITATION, no token, no LD_PRELOAD), only fixed entries (PATH,
 * HOME, TMPDIR, LANG unless the task sets it, CAIRN_JOB, CAIRN_TASK_ID,
 * CAIRN_INDEX, CAIRN_PROGRESS_FILE, CAIRN_RESUMED when resumed), then the
 * task's variables (the master and cairn__task_run_parse refused the
 * denied names). Private to worker/.
 */
#ifndef CAIRN_APPENV_H
#define CAIRN_APPENV_H

#include "worker/task.h"

/* NULL-terminated, for task t in its directory dir (absolute); free with
 * cairn__app_env_free. NULL when out of memory. */
char **cairn__app_env(const cairn__task *t, const char *dir);
void cairn__app_env_free(char **env, const cairn__task *t);

#endif
