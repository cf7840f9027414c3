/* batch.c — results, one or several in one request, and several tasks in
 * one request (feature "batch", docs/protocol.md "Batches"), part of the
 * core: each runs the one-task and one-result code of core.c
 * (cairn__allocate_locked, cairn__result_locked) once or several times
 * under one hold of c->lock, so that a request is one journal group,
 * committed by one fsync, and answered once it is durable. */
#include <stdlib.h>

#include "common/outputs.h"
#include "common/sha256.h"
#include "server/core/core.h"

void cairn__result_digest(const void *output, size_t len, const cairn__result_extra *x,
                          char digest[65]) {
  char out_digest[65];
  cairn__sha256_hex(output, len, out_digest);
  cairn__digest_result_files(out_digest, x ? x->files : NULL, x ? x->nfiles : 0, digest);
}

cairn_status cairn__core_result(cairn__core *c, int64_t vol, int64_t idx, int exit_status,
                                const char *reason, const void *output, size_t len,
                                cairn__result_extra *x, json_t **next, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  char digest[65];
  cairn__result_digest(output, len, x, digest); /* O(files log files), outside the lock */
  if (next)
    *next = NULL;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  if (v)
    st = cairn__result_locked(c, v, idx, exit_status, reason, output, len, x, digest, err);
  if (st != CAIRN_OK) {
    cairn__core_unlock(c);
    return st;
  }
  if (next) {
    cairn_status ast;
    cairn_error aerr = {0};
    int waiting;
    *next = cairn__allocate_locked(c, v, NULL, 0, 0, &waiting, &ast, &aerr);
    if (ast != CAIRN_OK)
      CAIRN_WARN(&c->log, "no next task for volunteer %lld: %s", (long long)v->id, aerr.text);
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  st = cairn__journal_wait(c->journal, seq, err);
  if (st != CAIRN_OK && next) {
    json_decref(*next);
    *next = NULL;
  }
  return st;
}


/* Appends to tasks (a JSON array) up to max tasks for v, under the lock.
 * Tasks are taken as one work request takes them until none fits what v's
 * leases leave free; the rest go ahead of a free slot (a worker's
 * prefetch): each must fit v's whole offer, and v holds at most
 * cairn__vol_lease_bound(v) leases. *waiting: a task waits for a copy of its
 * broadcast input. O(max × one allocation). */
static cairn_status take_locked(cairn__core *c, mvol *v, char **apps, int napps, unsigned max,
                                json_t *tasks, int *waiting, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  int ahead = 0;
  *waiting = 0;
  while (st == CAIRN_OK && json_array_size(tasks) < max) {
    int w = 0;
    json_t *t = cairn__allocate_locked(c, v, apps, napps, ahead, &w, &st, err);
    *waiting |= w;
    if (!t && !ahead && st == CAIRN_OK)
      ahead = 1; /* nothing fits what is free: take the rest ahead */
    else if (!t)
      break;
    else if (json_array_append_new(tasks, t))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  return st;
}

cairn_status cairn__core_work_many(cairn__core *c, int64_t vol, const cairn__report *r,
                                   char **apps, int napps, unsigned max, json_t **tasks,
                                   int *retry_ms, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  int waiting = 0;
  *retry_ms = 0;
  *tasks = json_array();
  if (!*tasks)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  if (v) {
    cairn__vol_report(c, v, r);
    st = take_locked(c, v, apps, napps, max, *tasks, &waiting, err);
    if (json_array_size(*tasks) == 0 && waiting)
      *retry_ms = cairn__copy_retry_ms_locked(c);
    if (v->quarantined)
      *retry_ms = CAIRN__QUAR_RETRY_MS;
    else if (st == CAIRN_OK && json_array_size(*tasks) == 0 &&
             v->nactive >= cairn__vol_lease_bound(v)) {
      st = cairn__vol_lease_full(v, err);
      *retry_ms = CAIRN__LEASE_FULL_RETRY_MS;
    }
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  if (st == CAIRN_OK) /* what the report changed is durable before the answer */
    st = cairn__journal_wait(c->journal, seq, err);
  if (st != CAIRN_OK) {
    json_decref(*tasks);
    *tasks = NULL;
  }
  return st;
}

cairn_status cairn__core_results(cairn__core *c, int64_t vol, cairn__batch_result *res, size_t n,
                                 unsigned next, json_t **tasks, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  *tasks = NULL;
  for (size_t i = 0; i < n; i++) /* outside the lock */
    cairn__result_digest(res[i].output, res[i].len, &res[i].x, res[i].digest);
  if (next && !(*tasks = json_array()))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  for (size_t i = 0; v && i < n; i++) {
    cairn__batch_result *e = &res[i];
    e->st = cairn__result_locked(c, v, e->idx, e->exit_status, e->reason, e->output, e->len,
                                 &e->x, e->digest, &e->err);
  }
  if (v && next) {
    int waiting;
    cairn_error aerr = {0};
    if (take_locked(c, v, NULL, 0, next, *tasks, &waiting, &aerr) != CAIRN_OK)
      CAIRN_WARN(&c->log, "no next task for volunteer %lld: %s", (long long)v->id, aerr.text);
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  if (st == CAIRN_OK)
    st = cairn__journal_wait(c->journal, seq, err);
  if (st != CAIRN_OK) {
    json_decref(*tasks);
    *tasks = NULL;
  }
  return st;
}
