/* demand.c — the cost of GET /v1/demand's answer under the core's lock
 * (server/demand.h) as the job and the volunteer population grow: an
 * in-process core on a real SQLite file, one job of T independent tasks
 * (all eligible) and V registered volunteers, each of which just made a
 * request; prints the median time of cairn__core_demand_json over 2,000
 * calls for each (T, V). The bound says it should not grow with T or V.
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

#include "server/demand.h"
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

/* A job of n independent tasks (malloc'd text). */
static char *job_text(int n) {
  size_t cap = 64 + (size_t)n * 40;
  char *s = malloc(cap);
  size_t len = (size_t)snprintf(s, cap, "{\"name\": \"b\", \"app\": \"cell\", \"tasks\": [");
  for (int i = 0; i < n; i++)
    len += (size_t)snprintf(s + len, cap - len, "%s{\"id\": \"t%d\", \"args\": []}", i ? "," : "", i);
  snprintf(s + len, cap - len, "]}");
  return s;
}

static void run(int tasks, int vols) {
  void *state = NULL;
  if (core_fixture_setup(&state))
    exit(1);
  core_fixture *f = state;
  char *text = job_text(tasks);
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
  long long eligible = 0, present = 0;
  for (int i = 0; i < CALLS; i++) {
    double a = now_us();
    json_t *d = cairn__core_demand_json(f->c);
    t[i] = now_us() - a;
    eligible = json_integer_value(json_object_get(d, "eligible"));
    present = json_integer_value(json_object_get(json_object_get(d, "volunteers"), "present"));
    json_decref(d);
  }
  qsort(t, CALLS, sizeof t[0], cmp);
  printf("| %7d | %6d | %7lld | %6lld | %6.1f | %6.1f |\n", tasks, vols, eligible, present,
         t[CALLS / 2], t[CALLS * 99 / 100]);
  core_fixture_teardown(&state);
}

int main(void) {
  printf("GET /v1/demand's answer (cairn__core_demand_json), median and p99 of %d calls\n\n",
         CALLS);
  printf("|   tasks | volunteers | eligible | present | median us | p99 us |\n");
  printf("|---|---|---|---|---|---|\n");
  int tasks[] = {1000, 100000}, vols[] = {10, 10000};
  for (int i = 0; i < 2; i++)
    for (int k = 0; k < 2; k++)
      run(tasks[i], vols[k]);
  return 0;
}
