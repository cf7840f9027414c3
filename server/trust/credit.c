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
 * team ledger, team.c).
 * Everything here runs under c->lock.
 */
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
                           int64_t credited) {
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

void cairn__credit_count(cairn__core *c, mvol *v, mres *m, int delta) {
  cairn__credit_tally(&v->credited, &v->credit, &v->cpu_seconds, m, delta);
  cairn__store_credit_row row = {.idx = m->idx, .vol = v->id, .claim = -1,
                                .result_credit = delta > 0 ? m->credit : 0,
                                .credit = v->credit, .cpu_seconds = v->cpu_seconds,
                                .credited = v->credited};
  cairn__journal_put(c->journal, cairn__jrec_credit(&row)); /* with the change */
  cairn__team_count(c, m, v->team, delta); /* O(1): the team it was earned in keeps it */
}

cairn_status cairn__core_stats(cairn__core *c, int limit,
                               int (*cb)(void *, const cairn__store_stats_row *), void *ud,
                               cairn_error *err) {
  return cairn__store_stats(c->store, limit, cb, ud, err);
}
