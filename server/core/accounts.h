/* accounts.h — accounts (docs/accountability.md, "Accounts"): a person's
 * account, made with a name, an e-mail and a password; its account key,
 * with which the person's hosts (volunteers) attach to it at their
 * registration; and the list of its hosts. Credit per account moves in
 * server/trust/credit.c with its hosts' (the totals are in macct,
 * server/model/model.h). Private to server/.
 *
 * State (struct cairn__accounts, c->accounts): every account (never freed
 * before close), by id, by the hash of its key and by the hash of its
 * e-mail in lower case. All of it under c->lock.
 *
 * Bounds under c->lock: every call here is O(1) (a hash look-up) but an
 * account's reading, O(its hosts), at most CAIRN__ACCOUNT_HOSTS. The
 * password hashes (crypto_pwhash_str, ~100 ms and 64 MiB each) are made and
 * checked by the caller outside the lock (server/api/accounts.c).
 */
#ifndef CAIRN_CORE_ACCOUNTS_H
#define CAIRN_CORE_ACCOUNTS_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "common/protocol.h"
#include "server/model/state.h"

#define CAIRN__ACCOUNT_HOSTS 1024u   /* hosts attached to one account, at most */
#define CAIRN__ACCOUNT_MAX_NAME 256u /* bytes of an account's name */
#define CAIRN__ACCOUNT_MAX_EMAIL 254u
#define CAIRN__ACCOUNT_MIN_PASSWORD 8u
#define CAIRN__ACCOUNT_MAX_PASSWORD 1024u

/* Makes and frees c->accounts (cairn__core_open, cairn__core_close); open
 * returns -1 out of memory. */
int cairn__accounts_open(cairn__core *c);
void cairn__accounts_close(cairn__core *c);
/* Loads the stored accounts (cairn__core_load, before the volunteers). */
cairn_status cairn__accounts_load(cairn__core *c, cairn_error *err);
/* At start-up: volunteer v attached to account id (0: none). -1 out of
 * memory; an unknown id leaves v without one. */
int cairn__accounts_attach_loaded(cairn__core *c, mvol *v, int64_t id);
/* Under c->lock: the account whose key hashes to key_hash, or NULL; v
 * attached to a (O(1); journaled in the caller's group): CAIRN_ECONFLICT
 * when a has CAIRN__ACCOUNT_HOSTS hosts. */
macct *cairn__accounts_by_key_hash(cairn__core *c, const char *key_hash);
/* Under c->lock: account id, or NULL. O(1). */
macct *cairn__accounts_find(cairn__core *c, int64_t id);
cairn_status cairn__accounts_attach(cairn__core *c, macct *a, mvol *v, cairn_error *err);

/* Under c->lock, for a heartbeat of volunteer v that carries "cpid"
 * (r->fields & CAIRN_FEAT_CPID; docs/project.md, "Cross-project ids"):
 * NULL when v is attached to no account; else, once the offer in r (if
 * any) is taken, its account's {"email_hash" (the MD5 of its e-mail in
 * lower case, as BOINC's scheduler sends it), "id" (its cross-project id),
 * "time" (when that id was made)}. An offer is taken when it was made
 * before the account's id, or at the same second and is smaller: so every
 * master a person's workers reach ends up with the oldest id, and none
 * takes a newer one back. A change is journaled (the caller waits for the
 * journal). O(1): the MD5 of at most CAIRN__ACCOUNT_MAX_EMAIL bytes. */
json_t *cairn__accounts_cpid(cairn__core *c, mvol *v, const cairn__report *r);

/* A fresh key (64 hex digits from getrandom: 32 random bytes) and its
 * SHA-256 (hex): account keys, session tokens (sessions.h). CAIRN_EIO when
 * the system gives no randomness. */
cairn_status cairn__random_key(char key[65], char hash[65], cairn_error *err);
/* 1 when email is plausible: 1 to CAIRN__ACCOUNT_MAX_EMAIL bytes, one '@'
 * with something on both sides, no spaces or control characters. */
int cairn__account_email_ok(const char *email, size_t len);
/* Makes an account (name and email checked by the caller; pw_hash its
 * password's crypto_pwhash_str): its id and key (64 hex, from getrandom;
 * only its SHA-256 is kept) once durable. CAIRN_ECONFLICT when the e-mail
 * (any case) is taken. */
cairn_status cairn__core_account_create(cairn__core *c, const char *name, const char *email,
                                        const char *pw_hash, int64_t *id, char key[65],
                                        cairn_error *err);
/* The id and a copy of the password hash (malloc'd, *pw_hash) of the
 * account of email (any case), for a log-in checked outside the lock;
 * CAIRN_ENOTFOUND when none. */
cairn_status cairn__core_account_password(cairn__core *c, const char *email, int64_t *id,
                                          char **pw_hash, cairn_error *err);
/* A new key for account id (the old one stops working; its hosts stay
 * attached), once durable. */
cairn_status cairn__core_account_rekey(cairn__core *c, int64_t id, char key[65],
                                       cairn_error *err);
/* The account key opens (64 hex): its id, or 0. O(1). */
int64_t cairn__core_account_of_key(cairn__core *c, const char *key);
/* {"id", "name", "email" (with_email only), "team": {"id", "name"} | null,
 * "country", "created", "credit", "cpu_seconds", "results", "expavg_credit",
 * "expavg_time", "hosts": [{"id", "name", "credit", "expavg_credit",
 * "last_seen", "platform"}]}, the averages as of now; CAIRN_ENOTFOUND.
 * O(its hosts) under c->lock. */
json_t *cairn__core_account_json(cairn__core *c, int64_t id, int with_email, cairn_error *err);

/* Attaches volunteer vol, registered without an account, to the account
 * key opens (its *account once durable): CAIRN_EFORBIDDEN when the key
 * opens none, CAIRN_ENOTFOUND for no such volunteer, CAIRN_ECONFLICT when
 * it is banned, attached already (to another account: hosts do not move),
 * or the account is full. Its credit totals are added to the account's,
 * in the same group: an account's totals are the sums of its hosts'. It
 * takes the account's team when the account is in one (teams.h). Takes
 * the lock; O(1). */
cairn_status cairn__core_attach_account(cairn__core *c, int64_t vol, const char *key,
                                        int64_t *account, cairn_error *err);
/* cairn__core_register_team (core.h; volunteers.c), attached to the
 * account account_key (NULL: none) opens, in one group: CAIRN_EFORBIDDEN
 * when it opens none (no volunteer is made), CAIRN_ECONFLICT when that
 * account has CAIRN__ACCOUNT_HOSTS hosts, or team is a team of accounts'
 * name or key (teams.h). A host of an account in a team takes that team
 * (team is then not used). Takes the lock; O(apps). */
cairn_status cairn__core_register_account(cairn__core *c, const char *name, const char *cluster,
                                          char **apps, int napps, int slots,
                                          const char *peer_url, const char *team,
                                          const char *account_key, int64_t *id, char token[65],
                                          cairn_error *err);

#endif
