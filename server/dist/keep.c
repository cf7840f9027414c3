/* keep.c — outputs that stay where they were made (docs/jobs.md, "Where
 * outputs stay"; docs/protocol.md, "Outputs kept on workers").
 *
 * A task of a job with "keep": "workers" that has children and runs on a
 * worker serving peers is offered with "keep": "workers": the worker keeps
 * its output files in its verified cache and names them in its result
 * without uploading them. The master records each such file as remote
 * (J_FILE and J_KEPT: it has no bytes of it) and the worker as its holder
 * (J_HOLD), so holdings outlive a restart. A child's worker is sent to the
 * holders (its own cluster's first, each with a peer grant), and to the
 * master only when it has the bytes; when its cluster has no holder yet but
 * a worker of it is receiving the file and the master serves the file's
 * chunk digests (reported by its producer, chunks.h), to that worker first
 * (a cut-through relay: the file crosses into the cluster about once).
 * When none of a kept file's holders can be offered (silent for 30 s,
 * paused after a failed download, banned, or dropped after a bad copy)
 * the file is lost: its parent is recomputed in a
 * new round (cairn__core_recompute) when the lock is released, and the child
 * waits for it.
 *
 * Part of the distribution module (its file records and holders, under the
 * core's lock) and, for the list of lost parents, of the core. Every path
 * looks at CAIRN__KEEP_SCAN holders of a file at most.
 */
#include <stdio.h>
#include <string.h>

#include "common/grant.h"
#include "common/log.h"
#include "common/protocol.h"
#include "server/dist/dist_int.h"

/* A holder silent this long, or paused after a failed download, is lost;
 * one silent between 30 s (no longer offered) and this is waited for, and
 * so is every holder for this long after the master started (their
 * heartbeats, every 30 s at most, have not come yet). */
enum { LOST_SECONDS = 90, MAX_PEERS = 3 };

/* Copies of f that holder h sends now. O(1) (f->sends). */
static uint32_t sending(const mfilerec *f, int64_t h) { return cairn__dist_sending(f, h, 0); }

int cairn__dist_remote(cairn__dist *d, const char *sha256) {
  const mfilerec *f = cairn__dist_file_of(d, sha256);
  return f && f->remote;
}

void cairn__dist_set_remote(cairn__dist *d, const char *sha256, int on) {
  mfilerec *f = cairn__dist_file_of(d, sha256);
  if (f)
    f->remote = (uint8_t)(on != 0);
}

int cairn__keep_wanted(const mjob *j, uint32_t v, const mvol *vol) {
  const mtask *t = &j->tasks[v];
  return j->keep_workers && t->io && t->io->outputs.n && j->dag->ch_off[v] < j->dag->ch_off[v + 1] &&
         vol->peer_url && vol->peer_url[0];
}

int cairn__keep_may(const mlease *l) { return cairn__keep_wanted(l->job, l->task, l->vol); }

static mvol *vol_of(cairn__core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
}

/* Holders looked at for f. */
static uint32_t scanned(const mfilerec *f) {
  return f->nholders < CAIRN__KEEP_SCAN ? f->nholders : CAIRN__KEEP_SCAN;
}

/* A worker of vol's cluster still receiving kept file f that may relay it
 * to vol while it arrives (docs/protocol.md, "Cut-through relays"): when
 * the master serves f's chunk digests, relays are not switched off and
 * vol's cluster has no usable holder among the first CAIRN__KEEP_SCAN, the
 * receiver of a copy under way (among the first CAIRN__KEEP_SCAN) whose
 * reports say "chunks", usable, sending fewer than CAIRN__RELAY_FANOUT
 * copies and its --peer-max; a copy crossing from another cluster before
 * one relayed inside it, then the one that started first. NULL otherwise.
 * So each file crosses into a cluster about once. O(CAIRN__KEEP_SCAN). */
static const mvol *local_relay(cairn__core *c, const mfilerec *f, const mvol *vol, int64_t now) {
  if (!f->remote || !f->chunked || c->dist->store_and_forward)
    return NULL;
  for (uint32_t i = 0; i < scanned(f); i++) {
    const mvol *h = vol_of(c, f->holders[i].vol);
    if (h && strcmp(h->cluster, vol->cluster) == 0 && cairn__dist_usable(c->dist, h, vol, now))
      return NULL; /* a whole copy in the cluster: the holders serve it */
  }
  const mvol *best = NULL;
  const mxfer *bx = NULL;
  uint32_t nx = f->nxfers < CAIRN__KEEP_SCAN ? f->nxfers : CAIRN__KEEP_SCAN;
  for (uint32_t i = 0; i < nx; i++) {
    const mxfer *x = &f->xfers[i];
    const mvol *r = vol_of(c, x->to);
    uint32_t cap = cairn__dist_peer_cap(r ? r : vol);
    if (!r || r == vol || !r->relays || strcmp(r->cluster, vol->cluster) != 0 ||
        !cairn__dist_usable(c->dist, r, vol, now) ||
        sending(f, r->id) >= (cap < CAIRN__RELAY_FANOUT ? cap : CAIRN__RELAY_FANOUT))
      continue;
    if (!bx || (bx->local && !x->local) ||
        (bx->local == x->local && x->deadline < bx->deadline)) {
      best = r;
      bx = x;
    }
  }
  return best;
}

/* 1 when f can reach vol now: the master has it, vol holds it, or a holder
 * among the first CAIRN__KEEP_SCAN can be offered; 0 when one may be
 * again soon (silent less than LOST_SECONDS, not paused); -1 when lost. */
static int reachable(cairn__core *c, mfilerec *f, const mvol *vol, int64_t now) {
  int soon = 0;
  if (!f->remote)
    return 1;
  cairn__dist_prune(f, now);
  if (local_relay(c, f, vol, now))
    return 1;
  for (uint32_t i = 0; i < scanned(f); i++) {
    const mvol *h = vol_of(c, f->holders[i].vol);
    if (h == vol)
      return 1;
    if (cairn__dist_usable(c->dist, h, vol, now)) {
      if (sending(f, h->id) < cairn__dist_peer_cap(h)) /* its --peer-max */
        return 1;
      soon = 1; /* busy: one of its copies ends soon */
      continue;
    }
    soon |= h && !h->banned && h->peer_url &&
            (now - h->last_seen <= LOST_SECONDS || now - c->loaded_at <= LOST_SECONDS) &&
            now >= cairn__dist_paused_until(c->dist, h->id);
  }
  return soon ? 0 : -1;
}

int cairn__keep_ready(cairn__core *c, const mvol *vol, const mjob *j, uint32_t v) {
  const mtask *t = &j->tasks[v];
  int64_t now = cairn__now();
  int lost = 0;
  for (uint32_t k = 0; j->keep_workers && t->io && k < t->io->npins; k++) {
    uint32_t p = t->io->pins[k].parent;
    const cairn__output_file *of = cairn__outputs_file(&j->tasks[p], t->io->pins[k].file);
    mfilerec *f = of ? cairn__dist_file_of(c->dist, of->sha256) : NULL;
    int r = f ? reachable(c, f, vol, now) : 1;
    lost |= r <= 0; /* v waits */
    if (r >= 0)
      continue;
    CAIRN_WARN(&c->log, "job %lld: the output %s of task %s kept on workers has no holder "
               "left: recomputing %s", (long long)j->id, of->name, j->tasks[p].name,
               j->tasks[p].name);
    cairn__lost_note(c, j, p);
  }
  return lost || (j->keep_workers && cairn__mcast_child(c, vol, j, v, now));
}

void cairn__keep_sources(cairn__core *c, const mvol *vol, const char *sha256, json_t *in) {
  mfilerec *f = cairn__dist_file_of(c->dist, sha256);
  int64_t now = cairn__now();
  json_t *src = json_array();
  uint32_t n = f ? scanned(f) : 0, k = 0;
  int wait;
  int64_t planned = f && f->remote ? cairn__mcast_sender(c, f, vol, now, &wait) : 0;
  const mvol *relay = f && !planned ? local_relay(c, f, vol, now) : NULL;
  if (relay) { /* a copy already coming into vol's cluster: relayed while it arrives */
    char url[512];
    (void)cairn__dist_add_xfer(f, vol->id, relay->id, 1, now); /* OOM: not counted */
    cairn__mcast_note(c, vol, relay, f, 0);
    cairn__dist_peer_source(c, relay, vol, sha256, url);
    strncat(url, "&" CAIRN_RELAY_PARAM "=1", sizeof url - 1 - strlen(url));
    json_array_append_new(src, json_string(url));
    c->dist->n.relay_sources++;
    k = 1;
  }
  /* the planned sender (mcast.c), then its own cluster's holders, then the
   * others'; each pass starts at a place that depends on vol, so that
   * children spread over holders */
  for (int pass = planned ? -1 : 0; pass < 2 && n; pass++)
    for (uint32_t i = 0; i < n && k < MAX_PEERS; i++) {
      const mvol *h = vol_of(c, f->holders[(i + (uint32_t)vol->id) % n].vol);
      char url[512];
      if (!cairn__dist_usable(c->dist, h, vol, now) ||
          sending(f, h->id) >= cairn__dist_peer_cap(h) || /* its --peer-max */
          (pass < 0) != (h->id == planned) ||
          (pass >= 0 && (strcmp(h->cluster, vol->cluster) == 0) != (pass == 0)))
        continue;
      if (relay && h == relay)
        continue;
      if (k == 0 && f->remote) { /* the first source counts as busy until vol has it */
        (void)cairn__dist_add_xfer(f, vol->id, h->id, strcmp(h->cluster, vol->cluster) == 0,
                                   now); /* OOM: not counted */
        cairn__mcast_note(c, vol, h, f, pass < 0);
      }
      cairn__dist_peer_source(c, h, vol, sha256, url);
      json_array_append_new(src, json_string(url));
      k++;
    }
  if (!f || !f->remote) {
    char url[128];
    snprintf(url, sizeof url, "/v1/files/%s", sha256);
    json_array_append_new(src, json_string(url));
  }
  if (json_array_size(src)) {
    json_object_set(in, "url", json_array_get(src, 0));
    json_object_set_new(in, "sources", src);
  } else {
    json_decref(src); /* none: cairn__keep_ready found it lost first */
  }
}

int cairn__keep_hold(cairn__core *c, const mlease *l, const cairn__output_file *files, size_t n) {
  for (size_t i = 0; i < n; i++) {
    mfilerec *f = cairn__dist_file_of(c->dist, files[i].sha256);
    if (f && !f->remote)
      continue; /* uploaded: the master has its bytes */
    if (!f) {
      if (cairn__dist_restore_file(c->dist, files[i].sha256, files[i].size))
        return -1;
      f = cairn__dist_file_of(c->dist, files[i].sha256);
      f->remote = 1;
      cairn__journal_put(c->journal, cairn__jrec_file(f->sha256, f->size, cairn__now()));
      cairn__journal_put(c->journal, cairn__jrec_kept(f->sha256, 1));
    }
    cairn__dist_have(c, l->vol, f->sha256);
  }
  return 0;
}

/* ---- parents to recompute (c->dist->lost) ---- */

void cairn__lost_note(cairn__core *c, const mjob *j, uint32_t parent) {
  for (uint32_t i = 0; i < c->dist->nlost; i++)
    if (c->dist->lost[i].job == j->id && c->dist->lost[i].task == parent)
      return;
  if (c->dist->nlost < CAIRN__LOST_MAX) {
    c->dist->lost[c->dist->nlost].job = j->id;
    c->dist->lost[c->dist->nlost++].task = parent;
  }
}

void cairn__lost_flush(cairn__core *c) {
  uint32_t n = c->dist->nlost;
  c->dist->nlost = 0;
  for (uint32_t i = 0; i < n; i++) {
    mjob *j = c->dist->lost[i].job >= 1 && (size_t)c->dist->lost[i].job <= c->njobs
                ? c->jobs[c->dist->lost[i].job - 1]
                : NULL;
    if (!j || j->state != JS_RUNNING || c->dist->lost[i].task >= j->ntasks ||
        j->tasks[c->dist->lost[i].task].state != TS_DONE)
      continue; /* recomputed, cancelled or gone meanwhile */
    cairn_error err = {0};
    if (c->calls.recompute(c, j, c->dist->lost[i].task, &err) != CAIRN_OK)
      CAIRN_ERR(&c->log, "job %lld: recomputing task %s: %s", (long long)j->id,
                j->tasks[c->dist->lost[i].task].name, err.text);
    else
      c->dist->n.recomputed++;
  }
}

/* ---- a leaving holder's upload (PUT /v1/files/{sha256}) ---- */

cairn_status cairn__core_kept_upload(cairn__core *c, int64_t vol, const char *sha256,
                                     cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  const mfilerec *f = v ? cairn__dist_file_of(c->dist, sha256) : NULL;
  int64_t now = cairn__now();
  int holder = 0, other = 0;
  for (uint32_t i = 0; f && i < scanned(f); i++) {
    const mvol *h = vol_of(c, f->holders[i].vol);
    holder |= h == v;
    other |= cairn__dist_usable(c->dist, h, v, now);
  }
  if (!v)
    ;
  else if (!f || !f->remote)
    st = cairn__error_set(err, f ? CAIRN_ECONFLICT : CAIRN_EFORBIDDEN,
                         f ? "the master has file %s already" : "no output kept on workers is %s",
                         sha256);
  else if (!holder)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "volunteer %lld holds no copy of %s: only the "
                         "admin or a holder uploads it", (long long)vol, sha256);
  else if (other)
    st = cairn__error_set(err, CAIRN_ECONFLICT, "file %s is not needed: another holder serves it",
                         sha256);
  cairn__core_unlock(c);
  return st;
}

/* ---- chunk digests of kept files (feature "kept_chunks") ---- */

int cairn__core_kept_file(cairn__core *c, const char *sha256, int64_t *size) {
  pthread_mutex_lock(&c->lock);
  const mfilerec *f = cairn__dist_file_of(c->dist, sha256);
  int kept = f && f->remote;
  if (kept)
    *size = f->size;
  cairn__core_unlock(c);
  return kept;
}

void cairn__core_kept_chunked(cairn__core *c, const char *sha256) {
  pthread_mutex_lock(&c->lock);
  mfilerec *f = cairn__dist_file_of(c->dist, sha256);
  if (f && f->remote)
    f->chunked = 1;
  cairn__core_unlock(c);
}
