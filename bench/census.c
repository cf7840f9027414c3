/* census.c — what planning a broadcast costs a work request under the
 * core's lock (server/dist/distribution.c ensure_plan, server/dist/census.c) as the
 * volunteer population grows: an in-process core on a real SQLite file, V
 * volunteers of app "big", each in a cluster of its own (volunteers on the
 * Internet, one /24 each), a job whose tasks read one broadcast file.
 * For each V it prints the median time, over CALLS calls, of
 *   replan:  a work request whose plan check finds the census moved and
 *            rebuilds the plan (at most 512 clusters, read from the census);
 *   check:   a work request whose plan is current;
 *   scan:    the census the master used to take on each such check, a pass
 *            over every volunteer and a sort of their clusters (O(V log V)),
 *            run here under the lock for comparison in the same run.
 * Each call is the first work request of a volunteer of a cluster past
 * the plan's 512, which waits for the master's copy under way (nothing
 * changes, nothing is journaled: the time is the time under the lock); V
 * must be above 600 + 2 × CALLS. usage: bench-census [V ...] */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/dist/dist_int.h"
#include "tests/support/core_fixture.h"

#define CALLS 201
#define FIRST 600 /* the first volunteer measured (clusters past the plan's) */
#define SHA "5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a5a"

static double now_us(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int cmp_s(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static double median(double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_d);
  return t[n / 2];
}

/* One work request of volunteer v (it waits); the time it took. */
static double work_us(cairn__core *c, int64_t v) {
  json_t *w = NULL;
  cairn_error err = {0};
  double t0 = now_us();
  cairn_status st = cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err);
  double t = now_us() - t0;
  if (st != CAIRN_OK)
    fprintf(stderr, "work of %lld: %s\n", (long long)v, err.text);
  json_decref(w);
  return t;
}

/* The removed census, under the lock: every one of the nvols volunteers of
 * app heard from lately, sorted by cluster and counted; the number of
 * clusters. */
static size_t scan(cairn__core *c, const char *app, int64_t now, long nvols) {
  const char **all = malloc(((size_t)nvols + 1) * sizeof *all);
  size_t n = 0, m = 0;
  for (long i = 1; all && i <= nvols; i++) {
    const mvol *v = cairn__vol_find_locked(c, i);
    if (v && !v->banned && now - v->last_seen <= CAIRN__CENSUS_SECONDS && v->napps &&
        strcmp(v->apps[0], app) == 0)
      all[n++] = v->cluster;
  }
  if (all)
    qsort(all, n, sizeof *all, cmp_s);
  for (size_t i = 0; i < n; i++)
    m += i == 0 || strcmp(all[i - 1], all[i]) != 0;
  free(all);
  return m;
}

static void run(long nvols, long nclusters) {
  void *state = NULL;
  if (core_fixture_setup(&state))
    exit(1);
  cairn__core *c = ((core_fixture *)state)->c;
  char name[32], cluster[32], token[65], *apps[] = {"big"};
  cairn_error err = {0};
  for (long i = 0; i < nvols; i++) {
    int64_t id = 0;
    snprintf(name, sizeof name, "w%ld", i);
    long k = i % nclusters;
    snprintf(cluster, sizeof cluster, "10.%ld.%ld.0/24", k / 256 % 256, k % 256 + 256 * (k / 65536));
    if (cairn__core_register(c, name, cluster, apps, 1, 1, NULL, &id, token, &err) != CAIRN_OK) {
      fprintf(stderr, "register: %s\n", err.text);
      exit(1);
    }
  }
  int existed = 0;
  if (cairn__core_add_file(c, SHA, 64 << 20, &existed, &err) != CAIRN_OK)
    exit(1);
  size_t cap = 256 + 48 * 3 * CALLS, len = 0;
  char *job = malloc(cap);
  len += (size_t)snprintf(job, cap, "{\"app\": \"big\", \"policy\": \"fifo\", \"files\": "
                          "[{\"name\": \"big.bin\", \"sha256\": \"" SHA "\", \"broadcast\": "
                          "true}], \"tasks\": [");
  for (int i = 0; i < 3 * CALLS; i++) /* more than the calls take */
    len += (size_t)snprintf(job + len, cap - len, "%s{\"id\": \"t%d\", \"inputs\": "
                            "[\"big.bin\"]}", i ? ", " : "", i);
  snprintf(job + len, cap - len, "]}");
  core_fixture_submit(c, job);
  free(job);
  work_us(c, 1); /* takes t0 from the master, as planned */
  static double replan[CALLS], check[CALLS], scanned[CALLS];
  size_t clusters = 0, planned = 0;
  for (int k = 0; k < CALLS; k++) {
    pthread_mutex_lock(&c->lock);
    for (long i = 1; i <= nvols; i++) { /* every volunteer was heard from just now */
      mvol *v = cairn__vol_find_locked(c, i);
      v->last_seen = cairn__now(); /* a state made here: as a request sets it */
      cairn__dist_seen(c, v, v->last_seen);
    }
    mfilerec *f = cairn__dist_file_of(c->dist, SHA);
    f->checked = 0; /* as a second later, with the census moved */
    if (f->plan)
      f->plan->sig = 0;
    pthread_mutex_unlock(&c->lock);
    /* volunteers of clusters past the plan's 512: they wait for the copy
     * under way, so the calls change nothing and journal nothing */
    replan[k] = work_us(c, FIRST + k);
    check[k] = work_us(c, FIRST + CALLS + k);
    pthread_mutex_lock(&c->lock);
    planned = f->plan ? f->plan->k - 1 : 0;
    double t0 = now_us();
    clusters = scan(c, "big", cairn__now(), nvols);
    scanned[k] = now_us() - t0;
    pthread_mutex_unlock(&c->lock);
  }
  printf("census: V=%ld clusters=%zu planned=%zu replan_us=%.1f check_us=%.1f scan_us=%.1f\n",
         nvols, clusters, planned, median(replan, CALLS), median(check, CALLS),
         median(scanned, CALLS));
  fflush(stdout);
  core_fixture_teardown(&state);
}

/* Arguments V or V:K (K clusters, volunteer i in cluster i mod K; default
 * one cluster each). */
int main(int argc, char **argv) {
  if (argc > 1)
    for (int i = 1; i < argc; i++) {
      const char *k = strchr(argv[i], ':');
      run(atol(argv[i]), k ? atol(k + 1) : atol(argv[i]));
    }
  else {
    run(10000, 10000);
    run(100000, 100000);
  }
  return 0;
}
