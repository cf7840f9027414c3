/* trust.h — the trust layer's functions over the model (server/model/):
 * quarantine (quarantine.c), credit (credit.c), the team ledger (team.c)
 * and adaptive replication (trust.c); validation has its own header
 * (validate.h). All run under c->lock unless said otherwise; they call the
 * core back only through c->calls (model.h). Private to server/. */
#ifndef CAIRN_SERVER_TRUST_H
#define CAIRN_SERVER_TRUST_H

#include "server/model/state.h"

/* Quarantine's own state (quarantine.c; c->quar): its thresholds, the
 * fractions of the window invalid and errors (0: that test is off; set
 * before serving), and its counters. */
typedef struct cairn__quar {
  double invalid, errors;
  uint64_t total, now; /* volunteers quarantined since start; quarantined now */
} cairn__quar;
/* Makes c->quar (both tests off). 0, or -1 out of memory. */
int cairn__quar_open(cairn__core *c);
void cairn__quar_close(cairn__core *c);
/* Sets the thresholds (before serving; 0: that test is off). */
void cairn__quar_configure(cairn__core *c, double invalid, double errors);
/* A volunteer read from the store at start-up was quarantined. */
void cairn__quar_load(cairn__core *c, mvol *v, int quarantined);
/* v is banned: a ban supersedes its quarantine. O(1). */
void cairn__quar_drop(cairn__core *c, mvol *v);
/* The volunteers quarantined now and since start (/metrics). */
void cairn__quar_counts(const cairn__core *c, uint64_t *now, uint64_t *total);

/* Adaptive replication's own state (trust.c; c->trust): the rule's
 * parameters (set before serving), its random state, its counters, and the
 * volunteers whose re-check is due when the current request ends (each
 * once, mvol.trust_due). */
typedef struct cairn__trust {
  int64_t threshold;
  double spot_check;
  uint64_t rng;
  uint64_t unreplicated_total, spot_checks_total, resets_total, rechecks_total;
  mvol **due;
  size_t ndue, capdue;
} cairn__trust;
/* Makes c->trust with the default rule. 0, or -1 out of memory. */
int cairn__trust_open(cairn__core *c);
void cairn__trust_close(cairn__core *c);
/* The rule's parameters (before serving): the valid replicated results in
 * a row that make a volunteer trusted (>= 1), the chance a trusted
 * volunteer's task is replicated anyway (0 to 1). */
void cairn__trust_set_threshold(cairn__core *c, int64_t threshold);
void cairn__trust_set_spot_check(cairn__core *c, double spot_check);
/* Seeds the spot checks' draws (benchmarks and tests repeat a run). */
void cairn__trust_seed(cairn__core *c, uint64_t seed);
/* 1 when v is trusted: not banned and its trust reaches the threshold. */
int cairn__trust_trusted(const cairn__core *c, const mvol *v);
/* A volunteer read from the store at start-up had trust (0 when banned). */
void cairn__trust_load_vol(mvol *v, int64_t trust);
/* Counters for /metrics: unreplicated results, spot checks, trust resets,
 * re-checked results. */
void cairn__trust_counts(const cairn__core *c, uint64_t out[4]);

/* quarantine.c: a volunteer whose share of invalid results (or errors)
 * over its last CAIRN__QUAR_WINDOW results, once it has at least
 * CAIRN__QUAR_MIN, exceeds c->quar_invalid (c->quar_errors) gets no new
 * task until released; nothing is recomputed. cairn__quar_note records v's
 * final outcome (under the lock, O(1)); cairn__quar_crossed is the test
 * (bad > threshold × seen, seen >= CAIRN__QUAR_MIN, threshold > 0).
 * cairn__core_release ends a quarantine and empties the window (takes the
 * lock; CAIRN_ENOTFOUND, CAIRN_ECONFLICT when it is not quarantined). */
void cairn__quar_note(cairn__core *c, mvol *v, int outcome);
/* credit.c (docs/accountability.md, "Credit"), each under the lock:
 * cairn__credit_grant: the task's quorum was reached with canonical result
 * cn; sets the credit of each of r's results to the agreed claim (the
 * lowest claim among the results that agree with cn; 0 when none claims).
 * O(results of the round). cairn__credit_late: m arrived for task t
 * already DONE: it gets the accepted result's credit. O(results of the
 * round). cairn__credit_count: m's outcome OUT_VALID was added (delta +1)
 * or removed (-1): v's totals move by m's credit and claim, journaled with
 * the result. O(1). */
void cairn__credit_grant(const mjob *j, mrep *r, const mres *cn);
void cairn__credit_late(const mtask *t, mres *m);
void cairn__credit_count(cairn__core *c, mvol *v, mres *m, int delta);
/* What credit keeps of a volunteer and a result, set only here: v's team
 * becomes team (owned, taken; NULL: none; the old one freed), and a result
 * m's claim (has_cpu 0: none). O(1). */
void cairn__credit_join(mvol *v, char *team);
void cairn__credit_claim(mres *m, int has_cpu, double cpu_seconds);
/* Start-up: a volunteer's team and totals (0, or -1 out of memory), and a
 * result's claim, credit and, when valid, the team it counts for. O(1). */
int cairn__credit_load_vol(mvol *v, const char *team, double credit, double cpu_seconds,
                           int64_t credited, double expavg, double expavg_time);
void cairn__credit_load_res(cairn__core *c, mres *m, double claim, double credit,
                            const char *team, int valid);
/* The one rule for a total of valid results (a volunteer's, a team's):
 * *n, *credit and *cpu move by delta times one result, m's credit and its
 * claim; none left means no rounding residue, and sums never go below 0. */
void cairn__credit_tally(int64_t *n, double *credit, double *cpu, const mres *m, int delta);
/* The exponentially averaged credit of a host, an account or a team
 * (docs/accountability.md, "Accounts"; BOINC's update_average,
 * docs/references.md [BOINC-credit]): *avg, credit per day, as of
 * *avg_time (Unix seconds; 0: never), decays with half_life seconds and
 * gains work (credit granted at now; 0: only the decay); an average with
 * no time yet starts as work over the days since work_start (at least
 * one). *avg_time becomes now. Pure: O(1). */
#define CAIRN__EXPAVG_HALF_LIFE (7.0 * 86400.0)
void cairn__expavg_update(double now, double work_start, double work, double half_life,
                          double *avg, double *avg_time);
/* The average as it stands at now (a copy decayed without work). */
double cairn__expavg_at(double now, double avg, double avg_time);
/* team.c, the team ledger (docs/accountability.md, "Teams"): a team's sums
 * of the credit, claims and number of the valid results granted while
 * their volunteer was in it; entries live as long as the core (one per team
 * that ever earned credit, found by a hash of its name). Under the lock:
 * cairn__team_count: m's credit counts for team (delta +1; NULL: none) or
 * stops counting for the team it counted for (-1), journaled. O(1)
 * (a hash look-up). cairn__team_load: a ledger row at start-up (-1: out of
 * memory); cairn__teams_free at close. */
typedef struct mteam {
  struct mteam *next; /* another name of the same hash */
  char *name;
  double credit, cpu_seconds;
  int64_t results;
  double expavg, expavg_time; /* its exponentially averaged credit (credit.c) */
} mteam;
/* The ledger's own state (team.c; c->teams): the teams by a hash of their
 * name, names of one hash in a list. */
typedef struct cairn__teams {
  cairn__hmap map;
} cairn__teams;
/* Makes c->teams, empty. 0, or -1 out of memory. cairn__teams_free frees it. */
int cairn__teams_open(cairn__core *c);
void cairn__team_count(cairn__core *c, mres *m, const char *team, int delta);
int cairn__team_load(void *ud, const cairn__store_team_row *r);
mteam *cairn__team_find(cairn__core *c, const char *name);
/* name (a volunteer's team from now) gets its entry, with nothing in it,
 * when it has none, as the store gives it its row (S_TEAM_NEW): the names
 * in use are the ledger's, which a team of accounts may not take
 * (core/teams.h). 0, or -1 out of memory. O(1). */
int cairn__team_note(cairn__core *c, const char *name);
void cairn__teams_free(cairn__core *c);
int cairn__quar_crossed(unsigned seen, unsigned bad, double threshold);
cairn_status cairn__core_release(cairn__core *c, int64_t id, cairn_error *err);

/* ---- trust.c: adaptive replication (docs/accountability.md, "Adaptive
 * replication"); all under c->lock ---- */
/* The defaults of the rule's parameters. */
#define CAIRN_DEFAULT_TRUST_THRESHOLD 10
#define CAIRN_DEFAULT_SPOT_CHECK 0.1
/* The unreplicated accepted results a volunteer keeps for a re-check. */
#define CAIRN__TRUST_RING 32
/* Called when task t's round gets its first copy, on v (after it is
 * recorded): 1 when that copy runs alone (j adaptive, t never re-queued,
 * v trusted, and no spot check drawn). O(1). */
int cairn__trust_solo(cairn__core *c, const mjob *j, const mtask *t, const mvol *v);
/* Whether r's round still runs once when v's result arrives (ok: its exit
 * status was 0): not when it failed, nor when v lost its trust meanwhile;
 * the round is then replicated to the quorum. O(1). */
int cairn__trust_solo_stands(const cairn__core *c, const mrep *r, const mvol *v, int ok);
/* v's result m got final outcome (valid or invalid): a valid replicated
 * one adds to its trust, an invalid one resets it and makes a re-check due
 * (cairn__trust_flush). O(1). */
void cairn__trust_note(cairn__core *c, mvol *v, const mres *m, int outcome);
/* A lease of v lapsed unreturned: its trust goes back to 0 (journaled when
 * it had any), so its next results are replicated again; its accepted
 * results are not re-checked (a lapse is no evidence against them). O(1). */
void cairn__trust_lapsed(cairn__core *c, mvol *v);
/* Task task of j was accepted on its solo result cn: it joins its
 * volunteer's ring (the oldest entry leaves a full ring). O(1). */
void cairn__trust_accepted(cairn__core *c, mjob *j, uint32_t task, const mres *cn);
/* Re-checks the rings of the volunteers whose trust reset in this request:
 * each entry still accepted is re-queued with what consumed it
 * (cairn__core_requeue), and the ring empties. Called by the request once
 * its own result is applied. O(ring + the re-queue's cost) a volunteer. */
void cairn__trust_flush(cairn__core *c);
/* An eligible task t (position v) of an adaptive job whose round already
 * has a copy out or a result goes to j's urgent ring instead of the
 * policy's ready set, so that a round's copies go out together and its
 * verdict (a spot check's, or the one that earns trust) comes soon: 1 when
 * it did (t->queued set), 0 to leave it to the policy. O(1). */
int cairn__trust_enqueue(mjob *j, mtask *t, uint32_t v);
/* Takes the oldest task of j's urgent ring into *v while *budget lasts
 * (one a take): 1, or 0 when none (the policy picks then). Entries made
 * stale by a re-queue (cairn__core_requeue) or an acceptance are skipped:
 * O(1) amortized, each entry skipped once. */
int cairn__trust_pick(mjob *j, uint32_t *v, unsigned *budget);
/* Adds a ring entry read from the store (load.c). 0, or -1 out of memory. */
int cairn__trust_load(cairn__core *c, const cairn__store_trust_row *r);
/* Frees v's ring. */
void cairn__trust_free(mvol *v);
/* The credit standings from the store's reader (cairn__store_stats; never
 * takes c->lock). */
cairn_status cairn__core_stats(cairn__core *c, int limit,
                               int (*cb)(void *, const cairn__store_stats_row *), void *ud,
                               cairn_error *err);

#endif
