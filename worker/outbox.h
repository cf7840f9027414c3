/* outbox.h — results a slot could not deliver because their master did
 * not answer, kept for a thread of their project to deliver, so that the
 * slot goes on with another project's tasks (docs/worker.md, "Several
 * projects"). Private to worker/.
 *
 * At most CAIRN__OUTBOX_MAX results wait in a project's outbox; a slot
 * whose result finds it full delivers it itself, retrying as a worker of
 * one project does. Each result keeps its lease in a kept entry of the
 * project's leases (leases.h), so that heartbeats name it and a master
 * back within the lease renews it. The thread sends them oldest first,
 * each until it is delivered, refused (its lease ran out meanwhile: 409)
 * or the worker stops (cairn__result_deliver); one whose lease a
 * heartbeat found lost is dropped unsent. As each ends the thread calls
 * done(ud, index, exit_status, how, why).
 *
 * Ownership: each project owns its outbox (project.h). put() is called by
 * the slots; start(), finish() and destroy() by the worker's run(). mu is
 * a leaf lock.
 */
#ifndef CAIRN_OUTBOX_H
#define CAIRN_OUTBOX_H

#include <pthread.h>

#include "common/log.h"
#include "worker/auditlog.h"
#include "worker/leases.h"
#include "worker/result.h"
#include "worker/session.h"
#include "worker/stopper.h"

#define CAIRN__OUTBOX_MAX 16

/* A result's end: how (DELIVERED, DROPPED with why, ABANDONED). */
typedef void (*cairn__outbox_done)(void *ud, long long index, int exit_status,
                                   cairn__delivery how, const char *why);

typedef struct cairn__outbox_entry {
  long long index;
  int exit_status;
  char *body;          /* the result's body (owned) */
  size_t lease;        /* its kept lease entry */
} cairn__outbox_entry;

typedef struct cairn__outbox {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cairn__outbox_entry e[CAIRN__OUTBOX_MAX]; /* a ring: head, n */
  size_t head, n;
  unsigned char used[CAIRN__OUTBOX_MAX];    /* kept lease entries in use */
  int finishing;        /* no more puts: the thread ends once it is empty */
  int started;
  pthread_t thread;
  cairn__session *session;   /* borrowed: the project's */
  cairn__leases *leases;     /* borrowed: the project's, with CAIRN__OUTBOX_MAX kept entries */
  cairn__stopper *stopper;   /* borrowed: the worker's */
  cairn__conn conn;          /* the thread's own connection (its http owned) */
  cairn__outbox_done done;
  void *ud;
  const cairn__logger *log;  /* borrowed: the project's */
  cairn__auditlog *audit;    /* borrowed: the project's, given each receipt; NULL: none */
} cairn__outbox;

/* Sets ob up (nothing runs yet); the receipts in its results' answers go
 * to audit (may be NULL). 0, or -1 when out of memory. */
int cairn__outbox_init(cairn__outbox *ob, cairn__session *session, cairn__leases *leases,
                       cairn__stopper *stopper, const cairn__logger *log,
                       cairn__auditlog *audit);
/* Starts the thread with http (taken over: freed by destroy) and done.
 * 0, or -1 (http is still freed by destroy). */
int cairn__outbox_start(cairn__outbox *ob, cairn__http *http, cairn__outbox_done done,
                        void *ud);
/* Puts the result body (taken over when 0 is returned) of index, whose
 * lease is in the project's entry lease (moved to a kept entry). 0, or -1
 * when the outbox is full, not running or finishing (nothing changed). */
int cairn__outbox_put(cairn__outbox *ob, long long index, int exit_status, char *body,
                      size_t lease);
/* Results waiting. */
size_t cairn__outbox_pending(cairn__outbox *ob);
/* No more puts: waits for the thread to deliver what waits (or to give it
 * up when the worker stops) and joins it. */
void cairn__outbox_finish(cairn__outbox *ob);
/* Frees ob (after finish, or when never started). */
void cairn__outbox_destroy(cairn__outbox *ob);

#endif
