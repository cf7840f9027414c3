/* dist_int.h — the distribution module's state (private to distribution.c
 * and bplan.c, and to their white-box tests). Everything here is guarded by
 * the core's lock: the module is called only by the core, under it. */
#ifndef CAIRN_DIST_INT_H
#define CAIRN_DIST_INT_H

#include "server/dist/dist.h"

/* An uploaded file (d->files): who holds a verified copy, copies on their way
 * (to a worker, from a holder or from the master = 0, until a deadline), and
 * bytes served. */
typedef struct mholder {
  int64_t vol, since;
} mholder;
typedef struct mxfer {
  int64_t to, from, deadline;
  int64_t job, at_ms;  /* the job whose task it is for, when it was handed out (Unix ms) */
  uint32_t file;       /* the file's index among that job's files */
  uint8_t local;       /* to and from were in one cluster when it was handed out */
} mxfer;
/* Copies under way from one source of a file (mfilerec.sends). */
typedef struct msend {
  uint32_t all, local;
} msend;
/* A broadcast plan (bplan.c): cluster 0 is the master, 1..k-1 the clusters
 * present when it was built, sorted by label. */
typedef struct mplan {
  char algorithm[32];
  size_t k;
  char **label;
  int64_t *parent;   /* the cluster its first copy comes from (0: the master) */
  double *at;        /* planned start of that copy, seconds from the start */
  double *end;       /* planned end of that copy (the cluster holds the file) */
  double *done;      /* planned end of its last copy (every worker holds it) */
  int64_t *workers;  /* its workers when the plan was built */
  int *rank;         /* order among the parent's receivers */
  int *conc;         /* copies the plan has it send to other clusters at once */
  int64_t *want;     /* last time one of its workers waited for the file */
  double predicted, lower_bound, unit;
  int64_t C;
  uint64_t sig;      /* the census generation (census.c) it was built from */
  double built;      /* seconds from the start of the broadcast to when it was built */
  uint64_t epoch;    /* d->rates_epoch it was costed with */
  int informed;      /* clusters that held the file (or had a copy landing) then */
  int64_t built_ms;  /* when it was built (Unix ms): its times count from then */
} mplan;


typedef struct mfilerec {
  char sha256[65];
  int64_t size;
  mholder *holders;
  uint32_t nholders, capholders;
  cairn__hmap held;   /* holders[].vol -> non-NULL: holds() in O(1) */
  uint32_t cursor;   /* where the next window of candidates starts (cairn__dist_window) */
  int64_t pruned;    /* the second xfers and handed were last pruned */
  mxfer *xfers;
  uint32_t nxfers, capxfers;
  /* per source (its id + 1; the master's 0 + 1): how many of xfers it
   * sends, and of those to its own cluster; kept in step with xfers by
   * every change of the list, so a source's load is O(1) to read */
  cairn__hmap sends;
  /* hand-outs whose copy is not reported yet, the first per receiver, for
   * the copy record (distribution.c, log_copy): unlike xfers, neither a
   * failed source nor the receiver's holding ends one; the copy's record or
   * HANDED_SECONDS do */
  mxfer *handed;
  uint32_t nhanded, caphanded;
  uint64_t bytes_master, bytes_peer;
  mplan *plan;       /* broadcast plan, NULL until it is first broadcast */
  int64_t started;   /* when it was first handed out as a broadcast input */
  int64_t started_ms; /* the same in Unix ms */
  int64_t checked;   /* when the clusters present were last compared with the plan */
  uint32_t plans;    /* plans built for it */
  uint32_t dying;    /* deletions whose store step may be removing it (life.c) */
  uint8_t remote;    /* an output kept on workers: only holders have its bytes (keep.c) */
  uint8_t chunked;   /* kept, and the master serves its chunk digests (its receivers
                      * may relay it while receiving, keep.c) */
} mfilerec;

/* A measured rate between two clusters (bplan.c). */
typedef struct mrate {
  char *src, *dst;
  int cls;           /* RATE_LOCAL, RATE_MASTER or RATE_INTER */
  double bps;
  double base;       /* the rate when rates_epoch was last bumped for this pair */
  int64_t samples;
} mrate;

struct cairn__dist {
  cairn__hmap files;        /* first 8 bytes of sha256 -> mfilerec */
  char bplan_algo[32];     /* broadcast planner, "online" for none */
  cairn__hmap rates;        /* (source cluster, cluster) -> mrate */
  double rate_sum[3];      /* per rate class */
  uint64_t rate_n[3];
  uint64_t rates_epoch;    /* bumped when a pair is first measured or moves by > 25% */
  cairn__dist_counters n;  /* for /metrics */
  /* outputs kept on workers (keep.c): parents whose kept output has no
   * holder left, found under the current hold of the lock, recomputed when
   * it is released (cairn__lost_flush; at most CAIRN__LOST_MAX a hold, more
   * are found again by the next request) */
  struct { int64_t job; uint32_t task; } lost[CAIRN__LOST_MAX];
  uint32_t nlost;
  int64_t *paused_until;   /* [id - 1]: a peer reported the volunteer's file server
                              failing; not offered before then (0: never paused) */
  size_t npaused;
  /* census.c: the clusters of the volunteers present, per app */
  cairn__hmap census;       /* (app, cluster) -> struct mcount */
  cairn__hmap census_apps;  /* app -> struct mappcensus */
  mvol *qhead, *qtail;     /* the volunteers counted, least recently seen first */
  uint64_t census_gen;     /* bumped by every change of a count */
  uint64_t census_work;    /* volunteers and clusters visited, for the bounded-work test */
  uint64_t scan_work;      /* candidates in the windows handed out (cairn__dist_window), the same */
  int store_and_forward;   /* 1: never name a worker still receiving as a source */
  struct cairn__mcast *mcast; /* mcast.c: needs and plan of kept outputs; NULL: online */
  cairn__hmap by_peer;      /* hash of a peer URL -> the volunteer that last said it
                              (cairn__dist_peer_url), so a reported source is found in O(1) */
};

void cairn__dist_file_free(mfilerec *f);
/* A decision looks at CAIRN__DIST_SCAN of a file's candidates (holders,
 * then copies under way) at most: *first and the count returned, the
 * window starting where f's previous one ended (f->cursor) when there are
 * more, so that every candidate is looked at in turn. O(1). */
#define CAIRN__DIST_SCAN 256u
uint32_t cairn__dist_window(cairn__dist *d, mfilerec *f, uint32_t total, uint32_t *first);
/* 1 when vol holds a whole copy of f. O(1) (f->held). */
int cairn__dist_holds(const mfilerec *f, int64_t vol);
/* vol is no holder of f any more (in memory); 1 if it was. O(holders). */
int cairn__dist_unhold(mfilerec *f, int64_t vol);
/* Ends the copies of f from from to to under way (their counts given
 * back); 1 if there was one. O(copies under way of f). */
int cairn__dist_end_copy(mfilerec *f, int64_t to, int64_t from);
/* peers.c: volunteer id's file server is not offered until then (kept
 * offered when out of memory: a pause is an optimisation, not a safety
 * rule). O(1) amortized. */
void cairn__dist_pause(cairn__dist *d, int64_t id, int64_t until);
/* peers.c: the holders of f that source (a peer URL, then /v1/files/…)
 * names, into out (the volunteer that last said that URL, then those that
 * said it before and still say it); how many. With relays, also a peer
 * still receiving f (a cut-through relay serves it before its own copy is
 * reported: a download from it is a copy all the same). The master's path
 * or an unknown URL name none, nor, without relays, a relay still
 * receiving. O(CAIRN__PEER_TWINS × copies under way of f). */
uint32_t cairn__dist_source_holders(cairn__dist *d, const mfilerec *f, const char *source,
                                    int relays, mvol *out[CAIRN__PEER_TWINS]);
/* 1 if holder h can serve vol's download now: not vol, not banned, serves
 * peers, heard from in the last 30 s, not paused after a failure. O(1). */
int cairn__dist_usable(const cairn__dist *d, const mvol *h, const mvol *vol, int64_t now);
/* Copies of one file holder h may be named the source of at once: the
 * "peer_max" its reports say, else CAIRN_DEFAULT_PEER_MAX (a worker's
 * default --peer-max). O(1). */
uint32_t cairn__dist_peer_cap(const mvol *h);
/* Drops f's transfers past their deadline. O(transfers of f). */
void cairn__dist_prune(mfilerec *f, int64_t now);
/* A copy of f from holder from (0: the master) to volunteer to (local: of
 * from's cluster) is under way until to reports it (cairn__dist_have) or
 * 120 s pass. 0, or -1 OOM. */
int cairn__dist_add_xfer(mfilerec *f, int64_t to, int64_t from, int local, int64_t now);
/* Copies of f under way from source from (0: the master), or with local
 * set only those to its own cluster. O(1). */
uint32_t cairn__dist_sending(const mfilerec *f, int64_t from, int local);
/* 1 when f->sends agrees with f->xfers (white-box tests). O(transfers of f). */
int cairn__dist_sends_ok(const mfilerec *f);
/* Until when volunteer id's file server is not offered (0: it is). O(1). */
int64_t cairn__dist_paused_until(const cairn__dist *d, int64_t id);
/* Holder h's copy of file sha for vol, with its grant, into url. O(1). */
void cairn__dist_peer_source(cairn__core *c, const mvol *h, const mvol *vol, const char *sha,
                             char url[512]);
/* The record of file sha, or NULL. */
mfilerec *cairn__dist_file_of(cairn__dist *d, const char *sha);

/* census.c */
/* A volunteer is present this long after its latest request. */
#define CAIRN__CENSUS_SECONDS 30
/* Volunteers whose time is up leave the census at each plan check. */
#define CAIRN__CENSUS_PLAN_EXPIRE 256
/* Up to max volunteers whose time is up (seen before now -
 * CAIRN__CENSUS_SECONDS) leave the census, least recently seen first. */
void cairn__census_expire(cairn__dist *d, int64_t now, size_t max);
/* The first max clusters (in order of arrival) of the volunteers of app
 * present, into labels (borrowed: valid until the census changes) and
 * counts; returns how many, and the app's generation in *gen. O(max). */
size_t cairn__census_clusters(cairn__dist *d, const char *app, char **labels, int64_t *counts,
                              size_t max, uint64_t *gen);
/* The generation of app's census (0: none present ever). O(1). */
uint64_t cairn__census_gen(const cairn__dist *d, const char *app);
/* v leaves the census (a ban). O(its apps). */
void cairn__census_leave(cairn__dist *d, mvol *v);
void cairn__census_free(cairn__dist *d);
/* relay.c */
/* Candidate i (0 to f->nholders + f->nxfers - 1) of f's sources: holder i,
 * then the receivers of the copies under way that relay while receiving
 * (none when store_and_forward); NULL when candidate i is none. *relay is 1
 * for a receiver. O(1). */
mvol *cairn__dist_candidate(cairn__core *c, const mfilerec *f, uint32_t i, int *relay);
/* Local copies a relay sends at once: each runs at the rate its own copy
 * arrives, so it fans out instead of growing a chain of relays. */
#define CAIRN__RELAY_FANOUT 2
/* The best source so far: a holder of a whole copy before a relay; among
 * holders the one sending the fewest copies; among relays the one whose
 * own copy started first (its deadline, the nearest to the source). */
typedef struct cairn__pick {
  int64_t id; /* 0: none yet */
  int relay;
  uint32_t load;
  int64_t start;
} cairn__pick;
/* Takes candidate id (relay or not, sending load copies, its own copy's
 * deadline start when a relay) when it beats best. O(1). */
void cairn__dist_pick(cairn__pick *best, int64_t id, int relay, uint32_t load, int64_t start);

/* mcast.c (planned multicast of outputs kept on workers; bounds there) */
/* "online" when no multicast planner was chosen. */
const char *cairn__mcast_algorithm(const cairn__dist *d);
void cairn__mcast_free(struct cairn__mcast *m);
/* vol must fetch kept file f (a child allocated to it reads it), unless it
 * holds it. O(CAIRN__MCAST_NEEDS + CAIRN__KEEP_SCAN). */
void cairn__mcast_need(cairn__core *c, const mvol *vol, const mfilerec *f, int64_t now);
/* Rebuilds the plan when the needs changed: at most once a second, at once
 * when one of vol's needs is not in it. */
void cairn__mcast_plan(cairn__core *c, const mvol *vol, int64_t now);
/* vol's planned sender of f when it can send now (holds it, usable, fewer
 * than 4 copies under way), else 0; *wait is 1 when that sender is still
 * receiving f, or a copy of f is landing in vol's cluster where no worker
 * holds it, and vol's need is younger than 10 s. O(needs + copies of f +
 * CAIRN__KEEP_SCAN). */
int64_t cairn__mcast_sender(cairn__core *c, mfilerec *f, const mvol *vol, int64_t now, int *wait);
/* vol holds sha: its need is met. O(CAIRN__MCAST_NEEDS). */
void cairn__mcast_have(cairn__dist *d, int64_t vol, const char *sha);
/* Before a child v of j is allocated to vol: notes its kept files as vol's
 * needs, (re)plans, and returns 1 when it should wait for a planned sender
 * still receiving one of them or a copy landing in its cluster. O(pins × (CAIRN__MCAST_NEEDS +
 * CAIRN__KEEP_SCAN)) plus a (re)build's bound. */
int cairn__mcast_child(cairn__core *c, const mvol *vol, const mjob *j, uint32_t v, int64_t now);
/* vol's first source of kept file f is h, the planned sender or not: counted
 * for /metrics and logged, unless vol holds f or has a planned copy of it
 * not reported yet. O(CAIRN__KEEP_SCAN + CAIRN__MCAST_NEEDS). */
void cairn__mcast_note(cairn__core *c, const mvol *vol, const mvol *h, const mfilerec *f,
                       int planned);
/* vol reported a copy of f from holder src: counted when src was the
 * planned sender it was handed (the last CAIRN__MCAST_NEEDS). O(that). */
void cairn__mcast_fetched(cairn__core *c, const mvol *vol, const mfilerec *f, int64_t src);

/* bplan.c */
/* A download of bytes in ms from cluster src ("" = the master) into dst. */
void cairn__rate_sample(cairn__core *c, const char *src, const char *dst, int64_t bytes,
                        int64_t ms);
/* Estimated rate src -> dst in bytes per second (measured, else estimated). */
double cairn__rate_get(const cairn__dist *d, const char *src, const char *dst);
void cairn__rates_free(cairn__dist *d);
/* Plans a broadcast of size bytes with algo over the m clusters labels[]
 * (sorted, distinct) of counts[] workers; informed[i] (or NULL) marks a
 * cluster that holds the file already or has a copy landing. NULL with err
 * on failure. */
mplan *cairn__bplan_build(const cairn__dist *d, const char *algo, int64_t size,
                          char *const *labels, const int64_t *counts,
                          const uint8_t *informed, size_t m, cairn_error *err);
void cairn__bplan_free(mplan *p);
/* Index of cluster label in p ("" = 0, the master), or -1. */
int cairn__bplan_find(const mplan *p, const char *label);
json_t *cairn__bplan_json(const mplan *p, size_t max_clusters);
/* The plan as the store keeps it (table broadcast_plans, read by
 * GET /v1/jobs/{id}/distribution): cairn__bplan_json's fields and "built_ms",
 * and per cluster (at most max_clusters) "workers", "end_s", "done_s". */
json_t *cairn__bplan_record(const mplan *p, size_t max_clusters);

#endif
