/* fit.c — resource requests against offers (fit.h). Every function but
 * cairn__core_set_offer runs under c->lock; costs are stated in fit.h. */
#include "server/core/fit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int cairn__fit_job_init(mjob *j, const cairn__resources *classes, uint32_t n) {
  j->rclasses = calloc(CAIRN_MAX_RESOURCE_CLASSES, sizeof *j->rclasses);
  j->rclass_tasks = calloc(CAIRN_MAX_RESOURCE_CLASSES, sizeof *j->rclass_tasks);
  j->rclass_eligible = calloc(CAIRN_MAX_RESOURCE_CLASSES, sizeof *j->rclass_eligible);
  if (!j->rclasses || !j->rclass_tasks || !j->rclass_eligible)
    return -1;
  if (n > CAIRN_MAX_RESOURCE_CLASSES)
    n = CAIRN_MAX_RESOURCE_CLASSES;
  memcpy(j->rclasses, classes, n * sizeof *classes);
  j->nrclasses = n;
  return 0;
}

void cairn__fit_count_task(mjob *j, uint32_t k) {
  if (k < j->nrclasses)
    j->rclass_tasks[k]++;
}

int cairn__fit_class_of(mjob *j, const cairn__resources *r) {
  if (!j->rclasses && cairn__fit_job_init(j, &CAIRN_RESOURCES_DEFAULT, 1))
    return -1;
  uint32_t k = 0;
  while (k < j->nrclasses && !cairn__resources_equal(&j->rclasses[k], r))
    k++;
  if (k == CAIRN_MAX_RESOURCE_CLASSES)
    return -1;
  if (k == j->nrclasses)
    j->rclasses[j->nrclasses++] = *r;
  return (int)k;
}

const cairn__resources *cairn__fit_req(const mjob *j, uint32_t v) {
  static const cairn__resources one_core = {1, 0, 0};
  uint32_t k = j->tasks[v].rclass;
  return j->rclasses && k < j->nrclasses ? &j->rclasses[k] : &one_core;
}

cairn__resources cairn__fit_offer(const mvol *v) {
  static const cairn__resources unlimited = {INT64_MAX / 4, INT64_MAX / 4, INT64_MAX / 4};
  return v->has_offer ? v->offer : unlimited;
}

static void see_offer(cairn__core *c, const cairn__resources *o) {
  cairn__resources before = c->largest;
  cairn__resources_max(&c->largest, o);
  if (!c->any_offer || !cairn__resources_equal(&before, &c->largest))
    c->offer_gen++;
  c->any_offer = 1;
}

cairn__resources cairn__fit_free(const mvol *v) {
  cairn__resources f = cairn__fit_offer(v);
  cairn__resources_add(&f, &v->used, 0);
  return f;
}

void cairn__fit_set_offer(cairn__core *c, mvol *v, const cairn__resources *offer) {
  if (v->has_offer && cairn__resources_equal(&v->offer, offer))
    return;
  v->offer = *offer;
  v->has_offer = 1;
  see_offer(c, offer);
  cairn__journal_put(c->journal, cairn__jrec_offer(v->id, offer->cores, offer->memory_mib,
                                                  offer->disk_mib));
}

void cairn__fit_lease(mvol *vol, const cairn__resources *req, int add) {
  cairn__resources_add(&vol->used, req, add);
}

int cairn__fit_job_may(const mjob *j, const cairn__resources *avail) {
  if (!j->rclasses)
    return avail->cores >= 1;
  for (uint32_t k = 0; k < j->nrclasses; k++)
    if (j->rclass_tasks[k] && cairn__resources_fit(&j->rclasses[k], avail))
      return 1;
  return 0;
}

int cairn__fit_check(const cairn__core *c, const cairn__resources *req,
                     const cairn__resources *avail) {
  if (cairn__resources_fit(req, avail))
    return 1;
  return c->any_offer && !cairn__resources_fit(req, &c->largest) ? -1 : 0;
}

int cairn__fit_park(mjob *j, uint32_t v) {
  if (j->tasks[v].parked)
    return 0;
  if (!j->parked && !(j->parked = malloc((size_t)j->ntasks * sizeof *j->parked)))
    return -1;
  j->parked[(j->park_head + j->nparked) % j->ntasks] = v;
  j->nparked++;
  j->tasks[v].parked = 1;
  return 0;
}

void cairn__fit_unpark(const cairn__core *c, mjob *j, void (*requeue)(mjob *, uint32_t)) {
  if (!j->sweep_left && j->nparked && j->parked_gen != c->offer_gen) {
    j->sweep_left = j->nparked; /* those parked before the largest offer grew */
    j->parked_gen = c->offer_gen;
  }
  for (uint32_t n = 0; n < CAIRN__FIT_UNPARK_MAX && j->sweep_left; n++) {
    uint32_t v = j->parked[j->park_head];
    j->park_head = (j->park_head + 1) % j->ntasks;
    j->nparked--;
    j->sweep_left--;
    j->tasks[v].parked = 0;
    if (j->tasks[v].state == TS_ELIGIBLE)
      requeue(j, v); /* a no-op when it is queued already */
  }
}

void cairn__fit_job_json(const cairn__core *c, const mjob *j, json_t *o) {
  uint64_t unfit = 0;
  if (c->any_offer && j->rclasses && j->state != JS_DONE)
    unfit = cairn__resources_unfit(j->rclasses, j->rclass_tasks, j->nrclasses, &c->largest);
  json_object_set_new(o, "unfit", json_integer((json_int_t)unfit));
  json_object_set_new(o, "largest_offer",
                      c->any_offer ? cairn__resources_json(&c->largest) : json_null());
}

cairn_status cairn__core_set_offer(cairn__core *c, int64_t vol, const cairn__resources *offer,
                                   cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  mvol *v = vol >= 1 && (size_t)vol <= c->nvols ? c->vols[vol - 1] : NULL;
  if (v)
    cairn__fit_set_offer(c, v, offer);
  else
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)vol);
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}
