/* sources.c — how long a work request that must choose where a worker
 * fetches a broadcast input takes, as the file's holders grow.
 *
 *   bench-sources [--holders N[,N...]] [--samples S]
 *
 * Drives an in-process core (server/core/core.h, a real SQLite file, durable
 * off). For each N: a fresh core, a job of 2S tasks reading one broadcast
 * file, N volunteers in 100 clusters that hold it (registered, then a
 * heartbeat saying so); then S new volunteers, spread over the clusters,
 * each ask for work once (cairn__core_work: the allocation and the choice
 * of its sources, under the core's lock), timed one by one. Prints per N
 * the median and the largest time of one request and ends with
 *   sources: holders=N median_us=X max_us=Y
 * one line per N. The master looks at a window of holders per decision
 * (docs/server.md, "What a request may cost under the core's lock"), so
 * the figure should not grow with N.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "tests/support/core_fixture.h"

#define SHA "4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d4d"
#define CLUSTERS 100

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Registers volunteer i of cluster i % CLUSTERS; its id, or 0. */
static int64_t reg(cairn__core *c, int i) {
  char *apps[] = {"big"}, token[65], peer[64], name[32], label[16];
  int64_t id = 0;
  cairn_error err = {0};
  snprintf(peer, sizeof peer, "http://127.%d.%d.1:%d", i / 60000 % 250, i / 250 % 240 + 1,
           1024 + i % 60000);
  snprintf(name, sizeof name, "w%d", i);
  snprintf(label, sizeof label, "c%d", i % CLUSTERS);
  if (cairn__core_register(c, name, label, apps, 1, 1, peer, &id, token, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-sources: register: %s\n", err.text);
    return 0;
  }
  return id;
}

/* One N: the median and largest request time into *med and *max. */
static int run(int holders, int samples, double *med, double *max) {
  void *state = NULL;
  if (core_fixture_setup(&state) != 0)
    return -1;
  cairn__core *c = ((core_fixture *)state)->c;
  double *t = calloc((size_t)samples, sizeof *t);
  int rc = t ? 0 : -1;
  if (t)
    core_fixture_broadcast_job(c, SHA, 1 << 20, 2 * samples);
  for (int i = 0; rc == 0 && i < holders; i++) {
    int64_t id = reg(c, i);
    rc = id ? 0 : -1;
    if (id)
      core_fixture_have(c, id, SHA);
  }
  for (int i = 0; rc == 0 && i < samples; i++) {
    int64_t id = reg(c, holders + i * 7); /* spread over the clusters */
    json_t *w = NULL;
    cairn_error err = {0};
    double t0 = now_us();
    rc = id && cairn__core_work(c, id, NULL, NULL, 0, &w, &(int){0}, &err) == CAIRN_OK ? 0 : -1;
    t[i] = now_us() - t0;
    json_decref(w);
    if (rc)
      fprintf(stderr, "bench-sources: work: %s\n", err.text);
  }
  if (rc == 0) {
    qsort(t, (size_t)samples, sizeof *t, cmpd);
    *med = t[samples / 2];
    *max = t[samples - 1];
  }
  free(t);
  core_fixture_teardown(&state);
  return rc;
}

int main(int argc, char **argv) {
  char list[256] = "1000,10000,100000";
  int samples = 50;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--holders") && i + 1 < argc)
      snprintf(list, sizeof list, "%s", argv[++i]);
    else if (!strcmp(argv[i], "--samples") && i + 1 < argc)
      samples = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench-sources [--holders N[,N...]] [--samples S]\n");
      return 2;
    }
  }
  if (samples < 1)
    samples = 1;
  for (char *save = NULL, *n = strtok_r(list, ",", &save); n; n = strtok_r(NULL, ",", &save)) {
    double med = 0, max = 0;
    int holders = atoi(n);
    if (holders < 1 || run(holders, samples, &med, &max)) {
      fprintf(stderr, "bench-sources: the run with %s holders failed\n", n);
      return 1;
    }
    printf("sources: holders=%d median_us=%.1f max_us=%.1f\n", holders, med, max);
    fflush(stdout);
  }
  return 0;
}
