/* waiters.h — requests held open until something they wait for happens:
 * work requests until a task becomes eligible (POST /v1/work with "wait"),
 * job waits until their job changes state (GET /v1/jobs/{id}?wait=,
 * docs/protocol.md). Private to server/.
 *
 * The table holds at most `cap` work requests (CAIRN__WAITERS_CAP by
 * default): each with the apps it runs (hashes, cairn__hash_app of core.h)
 * and its deadline (cairn__mono_ms), in one FIFO (oldest first); and at
 * most `jcap` job waits (CAIRN__JOB_WAITS_CAP by default), each with its
 * job and deadline, in a chain per job. http.c suspends a request's
 * connection, then holds it here; whoever ends the hold calls the resume
 * callback (http.c: MHD_resume_connection) outside the table's mutex, and
 * the resumed request takes its outcome with cairn__waiters_take().
 *
 * Who ends a hold:
 *   a wake      cairn__waiters_wake(app, n), from the core after
 *               cairn__core_unlock when n tasks of app became eligible:
 *               the n oldest held requests that run app (WAKE_TASK); one
 *               that finds no task is held again and passes its wake to
 *               the next (cairn__waiters_pass, at most CAIRN__WAITERS_PASS
 *               times);
 *   a job wake  cairn__waiters_wake_job(job), from the core after
 *               cairn__core_unlock when job finished (or changed state,
 *               or was deleted): every wait held on job (WAKE_JOB);
 *   the clock   the module's thread resumes a request at its deadline
 *               (WAKE_TIMEOUT), at most CAIRN__WAITERS_TICK_MS late;
 *   a hang-up   the same thread watches each held socket (epoll,
 *               EPOLLRDHUP): a client that closed it is resumed at once
 *               (WAKE_GONE) so that its connection is cleaned up;
 *   a stop      cairn__waiters_shutdown() resumes every held request
 *               (WAKE_STOP) and refuses new holds;
 *   a handoff   the core, submitting a job, claims the oldest held
 *               request with a volunteer (cairn__waiters_claim, under
 *               c->lock), allocates that volunteer a task in the same
 *               journal group as the job, and after cairn__core_unlock
 *               hands it the offer (cairn__waiters_hand: WAKE_HANDED):
 *               one commit for both instead of one after the other.
 *
 * Fairness: one volunteer (hold_req.owner) has at most owner_cap work
 * requests held (its slots, or fewer: what its lease bound leaves it,
 * core.h); one more is refused as if the table were full. When a wake
 * resumes one of an owner's requests, its other held requests go to the
 * back of the FIFO, behind every other volunteer's: the next wake serves
 * another volunteer first (round robin by volunteer). O(the owner's held
 * requests, at most owner_cap) a wake, through a chain per owner.
 *
 * Lock order: the table's mutex is a leaf. It is never waited for with
 * c->lock or the journal's mutex held (wakes are sent after
 * cairn__core_unlock); the one call made under c->lock, cairn__waiters_claim,
 * only tries it (pthread_mutex_trylock: a busy table means no handoff, the
 * ordinary wake follows), and it is never held while the resume callback
 * runs (libmicrohttpd takes its own locks there).
 */
#ifndef CAIRN_WAITERS_H
#define CAIRN_WAITERS_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

/* Work requests held at once by default; past it one is answered at once. */
#define CAIRN__WAITERS_CAP 4096u
/* Job waits held at once by default; past it one is answered at once. */
#define CAIRN__JOB_WAITS_CAP 1024u
/* Apps a held request is matched by; one that names more is woken for any. */
#define CAIRN__WAITERS_APPS 8
/* Held requests a wake is passed on to, at most, when the one woken finds
 * no task (a task another took, or one that does not fit it). */
#define CAIRN__WAITERS_PASS 8
/* How late the clock may resume a request past its deadline. */
#define CAIRN__WAITERS_TICK_MS 10

typedef struct cairn__waiters cairn__waiters;

/* Why a held request was resumed. */
typedef enum {
  CAIRN__WAKE_TASK,    /* a task of one of its apps became eligible: ask again */
  CAIRN__WAKE_TIMEOUT, /* its deadline passed: answer 204 */
  CAIRN__WAKE_GONE,    /* its client closed the connection: close it */
  CAIRN__WAKE_STOP,    /* the master stops: answer 204 */
  CAIRN__WAKE_STALE,   /* not held: a wake came between its look at the
                        * core and its hold (ask again at once) */
  CAIRN__WAKE_FULL,    /* not held: the table is full or stopping (204) */
  CAIRN__WAKE_JOB,     /* a job wait: its job changed state: look again */
  CAIRN__WAKE_HANDED   /* the core allocated it a task in the same journal
                        * group as the task's submission (cairn__waiters_claim):
                        * answer that offer once its group is durable */
} cairn__wake;

/* What a held request is: conn (opaque, given back to resume), fd (its
 * socket, watched for a hang-up; -1: not watched), its apps (hashes; napps
 * 0 or above CAIRN__WAITERS_APPS: woken for any app), its deadline
 * (cairn__mono_ms), and the generation it saw before it last asked
 * the core (cairn__waiters_gen). job > 0: a job wait on that job instead
 * (apps unused; gen: cairn__waiters_job_gen(job)). */
typedef struct cairn__hold_req {
  void *conn;
  int fd;
  const uint64_t *apps;
  int napps;
  int64_t deadline_ms;
  uint64_t gen;
  int64_t job;
  int64_t vol;  /* > 0: a one-task work request of this volunteer for its own
                 * apps, which the core may hand a task straight to */
  int64_t owner;      /* a work request: its volunteer (0: none, no cap) */
  unsigned owner_cap; /* work requests owner may have held at once (0: no cap) */
} cairn__hold_req;

/* Creates the table (cap 0: CAIRN__WAITERS_CAP work requests; jcap 0:
 * CAIRN__JOB_WAITS_CAP job waits) and starts its thread; resume(conn) is
 * called once for each held request that ends. NULL with err when out of
 * memory or the thread cannot start. */
cairn__waiters *cairn__waiters_create(unsigned cap, unsigned jcap, void (*resume)(void *conn),
                                      cairn_error *err);
/* Stops the thread and frees the table; call after cairn__waiters_shutdown
 * and once no request is held. NULL: nothing. */
void cairn__waiters_destroy(cairn__waiters *w);

/* The wake generation: bumped by every wake. Read it before asking the
 * core for a task, and hold with it: a wake in between is not lost. O(1). */
uint64_t cairn__waiters_gen(cairn__waiters *w);
/* The generation of job's wakes (shared with the jobs whose id is the
 * same modulo 64): read it before looking at the job's state, and hold
 * with it. O(1). */
uint64_t cairn__waiters_job_gen(cairn__waiters *w, int64_t job);
/* Holds request h: its slot (>= 0), or -1 with *why CAIRN__WAKE_STALE (a
 * wake since h->gen) or CAIRN__WAKE_FULL (its kind's slots all taken, its
 * owner's owner_cap reached, or stopping); then nothing is held and the
 * caller answers. O(1) under the
 * mutex, plus one epoll_ctl. */
int cairn__waiters_hold(cairn__waiters *w, const cairn__hold_req *h, cairn__wake *why);
/* A wake a request got but could not use (another took the task, or it
 * does not fit this volunteer): passed on to at most `hops` more held
 * requests, one after the other, so that one that can take it wakes. */
typedef struct cairn__pass {
  uint64_t app;
  int hops;
} cairn__pass;

/* Called by a resumed request with its slot: why it was resumed, and in
 * *p (WAKE_TASK: hops > 0) the wake to pass on if it finds no task;
 * frees the slot. O(1). */
cairn__wake cairn__waiters_take(cairn__waiters *w, int slot, cairn__pass *p);
/* Passes p on to the oldest held request that runs p->app, with one hop
 * less; nothing when p->hops is 0. Does not move the generation. O(as
 * cairn__waiters_wake with n = 1). */
void cairn__waiters_pass(cairn__waiters *w, const cairn__pass *p);
/* Claims for a handoff the oldest held work request with a volunteer
 * (hold_req.vol > 0) that runs app, among the first CAIRN__WAITERS_PASS
 * held: it is no longer held (no clock, hang-up or stop resumes it) and
 * waits for cairn__waiters_hand. Returns its claim (>= 0) with *vol, or -1
 * when none, when the table is busy (trylock) or stopping. Called under
 * c->lock: O(CAIRN__WAITERS_PASS), never waits for the mutex. */
int64_t cairn__waiters_claim(cairn__waiters *w, uint64_t app, int64_t *vol);
/* Resumes claimed request claim with offer (a json_t the table then owns)
 * and seq (the journal record its answer waits for): WAKE_HANDED. offer
 * NULL (the core found it nothing): WAKE_TASK, it asks the core again. A
 * claim whose connection was forgotten meanwhile drops the offer (its
 * lease expires, as a task handed out to a worker that left does). O(1). */
void cairn__waiters_hand(cairn__waiters *w, int64_t claim, void *offer, uint64_t seq);
/* As cairn__waiters_take, and for WAKE_HANDED gives the offer (*offer, the
 * caller's to free) and its journal record (*seq). O(1). */
cairn__wake cairn__waiters_take_offer(cairn__waiters *w, int slot, cairn__pass *p, void **offer,
                                      uint64_t *seq);
/* Forgets slot without resuming it (its connection is gone: libmicrohttpd's
 * completion callback); nothing when the slot was resumed already. O(1). */
void cairn__waiters_forget(cairn__waiters *w, int slot);
/* Wakes the n oldest held requests that run app (0: any request), FIFO.
 * O(n + requests of other apps passed over) under the mutex (at most the
 * cap); the resumes are called after it. */
void cairn__waiters_wake(cairn__waiters *w, uint64_t app, unsigned n);
/* Wakes every wait held on job (CAIRN__WAKE_JOB; job 0: every job wait)
 * and moves its generation. O(woken) under the mutex; the resumes are
 * called after it. */
void cairn__waiters_wake_job(cairn__waiters *w, int64_t job);
/* Resumes every held request (CAIRN__WAKE_STOP); later holds get
 * CAIRN__WAKE_FULL. O(held). */
void cairn__waiters_shutdown(cairn__waiters *w);
/* Work requests, and job waits, held now and ever held (for /metrics). O(1). */
void cairn__waiters_counts(cairn__waiters *w, uint64_t *held, uint64_t *total);
void cairn__waiters_job_counts(cairn__waiters *w, uint64_t *held, uint64_t *total);

/* Milliseconds of the monotonic clock the deadlines are on. */
int64_t cairn__mono_ms(void);

#endif
