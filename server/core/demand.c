/* demand.c — GET /v1/demand's counts (demand.h). The presence ring: one slot
 * per second of the last CAIRN__DEMAND_WINDOW, each counting the volunteers
 * whose latest request fell in that second (and of those, the ones holding no
 * lease then). A volunteer remembers the second it was counted in, so a new
 * request moves it from its old slot (when that slot still holds that second)
 * to the current one. */
#include "server/core/demand.h"

#include <stdlib.h>

void cairn__demand_seen(cairn__core *c, mvol *v, int64_t now) {
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

/* The distinct requests seen so far, found by a hash of the request in a
 * table of DEMAND_SLOTS (twice the most kept: a probe ends within a few). */
#define DEMAND_SLOTS (2 * CAIRN__DEMAND_MAX_REQUESTS)
typedef struct demand_req {
  cairn__resources r;
  int64_t tasks;
} demand_req;
typedef struct demand_set {
  demand_req reqs[CAIRN__DEMAND_MAX_REQUESTS];
  int16_t slot[DEMAND_SLOTS]; /* index into reqs + 1; 0: free */
  size_t n;
  int truncated;
} demand_set;

static size_t req_hash(const cairn__resources *r) {
  uint64_t h = (uint64_t)r->cores * 0x9E3779B97F4A7C15ull;
  h = (h ^ (uint64_t)r->memory_mib) * 0xBF58476D1CE4E5B9ull;
  h = (h ^ (uint64_t)r->disk_mib) * 0x94D049BB133111EBull;
  return (size_t)(h >> 32) % DEMAND_SLOTS;
}

/* Adds job j's eligible tasks by request to s (at most
 * CAIRN__DEMAND_MAX_REQUESTS requests; s->truncated set when one did not
 * fit). O(K) expected, K = j's requests. */
static void add_requests(const mjob *j, demand_set *s) {
  for (uint32_t k = 0; j->rclass_eligible && k < j->nrclasses; k++) {
    if (!j->rclass_eligible[k])
      continue;
    size_t h = req_hash(&j->rclasses[k]);
    while (s->slot[h] && !cairn__resources_equal(&s->reqs[s->slot[h] - 1].r, &j->rclasses[k]))
      h = (h + 1) % DEMAND_SLOTS;
    if (!s->slot[h]) {
      if (s->n == CAIRN__DEMAND_MAX_REQUESTS) {
        s->truncated = 1;
        continue;
      }
      s->reqs[s->n] = (demand_req){j->rclasses[k], 0};
      s->slot[h] = (int16_t)++s->n;
    }
    s->reqs[s->slot[h] - 1].tasks += j->rclass_eligible[k];
  }
}

json_t *cairn__core_demand_json(cairn__core *c) {
  demand_set *set = calloc(1, sizeof *set);
  if (!set)
    return NULL;
  int64_t eligible = 0, present = 0, idle = 0;
  pthread_mutex_lock(&c->lock);
  int64_t now = cairn__now();
  size_t jobs = c->nrunq;
  for (size_t q = 0; q < c->nrunq; q++) {
    eligible += c->runq[q]->counts[TS_ELIGIBLE];
    add_requests(c->runq[q], set);
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
  for (size_t i = 0; list && i < set->n; i++) {
    json_t *r = cairn__resources_json(&set->reqs[i].r);
    if (!r || json_object_set_new(r, "tasks", json_integer(set->reqs[i].tasks)) ||
        json_array_append_new(list, r)) {
      json_decref(r);
      json_decref(list);
      list = NULL;
    }
  }
  int truncated = set->truncated;
  free(set);
  if (!list)
    return NULL;
  return json_pack("{s:I, s:I, s:I, s:o, s:b, s:{s:I, s:I, s:i}}", "eligible",
                   (json_int_t)eligible, "leased", (json_int_t)leased, "jobs", (json_int_t)jobs,
                   "requests", list, "requests_truncated", truncated, "volunteers", "present",
                   (json_int_t)present, "idle", (json_int_t)idle, "window_seconds",
                   CAIRN__DEMAND_WINDOW);
}
