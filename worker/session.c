/* session.c — shared volunteer identity, 401 re-registration. */
#include "worker/session.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "worker/backoff.h"
#include "worker/leases.h"

int cairn__transient(cairn_status rc, long status) {
  if (rc == CAIRN_EIO || rc == CAIRN_ENOMEM)
    return 1;
  if (rc != CAIRN_OK)
    return 0;
  return status == 0 || status == 429 || status >= 500;
}

cairn_status cairn__session_init(cairn__session *s, const char *cred_path,
                                 const cairn__registration *reg, cairn__stopper *stopper,
                                 cairn_error *err) {
  memset(s, 0, sizeof *s);
  s->path = strdup(cred_path);
  if (!s->path)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  pthread_mutex_init(&s->mu, NULL);
  s->reg = *reg;
  s->stopper = stopper;
  return CAIRN_OK;
}

void cairn__session_destroy(cairn__session *s) {
  if (!s->path)
    return;
  pthread_mutex_destroy(&s->mu);
  free(s->path);
  cairn__credentials_clear(&s->cred);
  s->path = NULL;
}

/* Notes the local IP address of c's last connection as the peer host. */
static void learn_ip(cairn__session *s, cairn__conn *c) {
  char ip[64];
  if (s->peers && cairn__http_local_ip(c->http, ip, sizeof ip) == 0)
    cairn__peerstate_learn_ip(s->peers, ip);
}

/* Registers (retrying transient failures until stop) and saves. Called with
 * s->mu held. */
static cairn_status register_locked(cairn__session *s, cairn__conn *c, int retry,
                                    cairn_error *err) {
  cairn__backoff b;
  cairn__credentials fresh;
  cairn_status rc;
  int warned = 0;
  cairn__backoff_init(&b, 200, 5000);
  /* the offer goes in the registration only to a master known to take it
   * (a re-registration); otherwise in the first report after it */
  int features = s->peers ? cairn__peerstate_features(s->peers) : -1;
  s->reg.offer = features >= 0 && ((unsigned)features & CAIRN_FEAT_RESOURCES)
                   ? s->offer : (cairn__resources){0, 0, 0};
  /* "team" goes to a master that lists "cpu", or that has not said yet: a
   * master older than teams refuses it, and is asked again without it */
  cairn__registration reg = s->reg;
  if (features >= 0 && !((unsigned)features & CAIRN_FEAT_CPU))
    reg.team = NULL;
  for (;;) {
    rc = cairn__register(c->http, &reg, &fresh, err);
    if (rc == CAIRN_EINVAL && reg.team && strstr(err->text, "unknown field \"team\"")) {
      CAIRN_WARN(s->log, "%s takes no team: registering without team \"%s\"",
                 cairn__http_base(c->http), reg.team);
      reg.team = NULL;
      continue;
    }
    /* a master older than the sandbox field refuses it: asked again without */
    if (rc == CAIRN_EINVAL && reg.sandbox && strstr(err->text, "unknown field \"sandbox\"")) {
      CAIRN_INFO(s->log, "%s takes no sandbox field: registering without it",
                 cairn__http_base(c->http));
      reg.sandbox = NULL;
      continue;
    }
    if (rc != CAIRN_EIO || !retry)
      break;
    if (cairn__stopper_stopping(s->stopper))
      return cairn__error_set(err, CAIRN_EIO, "stopped before registration completed");
    if (warned++ == 0)
      CAIRN_WARN(s->log, "cannot register with %s yet: %s (retrying)", cairn__http_base(c->http),
                 err->text);
    else
      CAIRN_DEBUG(s->log, "cannot register yet: %s", err->text);
    if (s->give_up_ms && cairn__now_ms() >= s->give_up_ms)
      return CAIRN_EIO;
    if (cairn__stopper_sleep_until_stop(s->stopper, cairn__backoff_next(&b)))
      return cairn__error_set(err, CAIRN_EIO, "stopped before registration completed");
  }
  if (rc != CAIRN_OK) {
    cairn__http_set_token(c->http, s->cred.token[0] ? s->cred.token : NULL);
    return rc;
  }
  rc = cairn__credentials_save(s->path, &fresh, err);
  if (rc != CAIRN_OK) {
    cairn__credentials_clear(&fresh);
    return rc;
  }
  if (s->peers) {
    cairn__peerstate_registered(s->peers, fresh.peer_key[0] ? fresh.peer_key : NULL,
                                fresh.features);
    learn_ip(s, c);
  }
  cairn__credentials_clear(&s->cred);
  s->cred = fresh;
  s->generation++;
  CAIRN_INFO(s->log, "registered with %s as volunteer %lld (row %lld)", s->cred.server, s->cred.id,
             s->cred.row);
  return CAIRN_OK;
}

cairn_status cairn__session_open(cairn__session *s, cairn__conn *c, cairn_error *err) {
  cairn__credentials old;
  cairn_status rc = cairn__credentials_load(s->path, &old, err);
  if (rc == CAIRN_OK && strcmp(old.server, cairn__http_base(c->http)) == 0) {
    pthread_mutex_lock(&s->mu);
    cairn__credentials_clear(&s->cred);
    s->cred = old;
    s->generation++;
    pthread_mutex_unlock(&s->mu);
    CAIRN_INFO(s->log, "reusing volunteer %lld (row %lld) from %s", old.id, old.row, s->path);
    return CAIRN_OK;
  }
  if (rc == CAIRN_OK) {
    CAIRN_INFO(s->log, "%s belongs to %s: registering with %s", s->path, old.server,
               cairn__http_base(c->http));
    cairn__credentials_clear(&old);
  } else if (rc != CAIRN_ENOTFOUND) {
    char why[sizeof err->text];
    snprintf(why, sizeof why, "%s", err->text);
    return cairn__error_set(err, rc, "%s (remove the file to register as a new volunteer)", why);
  }
  pthread_mutex_lock(&s->mu);
  rc = register_locked(s, c, 1, err);
  pthread_mutex_unlock(&s->mu);
  return rc;
}

void cairn__session_prepare(cairn__session *s, cairn__conn *c) {
  pthread_mutex_lock(&s->mu);
  if (c->generation != s->generation) {
    cairn__http_set_token(c->http, s->cred.token);
    c->generation = s->generation;
  }
  pthread_mutex_unlock(&s->mu);
}

void cairn__session_identity(cairn__session *s, long long *id, long long *row) {
  pthread_mutex_lock(&s->mu);
  *id = s->cred.id;
  *row = s->cred.row;
  pthread_mutex_unlock(&s->mu);
}

cairn_status cairn__session_request(cairn__session *s, cairn__conn *c, const char *method,
                                    const char *path, const char *json_body, size_t max_response,
                                    cairn__http_response *resp, cairn_error *err) {
  size_t len = json_body ? strlen(json_body) : 0;
  const char *ctype = json_body ? "application/json" : NULL;
  cairn__session_prepare(s, c);
  cairn_status rc =
    cairn__http_request(c->http, method, path, ctype, json_body, len, max_response, resp, err);
  if (rc != CAIRN_OK || resp->status != 401)
    return rc;
  pthread_mutex_lock(&s->mu);
  if (c->generation == s->generation) {
    CAIRN_WARN(s->log, "%s %s: the master no longer knows volunteer %lld; registering again", method,
               path, s->cred.id);
    rc = register_locked(s, c, 0, err);
  }
  pthread_mutex_unlock(&s->mu);
  if (rc != CAIRN_OK)
    return rc;
  cairn__buf_free(&resp->body);
  cairn__session_prepare(s, c);
  return cairn__http_request(c->http, method, path, ctype, json_body, len, max_response, resp,
                            err);
}

/* cairn__session_report, with "max": max added when max > 0. */
static cairn_status report(cairn__session *s, cairn__conn *c, const char *path, unsigned fields,
                           const cairn__beat *b, unsigned max, size_t max_response,
                           cairn__http_response *resp, cairn_error *err) {
  static const cairn__beat none = {0};
  const int64_t *running = (b ? b : &none)->running, *suspended = (b ? b : &none)->suspended;
  size_t nrunning = b ? b->nrunning : 0, nsuspended = b ? b->nsuspended : 0;
  const cairn__report_progress *progress = b ? b->progress : NULL;
  size_t nprogress = b ? b->nprogress : 0;
  cairn__peer_report r;
  memset(&r, 0, sizeof r);
  int features = -1;
  if (s->peers) {
    (void)cairn__peerstate_report_begin(s->peers, fields, &r); /* out of memory: no fields */
    features = cairn__peerstate_features(s->peers);
  }
  if (running && features >= 0 && (fields & (unsigned)features & CAIRN_FEAT_RUNNING)) {
    r.wire.nrunning = nrunning < CAIRN_MAX_RUNNING ? nrunning : CAIRN_MAX_RUNNING;
    memcpy(r.wire.running, running, r.wire.nrunning * sizeof *running);
    r.wire.fields |= CAIRN_FEAT_RUNNING;
  }
  if (suspended && features >= 0 && (fields & (unsigned)features & CAIRN_FEAT_SUSPENDED)) {
    r.wire.nsuspended = nsuspended < CAIRN_MAX_RUNNING ? nsuspended : CAIRN_MAX_RUNNING;
    memcpy(r.wire.suspended, suspended, r.wire.nsuspended * sizeof *suspended);
    r.wire.fields |= CAIRN_FEAT_SUSPENDED;
  }
  if (progress && nprogress && features >= 0 &&
      (fields & (unsigned)features & CAIRN_FEAT_PROGRESS)) {
    r.wire.nprogress = nprogress < CAIRN_MAX_PROGRESS ? nprogress : CAIRN_MAX_PROGRESS;
    memcpy(r.wire.progress, progress, r.wire.nprogress * sizeof *progress);
    r.wire.fields |= CAIRN_FEAT_PROGRESS;
  }
  if (b && b->cpid && features >= 0 && (fields & (unsigned)features & CAIRN_FEAT_CPID)) {
    snprintf(r.wire.cpid, sizeof r.wire.cpid, "%s", b->cpid_id ? b->cpid_id : "");
    r.wire.cpid_time = b->cpid_time;
    r.wire.fields |= CAIRN_FEAT_CPID;
  }
  if (s->offer.cores > 0 && features >= 0 && (fields & (unsigned)features & CAIRN_FEAT_RESOURCES)) {
    r.wire.resources = s->offer;
    r.wire.fields |= CAIRN_FEAT_RESOURCES;
  }
  json_t *o = cairn__report_json(&r.wire);
  if (o && ((max > 0 && json_object_set_new(o, "max", json_integer(max)) != 0) ||
            (c->wait_ms > 0 && features >= 0 && (features & CAIRN_FEAT_WAIT) &&
             json_object_set_new(o, "wait", json_integer(c->wait_ms)) != 0))) {
    json_decref(o);
    o = NULL;
  }
  char *body = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  cairn_status rc = body ? cairn__session_request(s, c, "POST", path, body, max_response, resp,
                                                  err)
                         : cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  free(body);
  if (s->peers)
    cairn__peerstate_report_end(s->peers, &r,
                                rc == CAIRN_OK && resp->status >= 200 && resp->status < 300);
  if (rc == CAIRN_OK)
    learn_ip(s, c);
  return rc;
}

cairn_status cairn__session_report(cairn__session *s, cairn__conn *c, const char *path,
                                   unsigned fields, const int64_t *running, size_t nrunning,
                                   const int64_t *suspended, size_t nsuspended,
                                   size_t max_response, cairn__http_response *resp,
                                   cairn_error *err) {
  const cairn__beat b = {.running = running, .nrunning = nrunning, .suspended = suspended,
                         .nsuspended = nsuspended};
  return report(s, c, path, fields, &b, 0, max_response, resp, err);
}

cairn_status cairn__session_heartbeat(cairn__session *s, cairn__conn *c, const cairn__beat *b,
                                      size_t max_response, cairn__http_response *resp,
                                      cairn_error *err) {
  return report(s, c, "/v1/heartbeat", CAIRN_HEARTBEAT_FIELDS, b, 0, max_response, resp, err);
}

cairn_status cairn__session_work_many(cairn__session *s, cairn__conn *c, unsigned max,
                                      size_t max_response, cairn__http_response *resp,
                                      cairn_error *err) {
  return report(s, c, "/v1/work", CAIRN_WORK_FIELDS, NULL, max, max_response, resp, err);
}
