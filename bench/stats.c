/* stats.c — what one refresh of the credit standings costs (GET /v1/stats,
 * docs/accountability.md "Credit"): a real SQLite store with V volunteers
 * (credits spread over them, one in ten without a team, the others in
 * V/50 teams, whose ledger holds their members' sums), read as the master
 * reads it (cairn__store_stats on the
 * reader connection: the top 1,000 volunteers and teams, the totals).
 * Prints, per V, the median of 5 refreshes. The master's builder thread
 * refreshes at most every 2 s while the standings are read, never under
 * the core's lock; requests copy their page from its rendering
 * (bench/stats_reads.c measures those reads).
 * usage: bench-stats [V ...]   (default 10000 100000) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/store/load.h"

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int count(void *ud, const cairn__store_stats_row *r) {
  (void)r;
  ++*(long *)ud;
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static int one(long nvol) {
  char dir[] = "/tmp/cairn-bench-stats-XXXXXX", path[64], hash[65];
  if (!mkdtemp(dir))
    return 1;
  snprintf(path, sizeof path, "%s/cairn.db", dir);
  cairn_error err = {0};
  cairn__store *s = cairn__store_open(path, 0, &err);
  if (!s) {
    fprintf(stderr, "bench-stats: %s\n", err.text);
    return 1;
  }
  double t0 = now();
  long nteams = nvol / 50 + 1;
  double *sum = calloc((size_t)nteams * 3, sizeof *sum); /* credit, CPU seconds, results */
  if (!sum)
    return 1;
  cairn_status st = cairn__store_begin(s, &err);
  for (long i = 1; st == CAIRN_OK && i <= nvol; i++) {
    char name[32], team[32];
    snprintf(hash, sizeof hash, "%064lx", (unsigned long)i);
    snprintf(name, sizeof name, "w%ld", i);
    snprintf(team, sizeof team, "team-%ld", i % (nvol / 50 + 1));
    st = cairn__store_volunteer_insert(s, i, name, "rack", "[\"a\"]", 1, hash, 1, &err);
    if (st == CAIRN_OK && i % 10)
      st = cairn__store_volunteer_team(s, i, team, &err);
    cairn__store_credit_row c = {.vol = i, .claim = -1, .credit = (double)((i * 7919) % 100003),
                                .cpu_seconds = (double)(i % 1000), .credited = i % 97};
    if (st == CAIRN_OK)
      st = cairn__store_credit(s, &c, &err);
    if (i % 10) {
      double *t = sum + 3 * (i % nteams);
      t[0] += c.credit, t[1] += c.cpu_seconds, t[2] += (double)c.credited;
    }
  }
  for (long k = 0; st == CAIRN_OK && k < nteams; k++) {
    char team[32];
    snprintf(team, sizeof team, "team-%ld", k);
    cairn__store_team_row row = {.team = team, .credit = sum[3 * k],
                                .cpu_seconds = sum[3 * k + 1], .results = (int64_t)sum[3 * k + 2]};
    st = cairn__store_team_credit(s, &row, &err);
  }
  free(sum);
  if (st == CAIRN_OK)
    st = cairn__store_commit(s, &err);
  if (st != CAIRN_OK) {
    fprintf(stderr, "bench-stats: %s\n", err.text);
    return 1;
  }
  double filled = now() - t0, t[5];
  long rows = 0;
  for (int k = 0; k < 5; k++) {
    rows = 0;
    double a = now();
    if (cairn__store_stats(s, 1000, count, &rows, &err) != CAIRN_OK) {
      fprintf(stderr, "bench-stats: %s\n", err.text);
      return 1;
    }
    t[k] = now() - a;
  }
  qsort(t, 5, sizeof *t, cmp);
  printf("%8ld volunteers (%ld teams): one refresh %.1f ms (median of 5; %ld rows; filled in "
         "%.1f s)\n", nvol, nvol / 50 + 1, t[2] * 1e3, rows, filled);
  cairn__store_close(s);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  long dflt[] = {10000, 100000};
  int rc = 0;
  printf("GET /v1/stats: cost of a refresh of the standings (store reader, outside c->lock)\n");
  if (argc < 2)
    for (size_t i = 0; i < sizeof dflt / sizeof *dflt; i++)
      rc |= one(dflt[i]);
  for (int i = 1; i < argc; i++)
    rc |= one(atol(argv[i]));
  return rc;
}
