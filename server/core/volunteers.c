/* volunteers.c — part of the core (core.h): a volunteer's registration and
 * authentication, its standing under the lock (cairn__vol_locked), the
 * reports it sends with its requests (cairn__vol_report), and what it may
 * read (GET /v1/files, GET /v1/tasks/{key}/output).
 *
 * Cost under the lock: authentication is O(1) (a token is found by its
 * hash), registration O(apps declared) (the volunteer table grows by
 * doubling); a report and a read check are bounded at their functions.
 */
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/core/demand.h"
#include "server/dist/dist.h"
#include "server/core/fit.h"
#include "server/core/outputs.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "common/log.h"
#include "server/core/accounts.h"
#include "server/core/apps.h"
#include "server/core/teams.h"
#include "common/sha256.h"

/* ---- register / auth ---- */

/* v's apps as a compact JSON array (malloc'd), or NULL out of memory. */
static char *apps_json_of(const mvol *v) {
  json_t *a = json_array();
  for (int i = 0; a && i < v->napps; i++)
    json_array_append_new(a, json_string(v->apps[i]));
  char *s = a ? json_dumps(a, JSON_COMPACT) : NULL;
  json_decref(a);
  return s;
}

cairn_status cairn__core_register(cairn__core *c, const char *name, const char *cluster,
                                  char **apps, int napps, int slots, const char *peer_url,
                                  int64_t *id, char token[65], cairn_error *err) {
  return cairn__core_register_team(c, name, cluster, apps, napps, slots, peer_url, NULL, id,
                                   token, err);
}

cairn_status cairn__core_register_team(cairn__core *c, const char *name, const char *cluster,
                                       char **apps, int napps, int slots, const char *peer_url,
                                       const char *team, int64_t *id, char token[65],
                                       cairn_error *err) {
  return cairn__core_register_account(c, name, cluster, apps, napps, slots, peer_url, team, NULL,
                                      id, token, err);
}

/* Under the lock, at a registration: v's team is its account's team when
 * that account is in one (teams.h); else the team it asked for, unless that
 * is a team of accounts' name or key (CAIRN_ECONFLICT). The ledger notes
 * it. O(1). */
static cairn_status team_of_host(cairn__core *c, const macct *acct, mvol *v, cairn_error *err) {
  if (acct && acct->team) {
    char *key = cairn__strdup(acct->team->key);
    if (!key)
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    cairn__credit_join(v, key); /* the account's team decides */
  } else if (v->team && cairn__acteams_taken(c, v->team))
    return cairn__error_set(err, CAIRN_ECONFLICT, "\"%s\" is a team of accounts: an account "
                            "joins it (PATCH /v1/accounts/{id})", v->team);
  if (v->team && cairn__team_note(c, v->team))
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  return CAIRN_OK;
}

cairn_status cairn__core_register_account(cairn__core *c, const char *name, const char *cluster,
                                          char **apps, int napps, int slots,
                                          const char *peer_url, const char *team,
                                          const char *account_key, int64_t *id, char token[65],
                                          cairn_error *err) {
  unsigned char raw[32];
  char key_hash[65] = "";
  if (account_key) {
    if (strlen(account_key) != 64)
      return cairn__error_set(err, CAIRN_EFORBIDDEN, "unknown account key");
    cairn__sha256_hex(account_key, 64, key_hash);
  }
  static const char digits[] = "0123456789abcdef";
  if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
    return cairn__error_set(err, CAIRN_EIO, "no randomness for a token: %s", strerror(errno));
  for (int i = 0; i < 32; i++) {
    token[2 * i] = digits[raw[i] >> 4];
    token[2 * i + 1] = digits[raw[i] & 15];
  }
  token[64] = '\0';
  mvol *v = calloc(1, sizeof *v);
  if (!v)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  v->name = cairn__strdup(name);
  v->cluster = cairn__strdup(cluster);
  v->apps = calloc((size_t)napps, sizeof(char *));
  v->slots = slots;
  v->created = v->last_seen = cairn__now();
  v->key_gen = c->peer_gen;
  cairn__sha256_hex(token, 64, v->token_hash);
  v->peer_url = peer_url && *peer_url ? cairn__strdup(peer_url) : NULL;
  cairn__credit_join(v, team ? cairn__strdup(team) : NULL);
  int ok = v->name && v->cluster && v->apps && (!peer_url || !*peer_url || v->peer_url) &&
           (!team || v->team);
  for (int i = 0; ok && i < napps; i++) {
    v->apps[i] = cairn__strdup(apps[i]);
    ok = v->apps[i] != NULL;
    v->napps = i + 1;
  }
  char *apps_json = ok ? apps_json_of(v) : NULL;
  if (!apps_json) {
    cairn__vol_free(v);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  pthread_mutex_lock(&c->lock);
  cairn_status st = CAIRN_OK;
  if (c->nvols == c->capvols) {
    size_t ncap = c->capvols ? 2 * c->capvols : 16;
    mvol **nv = realloc(c->vols, ncap * sizeof *nv);
    if (!nv) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
      goto out;
    }
    c->vols = nv;
    c->capvols = ncap;
  }
  if (cairn__hmap_get(&c->vol_by_token, cairn__hash_key(v->token_hash))) {
    st = cairn__error_set(err, CAIRN_EINTERNAL, "token collision; register again");
    goto out;
  }
  macct *acct = account_key ? cairn__accounts_by_key_hash(c, key_hash) : NULL; /* O(1) */
  if (account_key && !acct) {
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "unknown account key");
    goto out;
  }
  if (acct && acct->nhosts >= CAIRN__ACCOUNT_HOSTS) {
    st = cairn__error_set(err, CAIRN_ECONFLICT, "account %lld has %u hosts, the most one may have",
                          (long long)acct->id, CAIRN__ACCOUNT_HOSTS);
    goto out;
  }
  if ((st = team_of_host(c, acct, v, err)) != CAIRN_OK) /* O(1) */
    goto out;
  if (cairn__hmap_put(&c->vol_by_token, cairn__hash_key(v->token_hash), v)) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  v->id = (int64_t)c->nvols + 1;
  c->vols[c->nvols++] = v;
  *id = v->id;
  cairn__demand_seen(c, v, v->created);
  cairn__dist_seen(c, v, v->created);
  cairn__dist_peer_url(c->dist, v);
  if (cairn__app_runners_add(c, v))
    CAIRN_WARN(&c->log, "out of memory counting the apps of volunteer %lld", (long long)v->id);
  cairn__journal_put(c->journal, cairn__jrec_volunteer_team(
                                   cairn__jrec_volunteer(v->id, v->name, v->cluster, apps_json,
                                                         v->slots, v->token_hash, v->created),
                                   v->team));
  if (v->peer_url)
    cairn__journal_put(c->journal, cairn__jrec_peer(v->id, v->peer_url));
  if (acct && cairn__accounts_attach(c, acct, v, err) != CAIRN_OK) /* O(1), checked above */
    CAIRN_WARN(&c->log, "volunteer %lld not attached to account %lld: %s", (long long)v->id,
               (long long)acct->id, err->text);
  v = NULL; /* the core owns it now */
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  free(apps_json);
  return cairn__journal_wait(c->journal, seq, err);
out:
  cairn__core_unlock(c);
  free(apps_json);
  cairn__vol_free(v);
  return st;
}

cairn_status cairn__core_set_team(cairn__core *c, int64_t id, const char *team, cairn_error *err) {
  char *copy = team ? cairn__strdup(team) : NULL;
  if (team && !copy)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  mvol *v = id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
  if (!v)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)id);
  else if (v->banned)
    st = cairn__error_set(err, CAIRN_ECONFLICT, "volunteer %lld is banned", (long long)id);
  else if (v->account)
    st = cairn__error_set(err, CAIRN_ECONFLICT, "volunteer %lld is a host of account %lld: its "
                          "account's team decides (PATCH /v1/accounts/%lld)", (long long)id,
                          (long long)v->account->id, (long long)v->account->id);
  else if (team && cairn__acteams_taken(c, team))
    st = cairn__error_set(err, CAIRN_ECONFLICT, "\"%s\" is a team of accounts: an account "
                          "joins it (PATCH /v1/accounts/{id})", team);
  else if ((!v->team && !team) || (v->team && team && strcmp(v->team, team) == 0))
    ; /* no change: nothing journaled */
  else if (team && cairn__team_note(c, team))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else {
    CAIRN_INFO(&c->log, "volunteer %lld: team %s%s%s -> %s%s%s", (long long)id,
               v->team ? "\"" : "", v->team ? v->team : "none", v->team ? "\"" : "",
               team ? "\"" : "", team ? team : "none", team ? "\"" : "");
    cairn__credit_join(v, copy);
    copy = NULL;
    cairn__journal_put(c->journal, cairn__jrec_team(id, team));
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  free(copy);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

cairn_status cairn__core_auth(cairn__core *c, const char *token, int64_t *vol, cairn_error *err) {
  char hash[65];
  if (!token || strlen(token) != 64)
    return cairn__error_set(err, CAIRN_EAUTH, "missing or malformed volunteer token");
  cairn__sha256_hex(token, 64, hash);
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__hmap_get(&c->vol_by_token, cairn__hash_key(hash));
  cairn_status st = CAIRN_OK;
  if (!v || strcmp(v->token_hash, hash) != 0)
    st = cairn__error_set(err, CAIRN_EAUTH, "unknown volunteer token");
  else if (v->banned)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "volunteer %lld is banned", (long long)v->id);
  else {
    v->last_seen = cairn__now();
    cairn__demand_seen(c, v, v->last_seen);
    cairn__dist_seen(c, v, v->last_seen);
    *vol = v->id;
  }
  cairn__core_unlock(c);
  return st;
}

/* Volunteer id in good standing (under the lock), or NULL with err set:
 * it may have been banned since its request was authenticated. O(1). */
size_t cairn__vol_lease_bound(const mvol *v) {
  int64_t run = v->slots > 0 ? v->slots : 1;
  if (v->has_offer && v->offer.cores >= 1 && v->offer.cores < run)
    run = v->offer.cores;
  int64_t shown = CAIRN__LEASE_START + v->valid + v->pending; /* results not found bad */
  if (shown < run)
    run = shown;
  return (size_t)run + CAIRN_MAX_PREFETCH;
}

unsigned cairn__core_hold_cap(cairn__core *c, int64_t vol) {
  size_t cap = 1;
  pthread_mutex_lock(&c->lock);
  mvol *v = vol >= 1 && (size_t)vol <= c->nvols ? c->vols[vol - 1] : NULL;
  if (v) {
    size_t bound = cairn__vol_lease_bound(v);
    size_t left = v->nactive < bound ? bound - v->nactive : 0;
    cap = (size_t)(v->slots > 0 ? v->slots : 1);
    cap = left < cap ? left : cap;
  }
  cairn__core_unlock(c);
  return cap ? (unsigned)cap : 1;
}

cairn_status cairn__vol_lease_full(const mvol *v, cairn_error *err) {
  return cairn__error_set(err, CAIRN_ERATE,
                         "volunteer %lld holds %zu leases, its bound (min(slots %d, cores "
                         "offered, %d + its %lld results not found invalid) + %u ahead): return "
                         "a result before asking for more", (long long)v->id, v->nactive,
                         v->slots, CAIRN__LEASE_START, (long long)(v->valid + v->pending),
                         CAIRN_MAX_PREFETCH);
}

void cairn__vol_lapsed(cairn__core *c, mvol *v, int lease_seconds, int64_t now) {
  cairn__trust_lapsed(c, v);
  if (v->lapsed_at && now - v->lapsed_at < lease_seconds)
    return; /* this period's lapses count once */
  v->lapsed_at = now;
  cairn__quar_note(c, v, OUT_ERROR);
}

/* Applies v's report (under the lock). Downloads first: each is recorded
 * against the master's hand-out to v (distribution.c), which the record
 * ends; then failures: a
 * holding reported in the same body ends the transfer records they are
 * checked against; then what v served to peers, counted only for files
 * v holds (its holdings in this report included).
 * O(entries × (holders + transfers of their file)), entries bounded by the
 * caps of common/protocol.h. Out of memory fails the journal (journal.h),
 * so a report is applied whole or the master acknowledges nothing more. */
void cairn__vol_report(cairn__core *c, mvol *v, const cairn__report *r) {
  if (!r)
    return;
  for (size_t i = 0; i < r->nfetched; i++)
    cairn__dist_fetched(c, v, r->fetched[i].sha256, r->fetched[i].source, r->fetched[i].bytes,
                        r->fetched[i].ms);
  for (size_t i = 0; i < r->nfailed; i++)
    cairn__dist_failed(c, v, r->failed[i].sha256, r->failed[i].source, r->failed[i].reason);
  for (size_t i = 0; i < r->nhave; i++)
    cairn__dist_have(c, v, r->have[i]);
  for (size_t i = 0; i < r->nserved; i++)
    cairn__dist_served(c->dist, r->served[i].sha256, r->served[i].bytes, v->id);
  const char *url = r->peer_url;
  if (url && *url && (!v->peer_url || strcmp(v->peer_url, url) != 0)) {
    char *copy = cairn__strdup(url);
    cairn__journal_put(c->journal, copy ? cairn__jrec_peer(v->id, url) : NULL);
    if (copy) {
      free(v->peer_url);
      v->peer_url = copy;
      cairn__dist_peer_url(c->dist, v);
    }
  }
  if (r->fields & CAIRN_FEAT_RESOURCES)
    cairn__fit_set_offer(c, v, &r->resources);
  if (r->fields & CAIRN_FEAT_CHUNKS)
    v->relays = r->chunks;
  if (r->fields & CAIRN_FEAT_PEER_MAX)
    v->peer_max = r->peer_max;
}

/* ---- what a volunteer may read ---- */

/* 1 when task v of job j reads file sha256 (want_key < 0) or the output of
 * task want_key (a parent). */
static int task_reads(const mjob *j, uint32_t v, const char *sha256, int64_t want_key) {
  const mtask *t = &j->tasks[v];
  if (want_key < 0) {
    for (uint32_t k = 0; k < t->ninputs; k++)
      if (strcmp(j->files[t->inputs[k]].sha256, sha256) == 0)
        return 1;
    return cairn__outputs_reads(j, v, sha256); /* a parent's output file */
  }
  for (uint32_t p = j->dag->par_off[v]; p < j->dag->par_off[v + 1]; p++)
    if (j->tasks[j->dag->par[p]].key == want_key)
      return 1;
  return 0;
}

static cairn_status may_read(cairn__core *c, int64_t vol, const char *sha256, int64_t key,
                             cairn_error *err) {
  cairn_status st = CAIRN_OK;
  int found = 0;
  pthread_mutex_lock(&c->lock);
  mvol *v = cairn__vol_locked(c, vol, &st, err);
  found = v && sha256 && cairn__apps_has_file(c, sha256); /* a signed app's: anyone's (apps.h) */
  for (size_t i = 0; v && !found && i < v->nactive; i++) {
    const mlease *l = cairn__hmap_get(&c->leases, (uint64_t)v->active[i]);
    found = l && task_reads(l->job, l->task, sha256, key);
  }
  cairn__core_unlock(c);
  if (st == CAIRN_OK && !found)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN,
                         "volunteer %lld holds no lease on a task that reads %s", (long long)vol,
                         key < 0 ? "this file" : "this output");
  return st;
}

cairn_status cairn__core_may_read_file(cairn__core *c, int64_t vol, const char *sha256,
                                       cairn_error *err) {
  return may_read(c, vol, sha256, -1, err);
}

cairn_status cairn__core_may_read_output(cairn__core *c, int64_t vol, int64_t key,
                                         cairn_error *err) {
  return may_read(c, vol, NULL, key, err);
}

void cairn__core_set_sandbox(cairn__core *c, int64_t id, const char *sandbox) {
  pthread_mutex_lock(&c->lock);
  mvol *v = id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
  if (v)
    snprintf(v->sandbox, sizeof v->sandbox, "%s", sandbox ? sandbox : "");
  cairn__core_unlock(c);
}
