/* census.c — the clusters of the workers present, per app, for the
 * broadcast plans (distribution.c), kept as volunteers make requests so that
 * no plan has to look at every volunteer.
 *
 * A volunteer is present from a request until CAIRN__CENSUS_SECONDS pass
 * without another; a banned one never is. Present volunteers sit in one
 * queue, least recently seen first (links in mvol). A request moves its
 * volunteer to the back, or, when it was not present, counts it once in
 * each of its apps: per (app, cluster) the number of present volunteers of
 * that app in that cluster, and per app its clusters with a count, in the
 * order they appeared. Volunteers leave from the front of the queue when
 * their time is up, a few per request (CENSUS_SEEN_EXPIRE) and more per
 * plan check (CAIRN__CENSUS_PLAN_EXPIRE): each request adds at most one, so
 * the backlog drains, and a count is never more than that backlog stale.
 * Every change of an app's counts stamps the app with a new generation
 * (d->census_gen, global so that two apps never share one); a plan built
 * from a census remembers it, and is rebuilt only when it moved.
 *
 * Bounds, all under c->lock: a request O(its apps), at most 64, plus the
 * expiry of CENSUS_SEEN_EXPIRE volunteers; a ban O(its apps); reading an
 * app's clusters O(max) for the first max of them. Memory: three words per
 * volunteer, one record per (app, cluster) present.
 */
#include <stdlib.h>
#include <string.h>

#include "server/dist/dist_int.h"

/* Volunteers whose time is up leave the census at each request. */
#define CENSUS_SEEN_EXPIRE 2

/* An (app, cluster) pair with present volunteers: d->census's values. */
struct mcount {
  uint64_t key;
  char *cluster;
  int64_t count;
  struct mappcensus *app;
  struct mcount *prev, *next; /* in its app's clusters, by arrival */
};

/* An app's present clusters: d->census_apps's values. */
struct mappcensus {
  char *app;
  struct mcount *head, *tail;
  size_t n;
  uint64_t gen;               /* d->census_gen at its last change */
};

static uint64_t fnv(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ULL;
  return (h ^ 0xffu) * 1099511628211ULL; /* ends the string: ("ab","c") != ("a","bc") */
}

static uint64_t app_key(const char *app) {
  uint64_t k = fnv(1469598103934665603ULL, app);
  return k ? k : 1; /* 0 is the map's empty key */
}

static uint64_t pair_key(const char *app, const char *cluster) {
  uint64_t k = fnv(fnv(1469598103934665603ULL ^ 0x5bd1e995u, app), cluster);
  return k ? k : 1;
}

static struct mappcensus *app_of(const cairn__dist *d, const char *app) {
  struct mappcensus *a = cairn__hmap_get(&d->census_apps, app_key(app));
  return a && strcmp(a->app, app) == 0 ? a : NULL;
}

/* Adds delta (+1 or -1) to (app, cluster). A pair whose 64-bit keys
 * collide with another's is left out of the census (its clusters are then
 * not planned: workers there follow the online rule); out of memory too. */
static void count(cairn__dist *d, const char *app, const char *cluster, int delta) {
  uint64_t k = pair_key(app, cluster);
  struct mcount *m = cairn__hmap_get(&d->census, k);
  d->census_work++;
  if (m && (strcmp(m->cluster, cluster) != 0 || strcmp(m->app->app, app) != 0))
    return;
  if (!m) {
    if (delta < 0)
      return;
    struct mappcensus *a = app_of(d, app);
    if (!a && !cairn__hmap_get(&d->census_apps, app_key(app))) {
      if (!(a = calloc(1, sizeof *a)) || !(a->app = cairn__strdup(app)) ||
          cairn__hmap_put(&d->census_apps, app_key(app), a)) {
        if (a)
          free(a->app);
        free(a);
        return;
      }
    }
    if (!a || !(m = calloc(1, sizeof *m)) || !(m->cluster = cairn__strdup(cluster)) ||
        cairn__hmap_put(&d->census, k, m)) {
      if (m)
        free(m->cluster);
      free(m);
      return;
    }
    m->key = k;
    m->app = a;
    m->prev = a->tail;
    *(a->tail ? &a->tail->next : &a->head) = m;
    a->tail = m;
    a->n++;
  }
  m->count += delta;
  m->app->gen = ++d->census_gen;
  if (m->count > 0)
    return;
  struct mappcensus *a = m->app;
  *(m->prev ? &m->prev->next : &a->head) = m->next;
  *(m->next ? &m->next->prev : &a->tail) = m->prev;
  a->n--;
  cairn__hmap_del(&d->census, k);
  free(m->cluster);
  free(m);
}

static void unlink_vol(cairn__dist *d, mvol *v) {
  *(v->cprev ? &v->cprev->cnext : &d->qhead) = v->cnext;
  *(v->cnext ? &v->cnext->cprev : &d->qtail) = v->cprev;
  v->cprev = v->cnext = NULL;
}

static void append_vol(cairn__dist *d, mvol *v) {
  v->cprev = d->qtail;
  v->cnext = NULL;
  *(d->qtail ? &d->qtail->cnext : &d->qhead) = v;
  d->qtail = v;
}

/* v leaves the census. O(its apps). */
static void uncount(cairn__dist *d, mvol *v) {
  if (!v->counted)
    return;
  for (int i = 0; i < v->napps; i++)
    count(d, v->apps[i], v->cluster, -1);
  unlink_vol(d, v);
  v->counted = 0;
}

void cairn__census_expire(cairn__dist *d, int64_t now, size_t max) {
  for (size_t n = 0; n < max && d->qhead && d->qhead->cseen < now - CAIRN__CENSUS_SECONDS; n++)
    uncount(d, d->qhead);
}

void cairn__dist_seen(cairn__core *c, mvol *v, int64_t now) {
  cairn__dist *d = c->dist;
  if (v->banned)
    return;
  if (v->counted) {
    unlink_vol(d, v);
  } else {
    for (int i = 0; i < v->napps; i++)
      count(d, v->apps[i], v->cluster, +1);
    v->counted = 1;
  }
  v->cseen = now;
  append_vol(d, v);
  d->census_work++;
  cairn__census_expire(d, now, CENSUS_SEEN_EXPIRE);
}

void cairn__census_leave(cairn__dist *d, mvol *v) { uncount(d, v); }

size_t cairn__census_clusters(cairn__dist *d, const char *app, char **labels,
                              int64_t *counts, size_t max, uint64_t *gen) {
  const struct mappcensus *a = app_of(d, app);
  size_t n = 0;
  *gen = a ? a->gen : 0;
  for (const struct mcount *m = a ? a->head : NULL; m && n < max; m = m->next, n++) {
    labels[n] = m->cluster;
    counts[n] = m->count;
  }
  d->census_work += n;
  return n;
}

uint64_t cairn__census_gen(const cairn__dist *d, const char *app) {
  const struct mappcensus *a = app_of(d, app);
  return a ? a->gen : 0;
}

void cairn__census_free(cairn__dist *d) {
  for (size_t i = 0; i < d->census.cap; i++)
    if (d->census.keys[i]) {
      struct mcount *m = d->census.vals[i];
      free(m->cluster);
      free(m);
    }
  for (size_t i = 0; i < d->census_apps.cap; i++)
    if (d->census_apps.keys[i]) {
      struct mappcensus *a = d->census_apps.vals[i];
      free(a->app);
      free(a);
    }
  cairn__hmap_free(&d->census);
  cairn__hmap_free(&d->census_apps);
}
