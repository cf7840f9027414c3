/* store_team.c — the store's side of the team ledger (0018_team_ledger.sql,
 * docs/accountability.md "Teams"): each team's credit totals, and the team
 * each valid result's credit counts for. Writes run on the writer
 * connection, inside the commit thread's transaction, in the group of the
 * credit change they come with; the load runs at start-up. */
#include "server/store/store.h"
#include "server/store/store_int.h"

cairn_status cairn__store_team_credit(cairn__store *s, const cairn__store_team_row *r,
                                     cairn_error *err) {
  sqlite3_stmt *q = Q(S_TEAM_PUT);
  TXT(q, 1, r->team);
  sqlite3_bind_double(q, 2, r->credit);
  sqlite3_bind_double(q, 3, r->cpu_seconds);
  sqlite3_bind_int64(q, 4, r->results);
  cairn_status st = run(s, S_TEAM_PUT, err);
  if (st == CAIRN_OK && r->granted) { /* its average moves with grants only */
    q = Q(S_TEAM_EXPAVG);
    TXT(q, 1, r->team);
    sqlite3_bind_double(q, 2, r->expavg);
    sqlite3_bind_double(q, 3, r->expavg_time);
    st = run(s, S_TEAM_EXPAVG, err);
  }
  return st != CAIRN_OK || r->idx <= 0 ? st : cairn__store_result_team(s, r, err);
}

cairn_status cairn__store_result_team(cairn__store *s, const cairn__store_team_row *r,
                                     cairn_error *err) {
  sqlite3_stmt *q = Q(S_RESULT_TEAM);
  sqlite3_bind_int64(q, 1, r->idx);
  if (r->granted)
    TXT(q, 2, r->team); /* else NULL: its credit counts for no team */
  return run(s, S_RESULT_TEAM, err);
}

cairn_status cairn__store_load_teams(cairn__store *s, int (*cb)(void *, const cairn__store_team_row *),
                                    void *ud, cairn_error *err) {
  sqlite3_stmt *q = Q(S_LOAD_TEAMS);
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    cairn__store_team_row row = {.team = STR(0), .credit = sqlite3_column_double(q, 1),
                                .cpu_seconds = sqlite3_column_double(q, 2), .results = I64(3),
                                .expavg = sqlite3_column_double(q, 4),
                                .expavg_time = sqlite3_column_double(q, 5)};
    if (row.team && cb(ud, &row)) {
      sqlite3_reset(q);
      return cairn__error_set(err, CAIRN_ENOMEM, "store: out of memory loading the team ledger");
    }
  }
  sqlite3_reset(q);
  return rc == SQLITE_DONE ? CAIRN_OK : db_err(s, s->w, err, cairn__store_sql[S_LOAD_TEAMS]);
}
