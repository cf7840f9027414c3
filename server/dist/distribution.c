/* distribution.c — where each worker fetches a job's inputs from.
 *
 * A broadcast input is distributed by plan (bplan.c): when it is first
 * handed out, and again whenever the clusters present or their sizes
 * change or a measured rate appears or moves by more than a quarter
 * (checked at most once a second, and at once when a worker of a cluster
 * the plan lacks asks), the master plans the broadcast
 * over the clusters of the workers that run the job's app with the
 * configured planner (LCF, bounded-degree LCF or a grid heuristic of the
 * ECEF family; [KKW] §3, §5.1 and [BSM] §4–5), costed with the measured transfer
 * rates. The plan says which cluster each cluster's first copy comes from
 * and in which order a sender serves its receivers. The master executes it
 * online, as workers ask for work, handing out a source only once it holds
 * the file:
 *   1. a holder in the worker's cluster (one local copy at a time each, the
 *      binomial doubling the models assume; the least busy); while all of
 *      them are busy, or a copy is landing in the cluster, the worker waits;
 *   2. else the cluster's planned sender: the master, or a holder of the
 *      parent cluster, once no receiver ranked before it in that sender's
 *      order is still waiting and the sender has fewer copies to other
 *      clusters under way than the plan has it send at once; otherwise wait;
 *   3. when the plan cannot be followed (the parent cluster holds the file
 *      but none of its holders serves peers; the parent has nobody asking
 *      for it well past its planned start; the broadcast is far behind the
 *      plan; the cluster is not in the plan, when none could be built) the
 *      online rule decides: the master when it sends no other copy, else a
 *      free holder of any cluster, else wait. The planner "online" uses
 *      only this rule.
 * A waiting worker gets other work or 204 with Retry-After: 1.
 * A worker still receiving the file counts as a holder here when it relays
 * while receiving (relay.c, cut-through), unless the master was started
 * with store-and-forward. Sources are listed with the planned one first and
 * the master last, so a worker whose peer fails falls back. Transfers count as under way until
 * the receiver reports the file (or returns a result that used it) or
 * TRANSFER_SECONDS pass. Cost per decision, whatever the number of holders
 * and copies: each rule looks at a window of CAIRN__DIST_SCAN of them at
 * most (cairn__dist_window: the next window starts where the last ended, so
 * every holder is looked at in turn; with more, a holder of the worker's
 * cluster outside the window is not seen by that decision), O(SCAN log k)
 * for k clusters; "holds it" is O(1) (f->held); copies past their deadline
 * are dropped at most once a second per file (O(copies of the last
 * TRANSFER_SECONDS)); plus, at most once a second per file, a plan check
 * (ensure_plan: the census of the clusters present is kept by census.c as
 * requests arrive, never counted here; a plan covers at most
 * CAIRN__PLAN_MAX_CLUSTERS clusters). Holdings are journaled (J_HOLD, table file_holders) and
 * restored at start-up, so a restarted master still offers the holders it
 * knew. For the dashboard's distribution view (server/api/distview.c) each plan
 * built is journaled (J_PLAN, table broadcast_plans: its clusters' senders,
 * planned starts, ends and completions) and so is each copy a worker
 * reports ("fetched") against its first hand-out to that worker (J_XFER, table
 * file_transfers: job, sender, receiver, times, bytes; at most
 * CAIRN__XFER_LOG_MAX per job file a run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/grant.h"
#include "common/log.h"
#include "server/dist/dist_int.h"

enum {
  LOCAL_FANOUT = 1,    /* local copies a holder sends at once */
  TRANSFER_SECONDS = 120,
  MAX_SOURCES = 4,
  QUIET_SECONDS = 30,
  WANT_SECONDS = 3,    /* a cluster whose worker waited this recently is waiting */
  GRACE_SECONDS = 5,   /* a parent silent this long past its planned start is skipped */
  BEHIND_SECONDS = 60, /* a plan this far past twice its prediction is abandoned */
  PLAN_LOG_CLUSTERS = 16, /* clusters of a new plan logged one a line */
  HANDED_SECONDS = 3600, /* a hand-out's copy reported later is not recorded */
  PLAN_RECORD_MAX = 512 /* clusters of a plan the store keeps (the dashboard's view) */
};

/* Copies of a job's broadcast file recorded per master run (file_transfers). */
#define CAIRN__XFER_LOG_MAX 10000

/* The wall clock in Unix milliseconds (the transfers' and plans' record). */
static int64_t now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* 1 if h can serve vol's request from a peer now (not vol, reachable, heard
 * from lately, not paused). */
static int usable(const cairn__dist *d, const mvol *h, const mvol *vol, int64_t now) {
  return h && h != vol && !h->banned && h->peer_url && now - h->last_seen <= QUIET_SECONDS &&
         now >= cairn__dist_paused_until(d, h->id);
}

void cairn__dist_file_free(mfilerec *f) {
  if (!f)
    return;
  free(f->holders);
  cairn__hmap_free(&f->held);
  free(f->xfers);
  for (size_t i = 0; i < f->sends.cap; i++)
    if (f->sends.keys[i])
      free(f->sends.vals[i]);
  cairn__hmap_free(&f->sends);
  free(f->handed);
  cairn__bplan_free(f->plan);
  free(f);
}

mfilerec *cairn__dist_file_of(cairn__dist *d, const char *sha) {
  mfilerec *f = cairn__hmap_get(&d->files, cairn__hash_key(sha));
  return f && strcmp(f->sha256, sha) == 0 ? f : NULL;
}

/* 1 when vol holds a whole copy of f. O(1) (f->held). */
static int holds(const mfilerec *f, int64_t vol) {
  return vol >= 1 && cairn__hmap_get(&f->held, (uint64_t)vol) != NULL;
}

/* Removes holder i of f (its order kept). O(holders after i). */
static void drop_holder(mfilerec *f, uint32_t i) {
  (void)cairn__hmap_del(&f->held, (uint64_t)f->holders[i].vol);
  memmove(&f->holders[i], &f->holders[i + 1], (f->nholders - i - 1) * sizeof *f->holders);
  f->nholders--;
}

uint32_t cairn__dist_window(cairn__dist *d, mfilerec *f, uint32_t total, uint32_t *first) {
  d->scan_work += total < CAIRN__DIST_SCAN ? total : CAIRN__DIST_SCAN;
  if (total <= CAIRN__DIST_SCAN) {
    *first = 0;
    return total;
  }
  *first = f->cursor % total;
  f->cursor = *first + CAIRN__DIST_SCAN;
  return CAIRN__DIST_SCAN;
}

/* ---- the module's state ---- */

cairn__dist *cairn__dist_create(void) {
  cairn__dist *d = calloc(1, sizeof *d);
  if (!d)
    return NULL;
  cairn__hmap_init(&d->files);
  cairn__hmap_init(&d->rates);
  cairn__hmap_init(&d->census);
  cairn__hmap_init(&d->census_apps);
  snprintf(d->bplan_algo, sizeof d->bplan_algo, "%s", CAIRN__BPLAN_DEFAULT);
  return d;
}

void cairn__dist_destroy(cairn__dist *d) {
  if (!d)
    return;
  for (size_t i = 0; i < d->files.cap; i++)
    if (d->files.keys[i])
      cairn__dist_file_free(d->files.vals[i]);
  cairn__hmap_free(&d->files);
  cairn__census_free(d);
  cairn__rates_free(d);
  cairn__mcast_free(d->mcast);
  cairn__hmap_free(&d->by_peer);
  free(d->paused_until);
  free(d);
}

cairn_status cairn__dist_set_planner(cairn__dist *d, const char *algo, cairn_error *err) {
  const char *name = cairn__bplan_algorithm(algo);
  if (!name)
    return cairn__error_set(err, CAIRN_EINVAL, "unknown broadcast planner \"%s\" (one of: %s)",
                           algo, cairn__bplan_algorithms());
  snprintf(d->bplan_algo, sizeof d->bplan_algo, "%s", name);
  return CAIRN_OK;
}

int cairn__dist_has_file(cairn__dist *d, const char *sha256, int64_t *size) {
  const mfilerec *f = cairn__dist_file_of(d, sha256);
  if (f && size)
    *size = f->size;
  return f != NULL;
}

int cairn__dist_restore_file(cairn__dist *d, const char *sha256, int64_t size) {
  mfilerec *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  snprintf(f->sha256, sizeof f->sha256, "%s", sha256);
  f->size = size;
  if (cairn__hmap_put(&d->files, cairn__hash_key(f->sha256), f)) {
    free(f);
    return -1;
  }
  return 0;
}

cairn_status cairn__dist_add_file(cairn__core *c, const char *sha256, int64_t size, int *existed,
                                  cairn_error *err) {
  mfilerec *f = cairn__hmap_get(&c->dist->files, cairn__hash_key(sha256));
  *existed = f != NULL;
  c->dist->n.bytes_received += (uint64_t)size;
  if (f && strcmp(f->sha256, sha256) == 0 && f->remote) { /* a kept output reached the master */
    f->remote = 0;
    cairn__journal_put(c->journal, cairn__jrec_kept(sha256, 0));
  }
  if (f && strcmp(f->sha256, sha256) == 0 && f->dying) { /* uploaded again: it stays */
    f->dying = 0;
    *existed = 0;
    cairn__journal_put(c->journal, cairn__jrec_file(sha256, size, cairn__now()));
    return CAIRN_OK;
  }
  if (f)
    return strcmp(f->sha256, sha256) == 0
             ? CAIRN_OK
             : cairn__error_set(err, CAIRN_ECONFLICT, "file key collision for %s", sha256);
  if (cairn__dist_restore_file(c->dist, sha256, size))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn__journal_put(c->journal, cairn__jrec_file(sha256, size, cairn__now()));
  return CAIRN_OK;
}

int cairn__dist_file_dying(cairn__dist *d, const char *sha256) {
  const mfilerec *f = cairn__dist_file_of(d, sha256);
  return f && f->dying;
}

void cairn__dist_set_dying(cairn__dist *d, const char *sha256, int dying) {
  mfilerec *f = cairn__dist_file_of(d, sha256);
  if (f && dying)
    f->dying++;
  else if (f && f->dying)
    f->dying--;
}

int cairn__dist_remove_file(cairn__dist *d, const char *sha256) {
  mfilerec *f = cairn__dist_file_of(d, sha256);
  if (!f || !f->dying)
    return 0;
  cairn__hmap_del(&d->files, cairn__hash_key(sha256));
  cairn__dist_file_free(f);
  return 1;
}

void cairn__dist_served(cairn__dist *d, const char *sha256, uint64_t bytes, int64_t by) {
  mfilerec *f = cairn__dist_file_of(d, sha256);
  if (by == 0) {
    d->n.bytes_master = cairn__bytes_add(d->n.bytes_master, bytes);
    if (f)
      f->bytes_master = cairn__bytes_add(f->bytes_master, bytes);
  } else if (f && holds(f, by)) { /* a peer's word counts only for a copy it holds */
    d->n.bytes_peer = cairn__bytes_add(d->n.bytes_peer, bytes);
    f->bytes_peer = cairn__bytes_add(f->bytes_peer, bytes);
  }
}

void cairn__dist_get_counters(const cairn__dist *d, cairn__dist_counters *out) { *out = d->n; }

/* ---- decisions ---- */

static mvol *vol_of(cairn__core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
}

/* Keeps the entries of v[0..*n) for which keep(entry, arg) holds. */
static void filter(mxfer *v, uint32_t *n, int (*keep)(const mxfer *, int64_t), int64_t arg) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < *n; i++)
    if (keep(&v[i], arg))
      v[k++] = v[i];
  *n = k;
}
static int alive(const mxfer *x, int64_t now) { return x->deadline > now; }
static int not_to(const mxfer *x, int64_t vol) { return x->to != vol; }

/* Counts x in (d = +1) or out of (d = -1) its source's sends. 0, or -1
 * out of memory (counting in only). O(1). */
static int count_send(mfilerec *f, const mxfer *x, int d) {
  msend *s = cairn__hmap_get(&f->sends, (uint64_t)x->from + 1);
  if (!s) {
    if (d < 0 || !(s = calloc(1, sizeof *s)))
      return d < 0 ? 0 : -1;
    if (cairn__hmap_put(&f->sends, (uint64_t)x->from + 1, s)) {
      free(s);
      return -1;
    }
  }
  s->all += (uint32_t)d;
  s->local += x->local ? (uint32_t)d : 0;
  if (!s->all)
    free(cairn__hmap_del(&f->sends, (uint64_t)x->from + 1));
  return 0;
}

/* Drops f's transfers that keep rejects, counting them out. O(transfers). */
static void drop_xfers(mfilerec *f, int (*keep)(const mxfer *, int64_t), int64_t arg) {
  uint32_t k = 0;
  for (uint32_t i = 0; i < f->nxfers; i++)
    if (keep(&f->xfers[i], arg))
      f->xfers[k++] = f->xfers[i];
    else
      (void)count_send(f, &f->xfers[i], -1);
  f->nxfers = k;
}

/* Drops transfers and hand-outs past their deadline. */
static void prune(mfilerec *f, int64_t now) {
  if (f->pruned == now)
    return; /* deadlines are whole seconds: nothing more has passed */
  f->pruned = now;
  drop_xfers(f, alive, now);
  filter(f->handed, &f->nhanded, alive, now);
}

uint32_t cairn__dist_sending(const mfilerec *f, int64_t from, int local) {
  const msend *s = cairn__hmap_get(&f->sends, (uint64_t)from + 1);
  return !s ? 0 : local ? s->local : s->all;
}

static uint32_t serving(const mfilerec *f, int64_t from) { return cairn__dist_sending(f, from, 0); }

int cairn__dist_sends_ok(const mfilerec *f) {
  size_t sources = 0;
  for (uint32_t i = 0; i < f->nxfers; i++) {
    uint32_t all = 0, local = 0, first = 1;
    for (uint32_t k = 0; k < f->nxfers; k++)
      if (f->xfers[k].from == f->xfers[i].from) {
        first &= k >= i;
        all++;
        local += f->xfers[k].local;
      }
    sources += first;
    if (all != cairn__dist_sending(f, f->xfers[i].from, 0) ||
        local != cairn__dist_sending(f, f->xfers[i].from, 1))
      return 0;
  }
  return sources == f->sends.count;
}

/* Appends x to v (n entries, capacity cap). 0, or -1 out of memory. */
static int push_xfer(mxfer **v, uint32_t *n, uint32_t *cap, mxfer x) {
  if (*n == *cap) {
    uint32_t ncap = *cap ? 2 * *cap : 8;
    mxfer *nv = realloc(*v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    *v = nv;
    *cap = ncap;
  }
  (*v)[(*n)++] = x;
  return 0;
}

/* A copy of f from from (0: the master) to to starts, for the job's file
 * (local: to is in from's cluster), counted in from's sends. It is a
 * hand-out too (for the distribution view) unless to has one already or
 * job is 0 (an output kept on workers, keep.c). O(hand-outs of f). */
static int add_xfer(mfilerec *f, int64_t to, int64_t from, int local, int64_t now, int64_t job,
                    uint32_t file) {
  mxfer x = {to, from, now + TRANSFER_SECONDS, job, now_ms(), file, (uint8_t)(local != 0)};
  if (count_send(f, &x, +1))
    return -1;
  if (push_xfer(&f->xfers, &f->nxfers, &f->capxfers, x)) {
    (void)count_send(f, &x, -1);
    return -1;
  }
  if (job == 0)
    return 0;
  for (uint32_t i = 0; i < f->nhanded; i++)
    if (f->handed[i].to == to)
      return 0;
  x.deadline = now + HANDED_SECONDS;
  return push_xfer(&f->handed, &f->nhanded, &f->caphanded, x);
}

/* Appends holder vol (since) to f. 0, or -1 out of memory. */
static int add_holder(mfilerec *f, int64_t vol, int64_t since) {
  if (holds(f, vol))
    return 0;
  if (cairn__hmap_put(&f->held, (uint64_t)vol, f)) /* any non-NULL value */
    return -1;
  if (f->nholders == f->capholders) {
    uint32_t ncap = f->capholders ? 2 * f->capholders : 8;
    mholder *nh = realloc(f->holders, ncap * sizeof *nh);
    if (!nh) {
      (void)cairn__hmap_del(&f->held, (uint64_t)vol);
      return -1;
    }
    f->holders = nh;
    f->capholders = ncap;
  }
  f->holders[f->nholders++] = (mholder){vol, since};
  return 0;
}

void cairn__dist_have(cairn__core *c, mvol *vol, const char *sha) {
  mfilerec *f = cairn__dist_file_of(c->dist, sha);
  if (!f || vol->banned)
    return;
  drop_xfers(f, not_to, vol->id); /* its hand-out stays for the copy's report (log_copy) */
  cairn__mcast_have(c->dist, vol->id, sha);
  if (holds(f, vol->id) || add_holder(f, vol->id, cairn__now()))
    return;
  CAIRN_INFO(&c->log, "file %.12s: %s (%s) holds it", f->sha256, vol->name, vol->cluster);
  cairn__journal_put(c->journal,
                    cairn__jrec_hold(vol->id, f->sha256, f->holders[f->nholders - 1].since));
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

typedef struct census_row {
  char *label;
  int64_t count;
} census_row;

static int cmp_row(const void *a, const void *b) {
  return strcmp(((const census_row *)a)->label, ((const census_row *)b)->label);
}

static int cmp_label(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Rebuilds f's plan when the census of app's workers present (census.c) or
 * the rates (c->dist->rates_epoch) changed since it was built; checked at
 * most once a second, and at once when cluster (the asking worker's) is not
 * in a plan that has room for it. A plan covers at most
 * CAIRN__PLAN_MAX_CLUSTERS clusters, the first present (the census keeps them
 * in order of arrival); workers of the others follow the online rule.
 * Bound under c->lock, never O(volunteers): the expiry of
 * CAIRN__CENSUS_PLAN_EXPIRE volunteers, then, when the census moved,
 * O(k log k) to read and sort k <= CAIRN__PLAN_MAX_CLUSTERS clusters,
 * O(CAIRN__DIST_SCAN log k) for the clusters informed (a window), and the
 * planner's cost over k clusters (bplan.c: the grid heuristics up to
 * CAIRN__BPLAN_GRID_MAX clusters, lcf's O(k log k) beyond). */
static void ensure_plan(cairn__core *c, mfilerec *f, const char *app, const char *cluster,
                        int64_t now) {
  if (strcmp(c->dist->bplan_algo, "online") == 0 ||
      (f->plan && f->checked == now &&
       (cairn__bplan_find(f->plan, cluster) > 0 || f->plan->k - 1 >= CAIRN__PLAN_MAX_CLUSTERS)))
    return;
  f->checked = now;
  cairn__census_expire(c->dist, now, CAIRN__CENSUS_PLAN_EXPIRE);
  if (f->plan && f->plan->sig == cairn__census_gen(c->dist, app) &&
      f->plan->epoch == c->dist->rates_epoch)
    return;
  census_row *rows = malloc(CAIRN__PLAN_MAX_CLUSTERS * sizeof *rows);
  char **labels = malloc(CAIRN__PLAN_MAX_CLUSTERS * sizeof *labels);
  int64_t *counts = malloc(CAIRN__PLAN_MAX_CLUSTERS * sizeof *counts);
  uint8_t *informed = NULL;
  uint64_t sig = 0;
  size_t m = 0;
  if (!rows || !labels || !counts)
    goto done;
  m = cairn__census_clusters(c->dist, app, labels, counts, CAIRN__PLAN_MAX_CLUSTERS, &sig);
  for (size_t i = 0; i < m; i++)
    rows[i] = (census_row){labels[i], counts[i]};
  qsort(rows, m, sizeof *rows, cmp_row);
  for (size_t i = 0; i < m; i++) {
    labels[i] = rows[i].label;
    counts[i] = rows[i].count;
  }
  if (!m)
    goto done;
  /* clusters that hold the file or have a copy landing */
  informed = calloc(m, 1);
  if (!informed)
    goto done;
  uint32_t first, total = f->nholders + f->nxfers;
  uint32_t n = cairn__dist_window(c->dist, f, total, &first);
  for (uint32_t k = 0, i = first; k < n; k++, i = (i + 1) % total) {
    mvol *v = vol_of(c, i < f->nholders ? f->holders[i].vol : f->xfers[i - f->nholders].to);
    if (!v)
      continue;
    const char *key = v->cluster;
    char **hit = bsearch(&key, labels, m, sizeof *labels, cmp_label);
    if (hit)
      informed[hit - labels] = 1;
  }
  cairn_error err = {0};
  mplan *p = cairn__bplan_build(c->dist, c->dist->bplan_algo, f->size, labels, counts, informed, m, &err);
  if (!p) {
    CAIRN_WARN(&c->log, "broadcast plan for %s: %s", f->sha256, err.text);
    goto done;
  }
  p->sig = sig;
  p->epoch = c->dist->rates_epoch;
  p->built = (double)(now - f->started);
  p->built_ms = now_ms();
  for (size_t i = 0; i < m; i++)
    p->informed += informed[i];
  if (f->plan)
    for (size_t i = 1; i < p->k; i++) {
      int o = cairn__bplan_find(f->plan, p->label[i]);
      if (o > 0)
        p->want[i] = f->plan->want[o];
    }
  cairn__bplan_free(f->plan);
  f->plan = p;
  f->plans++;
  json_t *rec = cairn__bplan_record(p, PLAN_RECORD_MAX);
  char *body = rec ? json_dumps(rec, JSON_COMPACT) : NULL;
  json_decref(rec);
  cairn__journal_put(c->journal, body ? cairn__jrec_plan(f->sha256, f->started_ms, f->plans, body)
                                      : NULL);
  free(body);
  CAIRN_INFO(&c->log, "broadcast %.12s: plan %u, %s over %zu clusters, predicted %.2f s", f->sha256,
             f->plans, p->algorithm, p->k - 1, p->predicted);
  for (size_t i = 1; i < p->k && i <= PLAN_LOG_CLUSTERS; i++)
    CAIRN_INFO(&c->log, "broadcast %.12s: plan %u: %s (%lld workers) from %s at %.2f s, rank %d",
               f->sha256, f->plans, p->label[i], (long long)counts[i - 1],
               p->parent[i] ? p->label[p->parent[i]] : "master", p->at[i], p->rank[i]);
  if (p->k - 1 > PLAN_LOG_CLUSTERS)
    CAIRN_INFO(&c->log, "broadcast %.12s: plan %u: %zu more clusters (GET /v1/jobs/{id})",
               f->sha256, f->plans, p->k - 1 - PLAN_LOG_CLUSTERS);
done:
  free(rows);
  free(labels);
  free(counts);
  free(informed);
}

/* Per plan cluster: holders that serve peers, holders, copies landing,
 * copies under way to other clusters (index 0: the master's). */
typedef struct cstate {
  uint32_t usable, held, landing, out;
} cstate;

static cstate *cluster_states(cairn__core *c, mfilerec *f, const mplan *p, const mvol *vol,
                              int64_t now) {
  cstate *st = calloc(p->k, sizeof *st);
  if (!st)
    return NULL;
  uint32_t first, total = f->nholders + f->nxfers;
  uint32_t n = cairn__dist_window(c->dist, f, total, &first);
  for (uint32_t k = 0, i = first; k < n; k++, i = (i + 1) % total) {
    int relay;
    mvol *h = cairn__dist_candidate(c, f, i, &relay);
    int x = h && !h->banned ? cairn__bplan_find(p, h->cluster) : -1;
    if (x > 0) {
      st[x].held++;
      st[x].usable += usable(c->dist, h, vol, now);
    }
  }
  n = cairn__dist_window(c->dist, f, f->nxfers, &first);
  for (uint32_t k = 0, i = first; k < n; k++, i = (i + 1) % f->nxfers) {
    mvol *to = vol_of(c, f->xfers[i].to), *from = vol_of(c, f->xfers[i].from);
    int x = to ? cairn__bplan_find(p, to->cluster) : -1;
    if (x > 0)
      st[x].landing++;
    if (!f->xfers[i].from)
      st[0].out++;
    else if (from && to && strcmp(from->cluster, to->cluster) != 0) {
      int y = cairn__bplan_find(p, from->cluster);
      if (y > 0)
        st[y].out++;
    }
  }
  return st;
}

/* Local copies h sends now. O(1). */
static uint32_t local_load(const mfilerec *f, const mvol *h) {
  return cairn__dist_sending(f, h->id, 1);
}

/* The usable holder of cluster label (NULL: any cluster but vol's) with the
 * fewest copies under way, below max; 0 when none. */
static int64_t pick_holder(cairn__core *c, mfilerec *f, const mvol *vol, const char *label,
                           uint32_t max, int64_t now) {
  cairn__pick best = {0};
  uint32_t first, total = f->nholders + f->nxfers;
  uint32_t n = cairn__dist_window(c->dist, f, total, &first);
  for (uint32_t k = 0, i = first; k < n; k++, i = (i + 1) % total) {
    int relay;
    mvol *h = cairn__dist_candidate(c, f, i, &relay);
    if (!usable(c->dist, h, vol, now) || (label && strcmp(h->cluster, label) != 0) ||
        (!label && strcmp(h->cluster, vol->cluster) == 0))
      continue;
    uint32_t load = serving(f, h->id);
    if (load < max && load < cairn__dist_peer_cap(h)) /* within its --peer-max */
      cairn__dist_pick(&best, h->id, relay, load, relay ? f->xfers[i - f->nholders].deadline : 0);
  }
  return best.id;
}

enum { SRC_WAIT = -1, SRC_ONLINE = -2, SRC_OOM = -3 };

/* The planned source of vol's first copy into its cluster: a holder's id,
 * 0 for the master, SRC_WAIT, or SRC_ONLINE when the plan cannot say. */
static int64_t planned_source(cairn__core *c, mfilerec *f, const mvol *vol, int64_t now) {
  mplan *p = f->plan;
  int x = p ? cairn__bplan_find(p, vol->cluster) : -1;
  if (x <= 0)
    return SRC_ONLINE;
  int64_t elapsed = now - f->started - (int64_t)p->built; /* the plan's own clock */
  if (elapsed > (int64_t)(2 * p->predicted) + BEHIND_SECONDS)
    return SRC_ONLINE;
  p->want[x] = now;
  cstate *st = cluster_states(c, f, p, vol, now);
  if (!st)
    return SRC_OOM;
  int64_t par = p->parent[x], src = SRC_WAIT;
  /* receivers of the same sender ranked before x and still waiting go first */
  for (size_t i = 1; i < p->k; i++)
    if (p->parent[i] == par && p->rank[i] < p->rank[x] && !st[i].held && !st[i].landing &&
        p->want[i] >= now - WANT_SECONDS)
      goto out;
  if (st[par].out >= (uint32_t)p->conc[par])
    goto out;
  if (par == 0) {
    src = 0;
    goto out;
  }
  if (!st[par].usable) {
    if (st[par].held ||
        (!st[par].landing && p->want[par] < now - WANT_SECONDS &&
         elapsed > (int64_t)p->at[par] + GRACE_SECONDS))
      src = SRC_ONLINE; /* its holders serve no peers, or it is not coming */
    goto out;
  }
  int64_t h = pick_holder(c, f, vol, p->label[par], UINT32_MAX, now);
  src = h ? h : SRC_WAIT;
out:
  free(st);
  return src;
}

/* Holder h's copy of file sha as a source for vol, into url: its peer URL
 * with the grant (common/grant.h) that lets vol, and only vol, download that
 * file from h for CAIRN_GRANT_SECONDS. Two HMACs; O(1). */
static void peer_source(cairn__core *c, const mvol *h, const mvol *vol, const char *sha,
                        char url[512]) {
  char key[65], grant[CAIRN_GRANT_MAX + 1];
  cairn__grant_key(c->peer_secret, h->id, h->key_gen, key);
  if (cairn__grant_make(key, sha, vol->id, cairn__now() + CAIRN_GRANT_SECONDS, grant))
    grant[0] = '\0'; /* not a digest: cannot happen for a stored file */
  snprintf(url, 512, "%s/v1/files/%s?" CAIRN_GRANT_PARAM "=%s", h->peer_url, sha, grant);
}

/* peer_source(), marked "&relay=1" when h is still receiving the file
 * (docs/protocol.md, "Cut-through relays"): its receiver bears longer
 * pauses while h's own download catches up. */
static void relay_source(cairn__core *c, const mfilerec *f, const mvol *h, const mvol *vol,
                         char url[512]) {
  peer_source(c, h, vol, f->sha256, url);
  if (!holds(f, h->id))
    strncat(url, "&" CAIRN_RELAY_PARAM "=1", 511 - strlen(url));
}

/* Sources of a broadcast file for vol, into urls (peer URLs, then the
 * master's path). Returns how many, 0 when it must wait, -1 on OOM. */
static int broadcast_sources(cairn__core *c, mvol *vol, mfilerec *f, const char *master,
                             const mjob *j, uint32_t file, char urls[][512]) {
  int64_t now = cairn__now();
  prune(f, now);
  int n = 0;
  if (holds(f, vol->id)) {
    snprintf(urls[n++], 512, "%s", master);
    return n;
  }
  if (!f->started) {
    f->started = now;
    f->started_ms = now_ms();
  }
  /* 1. a holder in the same cluster sending no other local copy */
  int64_t best = 0;
  uint32_t local = 0;
  cairn__pick pick = {0};
  uint32_t first, total = f->nholders + f->nxfers;
  uint32_t nw = cairn__dist_window(c->dist, f, total, &first);
  for (uint32_t k = 0, i = first; k < nw; k++, i = (i + 1) % total) {
    int relay;
    mvol *h = cairn__dist_candidate(c, f, i, &relay);
    if (!usable(c->dist, h, vol, now) || strcmp(h->cluster, vol->cluster) != 0)
      continue; /* a holder the master has not heard from lately may be gone */
    local++;
    uint32_t load = local_load(f, h);
    if (load < (relay ? CAIRN__RELAY_FANOUT : LOCAL_FANOUT) &&
        serving(f, h->id) < cairn__dist_peer_cap(h)) /* within its --peer-max */
      cairn__dist_pick(&pick, h->id, relay, load, relay ? f->xfers[i - f->nholders].deadline : 0);
  }
  best = pick.id;
  if (best) {
    if (add_xfer(f, vol->id, best, 1, now, j->id, file))
      return -1;
    int relay = !holds(f, best);
    c->dist->n.relay_sources += relay;
    CAIRN_INFO(&c->log, "broadcast %.12s: %s (%s) <- %s, local%s", f->sha256, vol->name,
               vol->cluster, vol_of(c, best)->name, relay ? ", relaying" : "");
    relay_source(c, f, vol_of(c, best), vol, urls[n++]);
    for (uint32_t k = 0, i = first; k < nw && n < MAX_SOURCES - 1; k++, i = (i + 1) % total) {
      mvol *h = i < f->nholders ? vol_of(c, f->holders[i].vol) : NULL;
      if (usable(c->dist, h, vol, now) && h->id != best && strcmp(h->cluster, vol->cluster) == 0)
        peer_source(c, h, vol, f->sha256, urls[n++]);
    }
    snprintf(urls[n++], 512, "%s", master);
    return n;
  }
  if (local)
    return 0; /* every holder in the cluster is busy: one will be free soon */
  /* a copy on its way into this cluster: let it land and spread from there */
  nw = cairn__dist_window(c->dist, f, f->nxfers, &first);
  for (uint32_t k = 0, i = first; k < nw; k++, i = (i + 1) % f->nxfers) {
    mvol *to = vol_of(c, f->xfers[i].to);
    if (to && to != vol && strcmp(to->cluster, vol->cluster) == 0)
      return 0;
  }
  /* 2. the plan's sender */
  ensure_plan(c, f, j->app, vol->cluster, now);
  int64_t src = planned_source(c, f, vol, now);
  if (src == SRC_OOM)
    return -1;
  if (src == SRC_WAIT)
    return 0;
  int planned = src != SRC_ONLINE;
  if (src == SRC_ONLINE) {
    /* 3. the online rule: the master when free, else a free holder anywhere */
    if (serving(f, 0) < 1)
      src = 0;
    else if (!(src = pick_holder(c, f, vol, NULL, 1, now)))
      return 0;
  }
  if (add_xfer(f, vol->id, src, src && strcmp(vol_of(c, src)->cluster, vol->cluster) == 0, now,
               j->id, file))
    return -1;
  int relay = src && !holds(f, src);
  c->dist->n.relay_sources += relay;
  CAIRN_INFO(&c->log, "broadcast %.12s: %s (%s) <- %s (%s), %s%s", f->sha256, vol->name,
             vol->cluster, src ? vol_of(c, src)->name : "master",
             src ? vol_of(c, src)->cluster : "", planned ? "planned" : "online",
             relay ? ", relaying" : "");
  if (src)
    relay_source(c, f, vol_of(c, src), vol, urls[n++]);
  snprintf(urls[n++], 512, "%s", master);
  return n;
}

int cairn__dist_inputs(cairn__core *c, mvol *vol, mjob *j, uint32_t v, json_t **inputs) {
  const mtask *t = &j->tasks[v];
  char urls[MAX_SOURCES][512], master[128];
  json_t *a = json_array();
  for (uint32_t k = 0; k < t->ninputs; k++) {
    mfile *jf = &j->files[t->inputs[k]];
    mfilerec *f = jf->broadcast ? cairn__dist_file_of(c->dist, jf->sha256) : NULL;
    snprintf(master, sizeof master, "/v1/files/%s", jf->sha256);
    int n = 1;
    snprintf(urls[0], sizeof urls[0], "%s", master);
    if (f) {
      n = broadcast_sources(c, vol, f, master, j, t->inputs[k], urls);
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

json_t *cairn__dist_job_json(cairn__core *c, const mjob *j) {
  uint64_t bm = 0, bp = 0;
  json_t *files = json_array();
  for (uint32_t i = 0; i < j->nfiles; i++) {
    const mfile *jf = &j->files[i];
    mfilerec *f = cairn__dist_file_of(c->dist, jf->sha256);
    if (!f)
      continue;
    bm = cairn__bytes_add(bm, f->bytes_master);
    bp = cairn__bytes_add(bp, f->bytes_peer);
    if (!jf->broadcast)
      continue;
    uint32_t have = 0;
    int64_t last = 0;
    /* the holders by volunteer, then each worker looked up: O(holders +
     * workers), not their product (out of memory: none counted) */
    cairn__hmap by_vol;
    cairn__hmap_init(&by_vol);
    int oom = 0;
    for (uint32_t h = 0; h < f->nholders && !oom; h++)
      oom = cairn__hmap_put(&by_vol, (uint64_t)f->holders[h].vol, &f->holders[h]);
    for (uint32_t k = 0; k < jf->nassigned && !oom; k++) {
      const mholder *h = cairn__hmap_get(&by_vol, (uint64_t)jf->assigned[k]);
      if (h) {
        have++;
        last = h->since > last ? h->since : last;
      }
    }
    cairn__hmap_free(&by_vol);
    json_t *secs = jf->nassigned && have == jf->nassigned ? json_integer(last - jf->first_assign)
                                                          : json_null();
    json_array_append_new(files, json_pack("{s:s, s:s, s:i, s:i, s:i, s:o, s:o}", "name",
                                           jf->name, "sha256", jf->sha256, "workers",
                                           (int)jf->nassigned, "holding", (int)have, "holders",
                                           (int)f->nholders, "seconds_to_all", secs, "plan",
                                           f->plan ? cairn__bplan_json(f->plan, 64)
                                                   : json_null()));
  }
  return json_pack("{s:{s:I, s:I}, s:o}", "bytes_served", "master", (json_int_t)bm, "peer",
                   (json_int_t)bp, "broadcast_files", files);
}

/* Records vol's copy of f from holder src (0: the master; cluster from)
 * that took ms, when the master handed out its sources (a hand-out, which
 * names the job, even when that source failed): journaled as J_XFER, at most
 * CAIRN__XFER_LOG_MAX per job file and run. It lasted ms; it began when
 * the sources were handed out when it came from the first one handed out,
 * else (a fall-back) ms before this report, but not before the hand-out.
 * The record ends the hand-out (a second report of the copy records
 * nothing); vol's holding does not, since a result that implies it may
 * reach the master before the report of the download. O(hand-outs of f). */
static void log_copy(cairn__core *c, const mvol *vol, mfilerec *f, int64_t src,
                     const char *from, int64_t bytes, int64_t ms) {
  mxfer x = {0};
  for (uint32_t i = 0; i < f->nhanded && !x.to; i++)
    if (f->handed[i].to == vol->id)
      x = f->handed[i];
  if (!x.to)
    return;
  filter(f->handed, &f->nhanded, not_to, vol->id); /* recorded once */
  mjob *j = x.job >= 1 && (size_t)x.job <= c->njobs ? c->jobs[x.job - 1] : NULL;
  mfile *jf = j && x.file < j->nfiles ? &j->files[x.file] : NULL;
  if (!jf || strcmp(jf->sha256, f->sha256) != 0 || jf->logged >= CAIRN__XFER_LOG_MAX)
    return;
  jf->logged++;
  int64_t reported = now_ms();
  cairn__store_xfer_row r = {.job = j->id, .dst = vol->id, .src = src, .assigned = x.from,
                            .bytes = bytes};
  r.start_ms = x.from == src || reported - ms < x.at_ms ? x.at_ms : reported - ms;
  r.end_ms = r.start_ms + ms;
  snprintf(r.sha256, sizeof r.sha256, "%s", f->sha256);
  snprintf(r.dst_cluster, sizeof r.dst_cluster, "%s", vol->cluster);
  snprintf(r.src_cluster, sizeof r.src_cluster, "%s", from);
  cairn__journal_put(c->journal, cairn__jrec_xfer(&r));
}

void cairn__dist_fetched(cairn__core *c, const mvol *vol, const char *sha, const char *source,
                         int64_t bytes, int64_t ms) {
  const char *from = NULL;
  int64_t src = 0;
  mfilerec *f = cairn__dist_file_of(c->dist, sha);
  mvol *h[CAIRN__PEER_TWINS];
  if (source[0] == '/') {
    from = ""; /* the master */
  } else if (cairn__dist_source_holders(c->dist, f, source, 1, h)) {
    from = h[0]->cluster;
    src = h[0]->id;
  }
  c->dist->n.fetch_reports++;
  if (from && !strstr(source, "&" CAIRN_RELAY_PARAM "=1")) /* a relay's pace is not a link's */
    cairn__rate_sample(c, from, vol->cluster, bytes, ms);
  if (from && f && !vol->banned)
    log_copy(c, vol, f, src, from, bytes, ms);
  if (from && f && !vol->banned)
    cairn__mcast_fetched(c, vol, f, src);
}

/* ---- holdings from the store (server/core/load.c), and a ban's (server/core/core.c) ---- */

int cairn__dist_restore_holder(cairn__core *c, mvol *vol, const char *sha, int64_t since) {
  mfilerec *f = cairn__dist_file_of(c->dist, sha);
  return !f || vol->banned ? 0 : add_holder(f, vol->id, since);
}

void cairn__dist_forget(cairn__core *c, mvol *vol) {
  cairn__census_leave(c->dist, vol);
  vol->forget_at = 0;
  vol->forget_cap = c->dist->files.cap;
}

int cairn__dist_forget_step(cairn__core *c, mvol *vol, size_t n) {
  size_t cap = c->dist->files.cap;
  if (!vol->forget_cap)
    return 1;
  if (vol->forget_cap != cap) { /* grown: its buckets moved, so all again */
    vol->forget_at = 0;
    vol->forget_cap = cap;
  }
  size_t end = n < cap - vol->forget_at ? vol->forget_at + n : cap;
  for (size_t i = vol->forget_at; i < end; i++) {
    mfilerec *f = c->dist->files.keys[i] ? c->dist->files.vals[i] : NULL;
    if (!f)
      continue;
    (void)cairn__dist_unhold(f, vol->id);
    drop_xfers(f, not_to, vol->id);
    filter(f->handed, &f->nhanded, not_to, vol->id);
  }
  vol->forget_at = end;
  if (end == cap)
    vol->forget_cap = 0;
  return !vol->forget_cap;
}

/* ---- for keep.c (outputs kept on workers) ---- */

int cairn__dist_usable(const cairn__dist *d, const mvol *h, const mvol *vol, int64_t now) {
  return usable(d, h, vol, now);
}

uint32_t cairn__dist_peer_cap(const mvol *h) {
  return h->peer_max ? h->peer_max : CAIRN_DEFAULT_PEER_MAX;
}

void cairn__dist_peer_source(cairn__core *c, const mvol *h, const mvol *vol, const char *sha,
                             char url[512]) {
  peer_source(c, h, vol, sha, url);
}

void cairn__dist_prune(mfilerec *f, int64_t now) { prune(f, now); }

int cairn__dist_holds(const mfilerec *f, int64_t vol) { return holds(f, vol); }

int cairn__dist_unhold(mfilerec *f, int64_t vol) {
  for (uint32_t i = 0; holds(f, vol) && i < f->nholders; i++)
    if (f->holders[i].vol == vol) {
      drop_holder(f, i);
      return 1;
    }
  return 0;
}

int cairn__dist_end_copy(mfilerec *f, int64_t to, int64_t from) {
  int ended = 0;
  for (uint32_t x = 0; x < f->nxfers;)
    if (f->xfers[x].to == to && f->xfers[x].from == from) {
      (void)count_send(f, &f->xfers[x], -1);
      f->xfers[x] = f->xfers[--f->nxfers];
      ended = 1;
    } else {
      x++;
    }
  return ended;
}

int cairn__dist_add_xfer(mfilerec *f, int64_t to, int64_t from, int local, int64_t now) {
  return add_xfer(f, to, from, local, now, 0, 0);
}
