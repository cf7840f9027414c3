/* people.c — the routes of people (docs/protocol.md, "Sessions" and "Teams
 * of accounts"; docs/security.md, "Sessions"): the pages' log-in sessions
 * (POST, GET, DELETE /v1/session), teams of accounts (POST /v1/teams, GET
 * and PATCH /v1/teams/{id}), an account joining or leaving one (PATCH
 * /v1/accounts/{id}), and who a request acts for (the account key, or the
 * session cookie with its CSRF token). Parses and checks like api.c; the
 * state lives in server/core/sessions.c and teams.c.
 *
 * Cost: every call here is O(1) under c->lock but a join or leave (O(the
 * account's hosts), core/teams.h) and the log-in's password check, which
 * runs outside every lock on the password-hashing slots (accounts.c); a
 * team's top members are read from the store (never c->lock). */
#include <jansson.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/termsafe.h"
#include "server/api/api.h"
#include "server/core/roster.h"
#include "server/core/sessions.h"
#include "server/core/teams.h"
#include "server/trust/trust.h"

/* A team's members listed with it at most (GET /v1/teams/{id}). */
#define TEAM_TOP 100

/* ---- who a request acts for ---- */

static int changes(const cairn__req *rq) {
  return strcmp(rq->method, "GET") != 0 && strcmp(rq->method, "HEAD") != 0;
}

/* 1 when rq's X-CSRF-Token is the session's (constant time). */
static int csrf_ok(const cairn__req *rq, const cairn__session_view *v) {
  return rq->csrf && strlen(rq->csrf) == 64 && sodium_memcmp(rq->csrf, v->csrf, 64) == 0;
}

int64_t cairn__api_account_caller(cairn_master *m, const cairn__req *rq, int64_t want,
                                  cairn__resp *rs) {
  int64_t self = 0;
  if (rq->token) { /* the account key: the CLI's way */
    if (!(self = cairn__core_account_of_key(m->core, rq->token))) {
      cairn__resp limited = {.fd = -1}; /* a failed authentication */
      if (!cairn__api_anonymous_ok(m, rq->client_ip, &limited)) {
        *rs = limited;
        return 0;
      }
      cairn__api_error(rs, CAIRN_EAUTH, "unknown account key");
      return 0;
    }
  } else if (rq->session) { /* the pages' way */
    cairn__session_view v;
    if (!cairn__core_session_find(m->core, rq->session, &v)) {
      cairn__api_error(rs, CAIRN_EAUTH, "no session: log in again (POST /v1/session)");
      return 0;
    }
    if (changes(rq) && !csrf_ok(rq, &v)) {
      cairn__api_error(rs, CAIRN_EFORBIDDEN, "a change made with the session cookie needs the "
                       "session's CSRF token in X-CSRF-Token");
      return 0;
    }
    self = v.account;
  } else {
    cairn__api_error(rs, CAIRN_EAUTH, "an account's key (Authorization: Bearer KEY) or a "
                     "session (POST /v1/session) is needed");
    return 0;
  }
  if (want && self != want) {
    cairn__api_failf(rs, CAIRN_EFORBIDDEN, "this is account %lld's; only account %lld may",
                     (long long)self, (long long)want);
    return 0;
  }
  return self;
}

/* ---- sessions ---- */

/* The session's cookie in rs: token (NULL: cleared), Secure when the
 * master serves TLS. */
static void set_cookie(cairn_master *m, cairn__resp *rs, const char *token) {
  snprintf(rs->cookie, sizeof rs->cookie,
           "cairn_session=%s; Path=/; HttpOnly; SameSite=Strict; Max-Age=%d%s",
           token ? token : "", token ? CAIRN__SESSION_SECONDS : 0,
           m->cfg.tls_cert ? "; Secure" : "");
}

/* {"account", "name", "csrf", "team": {"id", "name"} | null} of v. */
static json_t *session_json(const cairn__session_view *v, int with_team) {
  json_t *o = json_pack("{s:I, s:s, s:s}", "account", (json_int_t)v->account, "name", v->name,
                        "csrf", v->csrf);
  if (o && with_team)
    json_object_set_new(o, "team", v->team ? json_pack("{s:I, s:s}", "id", (json_int_t)v->team,
                                                       "name", v->team_name)
                                           : json_null());
  return o;
}

void cairn__api_session_post(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  json_t *o = NULL;
  const char *email = NULL, *password = NULL;
  size_t plen = 0;
  int64_t id = 0;
  if (cairn__api_credentials(rq, &o, &email, &password, &plen, rs) &&
      (id = cairn__api_password_check(m, email, password, plen, rs))) {
    char token[65];
    cairn__session_view v;
    cairn_error err = {0};
    if (cairn__core_session_create(m->core, id, token, &v, &err) != CAIRN_OK)
      cairn__api_fail(rs, &err);
    else {
      cairn__api_json(rs, 200, session_json(&v, 0));
      set_cookie(m, rs, token);
      rs->no_store = 1;
    }
    sodium_memzero(token, sizeof token);
  }
  json_decref(o);
}

void cairn__api_session_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  cairn__session_view v;
  if (!rq->session || !cairn__core_session_find(m->core, rq->session, &v))
    return cairn__api_error(rs, CAIRN_EAUTH, "no session: log in (POST /v1/session)");
  cairn__api_json(rs, 200, session_json(&v, 1));
  rs->no_store = 1;
}

void cairn__api_session_delete(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  cairn__session_view v;
  cairn_error err = {0};
  if (!rq->session || !cairn__core_session_find(m->core, rq->session, &v))
    return cairn__api_error(rs, CAIRN_EAUTH, "no session: log in (POST /v1/session)");
  if (!csrf_ok(rq, &v))
    return cairn__api_error(rs, CAIRN_EFORBIDDEN, "a log-out needs the session's CSRF token in "
                            "X-CSRF-Token");
  if (cairn__core_session_end(m->core, rq->session, &err) != CAIRN_OK)
    return cairn__api_fail(rs, &err);
  rs->status = 204;
  set_cookie(m, rs, NULL);
  rs->no_store = 1;
}

/* ---- teams of accounts ---- */

/* 1 when the n bytes of s are valid UTF-8 text (common/termsafe.h), with
 * line ends and tabs too when lines. */
static int text_ok(const char *s, size_t n, int lines) {
  for (size_t i = 0; i < n;) {
    size_t k = cairn__text_char(s + i, n - i);
    if (!k && !(lines && (s[i] == '\n' || s[i] == '\t')))
      return 0;
    i += k ? k : 1;
  }
  return 1;
}

/* The characters (code points) of valid UTF-8 s. */
static size_t chars(const char *s) {
  size_t n = 0;
  for (; *s; s++)
    n += ((unsigned char)*s & 0xc0) != 0x80;
  return n;
}

/* Member key of o, when present, as a string checked for what it is
 * (name, description, url or country): *out (NULL when absent); -1 with
 * the 400 in rs. */
static int team_field(json_t *o, const char *key, const char **out, cairn__resp *rs) {
  json_t *v = json_object_get(o, key);
  *out = NULL;
  if (!v)
    return 0;
  const char *s = json_string_value(v);
  size_t n = s ? json_string_length(v) : 0;
  int name = !strcmp(key, "name"), url = !strcmp(key, "url");
  size_t max = name ? CAIRN__TEAM_MAX_NAME_BYTES
               : url ? CAIRN__TEAM_MAX_URL
               : !strcmp(key, "country") ? CAIRN__TEAM_MAX_COUNTRY
                                         : CAIRN__TEAM_MAX_DESCRIPTION;
  int ok = s && strlen(s) == n && n <= max && text_ok(s, n, !strcmp(key, "description"));
  if (ok && name)
    ok = n > 0 && chars(s) <= CAIRN__TEAM_MAX_NAME;
  if (ok && url && n)
    ok = (!strncmp(s, "https://", 8) || !strncmp(s, "http://", 7)) && !strpbrk(s, " \"<>\\");
  if (ok) {
    *out = s;
    return 0;
  }
  if (name)
    cairn__api_failf(rs, CAIRN_EINVAL, "\"name\" must be 1 to %u characters (UTF-8, at most %u "
                     "bytes) without control characters", CAIRN__TEAM_MAX_NAME,
                     CAIRN__TEAM_MAX_NAME_BYTES);
  else if (url)
    cairn__api_failf(rs, CAIRN_EINVAL, "\"url\" must be \"\" or an http:// or https:// address "
                     "without spaces, quotes, '<', '>' or '\\\\', at most %u bytes",
                     CAIRN__TEAM_MAX_URL);
  else
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be text without control characters, at "
                     "most %zu bytes", key, max);
  return -1;
}

/* The fields of a team's body o into e: 0, or -1 with the 400 in rs. */
static int team_edit_of(json_t *o, cairn__team_edit *e, cairn__resp *rs) {
  return team_field(o, "name", &e->name, rs) || team_field(o, "description", &e->description, rs) ||
                 team_field(o, "url", &e->url, rs) || team_field(o, "country", &e->country, rs)
           ? -1
           : 0;
}

/* The id at the end of rq's path after prefix, or -1 with the 400 in rs. */
static int64_t path_id(const cairn__req *rq, const char *prefix, const char *what,
                       cairn__resp *rs) {
  const char *s = rq->path + strlen(prefix), *end = NULL;
  int64_t id = cairn__api_id(s, &end);
  if (id < 0 || *end) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\" is not %s id", s, what);
    return -1;
  }
  return id;
}

void cairn__api_teams_post(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"name", "description", "url", "country", NULL};
  int64_t self = cairn__api_account_caller(m, rq, 0, rs), id = 0;
  json_t *o = self ? cairn__api_body(rq, keys, 0, rs) : NULL;
  cairn__team_edit e = {0};
  cairn_error err = {0};
  if (!o)
    return;
  if (team_edit_of(o, &e, rs))
    ; /* the 400 is in rs */
  else if (!e.name)
    cairn__api_failf(rs, CAIRN_EINVAL, "missing \"name\" (the team's name)");
  else if (cairn__core_team_create(m->core, self, &e, &id, &err) != CAIRN_OK)
    cairn__api_fail(rs, &err);
  else
    cairn__api_json(rs, 201, json_pack("{s:I}", "id", (json_int_t)id));
  json_decref(o);
}

/* One of a team's top members, decayed to now (ud: {array, now}). */
typedef struct top_ctx {
  json_t *list;
  double now;
} top_ctx;

static int top_row(void *ud, const cairn__store_member_top *r) {
  top_ctx *t = ud;
  json_t *e = json_pack("{s:I, s:s, s:f, s:f}", "id", (json_int_t)r->id, "name", r->name,
                        "credit", r->credit, "expavg_credit",
                        cairn__expavg_at(t->now, r->expavg, r->expavg_time));
  return e ? json_array_append_new(t->list, e) : -1;
}

/* Team id as GET /v1/teams/{id} shows it, or the error in rs. */
static void team_answer(cairn_master *m, int64_t id, cairn__resp *rs) {
  cairn_error err = {0};
  json_t *o = cairn__core_team_json(m->core, id, &err);
  top_ctx t = {json_array(), (double)time(NULL)};
  if (o && t.list &&
      cairn__core_team_top(m->core, id, TEAM_TOP, top_row, &t, &err) == CAIRN_OK) {
    json_object_set_new(o, "members_top", t.list);
    return cairn__api_json(rs, 200, o);
  }
  json_decref(o);
  json_decref(t.list);
  if (!err.status)
    cairn__error_set(&err, CAIRN_ENOMEM, "out of memory");
  cairn__api_fail(rs, &err);
}

void cairn__api_team_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = path_id(rq, "/v1/teams/", "a team", rs);
  if (id > 0)
    team_answer(m, id, rs);
}

void cairn__api_team_patch(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"name", "description", "url", "country", NULL};
  int64_t id = path_id(rq, "/v1/teams/", "a team", rs);
  int64_t self = id > 0 ? cairn__api_account_caller(m, rq, 0, rs) : 0;
  json_t *o = self ? cairn__api_body(rq, keys, 0, rs) : NULL;
  cairn__team_edit e = {0};
  cairn_error err = {0};
  if (!o)
    return;
  if (team_edit_of(o, &e, rs))
    ; /* the 400 is in rs */
  else if (!e.name && !e.description && !e.url && !e.country)
    cairn__api_failf(rs, CAIRN_EINVAL, "nothing to change: give \"name\", \"description\", "
                     "\"url\" or \"country\"");
  else if (cairn__core_team_edit(m->core, self, id, &e, &err) != CAIRN_OK)
    cairn__api_fail(rs, &err);
  else
    team_answer(m, id, rs);
  json_decref(o);
}

void cairn__api_account_patch(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"team", NULL};
  int64_t id = path_id(rq, "/v1/accounts/", "an account", rs);
  int64_t self = id > 0 ? cairn__api_account_caller(m, rq, id, rs) : 0;
  json_t *o = self ? cairn__api_body(rq, keys, 0, rs) : NULL;
  cairn_error err = {0};
  if (!o)
    return;
  json_t *t = json_object_get(o, "team");
  json_t *a = NULL;
  if (!t || !(json_is_null(t) || (json_is_integer(t) && json_integer_value(t) > 0)))
    cairn__api_failf(rs, CAIRN_EINVAL, "\"team\" must be a team's id (to join it) or null (to "
                     "leave the account's team)");
  else if (cairn__core_account_join(m->core, id, json_is_null(t) ? 0 : json_integer_value(t),
                                    &err) != CAIRN_OK ||
           !(a = cairn__core_account_json(m->core, id, 1, &err)))
    cairn__api_fail(rs, &err);
  else
    cairn__api_json(rs, 200, a);
  json_decref(o);
}
