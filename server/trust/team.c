/* team.c — the team ledger (docs/accountability.md, "Teams"): the credit a
 * volunteer is granted while it is in a team counts for that team for good.
 *
 * Each team that ever earned credit has an mteam (its name and the sums of
 * the credit, claims and number of the valid results granted for it), in
 * c->teams->map by a 64-bit hash of its name (cairn__hash_app), names of one
 * hash in a list. A result's credit counts for the team its volunteer was in
 * when the result became valid (m->team); when it stops being valid (a ban, a
 * new round) the credit is taken from that team, wherever the volunteer is by
 * then. A team change moves nothing. Each change is journaled right after the
 * volunteer's credit record of the same change (credit.c), so both are in one
 * group and one transaction: the team's totals (table team_credit) and the
 * result's team (results.team), restored by load.c at start-up.
 *
 * Memory: one mteam per team that ever earned credit, freed at close.
 * Everything here runs under c->lock but the load (before serving).
 */
#include <stdlib.h>
#include <string.h>

#include "server/trust/trust.h"
#include "server/store/journal.h"

mteam *cairn__team_find(cairn__core *c, const char *name) {
  for (mteam *t = cairn__hmap_get(&c->teams->map, cairn__hash_app(name)); t; t = t->next)
    if (strcmp(t->name, name) == 0)
      return t;
  return NULL;
}

/* Team name's entry, made (with zero totals) when it has none; NULL when
 * out of memory. O(1) but for the names of one hash. */
static mteam *team_get(cairn__core *c, const char *name) {
  mteam *t = cairn__team_find(c, name);
  if (t)
    return t;
  uint64_t k = cairn__hash_app(name);
  if (!(t = calloc(1, sizeof *t)) || !(t->name = cairn__strdup(name))) {
    free(t);
    return NULL;
  }
  t->next = cairn__hmap_get(&c->teams->map, k);
  if (cairn__hmap_put(&c->teams->map, k, t)) {
    free(t->name);
    free(t);
    return NULL;
  }
  return t;
}

int cairn__team_note(cairn__core *c, const char *name) { return team_get(c, name) ? 0 : -1; }

void cairn__team_count(cairn__core *c, mres *m, const char *team, int delta) {
  mteam *t = delta > 0 ? (team ? team_get(c, team) : NULL) : m->team;
  if (delta > 0 && team && !t)
    CAIRN_WARN(&c->log, "out of memory: result %lld's credit is not counted for team \"%s\"",
               (long long)m->idx, team);
  m->team = delta > 0 ? t : NULL;
  if (!t)
    return;
  cairn__credit_tally(&t->results, &t->credit, &t->cpu_seconds, m, delta);
  if (delta > 0) { /* a team's average starts from its first grant's day */
    double now = (double)cairn__now();
    cairn__expavg_update(now, now, m->credit, CAIRN__EXPAVG_HALF_LIFE, &t->expavg,
                         &t->expavg_time);
  }
  cairn__store_team_row row = {.idx = m->idx, .team = t->name, .credit = t->credit,
                              .cpu_seconds = t->cpu_seconds, .results = t->results,
                              .granted = delta > 0, .expavg = t->expavg,
                              .expavg_time = t->expavg_time};
  cairn__journal_put(c->journal, cairn__jrec_team_credit(&row));
}

int cairn__team_load(void *ud, const cairn__store_team_row *r) {
  mteam *t = team_get(ud, r->team);
  if (!t)
    return -1;
  t->credit = r->credit;
  t->cpu_seconds = r->cpu_seconds;
  t->results = r->results;
  t->expavg = r->expavg;
  t->expavg_time = r->expavg_time;
  return 0;
}

int cairn__teams_open(cairn__core *c) {
  if (!(c->teams = calloc(1, sizeof *c->teams)))
    return -1;
  cairn__hmap_init(&c->teams->map);
  return 0;
}

void cairn__teams_free(cairn__core *c) {
  if (!c->teams)
    return;
  cairn__hmap *map = &c->teams->map;
  for (size_t i = 0; i < map->cap; i++)
    for (mteam *t = map->keys[i] ? map->vals[i] : NULL, *next; t; t = next) {
      next = t->next;
      free(t->name);
      free(t);
    }
  cairn__hmap_free(map);
  free(c->teams);
  c->teams = NULL;
}
