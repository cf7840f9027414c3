/* plan_svg.c — a schedule as an SVG Gantt chart: one row per node that takes
 * part, a bar for each node's busy time (dark: sending, light: receiving,
 * green: a grid cluster's internal broadcast), the time axis below.
 * O(T log T) for T transfers; no I/O (the caller writes the string). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/buf.h"
#include "plan/plan.h"
#include "plan/plan_internal.h"

#define ROW_H 14
#define LEFT 90
#define WIDTH 900
#define TOP 40

typedef struct rowkey {
  int64_t id, member;
} rowkey;

static int rk_cmp(const void *a, const void *b) {
  const rowkey *x = a, *y = b;
  if (x->id != y->id)
    return x->id < y->id ? -1 : 1;
  return (x->member > y->member) - (x->member < y->member);
}

static size_t row_of(const rowkey *rows, size_t n, cairn__plan_node nd) {
  rowkey k = {nd.id, nd.member};
  const rowkey *p = bsearch(&k, rows, n, sizeof *rows, rk_cmp);
  return p ? (size_t)(p - rows) : 0;
}

/* Busy interval of the sender and of each receiver in the model. */
static void busy(const cairn__plan_schedule *s, const cairn__plan_instance *in, const cairn__plan_transfer *t,
                 size_t r, double *ss, double *se, double *rs, double *re) {
  *ss = *rs = t->start;
  *se = *re = t->end;
  cairn__plan_node to = s->to[t->to_off + r];
  switch (s->model) {
  case CAIRN_PLAN_POSTAL:
    *se = t->start + 1;
    *rs = t->end - 1;
    break;
  case CAIRN_PLAN_GRID:
    if (in && in->model == CAIRN_PLAN_GRID && t->from.id != to.id && (size_t)t->from.id < in->grid.k &&
        (size_t)to.id < in->grid.k) {
      *se = t->start + in->grid.g[t->from.id * in->grid.k + to.id];
      *rs = t->end;
    }
    break;
  case CAIRN_PLAN_HNOW:
    if (in && in->model == CAIRN_PLAN_HNOW && t->message < in->hnow.nmsg && (size_t)t->from.id < in->hnow.n &&
        (size_t)to.id < in->hnow.n) {
      double m = in->hnow.msg[t->message].length;
      *se = t->start + in->hnow.S0[t->from.id] + in->hnow.S1[t->from.id] * m;
      *rs = t->end - (in->hnow.R0[to.id] + in->hnow.R1[to.id] * m);
    }
    break;
  default: break;
  }
}

static const char *const palette[] = {"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#8c564b",
                                      "#e377c2", "#7f7f7f", "#bcbd22", "#17becf", "#ff7f0e"};

char *cairn__plan_schedule_svg(const cairn__plan_schedule *s, const cairn__plan_instance *in, size_t max_rows) {
  rowkey *rows = malloc((s->n + s->nto + 1) * sizeof *rows);
  if (!rows)
    return NULL;
  size_t n = 0;
  for (size_t i = 0; i < s->n; i++) {
    const cairn__plan_transfer *t = &s->t[i];
    rows[n++] = (rowkey){t->from.id, t->from.member};
    for (size_t r = 0; r < t->to_len; r++)
      rows[n++] = (rowkey){s->to[t->to_off + r].id, s->to[t->to_off + r].member};
  }
  qsort(rows, n, sizeof *rows, rk_cmp);
  size_t u = 0;
  for (size_t i = 0; i < n; i++)
    if (u == 0 || rk_cmp(&rows[u - 1], &rows[i]) != 0)
      rows[u++] = rows[i];
  if (u > max_rows) {
    free(rows);
    return NULL;
  }
  double span = s->makespan > 0 ? s->makespan : 1;
  for (size_t i = 0; i < s->n; i++)
    if (s->t[i].end > span)
      span = s->t[i].end;
  double sx = WIDTH / span;
  int cluster = s->model == CAIRN_PLAN_1C || s->model == CAIRN_PLAN_POSTAL;
  size_t H = TOP + u * ROW_H + 40;
  cairn__buf b;
  cairn__buf_init(&b, (size_t)1 << 31);
  char ms[40], lb[40];
  cairn__plan_num(ms, sizeof ms, s->makespan);
  cairn__plan_num(lb, sizeof lb, s->lower_bound);
  int bad = cairn__buf_printf(&b,
                               "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%zu\" "
                               "font-family=\"sans-serif\" font-size=\"10\">\n"
                               "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
                               "<text x=\"%d\" y=\"16\" font-size=\"13\">%s (%s): makespan %s, lower bound %s</text>\n",
                               LEFT + WIDTH + 20, H, LEFT, s->algorithm, cairn__plan_model_name(s->model), ms, lb);
  for (size_t i = 0; i < u && !bad; i++) {
    double y = TOP + (double)i * ROW_H;
    if (i % 2 == 0)
      bad |= cairn__buf_printf(&b, "<rect x=\"%d\" y=\"%g\" width=\"%d\" height=\"%d\" fill=\"#f4f4f4\"/>\n", LEFT,
                                y, WIDTH, ROW_H);
    if (cluster)
      bad |= cairn__buf_printf(&b, "<text x=\"4\" y=\"%g\">[%lld,%lld]</text>\n", y + ROW_H - 3,
                                (long long)rows[i].id, (long long)rows[i].member);
    else
      bad |= cairn__buf_printf(&b, "<text x=\"4\" y=\"%g\">%s %lld</text>\n", y + ROW_H - 3,
                                s->model == CAIRN_PLAN_GRID ? "cluster" : "node", (long long)rows[i].id);
  }
  for (size_t i = 0; i < s->n && !bad; i++) {
    const cairn__plan_transfer *t = &s->t[i];
    int local_bc = s->model == CAIRN_PLAN_GRID && t->from.id == s->to[t->to_off].id;
    int inter = cluster && t->from.id != s->to[t->to_off].id;
    const char *col = local_bc ? "#2ca02c"
                      : (s->model == CAIRN_PLAN_HNOW || s->model == CAIRN_PLAN_CDMD)
                          ? palette[t->message % 10]
                          : (inter || s->model == CAIRN_PLAN_GRID) ? "#d62728" : "#1f77b4";
    for (size_t r = 0; r < t->to_len && !bad; r++) {
      double ss, se, rs, re;
      busy(s, in, t, r, &ss, &se, &rs, &re);
      size_t fr = row_of(rows, u, t->from), tr = row_of(rows, u, s->to[t->to_off + r]);
      if (r == 0)
        bad |= cairn__buf_printf(&b,
                                  "<rect x=\"%.2f\" y=\"%zu\" width=\"%.2f\" height=\"%d\" fill=\"%s\">"
                                  "<title>transfer %zu: %g-%g</title></rect>\n",
                                  LEFT + ss * sx, TOP + fr * ROW_H + 2, fmax((se - ss) * sx, 1.0), ROW_H - 4, col,
                                  i, t->start, t->end);
      if (!local_bc)
        bad |= cairn__buf_printf(&b,
                                  "<rect x=\"%.2f\" y=\"%zu\" width=\"%.2f\" height=\"%d\" fill=\"%s\" "
                                  "fill-opacity=\"0.45\"><title>transfer %zu: %g-%g</title></rect>\n",
                                  LEFT + rs * sx, TOP + tr * ROW_H + 2, fmax((re - rs) * sx, 1.5), ROW_H - 4, col, i,
                                  t->start, t->end);
    }
  }
  double y0 = TOP + (double)u * ROW_H + 4;
  bad |= cairn__buf_printf(&b, "<line x1=\"%d\" y1=\"%g\" x2=\"%d\" y2=\"%g\" stroke=\"black\"/>\n", LEFT, y0,
                            LEFT + WIDTH, y0);
  double step = pow(10, floor(log10(span / 5)));
  if (span / step > 10)
    step *= 2;
  for (double x = 0; x <= span + 1e-9 && !bad; x += step) {
    char lab[40];
    cairn__plan_num(lab, sizeof lab, x);
    bad |= cairn__buf_printf(&b,
                              "<line x1=\"%.2f\" y1=\"%g\" x2=\"%.2f\" y2=\"%g\" stroke=\"black\"/>"
                              "<text x=\"%.2f\" y=\"%g\" text-anchor=\"middle\">%s</text>\n",
                              LEFT + x * sx, y0, LEFT + x * sx, y0 + 4, LEFT + x * sx, y0 + 15, lab);
  }
  bad |= cairn__buf_printf(&b, "</svg>\n");
  free(rows);
  if (bad) {
    cairn__buf_free(&b);
    return NULL;
  }
  return cairn__buf_take(&b, NULL);
}
