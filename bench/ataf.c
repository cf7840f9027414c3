/* ataf.c — bench-ataf: cost of phi and phi^-1 for the ATAFs of plan/ataf.h
 * (named closed forms and constructed tables) next to Cantor's pairing
 * function, and how large the indices grow when 10^3 volunteers each get
 * 10^3 tasks.
 *
 * usage: bench-ataf [REPS]   (REPS >= 1 timed repetitions, default 9; the
 * median is reported; a checksum over all results keeps the work alive)
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/ataf.h"

#define NPAIRS 4096
#define ROUNDS 256 /* calls per repetition: NPAIRS * ROUNDS ~ 10^6 */
#define MAX_REPS 101

typedef struct pair {
  uint64_t x, t;
} pair;

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static double now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Cantor's pairing on N+ x N+: pi(x, t) = (x+t-2)(x+t-1)/2 + t. */
static uint64_t cantor(uint64_t x, uint64_t t) {
  uint64_t w = x + t - 2;
  return w * (w + 1) / 2 + t;
}

static void cantor_inverse(uint64_t n, uint64_t *x, uint64_t *t) {
  uint64_t z = n - 1;
  uint64_t w = (uint64_t)((sqrt(8.0 * (double)z + 1.0) - 1.0) / 2.0);
  while (w * (w + 1) / 2 > z)
    w--;
  while ((w + 1) * (w + 2) / 2 <= z)
    w++;
  uint64_t k2 = z - w * (w + 1) / 2;
  *t = k2 + 1;
  *x = w - k2 + 1;
}

/* What is measured: a named family, a constructed table, or Cantor. */
typedef struct subject {
  const char *label;
  int kind; /* 0 named, 1 table, 2 cantor */
  cairn__ataf_family f;
  cairn__ataf table;
  uint64_t xmax; /* rows are drawn from 1..xmax */
  pair in[NPAIRS];
  uint64_t idx[NPAIRS];
} subject;

static int forward(const subject *s, uint64_t x, uint64_t t, uint64_t *n) {
  switch (s->kind) {
  case 0: return cairn__ataf_index(s->f, x, t, n, NULL) == CAIRN_OK ? 0 : -1;
  case 1: return cairn__ataf_phi(&s->table, x, t, n, NULL) == CAIRN_OK ? 0 : -1;
  default: *n = cantor(x, t); return 0;
  }
}

static int inverse(const subject *s, uint64_t n, uint64_t *x, uint64_t *t) {
  switch (s->kind) {
  case 0: return cairn__ataf_invert(s->f, n, x, t, NULL) == CAIRN_OK ? 0 : -1;
  case 1: return cairn__ataf_phi_inverse(&s->table, n, x, t, NULL) == CAIRN_OK ? 0 : -1;
  default: cantor_inverse(n, x, t); return 0;
  }
}

/* Draws NPAIRS (x, t) with x <= xmax, t <= 1000 whose index fits. */
static int make_inputs(subject *s) {
  for (int i = 0; i < NPAIRS; i++) {
    uint64_t n = 0;
    int tries = 0;
    do {
      s->in[i].x = rng() % s->xmax + 1;
      s->in[i].t = rng() % 1000 + 1;
      if (++tries > 1000000)
        return -1;
    } while (forward(s, s->in[i].x, s->in[i].t, &n) != 0);
    s->idx[i] = n;
    uint64_t x = 0, t = 0;
    if (inverse(s, n, &x, &t) != 0 || x != s->in[i].x || t != s->in[i].t)
      return -1;
  }
  return 0;
}

static double time_forward(const subject *s, uint64_t *sum) {
  uint64_t acc = 0, n = 0;
  double t0 = now_ns();
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < NPAIRS; i++) {
      forward(s, s->in[i].x, s->in[i].t, &n);
      acc += n ^ (uint64_t)r;
    }
  double t1 = now_ns();
  *sum += acc;
  return (t1 - t0) / ((double)ROUNDS * NPAIRS);
}

static double time_inverse(const subject *s, uint64_t *sum) {
  uint64_t acc = 0, x = 0, t = 0;
  double t0 = now_ns();
  for (int r = 0; r < ROUNDS; r++)
    for (int i = 0; i < NPAIRS; i++) {
      inverse(s, s->idx[i], &x, &t);
      acc += (x * 31 + t) ^ (uint64_t)r;
    }
  double t1 = now_ns();
  *sum += acc;
  return (t1 - t0) / ((double)ROUNDS * NPAIRS);
}

/* log2 phi(x, t) from the [Ros] Figure 10 formulas in floating point (no range
 * limit), to size the indices that overflow 63 bits. */
static double log2_phi(const char *family, uint64_t x, uint64_t t) {
  double tm1 = (double)(t - 1);
  if (strcmp(family, "phi1") == 0)
    return (double)(x - 1) + log2(2.0 * tm1 + 1.0);
  if (strcmp(family, "phi3") == 0)
    return (double)((x - 1) / 4) + log2(8.0 * tm1 + (double)((2 * x - 1) % 8));
  if (strcmp(family, "phisharp") == 0) {
    unsigned l = 63u - (unsigned)__builtin_clzll(x);
    uint64_t mod = 1ull << (l + 1);
    return (double)l + log2(ldexp(tm1, (int)l + 1) + (double)((2 * x + 1) % mod));
  }
  return log2((double)cantor(x, t));
}

static void growth(const char *family, cairn__ataf_family f, int named) {
  uint64_t best = 0, overflow = 0;
  double best_log = 0;
  for (uint64_t x = 1; x <= 1000; x++)
    for (uint64_t t = 1; t <= 1000; t++) {
      double l = log2_phi(family, x, t);
      if (l > best_log)
        best_log = l;
      uint64_t n = 0;
      if (!named)
        n = cantor(x, t);
      else if (cairn__ataf_index(f, x, t, &n, NULL) != CAIRN_OK) {
        overflow++;
        continue;
      }
      if (n > best)
        best = n;
    }
  if (overflow)
    printf("  %-9s > 2^63-1 (log2 %.2f); %llu of 10^6 pairs overflow 63 bits\n", family,
           best_log, (unsigned long long)overflow);
  else
    printf("  %-9s %llu (log2 %.2f)\n", family, (unsigned long long)best, best_log);
}

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 9;
  if (reps < 1 || reps > MAX_REPS) {
    fprintf(stderr, "bench-ataf: REPS must be 1..%d\n", MAX_REPS);
    return 1;
  }
  static subject subjects[7];
  static const struct {
    const char *label;
    int kind;
    cairn__ataf_family f;
    uint64_t xmax;
  } plan[7] = {
    {"phi1", 0, CAIRN_ATAF_PHI1, 63},
    {"phi3", 0, CAIRN_ATAF_PHI3, 246},
    {"phisharp", 0, CAIRN_ATAF_PHISHARP, 1000000},
    {"phi1/table", 1, CAIRN_ATAF_PHI1, 63},
    {"phi3/table", 1, CAIRN_ATAF_PHI3, 246},
    {"phisharp/table", 1, CAIRN_ATAF_PHISHARP, 1000000},
    {"cantor", 2, CAIRN_ATAF_PHISHARP, 1000000},
  };
  uint64_t checksum = 0;
  printf("bench-ataf: %d repetitions of %d calls each, median ns per call\n", reps,
         NPAIRS * ROUNDS);
  printf("  %-15s %10s %10s   rows drawn from\n", "function", "phi", "phi^-1");
  for (int k = 0; k < 7; k++) {
    subject *s = &subjects[k];
    s->label = plan[k].label;
    s->kind = plan[k].kind;
    s->f = plan[k].f;
    s->xmax = plan[k].xmax;
    if (s->kind == 1) {
      cairn__ataf_spec spec;
      if (cairn__ataf_family_spec(s->f, &spec, NULL) != CAIRN_OK ||
          cairn__ataf_build(&s->table, &spec, NULL) != CAIRN_OK)
        return 1;
    }
    if (make_inputs(s) != 0) {
      fprintf(stderr, "bench-ataf: %s: inputs do not round-trip\n", s->label);
      return 1;
    }
    double fw[MAX_REPS], iv[MAX_REPS];
    for (int r = 0; r < reps; r++) {
      fw[r] = time_forward(s, &checksum);
      iv[r] = time_inverse(s, &checksum);
    }
    printf("  %-15s %10.2f %10.2f   1..%llu, t <= 1000\n", s->label, median(fw, reps),
           median(iv, reps), (unsigned long long)s->xmax);
  }
  printf("largest index, 10^3 volunteers x 10^3 tasks each:\n");
  growth("cantor", CAIRN_ATAF_PHISHARP, 0);
  growth("phisharp", CAIRN_ATAF_PHISHARP, 1);
  growth("phi3", CAIRN_ATAF_PHI3, 1);
  growth("phi1", CAIRN_ATAF_PHI1, 1);
  printf("checksum %016llx\n", (unsigned long long)checksum);
  return 0;
}
