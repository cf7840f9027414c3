/* peers.c — the workers' file servers as sources (part of the
 * distribution module, under the core's lock): which volunteer a reported
 * source URL names, the pause of a file server that failed a copy, and
 * what a worker's report of a failed peer source changes.
 *
 * A source is a peer URL followed by /v1/files/SHA256?…; the volunteer that
 * last said that URL (at registration, in a report, at start-up) is found
 * by a hash of it in O(1), with up to CAIRN__PEER_TWINS volunteers that
 * said the same URL before it (a worker registered anew) and still say it.
 */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "server/dist/dist_int.h"

int64_t cairn__dist_paused_until(const cairn__dist *d, int64_t id) {
  return id >= 1 && (size_t)id <= d->npaused ? d->paused_until[id - 1] : 0;
}

void cairn__dist_pause(cairn__dist *d, int64_t id, int64_t until) {
  if (id < 1)
    return;
  if ((size_t)id > d->npaused) {
    size_t n = (size_t)id > 2 * d->npaused ? (size_t)id : 2 * d->npaused;
    int64_t *p = realloc(d->paused_until, n * sizeof *p);
    if (!p)
      return;
    memset(p + d->npaused, 0, (n - d->npaused) * sizeof *p);
    d->paused_until = p;
    d->npaused = n;
  }
  d->paused_until[id - 1] = until;
}

/* FNV-1a of n bytes of s; never 0 (hmap keys). */
static uint64_t url_hash(const char *s, size_t n) {
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
  return h ? h : 1;
}

void cairn__dist_peer_url(cairn__dist *d, mvol *v) {
  if (!v->peer_url)
    return;
  uint64_t key = url_hash(v->peer_url, strlen(v->peer_url));
  mvol *before = cairn__hmap_get(&d->by_peer, key);
  if (before == v || cairn__hmap_put(&d->by_peer, key, v))
    return; /* out of memory: see dist.h */
  v->peer_twin = before;
}

/* 1 if a copy of f is on its way to vol. O(copies under way of f). */
static int receiving(const mfilerec *f, int64_t vol) {
  for (uint32_t i = 0; i < f->nxfers; i++)
    if (f->xfers[i].to == vol)
      return 1;
  return 0;
}

uint32_t cairn__dist_source_holders(cairn__dist *d, const mfilerec *f, const char *source,
                                    int relays, mvol *out[CAIRN__PEER_TWINS]) {
  const char *end = f ? strstr(source, "/v1/files/") : NULL;
  size_t len = end ? (size_t)(end - source) : 0;
  mvol *h = end ? cairn__hmap_get(&d->by_peer, url_hash(source, len)) : NULL;
  uint32_t n = 0;
  for (int k = 0; h && k < CAIRN__PEER_TWINS; k++, h = h->peer_twin)
    if (h->peer_url && strlen(h->peer_url) == len && strncmp(h->peer_url, source, len) == 0 &&
        (cairn__dist_holds(f, h->id) || (relays && receiving(f, h->id))))
      out[n++] = h;
  return n;
}

/* ---- peer sources that failed a worker (server/core/volunteers.c) ----
 *
 * A worker reports each peer source that failed it ("failed",
 * docs/protocol.md). Bytes of the wrong size or digest mean the holder's
 * copy is bad: it is no holder of that file any more (in memory and on
 * disk) until it reports the file again. A peer that could not be reached,
 * stalled or answered another status may be down or overloaded: its file
 * server is not offered, for any file, for PEER_FAILED_SECONDS (usable()).
 * Either way the reporter's cluster stops waiting for that copy. Every
 * holder whose peer URL the source names is concerned (one URL could have
 * been said by two volunteers: a worker registered anew;
 * cairn__dist_peer_url, at most CAIRN__PEER_TWINS). Under the lock: O(1)
 * to find them, O(copies under way of the file) each to end its copy, and
 * dropping a bad holder O(holders of the file) (rare: a bad copy).
 */

enum { PEER_FAILED_SECONDS = 30 };

/* reporter says holder h failed its copy of f for reason. */
static void failed_one(cairn__core *c, mfilerec *f, const mvol *reporter, mvol *h, int reason,
                       int64_t now) {
  static const char *const names[CAIRN_FAIL_REASONS] = CAIRN_FAIL_REASON_NAMES;
  /* the copy it was sending reporter will not land */
  int sent = cairn__dist_end_copy(f, reporter->id, h->id);
  /* a bad copy drops a holder only when the master sent reporter to it
   * (its planned source, or a holder of its own cluster, which it may list):
   * anyone else's word only pauses it, as an unreachable peer */
  int trusted = sent || strcmp(h->cluster, reporter->cluster) == 0;
  if ((reason != CAIRN_FAIL_SIZE && reason != CAIRN_FAIL_DIGEST) || !trusted) {
    cairn__dist_pause(c->dist, h->id, now + PEER_FAILED_SECONDS);
    CAIRN_INFO(&c->log, "file %.12s: %s (%s) reports that %s (%s) failed it (%s): not offered for "
               "%d s", f->sha256, reporter->name, reporter->cluster, h->name, h->cluster,
               names[reason], PEER_FAILED_SECONDS);
    return;
  }
  CAIRN_WARN(&c->log, "file %.12s: %s (%s) reports that %s (%s) served a bad copy (%s): no longer a "
             "holder", f->sha256, reporter->name, reporter->cluster, h->name, h->cluster,
             names[reason]);
  (void)cairn__dist_unhold(f, h->id);
  cairn__journal_put(c->journal, cairn__jrec_unhold(h->id, f->sha256));
}

void cairn__dist_failed(cairn__core *c, const mvol *reporter, const char *sha, const char *source,
                        int reason) {
  mfilerec *f = cairn__dist_file_of(c->dist, sha);
  int64_t now = cairn__now();
  if (reason < 0 || reason >= CAIRN_FAIL_REASONS)
    return; /* the caller checked it */
  c->dist->n.peer_failures[reason]++;
  mvol *h[CAIRN__PEER_TWINS];
  uint32_t n = f && !reporter->banned ? cairn__dist_source_holders(c->dist, f, source, 0, h) : 0;
  for (uint32_t i = 0; i < n; i++)
    if (h[i] != reporter)
      failed_one(c, f, reporter, h[i], reason, now);
}
