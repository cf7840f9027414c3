/* waiters.c — the table of held requests (waiters.h): a fixed array of
 * `cap` work slots then `jcap` job slots, a free list and a list of the
 * held ones for each kind (the work requests' list is their FIFO), the job
 * waits of each job in a chain found by the job's id (a hash map), and a
 * thread that resumes them at their deadlines or when their client hangs
 * up.
 *
 * Bounds: memory O(cap + jcap), made at creation (the map of job chains
 * grows to at most jcap entries). Under the mutex: a hold, a take and a
 * forget are O(1) (plus one epoll_ctl; a hold of a work request with an
 * owner also counts the owner's held requests, O(owner_cap)); a work wake
 * is O(held + woken × their owners' held requests), at most O(cap) for
 * each RESUME_BATCH woken; a job wake is
 * O(woken); a claim (the handoff, under c->lock) only tries the mutex and
 * looks at CAIRN__WAITERS_PASS held requests at most, a hand is O(1);
 * the clock's scan is O(held) and runs at most once every
 * CAIRN__WAITERS_TICK_MS. Resumes are called outside the mutex, in batches
 * of at most RESUME_BATCH. */
#include "server/conn/waiters.h"

#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "server/base/hmap.h"

#define RESUME_BATCH 64
#define NONE (-1)

enum { W_FREE, W_HELD, W_DONE, W_CLAIMED };
/* The two kinds of held request; a slot's kind is fixed by its index. */
enum { K_WORK, K_JOB, K_KINDS };
/* Buckets of the job wakes' generations (a job's: its id modulo this). */
#define JOB_GENS 64

typedef struct waiter {
  void *conn;
  int fd;                  /* watched for a hang-up while held; -1: not */
  int state;               /* W_FREE, W_HELD, W_DONE (resumed, not yet taken),
                            * W_CLAIMED (out of the FIFO, waiting for its hand) */
  cairn__wake why;         /* W_DONE: why it was resumed */
  uint32_t seq;            /* bumped by every hold: epoll events name (slot, seq) */
  int64_t deadline;
  int napps;               /* 0: any app */
  uint64_t apps[CAIRN__WAITERS_APPS];
  int prev, next;          /* its kind's list while held; next: the free list while free */
  cairn__pass pass;        /* WAKE_TASK: the wake it may pass on */
  int64_t job;             /* a job wait: its job */
  int jprev, jnext;        /* a job wait: the chain of the waits on its job; a work
                            * request with an owner: the chain of the owner's */
  int64_t owner;           /* a work request: its volunteer (0: none) */
  uint8_t served;          /* a wake served its owner: behind the others (wake) */
  int64_t vol;             /* a work request the core may hand a task to (0: not) */
  json_t *offer;           /* WAKE_HANDED: the task handed to it, owned here until taken */
  uint64_t offer_seq;      /* the journal record its answer waits for */
} waiter;

struct cairn__waiters {
  pthread_mutex_t mu;
  waiter *w;               /* [0, cap): work requests; [cap, cap + jcap): job waits */
  unsigned cap, jcap;
  int head[K_KINDS], tail[K_KINDS], free_head[K_KINDS];
  uint64_t held[K_KINDS], total[K_KINDS], gen;
  uint64_t jgen[JOB_GENS]; /* job wakes so far, by bucket of the job's id */
  cairn__hmap chains;       /* job id -> 1 + the slot that begins its chain */
  cairn__hmap owners;       /* a work request's owner -> 1 + the slot that begins its
                            * chain (the owner's held requests) */
  int64_t next_deadline;   /* no held deadline is earlier (INT64_MAX: none) */
  int stopping;
  int epfd, evfd;
  pthread_t thread;
  atomic_int quit;
  void (*resume)(void *conn);
};

int64_t cairn__mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void kick(cairn__waiters *w) {
  uint64_t one = 1;
  ssize_t k = write(w->evfd, &one, sizeof one);
  (void)k; /* a full counter is already a pending wake-up */
}

static int kind_of(const cairn__waiters *w, int i) {
  return (unsigned)i >= w->cap ? K_JOB : K_WORK;
}

/* The map of slot i's chains: job waits by job, work requests by owner. */
static cairn__hmap *chains_of(cairn__waiters *w, int i) {
  return kind_of(w, i) == K_JOB ? &w->chains : &w->owners;
}

/* The first slot of the chain of key in map, or NONE. O(1). */
static int head_in(const cairn__hmap *map, int64_t key) {
  void *v = cairn__hmap_get(map, (uint64_t)key);
  return v ? (int)((intptr_t)v - 1) : NONE;
}

/* The first slot of the chain of job's waits, or NONE. O(1). */
static int chain_head(const cairn__waiters *w, int64_t job) {
  return head_in(&w->chains, job);
}

/* Makes key's chain in map begin at slot i (NONE: no chain). A key that had
 * a chain keeps its entry's room (a delete, then an insert into a map not
 * fuller than before): only a new chain may fail, -1 out of memory. */
static int set_head(cairn__hmap *map, int64_t key, int i) {
  cairn__hmap_del(map, (uint64_t)key);
  return i == NONE ? 0 : cairn__hmap_put(map, (uint64_t)key, (void *)(intptr_t)(i + 1));
}

/* Takes slot i out of its chain (a job's waits, an owner's requests). */
static void chain_out(cairn__waiters *w, int i) {
  waiter *x = &w->w[i];
  if (x->jprev != NONE)
    w->w[x->jprev].jnext = x->jnext;
  else
    (void)set_head(chains_of(w, i), x->job, x->jnext); /* an existing chain: cannot fail */
  if (x->jnext != NONE)
    w->w[x->jnext].jprev = x->jprev;
}

/* Ends slot i's hold (under mu): out of its kind's list (and its job's
 * chain), its socket no longer watched, W_DONE with why. */
static void end_hold(cairn__waiters *w, int i, cairn__wake why) {
  waiter *x = &w->w[i];
  int k = kind_of(w, i);
  if (x->prev != NONE)
    w->w[x->prev].next = x->next;
  else
    w->head[k] = x->next;
  if (x->next != NONE)
    w->w[x->next].prev = x->prev;
  else
    w->tail[k] = x->prev;
  if (k == K_JOB || x->owner)
    chain_out(w, i);
  if (x->fd >= 0)
    epoll_ctl(w->epfd, EPOLL_CTL_DEL, x->fd, NULL);
  x->state = W_DONE;
  x->why = why;
  w->held[k]--;
}

static void free_slot(cairn__waiters *w, int i) {
  int k = kind_of(w, i);
  json_decref(w->w[i].offer);
  w->w[i].offer = NULL;
  w->w[i].state = W_FREE;
  w->w[i].conn = NULL;
  w->w[i].next = w->free_head[k];
  w->free_head[k] = i;
}

static void resume_all(cairn__waiters *w, void **conns, int n) {
  for (int i = 0; i < n; i++)
    w->resume(conns[i]);
}

static int runs(const waiter *x, uint64_t app) {
  if (!app || !x->napps)
    return 1;
  for (int k = 0; k < x->napps; k++)
    if (x->apps[k] == app)
      return 1;
  return 0;
}

/* The clock: ends the holds of both kinds whose deadline passed (at most
 * RESUME_BATCH, into conns) and recomputes next_deadline. Returns how many
 * ended. */
static int expire_some(cairn__waiters *w, int64_t now, void **conns) {
  int n = 0;
  int64_t next = INT64_MAX;
  for (int k = 0; k < K_KINDS; k++)
    for (int i = w->head[k], nx; i != NONE; i = nx) {
      nx = w->w[i].next;
      if (w->w[i].deadline > now) {
        next = w->w[i].deadline < next ? w->w[i].deadline : next;
        continue;
      }
      if (n == RESUME_BATCH) {
        w->next_deadline = now; /* more are due: scan again at once */
        return n;
      }
      conns[n++] = w->w[i].conn;
      end_hold(w, i, CAIRN__WAKE_TIMEOUT);
    }
  w->next_deadline = next;
  return n;
}

/* A hang-up on the socket of (slot, seq): ends that hold (WAKE_GONE). */
static void hung_up(cairn__waiters *w, uint64_t data) {
  int i = (int)(data & 0xffffffffu);
  uint32_t seq = (uint32_t)(data >> 32);
  void *conn = NULL;
  pthread_mutex_lock(&w->mu);
  if (i >= 0 && (unsigned)i < w->cap + w->jcap && w->w[i].state == W_HELD &&
      w->w[i].seq == seq) {
    conn = w->w[i].conn;
    end_hold(w, i, CAIRN__WAKE_GONE);
  }
  pthread_mutex_unlock(&w->mu);
  if (conn)
    w->resume(conn);
}

static void *clock_main(void *arg) {
  cairn__waiters *w = arg;
  int64_t last_scan = 0;
  while (!atomic_load(&w->quit)) {
    pthread_mutex_lock(&w->mu);
    int64_t now = cairn__mono_ms(), due = w->next_deadline;
    pthread_mutex_unlock(&w->mu);
    if (due != INT64_MAX && due < last_scan + CAIRN__WAITERS_TICK_MS)
      due = last_scan + CAIRN__WAITERS_TICK_MS; /* scans at most once a tick */
    long timeout = due == INT64_MAX ? 1000 : due <= now ? 0 : (long)(due - now);
    if (timeout > 1000)
      timeout = 1000;
    struct epoll_event ev[32];
    int k = epoll_wait(w->epfd, ev, 32, (int)timeout);
    for (int e = 0; e < k; e++) {
      if (ev[e].data.u64 == UINT64_MAX) {
        uint64_t v;
        ssize_t r = read(w->evfd, &v, sizeof v);
        (void)r;
      } else
        hung_up(w, ev[e].data.u64);
    }
    now = cairn__mono_ms();
    void *conns[RESUME_BATCH];
    for (int n = RESUME_BATCH; n == RESUME_BATCH;) {
      pthread_mutex_lock(&w->mu);
      n = w->next_deadline <= now ? expire_some(w, now, conns) : 0;
      pthread_mutex_unlock(&w->mu);
      last_scan = n || last_scan + CAIRN__WAITERS_TICK_MS <= now ? now : last_scan;
      resume_all(w, conns, n);
    }
  }
  return NULL;
}

cairn__waiters *cairn__waiters_create(unsigned cap, unsigned jcap, void (*resume)(void *conn),
                                      cairn_error *err) {
  cairn__waiters *w = calloc(1, sizeof *w);
  cap = cap ? cap : CAIRN__WAITERS_CAP;
  jcap = jcap ? jcap : CAIRN__JOB_WAITS_CAP;
  if (!w || !(w->w = calloc((size_t)cap + jcap, sizeof *w->w))) {
    free(w);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory for the table of held requests");
    return NULL;
  }
  w->cap = cap;
  w->jcap = jcap;
  w->resume = resume;
  for (int k = 0; k < K_KINDS; k++)
    w->head[k] = w->tail[k] = w->free_head[k] = NONE;
  for (int i = (int)(cap + jcap) - 1; i >= 0; i--)
    free_slot(w, i);
  cairn__hmap_init(&w->chains);
  cairn__hmap_init(&w->owners);
  w->next_deadline = INT64_MAX;
  pthread_mutex_init(&w->mu, NULL);
  w->epfd = epoll_create1(EPOLL_CLOEXEC);
  w->evfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.u64 = UINT64_MAX};
  if (w->epfd < 0 || w->evfd < 0 || epoll_ctl(w->epfd, EPOLL_CTL_ADD, w->evfd, &ev) ||
      pthread_create(&w->thread, NULL, clock_main, w)) {
    cairn__error_set(err, CAIRN_EIO, "cannot start the thread of held requests: %s",
                    strerror(errno));
    if (w->epfd >= 0)
      close(w->epfd);
    if (w->evfd >= 0)
      close(w->evfd);
    pthread_mutex_destroy(&w->mu);
    free(w->w);
    free(w);
    return NULL;
  }
  return w;
}

void cairn__waiters_destroy(cairn__waiters *w) {
  if (!w)
    return;
  atomic_store(&w->quit, 1);
  kick(w);
  pthread_join(w->thread, NULL);
  close(w->epfd);
  close(w->evfd);
  pthread_mutex_destroy(&w->mu);
  cairn__hmap_free(&w->chains);
  cairn__hmap_free(&w->owners);
  free(w->w);
  free(w);
}

uint64_t cairn__waiters_gen(cairn__waiters *w) {
  pthread_mutex_lock(&w->mu);
  uint64_t g = w->gen;
  pthread_mutex_unlock(&w->mu);
  return g;
}

uint64_t cairn__waiters_job_gen(cairn__waiters *w, int64_t job) {
  pthread_mutex_lock(&w->mu);
  uint64_t g = w->jgen[(uint64_t)job % JOB_GENS];
  pthread_mutex_unlock(&w->mu);
  return g;
}

/* Puts job wait i first in the chain of job's waits (under mu); -1 when
 * the map of chains cannot grow. */
/* Puts slot i at the head of key's chain in its map (x->job is the key:
 * the job, or the owner). 0, or -1 out of memory. */
static int chain_add(cairn__waiters *w, int i, int64_t job) {
  cairn__hmap *map = chains_of(w, i);
  int first = head_in(map, job);
  if (set_head(map, job, i))
    return -1;
  w->w[i].job = job;
  w->w[i].jprev = NONE;
  w->w[i].jnext = first;
  if (first != NONE)
    w->w[first].jprev = i;
  return 0;
}

/* The work requests owner has held, counted along its chain up to cap
 * (O(cap)). */
static unsigned owner_held(const cairn__waiters *w, int64_t owner, unsigned cap) {
  unsigned n = 0;
  for (int i = head_in(&w->owners, owner); i != NONE && n < cap; i = w->w[i].jnext)
    n++;
  return n;
}

int cairn__waiters_hold(cairn__waiters *w, const cairn__hold_req *h, cairn__wake *why) {
  int k = h->job > 0 ? K_JOB : K_WORK;
  int64_t key = k == K_JOB ? h->job : h->owner; /* its chain: 0 none */
  pthread_mutex_lock(&w->mu);
  int i = w->free_head[k];
  uint64_t gen = k == K_JOB ? w->jgen[(uint64_t)h->job % JOB_GENS] : w->gen;
  int over = k == K_WORK && h->owner && h->owner_cap &&
             owner_held(w, h->owner, h->owner_cap) >= h->owner_cap;
  if (w->stopping || i == NONE || over || h->gen != gen || (key && chain_add(w, i, key))) {
    *why = w->stopping || i == NONE || over || h->gen == gen ? CAIRN__WAKE_FULL
                                                             : CAIRN__WAKE_STALE;
    pthread_mutex_unlock(&w->mu);
    return -1;
  }
  waiter *x = &w->w[i];
  w->free_head[k] = x->next;
  x->conn = h->conn;
  x->fd = h->fd;
  x->state = W_HELD;
  x->seq++;
  x->deadline = h->deadline_ms;
  x->napps = k == K_WORK && h->napps > 0 && h->napps <= CAIRN__WAITERS_APPS ? h->napps : 0;
  if (x->napps)
    memcpy(x->apps, h->apps, (size_t)x->napps * sizeof *x->apps);
  x->pass = (cairn__pass){0, 0};
  x->vol = k == K_WORK ? h->vol : 0;
  x->owner = k == K_WORK ? h->owner : 0;
  x->served = 0;
  x->next = NONE;
  x->prev = w->tail[k];
  if (w->tail[k] != NONE)
    w->w[w->tail[k]].next = i;
  else
    w->head[k] = i;
  w->tail[k] = i;
  w->held[k]++;
  w->total[k]++;
  if (x->fd >= 0) {
    struct epoll_event ev = {.events = EPOLLRDHUP,
                             .data.u64 = (uint64_t)(unsigned)i | (uint64_t)x->seq << 32};
    if (epoll_ctl(w->epfd, EPOLL_CTL_ADD, x->fd, &ev))
      x->fd = -1; /* not watched: a hang-up is found at the deadline */
  }
  int earlier = x->deadline < w->next_deadline;
  if (earlier)
    w->next_deadline = x->deadline;
  pthread_mutex_unlock(&w->mu);
  if (earlier)
    kick(w);
  return i;
}

cairn__wake cairn__waiters_take_offer(cairn__waiters *w, int slot, cairn__pass *p, void **offer,
                                      uint64_t *seq) {
  pthread_mutex_lock(&w->mu);
  waiter *x = &w->w[slot];
  if (x->state == W_HELD) /* not resumed by us: treat as a timeout */
    end_hold(w, slot, CAIRN__WAKE_TIMEOUT);
  cairn__wake why = x->why;
  *p = why == CAIRN__WAKE_TASK ? x->pass : (cairn__pass){0, 0};
  if (offer && why == CAIRN__WAKE_HANDED) {
    *offer = x->offer;
    *seq = x->offer_seq;
    x->offer = NULL;
  }
  if (x->state != W_FREE)
    free_slot(w, slot);
  pthread_mutex_unlock(&w->mu);
  return why;
}

cairn__wake cairn__waiters_take(cairn__waiters *w, int slot, cairn__pass *p) {
  return cairn__waiters_take_offer(w, slot, p, NULL, NULL);
}

static void to_back(cairn__waiters *w, int i);

int64_t cairn__waiters_claim(cairn__waiters *w, uint64_t app, int64_t *vol) {
  if (pthread_mutex_trylock(&w->mu))
    return -1; /* busy (a scan, a wake): the ordinary wake follows */
  int64_t claim = -1;
  int looked = 0;
  for (int i = w->head[K_WORK]; !w->stopping && i != NONE && looked++ < CAIRN__WAITERS_PASS;
       i = w->w[i].next) {
    if (!w->w[i].vol || !runs(&w->w[i], app))
      continue;
    end_hold(w, i, CAIRN__WAKE_HANDED);
    w->w[i].state = W_CLAIMED;
    *vol = w->w[i].vol;
    for (int j = head_in(&w->owners, w->w[i].owner); j != NONE; j = w->w[j].jnext)
      to_back(w, j); /* its volunteer's other requests: behind the others (fairness) */
    claim = (int64_t)i | (int64_t)w->w[i].seq << 32;
    break;
  }
  pthread_mutex_unlock(&w->mu);
  return claim;
}

void cairn__waiters_hand(cairn__waiters *w, int64_t claim, void *offer, uint64_t seq) {
  int i = (int)(claim & 0xffffffff);
  void *conn = NULL;
  pthread_mutex_lock(&w->mu);
  waiter *x = &w->w[i];
  if (x->state == W_CLAIMED && x->seq == (uint32_t)(claim >> 32)) {
    x->state = W_DONE;
    x->why = offer ? CAIRN__WAKE_HANDED : CAIRN__WAKE_TASK;
    x->offer = offer;
    x->offer_seq = seq;
    conn = x->conn;
    offer = NULL;
  }
  pthread_mutex_unlock(&w->mu);
  json_decref(offer); /* forgotten meanwhile: its lease expires */
  if (conn)
    w->resume(conn);
}

void cairn__waiters_forget(cairn__waiters *w, int slot) {
  pthread_mutex_lock(&w->mu);
  if (w->w[slot].state == W_HELD)
    end_hold(w, slot, CAIRN__WAKE_GONE);
  if (w->w[slot].state != W_FREE)
    free_slot(w, slot);
  pthread_mutex_unlock(&w->mu);
}

/* Marks (on = 1) or unmarks the held requests of owner as served.
 * O(its held requests). */
static void mark_served(cairn__waiters *w, int64_t owner, int on) {
  for (int j = head_in(&w->owners, owner); j != NONE; j = w->w[j].jnext)
    w->w[j].served = (uint8_t)on;
}

/* Moves slot i (held, a work request) to the back of the FIFO. O(1). */
static void to_back(cairn__waiters *w, int i) {
  waiter *x = &w->w[i];
  if (w->tail[K_WORK] == i)
    return;
  if (x->prev != NONE)
    w->w[x->prev].next = x->next;
  else
    w->head[K_WORK] = x->next;
  w->w[x->next].prev = x->prev; /* not the tail: it has a next */
  x->prev = w->tail[K_WORK];
  x->next = NONE;
  w->w[w->tail[K_WORK]].next = i;
  w->tail[K_WORK] = i;
}

/* Wakes up to n held requests that run app, oldest first but one per
 * volunteer before a second of the same (waiters.h, "Fairness"); a served
 * volunteer's other held requests then go to the back of the FIFO. Under
 * mu; conns gets the resumed connections (at most RESUME_BATCH). Returns
 * how many, *n lessened. O(held + woken × their owners' held). */
static int wake_some(cairn__waiters *w, uint64_t app, unsigned *n, int hops, void **conns) {
  int k = 0;
  int64_t owners[RESUME_BATCH];
  for (int pass = 0; pass < 2 && *n > 0 && k < RESUME_BATCH; pass++)
    for (int i = w->head[K_WORK], nx; i != NONE && *n > 0 && k < RESUME_BATCH; i = nx) {
      nx = w->w[i].next;
      if (!runs(&w->w[i], app) || (pass == 0 && w->w[i].served))
        continue;
      owners[k] = w->w[i].owner;
      conns[k++] = w->w[i].conn;
      w->w[i].pass = (cairn__pass){app, hops};
      end_hold(w, i, CAIRN__WAKE_TASK);
      if (owners[k - 1])
        mark_served(w, owners[k - 1], 1);
      (*n)--;
    }
  for (int q = 0; q < k; q++) /* the served ones' other requests: behind the rest */
    for (int j = owners[q] ? head_in(&w->owners, owners[q]) : NONE; j != NONE; j = w->w[j].jnext)
      if (w->w[j].served) {
        w->w[j].served = 0;
        to_back(w, j);
      }
  return k;
}

/* Wakes up to n held requests that run app (wake_some), each able to pass
 * the wake on hops times; gen: bump the generation. */
static void wake(cairn__waiters *w, uint64_t app, unsigned n, int hops, int gen) {
  void *conns[RESUME_BATCH];
  while (n > 0) {
    pthread_mutex_lock(&w->mu);
    if (gen)
      w->gen++;
    gen = 0;
    uint64_t held = w->held[K_WORK];
    if (hops < 0) /* the other requests held, at most CAIRN__WAITERS_PASS */
      hops = held <= 1 ? 0 : held - 1 < CAIRN__WAITERS_PASS ? (int)held - 1 : CAIRN__WAITERS_PASS;
    int k = wake_some(w, app, &n, hops, conns);
    pthread_mutex_unlock(&w->mu);
    resume_all(w, conns, k);
    if (k < RESUME_BATCH)
      break; /* no more held request runs app */
  }
}

void cairn__waiters_wake(cairn__waiters *w, uint64_t app, unsigned n) { wake(w, app, n, -1, 1); }

void cairn__waiters_pass(cairn__waiters *w, const cairn__pass *p) {
  if (p->hops > 0)
    wake(w, p->app, 1, p->hops - 1, 0);
}

/* The next held wait woken by a wake of job (0: any job wait), or NONE. */
static int next_woken(const cairn__waiters *w, int64_t job) {
  return job > 0 ? chain_head(w, job) : w->head[K_JOB];
}

void cairn__waiters_wake_job(cairn__waiters *w, int64_t job) {
  void *conns[RESUME_BATCH];
  int gen = 1;
  for (int k = RESUME_BATCH; k == RESUME_BATCH;) {
    k = 0;
    pthread_mutex_lock(&w->mu);
    for (int b = 0; gen && b < JOB_GENS; b++)
      if (job <= 0 || (uint64_t)job % JOB_GENS == (uint64_t)b)
        w->jgen[b]++;
    gen = 0;
    for (int i; k < RESUME_BATCH && (i = next_woken(w, job)) != NONE;) {
      conns[k++] = w->w[i].conn;
      end_hold(w, i, CAIRN__WAKE_JOB);
    }
    pthread_mutex_unlock(&w->mu);
    resume_all(w, conns, k);
  }
}

void cairn__waiters_shutdown(cairn__waiters *w) {
  void *conns[RESUME_BATCH];
  for (int n = RESUME_BATCH; n == RESUME_BATCH;) {
    n = 0;
    pthread_mutex_lock(&w->mu);
    w->stopping = 1;
    for (int k = 0; k < K_KINDS; k++)
      while (w->head[k] != NONE && n < RESUME_BATCH) {
        conns[n++] = w->w[w->head[k]].conn;
        end_hold(w, w->head[k], CAIRN__WAKE_STOP);
      }
    pthread_mutex_unlock(&w->mu);
    resume_all(w, conns, n);
  }
}

void cairn__waiters_counts(cairn__waiters *w, uint64_t *held, uint64_t *total) {
  pthread_mutex_lock(&w->mu);
  *held = w->held[K_WORK];
  *total = w->total[K_WORK];
  pthread_mutex_unlock(&w->mu);
}

void cairn__waiters_job_counts(cairn__waiters *w, uint64_t *held, uint64_t *total) {
  pthread_mutex_lock(&w->mu);
  *held = w->held[K_JOB];
  *total = w->total[K_JOB];
  pthread_mutex_unlock(&w->mu);
}
