/* teams.h — teams of accounts (docs/accountability.md, "Teams of
 * accounts"): a team an account makes (its founder, who may rename and
 * describe it), which accounts join and leave. A team of accounts counts
 * its credit in the team ledger (server/trust/team.c) under its key, its
 * name when it was made, which never changes: a rename moves no row. While
 * an account is in a team, each of its hosts' team (mvol.team) is that key,
 * so their future credit counts for it; joining or leaving moves no past
 * credit. Private to server/.
 *
 * State (struct cairn__acteams, c->acteams): every team of accounts (never
 * freed before close) by id, by key and by name; each account's team
 * (macct.team) and country. All of it under c->lock.
 *
 * Bounds under c->lock: a look-up, a creation, a rename are O(1) (hash
 * look-ups); joining or leaving is O(the account's hosts), at most
 * CAIRN__ACCOUNT_HOSTS; nothing here walks the members of a team (its top
 * members are read from the store: store_people.h). */
#ifndef CAIRN_CORE_TEAMS_H
#define CAIRN_CORE_TEAMS_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "server/model/state.h"

/* A team's name: 1 to 64 characters (UTF-8, no control or bidirectional
 * control characters, common/termsafe.h), at most 256 bytes; its
 * description, url (http:// or https://, no spaces) and country, at most
 * these bytes. */
#define CAIRN__TEAM_MAX_NAME 64u
#define CAIRN__TEAM_MAX_NAME_BYTES 256u
#define CAIRN__TEAM_MAX_DESCRIPTION 4096u
#define CAIRN__TEAM_MAX_URL 512u
#define CAIRN__TEAM_MAX_COUNTRY 64u

typedef struct macteam {
  int64_t id, created;
  char *key;               /* its name in the team ledger: never changes */
  char *name, *description, *url, *country;
  macct *founder;
  uint32_t members;        /* accounts in it now */
  struct macteam *key_next, *name_next; /* others of the same hash */
} macteam;

/* Makes and frees c->acteams (cairn__core_open, close); -1 out of memory. */
int cairn__acteams_open(cairn__core *c);
void cairn__acteams_close(cairn__core *c);
/* Loads the teams and each account's team and country (cairn__core_load,
 * after the accounts, before the volunteers). */
cairn_status cairn__acteams_load(cairn__core *c, cairn_error *err);

/* Under c->lock, O(1): 1 when name is a team of accounts' name or key (a
 * volunteer may not take it as its own team: docs/accountability.md). */
int cairn__acteams_taken(cairn__core *c, const char *name);
/* Under c->lock: v, attached to a, takes a's team when a is in one (its
 * team becomes the team's key, journaled in the caller's group); nothing
 * when a is in none. O(1). CAIRN_ENOMEM (nothing changed). */
cairn_status cairn__acteams_host(cairn__core *c, const macct *a, mvol *v, cairn_error *err);
/* Under c->lock: team id, or NULL (ids are dense: none past the last).
 * O(1). */
macteam *cairn__acteams_find(cairn__core *c, int64_t id);
/* Under c->lock: {"id", "name"} of a's team, or JSON null. */
json_t *cairn__acteams_ref(const macct *a);

/* A team's fields a request gives (NULL: not given; checked by the caller
 * for their form, here for the name's uniqueness). */
typedef struct cairn__team_edit {
  const char *name, *description, *url, *country;
} cairn__team_edit;

/* Account account makes a team named e->name (its key too) and joins it,
 * leaving its team if any: its id once durable. CAIRN_ENOTFOUND (no such
 * account), CAIRN_ECONFLICT naming the clash when the name is a team's
 * name or key or a name of the team ledger. O(its hosts). */
cairn_status cairn__core_team_create(cairn__core *c, int64_t account, const cairn__team_edit *e,
                                     int64_t *id, cairn_error *err);
/* Team id's fields given in e change, once durable: CAIRN_ENOTFOUND,
 * CAIRN_EFORBIDDEN unless account is its founder, CAIRN_ECONFLICT for a
 * name taken (its own key is free to it again). O(1). */
cairn_status cairn__core_team_edit(cairn__core *c, int64_t account, int64_t id,
                                   const cairn__team_edit *e, cairn_error *err);
/* Account account joins team (0: leaves its team), once durable; its hosts'
 * teams follow (O(its hosts)). CAIRN_ENOTFOUND (no such account or team).
 * Joining the team it is in changes nothing. */
cairn_status cairn__core_account_join(cairn__core *c, int64_t account, int64_t team,
                                      cairn_error *err);
/* {"id", "name", "founder": {"id", "name"}, "created", "description", "url",
 * "country", "members", "credit", "expavg_credit"} (its ledger's, the
 * average as of now); CAIRN_ENOTFOUND. O(1). */
json_t *cairn__core_team_json(cairn__core *c, int64_t id, cairn_error *err);

#endif
