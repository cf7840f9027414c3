/* relay.c — cut-through relays on the master's side (docs/protocol.md,
 * "Cut-through relays"): which workers still receiving a broadcast file may
 * be named as its sources. A worker whose reports say "chunks": true serves
 * a file it is receiving to a granted peer as the chunks arrive, each chunk
 * checked against the master's digests (server/dist/chunks.h); so once a copy is
 * on its way to it, the master may treat it as a holder when it picks
 * sources, and the plan's later transfers start before the earlier ones
 * end. The plan's order and its limits on copies at once still hold: a
 * relay counts as a holder of its cluster, its copies as sends; a whole
 * copy is preferred to a relay, a relay nearer the source to one further,
 * and a relay sends up to CAIRN__RELAY_FANOUT local copies at once (with its
 * sends to other clusters, within the worker's --peer-max, as its reports
 * say it, cairn__dist_peer_cap; short
 * chains: each hop costs a chunk's delay and the relay's CPU). Its
 * receivers' download rates are no link samples (the relay's own copy
 * paces them): cairn__dist_fetched skips them. Workers
 * without the feature are never named before they hold the file. Under
 * c->lock, like the rest of dist. */
#include "server/dist/dist_int.h"

void cairn__core_set_cut_through(cairn__core *c, int on) {
  pthread_mutex_lock(&c->lock);
  c->dist->store_and_forward = !on;
  cairn__core_unlock(c);
}

mvol *cairn__dist_candidate(cairn__core *c, const mfilerec *f, uint32_t i, int *relay) {
  int64_t id;
  *relay = 0;
  if (i < f->nholders)
    id = f->holders[i].vol;
  else if (i < f->nholders + f->nxfers && !c->dist->store_and_forward)
    id = f->xfers[i - f->nholders].to;
  else
    return NULL;
  mvol *v = id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
  if (!v || i < f->nholders)
    return v;
  *relay = v->relays; /* (a worker with two copies under way is two candidates) */
  return v->relays ? v : NULL;
}

void cairn__dist_pick(cairn__pick *best, int64_t id, int relay, uint32_t load, int64_t start) {
  int better = !best->id || (best->relay && !relay) ||
               (best->relay == relay && (relay ? start < best->start : load < best->load));
  if (better)
    *best = (cairn__pick){id, relay, load, start};
}
