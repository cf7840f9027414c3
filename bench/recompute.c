/* recompute.c — how long a lost output's recompute holds the core's lock
 * on a large job, in place (the policy's reset, plan/policy.h) against
 * the policy rebuild it used to do.
 *
 *   bench-recompute [--tasks N] [--width W] [--samples S] [--policy P]
 *
 * Drives an in-process core (server/core/core.h, a real SQLite file, durable
 * off): a job of N tasks in W chains (task k after task k-W), policy P
 * (ic), one volunteer runs its first 2W tasks. Then S times each,
 * interleaved, a done task of the second level is recomputed under one
 * hold of c->lock (cairn__core_recompute: the task eligible again, its
 * child waiting for it): "in place" as the master does it, and "rebuild"
 * with cairn__job_rebuild_policy(j) added in the same hold, which is what
 * the recompute cost before. Prints the medians and ends with
 *   recompute: tasks=N in_place_us=X rebuild_us=Y ratio=Y/X
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int64_t submit(cairn__core *c, int n, int w, const char *policy) {
  json_t *tasks = json_array();
  for (int k = 0; k < n; k++) {
    char id[16], parent[16];
    snprintf(id, sizeof id, "t%d", k);
    json_t *t = json_pack("{s:s}", "id", id);
    if (k >= w) {
      snprintf(parent, sizeof parent, "t%d", k - w);
      json_object_set_new(t, "after", json_pack("[s]", parent));
    }
    json_array_append_new(tasks, t);
  }
  json_t *job = json_pack("{s:s, s:s, s:o}", "app", "sq", "policy", policy, "tasks", tasks);
  char *text = json_dumps(job, JSON_COMPACT);
  json_decref(job);
  int64_t id = core_fixture_submit(c, text);
  free(text);
  return id;
}

/* One hold of the lock: recompute task v of job (and rebuild its policy
 * when asked); the microseconds the lock was held, the job's look-up
 * apart. */
static double hold(cairn__core *c, int64_t job, uint32_t v, int rebuild) {
  cairn_error err = {0};
  pthread_mutex_lock(&c->lock);
  mjob *j = cairn__job_find_locked(c, job);
  double t0 = now_us();
  int bad = cairn__core_recompute(c, j, v, &err) != CAIRN_OK ||
            (rebuild && cairn__job_rebuild_policy(j, &err));
  double t1 = now_us();
  cairn__core_unlock(c);
  if (bad) {
    fprintf(stderr, "bench-recompute: %s\n", err.text);
    exit(1);
  }
  return t1 - t0;
}

int main(int argc, char **argv) {
  int n = 100000, w = 100, samples = 15;
  const char *policy = "ic";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--tasks"))
      n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--width"))
      w = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--samples"))
      samples = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--policy"))
      policy = argv[i + 1];
  }
  if (w < 1 || n < 3 * w || samples < 1 || samples > w) {
    fprintf(stderr, "usage: bench-recompute [--tasks N] [--width W] [--samples S <= W] "
                    "[--policy P] (N >= 3W)\n");
    return 2;
  }
  void *state = NULL;
  if (core_fixture_setup(&state)) {
    fprintf(stderr, "bench-recompute: no temporary folder\n");
    return 1;
  }
  core_fixture *f = state;
  cairn__core *c = f->c;
  char *apps[] = {"sq"}, token[65];
  int64_t vol = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, "v", "rack", apps, 1, 1, NULL, &vol, token, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-recompute: register: %s\n", err.text);
    return 1;
  }
  int64_t job = submit(c, n, w, policy);
  for (int k = 0; k < 2 * w; k++) { /* the first two levels, in the policy's order */
    json_t *wk = NULL;
    int retry = 0;
    if (cairn__core_work(c, vol, NULL, NULL, 0, &wk, &retry, &err) != CAIRN_OK || !wk) {
      fprintf(stderr, "bench-recompute: no work after %d tasks\n", k);
      return 1;
    }
    int64_t idx = (int64_t)json_integer_value(json_object_get(wk, "index"));
    json_decref(wk);
    if (cairn__core_result(c, vol, idx, 0, NULL, "ok\n", 3, NULL, NULL, &err) != CAIRN_OK) {
      fprintf(stderr, "bench-recompute: result: %s\n", err.text);
      return 1;
    }
  }
  double *in_place = malloc((size_t)samples * sizeof *in_place);
  double *rebuilt = malloc((size_t)samples * sizeof *rebuilt);
  int got = 0;
  for (uint32_t v = (uint32_t)w; v < (uint32_t)(2 * w) && got < samples; v += 2) {
    if (core_fixture_task(c, job, v).state != TS_DONE ||
        core_fixture_task(c, job, v + 1).state != TS_DONE)
      continue;
    in_place[got] = hold(c, job, v, 0);
    rebuilt[got] = hold(c, job, v + 1, 1);
    got++;
  }
  if (got == 0) {
    fprintf(stderr, "bench-recompute: no done task on the second level\n");
    return 1;
  }
  qsort(in_place, (size_t)got, sizeof *in_place, cmpd);
  qsort(rebuilt, (size_t)got, sizeof *rebuilt, cmpd);
  double a = in_place[got / 2], b = rebuilt[got / 2];
  printf("job of %d tasks (%d chains), policy %s, %d samples each, lock held per recompute:\n", n, w,
         policy, got);
  printf("  in place (reset):      median %.1f us (min %.1f, max %.1f)\n", a, in_place[0],
         in_place[got - 1]);
  printf("  with policy rebuild:   median %.1f us (min %.1f, max %.1f)\n", b, rebuilt[0],
         rebuilt[got - 1]);
  printf("recompute: tasks=%d in_place_us=%.1f rebuild_us=%.1f ratio=%.0f\n", n, a, b,
         a > 0 ? b / a : 0);
  free(in_place);
  free(rebuilt);
  core_fixture_teardown(&state);
  return 0;
}
