/* admission.c — who may register a volunteer: POST /v1/volunteers under
 * cfg.registration (open, invite, closed) and the admin's invitation
 * routes (/v1/invitations). Parses and checks like api.c, whose helpers it
 * uses; the codes themselves live in invitations.c. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/appsig.h"
#include "common/limits.h"
#include "common/protocol.h"
#include "common/resources.h"
#include "common/termsafe.h"
#include "server/core/accounts.h"
#include "server/core/fit.h"
#include "server/api/api.h"

/* "peer_url" of a registration: "" when absent; NULL (and a 400 in rs) when
 * malformed. */
static const char *peer_url_of(json_t *o, cairn__resp *rs) {
  json_t *v = json_object_get(o, "peer_url");
  const char *u = "";
  cairn_error err = {0};
  if (v && cairn__report_peer_url(v, &u, &err) != CAIRN_OK) {
    cairn__api_fail(rs, &err);
    return NULL;
  }
  return u;
}

/* 1 when member key of o (a string, its length already checked) is text
 * safe to show (common/termsafe.h, cairn__text_valid: valid UTF-8 without
 * C0 or C1 controls, DEL or bidirectional controls); else 0 with a 400
 * naming key in rs. Absent members are fine. O(length). */
static int text_ok(json_t *o, const char *key, cairn__resp *rs) {
  json_t *v = json_object_get(o, key);
  if (!v || cairn__text_valid(json_string_value(v), json_string_length(v)))
    return 1;
  cairn__api_failf(rs, CAIRN_EINVAL,
                   "\"%s\" must be valid UTF-8 without control characters or "
                   "bidirectional controls (U+061C, U+200E, U+200F, U+202A-U+202E, U+2066-U+2069)",
                   key);
  return 0;
}

/* 403 {"error": {"code": code, "message": text}}. */
static void refuse(cairn__resp *rs, const char *code, const char *text) {
  cairn__api_json(rs, 403, json_pack("{s:{s:s, s:s}}", "error", "code", code, "message", text));
}

/* Whether a registration with body o may go on (cfg.registration): 1 (with
 * the invitation it spends in *invite, 0 for none), or 0 with the 403 in
 * rs; a code refused also spends one of the address's anonymous tokens. */
int cairn__admission_admitted(cairn_master *m, const cairn__req *rq, json_t *o, int64_t *invite,
                              cairn__resp *rs) {
  static const char *const why[] = {
    [CAIRN__INVITE_INVALID] = "invitation_invalid", [CAIRN__INVITE_EXPIRED] = "invitation_expired",
    [CAIRN__INVITE_USED_UP] = "invitation_used_up"};
  static const char *const text[] = {
    [CAIRN__INVITE_INVALID] = "no such invitation (mistyped or revoked)",
    [CAIRN__INVITE_EXPIRED] = "this invitation has expired",
    [CAIRN__INVITE_USED_UP] = "this invitation has been used as often as it allows"};
  json_t *code = json_object_get(o, "invitation");
  *invite = 0;
  if (code && (!json_is_string(code) || json_string_length(code) == 0 ||
               json_string_length(code) > CAIRN_MAX_NAME)) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"invitation\" must be a code of at most %u characters",
                     CAIRN_MAX_NAME);
    return 0;
  }
  if (m->registration == CAIRN__REG_OPEN)
    return 1;
  if (m->registration == CAIRN__REG_CLOSED) {
    refuse(rs, "registration_closed", "this master registers no new volunteers");
    return 0;
  }
  if (!code) {
    refuse(rs, "invitation_required", "this master registers volunteers by invitation: "
           "send \"invitation\"");
    return 0;
  }
  cairn__invite_verdict v = cairn__invites_use(m->invites, json_string_value(code), cairn__now(),
                                               invite);
  if (v == CAIRN__INVITE_OK)
    return 1;
  cairn__resp ignored = {.fd = -1};
  if (!cairn__api_anonymous_ok(m, rq->client_ip, &ignored)) /* as a failed authentication */
    free(ignored.body);
  refuse(rs, why[v], text[v]);
  return 0;
}

/* A team name tv (a JSON value; null as none when null_ok) into *team,
 * borrowed from tv: 0, or -1 with the 400 in rs. The same check at
 * registration and at a change. */
static int team_of(json_t *tv, int null_ok, const char **team, cairn__resp *rs) {
  *team = json_string_value(tv);
  if ((null_ok && json_is_null(tv)) ||
      (*team && strlen(*team) == json_string_length(tv) && cairn__team_valid(*team)))
    return 0;
  cairn__api_failf(rs, CAIRN_EINVAL,
                   "\"%s\" must be 1 to %u printable ASCII characters, without "
                   "quotes or backslashes%s",
                   CAIRN_TEAM_KEY, CAIRN_MAX_TEAM, null_ok ? ", or null" : "");
  return -1;
}

/* PATCH's "account_key": attaches volunteer id (0 with the answer in rs
 * on a failure; a wrong key is a failed authentication). */
static int attach(cairn_master *m, const cairn__req *rq, int64_t id, json_t *k, int64_t *acct,
                  cairn__resp *rs) {
  cairn_error err = {0};
  if (!json_is_string(k) || json_string_length(k) != 64) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"account_key\" must be an account key (64 characters)");
    return 0;
  }
  if (cairn__core_attach_account(m->core, id, json_string_value(k), acct, &err) == CAIRN_OK)
    return 1;
  if (err.status != CAIRN_EFORBIDDEN) {
    cairn__api_fail(rs, &err);
    return 0;
  }
  cairn__resp ignored = {.fd = -1};
  if (!cairn__api_anonymous_ok(m, rq->client_ip, &ignored))
    free(ignored.body);
  refuse(rs, "account_key_invalid", "no account has this account key");
  return 0;
}

void cairn__admission_team(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {CAIRN_TEAM_KEY, "account_key", NULL};
  const char *end = NULL;
  int64_t id = cairn__api_id(rq->path + strlen("/v1/volunteers/"), &end);
  if (id < 0 || *end)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" is not a volunteer id",
                            rq->path + strlen("/v1/volunteers/"));
  if (!cairn__api_is_admin(m, rq->token)) { /* else the volunteer itself */
    int64_t self = cairn__api_volunteer(m, rq, rs);
    if (!self)
      return;
    if (self != id)
      return cairn__api_failf(rs, CAIRN_EFORBIDDEN, "volunteer %lld may change only its own team",
                              (long long)self);
  }
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  const char *team = NULL;
  if (!o)
    return;
  json_t *tv = json_object_get(o, CAIRN_TEAM_KEY), *kv = json_object_get(o, "account_key");
  int64_t acct = 0;
  cairn_error err = {0};
  if (!tv && !kv)
    cairn__api_failf(rs, CAIRN_EINVAL, "missing \"%s\" (a name, or null to leave its team) or "
                     "\"account_key\"", CAIRN_TEAM_KEY);
  else if (tv && team_of(tv, 1, &team, rs) != 0)
    ; /* the 400 is in rs */
  else if (kv && !attach(m, rq, id, kv, &acct, rs))
    ; /* the answer is in rs: nothing changed */
  else if (tv && cairn__core_set_team(m->core, id, team, &err) != CAIRN_OK)
    cairn__api_error(rs, err.status, err.text);
  else {
    json_t *a = json_pack("{s:I}", "id", (json_int_t)id);
    if (a && tv)
      json_object_set_new(a, CAIRN_TEAM_KEY, team ? json_string(team) : json_null());
    if (a && kv)
      json_object_set_new(a, "account", json_integer(acct));
    cairn__api_json(rs, 200, a);
  }
  json_decref(o);
}

/* The registration's "platform" (a worker that runs the project's signed
 * apps, docs/apps.md) as "@PLATFORM" in buf; "" when absent. -1 with the
 * 400 in rs when it is not a platform name. */
static int platform_of(json_t *p, char buf[CAIRN_APP_MAX_PLATFORM + 2], cairn__resp *rs) {
  buf[0] = '\0';
  if (!p)
    return 0;
  if (!json_is_string(p) || !cairn__app_platform_ok(json_string_value(p))) {
    cairn__api_failf(rs, CAIRN_EINVAL,
                     "\"platform\" must be 1 to %u of [a-z0-9_-] (\"linux-x86_64\")",
                     CAIRN_APP_MAX_PLATFORM);
    return -1;
  }
  snprintf(buf, CAIRN_APP_MAX_PLATFORM + 2, "@%s", json_string_value(p));
  return 0;
}

void cairn__admission_register(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"name",     "cluster", "apps", "slots",
                                     "peer_url", CAIRN_RESOURCES_KEY, "invitation",
                                     CAIRN_TEAM_KEY, "platform", "sandbox", "account_key", NULL};
  json_t *o = cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  const char *sandbox = json_string_value(json_object_get(o, "sandbox"));
  if (json_object_get(o, "sandbox") && (!sandbox || (strcmp(sandbox, "bwrap") != 0 &&
                                                      strcmp(sandbox, "none") != 0))) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"sandbox\" must be \"bwrap\" or \"none\"");
    goto out;
  }
  const char *apps[CAIRN_MAX_APPS];
  int napps = 0, slots = 1;
  const char *name = cairn__api_opt_str(o, "name", "", rs);
  const char *cluster = name ? cairn__api_opt_str(o, "cluster", "", rs) : NULL;
  const char *peer = cluster ? peer_url_of(o, rs) : NULL;
  if (!name || !cluster || !peer || !text_ok(o, "name", rs) || !text_ok(o, "cluster", rs))
    goto out;
  char net[32] = "";
  if (!*cluster && rq->client_ip && *rq->client_ip) {
    /* no label: the worker's /24 */
    unsigned a, b, c3, d;
    if (sscanf(rq->client_ip, "%u.%u.%u.%u", &a, &b, &c3, &d) == 4)
      snprintf(net, sizeof net, "%u.%u.%u.0/24", a, b, c3);
    cluster = net;
  }
  if (!*cluster)
    cluster = "default";
  if (strlen(cluster) > 64 || strpbrk(cluster, "\"\\")) {
    cairn__api_failf(rs, CAIRN_EINVAL,
                     "\"cluster\" must be at most 64 characters, without quotes, "
                     "backslashes or control characters");
    goto out;
  }
  const char *team = NULL;
  if (json_object_get(o, CAIRN_TEAM_KEY) && team_of(json_object_get(o, CAIRN_TEAM_KEY), 0, &team, rs))
    goto out;
  if (!json_object_get(o, "apps")) {
    cairn__api_failf(rs, CAIRN_EINVAL, "missing \"apps\"");
    goto out;
  }
  if (cairn__api_apps(json_object_get(o, "apps"), apps, CAIRN_MAX_APPS, &napps, rs))
    goto out;
  char platform[CAIRN_APP_MAX_PLATFORM + 2];
  if (platform_of(json_object_get(o, "platform"), platform, rs))
    goto out;
  if (platform[0] && napps < (int)CAIRN_MAX_APPS)
    apps[napps++] = platform; /* "@PLATFORM": the project's signed apps (core/apps.h) */
  if (napps == 0) {
    cairn__api_failf(rs, CAIRN_EINVAL,
                     "\"apps\" must name at least one app, or \"platform\" be given");
    goto out;
  }
  json_t *sl = json_object_get(o, "slots");
  if (sl) {
    if (!json_is_integer(sl) || json_integer_value(sl) < 1 ||
        json_integer_value(sl) > CAIRN_MAX_SLOTS) {
      cairn__api_failf(rs, CAIRN_EINVAL, "\"slots\" must be an integer from 1 to %u",
                       CAIRN_MAX_SLOTS);
      goto out;
    }
    slots = (int)json_integer_value(sl);
  }
  int64_t id, invite = 0;
  char token[65];
  cairn_error err = {0};
  cairn__resources offer;
  json_t *res = json_object_get(o, CAIRN_RESOURCES_KEY);
  if (res && cairn__resources_parse(res, &CAIRN_RESOURCES_DEFAULT, &offer, "registration",
                                   &err) != CAIRN_OK) {
    cairn__api_fail(rs, &err);
    goto out;
  }
  json_t *akey = json_object_get(o, "account_key");
  if (akey && (!json_is_string(akey) || json_string_length(akey) != 64)) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"account_key\" must be an account key (64 characters)");
    goto out;
  }
  if (!cairn__admission_admitted(m, rq, o, &invite, rs))
    goto out;
  if (cairn__core_register_account(m->core, name, cluster, (char **)apps, napps, slots, peer,
                                   team, json_string_value(akey), &id, token, &err) != CAIRN_OK) {
    if (invite)
      cairn__invites_unuse(m->invites, invite);
    if (err.status == CAIRN_EFORBIDDEN) { /* a wrong account key: a failed authentication */
      cairn__resp ignored = {.fd = -1};
      if (!cairn__api_anonymous_ok(m, rq->client_ip, &ignored))
        free(ignored.body);
      refuse(rs, "account_key_invalid", "no account has this account key");
    } else
      cairn__api_fail(rs, &err);
    goto out;
  }
  cairn__core_set_sandbox(m->core, id, sandbox);
  if (res && cairn__core_set_offer(m->core, id, &offer, &err) != CAIRN_OK)
    cairn__api_fail(rs, &err); /* registered: the invitation's use stays spent */
  else {
    char key[65];
    cairn__core_peer_key(m->core, id, key);
    cairn__api_json(rs, 201,
                    json_pack("{s:I, s:I, s:s, s:s, s:s, s:o}", "id", (json_int_t)id, "row",
                              (json_int_t)id, "token", token, "cluster", cluster, "peer_key", key,
                              CAIRN_FEATURES_KEY, cairn__features_json(CAIRN_FEATURES_ALL)));
  }
out:
  json_decref(o);
}

/* POST /v1/invitations {"uses": N, "expires_seconds": S, "note": TEXT}. */
void cairn__admission_invite(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"uses", "expires_seconds", "note", NULL};
  json_t *o = cairn__api_body(rq, keys, 1, rs);
  if (!o)
    return;
  json_t *u = json_object_get(o, "uses"), *e = json_object_get(o, "expires_seconds");
  const char *note = cairn__api_opt_str(o, "note", "", rs);
  cairn_error err = {0};
  json_t *made = NULL;
  if (!note)
    goto out;
  if (u && (!json_is_integer(u) || json_integer_value(u) < 1 ||
            json_integer_value(u) > CAIRN_MAX_INVITATION_USES)) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"uses\" must be an integer from 1 to %d",
                     CAIRN_MAX_INVITATION_USES);
    goto out;
  }
  if (e && (!json_is_integer(e) || json_integer_value(e) < 1 ||
            json_integer_value(e) > CAIRN_MAX_INVITATION_SECONDS)) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"expires_seconds\" must be an integer from 1 to %d",
                     CAIRN_MAX_INVITATION_SECONDS);
    goto out;
  }
  if (strlen(note) > CAIRN_MAX_INVITATION_NOTE || !cairn__text_valid(note, strlen(note))) {
    cairn__api_failf(rs, CAIRN_EINVAL,
                     "\"note\" must be at most %u bytes of UTF-8 without control "
                     "characters or bidirectional controls",
                     CAIRN_MAX_INVITATION_NOTE);
    goto out;
  }
  made = cairn__invites_create(m->invites, u ? (int)json_integer_value(u) : 1,
                               e ? json_integer_value(e) : CAIRN_DEFAULT_INVITATION_SECONDS, note,
                               cairn__now(), &err);
  if (made)
    cairn__api_json(rs, 201, made);
  else
    cairn__api_fail(rs, &err);
out:
  json_decref(o);
}

void cairn__admission_invitations(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  cairn__api_json(rs, 200, cairn__invites_list(m->invites, cairn__now()));
}

void cairn__admission_revoke(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *s = rq->path + strlen("/v1/invitations/"), *end = NULL;
  int64_t id = cairn__api_id(s, &end);
  cairn_error err = {0};
  if (id < 0 || *end)
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\" is not an invitation id", s);
  else if (cairn__invites_revoke(m->invites, id, &err) != CAIRN_OK)
    cairn__api_fail(rs, &err);
  else
    cairn__api_json(rs, 200, json_pack("{s:I, s:b}", "id", (json_int_t)id, "revoked", 1));
}
