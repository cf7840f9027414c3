/* ranks.c — what the public pages' rendering costs (server/api/ranks.h):
 * a master (in-process, its real SQLite store, durable off) with A
 * accounts in A/20 teams of accounts and one host each, credit and
 * averaged credit spread over them; then, per size, the median of 5
 * builds of the rendering (as its builder thread makes it: slices of the
 * core copied a hold of c->lock at a time, then sorted), the median and
 * longest hold of c->lock by one slice (what a request may wait for a
 * build), the
 * median time of one page of a leaderboard (what a request does), and
 * the rendering's size.
 *
 *   bench-ranks [A ...]   (default 10000 100000)
 *
 * Prints one line per size:
 *   ranks: accounts=A teams=T hosts=V build_ms=X build_cpu_ms=Y slice_hold_ms=Z (longest L)
 *          page_us=W rendering_kib=K */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/api/api.h"
#include "server/api/ranks.h"
#include "server/core/accounts.h"
#include "server/core/roster.h"
#include "server/core/teams.h"
#include "server/trust/trust.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static double cpu_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static int check(cairn_status st, const cairn_error *err, const char *what) {
  if (st == CAIRN_OK)
    return 0;
  fprintf(stderr, "bench-ranks: %s: %s\n", what, err->text);
  return 1;
}

/* A accounts, A/20 teams (account k founds team k), one host each, then
 * credit spread over hosts, accounts and the teams' ledger entries. */
static int populate(cairn__core *c, long n) {
  cairn_error err = {0};
  long nteams = n / 20 + 1;
  char key[65], token[65], name[64], email[64];
  for (long i = 1; i <= n; i++) {
    int64_t id = 0, vol = 0;
    snprintf(name, sizeof name, "account <%ld> \"é\"", i);
    snprintf(email, sizeof email, "a%ld@example.org", i);
    if (check(cairn__core_account_create(c, name, email, "$argon2id$bench", &id, key, &err),
              &err, "account"))
      return 1;
    char *apps[] = {"a"};
    snprintf(name, sizeof name, "host-%ld", i);
    if (check(cairn__core_register_account(c, name, "rack", apps, 1, 1, NULL, NULL, key, &vol,
                                           token, &err),
              &err, "host"))
      return 1;
    int64_t team = 0;
    if (i <= nteams) {
      snprintf(name, sizeof name, "team %ld", i);
      cairn__team_edit e = {.name = name};
      if (check(cairn__core_team_create(c, id, &e, &team, &err), &err, "team"))
        return 1;
    } else if (i % 10 && check(cairn__core_account_join(c, id, 1 + i % nteams, &err), &err,
                               "join"))
      return 1;
  }
  double t = (double)time(NULL);
  pthread_mutex_lock(&c->lock); /* the bench's own setting of the totals */
  for (size_t i = 0; i < c->nvols; i++) {
    mvol *v = c->vols[i];
    v->credit = (double)((i * 7919) % 100003);
    v->expavg = (double)((i * 104729) % 1009);
    v->expavg_time = t - (double)(i % 86400);
    v->account->credit = v->credit;
    v->account->expavg = v->expavg;
    v->account->expavg_time = v->expavg_time;
  }
  for (long k = 1; k <= nteams; k++) {
    macteam *tm = cairn__acteams_find(c, k);
    mteam *l = tm && !cairn__team_note(c, tm->key) ? cairn__team_find(c, tm->key) : NULL;
    if (l) {
      l->credit = (double)((k * 31337) % 1000003);
      l->expavg = (double)(k % 5000);
      l->expavg_time = t;
    }
  }
  cairn__core_unlock(c);
  return 0;
}

/* The bytes a rendering holds (its rows, their names, its orders, home). */
static size_t rendering_bytes(const cairn__ranks *r) {
  size_t b = sizeof *r + r->home_len;
  for (int k = 0; k < 3; k++) {
    const cairn__ranking *g = &r->kind[k];
    b += g->nrows * sizeof *g->rows + (g->norder[0] + g->norder[1]) * sizeof(uint32_t);
    for (size_t i = 0; i < g->nrows; i++) {
      const cairn__roster_row *x = &g->rows[i];
      b += (x->name ? strlen(x->name) + 1 : 0) + (x->team_name ? strlen(x->team_name) + 1 : 0) +
           (x->account_name ? strlen(x->account_name) + 1 : 0);
    }
  }
  return b;
}

static int one(long n) {
  char dir[] = "/tmp/cairn-bench-ranks-XXXXXX", db[96];
  if (!mkdtemp(dir))
    return 1;
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  cairn_master_config cfg;
  cairn_master_config_init(&cfg);
  cfg.db_path = db;
  cfg.durable = 0;
  cfg.audit_chain = -1;
  cfg.admin_token = "bench-ranks-admin-token-0123456789";
  cairn_error err = {0};
  cairn_master *m = cairn_master_create(&cfg, &err);
  if (!m) {
    fprintf(stderr, "bench-ranks: %s\n", err.text);
    return 1;
  }
  double t0 = now_ms();
  if (populate(m->core, n))
    return 1;
  double filled = now_ms() - t0;

  double build[5], cpu[5], hold = 0;
  cairn__ranks *r = NULL;
  for (int k = 0; k < 5; k++) {
    cairn__ranks_put(r);
    double a = now_ms(), b = cpu_ms();
    r = cairn__ranks_ops.build(m, &err);
    build[k] = now_ms() - a;
    cpu[k] = cpu_ms() - b;
    if (!r) {
      fprintf(stderr, "bench-ranks: %s\n", err.text);
      return 1;
    }
  }
  /* one slice's hold of c->lock: the host slices (the widest rows), their
   * median and the longest (a preemption on a loaded machine shows there) */
  cairn__roster_row *rows = malloc(CAIRN__ROSTER_SLICE * sizeof *rows);
  double holds[64];
  int nholds = 0;
  for (size_t from = 0, end = 0; rows && nholds < 64; from = end) {
    double a = now_ms();
    long got = cairn__core_roster(m->core, CAIRN__ROSTER_HOSTS, from, CAIRN__ROSTER_SLICE,
                                  (double)time(NULL), rows, &end);
    double d = now_ms() - a;
    hold = d > hold ? d : hold;
    holds[nholds++] = d;
    for (long i = 0; i < got; i++)
      cairn__roster_free(&rows[i]);
    if (got < 0 || end < from + CAIRN__ROSTER_SLICE)
      break;
  }
  free(rows);
  qsort(holds, (size_t)nholds, sizeof *holds, cmpd);
  enum { PAGES = 1000 };
  double a = now_ms();
  for (int k = 0; k < PAGES; k++)
    free(cairn__ranks_page(r, k % 3, k % 2, 1 + k % 200));
  double page_us = (now_ms() - a) * 1e3 / PAGES;
  qsort(build, 5, sizeof *build, cmpd);
  qsort(cpu, 5, sizeof *cpu, cmpd);
  printf("ranks: accounts=%ld teams=%ld hosts=%ld build_ms=%.1f build_cpu_ms=%.1f "
         "slice_hold_ms=%.2f (longest %.2f) page_us=%.1f rendering_kib=%zu "
         "(filled in %.1f s)\n",
         n, n / 20 + 1, n, build[2], cpu[2], nholds ? holds[nholds / 2] : 0.0, hold, page_us,
         rendering_bytes(r) / 1024, filled / 1e3);
  cairn__ranks_put(r);
  cairn_master_delete(m);
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  return system(cmd) == 0 ? 0 : 1;
}

int main(int argc, char **argv) {
  long dflt[] = {10000, 100000};
  int rc = 0;
  printf("public pages' ranks: one build of the rendering, one page (in-process master)\n");
  if (argc < 2)
    for (size_t i = 0; i < sizeof dflt / sizeof *dflt; i++)
      rc |= one(dflt[i]);
  for (int i = 1; i < argc; i++)
    rc |= one(atol(argv[i]));
  return rc;
}
