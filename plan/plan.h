/* plan.h — broadcast and multicast planners: the models' instances, one
 * schedule format, an independent feasibility checker and lower bounds.
 *
 * Models (papers in docs/references.md, formats in docs/planning.md):
 *   CAIRN_PLAN_1C      k clusters of sizes n_i; a local transfer takes 1, an
 *                      inter-cluster one C, sender and receiver busy for the
 *                      whole transfer ([KKW] §2). Optional per-cluster
 *                      degree bounds d_i (§5.1) or a global bound B on
 *                      simultaneous inter-cluster transfers (§5.3).
 *   CAIRN_PLAN_POSTAL  same clusters; the sender is busy 1 unit, the message
 *                      arrives C (inter) or 1 (local) after the start, the
 *                      receiver is busy the last unit ([KKW] §6).
 *   CAIRN_PLAN_GRID    two-level grid: latency L_ij, gap g_ij(m), intra-cluster
 *                      broadcast time T_i ([BSM] §3, §5).
 *   CAIRN_PLAN_HNOW    heterogeneous nodes, T(i,j,m) = S(i,m) + X(i,j)m + R(j,m),
 *                      non-blocking send, blocking receive, several sources
 *                      ([WYL] §2–3).
 *   CAIRN_PLAN_CDMD    single-port complete network with multicast, messages of
 *                      integer length delivered in consecutive rounds
 *                      ([Gon] §1).
 *
 * Everything here is pure: plain structs in, plain schedule out, no I/O, no
 * globals. Functions that can fail return cairn_status and fill an optional
 * caller-owned cairn_error. Destroy functions accept NULL / zeroed structs. */
#ifndef CAIRN_PLAN_H
#define CAIRN_PLAN_H

#include <stddef.h>
#include <stdint.h>

#include "common/error.h"

typedef enum cairn__plan_model {
  CAIRN_PLAN_1C = 0,
  CAIRN_PLAN_POSTAL,
  CAIRN_PLAN_GRID,
  CAIRN_PLAN_HNOW,
  CAIRN_PLAN_CDMD
} cairn__plan_model;

/* ---- instances ---------------------------------------------------------- */

/* 1/C and postal models. The message starts at member 0 of cluster `source`.
 * Members of cluster i are numbered 0..size[i]-1; in a multicast the
 * receivers of cluster i are its members 0..members[i]-1. */
typedef struct cairn__plan_clusters {
  int64_t C;        /* inter-cluster transfer time, >= 1 (local time is 1) */
  size_t k;         /* number of clusters, >= 1 */
  int64_t *size;    /* n_i >= 1 */
  int64_t *degree;  /* NULL, or d_i >= 1: at most d_i inter-cluster transfers
                       into or out of cluster i at any time (§5.1) */
  int64_t *members; /* NULL for a broadcast, or n'_i in 0..n_i (§4) */
  size_t source;
  int64_t B;        /* 0 = unbounded, else at most B simultaneous
                       inter-cluster transfers (§5.3) */
} cairn__plan_clusters;

/* Grid model: clusters 0..k-1, each represented by its coordinator. */
typedef struct cairn__plan_grid {
  size_t k;
  size_t root;
  double *L; /* k*k row-major latency L_ij (diagonal unused) */
  double *g; /* k*k row-major gap g_ij(m) for the broadcast's message size */
  double *T; /* k intra-cluster broadcast times T_i */
} cairn__plan_grid;

typedef struct cairn__plan_hmsg {
  size_t source;
  double length;  /* m, in the unit X, S1 and R1 are quoted per */
  size_t *dests;
  size_t ndests;
} cairn__plan_hmsg;

/* HNOW model: S(i,m) = S0[i] + S1[i]*m, R(j,m) = R0[j] + R1[j]*m.
 * cluster: NULL for [WYL]'s model; else the extension with shared uplinks
 * (plan_hnow.c, docs/planning.md): node i is in cluster cluster[i] <
 * nclusters, and a transfer between clusters keeps its sender, the uplink
 * out of the sender's cluster and the one into the receiver's busy for
 * S(i,m) + X(i,j)m, one such transfer at a time on each uplink and
 * direction. Never owned by the instance. */
typedef struct cairn__plan_hnow {
  size_t n;
  double *S0, *S1, *R0, *R1;
  double *X; /* n*n row-major time per unit length from i to j */
  size_t nmsg;
  cairn__plan_hmsg *msg;
  const size_t *cluster;
  size_t nclusters;
} cairn__plan_hnow;

typedef struct cairn__plan_cmsg {
  char *name;
  int64_t length; /* >= 1 packets */
  size_t holder;
  size_t *needed_by;
  size_t nneed;
} cairn__plan_cmsg;

typedef struct cairn__plan_cdmd {
  size_t n; /* processors */
  size_t nmsg;
  cairn__plan_cmsg *msg;
} cairn__plan_cdmd;

/* One instance; only the member that matches `model` is used (1/C and postal
 * both use `cl`). `owned` is set by cairn__plan_instance_parse: then
 * cairn__plan_instance_free releases every array; hand-built instances leave it
 * 0 and keep their own memory. */
typedef struct cairn__plan_instance {
  cairn__plan_model model;
  cairn__plan_clusters cl;
  cairn__plan_grid grid;
  cairn__plan_hnow hnow;
  cairn__plan_cdmd cdmd;
  int owned;
} cairn__plan_instance;

/* Parses a JSON instance (docs/planning.md). Unknown fields and malformed
 * values fail with CAIRN_EINVAL and one line naming the field. On failure
 * *out is left zeroed. */
cairn_status cairn__plan_instance_parse(const char *json, size_t len,
                                       cairn__plan_instance *out, cairn_error *err)
  __attribute__((warn_unused_result));
/* Structural validation of a hand-built or parsed instance. */
cairn_status cairn__plan_instance_validate(const cairn__plan_instance *in, cairn_error *err)
  __attribute__((warn_unused_result));
void cairn__plan_instance_free(cairn__plan_instance *in);

const char *cairn__plan_model_name(cairn__plan_model m);

/* ---- schedules ---------------------------------------------------------- */

/* A node: cluster models use (cluster, member); the others (id, -1), where id
 * is a cluster (grid), node (hnow) or processor (cdmd) index. */
typedef struct cairn__plan_node {
  int64_t id;
  int64_t member;
} cairn__plan_node;

/* One transfer of message `message` from `from` to sched->to[to_off ..
 * to_off+to_len). start/end: see docs/planning.md for each model (end is the
 * time every receiver holds the message; a grid transfer from a cluster to
 * itself is that cluster's intra-cluster broadcast). */
typedef struct cairn__plan_transfer {
  size_t message;
  cairn__plan_node from;
  size_t to_off, to_len;
  double start, end;
} cairn__plan_transfer;

typedef struct cairn__plan_schedule {
  char algorithm[32];
  cairn__plan_model model;
  double makespan;
  double lower_bound;
  cairn__plan_transfer *t;
  size_t n, cap;
  cairn__plan_node *to;
  size_t nto, capto;
} cairn__plan_schedule;

void cairn__plan_schedule_init(cairn__plan_schedule *s, cairn__plan_model m, const char *algorithm);
void cairn__plan_schedule_free(cairn__plan_schedule *s);
/* Appends a transfer to nto receivers. Returns 0, or -1 when out of memory
 * (the schedule is unchanged). */
__attribute__((warn_unused_result))
int cairn__plan_schedule_add(cairn__plan_schedule *s, size_t message, cairn__plan_node from,
                            const cairn__plan_node *to, size_t nto, double start, double end);
/* Sets s->makespan to the latest end (0 when empty). */
void cairn__plan_schedule_finish(cairn__plan_schedule *s);

/* Plan JSON: writes the schedule into a malloc'd NUL-terminated string that
 * the caller frees; NULL when out of memory. */
char *cairn__plan_schedule_to_json(const cairn__plan_schedule *s, const cairn__plan_instance *in);
/* Reads a plan written by cairn__plan_schedule_to_json (or by hand) for
 * instance `in` into *out (initialised here; free with
 * cairn__plan_schedule_free even on failure). */
cairn_status cairn__plan_schedule_parse(const char *json, size_t len, const cairn__plan_instance *in,
                                       cairn__plan_schedule *out, cairn_error *err)
  __attribute__((warn_unused_result));

/* Gantt chart, one row per node that takes part, as a malloc'd SVG string
 * (caller frees); NULL when out of memory or when more than max_rows rows
 * would be drawn. */
char *cairn__plan_schedule_svg(const cairn__plan_schedule *s, const cairn__plan_instance *in,
                              size_t max_rows);

/* ---- the checker -------------------------------------------------------- */

/* Replays schedule s in the model of `in`, independently of the planners:
 * every sender holds the message when it starts, durations and port/busy
 * rules of the model hold, degree and matching bounds hold, CDMD messages are
 * delivered in consecutive rounds, and everyone who must receive does. On
 * success *makespan (if not NULL) is the recomputed makespan. On failure
 * CAIRN_EINVAL with a line naming the first offending transfer. */
cairn_status cairn__plan_check(const cairn__plan_instance *in, const cairn__plan_schedule *s,
                              double *makespan, cairn_error *err)
  __attribute__((warn_unused_result));

/* ---- planners ----------------------------------------------------------- */

/* Lower bound on the optimal makespan of `in` in its model (see each
 * planner file for the theorem). */
double cairn__plan_lower_bound(const cairn__plan_instance *in);

/* Runs algorithm `algo` (names: docs/planning.md, cairn__plan_algorithms) on
 * `in`, filling *out (initialised here; free with cairn__plan_schedule_free
 * even on failure) including makespan and lower bound. */
cairn_status cairn__plan_run(const cairn__plan_instance *in, const char *algo,
                            cairn__plan_schedule *out, cairn_error *err)
  __attribute__((warn_unused_result));
/* NULL-terminated list of algorithm names for a model. */
const char *const *cairn__plan_algorithms(cairn__plan_model m);

/* [KKW] (plan_lcf.c, plan_postal.c). Compact form of an LCF-family
 * schedule: per-cluster segments in time order, expandable to transfers.
 *   LOCAL  at `start` members j < after-before send to member before+j (1 unit)
 *   GLOBAL at `start` members 0..count-1 each send to member 0 of the next
 *          `count` clusters of dest[] from dest_off */
typedef enum { CAIRN_BCAST_LOCAL = 0, CAIRN_BCAST_GLOBAL = 1 } cairn__bcast_kind;
typedef struct cairn__bcast_seg {
  uint32_t cluster;
  uint32_t kind;
  int64_t start;
  int64_t a; /* LOCAL: holders before; GLOBAL: senders count */
  int64_t b; /* LOCAL: holders after;  GLOBAL: offset in dest[] */
} cairn__bcast_seg;

typedef struct cairn__bcast_compact {
  int postal;
  int64_t C;
  size_t k;
  cairn__bcast_seg *seg;
  size_t nseg, capseg;
  uint32_t *dest;
  size_t ndest, capdest;
  int64_t makespan;
} cairn__bcast_compact;

void cairn__bcast_compact_free(cairn__bcast_compact *c);
/* Expands a compact schedule into transfers (appended to *out). */
cairn_status cairn__bcast_expand(const cairn__bcast_compact *c, cairn__plan_schedule *out,
                                cairn_error *err) __attribute__((warn_unused_result));

/* LCF (§3; multicast §4 when cl->members is set), bounded-degree (§5.1–5.2),
 * bounded-size matching (§5.3–5.4), postal LCF (§6.1) into compact form. */
cairn_status cairn__bcast_lcf(const cairn__plan_clusters *cl, cairn__bcast_compact *out,
                             cairn_error *err) __attribute__((warn_unused_result));
cairn_status cairn__bcast_bounded_degree(const cairn__plan_clusters *cl, cairn__bcast_compact *out,
                                        cairn_error *err) __attribute__((warn_unused_result));
cairn_status cairn__bcast_bounded_matching(const cairn__plan_clusters *cl, cairn__bcast_compact *out,
                                          cairn_error *err) __attribute__((warn_unused_result));
cairn_status cairn__bcast_postal_lcf(const cairn__plan_clusters *cl, cairn__bcast_compact *out,
                                    cairn_error *err) __attribute__((warn_unused_result));
/* Interleaved LCF (§6.2), directly as transfers. */
cairn_status cairn__bcast_interleaved_lcf(const cairn__plan_clusters *cl, cairn__plan_schedule *out,
                                         cairn_error *err) __attribute__((warn_unused_result));

/* Lower bounds of [KKW]: Theorem 3.2 (broadcast), 4.2 (multicast), 5.4
 * (bounded matching), Lemma 5.1 (bounded degree), Lemma 6.4 (postal). */
int64_t cairn__bcast_lower_bound(const cairn__plan_clusters *cl, int postal);
/* p of §3.1: global steps of LCF when local transfers are free (Lemma 3.3). */
int64_t cairn__bcast_global_steps(const cairn__plan_clusters *cl);

/* Exact optimum of a tiny 1/C instance (total nodes <= 8, C <= 6) by
 * exhaustive search, honouring members, degree and B. Returns the optimal
 * makespan, or -1 when the instance is too big. */
int64_t cairn__bcast_optimum(const cairn__plan_clusters *cl);

/* [BSM] §4–5 (plan_grid.c): algo is one of "flat", "FEF", "ECEF", "ECEF-LA",
 * "ECEF-LAt", "ECEF-LAT", "BottomUp". */
cairn_status cairn__plan_grid_run(const cairn__plan_grid *g, const char *algo,
                                 cairn__plan_schedule *out, cairn_error *err)
  __attribute__((warn_unused_result));
double cairn__plan_grid_lower_bound(const cairn__plan_grid *g);

/* [WYL] §4 (plan_hnow.c): algo is one of "FEF", "ECF", "WR", "WRP". */
cairn_status cairn__plan_hnow_run(const cairn__plan_hnow *h, const char *algo,
                                 cairn__plan_schedule *out, cairn_error *err)
  __attribute__((warn_unused_result));
double cairn__plan_hnow_lower_bound(const cairn__plan_hnow *h);

/* [Gon] §3 (plan_cdmd.c): forwarding LH then list schedule LS. */
cairn_status cairn__plan_cdmd_run(const cairn__plan_cdmd *c, cairn__plan_schedule *out,
                                 cairn_error *err) __attribute__((warn_unused_result));
/* d = max(s, r) of §1: the lower bound. */
int64_t cairn__plan_cdmd_degree(const cairn__plan_cdmd *c);

#endif
