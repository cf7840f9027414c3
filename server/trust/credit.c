/* credit.c — the credit a volunteer earns for the CPU time of its valid
 * results (docs/accountability.md, "Credit").
 *
 * A result claims the CPU seconds its worker measured ("cpu_seconds").
 * When a task's quorum is reached, its agreed claim is the lowest claim
 * among the results that agree with the canonical one (results without a
 * claim are left out; none: 0); with replication 1 it is the one result's
 * claim. Every result of the task that is valid is granted that credit,
 * including replicas judged valid later; a result that is not valid has
 * none. A volunteer's totals (credit, CPU seconds and number of its valid
 * results) move whenever one of its results becomes valid or stops being
 * valid (a ban, a new round), and are written with the change, so they
 * survive restarts and the deletion of the jobs that earned them. The team
 * the volunteer is in when a result becomes valid keeps that credit (the
 * team ledger, team.c), as does the account the volunteer is attached to
 * (docs/accountability.md, "Accounts"). Hosts, accounts and teams also
 * keep an exponentially averaged credit (cairn__expavg_update, after
 * BOINC's update_average: docs/references.md [BOINC-credit]), which grows
 * with each grant and decays with a half-life of a week; a loss leaves it.
 * Everything here runs under c->lock.
 */
#include <math.h>

#define CAIRN__LN2 0.69314718055994530942
#include <stdlib.h>

#include "server/trust/trust.h"
#include "server/store/journal.h"
#include "server/trust/validate.h"

void cairn__credit_grant(const mjob *j, mrep *r, const mres *cn) {
  double agreed = -1;
  for (uint32_t i = 0; i < r->nres; i++) {
    const mres *m = &r->res[i];
    if (!m->ok || m->claim < 0 || (m != cn && cairn__valid_outcome(j, r, cn, m) != OUT_VALID))
      continue;
    if (agreed < 0 || m->claim < agreed)
      agreed = m->claim;
  }
  for (uint32_t i = 0; i < r->nres; i++)
    if (r->res[i].outcome != OUT_VALID) /* a valid one keeps what it was granted */
      r->res[i].credit = agreed < 0 ? 0 : agreed;
}

void cairn__credit_late(const mtask *t, mres *m) {
  for (uint32_t i = 0; t->rep && i < t->rep->nres; i++)
    if (t->rep->res[i].idx == t->accepted && &t->rep->res[i] != m) {
      m->credit = t->rep->res[i].credit;
      return;
    }
}

void cairn__credit_join(mvol *v, char *team) {
  free(v->team);
  v->team = team;
}

void cairn__credit_claim(mres *m, int has_cpu, double cpu_seconds) {
  m->claim = has_cpu ? cpu_seconds : -1;
}

int cairn__credit_load_vol(mvol *v, const char *team, double credit, double cpu_seconds,
                           int64_t credited, double expavg, double expavg_time) {
  v->expavg = expavg;
  v->expavg_time = expavg_time;
  if (team && !(v->team = cairn__strdup(team)))
    return -1;
  v->credit = credit;
  v->cpu_seconds = cpu_seconds;
  v->credited = credited;
  return 0;
}

void cairn__credit_load_res(cairn__core *c, mres *m, double claim, double credit,
                            const char *team, int valid) {
  m->claim = claim;
  m->credit = credit;
  m->team = valid && team ? cairn__team_find(c, team) : NULL; /* team.c */
}

void cairn__credit_tally(int64_t *n, double *credit, double *cpu, const mres *m, int delta) {
  *n += delta;
  *credit += delta * m->credit;
  *cpu += delta * (m->claim > 0 ? m->claim : 0);
  if (*n <= 0) /* none left: no rounding residue either */
    *n = 0, *credit = *cpu = 0;
  *credit = *credit < 0 ? 0 : *credit;
  *cpu = *cpu < 0 ? 0 : *cpu;
}

void cairn__expavg_update(double now, double work_start, double work, double half_life,
                          double *avg, double *avg_time) {
  const double day = 86400.0;
  if (*avg_time > 0) {
    double diff = now > *avg_time ? now - *avg_time : 0;
    double weight = exp(-diff * CAIRN__LN2 / half_life);
    *avg *= weight;
    if (1 - weight > 1e-6)
      *avg += (1 - weight) * work / (diff / day); /* the work spread over the time since */
    else
      *avg += CAIRN__LN2 * work * day / half_life; /* the limit as the time since goes to 0 */
  } else if (work != 0) {
    double days = (now - work_start) / day;
    *avg = work / (days > 1 ? days : 1);
  }
  *avg_time = now;
}

double cairn__expavg_at(double now, double avg, double avg_time) {
  if (avg_time > 0)
    cairn__expavg_update(now, now, 0, CAIRN__EXPAVG_HALF_LIFE, &avg, &avg_time);
  return avg;
}

/* The account a of m's volunteer: its totals move as the volunteer's do,
 * journaled in the same group. O(1). */
static void account_count(cairn__core *c, macct *a, const mres *m, int delta, double now) {
  cairn__credit_tally(&a->results, &a->credit, &a->cpu_seconds, m, delta);
  if (delta > 0)
    cairn__expavg_update(now, (double)a->created, m->credit, CAIRN__EXPAVG_HALF_LIFE,
                         &a->expavg, &a->expavg_time);
  cairn__store_account_row row = {.id = a->id, .credit = a->credit,
                                 .cpu_seconds = a->cpu_seconds, .results = a->results,
                                 .expavg = a->expavg, .expavg_time = a->expavg_time};
  cairn__journal_put(c->journal, cairn__jrec_account_credit(&row));
}

void cairn__credit_count(cairn__core *c, mvol *v, mres *m, int delta) {
  double now = (double)cairn__now();
  cairn__credit_tally(&v->credited, &v->credit, &v->cpu_seconds, m, delta);
  if (delta > 0)
    cairn__expavg_update(now, (double)v->created, m->credit, CAIRN__EXPAVG_HALF_LIFE,
                         &v->expavg, &v->expavg_time);
  cairn__store_credit_row row = {.idx = m->idx, .vol = v->id, .claim = -1,
                                .result_credit = delta > 0 ? m->credit : 0,
                                .credit = v->credit, .cpu_seconds = v->cpu_seconds,
                                .credited = v->credited, .expavg = v->expavg,
                                .expavg_time = v->expavg_time};
  cairn__journal_put(c->journal, cairn__jrec_credit(&row)); /* with the change */
  cairn__team_count(c, m, v->team, delta); /* O(1): the team it was earned in keeps it */
  if (v->account) /* O(1): its account's totals move with its own */
    account_count(c, v->account, m, delta, now);
}

cairn_status cairn__core_stats(cairn__core *c, int limit,
                               int (*cb)(void *, const cairn__store_stats_row *), void *ud,
                               cairn_error *err) {
  return cairn__store_stats(c->store, limit, cb, ud, err);
}
