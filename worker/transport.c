/* transport.c — libcurl easy-handle wrapper with capped bodies and keep-alive. */
#include "worker/transport.h"

#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "common/protocol.h"
#include "common/sha256.h"
#include "worker/backoff.h"

struct cairn__http {
  CURL *curl;
  char *base;
  char *auth;       /* "Authorization: Bearer ..." for base */
  long timeout;
  long stall_ms;
  long long last_bytes;   /* stall detection of the current download */
  long long last_move_ms;
  int stalled;
  int dl_fault;                    /* the last download's CAIRN_FAIL_*, or -1 */
  unsigned long long dl_received;  /* and the bytes it received */
  int (*cancelled)(void *ud);
  void *cancel_ud;
  cairn__pace *pace;               /* borrowed; NULL: calls go at once */
  int (*observe)(void *ud, const void *p, size_t n); /* sees each download's bytes */
  void *observe_ud;
  long long max_recv;              /* bytes a second of a download, 0: no cap */
};

void cairn__http_global_init(void) { curl_global_init(CURL_GLOBAL_DEFAULT); }

cairn__http *cairn__http_create(const char *base) {
  cairn__http *h = calloc(1, sizeof *h);
  if (!h)
    return NULL;
  size_t n = strlen(base);
  while (n && base[n - 1] == '/')
    n--;
  h->base = strndup(base, n);
  h->curl = curl_easy_init();
  h->timeout = 30;
  h->stall_ms = 10000;
  h->dl_fault = -1;
  if (!h->base || !h->curl) {
    cairn__http_delete(h);
    return NULL;
  }
  return h;
}

void cairn__http_delete(cairn__http *h) {
  if (!h)
    return;
  if (h->curl)
    curl_easy_cleanup(h->curl);
  free(h->base);
  free(h->auth);
  free(h);
}

cairn__http *cairn__http_clone(const cairn__http *h) {
  cairn__http *c = cairn__http_create(h->base);
  if (!c)
    return NULL;
  if (h->auth && !(c->auth = strdup(h->auth))) {
    cairn__http_delete(c);
    return NULL;
  }
  c->timeout = h->timeout;
  c->stall_ms = h->stall_ms;
  c->pace = h->pace;
  c->max_recv = h->max_recv;
  return c;
}

const char *cairn__http_base(const cairn__http *h) { return h->base; }

void cairn__http_set_token(cairn__http *h, const char *token) {
  free(h->auth);
  h->auth = NULL;
  if (token && asprintf(&h->auth, "Authorization: Bearer %s", token) < 0)
    h->auth = NULL;
}

void cairn__http_set_timeout(cairn__http *h, long seconds) { h->timeout = seconds; }

void cairn__http_set_stall_timeout(cairn__http *h, long ms) { h->stall_ms = ms > 0 ? ms : 10000; }

long cairn__http_stall_timeout(const cairn__http *h) { return h->stall_ms; }

int cairn__http_local_ip(cairn__http *h, char *out, size_t len) {
  char *ip = NULL;
  if (curl_easy_getinfo(h->curl, CURLINFO_LOCAL_IP, &ip) != CURLE_OK || !ip || !ip[0] ||
      strlen(ip) >= len)
    return -1;
  memcpy(out, ip, strlen(ip) + 1);
  return 0;
}

static long long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cairn__http_set_cancel(cairn__http *h, int (*cancelled)(void *ud), void *ud) {
  h->cancelled = cancelled;
  h->cancel_ud = ud;
}

void cairn__http_set_pace(cairn__http *h, cairn__pace *pace) { h->pace = pace; }

/* Waits for this call's turn to reach the master (backoff.h); 0, or -1 when
 * cancelled meanwhile. *issued: when it went. */
static int await_turn(cairn__http *h, long long *issued) {
  long left = cairn__pace_turn(h->pace, mono_ms(), issued);
  while (left > 0) {
    if (h->cancelled && h->cancelled(h->cancel_ud))
      return -1;
    struct timespec ts = {0, (left < 100 ? left : 100) * 1000000L};
    nanosleep(&ts, NULL);
    left = (long)(*issued - mono_ms());
  }
  return 0;
}

static int progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                    curl_off_t ulnow) {
  cairn__http *h = ud;
  return h->cancelled && h->cancelled(h->cancel_ud) ? 1 : 0;
}

/* Progress of a download: cancel, or stall when nothing arrived for stall_ms. */
static int download_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal,
                             curl_off_t ulnow) {
  cairn__http *h = ud;
  long long now = mono_ms();
  if (h->cancelled && h->cancelled(h->cancel_ud))
    return 1;
  if ((long long)dlnow != h->last_bytes) {
    h->last_bytes = (long long)dlnow;
    h->last_move_ms = now;
  } else if (now - h->last_move_ms >= h->stall_ms) {
    h->stalled = 1;
    return 1;
  }
  return 0;
}

typedef struct sink {
  cairn__buf *buf;
  int overflow;
} sink;

static size_t write_buf(char *p, size_t size, size_t nmemb, void *ud) {
  sink *s = ud;
  if (cairn__buf_append(s->buf, p, size * nmemb)) {
    s->overflow = 1;
    return 0;
  }
  return size * nmemb;
}

/* The value of header line p (n bytes) when it is "NAME: NUMBER", else -1. */
static long header_number(const char *p, size_t n, const char *name) {
  size_t len = strlen(name);
  if (n <= len || strncasecmp(p, name, len) != 0)
    return -1;
  char tmp[32];
  size_t k = n - len < sizeof tmp - 1 ? n - len : sizeof tmp - 1;
  memcpy(tmp, p + len, k);
  tmp[k] = '\0';
  char *end = NULL;
  long v = strtol(tmp, &end, 10);
  return end != tmp && v >= 0 ? v : -1;
}

/* Picks "Retry-After: SECONDS" and "Cairn-Retry-After-Ms: MS" out of the
 * response headers. */
static size_t read_header(char *p, size_t size, size_t nmemb, void *ud) {
  cairn__http_response *resp = ud;
  size_t n = size * nmemb;
  long v = header_number(p, n, "retry-after:");
  if (v >= 0)
    resp->retry_after = v;
  v = header_number(p, n, "cairn-retry-after-ms:");
  if (v >= 0)
    resp->retry_after_ms = v;
  return n;
}

static char *make_url(cairn__http *h, const char *path) {
  char *url = NULL;
  if (strncmp(path, "http://", 7) == 0 || strncmp(path, "https://", 8) == 0)
    return strdup(path);
  if (asprintf(&url, "%s%s", h->base, path) < 0)
    return NULL;
  return url;
}

/* The bearer token goes only to the master (never to a peer's full URL). */
static int same_origin(const cairn__http *h, const char *url) {
  size_t n = strlen(h->base);
  return strncmp(url, h->base, n) == 0 && (url[n] == '/' || url[n] == '\0');
}

/* Before a call to url: waits its turn when url is the master's (1 then, 0
 * for another origin); -1 when cancelled while waiting. */
static int paced(cairn__http *h, const char *url, long long *issued) {
  if (!h->pace || !same_origin(h, url))
    return 0;
  return await_turn(h, issued) ? -1 : 1;
}

/* After a paced call: notes what its answer named. */
static void note_answer(cairn__http *h, int was_paced, long long issued, long status,
                        long retry_s, long retry_ms) {
  if (was_paced > 0)
    cairn__pace_note(h->pace, cairn__retry_named_ms(status, retry_s, retry_ms), issued, mono_ms());
}

/* Bodies from this size on ask first ("Expect: 100-continue"): a server that
 * refuses them from the headers (413, 401, 503) answers before a byte of the
 * body is sent, where a body sent at once could meet a closed connection
 * instead of the answer. Smaller ones go at once (no round trip). */
#define EXPECT_FROM (1u << 20)

static void common_opts(cairn__http *h, const char *url, curl_off_t body_len,
                        struct curl_slist **hdrs) {
  curl_easy_reset(h->curl);
  curl_easy_setopt(h->curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, h->timeout);
  curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT, 10L);
  curl_easy_setopt(h->curl, CURLOPT_TCP_NODELAY, 1L);
  /* http and https only, whatever a URL from the master or a peer names */
#if LIBCURL_VERSION_NUM >= 0x075500
  curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(h->curl, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
#else
  curl_easy_setopt(h->curl, CURLOPT_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
  curl_easy_setopt(h->curl, CURLOPT_REDIR_PROTOCOLS, (long)(CURLPROTO_HTTP | CURLPROTO_HTTPS));
#endif
  /* A master with a certificate of its own CA (https): CAIRN_CA_FILE names the CA. */
  const char *ca = getenv("CAIRN_CA_FILE");
  if (ca && *ca)
    curl_easy_setopt(h->curl, CURLOPT_CAINFO, ca);
  if (same_origin(h, url) && h->auth)
    *hdrs = curl_slist_append(*hdrs, h->auth);
  *hdrs = curl_slist_append(*hdrs, body_len >= (curl_off_t)EXPECT_FROM ? "Expect: 100-continue"
                                                                        : "Expect:");
  if (h->cancelled) {
    curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, progress);
    curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
  }
}

cairn_status cairn__http_request(cairn__http *h, const char *method, const char *path,
                                const char *content_type, const void *body, size_t body_len,
                                size_t max_response, cairn__http_response *resp, cairn_error *err) {
  struct curl_slist *hdrs = NULL;
  cairn_status rc = CAIRN_OK;
  char *url = make_url(h, path);
  char ctype[128];
  sink s = {&resp->body, 0};
  resp->status = 0;
  resp->retry_after = -1;
  resp->retry_after_ms = -1;
  cairn__buf_init(&resp->body, max_response);
  if (!url)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  long long issued = 0;
  int was_paced = paced(h, url, &issued);
  if (was_paced < 0) {
    free(url);
    return cairn__error_set(err, CAIRN_EIO, "%s %s: cancelled", method, path);
  }
  common_opts(h, url, body ? (curl_off_t)body_len : 0, &hdrs);
  if (content_type) {
    snprintf(ctype, sizeof ctype, "Content-Type: %s", content_type);
    hdrs = curl_slist_append(hdrs, ctype);
  }
  curl_easy_setopt(h->curl, CURLOPT_URL, url);
  curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
  if (body || strcmp(method, "POST") == 0 || strcmp(method, "PUT") == 0) {
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDS, body ? (const char *)body : "");
    curl_easy_setopt(h->curl, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)(body ? body_len : 0));
  } else {
    curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
    curl_easy_setopt(h->curl, CURLOPT_CUSTOMREQUEST, method);
  }
  curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, write_buf);
  curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, resp);
  CURLcode cc = curl_easy_perform(h->curl);
  if (s.overflow)
    rc = cairn__error_set(err, CAIRN_ETOOBIG, "%s %s: response exceeds %zu bytes", method, url,
                         max_response);
  else if (cc != CURLE_OK)
    rc = cairn__error_set(err, CAIRN_EIO, "%s %s: %s", method, url, curl_easy_strerror(cc));
  else
    curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, &resp->status);
  note_answer(h, was_paced, issued, resp->status, resp->retry_after, resp->retry_after_ms);
  curl_slist_free_all(hdrs);
  free(url);
  return rc;
}

typedef struct filesink {
  cairn__http *h;
  int rejected;      /* the observer refused the bytes */
  FILE *f;
  cairn__sha256 sha;
  unsigned long long n, max;
  int overflow;
  int write_failed;  /* dest could not be written: a local failure */
  /* a resumed download: its offset, the bytes of a whole answer still to
   * drop (a source that ignored Range), and whether the answer was looked at */
  unsigned long long offset, skip;
  int started, misplaced; /* misplaced: a 206 that starts elsewhere */
  long range_start;       /* Content-Range's first byte, -1 without one */
  cairn__http_response named;
} filesink;

/* Picks the Retry-After headers (read_header) and Content-Range's start
 * out of a download's answer. */
static size_t read_dl_header(char *p, size_t size, size_t nmemb, void *ud) {
  filesink *s = ud;
  size_t n = size * nmemb;
  long v = header_number(p, n, "content-range: bytes ");
  if (v >= 0)
    s->range_start = v;
  return read_header(p, size, nmemb, &s->named);
}

/* At a resumed download's first bytes: a 206 must start at the offset; a
 * 200 (the source ignored Range) is read from 0, its first offset bytes
 * dropped (dest holds them already, checked). 0, or -1 to end it. */
static int resume_check(filesink *s) {
  long status = 0;
  s->started = 1;
  if (!s->offset)
    return 0;
  curl_easy_getinfo(s->h->curl, CURLINFO_RESPONSE_CODE, &status);
  if (status == 200) {
    s->skip = s->offset;
    return 0;
  }
  if (status == 206 && s->range_start == (long)s->offset)
    return 0;
  s->misplaced = 1;
  return -1;
}

static size_t write_file(char *p, size_t size, size_t nmemb, void *ud) {
  filesink *s = ud;
  size_t k = size * nmemb, all = k;
  if (!s->started && resume_check(s) != 0)
    return 0;
  if (s->skip) {
    size_t d = s->skip < k ? (size_t)s->skip : k;
    s->skip -= d;
    p += d;
    k -= d;
    if (!k)
      return all;
  }
  if (s->n + k > s->max) {
    s->overflow = 1;
    return 0;
  }
  s->n += k;
  cairn__sha256_update(&s->sha, p, k);
  if (fwrite(p, 1, k, s->f) != k || (s->h->observe && fflush(s->f) != 0)) {
    s->write_failed = 1;
    return 0;
  }
  if (s->h->observe && s->h->observe(s->h->observe_ud, p, k) != 0) {
    s->rejected = 1;
    return 0;
  }
  return all;
}

void cairn__http_set_observer(cairn__http *h, int (*fn)(void *ud, const void *p, size_t n),
                             void *ud) {
  h->observe = fn;
  h->observe_ud = fn ? ud : NULL;
}

void cairn__http_set_download_limit(cairn__http *h, long long bytes_per_second) {
  h->max_recv = bytes_per_second > 0 ? bytes_per_second : 0;
}

/* Opens dest for a download from byte offset into s: created or truncated
 * (offset 0), else its first offset bytes kept and hashed into s->sha, the
 * rest cut. O(offset) reads. 0, or -1 with errno set. */
static int open_dest(filesink *s, const char *dest, unsigned long long offset) {
  cairn__sha256_init(&s->sha);
  s->f = fopen(dest, offset ? "r+b" : "wb");
  if (!s->f || !offset)
    return s->f ? 0 : -1;
  unsigned char buf[65536];
  unsigned long long left = offset;
  while (left) {
    size_t k = fread(buf, 1, left < sizeof buf ? (size_t)left : sizeof buf, s->f);
    if (k == 0)
      break;
    cairn__sha256_update(&s->sha, buf, k);
    left -= k;
  }
  if (left || ftruncate(fileno(s->f), (off_t)offset) != 0 ||
      fseeko(s->f, (off_t)offset, SEEK_SET) != 0) {
    if (left)
      errno = EINVAL; /* shorter than the bytes to keep */
    fclose(s->f);
    s->f = NULL;
    return -1;
  }
  s->n = offset;
  s->offset = offset;
  return 0;
}

/* cairn__http_download() from byte offset (cairn__http_download_at());
 * keep: dest is left as it is on failure, else removed. */
static cairn_status download_at(cairn__http *h, const char *path, const char *dest,
                                const char *sha256, unsigned long long max_bytes,
                                unsigned long long offset, int keep, long *status,
                                cairn_error *err) {
  struct curl_slist *hdrs = NULL;
  cairn_status rc = CAIRN_OK;
  char *url = make_url(h, path);
  filesink s = {.range_start = -1, .named = {.retry_after = -1, .retry_after_ms = -1}};
  *status = 0;
  h->dl_fault = -1;
  h->dl_received = 0;
  if (!url)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  long long issued = 0;
  int was_paced = paced(h, url, &issued);
  if (was_paced < 0) {
    free(url);
    return cairn__error_set(err, CAIRN_EIO, "GET %s: cancelled", path);
  }
  if (open_dest(&s, dest, offset) != 0) {
    free(url);
    return cairn__error_set(err, CAIRN_EIO, "cannot %s %s: %s", offset ? "resume" : "create",
                           dest, strerror(errno));
  }
  s.max = max_bytes;
  s.h = h;
  common_opts(h, url, 0, &hdrs);
  if (offset) {
    char range[64];
    snprintf(range, sizeof range, "Range: bytes=%llu-", offset);
    hdrs = curl_slist_append(hdrs, range);
  }
  curl_easy_setopt(h->curl, CURLOPT_URL, url);
  curl_easy_setopt(h->curl, CURLOPT_HTTPGET, 1L);
  curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, write_file);
  curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, 0L);
  curl_easy_setopt(h->curl, CURLOPT_CONNECTTIMEOUT_MS, h->stall_ms);
  curl_easy_setopt(h->curl, CURLOPT_MAX_RECV_SPEED_LARGE, (curl_off_t)h->max_recv);
  curl_easy_setopt(h->curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(h->curl, CURLOPT_XFERINFOFUNCTION, download_progress);
  curl_easy_setopt(h->curl, CURLOPT_XFERINFODATA, h);
  curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, read_dl_header);
  curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &s);
  h->last_bytes = 0;
  h->last_move_ms = mono_ms();
  h->stalled = 0;
  CURLcode cc = curl_easy_perform(h->curl);
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
  note_answer(h, was_paced, issued, *status, s.named.retry_after, s.named.retry_after_ms);
  if (*status == 206 && offset && !s.misplaced)
    *status = 200; /* the rest, as asked: a whole copy to the caller */
  int closed = fclose(s.f);
  h->dl_received = s.n;
  /* The only timeout left on a download is the connect timeout, stall_ms. */
  if (cc == CURLE_OPERATION_TIMEDOUT)
    h->stalled = 1;
  if (s.overflow) {
    rc = cairn__error_set(err, CAIRN_ETOOBIG, "GET %s: more than %llu bytes", url, max_bytes);
    h->dl_fault = CAIRN_FAIL_SIZE;
  } else if (s.misplaced) {
    *status = 0;
    rc = cairn__error_set(err, CAIRN_EIO, "GET %s: a range that does not start at byte %llu",
                         url, offset);
    h->dl_fault = CAIRN_FAIL_STATUS;
  } else if (s.rejected) {
    *status = 0;
    rc = cairn__error_set(err, CAIRN_EINVAL, "GET %s: a chunk did not match its digest", url);
    h->dl_fault = CAIRN_FAIL_DIGEST;
  } else if (h->stalled) {
    *status = 0;
    rc = cairn__error_set(err, CAIRN_EIO, "GET %s: stalled (no data for %ld ms)", url,
                         h->stall_ms);
    h->dl_fault = CAIRN_FAIL_STALLED;
  } else if (cc != CURLE_OK) {
    *status = 0;
    rc = cairn__error_set(err, CAIRN_EIO, "GET %s: %s", url, curl_easy_strerror(cc));
    if (!s.write_failed && cc != CURLE_ABORTED_BY_CALLBACK) /* not ours, not cancelled */
      h->dl_fault = CAIRN_FAIL_UNREACHABLE;
  }
  else if (closed)
    rc = cairn__error_set(err, CAIRN_EIO, "writing %s: %s", dest, strerror(errno));
  else if (*status != 200) {
    rc = cairn__error_set(err, CAIRN_EIO, "GET %s: HTTP %ld", url, *status);
    h->dl_fault = CAIRN_FAIL_STATUS;
  } else if (sha256) {
    char got[65];
    cairn__sha256_final_hex(&s.sha, got);
    if (strcmp(got, sha256) != 0) {
      rc = cairn__error_set(err, CAIRN_EINVAL, "GET %s: sha256 mismatch (got %s)", url, got);
      h->dl_fault = CAIRN_FAIL_DIGEST;
    }
  }
  if (rc != CAIRN_OK && !keep)
    unlink(dest);
  curl_slist_free_all(hdrs);
  free(url);
  return rc;
}

cairn_status cairn__http_download(cairn__http *h, const char *path, const char *dest,
                                 const char *sha256, unsigned long long max_bytes,
                                 long *status, cairn_error *err) {
  return download_at(h, path, dest, sha256, max_bytes, 0, 0, status, err);
}

cairn_status cairn__http_download_at(cairn__http *h, const char *path, const char *dest,
                                    const char *sha256, unsigned long long max_bytes,
                                    unsigned long long offset, long *status, cairn_error *err) {
  return download_at(h, path, dest, sha256, max_bytes, offset, 1, status, err);
}

int cairn__http_download_fault(const cairn__http *h, unsigned long long *received) {
  if (received)
    *received = h->dl_received;
  return h->dl_fault;
}

cairn_status cairn__http_upload(cairn__http *h, const char *path, const char *src, long *status,
                               cairn__buf *resp_body, cairn_error *err) {
  struct curl_slist *hdrs = NULL;
  cairn_status rc = CAIRN_OK;
  char *url = make_url(h, path);
  sink s = {resp_body, 0};
  *status = 0;
  if (!url)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  long long issued = 0;
  int was_paced = paced(h, url, &issued);
  cairn__http_response named = {.retry_after = -1, .retry_after_ms = -1};
  if (was_paced < 0) {
    free(url);
    return cairn__error_set(err, CAIRN_EIO, "PUT %s: cancelled", path);
  }
  FILE *f = fopen(src, "rb");
  if (!f) {
    free(url);
    return cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", src, strerror(errno));
  }
  fseeko(f, 0, SEEK_END);
  off_t size = ftello(f);
  rewind(f);
  common_opts(h, url, (curl_off_t)size, &hdrs);
  hdrs = curl_slist_append(hdrs, "Content-Type: application/octet-stream");
  curl_easy_setopt(h->curl, CURLOPT_URL, url);
  curl_easy_setopt(h->curl, CURLOPT_UPLOAD, 1L);
  curl_easy_setopt(h->curl, CURLOPT_READDATA, f);
  curl_easy_setopt(h->curl, CURLOPT_INFILESIZE_LARGE, (curl_off_t)size);
  curl_easy_setopt(h->curl, CURLOPT_HTTPHEADER, hdrs);
  curl_easy_setopt(h->curl, CURLOPT_WRITEFUNCTION, write_buf);
  curl_easy_setopt(h->curl, CURLOPT_WRITEDATA, &s);
  curl_easy_setopt(h->curl, CURLOPT_TIMEOUT, 0L);
  curl_easy_setopt(h->curl, CURLOPT_HEADERFUNCTION, read_header);
  curl_easy_setopt(h->curl, CURLOPT_HEADERDATA, &named);
  CURLcode cc = curl_easy_perform(h->curl);
  curl_easy_getinfo(h->curl, CURLINFO_RESPONSE_CODE, status);
  note_answer(h, was_paced, issued, *status, named.retry_after, named.retry_after_ms);
  if (cc != CURLE_OK && !s.overflow)
    rc = cairn__error_set(err, CAIRN_EIO, "PUT %s: %s", url, curl_easy_strerror(cc));
  fclose(f);
  curl_slist_free_all(hdrs);
  free(url);
  return rc;
}
