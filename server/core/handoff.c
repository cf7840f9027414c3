/* handoff.c — part of the core: a new job's tasks handed straight to the
 * work requests held for them (waiters.h), in the submission's own journal
 * group. Without it a submission is committed, then wakes a held request,
 * which allocates and is committed in turn: two commits one after the other
 * before a worker starts. With it the allocation is one more record of the
 * submission's group: one commit, after which both the submission's answer
 * and the offer go out. Durability is unchanged: the offer still leaves
 * only once its allocation is durable (cairn__core_durable), and a
 * submission is acknowledged only with its group.
 *
 * Bounds: per submission at most CAIRN__HANDOFF_MAX claims, each a trylock
 * and at most CAIRN__WAITERS_PASS held requests looked at, and as many
 * allocations (cairn__allocate_locked, bounded there), under c->lock. */
#include "server/core/core.h"

uint32_t cairn__handoff_locked(cairn__core *c, const mjob *j) {
  uint32_t given = 0;
  if (!c->claimer || !c->hander)
    return 0;
  uint64_t app = cairn__hash_app(j->app);
  while (c->nhanded < CAIRN__HANDOFF_MAX && j->counts[TS_ELIGIBLE] > 0) {
    int64_t vol = 0;
    int64_t claim = c->claimer(c->waker_ud, app, &vol);
    if (claim < 0)
      break; /* none held, or the table busy: the ordinary wake */
    cairn_status st = CAIRN_OK;
    cairn_error err = {0};
    int waiting = 0;
    json_t *offer = NULL;
    mvol *v = cairn__vol_locked(c, vol, &st, &err);
    if (v)
      offer = cairn__allocate_locked(c, v, NULL, 0, 0, &waiting, &st, &err);
    c->handed[c->nhanded++] = (cairn__handed){claim, offer};
    if (!offer)
      break; /* it asks the core itself, as a woken request does */
    given++;
    c->handoffs_total++;
  }
  return given;
}

void cairn__core_set_handoff(cairn__core *c, int64_t (*claimer)(void *ud, uint64_t app,
                                                                int64_t *vol),
                             void (*hander)(void *ud, int64_t claim, json_t *offer,
                                            uint64_t seq)) {
  pthread_mutex_lock(&c->lock);
  c->claimer = claimer;
  c->hander = hander;
  c->nhanded = 0;
  cairn__core_unlock(c);
}

cairn_status cairn__core_durable(cairn__core *c, uint64_t seq, cairn_error *err) {
  return cairn__journal_wait(c->journal, seq, err);
}
