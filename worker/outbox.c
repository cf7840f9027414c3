/* outbox.c — results waiting for their master (outbox.h). */
#include "worker/outbox.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define ANSWER_MAX (64u * 1024u)
#define CHECK_MS 250 /* how often an idle thread looks at the stopper */

int cairn__outbox_init(cairn__outbox *ob, cairn__session *session, cairn__leases *leases,
                       cairn__stopper *stopper, const cairn__logger *log,
                       cairn__auditlog *audit) {
  memset(ob, 0, sizeof *ob);
  if (pthread_mutex_init(&ob->mu, NULL) != 0)
    return -1;
  if (pthread_cond_init(&ob->cv, NULL) != 0) {
    pthread_mutex_destroy(&ob->mu);
    return -1;
  }
  ob->session = session;
  ob->leases = leases;
  ob->stopper = stopper;
  ob->log = log;
  ob->audit = audit;
  return 0;
}

/* Waits (mu held) until a result waits, or the thread should end. 1 when
 * one waits. */
static int wait_entry(cairn__outbox *ob) {
  while (ob->n == 0 && !ob->finishing && !cairn__stopper_stopping(ob->stopper)) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += CHECK_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    int rc = pthread_cond_timedwait(&ob->cv, &ob->mu, &ts);
    if (rc != 0 && rc != ETIMEDOUT)
      break;
  }
  return ob->n > 0;
}

/* Takes the oldest result out (mu held), giving its lease entry back. */
static cairn__outbox_entry pop(cairn__outbox *ob) {
  cairn__outbox_entry e = ob->e[ob->head];
  ob->head = (ob->head + 1) % CAIRN__OUTBOX_MAX;
  ob->n--;
  cairn__leases_release(ob->leases, e.lease);
  ob->used[e.lease - cairn__leases_kept(ob->leases, 0)] = 0;
  return e;
}

static void *outbox_main(void *arg) {
  cairn__outbox *ob = arg;
  pthread_mutex_lock(&ob->mu);
  while (wait_entry(ob)) {
    cairn__outbox_entry e = ob->e[ob->head];
    pthread_mutex_unlock(&ob->mu);
    cairn_error err = {0};
    long status = 0;
    cairn__delivery how;
    cairn__buf answer = {0};
    if (cairn__stopper_stopping(ob->stopper))
      how = CAIRN__ABANDONED;
    else if (atomic_load(cairn__leases_lost_flag(ob->leases, e.lease))) {
      how = CAIRN__DROPPED;
      snprintf(err.text, sizeof err.text, "its lease was lost while its master was away");
    } else
      how = cairn__result_deliver(ob->session, &ob->conn, e.index, e.body, ANSWER_MAX, &answer,
                                  &status, &err);
    if (how == CAIRN__DELIVERED && ob->audit) /* its receipt (auditlog.h) */
      cairn__auditlog_answer(ob->audit, e.index, answer.data, answer.len);
    cairn__buf_free(&answer);
    pthread_mutex_lock(&ob->mu);
    (void)pop(ob);
    pthread_mutex_unlock(&ob->mu);
    ob->done(ob->ud, e.index, e.exit_status, how, err.text);
    free(e.body);
    pthread_mutex_lock(&ob->mu);
  }
  while (ob->n > 0) { /* stopping: given up, their leases expire at the master */
    cairn__outbox_entry e = pop(ob);
    pthread_mutex_unlock(&ob->mu);
    ob->done(ob->ud, e.index, e.exit_status, CAIRN__ABANDONED, "the worker is stopping");
    free(e.body);
    pthread_mutex_lock(&ob->mu);
  }
  pthread_mutex_unlock(&ob->mu);
  return NULL;
}

int cairn__outbox_start(cairn__outbox *ob, cairn__http *http, cairn__outbox_done done,
                        void *ud) {
  ob->conn.http = http;
  ob->done = done;
  ob->ud = ud;
  if (!http || pthread_create(&ob->thread, NULL, outbox_main, ob) != 0)
    return -1;
  ob->started = 1;
  return 0;
}

int cairn__outbox_put(cairn__outbox *ob, long long index, int exit_status, char *body,
                      size_t lease) {
  int rc = -1;
  pthread_mutex_lock(&ob->mu);
  size_t j = 0;
  while (j < CAIRN__OUTBOX_MAX && ob->used[j])
    j++;
  if (ob->started && !ob->finishing && ob->n < CAIRN__OUTBOX_MAX && j < CAIRN__OUTBOX_MAX) {
    size_t kept = cairn__leases_kept(ob->leases, j);
    cairn__leases_move(ob->leases, lease, kept);
    ob->used[j] = 1;
    ob->e[(ob->head + ob->n) % CAIRN__OUTBOX_MAX] =
      (cairn__outbox_entry){index, exit_status, body, kept};
    ob->n++;
    pthread_cond_signal(&ob->cv);
    rc = 0;
  }
  pthread_mutex_unlock(&ob->mu);
  return rc;
}

size_t cairn__outbox_pending(cairn__outbox *ob) {
  pthread_mutex_lock(&ob->mu);
  size_t n = ob->n;
  pthread_mutex_unlock(&ob->mu);
  return n;
}

void cairn__outbox_finish(cairn__outbox *ob) {
  pthread_mutex_lock(&ob->mu);
  ob->finishing = 1;
  pthread_cond_signal(&ob->cv);
  pthread_mutex_unlock(&ob->mu);
  if (ob->started)
    pthread_join(ob->thread, NULL);
  ob->started = 0;
}

void cairn__outbox_destroy(cairn__outbox *ob) {
  cairn__http_delete(ob->conn.http);
  ob->conn.http = NULL;
  pthread_cond_destroy(&ob->cv);
  pthread_mutex_destroy(&ob->mu);
}
