/* accounts.c — the account routes (docs/protocol.md, "Accounts";
 * docs/security.md, "Accounts"): POST /v1/accounts (a sign-up, under
 * cfg.registration like a volunteer's registration), POST
 * /v1/accounts/login (a new account key for the right e-mail and
 * password), GET /v1/accounts/{id} (the admin, or the account itself with
 * its account key or its session, people.c). Parses and checks like api.c;
 * the accounts themselves live in server/core/accounts.c. The password
 * check is shared with the pages' log-in (POST /v1/session, people.c).
 *
 * Passwords are hashed with libsodium's crypto_pwhash_str (Argon2id,
 * OPSLIMIT_INTERACTIVE, MEMLIMIT_INTERACTIVE: ~100 ms and 64 MiB each) and
 * checked with crypto_pwhash_str_verify, here, outside every lock; at most
 * CAIRN__PWHASH_AT_ONCE run at once (m->pwhash_busy), a request finding
 * them busy gets a 503 with Retry-After. */
#include <jansson.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>

#include "common/termsafe.h"
#include "server/api/api.h"
#include "server/core/accounts.h"

/* Takes one of the password hashing slots: 1, or 0 with the 503 in rs. */
static int pwhash_enter(cairn_master *m, cairn__resp *rs) {
  if (atomic_fetch_add(&m->pwhash_busy, 1) < CAIRN__PWHASH_AT_ONCE)
    return 1;
  atomic_fetch_sub(&m->pwhash_busy, 1);
  cairn__api_json(rs, 503, json_pack("{s:{s:s, s:s}}", "error", "code", "busy", "message",
                                     "passwords are being checked for other requests; retry "
                                     "in a second"));
  cairn__api_retry(rs, 1000);
  return 0;
}

static void pwhash_leave(cairn_master *m) { atomic_fetch_sub(&m->pwhash_busy, 1); }

/* Member key of o as a string of min to max bytes (its length in *len):
 * the string, or NULL with a 400 naming key in rs. */
static const char *str_field(json_t *o, const char *key, size_t min, size_t max, size_t *len,
                             const char *what, cairn__resp *rs) {
  json_t *v = json_object_get(o, key);
  if (!v) {
    cairn__api_failf(rs, CAIRN_EINVAL, "missing \"%s\" (%s)", key, what);
    return NULL;
  }
  if (!json_is_string(v) || json_string_length(v) < min || json_string_length(v) > max) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be %s, %zu to %zu bytes", key, what, min, max);
    return NULL;
  }
  *len = json_string_length(v);
  return json_string_value(v);
}

/* The e-mail of o: a plausible address, or NULL with the 400 in rs. */
static const char *email_of(json_t *o, cairn__resp *rs) {
  size_t len = 0;
  const char *e = str_field(o, "email", 1, CAIRN__ACCOUNT_MAX_EMAIL, &len, "an e-mail address", rs);
  if (e && (!cairn__account_email_ok(e, len) || !cairn__text_valid(e, len))) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"email\" must be an e-mail address: one '@' with text "
                     "on both sides, no spaces or control characters, at most %u bytes",
                     CAIRN__ACCOUNT_MAX_EMAIL);
    return NULL;
  }
  return e;
}

static const char *password_of(json_t *o, size_t *len, cairn__resp *rs) {
  return str_field(o, "password", CAIRN__ACCOUNT_MIN_PASSWORD, CAIRN__ACCOUNT_MAX_PASSWORD, len,
                   "a password", rs);
}

void cairn__api_account_create(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"name", "email", "password", "invitation", NULL};
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  size_t nlen = 0, plen = 0;
  int64_t invite = 0, id = 0;
  const char *name = str_field(o, "name", 1, CAIRN__ACCOUNT_MAX_NAME, &nlen, "the account's name",
                               rs);
  if (name && !cairn__text_valid(name, nlen)) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"name\" must be valid UTF-8 without control characters "
                     "or bidirectional controls");
    name = NULL;
  }
  const char *email = name ? email_of(o, rs) : NULL;
  const char *password = email ? password_of(o, &plen, rs) : NULL;
  if (!password || !cairn__admission_admitted(m, rq, o, &invite, rs))
    goto out;
  char hash[crypto_pwhash_STRBYTES];
  if (!pwhash_enter(m, rs)) {
    if (invite)
      cairn__invites_unuse(m->invites, invite);
    goto out;
  }
  int bad = sodium_init() < 0 ||
            crypto_pwhash_str(hash, password, plen, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                              crypto_pwhash_MEMLIMIT_INTERACTIVE) != 0;
  pwhash_leave(m);
  cairn_error err = {0};
  char key[65];
  if (bad)
    cairn__error_set(&err, CAIRN_ENOMEM, "out of memory hashing the password; retry later");
  if (bad || cairn__core_account_create(m->core, name, email, hash, &id, key, &err) != CAIRN_OK) {
    if (invite)
      cairn__invites_unuse(m->invites, invite);
    cairn__api_fail(rs, &err);
  } else
    cairn__api_json(rs, 201, json_pack("{s:I, s:s}", "id", (json_int_t)id, "account_key", key));
  sodium_memzero(key, sizeof key);
out:
  json_decref(o);
}

int64_t cairn__api_password_check(cairn_master *m, const char *email, const char *password,
                                  size_t plen, cairn__resp *rs) {
  char *hash = NULL;
  int64_t id = 0;
  cairn_error err = {0};
  if (!pwhash_enter(m, rs))
    return 0;
  int ok = cairn__core_account_password(m->core, email, &id, &hash, &err) == CAIRN_OK;
  if (!ok && err.status == CAIRN_ENOTFOUND) { /* as long as a wrong password takes */
    char dummy[crypto_pwhash_STRBYTES];
    int spent = sodium_init() >= 0 &&
                crypto_pwhash_str(dummy, password, plen, crypto_pwhash_OPSLIMIT_INTERACTIVE,
                                  crypto_pwhash_MEMLIMIT_INTERACTIVE) == 0;
    (void)spent; /* only its time matters */
  } else if (ok)
    ok = sodium_init() >= 0 && crypto_pwhash_str_verify(hash, password, plen) == 0;
  pwhash_leave(m);
  free(hash);
  if (!ok && err.status != CAIRN_OK && err.status != CAIRN_ENOTFOUND)
    cairn__api_fail(rs, &err);
  else if (!ok)
    cairn__api_error(rs, CAIRN_EAUTH, "wrong e-mail or password");
  return ok ? id : 0;
}

int cairn__api_credentials(const cairn__req *rq, json_t **o, const char **email,
                           const char **password, size_t *plen, cairn__resp *rs) {
  static const char *const keys[] = {"email", "password", NULL};
  if (!(*o = cairn__api_body(rq, keys, 0, rs)))
    return 0;
  *email = email_of(*o, rs);
  *password = *email ? password_of(*o, plen, rs) : NULL;
  return *password != NULL;
}

void cairn__api_account_login(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  if (strcmp(rq->path, "/v1/accounts/login") != 0) /* the route's pattern is /v1/accounts/{id} */
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no route POST %.64s", rq->path);
  json_t *o = NULL;
  const char *email = NULL, *password = NULL;
  size_t plen = 0;
  int64_t id = 0;
  cairn_error err = {0};
  char key[65];
  if (cairn__api_credentials(rq, &o, &email, &password, &plen, rs) &&
      (id = cairn__api_password_check(m, email, password, plen, rs))) {
    if (cairn__core_account_rekey(m->core, id, key, &err) != CAIRN_OK)
      cairn__api_fail(rs, &err);
    else
      cairn__api_json(rs, 200, json_pack("{s:I, s:s}", "id", (json_int_t)id, "account_key", key));
    sodium_memzero(key, sizeof key);
  }
  json_decref(o);
}

void cairn__api_account_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *s = rq->path + strlen("/v1/accounts/"), *end = NULL;
  int64_t id = cairn__api_id(s, &end);
  if (id < 0 || *end)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\" is not an account id", s);
  if (!cairn__api_is_admin(m, rq->token) && !cairn__api_account_caller(m, rq, id, rs))
    return; /* else the account itself, by its key or its session (people.c) */
  cairn_error err = {0};
  json_t *o = cairn__core_account_json(m->core, id, 1, &err);
  if (o)
    cairn__api_json(rs, 200, o);
  else
    cairn__api_fail(rs, &err);
}
