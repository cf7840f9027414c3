/* cmd_simulate.c — `cairn simulate game|run JOB.json`: the IC Pebble Game of
 * [Ros] §4.3.1 played by an allocation policy on a job's dag
 * (plan/ic_game.h), and a stochastic volunteer run with heavy-tailed task
 * times, dropouts and lease expiry (plan/ic_sim.h). The command only reads
 * the job and prints; the algorithms are in plan/. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/limits.h"
#include "plan/ic_game.h"
#include "plan/ic_sim.h"
#include "plan/jobspec.h"
#include "plan/policy.h"

static const char usage[] =
  "usage: cairn simulate game JOB.json [--policy P|all] [--seed S] [--json]\n"
  "       cairn simulate run JOB.json [--policy P|all] [--workers W] [--seed S]\n"
  "                          [--dropout RATE] [--lease SECONDS] [--poll SECONDS]\n"
  "                          [--mean SECONDS] [--alpha A] [--json]\n"
  "\n"
  "game: the IC Pebble Game ([Ros] §4.3.1) played sequentially by policy P:\n"
  "  prints E(t), the tasks eligible and not executed after t executions\n"
  "  (t = 0..n), and AREA = sum of E(t). --json prints\n"
  "  {\"policy\":P,\"profile\":[E(0),...,E(n)],\"area\":A} (an array of those for all).\n"
  "run: W volunteers poll for work; task times are Pareto(A) with mean --mean;\n"
  "  a share RATE of allocations is never returned (the volunteer vanishes and\n"
  "  the lease expires); results after the lease are refused; idle volunteers\n"
  "  ask again after --poll. Prints per policy the makespan, the idle fraction\n"
  "  of volunteer time and the \"no work\" answers given while the job was\n"
  "  unfinished. Defaults: --policy ic, --workers 32, --seed 1, --dropout 0.05,\n"
  "  --lease 10, --poll 0.25, --mean 1, --alpha 1.5.\n"
  "Policies: fifo, ic, random, or all.\n";

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap);
  while (buf) {
    if (n == cap) {
      if (cap >= CAIRN_MAX_BODY * 4u) {
        free(buf);
        buf = NULL;
        errno = EFBIG;
        break;
      }
      char *b = realloc(buf, cap * 2);
      if (!b) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = b;
      cap *= 2;
    }
    size_t k = fread(buf + n, 1, cap - n, f);
    n += k;
    if (k == 0) {
      if (ferror(f)) {
        free(buf);
        buf = NULL;
      }
      break;
    }
  }
  fclose(f);
  *len = n;
  return buf;
}

static int parse_double(const char *s, double *out) {
  char *end;
  errno = 0;
  *out = strtod(s, &end);
  return errno || *end || end == s || !isfinite(*out) ? -1 : 0;
}

static int parse_u64(const char *s, uint64_t *out) {
  char *end;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || end == s || s[0] == '-')
    return -1;
  *out = v;
  return 0;
}

typedef struct opts {
  const char *mode, *job, *policy;
  int json;
  uint64_t seed, workers;
  double dropout, lease, poll, mean, alpha;
} opts;

static int parse_opts(int argc, char **argv, opts *o) {
  o->policy = "ic";
  o->seed = 1;
  o->workers = 32;
  o->dropout = 0.05;
  o->lease = 10;
  o->poll = 0.25;
  o->mean = 1;
  o->alpha = 1.5;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    int bad = 0;
    if (strcmp(a, "--json") == 0) {
      o->json = 1;
      continue;
    }
    if (a[0] != '-' || !a[1]) {
      if (!o->mode)
        o->mode = a;
      else if (!o->job)
        o->job = a;
      else
        return cairn__cli_fail("simulate: unexpected argument \"%s\"", a);
      continue;
    }
    if (!v)
      return cairn__cli_fail("simulate: %s needs a value", a);
    i++;
    if (strcmp(a, "--policy") == 0)
      o->policy = v;
    else if (strcmp(a, "--seed") == 0)
      bad = parse_u64(v, &o->seed);
    else if (strcmp(a, "--workers") == 0)
      bad = parse_u64(v, &o->workers) || o->workers < 1 || o->workers > 1000000;
    else if (strcmp(a, "--dropout") == 0)
      bad = parse_double(v, &o->dropout) || o->dropout < 0 || o->dropout >= 1;
    else if (strcmp(a, "--lease") == 0)
      bad = parse_double(v, &o->lease) || o->lease <= 0;
    else if (strcmp(a, "--poll") == 0)
      bad = parse_double(v, &o->poll) || o->poll <= 0;
    else if (strcmp(a, "--mean") == 0)
      bad = parse_double(v, &o->mean) || o->mean <= 0;
    else if (strcmp(a, "--alpha") == 0)
      bad = parse_double(v, &o->alpha) || o->alpha <= 1;
    else
      return cairn__cli_fail("simulate: unknown option %s (see cairn simulate --help)", a);
    if (bad)
      return cairn__cli_fail("simulate: bad value \"%s\" for %s (see cairn simulate --help)", v, a);
  }
  if (!o->mode || !o->job)
    return cairn__cli_fail("simulate: need game|run and JOB.json (see cairn simulate --help)");
  if (strcmp(o->mode, "game") != 0 && strcmp(o->mode, "run") != 0)
    return cairn__cli_fail("simulate: unknown mode \"%s\" (game or run)", o->mode);
  if (strcmp(o->policy, "all") != 0 && !cairn__policy_find(o->policy))
    return cairn__cli_fail("simulate: unknown policy \"%s\" (fifo, ic, random or all)", o->policy);
  return 0;
}

static int run_game(const cairn__jobspec *j, const opts *o, const cairn__policy_ops *const *pols,
                    int npols) {
  uint32_t n = j->dag->n;
  uint32_t *prof = malloc(((size_t)n + 1) * sizeof *prof);
  if (!prof)
    return cairn__cli_fail("simulate: out of memory");
  if (o->json && npols > 1)
    fputs("[", stdout);
  for (int k = 0; k < npols; k++) {
    cairn_error err = {0};
    int64_t area = cairn__ic_play(j->dag, pols[k], o->seed, prof, NULL, &err);
    if (area < 0) {
      free(prof);
      return cairn__cli_fail("simulate: %s", err.text);
    }
    if (o->json) {
      printf("%s{\"policy\":\"%s\",\"profile\":[", k ? ",\n" : "", pols[k]->name);
      for (uint32_t t = 0; t <= n; t++)
        printf(t ? ",%u" : "%u", prof[t]);
      printf("],\"area\":%lld}", (long long)area);
    } else {
      printf("%sjob %s, %u tasks, policy %s: AREA %lld\n%8s %8s\n", k ? "\n" : "", j->name, n,
             pols[k]->name, (long long)area, "t", "E(t)");
      for (uint32_t t = 0; t <= n; t++)
        printf("%8u %8u\n", t, prof[t]);
    }
  }
  if (o->json)
    fputs(npols > 1 ? "]\n" : "\n", stdout);
  free(prof);
  return 0;
}

static int run_sim(const cairn__jobspec *j, const opts *o, const cairn__policy_ops *const *pols,
                   int npols) {
  cairn__sim_params p = cairn__sim_defaults();
  p.workers = (uint32_t)o->workers;
  p.dropout = o->dropout;
  p.lease = o->lease / o->mean;
  p.poll = o->poll / o->mean;
  p.alpha = o->alpha;
  p.seed = o->seed;
  if (o->json)
    fputs("[", stdout);
  else
    printf("job %s, %u tasks, %u workers, dropout %g, lease %g s, mean task %g s, seed %llu\n"
           "%-8s %12s %8s %10s %12s %8s %8s\n",
           j->name, j->dag->n, p.workers, o->dropout, o->lease, o->mean,
           (unsigned long long)o->seed, "policy", "makespan_s", "idle", "no_work", "allocations",
           "expired", "refused");
  for (int k = 0; k < npols; k++) {
    cairn__sim_result r;
    cairn_error err = {0};
    if (cairn__sim_run(j->dag, pols[k], &p, &r, &err) != CAIRN_OK)
      return cairn__cli_fail("simulate: %s", err.text);
    if (o->json)
      printf("%s{\"policy\":\"%s\",\"makespan\":%.6g,\"idle_fraction\":%.6g,\"no_work\":%llu,"
             "\"allocations\":%llu,\"expired\":%llu,\"dropped\":%llu,\"refused\":%llu}",
             k ? ",\n" : "", pols[k]->name, r.makespan * o->mean, r.idle_fraction,
             (unsigned long long)r.no_work, (unsigned long long)r.allocations,
             (unsigned long long)r.expired, (unsigned long long)r.dropped,
             (unsigned long long)r.refused);
    else
      printf("%-8s %12.2f %8.4f %10llu %12llu %8llu %8llu\n", pols[k]->name,
             r.makespan * o->mean, r.idle_fraction, (unsigned long long)r.no_work,
             (unsigned long long)r.allocations, (unsigned long long)r.expired,
             (unsigned long long)r.refused);
  }
  if (o->json)
    fputs("]\n", stdout);
  return 0;
}

int cairn__cmd_simulate(int argc, char **argv) {
  if (cairn__cli_wants_help(argc, argv)) {
    fputs(usage, stdout);
    return 0;
  }
  opts o = {0};
  if (parse_opts(argc, argv, &o) != 0)
    return 1;
  const cairn__policy_ops *pols[16];
  int npols = 0;
  if (strcmp(o.policy, "all") == 0) {
    for (const char *const *nm = cairn__policy_names(); *nm && npols < 16; nm++)
      pols[npols++] = cairn__policy_find(*nm);
  } else {
    pols[npols++] = cairn__policy_find(o.policy);
  }
  size_t len = 0;
  char *text = read_file(o.job, &len);
  if (!text)
    return cairn__cli_fail("simulate: cannot read %s: %s", o.job, strerror(errno));
  cairn_error err = {0};
  cairn__jobspec *j = cairn__jobspec_parse(text, len, CAIRN_JOBSPEC_CLIENT, &err);
  free(text);
  if (!j)
    return cairn__cli_fail("simulate: %s: %s", o.job, err.text);
  int rc = strcmp(o.mode, "game") == 0 ? run_game(j, &o, pols, npols) : run_sim(j, &o, pols, npols);
  cairn__jobspec_free(j);
  if (rc == 0 && (fflush(stdout) != 0 || ferror(stdout)))
    rc = cairn__cli_fail("simulate: cannot write: %s", strerror(errno));
  return rc;
}
