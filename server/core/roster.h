/* roster.h — copies of the people and jobs the public pages rank and count
 * (server/api/ranks.c builds its rendering from them): accounts, teams of
 * accounts, hosts (volunteers) and jobs, a slice at a time, each slice
 * under one hold of c->lock. Private to server/.
 *
 * Bound: one call copies at most n rows (the caller's slice, at most
 * CAIRN__ROSTER_SLICE), O(n + their names' bytes) under c->lock; a rebuild
 * of the whole is many short holds, never one that grows with the
 * population. */
#ifndef CAIRN_CORE_ROSTER_H
#define CAIRN_CORE_ROSTER_H

#include <stddef.h>
#include <stdint.h>

#include "server/model/state.h"
#include "server/store/store_people.h"

#define CAIRN__ROSTER_SLICE 1024u

enum { CAIRN__ROSTER_ACCOUNTS, CAIRN__ROSTER_TEAMS, CAIRN__ROSTER_HOSTS };

/* One account, team or host (strings malloc'd; cairn__roster_free). */
typedef struct cairn__roster_row {
  int64_t id;
  char *name;
  double credit, recent;   /* its credit, and its averaged credit as of now */
  int64_t team;            /* accounts, hosts: its team of accounts (0: none) */
  char *team_name;
  int64_t account;         /* hosts: its account (0: none) */
  char *account_name;
  int64_t members;         /* teams: its accounts */
  int64_t last_seen;       /* hosts */
  int banned;              /* hosts */
} cairn__roster_row;

/* One job (its name malloc'd; state static). */
typedef struct cairn__roster_job {
  int64_t id;
  char *name;
  const char *state;
  int64_t tasks, done;
} cairn__roster_job;

/* Copies the rows of kind at positions [from, from + n) of its table (ids
 * from + 1 ...; a position with nothing is skipped) into out: how many it
 * filled, *end the position after the last looked at (the table's size
 * reached: *end < from + n). -1 out of memory (nothing kept). One hold of
 * c->lock. */
long cairn__core_roster(cairn__core *c, int kind, size_t from, size_t n, double now,
                        cairn__roster_row *out, size_t *end);
/* The same for the jobs not deleted. */
long cairn__core_roster_jobs(cairn__core *c, size_t from, size_t n, cairn__roster_job *out,
                             size_t *end);
void cairn__roster_free(cairn__roster_row *r);

/* The store's reads for the public pages (store_people.h), on its reader
 * connection, never under c->lock: team's first limit members by credit
 * (O(log A + limit)), and volunteer vol's newest limit results. */
cairn_status cairn__core_team_top(cairn__core *c, int64_t team, int limit,
                                  int (*cb)(void *, const cairn__store_member_top *), void *ud,
                                  cairn_error *err);
cairn_status cairn__core_host_results(cairn__core *c, int64_t vol, int limit,
                                      int (*cb)(void *, const cairn__store_host_result *),
                                      void *ud, cairn_error *err);

#endif
