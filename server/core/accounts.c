/* accounts.c — accounts and the hosts attached to them (accounts.h). */
#include "server/core/accounts.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

#include "common/md5.h"
#include "common/sha256.h"
#include "server/base/hmap.h"
#include "server/base/util.h"
#include "server/core/apps.h"
#include "server/core/core.h"
#include "server/core/teams.h"
#include "server/store/journal.h"
#include "server/store/store.h"
#include "server/store/store_people.h"
#include "server/trust/trust.h"

typedef struct cairn__accounts cairn__accounts;
struct cairn__accounts {
  macct **v;            /* by id - 1; ids are dense */
  size_t n, cap;
  cairn__hmap by_key;   /* cairn__hash_key(key_hash) -> macct */
  cairn__hmap by_email; /* email_hash(lower-case e-mail) -> macct (chain: email_next) */
};

int cairn__accounts_open(cairn__core *c) {
  if (!(c->accounts = calloc(1, sizeof *c->accounts)))
    return -1;
  cairn__hmap_init(&c->accounts->by_key);
  cairn__hmap_init(&c->accounts->by_email);
  return 0;
}

static void acct_free(macct *a) {
  if (!a)
    return;
  free(a->name);
  free(a->email);
  free(a->pw_hash);
  free(a->hosts);
  free(a->country);
  free(a);
}

void cairn__accounts_close(cairn__core *c) {
  if (!c->accounts)
    return;
  for (size_t i = 0; i < c->accounts->n; i++)
    acct_free(c->accounts->v[i]);
  free(c->accounts->v);
  cairn__hmap_free(&c->accounts->by_key);
  cairn__hmap_free(&c->accounts->by_email);
  free(c->accounts);
  c->accounts = NULL;
}

/* FNV-1a of email in lower case, never 0. O(its length). */
static uint64_t email_hash(const char *email) {
  uint64_t h = 1469598103934665603ULL;
  for (; *email; email++)
    h = (h ^ (uint8_t)tolower((unsigned char)*email)) * 1099511628211ULL;
  return h | 1u;
}

static macct *by_email(const cairn__accounts *s, const char *email) {
  for (macct *a = cairn__hmap_get(&s->by_email, email_hash(email)); a; a = a->email_next)
    if (strcasecmp(a->email, email) == 0)
      return a;
  return NULL;
}

/* Adds a to the tables (its id next): 0, or -1 out of memory (a not
 * added). O(1) amortized. */
static int add(cairn__accounts *s, macct *a) {
  if (s->n == s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 16;
    macct **nv = realloc(s->v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    s->v = nv;
    s->cap = ncap;
  }
  uint64_t ek = email_hash(a->email);
  a->email_next = cairn__hmap_get(&s->by_email, ek);
  if (cairn__hmap_put(&s->by_key, cairn__hash_key(a->key_hash), a))
    return -1;
  if (cairn__hmap_put(&s->by_email, ek, a)) {
    cairn__hmap_del(&s->by_key, cairn__hash_key(a->key_hash));
    return -1;
  }
  s->v[s->n++] = a;
  return 0;
}

static macct *acct_new(const char *name, const char *email, const char *pw_hash) {
  macct *a = calloc(1, sizeof *a);
  if (!a)
    return NULL;
  a->name = cairn__strdup(name);
  a->email = cairn__strdup(email);
  a->pw_hash = cairn__strdup(pw_hash);
  if (!a->name || !a->email || !a->pw_hash) {
    acct_free(a);
    return NULL;
  }
  return a;
}

static int load_row(void *ud, const cairn__store_account_row *r) {
  cairn__core *c = ud;
  macct *a = acct_new(r->name, r->email, r->password_hash);
  if (!a)
    return -1;
  a->id = r->id;
  a->created = r->created;
  snprintf(a->key_hash, sizeof a->key_hash, "%s", r->key_hash);
  a->credit = r->credit;
  a->cpu_seconds = r->cpu_seconds;
  a->results = r->results;
  a->expavg = r->expavg;
  a->expavg_time = r->expavg_time;
  snprintf(a->cpid, sizeof a->cpid, "%s", r->cpid);
  a->cpid_time = r->cpid_time;
  if ((size_t)r->id != c->accounts->n + 1 || add(c->accounts, a)) {
    acct_free(a);
    return -1;
  }
  return 0;
}

cairn_status cairn__accounts_load(cairn__core *c, cairn_error *err) {
  return cairn__store_load_accounts(c->store, load_row, c, err);
}

/* v joins a's hosts: 0, or -1 out of memory. O(1) amortized. */
static int host_add(macct *a, mvol *v) {
  if (a->nhosts == a->caphosts) {
    uint32_t ncap = a->caphosts ? 2 * a->caphosts : 4;
    mvol **nh = realloc(a->hosts, ncap * sizeof *nh);
    if (!nh)
      return -1;
    a->hosts = nh;
    a->caphosts = ncap;
  }
  a->hosts[a->nhosts++] = v;
  v->account = a;
  return 0;
}

int cairn__accounts_attach_loaded(cairn__core *c, mvol *v, int64_t id) {
  if (id < 1 || (size_t)id > c->accounts->n)
    return 0;
  return host_add(c->accounts->v[id - 1], v);
}

macct *cairn__accounts_by_key_hash(cairn__core *c, const char *key_hash) {
  macct *a = cairn__hmap_get(&c->accounts->by_key, cairn__hash_key(key_hash));
  return a && strcmp(a->key_hash, key_hash) == 0 ? a : NULL;
}

macct *cairn__accounts_find(cairn__core *c, int64_t id) {
  return id >= 1 && (size_t)id <= c->accounts->n ? c->accounts->v[id - 1] : NULL;
}

cairn_status cairn__accounts_attach(cairn__core *c, macct *a, mvol *v, cairn_error *err) {
  if (a->nhosts >= CAIRN__ACCOUNT_HOSTS)
    return cairn__error_set(err, CAIRN_ECONFLICT,
                            "account %lld has %u hosts, the most one may have", (long long)a->id,
                            CAIRN__ACCOUNT_HOSTS);
  if (host_add(a, v))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn__journal_put(c->journal, cairn__jrec_volunteer_account(v->id, a->id));
  return CAIRN_OK;
}

int cairn__account_email_ok(const char *email, size_t len) {
  if (len == 0 || len > CAIRN__ACCOUNT_MAX_EMAIL || strlen(email) != len)
    return 0;
  const char *at = strchr(email, '@');
  if (!at || at == email || !at[1] || strchr(at + 1, '@'))
    return 0;
  for (const unsigned char *p = (const unsigned char *)email; *p; p++)
    if (*p <= ' ' || *p == 0x7f)
      return 0;
  return 1;
}

cairn_status cairn__random_key(char key[65], char hash[65], cairn_error *err) {
  unsigned char raw[32];
  static const char digits[] = "0123456789abcdef";
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return cairn__error_set(err, CAIRN_EIO, "no randomness for a key: %s", strerror(errno));
  for (int i = 0; i < 32; i++) {
    key[2 * i] = digits[raw[i] >> 4];
    key[2 * i + 1] = digits[raw[i] & 15];
  }
  key[64] = '\0';
  cairn__sha256_hex(key, 64, hash);
  return CAIRN_OK;
}

cairn_status cairn__core_account_create(cairn__core *c, const char *name, const char *email,
                                        const char *pw_hash, int64_t *id, char key[65],
                                        cairn_error *err) {
  macct *a = acct_new(name, email, pw_hash);
  if (!a)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status st = cairn__random_key(key, a->key_hash, err);
  if (st != CAIRN_OK) {
    acct_free(a);
    return st;
  }
  a->created = a->cpid_time = cairn__now();
  char cpid[65], unused[65];
  if ((st = cairn__random_key(cpid, unused, err)) != CAIRN_OK) {
    acct_free(a);
    return st;
  }
  snprintf(a->cpid, sizeof a->cpid, "%.32s", cpid); /* 16 random bytes */
  pthread_mutex_lock(&c->lock); /* O(1): two hash look-ups and puts */
  cairn__accounts *s = c->accounts;
  if (by_email(s, email))
    st = cairn__error_set(err, CAIRN_ECONFLICT, "an account with this e-mail exists");
  else if (cairn__accounts_by_key_hash(c, a->key_hash))
    st = cairn__error_set(err, CAIRN_EINTERNAL, "key collision; try again");
  else {
    a->id = (int64_t)s->n + 1;
    if (add(s, a))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (st == CAIRN_OK) {
    cairn__store_account_row row = {.id = a->id, .created = a->created, .name = a->name,
                                   .email = a->email, .key_hash = a->key_hash,
                                   .password_hash = a->pw_hash, .cpid = a->cpid,
                                   .cpid_time = a->cpid_time};
    cairn__journal_put(c->journal, cairn__jrec_account(&row));
    *id = a->id;
    a = NULL; /* the module owns it now */
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  acct_free(a);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

cairn_status cairn__core_account_password(cairn__core *c, const char *email, int64_t *id,
                                          char **pw_hash, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  *pw_hash = NULL;
  pthread_mutex_lock(&c->lock); /* O(1) */
  macct *a = by_email(c->accounts, email);
  if (!a)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no such account");
  else if (!(*pw_hash = cairn__strdup(a->pw_hash)))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else
    *id = a->id;
  cairn__core_unlock(c);
  return st;
}

cairn_status cairn__core_account_rekey(cairn__core *c, int64_t id, char key[65],
                                       cairn_error *err) {
  char hash[65];
  cairn_status st = cairn__random_key(key, hash, err);
  if (st != CAIRN_OK)
    return st;
  pthread_mutex_lock(&c->lock); /* O(1) */
  cairn__accounts *s = c->accounts;
  macct *a = id >= 1 && (size_t)id <= s->n ? s->v[id - 1] : NULL;
  if (!a)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no account %lld", (long long)id);
  else if (cairn__accounts_by_key_hash(c, hash))
    st = cairn__error_set(err, CAIRN_EINTERNAL, "key collision; try again");
  else if (cairn__hmap_put(&s->by_key, cairn__hash_key(hash), a))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else {
    cairn__hmap_del(&s->by_key, cairn__hash_key(a->key_hash));
    memcpy(a->key_hash, hash, sizeof hash);
    cairn__journal_put(c->journal, cairn__jrec_account_key(a->id, a->key_hash));
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

int64_t cairn__core_account_of_key(cairn__core *c, const char *key) {
  char hash[65];
  if (!key || strlen(key) != 64)
    return 0;
  cairn__sha256_hex(key, 64, hash);
  pthread_mutex_lock(&c->lock); /* O(1) */
  macct *a = cairn__accounts_by_key_hash(c, hash);
  int64_t id = a ? a->id : 0;
  cairn__core_unlock(c);
  return id;
}

cairn_status cairn__core_attach_account(cairn__core *c, int64_t vol, const char *key,
                                        int64_t *account, cairn_error *err) {
  char hash[65];
  if (!key || strlen(key) != 64)
    return cairn__error_set(err, CAIRN_EFORBIDDEN, "unknown account key");
  cairn__sha256_hex(key, 64, hash);
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock); /* O(1) */
  mvol *v = vol >= 1 && (size_t)vol <= c->nvols ? c->vols[vol - 1] : NULL;
  macct *a = cairn__accounts_by_key_hash(c, hash);
  if (!a)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "unknown account key");
  else if (!v)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)vol);
  else if (v->banned)
    st = cairn__error_set(err, CAIRN_ECONFLICT, "volunteer %lld is banned", (long long)vol);
  else if (v->account == a)
    *account = a->id; /* no change: nothing journaled */
  else if (v->account)
    st = cairn__error_set(err, CAIRN_ECONFLICT, "volunteer %lld is attached to account %lld; "
                          "a host does not move", (long long)vol, (long long)v->account->id);
  else if (a->nhosts >= CAIRN__ACCOUNT_HOSTS)
    st = cairn__accounts_attach(c, a, v, err); /* CAIRN_ECONFLICT: full */
  else if ((st = cairn__acteams_host(c, a, v, err)) == CAIRN_OK && /* its account's team */
           (st = cairn__accounts_attach(c, a, v, err)) == CAIRN_OK) {
    /* what it earned before counts for the account too: an account's totals
     * stay the sums of its hosts', so a later loss takes only what it added */
    a->credit += v->credit;
    a->cpu_seconds += v->cpu_seconds;
    a->results += v->credited;
    cairn__store_account_row row = {.id = a->id, .credit = a->credit,
                                   .cpu_seconds = a->cpu_seconds, .results = a->results,
                                   .expavg = a->expavg, .expavg_time = a->expavg_time};
    cairn__journal_put(c->journal, cairn__jrec_account_credit(&row));
    *account = a->id;
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

/* One host of an account's reading (under c->lock). */
static json_t *host_json(const mvol *v, double now) {
  const char *platform = cairn__vol_platform(v);
  return json_pack("{s:I, s:s, s:f, s:f, s:I, s:o}", "id", (json_int_t)v->id, "name", v->name,
                   "credit", v->credit, "expavg_credit",
                   cairn__expavg_at(now, v->expavg, v->expavg_time), "last_seen",
                   (json_int_t)v->last_seen, "platform",
                   platform ? json_string(platform) : json_null());
}

json_t *cairn__accounts_cpid(cairn__core *c, mvol *v, const cairn__report *r) {
  macct *a = v->account;
  if (!a)
    return NULL;
  if (r->cpid[0] && (r->cpid_time < a->cpid_time ||
                     (r->cpid_time == a->cpid_time && strcmp(r->cpid, a->cpid) < 0))) {
    memcpy(a->cpid, r->cpid, sizeof a->cpid);
    a->cpid_time = r->cpid_time;
    cairn__journal_put(c->journal, cairn__jrec_account_cpid(a->id, a->cpid, a->cpid_time));
  }
  char lower[CAIRN__ACCOUNT_MAX_EMAIL + 1], hash[33];
  size_t n = 0;
  for (; a->email[n] && n < CAIRN__ACCOUNT_MAX_EMAIL; n++)
    lower[n] = (char)tolower((unsigned char)a->email[n]);
  cairn__md5_hex(lower, n, hash);
  return json_pack("{s:s, s:s, s:I}", "email_hash", hash, "id", a->cpid, "time",
                   (json_int_t)a->cpid_time);
}

json_t *cairn__core_account_json(cairn__core *c, int64_t id, int with_email, cairn_error *err) {
  double now = (double)cairn__now();
  json_t *o = NULL, *hosts = json_array();
  pthread_mutex_lock(&c->lock); /* O(its hosts), at most CAIRN__ACCOUNT_HOSTS */
  cairn__accounts *s = c->accounts;
  macct *a = id >= 1 && (size_t)id <= s->n ? s->v[id - 1] : NULL;
  if (!a)
    cairn__error_set(err, CAIRN_ENOTFOUND, "no account %lld", (long long)id);
  else if (hosts) {
    for (uint32_t i = 0; i < a->nhosts; i++)
      json_array_append_new(hosts, host_json(a->hosts[i], now));
    o = json_pack("{s:I, s:s, s:o, s:s, s:I, s:f, s:f, s:I, s:f, s:f}", "id",
                  (json_int_t)a->id, "name", a->name, "team", cairn__acteams_ref(a), "country",
                  a->country ? a->country : "", "created", (json_int_t)a->created, "credit",
                  a->credit, "cpu_seconds", a->cpu_seconds, "results", (json_int_t)a->results,
                  "expavg_credit", cairn__expavg_at(now, a->expavg, a->expavg_time),
                  "expavg_time", a->expavg_time);
    if (o && with_email)
      json_object_set_new(o, "email", json_string(a->email));
  }
  cairn__core_unlock(c);
  if (o)
    json_object_set_new(o, "hosts", hosts);
  else {
    json_decref(hosts);
    if (a)
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  return o;
}
