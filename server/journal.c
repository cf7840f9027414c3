/* journal.c — group commit: records appended under the core lock are written
 * by one commit thread, one SQLite transaction per batch.
 *
 * Batches are numbered: records appended while batch k is being written go
 * to batch k+1 (cairn__journal_pending), so handlers keep working in memory
 * while the disk syncs, and each fsync covers every request that arrived
 * meanwhile. A failed commit is fatal: the process exits so that a restart
 * rebuilds memory from what is durable (nothing unacknowledged is lost, and
 * nothing acknowledged was un-durable).
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/log.h"
#include "server/core.h"

static const char *const lease_state[] = {"leased", "returned", "expired"};

int cairn__journal_add(cairn_core *c, cairn__journal_rec *r) {
  cairn__journal_rec *copy = malloc(sizeof *copy);
  if (!copy)
    return -1;
  *copy = *r;
  copy->next = NULL;
  if (c->tail)
    c->tail->next = copy;
  else
    c->head = copy;
  c->tail = copy;
  pthread_cond_signal(&c->work_cv);
  return 0;
}

uint64_t cairn__journal_pending(cairn_core *c) { return c->taken + 1; }

cairn_status cairn__journal_wait(cairn_core *c, uint64_t seq, cairn_error *err) {
  while (c->committed < seq) {
    if (!c->committer_running)
      return cairn_error_set(err, CAIRN_EIO, "store: the commit thread has stopped");
    pthread_cond_wait(&c->done_cv, &c->lock);
  }
  return CAIRN_OK;
}

static char *apps_json(const mvol *v) {
  json_t *a = json_array();
  for (int i = 0; i < v->napps; i++)
    json_array_append_new(a, json_string(v->apps[i]));
  char *s = json_dumps(a, JSON_COMPACT);
  json_decref(a);
  return s;
}

static cairn_status write_job(cairn_store *s, const mjob *j, cairn_error *err) {
  cairn_status st = cairn_store_job_insert(s, j->id, j->name, j->app, j->policy_name,
                                           j->replication, j->quorum, j->lease_seconds,
                                           j->max_attempts, j->created, err);
  for (uint32_t i = 0; st == CAIRN_OK && i < j->nfiles; i++)
    st = cairn_store_job_file_insert(s, j->id, (int)i, j->files[i].name, j->files[i].sha256,
                                     j->files[i].broadcast, err);
  char buf[64];
  for (uint32_t i = 0; st == CAIRN_OK && i < j->ntasks; i++) {
    const mtask *t = &j->tasks[i];
    json_t *in = json_array();
    for (uint32_t k = 0; k < t->ninputs; k++)
      json_array_append_new(in, json_integer(t->inputs[k]));
    char *ins = json_dumps(in, JSON_COMPACT);
    json_decref(in);
    if (!ins)
      return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    int eligible = cairn_dag_nparents(j->dag, i) == 0;
    st = cairn_store_task_insert(s, t->key, j->id, i, t->name, t->args_json, ins,
                                 eligible ? "eligible" : "waiting", err);
    free(ins);
    for (uint32_t p = j->dag->par_off[i]; st == CAIRN_OK && p < j->dag->par_off[i + 1]; p++)
      st = cairn_store_task_parent_insert(s, t->key, j->tasks[j->dag->par[p]].key,
                                          p - j->dag->par_off[i], err);
  }
  (void)buf;
  return st;
}

static cairn_status apply(cairn_store *s, const cairn__journal_rec *r, cairn_error *err) {
  switch (r->type) {
  case J_META:
    return cairn_store_meta_set(s, r->s1, r->s2, err);
  case J_VOL: {
    const mvol *v = r->ref;
    char *apps = apps_json(v);
    if (!apps)
      return cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    cairn_status st = cairn_store_volunteer_insert(s, v->id, v->name, v->cluster, apps, v->slots,
                                                   v->token_hash, v->created, err);
    free(apps);
    return st;  /* its peer URL follows in a J_PEER record */
  }
  case J_BAN: { /* its holdings go in the same transaction */
    cairn_status st = cairn_store_volunteer_ban(s, r->a, r->s1, err);
    return st == CAIRN_OK ? cairn_store_holders_forget(s, r->a, err) : st;
  }
  case J_FILE:
    return cairn_store_file_insert(s, r->s1, r->a, r->b, err);
  case J_JOB:
    return write_job(s, r->ref, err);
  case J_TASK:
    return cairn_store_task_update(s, r->a, cairn__tstate_name[r->b], (int)r->c, r->d, r->e, err);
  case J_JOBSTATE:
    return cairn_store_job_update(s, r->a, cairn__jstate_name[r->b], r->c, err);
  case J_ALLOC:
    return cairn_store_alloc_insert(s, r->a, r->b, r->c, r->d, r->e, r->f, r->g, err);
  case J_LEASE:
    return cairn_store_alloc_update(s, r->a, r->b, lease_state[r->c], err);
  case J_RESULT:
    return cairn_store_result_insert(s, r->a, r->b, r->c, (int)r->d, r->blob, r->bloblen, r->s1,
                                     r->e, cairn__outcome_name[r->f], err);
  case J_PEER:
    return cairn_store_volunteer_peer(s, r->a, r->s1, err);
  case J_OUTCOME:
    return cairn_store_result_outcome(s, r->a, cairn__outcome_name[r->b], err);
  case J_HOLD:
    return cairn_store_holder_insert(s, r->s1, r->a, r->b, err);
  case J_UNHOLD:
    return cairn_store_holder_delete(s, r->s1, r->a, err);
  case J_RATE:
    return cairn_store_rate_put(s, r->s1, r->s2, r->a, r->b, err);
  }
  return cairn_error_set(err, CAIRN_EINTERNAL, "journal: unknown record %d", (int)r->type);
}

static void free_recs(cairn__journal_rec *r) {
  while (r) {
    cairn__journal_rec *next = r->next;
    free(r->s1);
    free(r->s2);
    free(r->blob);
    free(r);
    r = next;
  }
}

static void *committer(void *arg) {
  cairn_core *c = arg;
  pthread_mutex_lock(&c->lock);
  for (;;) {
    while (!c->head && !c->stopping)
      pthread_cond_wait(&c->work_cv, &c->lock);
    if (!c->head)
      break;
    cairn__journal_rec *batch = c->head;
    c->head = c->tail = NULL;
    uint64_t seq = ++c->taken;
    pthread_mutex_unlock(&c->lock);

    cairn_error err = {0};
    cairn_status st = cairn_store_begin(c->store, &err);
    for (cairn__journal_rec *r = batch; st == CAIRN_OK && r; r = r->next)
      st = apply(c->store, r, &err);
    if (st == CAIRN_OK)
      st = cairn_store_commit(c->store, &err);
    if (st != CAIRN_OK) {
      cairn_store_rollback(c->store);
      CAIRN_ERR("commit of batch %llu failed: %s; exiting so that a restart recovers "
                "the durable state", (unsigned long long)seq, err.text);
      fflush(stderr);
      _exit(70);
    }
    free_recs(batch);

    pthread_mutex_lock(&c->lock);
    c->committed = seq;
    pthread_cond_broadcast(&c->done_cv);
  }
  pthread_mutex_unlock(&c->lock);
  return NULL;
}

int cairn__journal_start(cairn_core *c, cairn_error *err) {
  c->committer_running = 1;
  if (pthread_create(&c->committer, NULL, committer, c)) {
    c->committer_running = 0;
    cairn_error_set(err, CAIRN_EINTERNAL, "cannot start the commit thread");
    return -1;
  }
  return 0;
}

void cairn__journal_stop(cairn_core *c) {
  if (!c->committer_running)
    return;
  pthread_mutex_lock(&c->lock);
  c->stopping = 1;
  pthread_cond_signal(&c->work_cv);
  pthread_mutex_unlock(&c->lock);
  pthread_join(c->committer, NULL);
  pthread_mutex_lock(&c->lock);
  c->committer_running = 0;
  pthread_cond_broadcast(&c->done_cv);
  pthread_mutex_unlock(&c->lock);
}
