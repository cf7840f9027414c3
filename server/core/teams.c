/* teams.c — teams of accounts (teams.h). */
#include "server/core/teams.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/base/hmap.h"
#include "server/base/util.h"
#include "server/core/accounts.h"
#include "server/store/journal.h"
#include "server/store/store_people.h"
#include "server/trust/trust.h"

typedef struct cairn__acteams {
  macteam **v;           /* by id - 1; ids are dense */
  size_t n, cap;
  cairn__hmap by_key;    /* cairn__hash_app(key) -> macteam (chain: key_next) */
  cairn__hmap by_name;   /* cairn__hash_app(name) -> macteam (chain: name_next) */
} cairn__acteams;

int cairn__acteams_open(cairn__core *c) {
  if (!(c->acteams = calloc(1, sizeof *c->acteams)))
    return -1;
  cairn__hmap_init(&c->acteams->by_key);
  cairn__hmap_init(&c->acteams->by_name);
  return 0;
}

static void team_free(macteam *t) {
  if (!t)
    return;
  free(t->key);
  free(t->name);
  free(t->description);
  free(t->url);
  free(t->country);
  free(t);
}

void cairn__acteams_close(cairn__core *c) {
  if (!c->acteams)
    return;
  for (size_t i = 0; i < c->acteams->n; i++)
    team_free(c->acteams->v[i]);
  free(c->acteams->v);
  cairn__hmap_free(&c->acteams->by_key);
  cairn__hmap_free(&c->acteams->by_name);
  free(c->acteams);
  c->acteams = NULL;
}

static macteam *by_key(const cairn__acteams *s, const char *key) {
  for (macteam *t = cairn__hmap_get(&s->by_key, cairn__hash_app(key)); t; t = t->key_next)
    if (strcmp(t->key, key) == 0)
      return t;
  return NULL;
}

static macteam *by_name(const cairn__acteams *s, const char *name) {
  for (macteam *t = cairn__hmap_get(&s->by_name, cairn__hash_app(name)); t; t = t->name_next)
    if (strcmp(t->name, name) == 0)
      return t;
  return NULL;
}

static macteam *by_id(const cairn__acteams *s, int64_t id) {
  return id >= 1 && (size_t)id <= s->n ? s->v[id - 1] : NULL;
}

/* t joins the name table under its name: 0, or -1 out of memory. */
static int name_add(cairn__acteams *s, macteam *t) {
  uint64_t k = cairn__hash_app(t->name);
  t->name_next = cairn__hmap_get(&s->by_name, k);
  return cairn__hmap_put(&s->by_name, k, t);
}

/* t leaves the name table (before its name changes). O(names of its hash). */
static void name_del(cairn__acteams *s, macteam *t) {
  uint64_t k = cairn__hash_app(t->name);
  macteam *head = cairn__hmap_get(&s->by_name, k);
  if (head == t) {
    if (t->name_next) /* replacing a present key never allocates */
      (void)!cairn__hmap_put(&s->by_name, k, t->name_next);
    else
      cairn__hmap_del(&s->by_name, k);
    return;
  }
  for (macteam *p = head; p; p = p->name_next)
    if (p->name_next == t) {
      p->name_next = t->name_next;
      return;
    }
}

/* Adds t (its id next) to the tables: 0, or -1 out of memory (t not
 * added). O(1) amortized. */
static int team_add(cairn__acteams *s, macteam *t) {
  if (s->n == s->cap) {
    size_t ncap = s->cap ? 2 * s->cap : 16;
    macteam **nv = realloc(s->v, ncap * sizeof *nv);
    if (!nv)
      return -1;
    s->v = nv;
    s->cap = ncap;
  }
  uint64_t k = cairn__hash_app(t->key);
  t->key_next = cairn__hmap_get(&s->by_key, k);
  if (cairn__hmap_put(&s->by_key, k, t))
    return -1;
  if (name_add(s, t)) {
    if (t->key_next) /* restore the chain's head */
      (void)!cairn__hmap_put(&s->by_key, k, t->key_next);
    else
      cairn__hmap_del(&s->by_key, k);
    return -1;
  }
  s->v[s->n++] = t;
  return 0;
}

/* A team of the given fields (copied; NULL: ""), or NULL out of memory. */
static macteam *team_new(const char *key, const cairn__team_edit *e) {
  macteam *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  t->key = cairn__strdup(key);
  t->name = cairn__strdup(e->name);
  t->description = cairn__strdup(e->description ? e->description : "");
  t->url = cairn__strdup(e->url ? e->url : "");
  t->country = cairn__strdup(e->country ? e->country : "");
  if (!t->key || !t->name || !t->description || !t->url || !t->country) {
    team_free(t);
    return NULL;
  }
  return t;
}

/* ---- start-up ---- */

static int load_team(void *ud, const cairn__store_teamof_row *r) {
  cairn__core *c = ud;
  cairn__team_edit e = {r->name, r->description, r->url, r->country};
  macteam *t = team_new(r->key, &e);
  if (!t)
    return -1;
  t->id = r->id;
  t->created = r->created;
  t->founder = cairn__accounts_find(c, r->founder);
  if ((size_t)r->id != c->acteams->n + 1 || team_add(c->acteams, t)) {
    team_free(t);
    return -1;
  }
  return 0;
}

static int load_member(void *ud, const cairn__store_member_row *r) {
  cairn__core *c = ud;
  macct *a = cairn__accounts_find(c, r->account);
  if (!a)
    return 0;
  if (*r->country && !(a->country = cairn__strdup(r->country)))
    return -1;
  if ((a->team = by_id(c->acteams, r->team)))
    a->team->members++;
  return 0;
}

cairn_status cairn__acteams_load(cairn__core *c, cairn_error *err) {
  cairn_status st = cairn__store_load_teamsof(c->store, load_team, c, err);
  return st == CAIRN_OK ? cairn__store_load_members(c->store, load_member, c, err) : st;
}

/* ---- under the lock ---- */

int cairn__acteams_taken(cairn__core *c, const char *name) {
  return by_name(c->acteams, name) || by_key(c->acteams, name);
}

cairn_status cairn__acteams_host(cairn__core *c, const macct *a, mvol *v, cairn_error *err) {
  if (!a->team || (v->team && strcmp(v->team, a->team->key) == 0))
    return CAIRN_OK;
  char *key = cairn__strdup(a->team->key);
  if (!key)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn__credit_join(v, key);
  cairn__journal_put(c->journal, cairn__jrec_team(v->id, key));
  return CAIRN_OK;
}

macteam *cairn__acteams_find(cairn__core *c, int64_t id) { return by_id(c->acteams, id); }

json_t *cairn__acteams_ref(const macct *a) {
  return a->team ? json_pack("{s:I, s:s}", "id", (json_int_t)a->team->id, "name", a->team->name)
                 : json_null();
}

/* CAIRN_OK when name may be team self's name (self NULL: a new team's,
 * which is its key too), else CAIRN_ECONFLICT naming the clash. O(1). */
static cairn_status name_free(cairn__core *c, const macteam *self, const char *name,
                              cairn_error *err) {
  const macteam *t = by_name(c->acteams, name);
  if (t && t != self)
    return cairn__error_set(err, CAIRN_ECONFLICT, "team %lld is named \"%s\"", (long long)t->id,
                            name);
  if ((t = by_key(c->acteams, name)) && t != self)
    return cairn__error_set(err, CAIRN_ECONFLICT, "\"%s\" is team %lld's name in the team "
                            "ledger (its first name)", name, (long long)t->id);
  if (!t && cairn__team_find(c, name))
    return cairn__error_set(err, CAIRN_ECONFLICT, "\"%s\" is a team of the team ledger (a "
                            "volunteer's team)", name);
  return CAIRN_OK;
}

/* Under the lock: a's team becomes t (NULL: none), its hosts' teams with
 * it (keys[i]: host i's copy of t's key, taken; NULL entries when t is
 * NULL), all journaled in the caller's group. O(a's hosts). */
static void join_locked(cairn__core *c, macct *a, macteam *t, char **keys) {
  if (a->team)
    a->team->members--;
  a->team = t;
  if (t)
    t->members++;
  cairn__journal_put(c->journal, cairn__jrec_account_team(a->id, t ? t->id : 0));
  for (uint32_t i = 0; i < a->nhosts; i++) {
    mvol *v = a->hosts[i];
    if (v->banned || (!v->team && !keys[i]) || (v->team && keys[i] && !strcmp(v->team, keys[i]))) {
      free(keys[i]); /* no change */
      continue;
    }
    cairn__credit_join(v, keys[i]);
    cairn__journal_put(c->journal, cairn__jrec_team(v->id, v->team));
  }
}

/* Under the lock: a copy of t's key for each of a's hosts (t NULL: an
 * array of NULL), or NULL out of memory (nothing kept). O(a's hosts). */
static char **keys_for(const macct *a, const macteam *t) {
  char **keys = calloc(a->nhosts ? a->nhosts : 1, sizeof *keys);
  for (uint32_t i = 0; keys && t && i < a->nhosts; i++)
    if (!(keys[i] = cairn__strdup(t->key))) {
      for (uint32_t k = 0; k < i; k++)
        free(keys[k]);
      free(keys);
      return NULL;
    }
  return keys;
}

/* Journals t's row (fresh: a new one). */
static void journal_team(cairn__core *c, const macteam *t, int fresh) {
  cairn__store_teamof_row row = {.id = t->id, .founder = t->founder ? t->founder->id : 0,
                                .created = t->created, .key = t->key, .name = t->name,
                                .description = t->description, .url = t->url,
                                .country = t->country};
  cairn__journal_put(c->journal, cairn__jrec_teamof(&row, fresh));
}

/* Ends a call that took the lock: unlocks, then waits for its records
 * when st is CAIRN_OK. */
static cairn_status finish(cairn__core *c, cairn_status st, cairn_error *err) {
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}

cairn_status cairn__core_team_create(cairn__core *c, int64_t account, const cairn__team_edit *e,
                                     int64_t *id, cairn_error *err) {
  macteam *t = team_new(e->name, e);
  if (!t)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  t->created = cairn__now();
  char **keys = NULL;
  pthread_mutex_lock(&c->lock); /* O(the account's hosts): their teams */
  macct *a = cairn__accounts_find(c, account);
  cairn_status st = CAIRN_OK;
  if (!a)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no account %lld", (long long)account);
  else if ((st = name_free(c, NULL, e->name, err)) != CAIRN_OK)
    ; /* err names the clash */
  else if (!(keys = keys_for(a, t)))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else {
    t->id = (int64_t)c->acteams->n + 1;
    t->founder = a;
    if (team_add(c->acteams, t))
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (st == CAIRN_OK) {
    journal_team(c, t, 1);
    join_locked(c, a, t, keys);
    *id = t->id;
    t = NULL; /* the module's now */
  } else if (keys) {
    for (uint32_t i = 0; i < a->nhosts; i++)
      free(keys[i]);
  }
  free(keys);
  st = finish(c, st, err);
  team_free(t);
  return st;
}

/* Under the lock: t is named fresh (taken) in the name table; its old
 * name is returned (the caller's to free). NULL out of memory: t keeps its
 * name, fresh stays the caller's. O(names of the two hashes). */
static char *rename_locked(cairn__acteams *s, macteam *t, char *fresh) {
  char *old = t->name;
  name_del(s, t);
  t->name = fresh;
  if (name_add(s, t) == 0)
    return old;
  t->name = old;
  (void)!name_add(s, t); /* the slot it just left: the table need not grow */
  return NULL;
}

cairn_status cairn__core_team_edit(cairn__core *c, int64_t account, int64_t id,
                                   const cairn__team_edit *e, cairn_error *err) {
  const char *src[4] = {e->name, e->description, e->url, e->country};
  char *nv[4] = {NULL, NULL, NULL, NULL}; /* the new values, then the old ones to free */
  for (int i = 0; i < 4; i++)
    if (src[i] && !(nv[i] = cairn__strdup(src[i]))) {
      for (int k = 0; k < i; k++)
        free(nv[k]);
      return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    }
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock); /* O(1) */
  macteam *t = by_id(c->acteams, id);
  if (!t)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no team %lld", (long long)id);
  else if (!t->founder || t->founder->id != account)
    st = cairn__error_set(err, CAIRN_EFORBIDDEN, "only team %lld's founder (account %lld) may "
                          "change it", (long long)id, (long long)(t->founder ? t->founder->id : 0));
  else if (nv[0] && (st = name_free(c, t, nv[0], err)) != CAIRN_OK)
    ; /* err names the clash */
  else if (nv[0] && strcmp(nv[0], t->name) != 0) {
    char *old = rename_locked(c->acteams, t, nv[0]);
    if (old)
      nv[0] = old; /* freed below */
    else
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (st == CAIRN_OK) {
    char **field[4] = {NULL, &t->description, &t->url, &t->country};
    for (int i = 1; i < 4; i++)
      if (nv[i]) { /* swapped: the old value is freed below */
        char *old = *field[i];
        *field[i] = nv[i];
        nv[i] = old;
      }
    journal_team(c, t, 0);
  }
  st = finish(c, st, err);
  for (int i = 0; i < 4; i++)
    free(nv[i]);
  return st;
}

cairn_status cairn__core_account_join(cairn__core *c, int64_t account, int64_t team,
                                      cairn_error *err) {
  cairn_status st = CAIRN_OK;
  char **keys = NULL;
  pthread_mutex_lock(&c->lock); /* O(the account's hosts) */
  macct *a = cairn__accounts_find(c, account);
  macteam *t = team ? by_id(c->acteams, team) : NULL;
  if (!a)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no account %lld", (long long)account);
  else if (team && !t)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no team %lld", (long long)team);
  else if (a->team == t)
    ; /* no change: nothing journaled */
  else if (!(keys = keys_for(a, t)))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else {
    CAIRN_INFO(&c->log, "account %lld: team %lld -> %lld", (long long)a->id,
               (long long)(a->team ? a->team->id : 0), (long long)team);
    join_locked(c, a, t, keys);
  }
  free(keys);
  return finish(c, st, err);
}

json_t *cairn__core_team_json(cairn__core *c, int64_t id, cairn_error *err) {
  double now = (double)cairn__now();
  json_t *o = NULL;
  pthread_mutex_lock(&c->lock); /* O(1) */
  macteam *t = by_id(c->acteams, id);
  if (!t)
    cairn__error_set(err, CAIRN_ENOTFOUND, "no team %lld", (long long)id);
  else {
    const mteam *l = cairn__team_find(c, t->key); /* its ledger entry: NULL before credit */
    json_t *founder = t->founder ? json_pack("{s:I, s:s}", "id", (json_int_t)t->founder->id,
                                             "name", t->founder->name)
                                 : json_null();
    o = json_pack("{s:I, s:s, s:o, s:I, s:s, s:s, s:s, s:I, s:f, s:f}", "id",
                  (json_int_t)t->id, "name", t->name, "founder", founder, "created",
                  (json_int_t)t->created, "description", t->description, "url", t->url,
                  "country", t->country, "members", (json_int_t)t->members, "credit",
                  l ? l->credit : 0.0, "expavg_credit",
                  l ? cairn__expavg_at(now, l->expavg, l->expavg_time) : 0.0);
    if (!o)
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  cairn__core_unlock(c);
  return o;
}
