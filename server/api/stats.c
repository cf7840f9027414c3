/* stats.c — GET /v1/stats: the credit standings, public and without
 * secrets (docs/protocol.md, "GET /v1/stats"; docs/accountability.md,
 * "Credit").
 *
 * Per volunteer: its id, name, team, credit, CPU seconds and valid results
 * (never its token or address); per team: its members and their sums; the
 * project's totals. Banned volunteers are left out.
 *
 * Cost. Anyone may ask, so a request's cost must not grow with the
 * population. One builder thread (this file's) reads the standings from
 * the store's reader connection, never under c->lock (cairn__store_stats:
 * O(V) for the totals), and renders each of the top CAIRN__STATS_MAX
 * volunteers' and teams' entries once (standings.c); the rendering is
 * published under s->lock with a reference count. A request takes a
 * reference, copies its page's slices into its body (O(body): at most
 * ?limit= entries of each list, about 250 KiB for 1,000 of each with short
 * names, 2.3 MiB at most) and drops it: no JSON built, no store read, no
 * lock held while it copies. An If-None-Match naming the page's ETag is
 * answered 304 without copying.
 *
 * Refresh. A request that finds the rendering CAIRN__STATS_REFRESH_SECONDS
 * old asks the builder for a new one (once: never while one is asked or
 * being built) and is served the one it found; the others meanwhile are
 * served it too (no stampede). So the builder reads the store at most once
 * per interval, and only while the standings are read: at most one build
 * a CAIRN__STATS_REFRESH_SECONDS however many requests. Only a request
 * finding none, or one CAIRN__STATS_COLD_SECONDS old (nobody read for that
 * long), waits for the build it asked (every such request waits for that
 * same build, at most CAIRN__STATS_WAIT_SECONDS), so an answer is at most
 * about CAIRN__STATS_COLD_SECONDS old. A build that finds the standings as
 * they were keeps the rendering it had (its as_of and ETags): a poller's
 * If-None-Match goes on matching while nothing changes.
 *
 * Memory: the published rendering, the one being built, and old ones
 * still copied by a request (freed by the last): each at most 2.3 MiB.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/api/api.h"
#include "server/api/standings.h"

struct cairn__standings {
  cairn_master *m;
  pthread_mutex_t lock;       /* everything below; taken alone, never held while copying or
                                 building */
  pthread_cond_t cond;        /* the builder: asked or stop; requests: a build ended */
  cairn__rendering *cur;      /* published (one reference), NULL until the first build */
  double at;                  /* monotonic s when cur was read (or found unchanged) */
  double tried;               /* monotonic s when the last build began */
  int asked, building, stop;
  uint64_t builds;            /* builds ended, succeeded or not */
  uint64_t renders;           /* store reads rendered (cairn_stats_renders_total) */
  double render_cpu;          /* the builder's CPU seconds in them */
  cairn_error err;            /* the last failed build's, for requests with no rendering */
  pthread_t thread;
};

static double mono_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double thread_cpu_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Publishes the result of one build (under s->lock): fresh replaces cur
 * unless it lists the same; NULL (failed) keeps cur. Returns the
 * rendering to drop after the unlock. */
static cairn__rendering *publish(struct cairn__standings *s, cairn__rendering *fresh,
                                 double began, const cairn_error *err) {
  s->building = 0;
  s->builds++;
  pthread_cond_broadcast(&s->cond);
  if (!fresh) {
    s->err = *err;
    return NULL;
  }
  s->at = began;
  if (cairn__rendering_same(s->cur, fresh))
    return fresh; /* unchanged: the old one, its as_of and ETags, stay */
  cairn__rendering *old = s->cur;
  s->cur = fresh;
  return old;
}

/* The builder: one build each time a request asks, until stop. */
static void *builder(void *arg) {
  struct cairn__standings *s = arg;
  pthread_mutex_lock(&s->lock);
  while (!s->stop) {
    if (!s->asked) {
      pthread_cond_wait(&s->cond, &s->lock);
      continue;
    }
    s->asked = 0;
    s->building = 1;
    double began = mono_seconds();
    pthread_mutex_unlock(&s->lock);
    cairn_error err = {0};
    double cpu = thread_cpu_seconds();
    cairn__rendering *fresh = cairn__rendering_build(s->m->core, &err);
    cpu = thread_cpu_seconds() - cpu;
    pthread_mutex_lock(&s->lock);
    s->renders += fresh != NULL;
    s->render_cpu += cpu;
    cairn__rendering *drop = publish(s, fresh, began, &err);
    pthread_mutex_unlock(&s->lock);
    cairn__rendering_put(drop);
    pthread_mutex_lock(&s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

/* Waits (under s->lock) until the build under way or asked ends, or
 * CAIRN__STATS_WAIT_SECONDS pass, or stop. */
static void wait_build(struct cairn__standings *s) {
  uint64_t seen = s->builds;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)CAIRN__STATS_WAIT_SECONDS;
  while (s->builds == seen && !s->stop && (s->asked || s->building))
    if (pthread_cond_timedwait(&s->cond, &s->lock, &until) == ETIMEDOUT)
      break;
}

/* A reference to the rendering to serve, its age in *age; NULL with err
 * set when there is none. O(1), unless it waits (wait_build). */
static cairn__rendering *take(struct cairn__standings *s, double *age, cairn_error *err) {
  pthread_mutex_lock(&s->lock);
  double now = mono_seconds();
  if (!s->asked && !s->building && (!s->cur || now - s->tried >= CAIRN__STATS_REFRESH_SECONDS)) {
    s->asked = 1; /* one build at a time: the others are served cur */
    s->tried = now;
    pthread_cond_broadcast(&s->cond);
  }
  if (!s->cur || now - s->at >= CAIRN__STATS_COLD_SECONDS)
    wait_build(s);
  cairn__rendering *r = s->cur;
  if (r)
    atomic_fetch_add(&r->refs, 1);
  else
    *err = s->err.status ? s->err : (cairn_error){CAIRN_EIO, "the standings are being read"};
  *age = mono_seconds() - s->at;
  pthread_mutex_unlock(&s->lock);
  return r;
}

/* ?name= of GET /v1/stats: an integer from 1 to max, def when absent; -1
 * with the 400 in rs. */
static long query_arg(const char *name, const char *p, long def, long max, cairn__resp *rs) {
  if (!p)
    return def;
  char *end = NULL;
  long v = *p >= '1' && *p <= '9' && strlen(p) <= 5 ? strtol(p, &end, 10) : -1;
  if (v < 1 || v > max || !end || *end) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be an integer from 1 to %ld", name, max);
    return -1;
  }
  return v;
}

void cairn__stats_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  long limit = query_arg("limit", rq->arg_limit, CAIRN__STATS_DEFAULT, CAIRN__STATS_MAX, rs);
  long page = limit < 0 ? -1
                        : query_arg("page", rq->arg_page, 1,
                                    (CAIRN__STATS_MAX + limit - 1) / limit, rs);
  if (page < 0)
    return;
  struct cairn__standings *s = m->standings;
  if (!s)
    return cairn__api_failf(rs, CAIRN_EIO, "the standings are not served");
  cairn_error err = {0};
  double age = 0;
  cairn__rendering *r = take(s, &age, &err);
  if (!r)
    return cairn__api_error(rs, err.status, err.text);
  cairn__rendering_etag(r, limit, page, rs->etag);
  double fresh = CAIRN__STATS_REFRESH_SECONDS - age; /* until a request asks for the next */
  rs->max_age = fresh > 1 ? (int)(fresh + 0.999) : 1;
  if (rq->if_none_match && strstr(rq->if_none_match, rs->etag)) {
    rs->status = 304; /* the client has it: nothing copied */
  } else if ((rs->body = cairn__rendering_page(r, limit, page, &rs->len))) {
    rs->status = 200;
    rs->ctype = "application/json";
  } else {
    rs->etag[0] = '\0';
    rs->max_age = 0;
    cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  }
  cairn__rendering_put(r);
}

cairn_status cairn__stats_start(cairn_master *m, cairn_error *err) {
  struct cairn__standings *s = calloc(1, sizeof *s);
  pthread_condattr_t ca;
  if (!s)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  s->m = m;
  pthread_mutex_init(&s->lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&s->cond, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&s->thread, NULL, builder, s)) {
    pthread_cond_destroy(&s->cond);
    pthread_mutex_destroy(&s->lock);
    free(s);
    return cairn__error_set(err, CAIRN_EINTERNAL, "cannot start the standings' builder");
  }
  m->standings = s;
  return CAIRN_OK;
}

void cairn__stats_stop(cairn_master *m) {
  struct cairn__standings *s = m->standings;
  if (!s)
    return;
  pthread_mutex_lock(&s->lock);
  s->stop = 1;
  pthread_cond_broadcast(&s->cond);
  pthread_mutex_unlock(&s->lock);
  pthread_join(s->thread, NULL); /* a build under way ends first */
  cairn__rendering_put(s->cur);
  pthread_cond_destroy(&s->cond);
  pthread_mutex_destroy(&s->lock);
  free(s);
  m->standings = NULL;
}

char *cairn__stats_metrics(cairn_master *m, char *buf, size_t *len) {
  struct cairn__standings *s = m->standings;
  uint64_t renders = 0;
  double cpu = 0;
  if (s) {
    pthread_mutex_lock(&s->lock);
    renders = s->renders;
    cpu = s->render_cpu;
    pthread_mutex_unlock(&s->lock);
  }
  char line[600];
  int k = snprintf(line, sizeof line,
                   "# HELP cairn_stats_renders_total Readings of the standings rendered for GET "
                   "/v1/stats (at most one per refresh interval while it is read).\n"
                   "# TYPE cairn_stats_renders_total counter\ncairn_stats_renders_total %llu\n"
                   "# HELP cairn_stats_render_cpu_seconds_total CPU seconds of the builder of "
                   "the standings (store reads and rendering).\n"
                   "# TYPE cairn_stats_render_cpu_seconds_total counter\n"
                   "cairn_stats_render_cpu_seconds_total %.6f\n",
                   (unsigned long long)renders, cpu);
  char *nb = buf && k > 0 && (size_t)k < sizeof line ? realloc(buf, *len + (size_t)k + 1) : NULL;
  if (!nb)
    return buf;
  memcpy(nb + *len, line, (size_t)k + 1);
  *len += (size_t)k;
  return nb;
}
