/* slow.c — the slow lane (slow.h): a ring of at most CAIRN__SLOW_CAP
 * requests and one thread that runs them in order. */
#include "server/conn/slow.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct item {
  void (*run)(void *arg);
  void (*cancel)(void *arg);
  void *arg, *conn;
} item;

struct cairn__slow {
  pthread_mutex_t lock;
  pthread_cond_t more;
  item ring[CAIRN__SLOW_CAP];
  unsigned head, n;  /* queued: ring[head .. head + n) */
  unsigned running;  /* 1 while the thread runs one */
  int stopping;      /* set once by the first stop, which joins the thread */
  void (*resume)(void *conn);
  pthread_t thread;
};

static void *lane(void *p) {
  cairn__slow *s = p;
  pthread_mutex_lock(&s->lock);
  for (;;) {
    while (!s->n && !s->stopping)
      pthread_cond_wait(&s->more, &s->lock);
    if (!s->n)
      break;
    item it = s->ring[s->head];
    s->head = (s->head + 1) % CAIRN__SLOW_CAP;
    s->n--;
    int cancel = s->stopping;
    s->running = 1;
    pthread_mutex_unlock(&s->lock);
    if (cancel)
      it.cancel(it.arg);
    else
      it.run(it.arg);
    pthread_mutex_lock(&s->lock);
    s->running = 0; /* before its answer goes: whoever has the answer finds the lane free */
    pthread_mutex_unlock(&s->lock);
    s->resume(it.conn);
    pthread_mutex_lock(&s->lock);
  }
  pthread_mutex_unlock(&s->lock);
  return NULL;
}

cairn__slow *cairn__slow_create(void (*resume)(void *conn), cairn_error *err) {
  cairn__slow *s = calloc(1, sizeof *s);
  if (!s) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&s->lock, NULL);
  pthread_cond_init(&s->more, NULL);
  s->resume = resume;
  if (pthread_create(&s->thread, NULL, lane, s) != 0) {
    pthread_cond_destroy(&s->more);
    pthread_mutex_destroy(&s->lock);
    free(s);
    cairn__error_set(err, CAIRN_ENOMEM, "cannot start the slow requests' thread");
    return NULL;
  }
  return s;
}

int cairn__slow_submit(cairn__slow *s, void (*run)(void *arg), void (*cancel)(void *arg),
                       void *arg, void *conn) {
  pthread_mutex_lock(&s->lock);
  int ok = !s->stopping && s->n + s->running < CAIRN__SLOW_CAP;
  if (ok) {
    s->ring[(s->head + s->n) % CAIRN__SLOW_CAP] = (item){run, cancel, arg, conn};
    s->n++;
    pthread_cond_signal(&s->more);
  }
  pthread_mutex_unlock(&s->lock);
  return ok ? 0 : -1;
}

unsigned cairn__slow_busy(cairn__slow *s) {
  pthread_mutex_lock(&s->lock);
  unsigned n = s->n + s->running;
  pthread_mutex_unlock(&s->lock);
  return n;
}

void cairn__slow_stop(cairn__slow *s) {
  if (!s)
    return;
  pthread_mutex_lock(&s->lock);
  int first = !s->stopping;
  s->stopping = 1;
  pthread_cond_signal(&s->more);
  pthread_mutex_unlock(&s->lock);
  if (first)
    pthread_join(s->thread, NULL);
}

void cairn__slow_destroy(cairn__slow *s) {
  if (!s)
    return;
  cairn__slow_stop(s);
  pthread_cond_destroy(&s->more);
  pthread_mutex_destroy(&s->lock);
  free(s);
}
