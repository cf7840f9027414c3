/* ic_sim.c — discrete-event simulation of volunteers playing the IC Pebble
 * Game ([Ros] §4.2, §4.3.1) under an allocation policy; model, guarantees
 * and cost in ic_sim.h. Events live in a binary heap ordered by (time, seq). */
#include "plan/ic_sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "plan/dag_gen.h"
#include "plan/ic_game.h"

enum { EV_ASK, EV_DONE, EV_EXPIRE };

typedef struct event {
  double time;
  uint64_t seq;
  uint32_t kind, worker, task, attempt;
} event;

typedef struct evheap {
  event *a;
  size_t size, cap;
  uint64_t seq;
} evheap;

static int ev_before(const event *x, const event *y) {
  return x->time < y->time || (x->time == y->time && x->seq < y->seq);
}

static int ev_push(evheap *h, double time, uint32_t kind, uint32_t worker, uint32_t task,
                   uint32_t attempt) {
  if (h->size == h->cap) {
    size_t cap = h->cap ? 2 * h->cap : 1024;
    event *a = realloc(h->a, cap * sizeof *a);
    if (!a)
      return -1;
    h->a = a;
    h->cap = cap;
  }
  event e = {time, h->seq++, kind, worker, task, attempt};
  size_t i = h->size++;
  while (i > 0 && ev_before(&e, &h->a[(i - 1) / 2])) {
    h->a[i] = h->a[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  h->a[i] = e;
  return 0;
}

static event ev_pop(evheap *h) {
  event top = h->a[0], last = h->a[--h->size];
  size_t i = 0;
  for (;;) {
    size_t l = 2 * i + 1, b = l;
    if (l >= h->size)
      break;
    if (l + 1 < h->size && ev_before(&h->a[l + 1], &h->a[l]))
      b = l + 1;
    if (!ev_before(&h->a[b], &last))
      break;
    h->a[i] = h->a[b];
    i = b;
  }
  if (h->size)
    h->a[i] = last;
  return top;
}

cairn__sim_params cairn__sim_defaults(void) {
  cairn__sim_params p = {32, 0.05, 10.0, 0.25, 1.5, 1};
  return p;
}

/* Uniform in (0,1) from (seed, task, attempt, salt). */
static double unit(uint64_t seed, uint32_t task, uint32_t attempt, uint32_t salt) {
  uint64_t st = seed ^ ((uint64_t)task << 32 | attempt) * 0x9E3779B97F4A7C15ull ^
                (uint64_t)salt * 0xD1B54A32D192ED03ull;
  cairn__rand64(&st);
  return ((double)(cairn__rand64(&st) >> 11) + 0.5) / 9007199254740992.0;
}

cairn_status cairn__sim_run(const cairn__dag *d, const cairn__policy_ops *ops,
                           const cairn__sim_params *p, cairn__sim_result *r, cairn_error *err) {
  cairn_status rc = CAIRN_ENOMEM;
  cairn__ic_game g = {0};
  evheap h = {0};
  void *pol = NULL;
  uint32_t *attempt = NULL, *fresh = NULL, maxdeg = 1;
  double *idle_since = NULL, idle = 0, now = 0;
  memset(r, 0, sizeof *r);
  if (p->workers < 1 || !(p->dropout >= 0 && p->dropout < 1) || !(p->lease > 0) ||
      !(p->poll > 0) || !(p->alpha > 1))
    return cairn__error_set(err, CAIRN_EINVAL,
                           "simulation needs workers >= 1, 0 <= dropout < 1, lease > 0, "
                           "poll > 0, alpha > 1");
  if (cairn__ic_game_init(&g, d) != 0)
    goto nomem;
  attempt = calloc((size_t)d->n + 1, sizeof *attempt);
  if (!attempt)
    goto nomem;
  uint32_t on_cycle = 0;
  if (cairn__dag_topo_order(d, attempt, &on_cycle) != 0) {
    rc = cairn__error_set(err, CAIRN_EINVAL, "the dag has a cycle through task %u", on_cycle);
    goto out;
  }
  memset(attempt, 0, ((size_t)d->n + 1) * sizeof *attempt);
  for (uint32_t v = 0; v < d->n; v++)
    if (cairn__dag_nchildren(d, v) > maxdeg)
      maxdeg = cairn__dag_nchildren(d, v);
  fresh = malloc((size_t)maxdeg * sizeof *fresh);
  idle_since = malloc((size_t)p->workers * sizeof *idle_since);
  if (!fresh || !idle_since)
    goto nomem;
  pol = ops->create(d, p->seed);
  if (!pol) {
    rc = cairn__error_set(err, CAIRN_EINVAL, "policy %s: cannot start (cycle, or no memory)",
                         ops->name);
    goto out;
  }
  for (uint32_t v = 0; v < d->n; v++)
    if (g.state[v] == CAIRN_PEBBLE_EBU)
      ops->ready(pol, v);
  for (uint32_t w = 0; w < p->workers; w++) {
    idle_since[w] = -1;
    if (ev_push(&h, 0.0, EV_ASK, w, 0, 0))
      goto nomem;
  }
  const double xm = (p->alpha - 1) / p->alpha; /* Pareto scale for mean 1 */
  while (g.xeq < d->n) {
    if (h.size == 0) {
      rc = cairn__error_set(err, CAIRN_EINVAL, "simulation stalled with %u of %u tasks executed",
                           g.xeq, d->n);
      goto out;
    }
    event e = ev_pop(&h);
    now = e.time;
    if (e.kind == EV_ASK) {
      uint32_t v;
      if (ops->pick(pol, &v) != 0) {
        r->no_work++;
        if (idle_since[e.worker] < 0)
          idle_since[e.worker] = now;
        if (ev_push(&h, now + p->poll, EV_ASK, e.worker, 0, 0))
          goto nomem;
        continue;
      }
      if (cairn__ic_game_allocate(&g, v) != 0) {
        rc = cairn__error_set(err, CAIRN_EINTERNAL, "policy %s picked task %u, not ready",
                             ops->name, v);
        goto out;
      }
      if (idle_since[e.worker] >= 0) {
        idle += now - idle_since[e.worker];
        idle_since[e.worker] = -1;
      }
      uint32_t a = ++attempt[v];
      r->allocations++;
      if (ev_push(&h, now + p->lease, EV_EXPIRE, e.worker, v, a))
        goto nomem;
      if (unit(p->seed, v, a, 1) < p->dropout) {
        r->dropped++; /* gone with the task; a newcomer asks at once */
        if (ev_push(&h, now, EV_ASK, e.worker, 0, 0))
          goto nomem;
      } else {
        double t = xm / pow(unit(p->seed, v, a, 2), 1.0 / p->alpha);
        if (ev_push(&h, now + t, EV_DONE, e.worker, v, a))
          goto nomem;
      }
    } else if (e.kind == EV_DONE) {
      if (attempt[e.task] == e.attempt && g.state[e.task] == CAIRN_PEBBLE_EAA) {
        int k = cairn__ic_game_execute(&g, e.task, fresh);
        ops->executed(pol, e.task);
        for (int i = 0; i < k; i++)
          ops->ready(pol, fresh[i]);
      } else {
        r->refused++;
      }
      if (ev_push(&h, now, EV_ASK, e.worker, 0, 0))
        goto nomem;
    } else if (attempt[e.task] == e.attempt && g.state[e.task] == CAIRN_PEBBLE_EAA) {
      cairn__ic_game_expire(&g, e.task);
      r->expired++;
      ops->ready(pol, e.task);
    }
  }
  for (uint32_t w = 0; w < p->workers; w++)
    if (idle_since[w] >= 0)
      idle += now - idle_since[w];
  r->makespan = now;
  r->idle_fraction = now > 0 ? idle / ((double)p->workers * now) : 0;
  rc = CAIRN_OK;
  goto out;
nomem:
  rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory simulating %u tasks", d->n);
out:
  if (pol)
    ops->destroy(pol);
  free(h.a);
  free(attempt);
  free(fresh);
  free(idle_since);
  cairn__ic_game_free(&g);
  return rc;
}
