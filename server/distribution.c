/* distribution.c — where each worker fetches a job's inputs from.
 *
 * For a broadcast input the master prefers copies already in the worker's
 * cluster, relayed worker to worker, over sending one more copy itself: the
 * Largest-Cluster-First idea of seed 000 §3 (a cluster, once reached, feeds
 * itself with cheap local transfers, doubling its holders each round; an
 * expensive inter-cluster copy goes to a cluster only once). The rule,
 * applied online as workers ask for work (they join, leave and finish at
 * unpredictable times, so a schedule fixed in advance would be wrong within
 * seconds):
 *   1. a holder in the worker's cluster with a peer URL and fewer than
 *      PEER_FANOUT transfers under way: the one with fewest;
 *   2. else, if a copy is already on its way into that cluster, wait (the
 *      task is not handed out now; the next request will find a holder);
 *   3. else the master, when it sends fewer than MASTER_FANOUT copies now;
 *   4. else a free holder in another cluster (inter-cluster forwarding, as
 *      LCF's informed clusters do once the source is busy);
 *   5. else wait.
 * The master's own link is the scarcest: one copy at a time goes through it,
 * and every informed cluster forwards in parallel.
 * Sources are listed in that preference with the master last, so a worker
 * whose peer fails falls back. Transfers count as under way until the
 * receiver reports the file (or returns a result that used it) or
 * TRANSFER_SECONDS pass. Cost per decision: O(holders + transfers) of that
 * file. Holdings are journaled (J_HOLD, table file_holders) and restored
 * at start-up, so a restarted master still offers the holders it knew.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "server/core.h"

enum {
  PEER_FANOUT = 2,
  MASTER_FANOUT = 1,
  TRANSFER_SECONDS = 120,
  MAX_SOURCES = 4,
  QUIET_SECONDS = 30
};

/* 1 if h can serve vol's request from a peer now (not vol, reachable, heard from lately). */
static int usable(const mvol *h, const mvol *vol, int64_t now) {
  return h && h != vol && !h->banned && h->peer_url && now - h->last_seen <= QUIET_SECONDS;
}

void cairn__dist_free(mfilerec *f) {
  if (!f)
    return;
  free(f->holders);
  free(f->xfers);
  free(f);
}

static mfilerec *file_of(cairn_core *c, const char *sha) {
  mfilerec *f = cairn_hmap_get(&c->files, cairn__hash_key(sha));
  return f && strcmp(f->sha256, sha) == 0 ? f : NULL;
}

static int holds(const mfilerec *f, int64_t vol) {
  for (uint32_t i = 0; i < f->nholders; i++)
    if (f->holders[i].vol == vol)
      return 1;
  return 0;
}

static mvol *vol_of(cairn_core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
}

/* Drops transfers past their deadline. */
static void prune(mfilerec *f, int64_t now) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < f->nxfers; i++)
    if (f->xfers[i].deadline > now)
      f->xfers[k++] = f->xfers[i];
  f->nxfers = k;
}

static uint32_t serving(const mfilerec *f, int64_t from) {
  uint32_t n = 0;
  for (uint32_t i = 0; i < f->nxfers; i++)
    n += f->xfers[i].from == from;
  return n;
}

static int add_xfer(mfilerec *f, int64_t to, int64_t from, int64_t now) {
  if (f->nxfers == f->capxfers) {
    uint32_t ncap = f->capxfers ? 2 * f->capxfers : 8;
    mxfer *nx = realloc(f->xfers, ncap * sizeof *nx);
    if (!nx)
      return -1;
    f->xfers = nx;
    f->capxfers = ncap;
  }
  f->xfers[f->nxfers++] = (mxfer){to, from, now + TRANSFER_SECONDS};
  return 0;
}

void cairn__dist_have(cairn_core *c, mvol *vol, const char *sha) {
  mfilerec *f = file_of(c, sha);
  if (!f || vol->banned)
    return;
  for (uint32_t i = 0; i < f->nxfers;)
    if (f->xfers[i].to == vol->id)
      f->xfers[i] = f->xfers[--f->nxfers];
    else
      i++;
  if (holds(f, vol->id))
    return;
  if (f->nholders == f->capholders) {
    uint32_t ncap = f->capholders ? 2 * f->capholders : 8;
    mholder *nh = realloc(f->holders, ncap * sizeof *nh);
    if (!nh)
      return;
    f->holders = nh;
    f->capholders = ncap;
  }
  f->holders[f->nholders++] = (mholder){vol->id, cairn__now()};
  cairn__journal_rec r = {.type = J_HOLD, .a = vol->id, .b = f->holders[f->nholders - 1].since,
                          .s1 = cairn__strdup(f->sha256)};
  if (!r.s1 || cairn__journal_add(c, &r)) {
    free(r.s1);
    CAIRN_ERR("out of memory journaling that volunteer %lld holds %s", (long long)vol->id, sha);
  }
}

static int note_assigned(mfile *jf, int64_t vol, int64_t now) {
  for (uint32_t i = 0; i < jf->nassigned; i++)
    if (jf->assigned[i] == vol)
      return 0;
  if (jf->nassigned == jf->capassigned) {
    uint32_t ncap = jf->capassigned ? 2 * jf->capassigned : 8;
    int64_t *na = realloc(jf->assigned, ncap * sizeof *na);
    if (!na)
      return -1;
    jf->assigned = na;
    jf->capassigned = ncap;
  }
  if (!jf->first_assign)
    jf->first_assign = now;
  jf->assigned[jf->nassigned++] = vol;
  return 0;
}

/* Sources of a broadcast file for vol, into urls (peer URLs, then the
 * master's path). Returns how many, 0 when it must wait, -1 on OOM. */
static int broadcast_sources(cairn_core *c, mvol *vol, mfilerec *f, const char *master,
                             char urls[][512]) {
  int64_t now = cairn__now();
  prune(f, now);
  int n = 0;
  if (holds(f, vol->id)) {
    snprintf(urls[n++], 512, "%s", master);
    return n;
  }
  /* holders in the same cluster, fewest transfers under way first */
  int64_t best = 0;
  uint32_t best_load = PEER_FANOUT;
  for (uint32_t i = 0; i < f->nholders; i++) {
    mvol *h = vol_of(c, f->holders[i].vol);
    if (!usable(h, vol, now) || strcmp(h->cluster, vol->cluster) != 0)
      continue; /* a holder the master has not heard from lately may be gone */
    uint32_t load = serving(f, h->id);
    if (load < best_load) {
      best_load = load;
      best = h->id;
    }
  }
  if (best) {
    if (add_xfer(f, vol->id, best, now))
      return -1;
    snprintf(urls[n++], 512, "%s/v1/files/%s", vol_of(c, best)->peer_url, f->sha256);
    for (uint32_t i = 0; i < f->nholders && n < MAX_SOURCES - 1; i++) {
      mvol *h = vol_of(c, f->holders[i].vol);
      if (usable(h, vol, now) && h->id != best && strcmp(h->cluster, vol->cluster) == 0)
        snprintf(urls[n++], 512, "%s/v1/files/%s", h->peer_url, f->sha256);
    }
    snprintf(urls[n++], 512, "%s", master);
    return n;
  }
  /* a copy on its way into this cluster: let it land and spread from there */
  for (uint32_t i = 0; i < f->nxfers; i++) {
    mvol *to = vol_of(c, f->xfers[i].to);
    if (to && to != vol && strcmp(to->cluster, vol->cluster) == 0)
      return 0;
  }
  if (serving(f, 0) < MASTER_FANOUT) {
    if (add_xfer(f, vol->id, 0, now))
      return -1;
    snprintf(urls[n++], 512, "%s", master);
    return n;
  }
  /* the master is busy: a free holder of another cluster forwards a copy */
  best = 0;
  best_load = PEER_FANOUT;
  for (uint32_t i = 0; i < f->nholders; i++) {
    mvol *h = vol_of(c, f->holders[i].vol);
    if (!usable(h, vol, now))
      continue;
    uint32_t load = serving(f, h->id);
    if (load < best_load) {
      best_load = load;
      best = h->id;
    }
  }
  if (!best)
    return 0;
  if (add_xfer(f, vol->id, best, now))
    return -1;
  snprintf(urls[n++], 512, "%s/v1/files/%s", vol_of(c, best)->peer_url, f->sha256);
  snprintf(urls[n++], 512, "%s", master);
  return n;
}

int cairn__dist_inputs(cairn_core *c, mvol *vol, mjob *j, uint32_t v, json_t **inputs) {
  const mtask *t = &j->tasks[v];
  char urls[MAX_SOURCES][512], master[128];
  json_t *a = json_array();
  for (uint32_t k = 0; k < t->ninputs; k++) {
    mfile *jf = &j->files[t->inputs[k]];
    mfilerec *f = jf->broadcast ? file_of(c, jf->sha256) : NULL;
    snprintf(master, sizeof master, "/v1/files/%s", jf->sha256);
    int n = 1;
    snprintf(urls[0], sizeof urls[0], "%s", master);
    if (f) {
      n = broadcast_sources(c, vol, f, master, urls);
      if (n <= 0) {
        json_decref(a);
        return n == 0 ? 1 : -1;
      }
      if (note_assigned(jf, vol->id, cairn__now())) {
        json_decref(a);
        return -1;
      }
    }
    json_t *src = json_array();
    for (int i = 0; i < n; i++)
      json_array_append_new(src, json_string(urls[i]));
    json_array_append_new(a, json_pack("{s:s, s:s, s:I, s:s, s:o}", "name", jf->name, "sha256",
                                       jf->sha256, "size", (json_int_t)jf->size, "url", urls[0],
                                       "sources", src));
  }
  *inputs = a;
  return 0;
}

json_t *cairn__dist_job_json(cairn_core *c, const mjob *j) {
  uint64_t bm = 0, bp = 0;
  json_t *files = json_array();
  for (uint32_t i = 0; i < j->nfiles; i++) {
    const mfile *jf = &j->files[i];
    mfilerec *f = file_of(c, jf->sha256);
    if (!f)
      continue;
    bm += f->bytes_master;
    bp += f->bytes_peer;
    if (!jf->broadcast)
      continue;
    uint32_t have = 0;
    int64_t last = 0;
    for (uint32_t k = 0; k < jf->nassigned; k++)
      for (uint32_t h = 0; h < f->nholders; h++)
        if (f->holders[h].vol == jf->assigned[k]) {
          have++;
          if (f->holders[h].since > last)
            last = f->holders[h].since;
        }
    json_t *secs = jf->nassigned && have == jf->nassigned ? json_integer(last - jf->first_assign)
                                                          : json_null();
    json_array_append_new(files, json_pack("{s:s, s:s, s:i, s:i, s:i, s:o}", "name", jf->name,
                                           "sha256", jf->sha256, "workers", (int)jf->nassigned,
                                           "holding", (int)have, "holders", (int)f->nholders,
                                           "seconds_to_all", secs));
  }
  return json_pack("{s:{s:I, s:I}, s:o}", "bytes_served", "master", (json_int_t)bm, "peer",
                   (json_int_t)bp, "broadcast_files", files);
}

/* ---- holdings from the store (server/load.c), and a ban's (server/core.c) ---- */

int cairn__dist_restore_holder(cairn_core *c, mvol *vol, const char *sha, int64_t since) {
  mfilerec *f = file_of(c, sha);
  if (!f || vol->banned)
    return 0;
  if (f->nholders == f->capholders) {
    uint32_t ncap = f->capholders ? 2 * f->capholders : 8;
    mholder *nh = realloc(f->holders, ncap * sizeof *nh);
    if (!nh)
      return -1;
    f->holders = nh;
    f->capholders = ncap;
  }
  f->holders[f->nholders++] = (mholder){vol->id, since};
  return 0;
}

void cairn__dist_forget(cairn_core *c, const mvol *vol) {
  for (size_t i = 0; i < c->files.cap; i++) {
    mfilerec *f = c->files.keys[i] ? c->files.vals[i] : NULL;
    if (!f)
      continue;
    uint32_t k = 0;
    for (uint32_t h = 0; h < f->nholders; h++)
      if (f->holders[h].vol != vol->id)
        f->holders[k++] = f->holders[h];
    f->nholders = k;
    k = 0;
    for (uint32_t x = 0; x < f->nxfers; x++)
      if (f->xfers[x].to != vol->id)
        f->xfers[k++] = f->xfers[x];
    f->nxfers = k;
  }
}
