/* demand.c — the cost of GET /v1/demand's answer under the core's lock
 * (server/core/demand.h) as the job and the volunteer population grow: an
 * in-process core on a real SQLite file, one job of T independent tasks
 * (all eligible) and V registered volunteers, each of which just made a
 * request; prints the median time of cairn__core_demand_json over 2,000
 * calls for each (T, V). The bound says it should not grow with T or V.
 * Then the worst case of the bound, O(E × K): E jobs with work, each of 64
 * tasks of 64 distinct requests (the most a job has), the same 64 in every
 * job. The times include rendering the JSON, which happens after the lock.
 * usage: bench-demand */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/demand.h"
#include "tests/support/core_fixture.h"

#define CALLS 2000

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A job of n independent tasks (malloc'd text); distinct: each asks for its
 * own memory (1 + i MiB). */
static char *job_text(int n, int distinct) {
  size_t cap = 64 + (size_t)n * 80;
  char *s = malloc(cap);
  size_t len = (size_t)snprintf(s, cap, "{\"name\": \"b\", \"app\": \"cell\", \"tasks\": [");
  for (int i = 0; i < n; i++) {
    len += (size_t)snprintf(s + len, cap - len, "%s{\"id\": \"t%d\", \"args\": []", i ? "," : "", i);
    len += distinct ? (size_t)snprintf(s + len, cap - len,
                                       ", \"resources\": {\"memory_mib\": %d}}", 1 + i)
                    : (size_t)snprintf(s + len, cap - len, "}");
  }
  snprintf(s + len, cap - len, "]}");
  return s;
}

/* jobs jobs of tasks tasks each (distinct requests or not), vols volunteers. */
static void run(int jobs, int tasks, int distinct, int vols) {
  void *state = NULL;
  if (core_fixture_setup(&state))
    exit(1);
  core_fixture *f = state;
  char *text = job_text(tasks, distinct);
  for (int j = 0; j < jobs; j++)
    core_fixture_submit(f->c, text);
  free(text);
  char *apps[] = {"cell"}, token[65];
  for (int v = 0; v < vols; v++) {
    int64_t id;
    cairn_error err = {0};
    char name[32];
    snprintf(name, sizeof name, "v%d", v);
    if (cairn__core_register(f->c, name, "rack", apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK)
      exit(1);
  }
  static double t[CALLS];
  long long eligible = 0, present = 0, nreq = 0;
  for (int i = 0; i < CALLS; i++) {
    double a = now_us();
    json_t *d = cairn__core_demand_json(f->c);
    t[i] = now_us() - a;
    eligible = json_integer_value(json_object_get(d, "eligible"));
    present = json_integer_value(json_object_get(json_object_get(d, "volunteers"), "present"));
    nreq = (long long)json_array_size(json_object_get(d, "requests"));
    json_decref(d);
  }
  qsort(t, CALLS, sizeof t[0], cmp);
  printf("| %d | %d | %lld | %lld | %d | %lld | %.1f | %.1f |\n", jobs, jobs * tasks, eligible,
         nreq, vols, present, t[CALLS / 2], t[CALLS * 99 / 100]);
  core_fixture_teardown(&state);
}

int main(void) {
  printf("GET /v1/demand's answer (cairn__core_demand_json), median and p99 of %d calls\n\n",
         CALLS);
  printf("| jobs | tasks | eligible | requests | volunteers | present | median us | p99 us |\n");
  printf("|---|---|---|---|---|---|---|---|\n");
  int tasks[] = {1000, 100000}, vols[] = {10, 10000};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      run(1, tasks[i], 0, vols[k]);
  run(10, 64, 1, 10);
  run(1000, 64, 1, 10);
  return 0;
}
