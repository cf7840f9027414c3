/* sessions.c — the pages' log-in sessions (sessions.h). */
#include "server/core/sessions.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "server/base/hmap.h"
#include "server/base/util.h"
#include "server/core/teams.h"
#include "server/store/journal.h"
#include "server/store/store_people.h"

typedef struct cairn__sessions {
  cairn__hmap by_hash; /* cairn__hash_key(token hash) -> msess */
} cairn__sessions;

int cairn__sessions_open(cairn__core *c) {
  if (!(c->sessions = calloc(1, sizeof *c->sessions)))
    return -1;
  cairn__hmap_init(&c->sessions->by_hash);
  return 0;
}

void cairn__sessions_close(cairn__core *c) {
  if (!c->sessions)
    return;
  cairn__hmap *h = &c->sessions->by_hash;
  for (size_t i = 0; i < h->cap; i++)
    if (h->keys[i])
      free(h->vals[i]);
  cairn__hmap_free(h);
  free(c->sessions);
  c->sessions = NULL;
}

static msess *find(const cairn__sessions *s, const char *token_hash) {
  msess *x = cairn__hmap_get(&s->by_hash, cairn__hash_key(token_hash));
  return x && strcmp(x->token_hash, token_hash) == 0 ? x : NULL;
}

/* x joins its account's list, at its end (the newest). */
static void list_add(msess *x) {
  msess **p = &x->account->sessions;
  while (*p)
    p = &(*p)->next;
  *p = x;
  x->next = NULL;
  x->account->nsessions++;
}

/* Ends session x (under the lock): out of the tables and its account's
 * list, its row's deletion journaled, freed. O(its account's sessions). */
static void drop(cairn__core *c, msess *x) {
  cairn__hmap_del(&c->sessions->by_hash, cairn__hash_key(x->token_hash));
  for (msess **p = &x->account->sessions; *p; p = &(*p)->next)
    if (*p == x) {
      *p = x->next;
      x->account->nsessions--;
      break;
    }
  cairn__journal_put(c->journal, cairn__jrec_session_drop(x->token_hash));
  free(x);
}

static int load_row(void *ud, const cairn__store_session_row *r) {
  cairn__core *c = ud;
  macct *a = cairn__accounts_find(c, r->account);
  if (!a || a->nsessions >= CAIRN__SESSIONS_PER_ACCOUNT || strlen(r->token_hash) != 64 ||
      strlen(r->csrf) != 64 || find(c->sessions, r->token_hash))
    return 0; /* not one this master made: left out */
  msess *x = calloc(1, sizeof *x);
  if (!x)
    return -1;
  memcpy(x->token_hash, r->token_hash, 65);
  memcpy(x->csrf, r->csrf, 65);
  x->created = r->created;
  x->expires = r->expires;
  x->account = a;
  if (cairn__hmap_put(&c->sessions->by_hash, cairn__hash_key(x->token_hash), x)) {
    free(x);
    return -1;
  }
  list_add(x);
  return 0;
}

cairn_status cairn__sessions_load(cairn__core *c, cairn_error *err) {
  return cairn__store_load_sessions(c->store, cairn__now(), load_row, c, err);
}

/* *v from session x (under the lock). O(1). */
static void view(const msess *x, cairn__session_view *v) {
  const macct *a = x->account;
  v->account = a->id;
  snprintf(v->name, sizeof v->name, "%s", a->name);
  memcpy(v->csrf, x->csrf, sizeof v->csrf);
  v->team = a->team ? a->team->id : 0;
  snprintf(v->team_name, sizeof v->team_name, "%s", a->team ? a->team->name : "");
}

cairn_status cairn__core_session_create(cairn__core *c, int64_t account, char token[65],
                                        cairn__session_view *v, cairn_error *err) {
  msess *x = calloc(1, sizeof *x);
  char unused[65];
  if (!x)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status st = cairn__random_key(token, x->token_hash, err);
  if (st == CAIRN_OK)
    st = cairn__random_key(x->csrf, unused, err);
  if (st != CAIRN_OK) {
    free(x);
    return st;
  }
  x->created = cairn__now();
  x->expires = x->created + CAIRN__SESSION_SECONDS;
  pthread_mutex_lock(&c->lock); /* O(CAIRN__SESSIONS_PER_ACCOUNT) */
  macct *a = cairn__accounts_find(c, account);
  if (!a)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no account %lld", (long long)account);
  else if (cairn__hmap_get(&c->sessions->by_hash, cairn__hash_key(x->token_hash)))
    st = cairn__error_set(err, CAIRN_EINTERNAL, "session collision; log in again");
  else if (cairn__hmap_put(&c->sessions->by_hash, cairn__hash_key(x->token_hash), x))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else {
    x->account = a;
    while (a->sessions && (a->sessions->expires <= x->created ||
                           a->nsessions >= CAIRN__SESSIONS_PER_ACCOUNT))
      drop(c, a->sessions); /* the expired, then the oldest past the bound */
    list_add(x);
    cairn__store_session_row row = {.account = a->id, .created = x->created,
                                   .expires = x->expires, .token_hash = x->token_hash,
                                   .csrf = x->csrf};
    cairn__journal_put(c->journal, cairn__jrec_session(&row));
    view(x, v);
    x = NULL; /* the module's now */
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  free(x);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

/* The SHA-256 (hex) of token into hash: 0, or -1 when token is not 64
 * characters. */
static int hash_of(const char *token, char hash[65]) {
  if (!token || strlen(token) != 64)
    return -1;
  cairn__sha256_hex(token, 64, hash);
  return 0;
}

int cairn__core_session_find(cairn__core *c, const char *token, cairn__session_view *v) {
  char hash[65];
  if (hash_of(token, hash))
    return 0;
  int64_t now = cairn__now();
  pthread_mutex_lock(&c->lock); /* O(1), or O(its account's sessions) to end an expired one */
  msess *x = find(c->sessions, hash);
  int ok = x && x->expires > now;
  if (ok)
    view(x, v);
  else if (x)
    drop(c, x);
  cairn__core_unlock(c);
  return ok;
}

cairn_status cairn__core_session_end(cairn__core *c, const char *token, cairn_error *err) {
  char hash[65];
  if (hash_of(token, hash))
    return cairn__error_set(err, CAIRN_EAUTH, "no such session");
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock); /* O(its account's sessions) */
  msess *x = find(c->sessions, hash);
  if (!x)
    st = cairn__error_set(err, CAIRN_EAUTH, "no such session");
  else
    drop(c, x);
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}
