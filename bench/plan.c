/* plan.c — planner quality and speed (bench-plan).
 *
 *   speed   LCF on 10^5 clusters / 10^7 nodes (compact form), the [BSM] §4–5
 *           heuristics on 1,000 clusters, WR/WRP/FEF on a 1,000-node broadcast
 *   grid    [BSM] §6: random grids with Table 2's ranges, mean makespan and
 *           hit rate per heuristic and number of clusters; the Table 3 grid;
 *           an SVG plot of both curves (--svg FILE)
 *   hnow    [WYL] §5: 64-node random multiple multicasts, mean completion
 *           time per algorithm and its ratio to the §3.1 lower bound
 *   lcf     [KKW] §3, §6: LCF / lower bound on random cluster instances
 *
 * usage: bench-plan [--draws N] [--hnow-runs N] [--svg FILE] [--only speed|grid|hnow|lcf] */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/plan.h"

static uint64_t rs = 0x853c49e6748fea9bull;
static uint64_t rnd(void) {
  rs ^= rs << 13;
  rs ^= rs >> 7;
  rs ^= rs << 17;
  return rs;
}
static double uni(double a, double b) { return a + (b - a) * (double)(rnd() >> 11) / 9007199254740992.0; }

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die(const char *what, const cairn_error *e) {
  fprintf(stderr, "bench-plan: %s: %s\n", what, e->text);
  exit(1);
}

/* ---- speed ------------------------------------------------------------------ */

static void random_grid(size_t k, double *L, double *g, double *T) {
  for (size_t i = 0; i < k; i++) {
    T[i] = uni(20, 3000);
    for (size_t j = 0; j < k; j++) {
      L[i * k + j] = uni(1, 15);
      g[i * k + j] = uni(100, 600);
    }
  }
}

static const char *const grid_algos[] = {"flat", "FEF", "ECEF", "ECEF-LA", "ECEF-LAt", "ECEF-LAT", "BottomUp"};
#define NG 7

static void bench_speed(void) {
  printf("== speed (wall clock, best of 3)\n");
  size_t k = 100000;
  int64_t *size = malloc(k * sizeof *size), n = 0;
  for (size_t i = 0; i < k; i++) {
    size[i] = 1 + (int64_t)(rnd() % 199);
    n += size[i];
  }
  cairn__plan_clusters cl = {.C = 10, .k = k, .size = size, .source = 0};
  cairn_error err = {0};
  const char *names[] = {"LCF (1/C)", "LCF (postal)"};
  for (int v = 0; v < 2; v++) {
    double best = 1e9;
    int64_t mk = 0;
    size_t segs = 0;
    for (int rep = 0; rep < 3; rep++) {
      cairn__bcast_compact c;
      double t0 = now();
      cairn_status st = v ? cairn__bcast_postal_lcf(&cl, &c, &err) : cairn__bcast_lcf(&cl, &c, &err);
      double t1 = now();
      if (st != CAIRN_OK)
        die("lcf", &err);
      if (t1 - t0 < best)
        best = t1 - t0;
      mk = c.makespan;
      segs = c.nseg;
      cairn__bcast_compact_free(&c);
    }
    printf("%-14s %zu clusters, %lld nodes, C = 10: %.3f s  (makespan %lld, lower bound %lld, %zu segments)\n",
           names[v], k, (long long)n, best, (long long)mk, (long long)cairn__bcast_lower_bound(&cl, v), segs);
  }
  free(size);

  k = 1000;
  double *L = malloc(k * k * sizeof *L), *g = malloc(k * k * sizeof *g), *T = malloc(k * sizeof *T);
  random_grid(k, L, g, T);
  cairn__plan_instance in = {.model = CAIRN_PLAN_GRID, .grid = {.k = k, .root = 0, .L = L, .g = g, .T = T}};
  for (int a = 0; a < NG; a++) {
    double best = 1e9, mk = 0;
    for (int rep = 0; rep < 3; rep++) {
      cairn__plan_schedule s;
      double t0 = now();
      if (cairn__plan_run(&in, grid_algos[a], &s, &err) != CAIRN_OK)
        die(grid_algos[a], &err);
      double t1 = now();
      if (t1 - t0 < best)
        best = t1 - t0;
      mk = s.makespan;
      cairn__plan_schedule_free(&s);
    }
    printf("grid %-9s %zu clusters: %.3f s  (makespan %.0f ms)\n", grid_algos[a], k, best, mk);
  }
  free(L);
  free(g);
  free(T);

  size_t nn = 1000;
  double *S0 = malloc(nn * sizeof *S0), *S1 = malloc(nn * sizeof *S1), *R0 = malloc(nn * sizeof *R0),
         *R1 = malloc(nn * sizeof *R1), *X = malloc(nn * nn * sizeof *X);
  size_t *dest = malloc(nn * sizeof *dest);
  for (size_t i = 0; i < nn; i++) {
    S0[i] = uni(80, 400);
    R0[i] = uni(80, 400);
    S1[i] = uni(0.0001, 0.01);
    R1[i] = uni(0.0001, 0.01);
    for (size_t j = 0; j < nn; j++)
      X[i * nn + j] = 0.008;
    dest[i] = i + 1;
  }
  cairn__plan_hmsg msg = {.source = 0, .length = 1e6, .dests = dest, .ndests = nn - 1};
  cairn__plan_instance hi = {.model = CAIRN_PLAN_HNOW,
                            .hnow = {.n = nn, .S0 = S0, .S1 = S1, .R0 = R0, .R1 = R1, .X = X, .nmsg = 1, .msg = &msg}};
  const char *hal[] = {"FEF", "WR", "WRP"};
  for (int a = 0; a < 3; a++) {
    double best = 1e9, mk = 0;
    for (int rep = 0; rep < 3; rep++) {
      cairn__plan_schedule s;
      double t0 = now();
      if (cairn__plan_run(&hi, hal[a], &s, &err) != CAIRN_OK)
        die(hal[a], &err);
      double t1 = now();
      if (t1 - t0 < best)
        best = t1 - t0;
      mk = s.makespan;
      cairn__plan_schedule_free(&s);
    }
    printf("hnow %-4s broadcast to %zu nodes: %.3f s  (completion %.0f us)\n", hal[a], nn, best, mk);
  }
  free(S0);
  free(S1);
  free(R0);
  free(R1);
  free(X);
  free(dest);
}

/* ---- grid ([BSM] §6) ----------------------------------------------------------- */

#define NK 9
static const size_t ks[NK] = {2, 3, 5, 10, 15, 20, 30, 40, 50};

static void svg_plot(const char *path, double mean[NK][NG], double hit[NK][NG]) {
  FILE *f = fopen(path, "w");
  if (!f) {
    fprintf(stderr, "bench-plan: cannot write %s\n", path);
    return;
  }
  static const char *const col[NG] = {"#7f7f7f", "#8c564b", "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd"};
  const int W = 420, H = 300, ML = 60, MT = 40;
  fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" "
             "font-size=\"11\">\n<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
          2 * (W + ML) + 140, H + MT + 60);
  double ymax = 0;
  for (int i = 0; i < NK; i++)
    for (int a = 0; a < NG; a++)
      ymax = fmax(ymax, mean[i][a]);
  ymax = ceil(ymax / 1000) * 1000;
  for (int panel = 0; panel < 2; panel++) {
    int x0 = ML + panel * (W + ML + 20);
    double top = panel ? 100 : ymax;
    fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"13\">%s</text>\n", x0,
            panel ? "hit rate (% of draws at the best makespan)" : "mean makespan (ms)");
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"black\"/>\n", x0, MT, W, H);
    for (int t = 0; t <= 5; t++) {
      double v = top * t / 5, y = MT + H - H * t / 5.0;
      fprintf(f, "<line x1=\"%d\" y1=\"%.1f\" x2=\"%d\" y2=\"%.1f\" stroke=\"#ddd\"/>", x0, y, x0 + W, y);
      fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", x0 - 4, y + 4, v);
    }
    for (int i = 0; i < NK; i++) {
      double x = x0 + W * (double)(ks[i] - 2) / 48.0;
      fprintf(f, "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%zu</text>\n", x, MT + H + 15, ks[i]);
    }
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">clusters</text>\n", x0 + W / 2, MT + H + 32);
    for (int a = 0; a < NG; a++) {
      fprintf(f, "<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", col[a]);
      for (int i = 0; i < NK; i++) {
        double v = panel ? hit[i][a] : mean[i][a];
        fprintf(f, "%.1f,%.1f ", x0 + W * (double)(ks[i] - 2) / 48.0, MT + H - H * v / top);
      }
      fprintf(f, "\"/>\n");
    }
  }
  for (int a = 0; a < NG; a++)
    fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"12\" height=\"12\" fill=\"%s\"/><text x=\"%d\" y=\"%d\">%s</text>\n",
            2 * (W + ML) + 30, MT + 20 * a, col[a], 2 * (W + ML) + 48, MT + 20 * a + 10, grid_algos[a]);
  fprintf(f, "</svg>\n");
  fclose(f);
}

static void bench_grid(long draws, const char *svg) {
  printf("== grid ([BSM] §6): L 1-15 ms, g 100-600 ms, T 20-3000 ms, root 0, %ld draws per row\n", draws);
  double mean[NK][NG], hit[NK][NG];
  printf("%8s %9s", "clusters", "lower bd");
  for (int a = 0; a < NG; a++)
    printf(" %9s", grid_algos[a]);
  printf("   | hit rate %%:");
  for (int a = 0; a < NG; a++)
    printf(" %8.8s", grid_algos[a]);
  printf("\n");
  cairn_error err = {0};
  for (int r = 0; r < NK; r++) {
    size_t k = ks[r];
    double *L = malloc(k * k * sizeof *L), *g = malloc(k * k * sizeof *g), *T = malloc(k * sizeof *T);
    double sum[NG] = {0}, hits[NG] = {0}, lbsum = 0;
    for (long d = 0; d < draws; d++) {
      random_grid(k, L, g, T);
      cairn__plan_instance in = {.model = CAIRN_PLAN_GRID, .grid = {.k = k, .root = 0, .L = L, .g = g, .T = T}};
      double m[NG], best = INFINITY;
      for (int a = 0; a < NG; a++) {
        cairn__plan_schedule s;
        if (cairn__plan_run(&in, grid_algos[a], &s, &err) != CAIRN_OK)
          die(grid_algos[a], &err);
        m[a] = s.makespan;
        if (a == 0)
          lbsum += s.lower_bound;
        cairn__plan_schedule_free(&s);
        best = fmin(best, m[a]);
      }
      for (int a = 0; a < NG; a++) {
        sum[a] += m[a];
        hits[a] += m[a] <= best * (1 + 1e-12);
      }
    }
    printf("%8zu %9.0f", k, lbsum / (double)draws);
    for (int a = 0; a < NG; a++) {
      mean[r][a] = sum[a] / (double)draws;
      hit[r][a] = 100.0 * hits[a] / (double)draws;
      printf(" %9.0f", mean[r][a]);
    }
    printf("   |           ");
    for (int a = 0; a < NG; a++)
      printf(" %8.1f", hit[r][a]);
    printf("\n");
    free(L);
    free(g);
    free(T);
  }
  if (svg) {
    svg_plot(svg, mean, hit);
    printf("plot written to %s\n", svg);
  }
  /* Table 3: measured latencies (us), g = 350 ms, T_i = ceil(log2 n_i)·(L_ii + 35 ms) */
  static const double lat[6][6] = {
    {47.56, 62.10, 12181.52, 12187.24, 12197.49, 5210.99}, {62.10, 47.92, 12181.52, 12198.03, 12195.22, 5211.47},
    {12181.52, 12181.52, 35.52, 60.08, 60.08, 5388.49},    {12187.24, 12198.03, 60.08, 0, 242.47, 5393.98},
    {12197.49, 12195.22, 60.08, 242.47, 0, 5394.10},       {5210.99, 5211.47, 5388.49, 5393.98, 5394.10, 27.53}};
  static const int size[6] = {31, 29, 6, 1, 1, 20};
  double L[36], g[36], T[6];
  for (int i = 0; i < 6; i++) {
    int lg = 0;
    while ((1 << lg) < size[i])
      lg++;
    T[i] = lg * (lat[i][i] / 1000.0 + 35.0);
    for (int j = 0; j < 6; j++) {
      L[i * 6 + j] = lat[i][j] / 1000.0;
      g[i * 6 + j] = i == j ? 0 : 350.0;
    }
  }
  cairn__plan_instance in = {.model = CAIRN_PLAN_GRID, .grid = {.k = 6, .root = 0, .L = L, .g = g, .T = T}};
  printf("Table 3 grid (88 machines, 6 clusters, root 0; g = 350 ms, T_i = ceil(log2 n_i)(L_ii + 35 ms)):\n");
  for (int a = 0; a < NG; a++) {
    cairn__plan_schedule s;
    if (cairn__plan_run(&in, grid_algos[a], &s, &err) != CAIRN_OK)
      die(grid_algos[a], &err);
    printf("  %-9s %8.1f ms   (lower bound %.1f ms)\n", grid_algos[a], s.makespan, s.lower_bound);
    cairn__plan_schedule_free(&s);
  }
}

/* ---- hnow ([WYL] §5) -------------------------------------------------------------- */

static void bench_hnow(long runs) {
  const char *al[] = {"FEF", "ECF", "WR", "WRP"};
  const size_t n = 64, M = 8;
  printf("== hnow ([WYL] §5): 64 nodes, %zu sources, each other node a destination with p = 1/2, %ld runs;\n"
         "   S, R: constant 80-400 us + 0.0001-0.01 us/byte per node; X: 1 Gb/s = 0.008 us/byte, 155 Mb/s = 0.0516\n",
         M, runs);
  printf("%-8s %-7s %10s %10s %10s %10s %10s | ratio to lower bound: %5s %5s %5s %5s\n", "network", "message", "lower bd",
         al[0], al[1], al[2], al[3], al[0], al[1], al[2], al[3]);
  double *S0 = malloc(n * sizeof *S0), *S1 = malloc(n * sizeof *S1), *R0 = malloc(n * sizeof *R0),
         *R1 = malloc(n * sizeof *R1), *X = malloc(n * n * sizeof *X);
  size_t *dest = malloc(M * n * sizeof *dest);
  cairn__plan_hmsg msg[8];
  cairn_error err = {0};
  for (int net = 0; net < 2; net++)
    for (int kind = 0; kind < 3; kind++) {
      double sum[4] = {0}, ratio[4] = {0}, lbs = 0;
      for (long r = 0; r < runs; r++) {
        for (size_t i = 0; i < n; i++) {
          S0[i] = uni(80, 400);
          R0[i] = uni(80, 400);
          S1[i] = uni(0.0001, 0.01);
          R1[i] = uni(0.0001, 0.01);
          for (size_t j = 0; j < n; j++)
            X[i * n + j] = net ? 0.0516 : 0.008;
        }
        for (size_t m = 0; m < M; m++) {
          double len = kind == 0 ? uni(1, 1024) : kind == 1 ? (rnd() % 2 ? 1e6 : 1.5e6)
                                                            : (m % 2 ? uni(1, 1024) : (rnd() % 2 ? 1e6 : 1.5e6));
          msg[m] = (cairn__plan_hmsg){.source = rnd() % n, .length = floor(len), .dests = dest + m * n, .ndests = 0};
          for (size_t j = 0; j < n; j++)
            if (j != msg[m].source && (rnd() % 2 || msg[m].ndests == 0))
              msg[m].dests[msg[m].ndests++] = j;
        }
        cairn__plan_instance in = {
          .model = CAIRN_PLAN_HNOW,
          .hnow = {.n = n, .S0 = S0, .S1 = S1, .R0 = R0, .R1 = R1, .X = X, .nmsg = M, .msg = msg}};
        double lb = cairn__plan_hnow_lower_bound(&in.hnow);
        lbs += lb;
        for (int a = 0; a < 4; a++) {
          cairn__plan_schedule s;
          if (cairn__plan_run(&in, al[a], &s, &err) != CAIRN_OK)
            die(al[a], &err);
          sum[a] += s.makespan;
          ratio[a] += s.makespan / lb;
          cairn__plan_schedule_free(&s);
        }
      }
      printf("%-8s %-7s %10.0f", net ? "155Mb/s" : "1Gb/s", kind == 0 ? "small" : kind == 1 ? "large" : "hybrid",
             lbs / (double)runs);
      for (int a = 0; a < 4; a++)
        printf(" %10.0f", sum[a] / (double)runs);
      printf(" |                       ");
      for (int a = 0; a < 4; a++)
        printf(" %5.2f", ratio[a] / (double)runs);
      printf("\n");
    }
  printf("   (times in us; mean completion time; ratio = mean of completion / lower bound)\n");
  free(S0);
  free(S1);
  free(R0);
  free(R1);
  free(X);
  free(dest);
}

/* ---- LCF quality ---------------------------------------------------------------- */

static void bench_lcf(void) {
  printf("== lcf ([KKW]): makespan / Theorem 3.2 lower bound on 2000 random instances per row\n");
  printf("%-18s %6s %6s %6s\n", "planner", "mean", "max", "C");
  cairn_error err = {0};
  const char *what[] = {"LCF 1/C", "LCF postal", "Interleaved postal"};
  for (int v = 0; v < 3; v++)
    for (int64_t C = 2; C <= 16; C *= 4) {
      double sum = 0, worst = 0;
      for (int it = 0; it < 2000; it++) {
        size_t k = 2 + rnd() % 200;
        int64_t size[202];
        for (size_t i = 0; i < k; i++)
          size[i] = 1 + (int64_t)(rnd() % (rnd() % 2 ? 8 : 500));
        cairn__plan_instance in = {.model = v ? CAIRN_PLAN_POSTAL : CAIRN_PLAN_1C,
                                  .cl = {.C = C, .k = k, .size = size, .source = rnd() % k}};
        cairn__plan_schedule s;
        if (cairn__plan_run(&in, v == 2 ? "interleaved-lcf" : "lcf", &s, &err) != CAIRN_OK)
          die("lcf", &err);
        double r = s.makespan / s.lower_bound;
        sum += r;
        worst = fmax(worst, r);
        cairn__plan_schedule_free(&s);
      }
      printf("%-18s %6.3f %6.3f %6lld\n", what[v], sum / 2000, worst, (long long)C);
    }
}

int main(int argc, char **argv) {
  long draws = 10000, hruns = 200;
  const char *svg = NULL, *only = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--draws") == 0 && i + 1 < argc)
      draws = atol(argv[++i]);
    else if (strcmp(argv[i], "--hnow-runs") == 0 && i + 1 < argc)
      hruns = atol(argv[++i]);
    else if (strcmp(argv[i], "--svg") == 0 && i + 1 < argc)
      svg = argv[++i];
    else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
      only = argv[++i];
    else {
      fprintf(stderr, "usage: bench-plan [--draws N] [--hnow-runs N] [--svg FILE] [--only speed|grid|hnow|lcf]\n");
      return 1;
    }
  }
  if (!only || strcmp(only, "speed") == 0)
    bench_speed();
  if (!only || strcmp(only, "grid") == 0)
    bench_grid(draws, svg);
  if (!only || strcmp(only, "hnow") == 0)
    bench_hnow(hruns);
  if (!only || strcmp(only, "lcf") == 0)
    bench_lcf();
  return 0;
}
