/* conns.c — the connections without a token (conns.h): two FIFO lists
 * under one mutex, O(1) an operation. */
#include "server/conn/conns.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <time.h>

enum { E_IDLE, E_BUSY, E_AUTH, E_GONE };

struct cairn__conn_ent {
  cairn__conn_ent *prev, *next;
  int fd;
  int state;     /* E_IDLE, E_BUSY: in that list and counted; E_AUTH, E_GONE: in none */
  double since;  /* monotonic seconds it entered its list */
};

typedef struct list {
  cairn__conn_ent *head, *tail; /* oldest first */
} list;

struct cairn__conns {
  pthread_mutex_t lock;
  list idle;          /* anonymous, between requests (headers not in) */
  list busy;          /* anonymous, a request in progress */
  unsigned n, cap;    /* anonymous connections open (both lists); their cap */
  double header_seconds;
  uint64_t evicted;
};

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void push(list *l, cairn__conn_ent *e) {
  e->next = NULL;
  e->prev = l->tail;
  if (l->tail)
    l->tail->next = e;
  else
    l->head = e;
  l->tail = e;
}

static void unlink_ent(list *l, cairn__conn_ent *e) {
  if (e->prev)
    e->prev->next = e->next;
  else
    l->head = e->next;
  if (e->next)
    e->next->prev = e->prev;
  else
    l->tail = e->prev;
  e->prev = e->next = NULL;
}

static list *list_of(cairn__conns *t, const cairn__conn_ent *e) {
  return e->state == E_IDLE ? &t->idle : e->state == E_BUSY ? &t->busy : NULL;
}

/* Takes e out of the count and closes its socket; libmicrohttpd sees it
 * closed and calls cairn__conns_close() from the connection's thread. */
static void evict(cairn__conns *t, cairn__conn_ent *e) {
  unlink_ent(list_of(t, e), e);
  e->state = E_GONE;
  t->n--;
  t->evicted++;
  shutdown(e->fd, SHUT_RDWR);
}

cairn__conns *cairn__conns_create(unsigned cap, double header_seconds, cairn_error *err) {
  cairn__conns *t = calloc(1, sizeof *t);
  if (!t || pthread_mutex_init(&t->lock, NULL)) {
    free(t);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  t->cap = cap ? cap : 1;
  t->header_seconds = header_seconds;
  return t;
}

void cairn__conns_destroy(cairn__conns *t) {
  if (!t)
    return;
  /* the daemon is stopped: every connection's close has freed its entry */
  pthread_mutex_destroy(&t->lock);
  free(t);
}

cairn__conn_ent *cairn__conns_open(cairn__conns *t, int fd) {
  cairn__conn_ent *e = calloc(1, sizeof *e);
  if (!e)
    return NULL;
  e->fd = fd;
  e->state = E_IDLE;
  double now = now_seconds();
  e->since = now;
  pthread_mutex_lock(&t->lock);
  if (t->n >= t->cap) /* room for this one: the oldest between requests, else in one */
    evict(t, t->idle.head ? t->idle.head : t->busy.head);
  for (unsigned swept = 0; swept < CAIRN__CONNS_SWEEP && t->n + 1 > t->cap / 2 && t->idle.head &&
                           now - t->idle.head->since > t->header_seconds;
       swept++)
    evict(t, t->idle.head);
  push(&t->idle, e);
  t->n++;
  pthread_mutex_unlock(&t->lock);
  return e;
}

void cairn__conns_request(cairn__conns *t, cairn__conn_ent *e, int authenticated) {
  pthread_mutex_lock(&t->lock);
  list *l = list_of(t, e);
  if (l && (authenticated || e->state == E_IDLE)) {
    unlink_ent(l, e);
    if (authenticated) {
      e->state = E_AUTH;
      t->n--;
    } else {
      e->state = E_BUSY;
      e->since = now_seconds();
      push(&t->busy, e);
    }
  }
  pthread_mutex_unlock(&t->lock);
}

void cairn__conns_done(cairn__conns *t, cairn__conn_ent *e) {
  pthread_mutex_lock(&t->lock);
  if (e->state == E_BUSY) {
    unlink_ent(&t->busy, e);
    e->state = E_IDLE;
    e->since = now_seconds();
    push(&t->idle, e);
  }
  pthread_mutex_unlock(&t->lock);
}

void cairn__conns_close(cairn__conns *t, cairn__conn_ent *e) {
  pthread_mutex_lock(&t->lock);
  list *l = list_of(t, e);
  if (l) {
    unlink_ent(l, e);
    t->n--;
  }
  pthread_mutex_unlock(&t->lock);
  free(e);
}

void cairn__conns_counts(cairn__conns *t, uint64_t *anonymous, uint64_t *evicted) {
  *anonymous = *evicted = 0;
  if (!t)
    return;
  pthread_mutex_lock(&t->lock);
  *anonymous = t->n;
  *evicted = t->evicted;
  pthread_mutex_unlock(&t->lock);
}
