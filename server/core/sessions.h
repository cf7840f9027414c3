/* sessions.h — the log-in sessions of the project's pages
 * (docs/security.md, "Sessions"): a log-in with an account's e-mail and
 * password makes one; its token (64 hex digits from getrandom) is the
 * cookie cairn_session, shown once; only its SHA-256 is kept, in memory and
 * in the store (0026_sessions.sql), with the account it acts for, its CSRF
 * token (64 hex digits, which a cookie-authenticated change must send in
 * X-CSRF-Token), when it was made and when it expires (30 days later). An
 * account has at most CAIRN__SESSIONS_PER_ACCOUNT: a log-in past that ends
 * its oldest. Every change is journaled; a log-in is answered once durable,
 * so a session survives a restart. Private to server/.
 *
 * State (struct cairn__sessions, c->sessions): every session by the hash
 * of its token, and each account's list (macct.sessions, oldest first).
 * All of it under c->lock; every call is O(1) but a log-in's, which looks at
 * the account's CAIRN__SESSIONS_PER_ACCOUNT sessions at most. Memory: at
 * most CAIRN__SESSIONS_PER_ACCOUNT sessions an account, about 200 bytes
 * each. */
#ifndef CAIRN_CORE_SESSIONS_H
#define CAIRN_CORE_SESSIONS_H

#include <stdint.h>

#include "common/error.h"
#include "server/core/accounts.h"
#include "server/model/state.h"

#define CAIRN__SESSIONS_PER_ACCOUNT 16u
#define CAIRN__SESSION_SECONDS (30 * 86400)

typedef struct msess {
  char token_hash[65];  /* SHA-256 of its token, hex */
  char csrf[65];
  int64_t created, expires;
  macct *account;
  struct msess *next;   /* its account's next newer one */
} msess;

/* Makes and frees c->sessions (cairn__core_open, close); -1 out of memory. */
int cairn__sessions_open(cairn__core *c);
void cairn__sessions_close(cairn__core *c);
/* Loads the sessions not expired (cairn__core_load, after the accounts;
 * the expired rows are deleted). */
cairn_status cairn__sessions_load(cairn__core *c, cairn_error *err);

/* What a session shows of its account (copies, for a caller outside the
 * lock). */
typedef struct cairn__session_view {
  int64_t account;
  char name[CAIRN__ACCOUNT_MAX_NAME + 1];
  char csrf[65];
  int64_t team;                  /* 0: none */
  char team_name[257];
} cairn__session_view;

/* A new session for account (its token, shown once, in token), once
 * durable; its view in *v. CAIRN_ENOTFOUND. */
cairn_status cairn__core_session_create(cairn__core *c, int64_t account, char token[65],
                                        cairn__session_view *v, cairn_error *err);
/* 1 with *v filled when token (the cookie's value) is a session's that has
 * not expired; 0 otherwise (one expired is ended, its row's deletion
 * journaled without waiting). Takes the lock; O(1). */
int cairn__core_session_find(cairn__core *c, const char *token, cairn__session_view *v);
/* Ends the session of token, once durable (a log-out); CAIRN_EAUTH when
 * there is none. */
cairn_status cairn__core_session_end(cairn__core *c, const char *token, cairn_error *err);

#endif
