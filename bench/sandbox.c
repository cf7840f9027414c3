/* sandbox.c — bench-sandbox: what the task sandbox (worker/sandbox.h) costs
 * each task: the spawn and exit of /bin/true through cairn__run (the
 * worker's runner, worker/runner.h), directly and in the bubblewrap
 * sandbox, taking turns in one run.
 *
 *   bench-sandbox [--runs N]     (N from 1 to 10000, default 200 of each)
 *
 * Each run is timed from cairn__run's call to its return (vfork, exec,
 * wait, and for the sandbox bwrap's namespaces and mounts and its reaper
 * shell). Prints the median, 10th and 90th percentiles of each and the ratio
 * of the medians, sandbox over direct. Exits 1 when the sandbox does not
 * work here (saying why) or a run fails.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "worker/runner.h"
#include "worker/sandbox.h"

#define MAX_RUNS 10000

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* One run of /bin/true in dir; its milliseconds, or -1 when it failed. */
static double one(const char *dir, const cairn__sandbox *sb) {
  cairn__run_spec spec = {.path = "/usr/bin/true", .dir = dir, .max_output = 4096,
                          .sandbox = sb};
  cairn__run_result res;
  cairn_error err = {0};
  double t0 = now_ms();
  cairn_status st = cairn__run(&spec, &res, &err);
  double ms = now_ms() - t0;
  cairn__buf_free(&res.output);
  if (st != CAIRN_OK || res.exit_status != 0) {
    fprintf(stderr, "bench-sandbox: run failed: %s%s\n", err.text, res.note);
    return -1;
  }
  return ms;
}

static void report(const char *what, double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("%-8s runs=%d median_ms=%.3f p10_ms=%.3f p90_ms=%.3f\n", what, n, v[n / 2],
         v[n / 10], v[n * 9 / 10]);
}

int main(int argc, char **argv) {
  int runs = 200;
  if (argc == 3 && strcmp(argv[1], "--runs") == 0)
    runs = atoi(argv[2]);
  else if (argc != 1)
    return fprintf(stderr, "usage: bench-sandbox [--runs N]\n"), 2;
  if (runs < 1 || runs > MAX_RUNS)
    return fprintf(stderr, "bench-sandbox: --runs wants 1 to %d\n", MAX_RUNS), 2;
  char dir[] = "/tmp/bench-sandbox-XXXXXX", why[400], errpath[64];
  if (!mkdtemp(dir))
    return perror("mkdtemp"), 1;
  snprintf(errpath, sizeof errpath, "%s/stderr", dir);
  cairn__sandbox sb = {0};
  cairn__sandbox_host(&sb);
  int rc = 1;
  double *direct = calloc((size_t)runs, sizeof *direct);
  double *boxed = calloc((size_t)runs, sizeof *boxed);
  if (!direct || !boxed)
    goto out;
  if (cairn__sandbox_probe(&sb, dir, why, sizeof why) != 0) {
    fprintf(stderr, "bench-sandbox: the sandbox does not work here: %s\n", why);
    goto out;
  }
  for (int i = 0; i < runs; i++) /* taking turns, so that load touches both alike */
    if ((direct[i] = one(dir, NULL)) < 0 || (boxed[i] = one(dir, &sb)) < 0)
      goto out;
  report("direct", direct, runs);
  report("sandbox", boxed, runs);
  printf("sandbox/direct median ratio=%.2f, cost per task=%.3f ms\n",
         boxed[runs / 2] / direct[runs / 2], boxed[runs / 2] - direct[runs / 2]);
  rc = 0;
out:
  free(direct);
  free(boxed);
  unlink(errpath);
  rmdir(dir);
  return rc;
}
