/* ban.c — the longest hold of the core's lock during the ban of a
 * volunteer with many results: all of them under one hold (as the ban was
 * before it ran in slices) against slices of --slice results each.
 *
 *   bench-ban [--results N] [--jobs J] [--slice K] [--samples S]
 *
 * Drives an in-process core (server/core/core.h, a real SQLite file, durable
 * off): J jobs of N/J independent tasks (fifo), one volunteer computes
 * every task, then it is banned (every task re-queued). S times each,
 * interleaved, on a fresh core: "one hold" (the slice as large as the
 * results) and "sliced" (K). While the ban runs, a probe thread takes and
 * releases c->lock every 100 us, as a request would: the longest it
 * waited is what the ban made others wait, whatever the core's code.
 * Prints each run's longest wait of the probe, the longest hold of the
 * lock by a step of the ban (as the core counts it) and the ban's wall
 * time, then the medians of the longest waits:
 *   ban: results=N one_hold_wait_ms=X sliced_wait_ms=Y ratio=X/Y
 * Built against a core whose ban is one hold (no CAIRN__BAN_SLICE), it
 * runs only "one hold" and has no count of its own.
 */
#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void submit(cairn__core *c, int n, int job) {
  json_t *tasks = json_array();
  for (int k = 0; k < n; k++) {
    char id[32];
    snprintf(id, sizeof id, "j%dt%d", job, k);
    json_array_append_new(tasks, json_pack("{s:s}", "id", id));
  }
  json_t *spec = json_pack("{s:s, s:s, s:o}", "app", "sq", "policy", "fifo", "tasks", tasks);
  char *text = json_dumps(spec, JSON_COMPACT);
  json_decref(spec);
  core_fixture_submit(c, text);
  free(text);
}

typedef struct probe {
  cairn__core *c;
  int stop, ready; /* ready: it took the lock once (the ban starts then) */
  double worst; /* ms */
} probe;

static void *probe_run(void *arg) {
  probe *p = arg;
  while (!__atomic_load_n(&p->stop, __ATOMIC_SEQ_CST)) {
    double t0 = now_ms();
    pthread_mutex_lock(&p->c->lock);
    double waited = now_ms() - t0;
    cairn__core_unlock(p->c);
    __atomic_store_n(&p->ready, 1, __ATOMIC_SEQ_CST);
    if (waited > p->worst)
      p->worst = waited;
    nanosleep(&(struct timespec){0, 100000}, NULL);
  }
  return NULL;
}

/* A fresh core where one volunteer computed n tasks in jobs jobs, banned
 * slice results a slice (0: all in one); the ban's wall time in *wall, its
 * longest hold of the lock as the core counts it in *held (-1: not
 * counted), and the probe's longest wait for the lock, in milliseconds. */
static double run(int n, int jobs, unsigned slice, double *wall, double *held) {
  void *state = NULL;
  if (core_fixture_setup(&state)) {
    fprintf(stderr, "bench-ban: no temporary folder\n");
    exit(1);
  }
  core_fixture *f = state;
  cairn__core *c = f->c;
  char *apps[] = {"sq"}, token[65];
  int64_t vol = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, "liar", "rack", apps, 1, 1, NULL, &vol, token, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-ban: register: %s\n", err.text);
    exit(1);
  }
  for (int j = 0; j < jobs; j++)
    submit(c, n / jobs, j);
  for (int k = 0; k < n / jobs * jobs; k++) {
    json_t *wk = NULL;
    int retry = 0;
    if (cairn__core_work(c, vol, NULL, NULL, 0, &wk, &retry, &err) != CAIRN_OK || !wk) {
      fprintf(stderr, "bench-ban: no work after %d tasks\n", k);
      exit(1);
    }
    int64_t idx = (int64_t)json_integer_value(json_object_get(wk, "index"));
    json_decref(wk);
    if (cairn__core_result(c, vol, idx, 0, NULL, "ok\n", 3, NULL, NULL, &err) != CAIRN_OK) {
      fprintf(stderr, "bench-ban: result: %s\n", err.text);
      exit(1);
    }
  }
#ifdef CAIRN__BAN_SLICE
  cairn__ban_set_slice(c, slice ? slice : 0xffffffffu);
  cairn__ban_reset_hold(c);
#else
  (void)slice;
#endif
  json_t *rep = NULL;
  probe pr = {c, 0, 0, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, probe_run, &pr)) {
    fprintf(stderr, "bench-ban: no probe thread\n");
    exit(1);
  }
  while (!__atomic_load_n(&pr.ready, __ATOMIC_SEQ_CST))
    nanosleep(&(struct timespec){0, 100000}, NULL);
  pr.worst = 0;
  double t0 = now_ms();
  if (cairn__core_ban(c, vol, "bench", &rep, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-ban: ban: %s\n", err.text);
    exit(1);
  }
  *wall = now_ms() - t0;
  __atomic_store_n(&pr.stop, 1, __ATOMIC_SEQ_CST);
  pthread_join(th, NULL);
  if (json_integer_value(json_object_get(rep, "tasks_requeued")) != n / jobs * jobs) {
    fprintf(stderr, "bench-ban: the ban re-queued %lld tasks, not %d\n",
            (long long)json_integer_value(json_object_get(rep, "tasks_requeued")), n);
    exit(1);
  }
  json_decref(rep);
#ifdef CAIRN__BAN_SLICE
  *held = (double)c->ban->hold_max_ns / 1e6;
#else
  *held = -1;
#endif
  core_fixture_teardown(&state);
  return pr.worst;
}

int main(int argc, char **argv) {
  int n = 100000, jobs = 4, samples = 3;
  unsigned slice = 256;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!strcmp(argv[i], "--results"))
      n = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--jobs"))
      jobs = atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--slice"))
      slice = (unsigned)atoi(argv[i + 1]);
    else if (!strcmp(argv[i], "--samples"))
      samples = atoi(argv[i + 1]);
  }
  if (n < 1 || jobs < 1 || jobs > n || slice < 1 || samples < 1 || samples > 99) {
    fprintf(stderr, "usage: bench-ban [--results N] [--jobs J <= N] [--slice K >= 1] "
                    "[--samples S <= 99]\n");
    return 2;
  }
  double one[99], sliced[99], w, h;
  printf("ban of a volunteer with %d results in %d jobs; the longest wait for the lock while "
         "it ran:\n", n, jobs);
  for (int s = 0; s < samples; s++) {
    one[s] = run(n, jobs, 0, &w, &h);
    printf("  one hold:        wait %9.3f ms, held %9.3f ms, ban %.0f ms\n", one[s], h, w);
#ifdef CAIRN__BAN_SLICE
    sliced[s] = run(n, jobs, slice, &w, &h);
    printf("  slices of %-5u  wait %9.3f ms, held %9.3f ms, ban %.0f ms\n", slice, sliced[s], h,
           w);
#else
    sliced[s] = one[s];
#endif
  }
  qsort(one, (size_t)samples, sizeof *one, cmpd);
  qsort(sliced, (size_t)samples, sizeof *sliced, cmpd);
  double a = one[samples / 2], b = sliced[samples / 2];
  printf("ban: results=%d one_hold_wait_ms=%.3f sliced_wait_ms=%.3f slice=%u ratio=%.0f\n", n, a,
         b, slice, b > 0 ? a / b : 0);
  return 0;
}
