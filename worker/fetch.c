/* fetch.c — an input from its sources, peers first, the master last. */
#include "worker/fetch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "common/log.h"
#include "common/protocol.h"
#include "worker/backoff.h"
#include "worker/fsutil.h"
#include "worker/leases.h"

#define MISMATCH_ATTEMPTS 3
/* A peer that answers 503 sends its --peer-max files already: when the
 * master is not among the sources, it is tried again a second later, at
 * most this many times, before the master is asked all the same. */
#define BUSY_ROUNDS 30
#define BUSY_WAIT_MS 1000

/* 1 when url names the master: relative, or under its base URL. */
static int is_master(cairn__http *h, const char *url) {
  const char *base = cairn__http_base(h);
  size_t n = strlen(base);
  return url[0] == '/' || (strncmp(url, base, n) == 0 && (url[n] == '/' || url[n] == '\0'));
}

/* Stores the cached path, tells peers about it. status is the HTTP status
 * of the call to cairn__cache_fetch() that began at monotonic time t0: 200
 * for a download from url (measured for the master), 0 for a cache hit;
 * from: the byte that download began at (a resumed copy: the bytes before
 * it came from an earlier source, and are no part of this sample). */
static cairn_status got(cairn__peerstate *peers, const cairn__input *in, const char *url,
                        long status, long long t0, unsigned long long from, char *cached,
                        char **path) {
  if (peers && status == 200) {
    long long ms = cairn__now_ms() - t0;
    long long bytes = in->size >= 0 ? in->size : cairn__file_size(cached);
    bytes -= bytes >= (long long)from ? (long long)from : 0;
    if (bytes >= 0)
      cairn__peerstate_fetched(peers, in->sha256, url, (unsigned long long)bytes, ms);
  }
  if (peers)
    cairn__peerstate_have(peers, in->sha256);
  *path = cached;
  return CAIRN_OK;
}

/* Retries the master's copy: transient failures with backoff until cancel,
 * wrong bytes up to MISMATCH_ATTEMPTS times. */
static cairn_status from_master(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                                const cairn__input *in, const char *url,
                                const cairn__chunklist *chunks, cairn__partial *part,
                                const cairn__cancel *cancel, char **path, cairn_error *err) {
  cairn__backoff b;
  int mismatches = 0;
  cairn__backoff_init(&b, 100, 5000);
  for (;;) {
    char *cached = NULL;
    long status = 0;
    if (cairn__cancelled(cancel))
      return cairn__error_set(err, CAIRN_EIO, "cancelled");
    long long t0 = cairn__now_ms();
    unsigned long long from = cairn__cache_partial_at(part);
    cairn_status rc = cairn__cache_fetch_chunked(cache, h, in->sha256, in->size, url, chunks,
                                                 part, &cached, &status, NULL, err);
    if (rc == CAIRN_OK)
      return got(peers, in, url, status, t0, from, cached, path);
    if (cairn__cancelled(cancel))
      return cairn__error_set(err, CAIRN_EIO, "cancelled");
    if (rc == CAIRN_EIO) {
      CAIRN_WARN(cache->log, "input %s: %s (retrying)", in->name, err->text);
      if (cairn__cancel_sleep(cancel, cairn__backoff_next(&b)))
        return cairn__error_set(err, CAIRN_EIO, "cancelled");
      continue;
    }
    CAIRN_WARN(cache->log, "input %s: %s", in->name, err->text);
    if (rc == CAIRN_EINVAL && ++mismatches < MISMATCH_ATTEMPTS)
      continue;
    return rc;
  }
}

/* 1 when peer source url is a relay still receiving the file ("relay=1"
 * in its query, docs/protocol.md "Cut-through relays"). */
static int is_relay(const char *url) {
  const char *q = strchr(url, '?');
  for (const char *p = q; p; p = strchr(p + 1, '&'))
    if (strncmp(p + 1, CAIRN_RELAY_PARAM "=1", strlen(CAIRN_RELAY_PARAM) + 2) == 0)
      return 1;
  return 0;
}

/* Length of the origin "scheme://host[:port]" of an http(s) URL, or 0 when
 * url is not one (or names a user). */
static size_t origin_len(const char *url) {
  const char *rest = strncmp(url, "http://", 7) == 0    ? url + 7
                     : strncmp(url, "https://", 8) == 0 ? url + 8
                                                        : NULL;
  if (!rest)
    return 0;
  size_t n = strcspn(rest, "/?#");
  if (n == 0 || memchr(rest, '@', n) || memchr(rest, '\\', n))
    return 0;
  return (size_t)(rest - url) + n;
}

static cairn_status fetch(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                          const cairn__input *in, const cairn__chunklist *chunks,
                          const cairn__cancel *cancel, char **path, cairn_error *err);

int cairn__url_allowed(cairn__http *h, const cairn__task *t, const char *url) {
  if (url[0] == '/')
    return url[1] != '/' && url[1] != '\\';
  size_t n = origin_len(url);
  const char *base = cairn__http_base(h);
  if (!n)
    return 0;
  if (origin_len(base) == n && strncmp(base, url, n) == 0)
    return 1;
  for (size_t i = 0; i < t->ninputs; i++)
    for (size_t k = 0; k < t->inputs[i].nsources; k++) {
      const char *src = t->inputs[i].sources[k];
      if (origin_len(src) == n && strncmp(src, url, n) == 0)
        return 1;
    }
  return 0;
}

/* The master's chunk digests of broadcast input in (feature "chunks"), so
 * that the download can be checked chunk by chunk and relayed while it
 * arrives; 0 with *out empty when the master does not list the feature,
 * the file is one chunk or less, is cached already, or the list cannot be
 * had (then the file is checked whole, as without). */
static void chunk_list(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                       const cairn__input *in, cairn__chunklist *out) {
  memset(out, 0, sizeof *out);
  int features = peers ? cairn__peerstate_features(peers) : -1;
  if (features < 0 || !((unsigned)features & CAIRN_FEAT_CHUNKS) || !in->nsources ||
      in->size <= (long long)CAIRN_CHUNK_SIZE)
    return;
  char *cached = cairn__cache_path(cache, in->sha256), url[128];
  int present = cached && cairn__file_size(cached) >= 0;
  free(cached);
  if (present)
    return;
  snprintf(url, sizeof url, "/v1/files/%s/chunks", in->sha256);
  cairn__http_response resp = {0};
  cairn_error err = {0};
  if (cairn__http_request(h, "GET", url, NULL, NULL, 0, CAIRN_MAX_CHUNKS_BODY, &resp, &err) !=
        CAIRN_OK || resp.status != 200 ||
      cairn__chunklist_parse(resp.body.data, resp.body.len, in->sha256, in->size, out, &err) !=
        CAIRN_OK)
    CAIRN_WARN(cache->log, "input %s: no chunk digests (%s): checked whole, not relayed while "
               "it arrives", in->name, err.text[0] ? err.text : "the master refused");
  else
    CAIRN_INFO(cache->log, "input %s: %zu chunk digests: each chunk checked as it arrives",
               in->name, out->n);
  cairn__buf_free(&resp.body);
}

cairn_status cairn__fetch_input(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                                const cairn__input *in, const cairn__cancel *cancel, char **path,
                                cairn_error *err) {
  cairn__chunklist chunks;
  chunk_list(cache, h, peers, in, &chunks);
  cairn_status rc = fetch(cache, h, peers, in, chunks.n ? &chunks : NULL, cancel, path, err);
  cairn__chunklist_free(&chunks);
  return rc;
}

/* Tries peer source url once: CAIRN_OK with *path; else *busy when it
 * answered 503 (it sends --peer-max files already: no fault of its own, not
 * reported, tried again), else the failure is reported when it is the
 * peer's. A copy broken off after checked chunks stays in part. */
static cairn_status from_peer(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                              const cairn__input *in, const char *url,
                              const cairn__chunklist *chunks, cairn__partial *part,
                              int *busy, char **path, cairn_error *err) {
  char *cached = NULL;
  long status = 0;
  int reason = -1;
  long long t0 = cairn__now_ms();
  unsigned long long from = cairn__cache_partial_at(part);
  long stall = cairn__http_stall_timeout(h);
  if (!from)
    CAIRN_INFO(cache->log, "input %s: copying from %s", in->name, url);
  if (is_relay(url) && stall < CAIRN_RELAY_STALL_MS)
    cairn__http_set_stall_timeout(h, CAIRN_RELAY_STALL_MS);
  cairn_status rc = cairn__cache_fetch_chunked(cache, h, in->sha256, in->size, url, chunks, part,
                                               &cached, &status, &reason, err);
  cairn__http_set_stall_timeout(h, stall);
  *busy = rc != CAIRN_OK && status == 503;
  if (rc == CAIRN_OK)
    return got(peers, in, url, status, t0, from, cached, path);
  if (*busy) {
    CAIRN_INFO(cache->log, "input %s: source %s is busy (503): trying it again later", in->name,
               url);
    return rc;
  }
  CAIRN_WARN(cache->log, "input %s: source %s skipped: %s", in->name, url, err->text);
  if (peers && reason >= 0) /* the peer's fault, not ours: the master hears of it */
    cairn__peerstate_failed(peers, in->sha256, url, reason);
  return rc;
}

static cairn_status fetch(cairn__cache *cache, cairn__http *h, cairn__peerstate *peers,
                          const cairn__input *in, const cairn__chunklist *chunks,
                          const cairn__cancel *cancel, char **path, cairn_error *err) {
  char master_url[128];
  const char *master = NULL;
  const char *const *list = (const char *const *)in->sources;
  size_t n = in->nsources;
  const char *only[1] = {in->url};
  unsigned char busy[CAIRN_MAX_SOURCES] = {0}; /* 1: answered 503, tried again */
  cairn__partial part = {0};
  cairn_status rc = CAIRN_EIO;
  *path = NULL;
  if (!n) {
    list = only;
    n = 1;
  }
  if (n > CAIRN_MAX_SOURCES)
    n = CAIRN_MAX_SOURCES;
  snprintf(master_url, sizeof master_url, "/v1/files/%s", in->sha256);
  /* each peer once, in order; when the master is no source (an output kept
   * on workers it has no copy of), those that were busy again, up to
   * BUSY_ROUNDS times a second apart */
  for (int round = 0; round <= BUSY_ROUNDS; round++) {
    int waiting = 0;
    for (size_t i = 0; i < n; i++) {
      if (is_master(h, list[i])) {
        if (!master)
          master = list[i];
        continue;
      }
      if (round && !busy[i])
        continue;
      if (cairn__cancelled(cancel)) {
        cairn__cache_partial_end(&part);
        return cairn__error_set(err, CAIRN_EIO, "cancelled");
      }
      int b = 0;
      rc = from_peer(cache, h, peers, in, list[i], chunks, &part, &b, path, err);
      if (rc == CAIRN_OK)
        return CAIRN_OK; /* part ended by the success */
      busy[i] = (unsigned char)b;
      waiting |= b;
    }
    if (!waiting || master || cairn__cancel_sleep(cancel, BUSY_WAIT_MS))
      break;
  }
  if (cairn__cancelled(cancel)) {
    cairn__cache_partial_end(&part);
    return cairn__error_set(err, CAIRN_EIO, "cancelled");
  }
  rc = from_master(cache, h, peers, in, master ? master : master_url, chunks, &part, cancel, path,
                   err);
  cairn__cache_partial_end(&part);
  return rc;
}
