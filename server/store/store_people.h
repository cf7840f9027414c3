/* store_people.h — the store's side of teams of accounts
 * (0025_teams.sql), of the pages' log-in sessions (0026_sessions.sql) and of
 * accounts' cross-project ids (0030_cpid_time.sql):
 * their journal records, their loads at start-up and the two reads the
 * public pages make (store_people.c). Private to server/.
 *
 * Records: one constructor per change, each copying what it is given
 * (journal.h's rule); they are written by the commit thread in the group
 * of the change they come with. Loads run on the writer connection before
 * serving; reads on the reader connection under its lock. */
#ifndef CAIRN_STORE_PEOPLE_H
#define CAIRN_STORE_PEOPLE_H

#include <stdint.h>

#include "server/store/journal.h"
#include "server/store/store.h"

/* A team of accounts' row (table teams): key, its name in the team ledger,
 * never changes; the others may (the founder's PATCH). */
typedef struct cairn__store_teamof_row {
  int64_t id, founder, created;
  const char *key, *name, *description, *url, *country;
} cairn__store_teamof_row;

/* An account's team (0: none) and country ("": none), at start-up. */
typedef struct cairn__store_member_row {
  int64_t account, team;
  const char *country;
} cairn__store_member_row;

/* A session: the SHA-256 of its token (hex), its account, its CSRF token,
 * when it was made and when it expires (Unix seconds). */
typedef struct cairn__store_session_row {
  int64_t account, created, expires;
  const char *token_hash, *csrf;
} cairn__store_session_row;

/* ---- journal records (strings copied; NULL only when out of memory) ---- */
/* A new team's row (fresh: insert), or a team's name, description, url
 * and country changed (update; key, founder and created unchanged). */
cairn__jrec *cairn__jrec_teamof(const cairn__store_teamof_row *row, int fresh);
/* Account account is in team (0: none) from now. */
cairn__jrec *cairn__jrec_account_team(int64_t account, int64_t team);
/* A new session's row; a session's row deleted (a log-out, its expiry, or
 * its account's oldest dropped). */
cairn__jrec *cairn__jrec_session(const cairn__store_session_row *row);
cairn__jrec *cairn__jrec_session_drop(const char *token_hash);
/* Account account's cross-project id is cpid (32 hex digits), made at
 * time (an older account's, adopted: docs/project.md, "Cross-project ids"). */
cairn__jrec *cairn__jrec_account_cpid(int64_t account, const char *cpid, int64_t time);

/* What jrec.c needs of these records: the kind J_PEOPLE carries one. */
struct cairn__prec;
cairn_status cairn__prec_apply(cairn__store *s, const struct cairn__prec *p, cairn_error *err);
void cairn__prec_free(struct cairn__prec *p);

/* ---- start-up (writer connection, before serving); cb returns non-zero
 * to stop with CAIRN_ENOMEM ---- */
/* Every team of accounts, by id. */
cairn_status cairn__store_load_teamsof(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_teamof_row *),
                                      void *ud, cairn_error *err);
/* Every account in a team or with a country. */
cairn_status cairn__store_load_members(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_member_row *),
                                      void *ud, cairn_error *err);
/* Deletes the sessions expired at now, then every other one, by account
 * and age (oldest first). */
cairn_status cairn__store_load_sessions(cairn__store *s, int64_t now,
                                       int (*cb)(void *, const cairn__store_session_row *),
                                       void *ud, cairn_error *err);

/* ---- reads (reader connection, under its lock; never c->lock) ---- */
/* The first limit members of team by credit, highest first (index
 * accounts_by_team_credit: O(log A + limit)); expavg as stored, with its
 * time. */
typedef struct cairn__store_member_top {
  int64_t id;
  const char *name;
  double credit, expavg, expavg_time;
} cairn__store_member_top;
cairn_status cairn__store_team_top(cairn__store *s, int64_t team, int limit,
                                  int (*cb)(void *, const cairn__store_member_top *), void *ud,
                                  cairn_error *err);
/* Volunteer vol's newest limit results by allocation, newest first: the
 * unique index allocations(volunteer_id, t) walked backwards, O(limit +
 * the allocations without a result in between) rows. */
typedef struct cairn__store_host_result {
  int64_t idx, job, received;
  const char *task, *outcome;
  double credit;
} cairn__store_host_result;
cairn_status cairn__store_host_results(cairn__store *s, int64_t vol, int limit,
                                      int (*cb)(void *, const cairn__store_host_result *),
                                      void *ud, cairn_error *err);

#endif
