/* renderer.c — a reading rebuilt in the background while it is read
 * (renderer.h). */
#include "server/api/renderer.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

struct cairn__renderer {
  struct cairn_master *m;
  const cairn__renderer_ops *ops;
  pthread_mutex_t lock;       /* everything below; taken alone, never held while copying or
                                 building */
  pthread_cond_t cond;        /* the builder: asked or stop; requests: a build ended */
  void *cur;                  /* published (one reference), NULL until the first build */
  double at;                  /* monotonic s when cur was read (or found unchanged) */
  double tried;               /* monotonic s when the last build was asked */
  int asked, building, stop;
  uint64_t builds;            /* builds ended, succeeded or not */
  uint64_t renders;           /* builds that succeeded */
  double render_cpu;          /* the builder's CPU seconds in them */
  cairn_error err;            /* the last failed build's, for requests with no reading */
  pthread_t thread;
};

static double clock_seconds(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Publishes the result of one build (under r->lock): fresh replaces cur
 * unless it reads the same; NULL (failed) keeps cur. Returns the reading
 * to drop after the unlock. */
static void *publish(cairn__renderer *r, void *fresh, double began, const cairn_error *err) {
  r->building = 0;
  r->builds++;
  pthread_cond_broadcast(&r->cond);
  if (!fresh) {
    r->err = *err;
    return NULL;
  }
  r->at = began;
  if (r->cur && r->ops->same && r->ops->same(r->cur, fresh))
    return fresh; /* unchanged: the old one, its as_of and ETags, stay */
  void *old = r->cur;
  r->cur = fresh;
  return old;
}

/* The builder: one build each time a request asks, until stop. */
static void *builder(void *arg) {
  cairn__renderer *r = arg;
  pthread_mutex_lock(&r->lock);
  while (!r->stop) {
    if (!r->asked) {
      pthread_cond_wait(&r->cond, &r->lock);
      continue;
    }
    r->asked = 0;
    r->building = 1;
    double began = clock_seconds(CLOCK_MONOTONIC);
    pthread_mutex_unlock(&r->lock);
    cairn_error err = {0};
    double cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID);
    void *fresh = r->ops->build(r->m, &err);
    cpu = clock_seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
    pthread_mutex_lock(&r->lock);
    r->renders += fresh != NULL;
    r->render_cpu += cpu;
    void *drop = publish(r, fresh, began, &err);
    pthread_mutex_unlock(&r->lock);
    r->ops->put(drop);
    pthread_mutex_lock(&r->lock);
  }
  pthread_mutex_unlock(&r->lock);
  return NULL;
}

/* Waits (under r->lock) until the build under way or asked ends, or
 * ops->wait seconds pass, or stop. */
static void wait_build(cairn__renderer *r) {
  uint64_t seen = r->builds;
  struct timespec until;
  clock_gettime(CLOCK_MONOTONIC, &until);
  until.tv_sec += (time_t)r->ops->wait;
  while (r->builds == seen && !r->stop && (r->asked || r->building))
    if (pthread_cond_timedwait(&r->cond, &r->lock, &until) == ETIMEDOUT)
      break;
}

void *cairn__renderer_take(cairn__renderer *r, double *age, cairn_error *err) {
  pthread_mutex_lock(&r->lock);
  double now = clock_seconds(CLOCK_MONOTONIC);
  if (!r->asked && !r->building && (!r->cur || now - r->tried >= r->ops->refresh)) {
    r->asked = 1; /* one build at a time: the others are served cur */
    r->tried = now;
    pthread_cond_broadcast(&r->cond);
  }
  if (!r->cur || now - r->at >= r->ops->cold)
    wait_build(r);
  void *cur = r->cur;
  if (cur)
    r->ops->hold(cur);
  else if (r->err.status)
    *err = r->err;
  else
    cairn__error_set(err, CAIRN_EIO, "the %s are being read", r->ops->what);
  *age = clock_seconds(CLOCK_MONOTONIC) - r->at;
  pthread_mutex_unlock(&r->lock);
  return cur;
}

cairn__renderer *cairn__renderer_start(struct cairn_master *m, const cairn__renderer_ops *ops,
                                       cairn_error *err) {
  cairn__renderer *r = calloc(1, sizeof *r);
  pthread_condattr_t ca;
  if (!r) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  r->m = m;
  r->ops = ops;
  pthread_mutex_init(&r->lock, NULL);
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_cond_init(&r->cond, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&r->thread, NULL, builder, r)) {
    pthread_cond_destroy(&r->cond);
    pthread_mutex_destroy(&r->lock);
    free(r);
    cairn__error_set(err, CAIRN_EINTERNAL, "cannot start the builder of the %s", ops->what);
    return NULL;
  }
  return r;
}

void cairn__renderer_stop(cairn__renderer *r) {
  if (!r)
    return;
  pthread_mutex_lock(&r->lock);
  r->stop = 1;
  pthread_cond_broadcast(&r->cond);
  pthread_mutex_unlock(&r->lock);
  pthread_join(r->thread, NULL); /* a build under way ends first */
  r->ops->put(r->cur);
  pthread_cond_destroy(&r->cond);
  pthread_mutex_destroy(&r->lock);
  free(r);
}

void cairn__renderer_counts(cairn__renderer *r, uint64_t *builds, double *cpu) {
  pthread_mutex_lock(&r->lock);
  *builds = r->renders;
  *cpu = r->render_cpu;
  pthread_mutex_unlock(&r->lock);
}
