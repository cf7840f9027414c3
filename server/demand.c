/* demand.c — GET /v1/demand's counts (demand.h). The presence ring: one slot
 * per second of the last CAIRN__DEMAND_WINDOW, each counting the volunteers
 * whose latest request fell in that second (and of those, the ones holding no
 * lease then). A volunteer remembers the second it was counted in, so a new
 * request moves it from its old slot (when that slot still holds that second)
 * to the current one. */
#include "server/demand.h"

#include <stdlib.h>

void cairn__demand_seen(cairn_core *c, mvol *v, int64_t now) {
  cairn__presence *p = &c->presence;
  if (v->seen_sec > 0) {
    size_t s = (size_t)(v->seen_sec % CAIRN__DEMAND_WINDOW);
    if (p->sec[s] == v->seen_sec) {
      p->present[s]--;
      p->idle[s] -= v->seen_idle;
    }
  }
  size_t s = (size_t)(now % CAIRN__DEMAND_WINDOW);
  if (p->sec[s] != now) {
    p->sec[s] = now;
    p->present[s] = p->idle[s] = 0;
  }
  v->seen_sec = now;
  v->seen_idle = v->nactive == 0;
  p->present[s]++;
  p->idle[s] += v->seen_idle;
}

/* Adds job j's eligible tasks by request to reqs (at most
 * CAIRN__DEMAND_MAX_REQUESTS; *truncated set when one did not fit).
 * O(K × D). */
typedef struct demand_req {
  cairn_resources r;
  int64_t tasks;
} demand_req;

static void add_requests(const mjob *j, demand_req *reqs, size_t *n, int *truncated) {
  for (uint32_t k = 0; j->rclass_eligible && k < j->nrclasses; k++) {
    if (!j->rclass_eligible[k])
      continue;
    size_t i = 0;
    while (i < *n && !cairn_resources_equal(&reqs[i].r, &j->rclasses[k]))
      i++;
    if (i == *n) {
      if (*n == CAIRN__DEMAND_MAX_REQUESTS) {
        *truncated = 1;
        continue;
      }
      reqs[(*n)++] = (demand_req){j->rclasses[k], 0};
    }
    reqs[i].tasks += j->rclass_eligible[k];
  }
}

json_t *cairn__core_demand_json(cairn_core *c) {
  demand_req *reqs = malloc(CAIRN__DEMAND_MAX_REQUESTS * sizeof *reqs);
  if (!reqs)
    return NULL;
  size_t nreqs = 0;
  int truncated = 0;
  int64_t eligible = 0, present = 0, idle = 0;
  pthread_mutex_lock(&c->lock);
  int64_t now = cairn__now();
  size_t jobs = c->nrunq;
  for (size_t q = 0; q < c->nrunq; q++) {
    eligible += c->runq[q]->counts[TS_ELIGIBLE];
    add_requests(c->runq[q], reqs, &nreqs, &truncated);
  }
  int64_t leased = (int64_t)c->leases.count;
  for (size_t s = 0; s < CAIRN__DEMAND_WINDOW; s++) {
    const cairn__presence *p = &c->presence;
    if (p->sec[s] > now - CAIRN__DEMAND_WINDOW && p->sec[s] <= now) {
      present += p->present[s];
      idle += p->idle[s];
    }
  }
  cairn__core_unlock(c);
  json_t *list = json_array();
  for (size_t i = 0; list && i < nreqs; i++) {
    json_t *r = cairn_resources_json(&reqs[i].r);
    if (!r || json_object_set_new(r, "tasks", json_integer(reqs[i].tasks)) ||
        json_array_append_new(list, r)) {
      json_decref(r);
      json_decref(list);
      list = NULL;
    }
  }
  free(reqs);
  if (!list)
    return NULL;
  return json_pack("{s:I, s:I, s:I, s:o, s:b, s:{s:I, s:I, s:i}}", "eligible",
                   (json_int_t)eligible, "leased", (json_int_t)leased, "jobs", (json_int_t)jobs,
                   "requests", list, "requests_truncated", truncated, "volunteers", "present",
                   (json_int_t)present, "idle", (json_int_t)idle, "window_seconds",
                   CAIRN__DEMAND_WINDOW);
}
