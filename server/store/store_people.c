/* store_people.c — the store's side of teams of accounts and sessions
 * (store_people.h): the records' payloads and how each is written, the
 * loads at start-up and the public pages' two reads. Its statements are
 * its own (pst[], store_int.h), each prepared on its first use: the
 * writer's by the thread that owns the writer (start-up, then the commit
 * thread), the reader's under the reader's lock. */
#include "server/store/store_people.h"
#include "server/store/store_int.h"

#include <stdlib.h>
#include <string.h>

enum pstmt {
  P_TEAM_NEW, P_TEAM_EDIT, P_ACCT_TEAM, P_SESSION_PUT, P_SESSION_DROP, P_ACCT_CPID, /* writes */
  P_LOAD_TEAMS, P_LOAD_MEMBERS, P_SESSIONS_EXPIRE, P_LOAD_SESSIONS,    /* start-up */
  P_TEAM_TOP, P_HOST_RESULTS,                                          /* reader */
  P_COUNT
};
_Static_assert(P_COUNT <= CAIRN__STORE_PEOPLE_STMTS, "store_int.h: room for the statements");

static const char *const psql[P_COUNT] = {
  [P_TEAM_NEW] = "INSERT INTO teams(id, key, name, founder, created, description, url, country) "
                 "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
  [P_TEAM_EDIT] = "UPDATE teams SET name = ?2, description = ?3, url = ?4, country = ?5 "
                  "WHERE id = ?1",
  [P_ACCT_TEAM] = "UPDATE accounts SET team_id = ?2 WHERE id = ?1",
  [P_SESSION_PUT] = "INSERT INTO sessions(token_hash, account_id, csrf, created, expires) "
                    "VALUES (?1, ?2, ?3, ?4, ?5)",
  [P_SESSION_DROP] = "DELETE FROM sessions WHERE token_hash = ?1",
  [P_ACCT_CPID] = "UPDATE accounts SET cross_project_id = ?2, cpid_time = ?3 WHERE id = ?1",
  [P_LOAD_TEAMS] = "SELECT id, key, name, founder, created, description, url, country "
                   "FROM teams ORDER BY id",
  [P_LOAD_MEMBERS] = "SELECT id, COALESCE(team_id, 0), country FROM accounts "
                     "WHERE team_id IS NOT NULL OR country <> ''",
  [P_SESSIONS_EXPIRE] = "DELETE FROM sessions WHERE expires <= ?1",
  [P_LOAD_SESSIONS] = "SELECT token_hash, account_id, csrf, created, expires FROM sessions "
                      "ORDER BY account_id, created",
  [P_TEAM_TOP] = "SELECT id, name, credit, expavg_credit, expavg_time FROM accounts "
                 "WHERE team_id = ?1 ORDER BY credit DESC, id LIMIT ?2",
  [P_HOST_RESULTS] = "SELECT r.idx, t.job_id, t.name, r.outcome, r.credit, r.received "
                     "FROM allocations a JOIN results r ON r.idx = a.idx "
                     "JOIN tasks t ON t.id = r.task_id "
                     "WHERE a.volunteer_id = ?1 ORDER BY a.t DESC LIMIT ?2",
};

/* Statement id, prepared on its connection when first used: NULL with err
 * set when it cannot be. */
static sqlite3_stmt *stmt(cairn__store *s, enum pstmt id, cairn_error *err) {
  return cairn__store_prepared(s, id >= P_TEAM_TOP ? s->r : s->w, &s->pst[id], psql[id], err);
}

/* Runs writer statement q to completion and resets it. */
static cairn_status done(cairn__store *s, sqlite3_stmt *q, enum pstmt id, cairn_error *err) {
  return cairn__store_done(s, q, psql[id], err);
}

/* ---- records ---- */

typedef enum {
  PR_TEAM_NEW, PR_TEAM_EDIT, PR_ACCT_TEAM, PR_SESSION, PR_SESSION_DROP, PR_ACCT_CPID
} prkind;

struct cairn__prec {
  prkind kind;
  int64_t n[4];  /* team: id, founder, created; account team: account, team; session:
                    account, created, expires; cross-project id: account, time */
  char *text[5]; /* team: key, name, description, url, country; session: token hash, csrf;
                    cross-project id: the id */
};

void cairn__prec_free(struct cairn__prec *p) {
  if (!p)
    return;
  for (int i = 0; i < 5; i++)
    free(p->text[i]);
  free(p);
}

/* A payload of kind with n[] and copies of the k strings of src (NULL
 * stays NULL), wrapped in its journal record; NULL when out of memory. */
static cairn__jrec *record(prkind kind, const int64_t n[4], const char *const *src, int k) {
  struct cairn__prec *p = calloc(1, sizeof *p);
  if (!p)
    return NULL;
  p->kind = kind;
  memcpy(p->n, n, sizeof p->n);
  int bad = 0;
  for (int i = 0; i < k; i++)
    bad |= src[i] && !(p->text[i] = strdup(src[i]));
  if (bad) {
    cairn__prec_free(p);
    return NULL;
  }
  return cairn__jrec_people(p);
}

cairn__jrec *cairn__jrec_teamof(const cairn__store_teamof_row *row, int fresh) {
  const int64_t n[4] = {row->id, row->founder, row->created, 0};
  const char *t[5] = {row->key, row->name, row->description, row->url, row->country};
  return record(fresh ? PR_TEAM_NEW : PR_TEAM_EDIT, n, t, 5);
}

cairn__jrec *cairn__jrec_account_team(int64_t account, int64_t team) {
  const int64_t n[4] = {account, team, 0, 0};
  return record(PR_ACCT_TEAM, n, NULL, 0);
}

cairn__jrec *cairn__jrec_session(const cairn__store_session_row *row) {
  const int64_t n[4] = {row->account, row->created, row->expires, 0};
  const char *t[2] = {row->token_hash, row->csrf};
  return record(PR_SESSION, n, t, 2);
}

cairn__jrec *cairn__jrec_account_cpid(int64_t account, const char *cpid, int64_t time) {
  const int64_t n[4] = {account, time, 0, 0};
  return record(PR_ACCT_CPID, n, &cpid, 1);
}

cairn__jrec *cairn__jrec_session_drop(const char *token_hash) {
  const int64_t n[4] = {0};
  return record(PR_SESSION_DROP, n, &token_hash, 1);
}

/* Binds text i + 1 of p (NULL: "") to q's parameter at. */
static void bind_text(sqlite3_stmt *q, int at, const struct cairn__prec *p, int i) {
  TXT(q, at, p->text[i] ? p->text[i] : "");
}

cairn_status cairn__prec_apply(cairn__store *s, const struct cairn__prec *p, cairn_error *err) {
  static const enum pstmt of[] = {[PR_TEAM_NEW] = P_TEAM_NEW, [PR_TEAM_EDIT] = P_TEAM_EDIT,
                                  [PR_ACCT_TEAM] = P_ACCT_TEAM, [PR_SESSION] = P_SESSION_PUT,
                                  [PR_SESSION_DROP] = P_SESSION_DROP,
                                  [PR_ACCT_CPID] = P_ACCT_CPID};
  enum pstmt id = of[p->kind];
  sqlite3_stmt *q = stmt(s, id, err);
  if (!q)
    return err->status;
  switch (p->kind) {
  case PR_TEAM_NEW:
    sqlite3_bind_int64(q, 1, p->n[0]);
    bind_text(q, 2, p, 0);
    bind_text(q, 3, p, 1);
    sqlite3_bind_int64(q, 4, p->n[1]);
    sqlite3_bind_int64(q, 5, p->n[2]);
    for (int i = 2; i < 5; i++)
      bind_text(q, 4 + i, p, i);
    break;
  case PR_TEAM_EDIT:
    sqlite3_bind_int64(q, 1, p->n[0]);
    for (int i = 1; i < 5; i++)
      bind_text(q, 1 + i, p, i);
    break;
  case PR_ACCT_TEAM:
    sqlite3_bind_int64(q, 1, p->n[0]);
    if (p->n[1] > 0)
      sqlite3_bind_int64(q, 2, p->n[1]); /* else NULL: none */
    break;
  case PR_SESSION:
    bind_text(q, 1, p, 0);
    sqlite3_bind_int64(q, 2, p->n[0]);
    bind_text(q, 3, p, 1);
    sqlite3_bind_int64(q, 4, p->n[1]);
    sqlite3_bind_int64(q, 5, p->n[2]);
    break;
  case PR_SESSION_DROP: bind_text(q, 1, p, 0); break;
  case PR_ACCT_CPID:
    sqlite3_bind_int64(q, 1, p->n[0]);
    bind_text(q, 2, p, 0);
    sqlite3_bind_int64(q, 3, p->n[1]);
    break;
  }
  return done(s, q, id, err);
}

/* ---- start-up ---- */

/* cairn__store_each_row on statement id. */
static cairn_status each_row(cairn__store *s, sqlite3 *db, sqlite3_stmt *q, enum pstmt id,
                             int (*row)(sqlite3_stmt *, void *, void *), void *cb, void *ud,
                             const char *what, cairn_error *err) {
  return cairn__store_each_row(s, db, q, psql[id], row, cb, ud, what, err);
}

static int team_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_teamof_row r = {.id = I64(0), .key = STR(1), .name = STR(2), .founder = I64(3),
                              .created = I64(4), .description = STR(5), .url = STR(6),
                              .country = STR(7)};
  int (*f)(void *, const cairn__store_teamof_row *) = cb;
  return !r.key || !r.name || !r.description || !r.url || !r.country || f(ud, &r);
}

cairn_status cairn__store_load_teamsof(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_teamof_row *),
                                      void *ud, cairn_error *err) {
  sqlite3_stmt *q = stmt(s, P_LOAD_TEAMS, err);
  return q ? each_row(s, s->w, q, P_LOAD_TEAMS, team_row, (void *)cb, ud, "the teams", err)
           : err->status;
}

static int member_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_member_row r = {.account = I64(0), .team = I64(1), .country = STR(2)};
  int (*f)(void *, const cairn__store_member_row *) = cb;
  return !r.country || f(ud, &r);
}

cairn_status cairn__store_load_members(cairn__store *s,
                                      int (*cb)(void *, const cairn__store_member_row *),
                                      void *ud, cairn_error *err) {
  sqlite3_stmt *q = stmt(s, P_LOAD_MEMBERS, err);
  return q ? each_row(s, s->w, q, P_LOAD_MEMBERS, member_row, (void *)cb, ud,
                      "the teams' members", err)
           : err->status;
}

static int session_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_session_row r = {.token_hash = STR(0), .account = I64(1), .csrf = STR(2),
                               .created = I64(3), .expires = I64(4)};
  int (*f)(void *, const cairn__store_session_row *) = cb;
  return !r.token_hash || !r.csrf || f(ud, &r);
}

cairn_status cairn__store_load_sessions(cairn__store *s, int64_t now,
                                       int (*cb)(void *, const cairn__store_session_row *),
                                       void *ud, cairn_error *err) {
  sqlite3_stmt *q = stmt(s, P_SESSIONS_EXPIRE, err);
  if (!q)
    return err->status;
  sqlite3_bind_int64(q, 1, now);
  cairn_status st = done(s, q, P_SESSIONS_EXPIRE, err); /* autocommit: before serving */
  if (st != CAIRN_OK || !(q = stmt(s, P_LOAD_SESSIONS, err)))
    return st != CAIRN_OK ? st : err->status;
  return each_row(s, s->w, q, P_LOAD_SESSIONS, session_row, (void *)cb, ud, "the sessions", err);
}

/* ---- reads ---- */

static int top_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_member_top r = {.id = I64(0), .name = STR(1),
                              .credit = sqlite3_column_double(q, 2),
                              .expavg = sqlite3_column_double(q, 3),
                              .expavg_time = sqlite3_column_double(q, 4)};
  int (*f)(void *, const cairn__store_member_top *) = cb;
  return !r.name || f(ud, &r);
}

static int result_row(sqlite3_stmt *q, void *cb, void *ud) {
  cairn__store_host_result r = {.idx = I64(0), .job = I64(1), .task = STR(2), .outcome = STR(3),
                               .credit = sqlite3_column_double(q, 4), .received = I64(5)};
  int (*f)(void *, const cairn__store_host_result *) = cb;
  return !r.task || !r.outcome || f(ud, &r);
}

/* Reader statement id bound to (key, limit), its rows to row. */
static cairn_status read_rows(cairn__store *s, enum pstmt id, int64_t key, int limit,
                              int (*row)(sqlite3_stmt *, void *, void *), void *cb, void *ud,
                              const char *what, cairn_error *err) {
  pthread_mutex_lock(&s->rlock);
  sqlite3_stmt *q = stmt(s, id, err);
  cairn_status st = q ? CAIRN_OK : err->status;
  if (q) {
    sqlite3_bind_int64(q, 1, key);
    sqlite3_bind_int(q, 2, limit);
    st = each_row(s, s->r, q, id, row, cb, ud, what, err);
  }
  pthread_mutex_unlock(&s->rlock);
  return st;
}

cairn_status cairn__store_team_top(cairn__store *s, int64_t team, int limit,
                                  int (*cb)(void *, const cairn__store_member_top *), void *ud,
                                  cairn_error *err) {
  return read_rows(s, P_TEAM_TOP, team, limit, top_row, (void *)cb, ud, "a team's members", err);
}

cairn_status cairn__store_host_results(cairn__store *s, int64_t vol, int limit,
                                      int (*cb)(void *, const cairn__store_host_result *),
                                      void *ud, cairn_error *err) {
  return read_rows(s, P_HOST_RESULTS, vol, limit, result_row, (void *)cb, ud, "a host's results",
                   err);
}
