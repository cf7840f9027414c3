/* roster.c — slices of accounts, teams, hosts and jobs copied for the
 * public pages' rendering (roster.h). */
#include "server/core/roster.h"

#include <stdlib.h>
#include <string.h>

#include "server/base/util.h"
#include "server/core/accounts.h"
#include "server/core/teams.h"
#include "server/trust/trust.h"

void cairn__roster_free(cairn__roster_row *r) {
  free(r->name);
  free(r->team_name);
  free(r->account_name);
}

/* A copy of s (NULL: NULL) into *dst: 0, or -1 out of memory. */
static int dup(char **dst, const char *s) {
  *dst = s ? cairn__strdup(s) : NULL;
  return s && !*dst ? -1 : 0;
}

/* r from account a (under the lock). */
static int from_account(cairn__roster_row *r, const macct *a, double now) {
  r->id = a->id;
  r->credit = a->credit;
  r->recent = cairn__expavg_at(now, a->expavg, a->expavg_time);
  r->team = a->team ? a->team->id : 0;
  return dup(&r->name, a->name) | dup(&r->team_name, a->team ? a->team->name : NULL);
}

static int from_team(cairn__core *c, cairn__roster_row *r, const macteam *t, double now) {
  const mteam *l = cairn__team_find(c, t->key); /* its ledger's totals */
  r->id = t->id;
  r->members = t->members;
  r->credit = l ? l->credit : 0;
  r->recent = l ? cairn__expavg_at(now, l->expavg, l->expavg_time) : 0;
  return dup(&r->name, t->name);
}

static int from_host(cairn__roster_row *r, const mvol *v, double now) {
  const macct *a = v->account;
  r->id = v->id;
  r->credit = v->credit;
  r->recent = cairn__expavg_at(now, v->expavg, v->expavg_time);
  r->last_seen = v->last_seen;
  r->banned = v->banned != 0;
  r->account = a ? a->id : 0;
  r->team = a && a->team ? a->team->id : 0;
  return dup(&r->name, v->name) | dup(&r->account_name, a ? a->name : NULL) |
         dup(&r->team_name, a && a->team ? a->team->name : NULL);
}

long cairn__core_roster(cairn__core *c, int kind, size_t from, size_t n, double now,
                        cairn__roster_row *out, size_t *end) {
  long got = 0;
  int bad = 0;
  size_t pos = from;
  pthread_mutex_lock(&c->lock); /* O(n): one slice */
  for (; pos < from + n && !bad; pos++) {
    cairn__roster_row *r = &out[got];
    memset(r, 0, sizeof *r);
    if (kind == CAIRN__ROSTER_HOSTS) {
      if (pos >= c->nvols)
        break;
      if (!c->vols[pos])
        continue;
      bad = from_host(r, c->vols[pos], now);
    } else if (kind == CAIRN__ROSTER_ACCOUNTS) {
      const macct *a = cairn__accounts_find(c, (int64_t)pos + 1);
      if (!a)
        break; /* ids are dense: the end */
      bad = from_account(r, a, now);
    } else {
      const macteam *t = cairn__acteams_find(c, (int64_t)pos + 1);
      if (!t)
        break;
      bad = from_team(c, r, t, now);
    }
    got++;
  }
  cairn__core_unlock(c);
  *end = pos;
  if (!bad)
    return got;
  for (long i = 0; i < got; i++)
    cairn__roster_free(&out[i]);
  return -1;
}

long cairn__core_roster_jobs(cairn__core *c, size_t from, size_t n, cairn__roster_job *out,
                             size_t *end) {
  long got = 0;
  int bad = 0;
  size_t pos = from;
  pthread_mutex_lock(&c->lock); /* O(n): one slice */
  for (; pos < from + n && pos < c->njobs && !bad; pos++) {
    const mjob *j = c->jobs[pos];
    if (!j)
      continue; /* deleted */
    out[got] = (cairn__roster_job){.id = j->id, .state = cairn__jstate_name[j->state],
                                   .tasks = j->ntasks, .done = j->counts[TS_DONE]};
    bad = dup(&out[got].name, j->name);
    got++;
  }
  cairn__core_unlock(c);
  *end = pos;
  if (!bad)
    return got;
  for (long i = 0; i < got; i++)
    free(out[i].name);
  return -1;
}

cairn_status cairn__core_team_top(cairn__core *c, int64_t team, int limit,
                                  int (*cb)(void *, const cairn__store_member_top *), void *ud,
                                  cairn_error *err) {
  return cairn__store_team_top(c->store, team, limit, cb, ud, err);
}

cairn_status cairn__core_host_results(cairn__core *c, int64_t vol, int limit,
                                      int (*cb)(void *, const cairn__store_host_result *),
                                      void *ud, cairn_error *err) {
  return cairn__store_host_results(c->store, vol, limit, cb, ud, err);
}
