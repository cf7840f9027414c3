/* deadline.c — shut down connections whose request header is late. */
#include "worker/deadline.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#define DEADLINE_TICK_MS 100

struct cairn__deadline_conn {
  int fd;                    /* our duplicate of the connection's socket */
  long long due_ms;          /* monotonic; 0: the header arrived, no deadline */
  cairn__deadline_conn *prev, *next;
};

struct cairn__deadline {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  pthread_t thread;
  int stopping;              /* under mu */
  unsigned deadline_ms;
  cairn__deadline_conn *head;  /* under mu */
};

static long long now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* Shuts down every connection past its deadline. Called with mu held. */
static void sweep(cairn__deadline *d) {
  long long now = now_ms();
  for (cairn__deadline_conn *c = d->head; c; c = c->next)
    if (c->due_ms && now >= c->due_ms) {
      shutdown(c->fd, SHUT_RDWR);
      c->due_ms = 0;
    }
}

static void *watch(void *arg) {
  cairn__deadline *d = arg;
  pthread_mutex_lock(&d->mu);
  while (!d->stopping) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    t.tv_nsec += DEADLINE_TICK_MS * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
      t.tv_sec++;
      t.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&d->cv, &d->mu, &t);
    sweep(d);
  }
  pthread_mutex_unlock(&d->mu);
  return NULL;
}

cairn__deadline *cairn__deadline_start(unsigned deadline_ms) {
  cairn__deadline *d = calloc(1, sizeof *d);
  pthread_condattr_t ca;
  if (!d)
    return NULL;
  d->deadline_ms = deadline_ms;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  pthread_mutex_init(&d->mu, NULL);
  pthread_cond_init(&d->cv, &ca);
  pthread_condattr_destroy(&ca);
  if (pthread_create(&d->thread, NULL, watch, d) != 0) {
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d);
    return NULL;
  }
  return d;
}

cairn__deadline_conn *cairn__deadline_add(cairn__deadline *d, int fd) {
  cairn__deadline_conn *c = calloc(1, sizeof *c);
  if (!c)
    return NULL;
  c->fd = dup(fd);
  if (c->fd < 0) {
    free(c);
    return NULL;
  }
  pthread_mutex_lock(&d->mu);
  c->due_ms = now_ms() + d->deadline_ms;
  c->next = d->head;
  if (d->head)
    d->head->prev = c;
  d->head = c;
  pthread_mutex_unlock(&d->mu);
  return c;
}

void cairn__deadline_got_header(cairn__deadline *d, cairn__deadline_conn *c) {
  pthread_mutex_lock(&d->mu);
  c->due_ms = 0;
  pthread_mutex_unlock(&d->mu);
}

void cairn__deadline_wait(cairn__deadline *d, cairn__deadline_conn *c) {
  pthread_mutex_lock(&d->mu);
  c->due_ms = now_ms() + d->deadline_ms;
  pthread_mutex_unlock(&d->mu);
}

/* Unlinks c from the list. Called with mu held. */
static void unlink_conn(cairn__deadline *d, cairn__deadline_conn *c) {
  if (c->prev)
    c->prev->next = c->next;
  else
    d->head = c->next;
  if (c->next)
    c->next->prev = c->prev;
}

void cairn__deadline_remove(cairn__deadline *d, cairn__deadline_conn *c) {
  if (!c)
    return;
  pthread_mutex_lock(&d->mu);
  unlink_conn(d, c);
  pthread_mutex_unlock(&d->mu);
  close(c->fd);
  free(c);
}

void cairn__deadline_stop(cairn__deadline *d) {
  if (!d)
    return;
  pthread_mutex_lock(&d->mu);
  d->stopping = 1;
  pthread_cond_signal(&d->cv);
  pthread_mutex_unlock(&d->mu);
  pthread_join(d->thread, NULL);
  while (d->head)
    cairn__deadline_remove(d, d->head);
  pthread_cond_destroy(&d->cv);
  pthread_mutex_destroy(&d->mu);
  free(d);
}
