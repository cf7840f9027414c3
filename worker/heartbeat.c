/* heartbeat.c — renews the leases of running tasks (POST /v1/heartbeat every
 * lease_seconds/3) and marks as lost those the master no longer lists, which
 * makes their task threads kill the app and drop the result. The same
 * request reports holdings, served bytes, downloads, failed sources and the
 * peer URL (peerstate.h), also between tasks: soon after a new holding,
 * failure or URL, every few seconds while bytes served or downloads wait to
 * be reported, and soon after start when the master's features are not
 * known yet; its answer renews the peer key and tells the features. While
 * the worker is paused (throttle.h) it names the leases of the stopped
 * apps in "suspended", when the master takes it, and the progress the
 * running apps reported in "progress" (resume.h). At start-up,
 * cairn__heartbeat_resume asks the master which recorded tasks are still
 * this volunteer's. Each answer's newest signed tree head goes to the
 * project's audit log, checked at the next tick (auditlog.h). A worker of
 * several projects asks each master for its account's cross-project id and
 * offers the oldest of those of the same e-mail (cpid.h). */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/protocol.h"
#include "worker/backoff.h"
#include "worker/worker_int.h"

#define TICK_MS 100
#define MAX_EXTENDED 65536

/* cairn__heartbeat_parse of an answer already parsed (root; NULL: not JSON). */
static long parse_root(json_t *root, long long **out, cairn__peerstate *peers) {
  json_t *ext = json_object_get(root, "extended");
  if (json_is_object(root)) {
    cairn__peerstate_set_key(peers, json_string_value(json_object_get(root, "peer_key")));
    cairn__peerstate_set_features(
      peers, cairn__features_parse(json_object_get(root, CAIRN_FEATURES_KEY)));
  }
  long n = -1;
  *out = NULL;
  if (json_is_array(ext) && json_array_size(ext) <= MAX_EXTENDED) {
    size_t k = json_array_size(ext);
    *out = calloc(k + 1, sizeof **out);
    n = *out ? (long)k : -1;
    for (size_t i = 0; *out && i < k; i++)
      (*out)[i] = (long long)json_integer_value(json_array_get(ext, i));
  }
  return n;
}

long cairn__heartbeat_parse(const char *body, size_t len, long long **out,
                            cairn__peerstate *peers) {
  json_t *root = json_loadb(body ? body : "", len, 0, NULL);
  long n = parse_root(root, out, peers);
  json_decref(root);
  return n;
}

/* One heartbeat. Returns 0 when the master answered 200, -1 otherwise. */
static int beat(cairn__heartbeat *hb) {
  cairn_worker *w = hb->w;
  cairn__project *p = hb->p;
  cairn__http_response resp = {0};
  cairn_error err = {0};
  char msg[300];
  int64_t running[CAIRN_MAX_RUNNING], suspended[CAIRN_MAX_RUNNING];
  unsigned long bound = cairn__leases_begin(&p->leases);
  size_t nrunning = cairn__leases_running(&p->leases, running, CAIRN_MAX_RUNNING);
  size_t nsuspended = 0;
  if (cairn__throttle_paused(&w->throttle)) /* every attached app is stopped */
    for (size_t i = 0; i < w->slots && nsuspended < CAIRN_MAX_RUNNING; i++) {
      long long index = cairn__throttle_attached(&w->throttle, i)
                          ? cairn__leases_index(&p->leases, i) : -1;
      if (index > 0)
        suspended[nsuspended++] = index;
    }
  size_t nprogress = cairn__resume_progress(&p->resume, hb->progress, CAIRN_MAX_PROGRESS);
  char cpid[33];
  cairn__beat b = {running, nrunning, suspended, nsuspended, hb->progress, nprogress,
                   w->several, NULL, 0}; /* several projects: agree on a cross-project id */
  if (w->several && cairn__cpids_offer(&w->cpids, p->k, cpid, &b.cpid_time))
    b.cpid_id = cpid;
  cairn_status rc = cairn__session_heartbeat(&p->session, &hb->conn, &b, 1 << 20, &resp, &err);
  long status = resp.status;
  int ok = -1;
  if (nsuspended && rc == CAIRN_OK && status == 200 &&
      (cairn__peerstate_features(&p->peers) & CAIRN_FEAT_SUSPENDED))
    CAIRN_INFO(&p->log, "heartbeat: %zu lease%s suspended", nsuspended, nsuspended == 1 ? "" : "s");
  if (rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL)
    cairn__worker_fatal(w, err.status, "%s", err.text);
  else if (rc != CAIRN_OK)
    CAIRN_WARN(&p->log, "heartbeat: %s", err.text);
  else if (status == 200) {
    long long *ext = NULL;
    json_t *root = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
    long n = parse_root(root, &ext, &p->peers);
    cairn__auditlog_heard(&p->audit, json_object_get(root, "sth")); /* audit log: its head */
    if (w->several) /* its account's cross-project id (cpid.h) */
      cairn__cpids_heard(&w->cpids, p->k, json_object_get(root, "cpid"), cairn__now_ms());
    json_decref(root);
    if (n < 0)
      CAIRN_WARN(&p->log, "heartbeat: malformed answer");
    else {
      cairn__leases_renewed(&p->leases, bound, ext, (size_t)n, cairn__now_ms());
      cairn__resume_renewed(&p->resume, ext, (size_t)n); /* the records' lease time */
      ok = 0;
    }
    free(ext);
  } else {
    cairn__server_message(resp.body.data, resp.body.len, msg, sizeof msg);
    if (status == 403)
      cairn__worker_fatal(w, CAIRN_EFORBIDDEN, "the master refuses this volunteer (banned?): %s", msg);
    else
      CAIRN_WARN(&p->log, "heartbeat: HTTP %ld: %s", status, msg);
  }
  cairn__buf_free(&resp.body);
  return ok;
}

/* Audit log (auditlog.h): the head heard checked, receipts proved; an
 * inconsistent log stops the worker, or with several projects its
 * project's work (cairn__worker_distrust). */
static void audit_tick(cairn__heartbeat *hb) {
  cairn_error err = {0};
  if (cairn__auditlog_tick(&hb->p->audit, hb->conn.http, &err) == CAIRN_EFORBIDDEN)
    cairn__worker_distrust(hb->w, hb->p, err.text);
}

void *cairn__heartbeat_main(void *arg) {
  cairn__heartbeat *hb = arg;
  cairn_worker *w = hb->w;
  cairn__project *p = hb->p;
  cairn__backoff b;
  long long retry_at = 0, last_ms = cairn__now_ms();
  cairn__backoff_init(&b, 500, 5000);
  while (!atomic_load(&hb->quit)) {
    if (cairn__stopper_sleep_until_stop(&w->stopper, TICK_MS))
      break;
    audit_tick(hb); /* audit log */
    long long now = cairn__now_ms();
    int due = cairn__leases_due_in(&p->leases, now) == 0 ||
              cairn__peerstate_beat_due(&p->peers, now - last_ms) ||
              (w->several && cairn__cpids_due(&w->cpids, p->k, now)); /* cpid.h */
    if (!due || now < retry_at)
      continue;
    last_ms = now;
    if (beat(hb) == 0) {
      cairn__backoff_reset(&b);
      retry_at = 0;
      audit_tick(hb); /* audit log: the head this beat heard, at once */
    } else
      retry_at = cairn__now_ms() + cairn__backoff_next(&b);
  }
  return NULL;
}

void cairn__heartbeat_resume(cairn_worker *w, cairn__project *p, cairn__conn *conn) {
  int64_t idx[CAIRN_MAX_RUNNING];
  size_t n = cairn__resume_pending(&p->resume, idx, CAIRN_MAX_RUNNING);
  if (!n)
    return;
  /* {"running": [...]} extends exactly those of its leases the master still
   * counts as this volunteer's; a master that refuses it (an old one that
   * does not take "running": 400) cannot say: the tasks are dropped */
  json_t *o = json_pack("{s:[]}", "running"), *a = json_object_get(o, "running");
  for (size_t i = 0; a && i < n; i++)
    json_array_append_new(a, json_integer((json_int_t)idx[i]));
  char *body = a ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  cairn__http_response resp = {0};
  cairn_error err = {0};
  cairn__backoff b;
  long long *ext = NULL;
  long got = -1;
  int refused = !body;
  cairn__backoff_init(&b, 500, 5000);
  while (got < 0 && !refused && !cairn__stopper_stopping(&w->stopper) &&
         !(p->session.give_up_ms && cairn__now_ms() >= p->session.give_up_ms)) {
    cairn_status rc = cairn__session_request(&p->session, conn, "POST", "/v1/heartbeat", body,
                                             1 << 20, &resp, &err);
    if (rc == CAIRN_OK && resp.status == 200)
      got = cairn__heartbeat_parse(resp.body.data, resp.body.len, &ext, &p->peers);
    if (got < 0 && ((rc == CAIRN_OK && !cairn__transient(rc, resp.status)) ||
                    rc == CAIRN_EFORBIDDEN || rc == CAIRN_EINVAL))
      refused = 1;
    else if (got < 0) {
      CAIRN_WARN(&p->log, "cannot ask the master about %zu recorded task%s: %s (retrying)", n,
                 n == 1 ? "" : "s", rc != CAIRN_OK ? err.text : "no usable answer");
      cairn__stopper_sleep(&w->stopper, cairn__backoff_next(&b));
    }
    cairn__buf_free(&resp.body);
  }
  free(body);
  if (got < 0 && !refused && w->several && !cairn__stopper_stopping(&w->stopper)) {
    /* the other projects go on: this one's records cannot wait for its master */
    CAIRN_WARN(&p->log, "no answer about %zu recorded task%s: dropped (the master reissues "
               "them)", n, n == 1 ? "" : "s");
    refused = 1;
  }
  if (got >= 0 || refused)
    cairn__resume_confirm(&p->resume, got >= 0 ? ext : NULL, got >= 0 ? (size_t)got : 0);
  else { /* no answer: asked again at the next start, which finds them as they are */
    cairn__resume_defer(&p->resume);
    if (!cairn__stopper_stopping(&w->stopper)) {
      CAIRN_WARN(&p->log, "no master for %u seconds (--exit-when-idle)", w->exit_when_idle);
      cairn__stopper_stop(&w->stopper); /* before a slot empties a kept directory */
    }
  }
  free(ext);
}
