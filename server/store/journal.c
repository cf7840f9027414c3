/* journal.c — group commit and the one failure rule (journal.h); the
 * records themselves are in jrec.c. */
#include "server/store/journal.h"

#include "server/store/chain.h"
#include "server/store/jrec.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct cairn__journal {
  pthread_mutex_t mu;
  pthread_cond_t work_cv, done_cv;
  cairn__jrec *head, *tail;  /* records not yet taken, in put order */
  cairn__jrec *sealed;       /* the last record the next batch may take (NULL: none) */
  uint64_t taken;            /* batches taken by the commit thread */
  uint64_t committed;        /* batches durable */
  int stopping, failed;
  int exited;                /* the commit thread has ended */
  cairn_error failure;
  cairn__store *store;
  const cairn__logger *log;
  int fail_fd;
  pthread_t thread;
  cairn__chain *chain;       /* the audit chain (NULL: off); the commit thread's */
  cairn__centry *entry;      /* the commit thread's scratch entry */
  int gap_noted;             /* the commit thread wrote meta audit_chain_gap (chain off) */
  int chain_loaded;          /* the commit thread loaded the chain set (and its tree) */
  cairn_error load_err;      /* how that went */
};


/* Commit thread, the chain off: the first record of a chained kind notes,
 * in its transaction, that the chain has a gap (cairn audit verify then
 * lets live rows without entries pass; docs/accountability.md). */
static cairn_status note_gap(cairn__journal *j, const cairn__jrec *r, cairn_error *err) {
  cairn__centry e;
  if (!cairn__jrec_chain_entry(r, &e))
    return CAIRN_OK;
  j->gap_noted = 1; /* a failed commit fails the journal for good */
  return cairn__store_meta_set(j->store, "audit_chain_gap", "records written with the chain off",
                              err);
}

/* Commit thread: signs the chain's head in its own transaction when due
 * (force: at close). A failure is logged: the entries stay, only unsigned. */
static void checkpoint(cairn__journal *j, cairn__chain *ch, int force) {
  int64_t now = (int64_t)time(NULL);
  cairn_error err = {0};
  if (ch && cairn__chain_load(ch, j->store, &err) != CAIRN_OK) {
    CAIRN_WARN(j->log, "audit chain: cannot read its head: %s", err.text);
    return;
  }
  if (!ch || !cairn__chain_checkpoint_due(ch, now, force))
    return;
  cairn_status st = cairn__store_begin(j->store, &err);
  if (st == CAIRN_OK)
    st = cairn__chain_checkpoint(ch, j->store, now, force, &err);
  if (st == CAIRN_OK)
    st = cairn__store_commit(j->store, &err);
  if (st != CAIRN_OK) {
    cairn__store_rollback(j->store);
    CAIRN_WARN(j->log, "audit chain: cannot write a checkpoint: %s", err.text);
  }
}

static void free_list(cairn__jrec *r) {
  while (r) {
    cairn__jrec *next = *cairn__jrec_next(r);
    cairn__jrec_free(r);
    r = next;
  }
}

/* Under j->mu: enters the failed state (the first reason wins). */
static void fail_locked(cairn__journal *j, const cairn_error *why) {
  if (j->failed)
    return;
  j->failed = 1;
  j->failure = *why;
  j->failure.status = CAIRN_EFAILED;
  CAIRN_ERR(j->log, "the master has failed and acknowledges nothing more: %s; restart it to "
            "recover what was committed", why->text);
  pthread_cond_broadcast(&j->done_cv);
  pthread_cond_broadcast(&j->work_cv);
  if (j->fail_fd >= 0) {
    char b = 'f';
    ssize_t w = write(j->fail_fd, &b, 1);
    (void)w;
  }
}

/* Under j->mu, on the commit thread: loads a chain just set, and its tree
 * (which may be built from the entries: cairn__journal_set_chain waits). */
static void load_chain(cairn__journal *j) {
  cairn__chain *ch = j->chain;
  cairn_error err = {0};
  pthread_mutex_unlock(&j->mu);
  cairn__chain_load(ch, j->store, &err);
  pthread_mutex_lock(&j->mu);
  j->load_err = err;
  j->chain_loaded = 1;
  pthread_cond_broadcast(&j->done_cv);
}

static void *committer(void *arg) {
  cairn__journal *j = arg;
  pthread_mutex_lock(&j->mu);
  for (;;) {
    if (j->chain && !j->chain_loaded && !j->failed) {
      load_chain(j);
      continue;
    }
    while (!j->sealed && !j->stopping && !j->failed && !(j->chain && !j->chain_loaded)) {
      if (!j->chain) {
        pthread_cond_wait(&j->work_cv, &j->mu);
        continue;
      }
      /* with the audit chain on, wake to sign a head that moved */
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_sec += CAIRN_CHAIN_CHECKPOINT_SECONDS;
      if (pthread_cond_timedwait(&j->work_cv, &j->mu, &until) != 0 && !j->sealed) {
        cairn__chain *ch = j->chain;
        pthread_mutex_unlock(&j->mu);
        checkpoint(j, ch, 0);
        pthread_mutex_lock(&j->mu);
      }
    }
    if (j->chain && !j->chain_loaded && !j->failed)
      continue; /* a chain just set: loaded first */
    if (j->stopping && !j->failed)
      j->sealed = j->tail; /* no record is put after close */
    if (!j->sealed || j->failed)
      break;
    /* the batch: every record up to the last seal; a group still being put
     * under the core's lock stays for the next one */
    cairn__jrec *batch = j->head;
    j->head = *cairn__jrec_next(j->sealed);
    *cairn__jrec_next(j->sealed) = NULL;
    if (!j->head)
      j->tail = NULL;
    j->sealed = NULL;
    uint64_t seq = ++j->taken;
    cairn__chain *ch = j->chain;
    pthread_mutex_unlock(&j->mu);

    cairn_error err = {0};
    int reclaim = 0;
    cairn_status st = cairn__store_begin(j->store, &err);
    for (cairn__jrec *r = batch; st == CAIRN_OK && r; r = *cairn__jrec_next(r)) {
      st = cairn__jrec_apply(j->store, r, &err);
      if (st == CAIRN_OK && ch && cairn__jrec_chain_entry(r, j->entry))
        st = cairn__chain_append(ch, j->store, j->entry, &err);
      else if (st == CAIRN_OK && !ch && !j->gap_noted)
        st = note_gap(j, r, &err);
      reclaim |= cairn__jrec_reclaims(r);
    }
    if (st == CAIRN_OK)
      st = cairn__store_commit(j->store, &err);
    if (st != CAIRN_OK)
      cairn__store_rollback(j->store);
    cairn_error rerr = {0}; /* a delete's pages go back before it is acknowledged */
    if (st == CAIRN_OK && reclaim && cairn__store_reclaim(j->store, &rerr) != CAIRN_OK)
      CAIRN_WARN(j->log, "store: reclaiming free pages: %s", rerr.text);
    free_list(batch);
    if (st == CAIRN_OK && ch) {
      cairn__chain_committed(ch);
      checkpoint(j, ch, 0);
    }

    pthread_mutex_lock(&j->mu);
    if (st != CAIRN_OK) {
      cairn_error why;
      cairn__error_set(&why, st, "commit of batch %llu failed: %s", (unsigned long long)seq,
                      err.text);
      fail_locked(j, &why);
      break;
    }
    j->committed = seq;
    pthread_cond_broadcast(&j->done_cv);
  }
  free_list(j->head);
  j->head = j->tail = j->sealed = NULL;
  if (!j->failed && j->chain) { /* sign the last head at close */
    cairn__chain *ch = j->chain;
    pthread_mutex_unlock(&j->mu);
    checkpoint(j, ch, 1);
    pthread_mutex_lock(&j->mu);
  }
  j->exited = 1;
  pthread_cond_broadcast(&j->done_cv);
  pthread_mutex_unlock(&j->mu);
  return NULL;
}

cairn__journal *cairn__journal_open(cairn__store *s, const cairn__logger *log, int fail_fd,
                                    cairn_error *err) {
  cairn__journal *j = calloc(1, sizeof *j);
  if (!j) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  pthread_mutex_init(&j->mu, NULL);
  pthread_cond_init(&j->work_cv, NULL);
  pthread_cond_init(&j->done_cv, NULL);
  j->store = s;
  j->log = log;
  j->fail_fd = fail_fd;
  if (pthread_create(&j->thread, NULL, committer, j)) {
    cairn__error_set(err, CAIRN_EINTERNAL, "cannot start the commit thread");
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->work_cv);
    pthread_cond_destroy(&j->done_cv);
    free(j);
    return NULL;
  }
  return j;
}

void cairn__journal_close(cairn__journal *j) {
  if (!j)
    return;
  pthread_mutex_lock(&j->mu);
  j->stopping = 1;
  pthread_cond_signal(&j->work_cv);
  pthread_mutex_unlock(&j->mu);
  pthread_join(j->thread, NULL);
  pthread_mutex_destroy(&j->mu);
  pthread_cond_destroy(&j->work_cv);
  pthread_cond_destroy(&j->done_cv);
  cairn__chain_close(j->chain);
  free(j->entry);
  free(j);
}

cairn_status cairn__journal_set_chain(cairn__journal *j, cairn__chain *ch, cairn_error *err) {
  cairn__centry *e = malloc(sizeof *e);
  if (!e) {
    cairn__chain_close(ch);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  pthread_mutex_lock(&j->mu);
  j->entry = e;
  j->chain = ch;
  pthread_cond_signal(&j->work_cv);
  while (!j->chain_loaded && !j->failed && !j->exited) /* the commit thread loads it */
    pthread_cond_wait(&j->done_cv, &j->mu);
  cairn_status st = j->chain_loaded ? j->load_err.status : CAIRN_EFAILED;
  if (st != CAIRN_OK && err && (j->chain_loaded || j->failed))
    *err = j->chain_loaded ? j->load_err : j->failure;
  else if (st != CAIRN_OK)
    cairn__error_set(err, st, "the journal stopped before the audit chain was loaded");
  pthread_mutex_unlock(&j->mu);
  return st;
}

void cairn__journal_put(cairn__journal *j, cairn__jrec *r) {
  pthread_mutex_lock(&j->mu);
  if (j->failed || j->stopping) {
    cairn__jrec_free(r);
  } else if (!r) {
    cairn_error why;
    cairn__error_set(&why, CAIRN_ENOMEM, "out of memory queuing a journal record");
    fail_locked(j, &why);
  } else {
    *cairn__jrec_next(r) = NULL;
    if (j->tail)
      *cairn__jrec_next(j->tail) = r;
    else
      j->head = r;
    j->tail = r;
  }
  pthread_mutex_unlock(&j->mu);
}

static void seal_locked(cairn__journal *j) {
  if (j->tail && j->sealed != j->tail) {
    j->sealed = j->tail;
    pthread_cond_signal(&j->work_cv);
  }
}

void cairn__journal_seal(cairn__journal *j) {
  if (!j)
    return;
  pthread_mutex_lock(&j->mu);
  seal_locked(j);
  pthread_mutex_unlock(&j->mu);
}

uint64_t cairn__journal_last(cairn__journal *j) {
  pthread_mutex_lock(&j->mu);
  seal_locked(j);
  uint64_t seq = j->head ? j->taken + 1 : j->taken;
  pthread_mutex_unlock(&j->mu);
  return seq;
}

cairn_status cairn__journal_wait(cairn__journal *j, uint64_t seq, cairn_error *err) {
  pthread_mutex_lock(&j->mu);
  while (j->committed < seq && !j->failed && !j->exited)
    pthread_cond_wait(&j->done_cv, &j->mu);
  cairn_status st = CAIRN_OK;
  if (j->failed) {
    st = CAIRN_EFAILED;
    if (err)
      *err = j->failure;
  } else if (j->committed < seq)
    st = cairn__error_set(err, CAIRN_EFAILED, "the master is stopping");
  pthread_mutex_unlock(&j->mu);
  return st;
}

uint64_t cairn__journal_committed(cairn__journal *j) {
  pthread_mutex_lock(&j->mu);
  uint64_t n = j->committed;
  pthread_mutex_unlock(&j->mu);
  return n;
}

cairn_status cairn__journal_failed(cairn__journal *j, cairn_error *err) {
  pthread_mutex_lock(&j->mu);
  cairn_status st = CAIRN_OK;
  if (j->failed) {
    st = CAIRN_EFAILED;
    if (err)
      *err = j->failure;
  }
  pthread_mutex_unlock(&j->mu);
  return st;
}
