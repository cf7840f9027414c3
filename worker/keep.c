/* keep.c — a leaving worker's kept outputs (docs/worker.md, "Outputs kept
 * on workers"). A task offered with "keep": "workers" leaves its output
 * files in the cache (outputs.c); when the worker stops gracefully (a
 * signal, --exit-when-idle, --max-tasks) it offers each to the master with
 * PUT /v1/files/{sha256}: the master takes those it has no copy of and no
 * other holder it can offer, and refuses the others at once (409) before
 * any byte is sent. */
#include <stdio.h>
#include <stdlib.h>

#include "common/log.h"
#include "worker/worker_int.h"

/* Offers kept file sha (at path) to the master; 1 when it took it. */
static int offer(cairn__project *p, cairn__conn *c, const char *sha, const char *path) {
  char url[128], msg[300] = "";
  long status = 0;
  cairn_error err = {0};
  cairn__buf body;
  snprintf(url, sizeof url, "/v1/files/%s", sha);
  cairn__buf_init(&body, 4096);
  cairn__session_prepare(&p->session, c);
  cairn_status rc = cairn__http_upload(c->http, url, path, &status, &body, &err);
  if (rc == CAIRN_OK)
    cairn__server_message(body.data, body.len, msg, sizeof msg);
  cairn__buf_free(&body);
  if (rc == CAIRN_OK && (status == 200 || status == 201)) {
    CAIRN_INFO(&p->log, "leaving: kept output %.12s uploaded to the master", sha);
    return 1;
  }
  if (rc != CAIRN_OK || status != 409)
    CAIRN_WARN(&p->log, "leaving: kept output %.12s: %s", sha,
               rc == CAIRN_OK ? msg : err.text);
  return 0;
}

void cairn__keep_leave(cairn_worker *w, cairn__project *p) {
  cairn__shalist kept = {0};
  if (!p->session_ok)
    return;
  cairn__peerstate_kept_take(&p->peers, &kept);
  int features = cairn__peerstate_features(&p->peers);
  if (kept.n && features >= 0 && ((unsigned)features & CAIRN_FEAT_KEEP)) {
    cairn__conn c = {.http = cairn__http_create(p->server)}; /* not cancelled by the stop */
    size_t sent = 0;
    if (c.http)
      cairn__http_set_stall_timeout(c.http, (long)w->stall_ms);
    for (size_t i = 0; c.http && i < kept.n; i++) {
      char *path = cairn__cache_path(&p->cache, kept.v[i]);
      if (path)
        sent += (size_t)offer(p, &c, kept.v[i], path);
      free(path);
    }
    CAIRN_INFO(&p->log, "leaving: %zu of %zu kept outputs were still needed and uploaded", sent,
               kept.n);
    cairn__http_delete(c.http);
  }
  free(kept.v);
  free(kept.bytes);
}
