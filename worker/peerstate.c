/* peerstate.c — peer key, peer URL, holdings, downloads and failed
 * sources to report to the master, and the fields it takes. */
#include "worker/peerstate.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/sha256.h"

#define REPORT_SOON_MS 250
#define IDLE_BEAT_MS 5000
/* A grant failed the peer key: ask for the current one this soon (not at
 * once: a peer sending bad grants must not drive heartbeats). */
#define KEY_SOON_MS 1000
/* A worker serving peers hears its key at least this often, so that a ban
 * revokes the grants made with the old key within this time. */
#define KEY_REFRESH_MS 30000

/* Index of sha in l, or -1. */
static long find(const cairn__shalist *l, const char *sha) {
  for (size_t i = 0; i < l->n; i++)
    if (memcmp(l->v[i], sha, 65) == 0)
      return (long)i;
  return -1;
}

/* Appends sha (with bytes when counted). Returns 0, or -1 on out of memory. */
static int push(cairn__shalist *l, const char *sha, int counted, unsigned long long bytes) {
  if (l->n == l->cap) {
    size_t cap = l->cap ? 2 * l->cap : 16;
    char(*v)[65] = realloc(l->v, cap * sizeof *v);
    if (!v)
      return -1;
    l->v = v;
    if (counted) {
      unsigned long long *b = realloc(l->bytes, cap * sizeof *b);
      if (!b)
        return -1;
      l->bytes = b;
    }
    l->cap = cap;
  }
  memcpy(l->v[l->n], sha, 65);
  if (counted)
    l->bytes[l->n] = bytes;
  l->n++;
  return 0;
}

/* Adds bytes to sha's entry of a counted list, creating it. */
static int add_count(cairn__shalist *l, const char *sha, unsigned long long bytes) {
  long i = find(l, sha);
  if (i >= 0) {
    l->bytes[i] += bytes;
    return 0;
  }
  return push(l, sha, 1, bytes);
}

static void remove_at(cairn__shalist *l, size_t i) {
  l->n--;
  if (i != l->n) {
    memcpy(l->v[i], l->v[l->n], 65);
    if (l->bytes)
      l->bytes[i] = l->bytes[l->n];
  }
}

static void list_free(cairn__shalist *l) {
  free(l->v);
  free(l->bytes);
  memset(l, 0, sizeof *l);
}

/* Makes room for want entries in l. Returns 0, or -1 on out of memory. */
static int fetch_reserve(cairn__fetchlist *l, size_t want) {
  if (want <= l->cap)
    return 0;
  size_t cap = l->cap ? l->cap : 16;
  while (cap < want)
    cap *= 2;
  cairn__fetched *v = realloc(l->v, cap * sizeof *v);
  if (!v)
    return -1;
  l->v = v;
  l->cap = cap;
  return 0;
}

/* Drops the first k entries of l (the oldest). */
static void fetch_drop_front(cairn__fetchlist *l, size_t k) {
  if (k > l->n)
    k = l->n;
  memmove(l->v, l->v + k, (l->n - k) * sizeof *l->v);
  l->n -= k;
}

/* Puts the n entries of e (older than any in l) in front of l, then keeps
 * the newest max. On out of memory the entries of e are lost. */
static void fetch_prepend(cairn__fetchlist *l, const cairn__fetched *e, size_t n, size_t max) {
  if (!n || fetch_reserve(l, l->n + n) != 0)
    return;
  memmove(l->v + n, l->v, l->n * sizeof *l->v);
  memcpy(l->v, e, n * sizeof *e);
  l->n += n;
  if (l->n > max)
    fetch_drop_front(l, l->n - max);
}

static void fetch_free(cairn__fetchlist *l) {
  free(l->v);
  memset(l, 0, sizeof *l);
}

int cairn__peerstate_init(cairn__peerstate *ps, const char *address) {
  memset(ps, 0, sizeof *ps);
  if (address && !(ps->address = strdup(address)))
    return -1;
  ps->features = -1;
  pthread_mutex_init(&ps->mu, NULL);
  return 0;
}

void cairn__peerstate_destroy(cairn__peerstate *ps) {
  pthread_mutex_destroy(&ps->mu);
  free(ps->address);
  free(ps->heard_url);
  list_free(&ps->pending);
  list_free(&ps->kept);
  list_free(&ps->reported);
  list_free(&ps->served);
  fetch_free(&ps->fetched);
  fetch_free(&ps->failed);
  memset(ps, 0, sizeof *ps);
}

void cairn__peerstate_set_port(cairn__peerstate *ps, unsigned port) {
  pthread_mutex_lock(&ps->mu);
  ps->port = port;
  pthread_mutex_unlock(&ps->mu);
}

void cairn__peerstate_set_peer_max(cairn__peerstate *ps, unsigned n) {
  pthread_mutex_lock(&ps->mu);
  ps->peer_max = n;
  pthread_mutex_unlock(&ps->mu);
}

void cairn__peerstate_learn_ip(cairn__peerstate *ps, const char *ip) {
  if (!ip || !ip[0] || strlen(ip) >= sizeof ps->learned)
    return;
  pthread_mutex_lock(&ps->mu);
  snprintf(ps->learned, sizeof ps->learned, "%s", ip);
  pthread_mutex_unlock(&ps->mu);
}

/* Called with mu held. */
static char *url_locked(const cairn__peerstate *ps) {
  const char *host = ps->address ? ps->address : ps->learned;
  char *url = NULL;
  if (!ps->port || !host[0])
    return NULL;
  int v6 = strchr(host, ':') != NULL && host[0] != '[';
  if (asprintf(&url, "http://%s%s%s:%u", v6 ? "[" : "", host, v6 ? "]" : "", ps->port) < 0)
    return NULL;
  return url;
}

char *cairn__peerstate_url(cairn__peerstate *ps) {
  pthread_mutex_lock(&ps->mu);
  char *url = url_locked(ps);
  pthread_mutex_unlock(&ps->mu);
  return url;
}

/* Called with mu held. */
static void set_key_locked(cairn__peerstate *ps, const char *key) {
  if (!key || !cairn__sha256_valid_hex(key))
    return;
  if (strcmp(key, ps->key) != 0 && ps->key[0])
    CAIRN_INFO(ps->log, "peer key renewed: grants made with the old one are refused");
  memcpy(ps->key, key, 65);
  ps->key_wanted = 0;
}

void cairn__peerstate_set_key(cairn__peerstate *ps, const char *key) {
  pthread_mutex_lock(&ps->mu);
  set_key_locked(ps, key);
  pthread_mutex_unlock(&ps->mu);
}

cairn__grant_verdict cairn__peerstate_check_grant(cairn__peerstate *ps, const char *sha256,
                                                 const char *grant, long long now) {
  char key[65];
  pthread_mutex_lock(&ps->mu);
  memcpy(key, ps->key, 65);
  pthread_mutex_unlock(&ps->mu);
  cairn__grant_verdict v = cairn__grant_check(key, sha256, grant, now, NULL);
  if (v == CAIRN_GRANT_OK && !key[0])
    v = CAIRN_GRANT_WRONG; /* no key issued yet: nothing is granted */
  if (v == CAIRN_GRANT_WRONG) {
    pthread_mutex_lock(&ps->mu);
    ps->key_wanted = 1;
    pthread_mutex_unlock(&ps->mu);
  }
  return v;
}

void cairn__peerstate_have(cairn__peerstate *ps, const char *sha256) {
  if (!cairn__sha256_valid_hex(sha256))
    return;
  pthread_mutex_lock(&ps->mu);
  if (find(&ps->pending, sha256) < 0 && find(&ps->reported, sha256) < 0)
    (void)push(&ps->pending, sha256, 0, 0);
  pthread_mutex_unlock(&ps->mu);
}

void cairn__peerstate_served(cairn__peerstate *ps, const char *sha256, unsigned long long bytes) {
  if (!bytes || !cairn__sha256_valid_hex(sha256))
    return;
  pthread_mutex_lock(&ps->mu);
  ps->served_total += bytes;
  (void)add_count(&ps->served, sha256, bytes);
  pthread_mutex_unlock(&ps->mu);
}

/* Fills e with sha256 and source; 0, or -1 when they cannot be reported
 * (not a digest; no source, one too long or not UTF-8). */
static int entry_init(cairn__fetched *e, const char *sha256, const char *source) {
  memset(e, 0, sizeof *e);
  if (!cairn__sha256_valid_hex(sha256) || !source || strlen(source) >= sizeof e->source)
    return -1;
  json_t *utf8 = json_string(source); /* the report must be able to carry it */
  if (!utf8)
    return -1;
  json_decref(utf8);
  memcpy(e->sha256, sha256, 65);
  snprintf(e->source, sizeof e->source, "%s", source);
  e->reason = -1;
  return 0;
}

/* Appends e to l, dropping the oldest entry when l has max. */
static void append_locked(cairn__fetchlist *l, const cairn__fetched *e, size_t max) {
  if (l->n == max)
    fetch_drop_front(l, 1);
  if (fetch_reserve(l, l->n + 1) == 0)
    l->v[l->n++] = *e;
}

void cairn__peerstate_fetched(cairn__peerstate *ps, const char *sha256, const char *source,
                              unsigned long long bytes, long long ms) {
  cairn__fetched e;
  if (entry_init(&e, sha256, source) != 0)
    return;
  e.bytes = bytes;
  e.ms = ms < 1 ? 1 : ms;
  pthread_mutex_lock(&ps->mu);
  append_locked(&ps->fetched, &e, CAIRN__FETCHED_PENDING);
  pthread_mutex_unlock(&ps->mu);
}

void cairn__peerstate_failed(cairn__peerstate *ps, const char *sha256, const char *source,
                             int reason) {
  cairn__fetched e;
  if (reason < 0 || reason >= CAIRN_FAIL_REASONS || entry_init(&e, sha256, source) != 0)
    return;
  e.reason = reason;
  pthread_mutex_lock(&ps->mu);
  append_locked(&ps->failed, &e, CAIRN__FAILED_PENDING);
  pthread_mutex_unlock(&ps->mu);
}

unsigned long long cairn__peerstate_served_total(cairn__peerstate *ps) {
  pthread_mutex_lock(&ps->mu);
  unsigned long long n = ps->served_total;
  pthread_mutex_unlock(&ps->mu);
  return n;
}

/* Takes the master's feature set, logging a change. Called with mu held. */
static void set_features_locked(cairn__peerstate *ps, unsigned features) {
  static const char *const names[CAIRN_FEATURE_COUNT] = CAIRN_FEATURE_NAMES;
  char list[192] = "";
  size_t n = 0;
  if (ps->features == (int)features)
    return;
  ps->features = (int)features;
  for (int i = 0; i < CAIRN_FEATURE_COUNT; i++)
    if ((features & (1u << i)) && names[i] && n < sizeof list)
      n += (size_t)snprintf(list + n, sizeof list - n, "%s%s", n ? ", " : "", names[i]);
  CAIRN_INFO(ps->log, "the master takes %s", n ? list : "no report field (it lists no features)");
}

void cairn__peerstate_registered(cairn__peerstate *ps, const char *key, unsigned features) {
  pthread_mutex_lock(&ps->mu);
  for (size_t i = 0; i < ps->reported.n; i++)
    if (find(&ps->pending, ps->reported.v[i]) < 0)
      (void)push(&ps->pending, ps->reported.v[i], 0, 0);
  ps->reported.n = 0;
  free(ps->heard_url);
  ps->heard_url = NULL;
  set_key_locked(ps, key);
  set_features_locked(ps, features);
  pthread_mutex_unlock(&ps->mu);
}

void cairn__peerstate_set_features(cairn__peerstate *ps, unsigned features) {
  pthread_mutex_lock(&ps->mu);
  set_features_locked(ps, features);
  pthread_mutex_unlock(&ps->mu);
}

int cairn__peerstate_features(cairn__peerstate *ps) {
  pthread_mutex_lock(&ps->mu);
  int features = ps->features;
  pthread_mutex_unlock(&ps->mu);
  return features;
}

/* Called with mu held: 1 when the current URL is not the one the master has. */
static int url_news_locked(const cairn__peerstate *ps, char **url) {
  *url = url_locked(ps);
  if (!*url)
    return 0;
  if (ps->heard_url && strcmp(ps->heard_url, *url) == 0) {
    free(*url);
    *url = NULL;
    return 0;
  }
  return 1;
}

/* Moves up to max pending entries of from into to (and from to's counts). */
static int take(cairn__shalist *from, cairn__shalist *to, size_t max, int counted) {
  while (from->n && to->n < max) {
    size_t i = from->n - 1;
    if (push(to, from->v[i], counted, counted ? from->bytes[i] : 0) != 0)
      return -1;
    from->n--;
  }
  return 0;
}

/* Moves the oldest pending downloads or failures (up to max) into to. */
static int take_fetched(cairn__fetchlist *from, cairn__fetchlist *to, size_t max) {
  size_t k = from->n < max ? from->n : max;
  if (!k)
    return 0;
  if (fetch_reserve(to, k) != 0)
    return -1;
  memcpy(to->v, from->v, k * sizeof *to->v);
  to->n = k;
  fetch_drop_front(from, k);
  return 0;
}

/* Points r->wire at what r took. */
static void wire_fill(cairn__peer_report *r) {
  cairn__report *w = &r->wire;
  for (size_t i = 0; i < r->have.n; i++)
    w->have[w->nhave++] = r->have.v[i];
  for (size_t i = 0; i < r->served.n; i++)
    w->served[w->nserved++] = (cairn__report_served){r->served.v[i], r->served.bytes[i]};
  for (size_t i = 0; i < r->fetched.n; i++) {
    const cairn__fetched *e = &r->fetched.v[i];
    w->fetched[w->nfetched++] =
      (cairn__report_fetched){e->sha256, e->source, (int64_t)e->bytes, e->ms};
  }
  for (size_t i = 0; i < r->failed.n; i++) {
    const cairn__fetched *e = &r->failed.v[i];
    w->failed[w->nfailed++] = (cairn__report_failed){e->sha256, e->source, e->reason};
  }
  w->peer_url = r->url;
  w->fields = (w->nhave ? CAIRN_FEAT_HAVE : 0) | (w->nserved ? CAIRN_FEAT_SERVED : 0) |
              (w->nfetched ? CAIRN_FEAT_FETCHED : 0) | (w->nfailed ? CAIRN_FEAT_FAILED : 0) |
              (w->peer_url ? CAIRN_FEAT_PEER_URL : 0);
}

/* Puts what r took back into the pending sets. Called with mu held. */
static void put_back_locked(cairn__peerstate *ps, cairn__peer_report *r) {
  for (size_t i = 0; i < r->have.n; i++)
    if (find(&ps->pending, r->have.v[i]) < 0 && find(&ps->reported, r->have.v[i]) < 0)
      (void)push(&ps->pending, r->have.v[i], 0, 0);
  for (size_t i = 0; i < r->served.n; i++)
    (void)add_count(&ps->served, r->served.v[i], r->served.bytes[i]);
  fetch_prepend(&ps->fetched, r->fetched.v, r->fetched.n, CAIRN__FETCHED_PENDING);
  fetch_prepend(&ps->failed, r->failed.v, r->failed.n, CAIRN__FAILED_PENDING);
}

static void report_free(cairn__peer_report *r) {
  list_free(&r->have);
  list_free(&r->served);
  fetch_free(&r->fetched);
  fetch_free(&r->failed);
  free(r->url);
  r->url = NULL;
  memset(&r->wire, 0, sizeof r->wire);
}

int cairn__peerstate_report_begin(cairn__peerstate *ps, unsigned fields, cairn__peer_report *r) {
  memset(r, 0, sizeof *r);
  pthread_mutex_lock(&ps->mu);
  unsigned want = ps->features < 0 ? 0 : fields & (unsigned)ps->features;
  if (want & CAIRN_FEAT_PEER_URL)
    url_news_locked(ps, &r->url);
  int ok = !(want & CAIRN_FEAT_HAVE) ||
           take(&ps->pending, &r->have, CAIRN__HAVE_PER_REPORT, 0) == 0;
  if (ok && (want & CAIRN_FEAT_SERVED))
    ok = take(&ps->served, &r->served, CAIRN_MAX_SERVED, 1) == 0;
  if (ok && (want & CAIRN_FEAT_FETCHED))
    ok = take_fetched(&ps->fetched, &r->fetched, CAIRN_MAX_FETCHED) == 0;
  if (ok && (want & CAIRN_FEAT_FAILED))
    ok = take_fetched(&ps->failed, &r->failed, CAIRN_MAX_FAILED) == 0;
  if (!ok)
    put_back_locked(ps, r);
  /* its peer server relays files while receiving them (worker/relay.h) */
  int relays = (want & CAIRN_FEAT_CHUNKS) && ps->port;
  /* how many files it sends at once, so that the master names it no more */
  unsigned peer_max = (want & CAIRN_FEAT_PEER_MAX) && ps->port ? ps->peer_max : 0;
  pthread_mutex_unlock(&ps->mu);
  if (!ok) {
    report_free(r);
    return -1;
  }
  wire_fill(r);
  if (relays) {
    r->wire.chunks = 1;
    r->wire.fields |= CAIRN_FEAT_CHUNKS;
  }
  if (peer_max) {
    r->wire.peer_max = peer_max;
    r->wire.fields |= CAIRN_FEAT_PEER_MAX;
  }
  return 0;
}

void cairn__peerstate_report_end(cairn__peerstate *ps, cairn__peer_report *r, int delivered) {
  pthread_mutex_lock(&ps->mu);
  if (delivered) {
    for (size_t i = 0; i < r->have.n; i++) {
      long k = find(&ps->pending, r->have.v[i]);
      if (k >= 0)
        remove_at(&ps->pending, (size_t)k);
      if (find(&ps->reported, r->have.v[i]) < 0)
        (void)push(&ps->reported, r->have.v[i], 0, 0);
    }
    if (r->url) {
      free(ps->heard_url);
      ps->heard_url = r->url;
      r->url = NULL;
    }
  } else
    put_back_locked(ps, r);
  pthread_mutex_unlock(&ps->mu);
  report_free(r);
}

int cairn__peerstate_beat_due(cairn__peerstate *ps, long long since_ms) {
  char *url = NULL;
  pthread_mutex_lock(&ps->mu);
  int due;
  if (ps->features < 0)
    due = since_ms >= REPORT_SOON_MS;
  else {
    unsigned f = (unsigned)ps->features;
    int news = ((f & CAIRN_FEAT_HAVE) && ps->pending.n) ||
               ((f & CAIRN_FEAT_FAILED) && ps->failed.n) ||
               ((f & CAIRN_FEAT_PEER_URL) && url_news_locked(ps, &url));
    int idle = ((f & CAIRN_FEAT_SERVED) && ps->served.n) ||
               ((f & CAIRN_FEAT_FETCHED) && ps->fetched.n);
    /* with "running" a heartbeat names the leases it extends */
    int key = (f & CAIRN_FEAT_RUNNING) && ps->port &&
              ((ps->key_wanted && since_ms >= KEY_SOON_MS) ||
               (ps->reported.n && since_ms >= KEY_REFRESH_MS));
    due = (news && since_ms >= REPORT_SOON_MS) || (idle && since_ms >= IDLE_BEAT_MS) || key;
  }
  pthread_mutex_unlock(&ps->mu);
  free(url);
  return due;
}

void cairn__peerstate_kept(cairn__peerstate *ps, const char *sha256) {
  if (!cairn__sha256_valid_hex(sha256))
    return;
  pthread_mutex_lock(&ps->mu);
  if (find(&ps->kept, sha256) < 0 && push(&ps->kept, sha256, 0, 0))
    CAIRN_WARN(ps->log, "out of memory noting a kept output");
  pthread_mutex_unlock(&ps->mu);
}

void cairn__peerstate_kept_take(cairn__peerstate *ps, cairn__shalist *out) {
  pthread_mutex_lock(&ps->mu);
  *out = ps->kept;
  memset(&ps->kept, 0, sizeof ps->kept);
  pthread_mutex_unlock(&ps->mu);
}
