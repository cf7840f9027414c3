/* mcast.c — planned multicast of outputs kept on workers (docs/jobs.md,
 * "Where outputs stay"; docs/planning.md, "In the master").
 *
 * A need is a pair (worker w, kept file f): a child allocated to w reads f
 * and w holds no copy yet (noted by keep.c before the child is offered;
 * dropped when w holds f, when f is gone or uploaded, or NEED_SECONDS after
 * it was noted). When the planner chosen by `--multicast-plan` is not
 * "online", the master plans the pending needs as one multi-source
 * multicast: each kept file a message from one of its holders to the
 * workers that need it, over the measured link rates of their clusters
 * (bplan.c), with
 *   WR, WRP  [WYL] §4.3–4.4 in the HNOW model with shared uplinks
 *            (plan_hnow.c; an extension, docs/planning.md): T(i,j,m) =
 *            S(i,m) + X(i,j)m + R(j,m), m in MiB; X(i,j) the time per MiB
 *            at the measured rate from i's cluster to j's, less S1(i), the
 *            time per MiB at the fastest rate out of i's cluster (its send
 *            port); S0 = R0 = 10 ms, R1 = 0. A copy between clusters keeps
 *            its sender busy for S + X·m (m ÷ the rate between the
 *            clusters) and takes the uplink out of its sender's cluster and
 *            the one into its receiver's for that time, one copy at a time
 *            each way, so the plans send a file across once per cluster
 *            and relay it inside; lower bound §3.1 eq. 2 or the busiest
 *            uplink's load, whichever is larger
 *   CDMD     [Gon] §3 (LH then LS): files cut into packets of
 *            CAIRN__MCAST_PACKET bytes, a round one packet; TCT <= 3.5d
 * A plan covers at most CAIRN__MCAST_NODES workers (holders first, then
 * receivers) and CAIRN__MCAST_FILES files, the needs first noted; the other
 * needs follow the online rule (keep.c). It is rebuilt at most once a
 * second when the needs changed, and at once when a worker asks whose need
 * a plan with room (fewer workers and files than its bounds) lacks, as the
 * broadcast plan's ensure_plan (distribution.c).
 *
 * The plan is executed as workers ask (keep.c): a worker's sources for f
 * name its planned sender first when that sender holds a whole copy, is
 * usable and sends fewer copies at once than its --peer-max (4 when it
 * does not say); a child whose
 * planned sender is itself still receiving f, or (whatever the plan says)
 * one of whose kept files is being copied into its cluster while no worker
 * there holds it yet, waits, at most WAIT_SECONDS from when its need was
 * noted, so that a file crosses the uplinks once and is relayed inside;
 * otherwise (the sender gone, busy, or not receiving, the wait over) the
 * online rule of keep.c names the sources: its own cluster's holders
 * first. Only copies already handed out are waited for, and a child handed
 * out never waits, so waits form no cycle. The master's copies of kept
 * files play no part: it has none. A planned relay is followed once it
 * holds the whole copy (the online rule, keep.c, may name a worker still
 * receiving a kept file whose chunk digests its producer reported; the
 * plans do not yet).
 *
 * Bounds under c->lock: noting a need O(CAIRN__MCAST_NEEDS + CAIRN__KEEP_SCAN);
 * a lookup O(CAIRN__MCAST_NEEDS + copies under way of f + CAIRN__KEEP_SCAN);
 * a (re)build O(CAIRN__MCAST_NEEDS × CAIRN__KEEP_SCAN) to expire needs, then the
 * planner over n <= 32 nodes and M <= 16 files, q <= 256 receptions: WR
 * O(q·M·n) ≈ 1.3·10^5 steps, WRP that times the operations scanned on the
 * sender's and the two uplinks' timelines (<= 2q each, rescanned until
 * they agree), CDMD O(q·n + q²). Never O(volunteers) or O(a job's tasks).
 * Each plan is logged (its planner, size, predicted makespan, lower bound,
 * and the planned sender of each reception, at most PLAN_LOG_ROUTES lines);
 * copies handed out planned or online, and copies a worker reported from
 * its planned sender, are counted for /metrics. Plans are not stored: the
 * dashboard's tables (broadcast_plans, file_transfers) are per broadcast
 * file and per job hand-out. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "plan/plan.h"
#include "server/dist/dist_int.h"

enum {
  NEED_SECONDS = 120, /* a need not met by then is dropped (a copy's deadline) */
  WAIT_SECONDS = 10,  /* a child waits this long at most for a planned relay */
  PLAN_LOG_ROUTES = 16
};

typedef struct mneed {
  int64_t vol, since;
  char sha[65];
} mneed;

/* One reception of the plan: vol gets files[file] from from, planned to
 * start at start (model units from when the plan was built). */
typedef struct mroute {
  int64_t vol, from;
  uint32_t file;
  double start;
} mroute;

struct cairn__mcast {
  char algo[8];                        /* "online", "WR", "WRP" or "CDMD" */
  mneed need[CAIRN__MCAST_NEEDS];
  uint32_t nneed;
  uint64_t gen;                        /* bumped by every change of the needs */
  /* the current plan */
  uint64_t plan_gen;
  int64_t built;                       /* when (cairn__now()); 0: none */
  char files[CAIRN__MCAST_FILES][65];
  uint32_t nfiles, nodes;              /* its files and workers */
  mroute route[CAIRN__MCAST_NEEDS];
  uint32_t nroute;
  /* the last CAIRN__MCAST_NEEDS copies handed out with a planned sender
   * first (a ring): vol is to report sha from that sender (need.since
   * holds the sender's id) */
  mneed handed[CAIRN__MCAST_NEEDS];
  uint32_t nhanded, next_handed;
};

static const char *const ALGOS[] = {"online", "WR", "WRP", "CDMD"};

const char *cairn__mcast_algorithm(const cairn__dist *d) {
  return d->mcast ? d->mcast->algo : "online";
}

cairn_status cairn__core_set_mcast(cairn__core *c, const char *algo, cairn_error *err) {
  int k = -1;
  for (int i = 0; i < 4; i++)
    if (strcmp(algo, ALGOS[i]) == 0)
      k = i;
  if (k < 0)
    return cairn__error_set(err, CAIRN_EINVAL,
                           "unknown multicast planner \"%s\" (one of: WR, WRP, CDMD, online)", algo);
  pthread_mutex_lock(&c->lock);
  if (!c->dist->mcast)
    c->dist->mcast = calloc(1, sizeof *c->dist->mcast);
  cairn_status st = c->dist->mcast ? CAIRN_OK : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  if (c->dist->mcast)
    snprintf(c->dist->mcast->algo, sizeof c->dist->mcast->algo, "%s", ALGOS[k]);
  cairn__core_unlock(c);
  return st;
}

void cairn__mcast_free(struct cairn__mcast *m) { free(m); }

static int active(const cairn__dist *d) {
  return d->mcast && strcmp(d->mcast->algo, "online") != 0;
}

static mvol *vol_of(cairn__core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
}

/* 1 when vol is among the first CAIRN__KEEP_SCAN holders of f. */
static int holds(const mfilerec *f, int64_t vol) {
  for (uint32_t i = 0; i < f->nholders && i < CAIRN__KEEP_SCAN; i++)
    if (f->holders[i].vol == vol)
      return 1;
  return 0;
}

static void drop(struct cairn__mcast *m, uint32_t i) {
  m->need[i] = m->need[--m->nneed];
  m->gen++;
}

void cairn__mcast_need(cairn__core *c, const mvol *vol, const mfilerec *f, int64_t now) {
  struct cairn__mcast *m = c->dist->mcast;
  if (!active(c->dist) || !f->remote || holds(f, vol->id))
    return;
  for (uint32_t i = 0; i < m->nneed; i++)
    if (m->need[i].vol == vol->id && strcmp(m->need[i].sha, f->sha256) == 0)
      return;
  if (m->nneed == CAIRN__MCAST_NEEDS)
    return; /* full: this need follows the online rule */
  m->need[m->nneed].vol = vol->id;
  m->need[m->nneed].since = now;
  memcpy(m->need[m->nneed].sha, f->sha256, sizeof m->need[0].sha);
  m->nneed++;
  m->gen++;
}

void cairn__mcast_have(cairn__dist *d, int64_t vol, const char *sha) {
  struct cairn__mcast *m = d->mcast;
  for (uint32_t i = 0; m && i < m->nneed; i++)
    if (m->need[i].vol == vol && strcmp(m->need[i].sha, sha) == 0) {
      drop(m, i);
      return;
    }
}

/* Drops the needs met, expired, or of files no longer kept on workers. */
static void expire(cairn__core *c, int64_t now) {
  struct cairn__mcast *m = c->dist->mcast;
  for (uint32_t i = 0; i < m->nneed;) {
    const mfilerec *f = cairn__dist_file_of(c->dist, m->need[i].sha);
    if (!f || !f->remote || holds(f, m->need[i].vol) || now - m->need[i].since > NEED_SECONDS)
      drop(m, i);
    else
      i++;
  }
}

/* The instance under construction: nodes (volunteer ids), files, and per
 * file its source node and destination nodes. */
typedef struct inst {
  int64_t node[CAIRN__MCAST_NODES];
  size_t n;
  const mfilerec *file[CAIRN__MCAST_FILES];
  size_t src[CAIRN__MCAST_FILES];
  size_t dest[CAIRN__MCAST_FILES][CAIRN__MCAST_NODES];
  size_t ndest[CAIRN__MCAST_FILES];
  size_t nf;
} inst;

/* Node index of volunteer id, added when there is room; -1 when not. */
static int node_of(inst *in, int64_t id) {
  for (size_t i = 0; i < in->n; i++)
    if (in->node[i] == id)
      return (int)i;
  if (in->n == CAIRN__MCAST_NODES)
    return -1;
  in->node[in->n] = id;
  return (int)in->n++;
}

/* Files of the needs (first noted first) with a usable holder as source,
 * then each need's receiver as a destination. */
static void collect(cairn__core *c, inst *in, int64_t now) {
  struct cairn__mcast *m = c->dist->mcast;
  for (uint32_t i = 0; i < m->nneed && in->nf < CAIRN__MCAST_FILES; i++) {
    const mfilerec *f = cairn__dist_file_of(c->dist, m->need[i].sha);
    size_t k = 0;
    while (k < in->nf && in->file[k] != f)
      k++;
    if (k < in->nf)
      continue;
    for (uint32_t h = 0; h < f->nholders && h < CAIRN__KEEP_SCAN; h++) {
      const mvol *v = vol_of(c, f->holders[h].vol);
      int x = cairn__dist_usable(c->dist, v, NULL, now) ? node_of(in, v->id) : -1;
      if (x >= 0) {
        in->file[in->nf] = f;
        in->src[in->nf++] = (size_t)x;
        break;
      }
    }
  }
  for (uint32_t i = 0; i < m->nneed; i++) {
    const mfilerec *f = cairn__dist_file_of(c->dist, m->need[i].sha);
    size_t k = 0;
    while (k < in->nf && in->file[k] != f)
      k++;
    int x = k < in->nf ? node_of(in, m->need[i].vol) : -1;
    if (x >= 0 && (size_t)x != in->src[k] && in->ndest[k] < CAIRN__MCAST_NODES)
      in->dest[k][in->ndest[k]++] = (size_t)x;
  }
  size_t kept = 0; /* files none of whose receivers fit: not planned */
  for (size_t k = 0; k < in->nf; k++)
    if (in->ndest[k]) {
      in->file[kept] = in->file[k];
      in->src[kept] = in->src[k];
      memcpy(in->dest[kept], in->dest[k], sizeof in->dest[k]);
      in->ndest[kept++] = in->ndest[k];
    }
  in->nf = kept;
}

/* The HNOW costs of in (arrays of n, and n*n for X) and its clusters
 * (cl[i]: the index of node i's cluster, first seen first; returns how
 * many). A copy inside a cluster frees its sender after m ÷ the fastest
 * rate out of it; one between clusters keeps both ends and the two
 * uplinks busy for m ÷ the rate between the clusters (plan_hnow.c's
 * shared uplinks). O(n²), n <= CAIRN__MCAST_NODES. */
static size_t hnow_costs(cairn__core *c, const inst *in, double *S0, double *S1, double *R0,
                         double *R1, double *X, size_t *cl) {
  const double MiB = 1048576.0;
  size_t ncl = 0;
  for (size_t i = 0; i < in->n; i++) {
    const mvol *a = vol_of(c, in->node[i]);
    size_t f = 0;
    while (f < i && strcmp(vol_of(c, in->node[f])->cluster, a->cluster) != 0)
      f++;
    cl[i] = f < i ? cl[f] : ncl++;
    double fastest = 0;
    for (size_t j = 0; j < in->n; j++) {
      double r = cairn__rate_get(c->dist, a->cluster, vol_of(c, in->node[j])->cluster);
      fastest = r > fastest ? r : fastest;
    }
    S0[i] = R0[i] = 0.01;
    S1[i] = fastest > 0 ? MiB / fastest : 0;
    R1[i] = 0;
    for (size_t j = 0; j < in->n; j++) {
      double r = cairn__rate_get(c->dist, a->cluster, vol_of(c, in->node[j])->cluster);
      double x = (r > 0 ? MiB / r : 1.0) - S1[i];
      X[i * in->n + j] = x > 0 ? x : 0;
    }
  }
  return ncl;
}

/* Runs the planner on in into s. */
static cairn_status run(cairn__core *c, const inst *in, const char *algo, cairn__plan_schedule *s,
                        cairn_error *err) {
  size_t n = in->n;
  cairn__plan_instance pi = {0};
  double *buf = calloc(4 * n + n * n, sizeof *buf);
  size_t cl[CAIRN__MCAST_NODES];
  cairn__plan_hmsg hm[CAIRN__MCAST_FILES];
  cairn__plan_cmsg cm[CAIRN__MCAST_FILES];
  if (!buf) {
    cairn__plan_schedule_init(s, CAIRN_PLAN_HNOW, algo);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  for (size_t k = 0; k < in->nf; k++) {
    hm[k] = (cairn__plan_hmsg){in->src[k], (double)in->file[k]->size / 1048576.0,
                              (size_t *)in->dest[k], in->ndest[k]};
    int64_t len = (in->file[k]->size + CAIRN__MCAST_PACKET - 1) / CAIRN__MCAST_PACKET;
    cm[k] = (cairn__plan_cmsg){NULL, len < 1 ? 1 : len, in->src[k], (size_t *)in->dest[k],
                              in->ndest[k]};
  }
  if (strcmp(algo, "CDMD") == 0) {
    pi.model = CAIRN_PLAN_CDMD;
    pi.cdmd = (cairn__plan_cdmd){n, in->nf, cm};
  } else {
    pi.model = CAIRN_PLAN_HNOW;
    pi.hnow = (cairn__plan_hnow){n, buf, buf + n, buf + 2 * n, buf + 3 * n, buf + 4 * n, in->nf, hm,
                                cl, 0};
    pi.hnow.nclusters = hnow_costs(c, in, buf, buf + n, buf + 2 * n, buf + 3 * n, buf + 4 * n, cl);
  }
  cairn_status st = cairn__plan_run(&pi, pi.model == CAIRN_PLAN_CDMD ? "LH-LS" : algo, s, err);
  free(buf);
  return st;
}

/* Keeps the plan's receptions that are needs as routes, and logs it. */
static void adopt(cairn__core *c, const inst *in, const cairn__plan_schedule *s) {
  struct cairn__mcast *m = c->dist->mcast;
  m->nroute = 0;
  m->nfiles = (uint32_t)in->nf;
  m->nodes = (uint32_t)in->n;
  for (size_t k = 0; k < in->nf; k++)
    memcpy(m->files[k], in->file[k]->sha256, sizeof m->files[k]);
  for (size_t t = 0; t < s->n; t++)
    for (size_t r = 0; r < s->t[t].to_len && m->nroute < CAIRN__MCAST_NEEDS; r++) {
      size_t k = s->t[t].message, j = (size_t)s->to[s->t[t].to_off + r].id;
      int dest = 0;
      for (size_t x = 0; x < in->ndest[k]; x++)
        dest |= in->dest[k][x] == j;
      if (dest) /* CDMD may forward through a worker that does not need it */
        m->route[m->nroute++] = (mroute){in->node[j], in->node[s->t[t].from.id], (uint32_t)k,
                                         s->t[t].start};
    }
  c->dist->n.mcast_plans++;
  const char *unit = strcmp(m->algo, "CDMD") == 0 ? "rounds" : "s";
  CAIRN_INFO(&c->log, "multicast plan %llu: %s over %zu workers, %zu kept files, %u receptions, "
             "predicted %.2f %s, lower bound %.2f %s", (unsigned long long)c->dist->n.mcast_plans,
             s->algorithm, in->n, in->nf, m->nroute, s->makespan, unit, s->lower_bound, unit);
  for (uint32_t i = 0; i < m->nroute && i < PLAN_LOG_ROUTES; i++) {
    const mvol *to = vol_of(c, m->route[i].vol), *from = vol_of(c, m->route[i].from);
    CAIRN_INFO(&c->log, "multicast plan %llu: %.12s: %s (%s) <- %s (%s) at %.2f %s",
               (unsigned long long)c->dist->n.mcast_plans, m->files[m->route[i].file], to->name,
               to->cluster, from->name, from->cluster, m->route[i].start, unit);
  }
  if (m->nroute > PLAN_LOG_ROUTES)
    CAIRN_INFO(&c->log, "multicast plan %llu: %u more receptions",
               (unsigned long long)c->dist->n.mcast_plans, m->nroute - PLAN_LOG_ROUTES);
}

static const mroute *route_of(const struct cairn__mcast *m, int64_t vol, const char *sha) {
  for (uint32_t i = 0; i < m->nroute; i++)
    if (m->route[i].vol == vol && strcmp(m->files[m->route[i].file], sha) == 0)
      return &m->route[i];
  return NULL;
}

void cairn__mcast_plan(cairn__core *c, const mvol *vol, int64_t now) {
  struct cairn__mcast *m = c->dist->mcast;
  if (!active(c->dist))
    return;
  int missing = 0;
  if (m->built && m->plan_gen == m->gen) /* nothing changed since */
    return;
  int room = m->nodes < CAIRN__MCAST_NODES && m->nfiles < CAIRN__MCAST_FILES;
  for (uint32_t i = 0; i < m->nneed && !missing && room && now - m->built < 1; i++)
    missing = m->need[i].vol == vol->id && !route_of(m, vol->id, m->need[i].sha);
  if (!missing && now - m->built < 1)
    return;
  expire(c, now);
  inst *in = calloc(1, sizeof *in);
  if (!in)
    return; /* the online rule */
  collect(c, in, now);
  m->plan_gen = m->gen;
  m->built = now;
  cairn__plan_schedule s;
  cairn_error err = {0};
  if (!in->nf || !in->n)
    m->nroute = 0;
  else if (run(c, in, m->algo, &s, &err) != CAIRN_OK)
    CAIRN_WARN(&c->log, "multicast plan (%s): %s: the online rule decides", m->algo, err.text);
  else
    adopt(c, in, &s);
  if (in->nf && in->n)
    cairn__plan_schedule_free(&s);
  free(in);
}

/* The need (vol, f), or NULL. */
static const mneed *need_of(const struct cairn__mcast *m, int64_t vol, const char *sha) {
  for (uint32_t i = 0; i < m->nneed; i++)
    if (m->need[i].vol == vol && strcmp(m->need[i].sha, sha) == 0)
      return &m->need[i];
  return NULL;
}

/* Copies of f that holder h sends now, or is receiving (*landing). */
static uint32_t copies(const mfilerec *f, int64_t h, int *landing) {
  uint32_t n = 0;
  *landing = 0;
  for (uint32_t i = 0; i < f->nxfers; i++) {
    n += f->xfers[i].from == h;
    *landing |= f->xfers[i].to == h;
  }
  return n;
}

/* 1 when a copy of f is landing in vol's cluster (on another worker) and
 * no holder there has it yet: the copy vol would fetch across the uplinks
 * is on its way into the cluster. O(copies under way of f +
 * CAIRN__KEEP_SCAN). */
static int landing_near(cairn__core *c, const mfilerec *f, const mvol *vol) {
  int near = 0;
  for (uint32_t i = 0; i < f->nxfers && !near; i++) {
    const mvol *to = f->xfers[i].to != vol->id ? vol_of(c, f->xfers[i].to) : NULL;
    near = to && strcmp(to->cluster, vol->cluster) == 0;
  }
  for (uint32_t i = 0; i < f->nholders && i < CAIRN__KEEP_SCAN && near; i++) {
    const mvol *h = vol_of(c, f->holders[i].vol);
    near = !h || strcmp(h->cluster, vol->cluster) != 0;
  }
  return near;
}

int64_t cairn__mcast_sender(cairn__core *c, mfilerec *f, const mvol *vol, int64_t now, int *wait) {
  struct cairn__mcast *m = c->dist->mcast;
  *wait = 0;
  if (!active(c->dist) || holds(f, vol->id)) /* a route of an earlier plan */
    return 0;
  const mroute *r = route_of(m, vol->id, f->sha256);
  const mvol *s = r ? vol_of(c, r->from) : NULL;
  int landing = 0;
  if (s && !cairn__dist_usable(c->dist, s, vol, now))
    s = NULL;
  uint32_t sending = s ? copies(f, s->id, &landing) : 0;
  if (s && holds(f, s->id))
    return sending < cairn__dist_peer_cap(s) ? s->id : 0; /* its --peer-max */
  const mneed *nd = need_of(m, vol->id, f->sha256);
  *wait = nd && now - nd->since <= WAIT_SECONDS && (landing || landing_near(c, f, vol));
  return 0;
}

void cairn__mcast_fetched(cairn__core *c, const mvol *vol, const mfilerec *f, int64_t src) {
  struct cairn__mcast *m = c->dist->mcast;
  for (uint32_t i = 0; m && src && i < m->nhanded; i++)
    if (m->handed[i].vol == vol->id && m->handed[i].since == src &&
        strcmp(m->handed[i].sha, f->sha256) == 0) {
      c->dist->n.kept_from_plan++;
      m->handed[i].vol = 0; /* counted once */
      return;
    }
}

int cairn__mcast_child(cairn__core *c, const mvol *vol, const mjob *j, uint32_t v, int64_t now) {
  const mtask *t = &j->tasks[v];
  if (!active(c->dist) || !t->io)
    return 0;
  for (uint32_t k = 0; k < t->io->npins; k++) {
    const cairn__output_file *of = cairn__outputs_file(&j->tasks[t->io->pins[k].parent],
                                                      t->io->pins[k].file);
    const mfilerec *f = of ? cairn__dist_file_of(c->dist, of->sha256) : NULL;
    if (f)
      cairn__mcast_need(c, vol, f, now);
  }
  cairn__mcast_plan(c, vol, now);
  int wait = 0;
  for (uint32_t k = 0; k < t->io->npins && !wait; k++) {
    const cairn__output_file *of = cairn__outputs_file(&j->tasks[t->io->pins[k].parent],
                                                      t->io->pins[k].file);
    mfilerec *f = of ? cairn__dist_file_of(c->dist, of->sha256) : NULL;
    if (f && f->remote)
      (void)cairn__mcast_sender(c, f, vol, now, &wait);
  }
  return wait;
}

void cairn__mcast_note(cairn__core *c, const mvol *vol, const mvol *h, const mfilerec *f,
                       int planned) {
  struct cairn__mcast *m = c->dist->mcast;
  if (holds(f, vol->id))
    return; /* vol has it: no copy travels */
  for (uint32_t i = 0; m && i < m->nhanded; i++)
    if (m->handed[i].vol == vol->id && strcmp(m->handed[i].sha, f->sha256) == 0)
      return; /* handed out already (another task of vol reads it): one copy */
  if (planned) {
    c->dist->n.kept_planned++;
    m->handed[m->next_handed].vol = vol->id;
    m->handed[m->next_handed].since = h->id;
    memcpy(m->handed[m->next_handed].sha, f->sha256, sizeof m->handed[0].sha);
    m->next_handed = (m->next_handed + 1) % CAIRN__MCAST_NEEDS;
    m->nhanded += m->nhanded < CAIRN__MCAST_NEEDS;
  } else
    c->dist->n.kept_online++;
  CAIRN_INFO(&c->log, "kept %.12s: %s (%s) <- %s (%s), %s", f->sha256, vol->name, vol->cluster,
             h->name, h->cluster, planned ? cairn__mcast_algorithm(c->dist) : "online");
}
