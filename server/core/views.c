/* views.c — the core's copies of one task and of one lease (views.h), for
 * the tests that drive the core in-process and read what its transitions
 * left; each takes c->lock for O(1) work (plus the results asked for). */
#include "server/core/core.h"
#include "server/core/views.h"

cairn_status cairn__core_task_info(cairn__core *c, int64_t id, uint32_t pos,
                                   cairn__task_info *out, cairn__res_info *res, uint32_t max,
                                   cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  const mjob *j = cairn__job_find_locked(c, id);
  if (!j || pos >= j->ntasks) {
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no task %u in job %lld", (unsigned)pos,
                          (long long)id);
    goto out;
  }
  const mtask *t = &j->tasks[pos];
  const mrep *r = t->rep;
  *out = (cairn__task_info){.key = t->key, .accepted = t->accepted, .round = t->round,
                            .state = t->state, .attempts = t->attempts,
                            .solo = r ? r->solo : 0, .nres = r ? r->nres : 0};
  for (uint32_t i = 0; r && i < r->nres && i < max; i++)
    res[i] = (cairn__res_info){.idx = r->res[i].idx, .vol = r->res[i].vol,
                               .outcome = r->res[i].outcome, .kept_out = r->res[i].out != NULL,
                               .credit = r->res[i].credit};
out:
  cairn__core_unlock(c);
  return st;
}

cairn_status cairn__core_lease_info(cairn__core *c, int64_t idx, cairn__lease_info *out,
                                    cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  const mlease *l = cairn__hmap_get(&c->leases, (uint64_t)idx);
  if (!l)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no lease %lld out", (long long)idx);
  else
    *out = (cairn__lease_info){.job = l->job->id, .vol = l->vol->id, .task = l->task,
                               .issued = l->issued, .expires = l->expires, .hard = l->hard};
  cairn__core_unlock(c);
  return st;
}
