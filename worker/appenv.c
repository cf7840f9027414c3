/* appenv.c — a program app's environment (appenv.h). */
#include "worker/appenv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "worker/fsutil.h"
#include "worker/resume.h"

#define APP_PATH "/usr/local/bin:/usr/bin:/bin" /* PATH: fixed, the same on every worker */
#define APP_LANG "C.UTF-8"                      /* LANG unless the task sets it */
#define APP_ENV_BASE 9u /* PATH HOME TMPDIR LANG CAIRN_x3, CAIRN_PROGRESS_FILE, CAIRN_RESUMED */

static char *env_entry(const char *name, const char *value) {
  size_t n = strlen(name) + strlen(value) + 2;
  char *e = malloc(n);
  if (e)
    snprintf(e, n, "%s=%s", name, value);
  return e;
}

/* Frees the n entries of env (NULL ones skipped) and env. */
static void free_env(char **env, size_t n) {
  for (size_t i = 0; env && i < n; i++)
    free(env[i]);
  free(env);
}

static int task_sets(const cairn__task *t, const char *name) {
  for (uint32_t i = 0; i < t->run.nenv; i++)
    if (strcmp(t->run.env_names[i], name) == 0)
      return 1;
  return 0;
}

char **cairn__app_env(const cairn__task *t, const char *dir) {
  char job[32], idx[32];
  size_t n = t->run.nenv + APP_ENV_BASE, k = 0;
  char **env = calloc(n + 1, sizeof *env);
  if (!env)
    return NULL;
  snprintf(job, sizeof job, "%lld", t->job);
  snprintf(idx, sizeof idx, "%lld", t->index);
  int bad = !(env[k++] = env_entry("PATH", APP_PATH));
  bad |= !(env[k++] = env_entry("HOME", dir));
  bad |= !(env[k++] = env_entry("TMPDIR", dir));
  if (!task_sets(t, "LANG"))
    bad |= !(env[k++] = env_entry("LANG", APP_LANG));
  bad |= !(env[k++] = env_entry("CAIRN_JOB", job));
  bad |= !(env[k++] = env_entry("CAIRN_TASK_ID", t->id));
  bad |= !(env[k++] = env_entry("CAIRN_INDEX", idx));
  char *progress = cairn__path_join(dir, CAIRN__PROGRESS_NAME); /* resume.h */
  bad |= !progress || !(env[k++] = env_entry("CAIRN_PROGRESS_FILE", progress));
  free(progress);
  if (t->resumed)
    bad |= !(env[k++] = env_entry("CAIRN_RESUMED", "1"));
  for (uint32_t i = 0; i < t->run.nenv; i++)
    bad |= !(env[k++] = env_entry(t->run.env_names[i], t->run.env_values[i]));
  if (bad) {
    free_env(env, n);
    return NULL;
  }
  return env;
}

void cairn__app_env_free(char **env, const cairn__task *t) {
  free_env(env, t->run.nenv + APP_ENV_BASE);
}
