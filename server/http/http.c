/* http.c — libmicrohttpd glue: a thread pool with epoll; each request's
 * route entry (server/api/routes.h) found at its first callback, which
 * decides the rest: tokens checked from the headers before a body is read
 * (gate.c); request bodies capped per route (413 as soon as a declared
 * length passes it) and in total (503); a deadline per request, a cap per
 * client address and one on connections without a token in all (conns.h);
 * the route's lane: streamed file uploads hashed on the way to disk, work
 * requests held (suspended) until a task is eligible for them and job
 * waits until their job changes state (waiters.h), long handlers on the
 * slow lane (slow.h). Only this file includes microhttpd.h. Limits:
 * docs/security.md. */
#include <errno.h>
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "common/buf.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/sha256.h"
#include "server/http/http.h"
#include "server/conn/slow.h"

/* The TLS versions served (GnuTLS priority string): 1.2 and 1.3; 1.0 and
 * 1.1 are refused at the handshake. */
#define CAIRN_TLS_PRIORITIES "NORMAL:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2"

typedef struct conn {
  const cairn__route *route; /* its entry (server/api/routes.h), from the first callback on */
  cairn__gate gate;   /* what the headers allow (cairn__api_gate) */
  int begun;          /* the first access callback has run */
  double started;     /* monotonic seconds at the request line */
  cairn__buf body;
  size_t held;        /* bytes this request counts in m->body_bytes */
  int responded;      /* a response was queued early (error during upload) */
  int too_big;        /* a body without Content-Length passed its cap: the rest is
                       * read and dropped (up to CAIRN_MAX_BODY_DISCARD), then 413 */
  size_t discarded;
  /* a streamed upload (LANE_STREAMED: PUT /v1/files/{sha}, PUT /v1/results/{n}/files/{sha}) */
  int uploading;      /* this request is one: its body goes to upload_fd */
  int upload_fd;
  char upload_tmp[4200];
  cairn__upload up;       /* what its handler accepted: digest, cap, lease */
  double extra_seconds;   /* added to its deadline: an output file's length at
                             CAIRN_UPLOAD_MIN_RATE, a held request's wait */
  cairn__sha256 hash;
  uint64_t upload_size;
  /* a POST /v1/work held for a task (waiters.h) */
  cairn__hold hold;       /* what api.c asked for at its last look at the core */
  int wslot;              /* its slot while held (-1: none) */
  int64_t hold_deadline;  /* cairn__mono_ms when its wait ends; 0: never held */
  int unheld;             /* resumed at once, not held: why is in `instant` */
  cairn__wake instant;
  int stale;              /* holds refused as stale so far (at most HOLD_STALE_MAX) */
  cairn__pass pass;       /* the wake it got, passed on when it finds no task */
  int no_hold;            /* a job wait whose wait ended: answer, hold no more */
  struct slowreq *slow;   /* run on the slow lane (slow.h); its answer once resumed */
} conn;

/* A work request whose hold is refused this often as stale (a wake between
 * its look at the core and its hold) is answered 204. */
#define HOLD_STALE_MAX 3

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The client's IPv4 address as text into ip, or "" (IPv6 is not served). */
static void client_ip(struct MHD_Connection *c, char ip[INET_ADDRSTRLEN]) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
  ip[0] = '\0';
  if (ci && ci->client_addr && ci->client_addr->sa_family == AF_INET)
    inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)ci->client_addr)->sin_addr, ip,
              INET_ADDRSTRLEN);
}

static const char *bearer(struct MHD_Connection *c) {
  const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_AUTHORIZATION);
  if (!h || strncasecmp(h, "Bearer ", 7) != 0)
    return NULL;
  h += 7;
  while (*h == ' ')
    h++;
  return *h ? h : NULL;
}

/* The dashboard's Content-Security-Policy (web/: one module script and
 * one style sheet of its own, no inline script, style or style attribute;
 * its favicon is a data: URL; it reads the /v1 API with fetch and offers
 * downloads as blob: links, which navigation, not the policy, governs).
 * Any other answer (JSON, files, outputs) is never meant to be rendered
 * as a page: it gets a policy that allows nothing. */
#define CSP_DASHBOARD                                                                          \
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "            \
  "connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'"
#define CSP_OTHER "default-src 'none'; frame-ancestors 'none'; base-uri 'none'; sandbox"
/* The project's public pages (web/project/: scripts, styles and images of
 * their own only; docs/security.md, "Headers"). */
#define CSP_PROJECT                                                                            \
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "                  \
  "object-src 'none'; frame-ancestors 'none'"

/* The headers every answer carries, whatever its route or status
 * (docs/security.md, "Headers"): no MIME sniffing, no framing, no
 * referrer, and the route's Content-Security-Policy. */
static void security_headers(struct MHD_Response *r, const cairn__route *route) {
  MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
  MHD_add_response_header(r, "X-Frame-Options", "DENY");
  MHD_add_response_header(r, "Referrer-Policy", "no-referrer");
  MHD_add_response_header(r, "Content-Security-Policy",
                          route->flags & RF_PROJECT ? CSP_PROJECT
                          : route->flags & RF_PAGE  ? CSP_DASHBOARD
                                                    : CSP_OTHER);
}

static const char MONTHS[12][4] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                   "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};

/* An HTTP date (RFC 9110 §5.6.7, IMF-fixdate: "Sun, 06 Nov 1994 08:49:37
 * GMT") of Unix time t into out, without the locale. */
static void http_date(int64_t t, char out[40]) {
  static const char days[7][4] = {"Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"};
  time_t tt = (time_t)t;
  struct tm tm;
  gmtime_r(&tt, &tm);
  snprintf(out, 40, "%s, %02d %s %04d %02d:%02d:%02d GMT", days[tm.tm_wday % 7], tm.tm_mday,
           MONTHS[tm.tm_mon % 12], tm.tm_year + 1900, tm.tm_hour, tm.tm_min, tm.tm_sec);
}

/* An IMF-fixdate header's Unix time; 0 when s is NULL or not one (the
 * header is then ignored, RFC 9110 §13.1.3). */
static int64_t http_date_parse(const char *s) {
  char mon[4] = "";
  struct tm tm = {0};
  int n = 0;
  if (!s || sscanf(s, "%*3[A-Za-z], %2d %3[A-Za-z] %4d %2d:%2d:%2d GMT%n", &tm.tm_mday, mon,
                   &tm.tm_year, &tm.tm_hour, &tm.tm_min, &tm.tm_sec, &n) != 6 || n == 0)
    return 0;
  tm.tm_mon = -1;
  for (int i = 0; i < 12; i++)
    if (strcmp(mon, MONTHS[i]) == 0)
      tm.tm_mon = i;
  tm.tm_year -= 1900;
  time_t t = tm.tm_mon >= 0 ? timegm(&tm) : (time_t)-1;
  return t > 0 ? (int64_t)t : 0;
}

static enum MHD_Result send_resp(cairn_master *m, struct MHD_Connection *c,
                                 const cairn__route *route, cairn__resp *rs) {
  struct MHD_Response *r;
  if (rs->fd >= 0 && rs->status == 206) /* the rest of a file, from fd_from */
    r = MHD_create_response_from_fd_at_offset64(rs->fd_size - rs->fd_from, rs->fd, rs->fd_from);
  else if (rs->fd >= 0)
    r = MHD_create_response_from_fd64(rs->fd_size, rs->fd);
  else
    r = MHD_create_response_from_buffer(rs->len, rs->body ? rs->body : (void *)"",
                                        rs->body ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
  if (!r) {
    if (rs->fd >= 0)
      close(rs->fd);
    free(rs->body);
    return MHD_NO;
  }
  security_headers(r, route);
  if (rs->ctype && rs->status != 204)
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, rs->ctype);
  if (rs->etag[0])
    MHD_add_response_header(r, MHD_HTTP_HEADER_ETAG, rs->etag);
  if (rs->last_modified > 0) {
    char date[40];
    http_date(rs->last_modified, date);
    MHD_add_response_header(r, MHD_HTTP_HEADER_LAST_MODIFIED, date);
  }
  if (rs->no_store)
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
  else if (rs->max_age > 0) {
    char cc[48];
    snprintf(cc, sizeof cc, "public, max-age=%d", rs->max_age);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CACHE_CONTROL, cc);
  }
  if (rs->cookie[0])
    MHD_add_response_header(r, MHD_HTTP_HEADER_SET_COOKIE, rs->cookie);
  if (rs->fd >= 0 && rs->status == 206) {
    char cr[80];
    snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", (unsigned long long)rs->fd_from,
             (unsigned long long)rs->fd_size - 1, (unsigned long long)rs->fd_size);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
  }
  if (rs->retry_after > 0) {
    char ra[16];
    snprintf(ra, sizeof ra, "%d", rs->retry_after);
    MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, ra);
  }
  if (rs->retry_after_ms > 0) {
    char ra[16];
    snprintf(ra, sizeof ra, "%d", rs->retry_after_ms);
    MHD_add_response_header(r, "Cairn-Retry-After-Ms", ra);
  }
  enum MHD_Result ret = MHD_queue_response(c, (unsigned)rs->status, r);
  MHD_destroy_response(r);
  cairn__api_count(m, route, rs->status);
  return ret;
}

/* A GET's 200 body in memory gets an ETag (FNV-1a 64 of the body): when
 * the request's If-None-Match names it, the answer is 304 without a body,
 * so that a poller (the dashboard) is not sent what it has. O(body). A
 * handler that set the ETag itself (GET /v1/stats: its rendering's, O(1))
 * also answered the If-None-Match. */
static void conditional(struct MHD_Connection *c, cairn__resp *rs) {
  if (rs->status != 200 || rs->fd >= 0 || !rs->body || rs->etag[0])
    return;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < rs->len; i++)
    h = (h ^ (unsigned char)rs->body[i]) * 1099511628211ull;
  snprintf(rs->etag, sizeof rs->etag, "\"%016llx\"", (unsigned long long)h);
  const char *inm = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_NONE_MATCH);
  if (inm && strstr(inm, rs->etag)) {
    free(rs->body);
    rs->body = NULL;
    rs->len = 0;
    rs->status = 304;
  }
}

static enum MHD_Result send_error(cairn_master *m, struct MHD_Connection *c,
                                  const cairn__route *route, cairn_status st, const char *text) {
  cairn__resp rs = {.fd = -1};
  cairn__api_error(&rs, st, text);
  return send_resp(m, c, route, &rs);
}

static void upload_abort(conn *k) {
  if (k->upload_fd >= 0) {
    close(k->upload_fd);
    unlink(k->upload_tmp);
    k->upload_fd = -1;
  }
}

/* A streamed upload (LANE_STREAMED; k->up, what its handler accepted):
 * data streams to a temp file in the file store's folder while it is
 * hashed, never held in memory; at its end the digest must be the URL's
 * (and an output file's length the declared one), then it is renamed into
 * place (cairn__files_commit; an output file is held for its lease, not
 * recorded: uploads.h). */
static enum MHD_Result upload(cairn_master *m, struct MHD_Connection *c, conn *k,
                              const char *data, size_t *size) {
  if (*size) {
    if (k->responded) {
      *size = 0;
      return MHD_YES;
    }
    if (k->upload_size + *size > k->up.cap) {
      upload_abort(k);
      k->responded = 1;
      *size = 0;
      return send_error(m, c, k->route, k->up.vol ? CAIRN_EINVAL : CAIRN_ETOOBIG,
                        k->up.vol ? "more bytes than the Content-Length announced"
                                  : "the file exceeds the upload cap");
    }
    cairn__sha256_update(&k->hash, data, *size);
    const char *p = data;
    size_t left = *size;
    while (left) {
      ssize_t w = write(k->upload_fd, p, left);
      if (w < 0 && errno == EINTR)
        continue;
      if (w <= 0) {
        upload_abort(k);
        k->responded = 1;
        *size = 0;
        return send_error(m, c, k->route, CAIRN_EIO, "cannot write the upload to disk");
      }
      p += w;
      left -= (size_t)w;
    }
    k->upload_size += *size;
    *size = 0;
    return MHD_YES;
  }
  if (k->responded)
    return MHD_YES;
  char got[65];
  cairn__sha256_final_hex(&k->hash, got);
  close(k->upload_fd);
  k->upload_fd = -1;
  if (k->up.vol && k->upload_size != k->up.cap) {
    unlink(k->upload_tmp);
    char text[160];
    snprintf(text, sizeof text, "truncated upload: %llu of the %llu bytes announced arrived",
             (unsigned long long)k->upload_size, (unsigned long long)k->up.cap);
    return send_error(m, c, k->route, CAIRN_EINVAL, text);
  }
  int existed = 0;
  cairn_error err = {0};
  cairn_status st =
    k->up.vol
      ? cairn__files_commit_output(m->core, k->upload_tmp, k->up.want, got,
                                   (int64_t)k->upload_size, k->up.vol, k->up.idx, &existed, &err)
      : cairn__files_commit(m->core, k->upload_tmp, k->up.want, got, (int64_t)k->upload_size,
                            &existed, &err);
  if (st != CAIRN_OK)
    return send_error(m, c, k->route, err.status, err.text);
  cairn__resp rs = {.status = existed ? 200 : 201, .fd = -1, .ctype = "application/json"};
  if (asprintf(&rs.body, "{\"sha256\":\"%s\",\"size\":%llu}", k->up.want,
               (unsigned long long)k->upload_size) < 0)
    rs.body = NULL;
  rs.len = rs.body ? strlen(rs.body) : 0;
  return send_resp(m, c, k->route, &rs);
}

/* Counts n more body bytes of k against cfg.max_body_memory; -1 (nothing
 * counted) when that would pass it. */
static int reserve(cairn_master *m, conn *k, size_t n) {
  size_t before = atomic_fetch_add(&m->body_bytes, n);
  if (before + n > m->cfg.max_body_memory) {
    atomic_fetch_sub(&m->body_bytes, n);
    return -1;
  }
  k->held += n;
  return 0;
}

static void release(cairn_master *m, conn *k) {
  cairn__buf_free(&k->body);
  atomic_fetch_sub(&m->body_bytes, k->held);
  k->held = 0;
}

static enum MHD_Result too_big(cairn_master *m, struct MHD_Connection *c, conn *k) {
  char text[160];
  snprintf(text, sizeof text, "the request body exceeds the cap of %zu bytes on %s",
           k->gate.max_body, cairn__route_labels[k->route->label]);
  k->responded = 1;
  return send_error(m, c, k->route, CAIRN_ETOOBIG, text);
}

static enum MHD_Result overloaded(cairn_master *m, struct MHD_Connection *c, conn *k) {
  cairn__resp rs = {.fd = -1, .retry_after = 1};
  cairn__api_error(&rs, CAIRN_ENOMEM, "the request bodies in progress fill the master's memory "
                   "cap; retry later");
  k->responded = 1;
  release(m, k);
  return send_resp(m, c, k->route, &rs);
}

/* A streamed route at its headers: its handler (through cairn__api_handle)
 * checks the URL, the token and the declared length and fills k->up, or
 * answers; then its temp file is opened. */
static enum MHD_Result upload_begin(cairn_master *m, struct MHD_Connection *c, conn *k,
                                    const char *method, const char *url, const char *token,
                                    int has_length, unsigned long long declared) {
  k->uploading = 1;
  cairn__req rq = {.method = method, .path = url, .token = token, .client_ip = "",
                   .declared = declared, .has_length = has_length};
  cairn__resp rs = {.fd = -1, .upload = &k->up};
  cairn__api_handle(m, k->route, &rq, &rs);
  if (rs.status) {
    k->responded = 1;
    return send_resp(m, c, k->route, &rs);
  }
  k->extra_seconds = k->up.seconds;
  snprintf(k->upload_tmp, sizeof k->upload_tmp, "%s/.upload-XXXXXX", cairn__core_files_dir(m->core));
  k->upload_fd = mkstemp(k->upload_tmp);
  if (k->upload_fd < 0) {
    k->responded = 1;
    return send_error(m, c, k->route, CAIRN_EIO, "cannot create a temporary file");
  }
  cairn__sha256_init(&k->hash);
  return MHD_YES;
}

/* The connection's entry in m->conns (conns.h), or NULL. */
static cairn__conn_ent *conn_ent(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return ci ? ci->socket_context : NULL;
}

/* The first access callback: the headers are in, no body byte is read yet.
 * The token is checked here, and a declared body over the route's cap or
 * over the memory left for bodies is refused before it is read. A valid
 * token makes the connection authenticated for good (conns.h). */
static enum MHD_Result first_call(cairn_master *m, struct MHD_Connection *c, conn *k,
                                  const char *method, const char *url) {
  k->begun = 1;
  k->route = cairn__api_route(method, url);
  cairn__resp rs = {.fd = -1};
  char ip[INET_ADDRSTRLEN];
  client_ip(c, ip);
  int ok = cairn__api_gate(m, k->route, bearer(c), ip, &k->gate, &rs);
  cairn__conn_ent *e = conn_ent(c);
  if (e)
    cairn__conns_request(m->conns, e, k->gate.authenticated);
  if (!ok) {
    k->responded = 1;
    return send_resp(m, c, k->route, &rs);
  }
  const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
  unsigned long long declared = cl ? strtoull(cl, NULL, 10) : 0;
  if (k->route->lane == LANE_STREAMED)
    return upload_begin(m, c, k, method, url, bearer(c), cl != NULL, declared);
  cairn__buf_init(&k->body, k->gate.max_body);
  if (declared > k->gate.max_body)
    return too_big(m, c, k);
  if (declared && reserve(m, k, (size_t)declared))
    return overloaded(m, c, k);
  return MHD_YES;
}

/* A piece of a body (not an upload): buffered within the route's cap and
 * the memory cap. */
static enum MHD_Result body_data(cairn_master *m, struct MHD_Connection *c, conn *k,
                                 const char *data, size_t n) {
  if (k->responded)
    return MHD_YES;
  if (k->too_big) {
    k->discarded += n;
    return k->discarded > CAIRN_MAX_BODY_DISCARD ? too_big(m, c, k) : MHD_YES;
  }
  if (k->body.len + n > k->gate.max_body) {
    release(m, k);
    k->too_big = 1;
    k->discarded = n;
    return MHD_YES;
  }
  if (k->body.len + n > k->held && reserve(m, k, k->body.len + n - k->held))
    return overloaded(m, c, k);
  if (cairn__buf_append(&k->body, data, n))
    return overloaded(m, c, k);
  return MHD_YES;
}

/* The request line began the request (on_uri); one without the admin token
 * that is not complete after cfg.request_seconds loses its connection (an
 * output file upload gets its length at CAIRN_UPLOAD_MIN_RATE more). */
static int past_deadline(const cairn_master *m, const conn *k) {
  if (k->begun && k->gate.trusted)
    return 0;
  return mono_now() - k->started > (double)m->cfg.request_seconds + k->extra_seconds;
}

static conn *conn_new(cairn_master *m) {
  conn *k = calloc(1, sizeof *k);
  if (!k)
    return NULL;
  k->upload_fd = -1;
  k->wslot = -1;
  k->started = mono_now();
  atomic_fetch_add(&m->inflight, 1);
  return k;
}

/* Called by libmicrohttpd with the request line, before the headers: the
 * request's context, so that its deadline counts the header phase too. */
static void *on_uri(void *cls, const char *uri, struct MHD_Connection *c) {
  (void)uri;
  (void)c;
  return conn_new(cls);
}

static enum MHD_Result hold(cairn_master *m, struct MHD_Connection *c, conn *k,
                            cairn__resp *rs);
static enum MHD_Result hold_job(cairn_master *m, struct MHD_Connection *c, conn *k,
                                const char *method, const char *url, cairn__resp *rs);

/* May the handler ask to hold request k (waiters.h): its route's lane is
 * LANE_HELD (a work request, a job wait) and, for a job wait, its wait has
 * not ended. */
static int may_hold(const cairn_master *m, const conn *k) {
  return m->waiters && k->route->lane == LANE_HELD && !k->no_hold;
}

/* A request run on the slow lane (slow.h): its handler's input, pointing
 * into its connection (suspended meanwhile, so libmicrohttpd keeps it),
 * and the answer the lane's thread leaves for on_request. */
typedef struct slowreq {
  cairn_master *m;
  const cairn__route *route;
  cairn__req rq;
  char ip[INET_ADDRSTRLEN];
  cairn__resp rs;
} slowreq;

static void slow_run(void *p) {
  slowreq *q = p;
  cairn__api_handle(q->m, q->route, &q->rq, &q->rs);
}

static void slow_cancel(void *p) {
  cairn__api_error(&((slowreq *)p)->rs, CAIRN_EIO, "the master is stopping; retry later");
}

/* The requests whose handler may run for seconds (LANE_SLOW, from their
 * route's slow_from bytes of body on): POST /v1/volunteers/{id}/ban (a ban
 * in slices, each waiting for its commit), a POST /v1/jobs whose body
 * passes CAIRN__SLOW_BODY (a job's submission is O(its tasks and edges)
 * under the core's lock), and DELETE /v1/jobs/{id} (O(its tasks) under the
 * lock, then one transaction that deletes its rows: 1.1 s for 100,000
 * tasks). */
static int slow_request(const conn *k) {
  return k->route->lane == LANE_SLOW && k->body.len >= k->route->slow_from;
}

/* Suspends request k and queues rq for the slow lane; a full lane: 429. */
static enum MHD_Result offload(cairn_master *m, struct MHD_Connection *c, conn *k,
                               const cairn__req *rq) {
  slowreq *q = malloc(sizeof *q);
  if (!q)
    return send_error(m, c, k->route, CAIRN_ENOMEM, "out of memory");
  *q = (slowreq){.m = m, .route = k->route, .rq = *rq, .rs = {.fd = -1}};
  snprintf(q->ip, sizeof q->ip, "%s", rq->client_ip);
  q->rq.client_ip = q->ip;
  k->slow = q;
  MHD_suspend_connection(c); /* before the lane knows it: no resume comes first */
  if (cairn__slow_submit(m->slow, slow_run, slow_cancel, q, c) == 0)
    return MHD_YES;
  MHD_resume_connection(c);
  cairn__resp rs = {.fd = -1, .retry_after = 1};
  cairn__api_failf(&rs, CAIRN_ERATE,
                   "%u slow requests (bans, deletions, submissions over %u KiB) are running or "
                   "queued; retry later", CAIRN__SLOW_CAP, CAIRN__SLOW_BODY / 1024);
  q->rs = rs;
  return MHD_YES;
}

/* A complete request to the API (k->hold_deadline set: a work request
 * asked again after a hold, or a job wait looking again). */
static enum MHD_Result handle(cairn_master *m, struct MHD_Connection *c, conn *k,
                              const char *method, const char *url) {
  char ip[INET_ADDRSTRLEN] = "";
  client_ip(c, ip);
  cairn__req rq = {.method = method, .path = url, .token = bearer(c), .body = k->body.data,
                   .len = k->body.len, .client_ip = ip,
                   .purge = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "purge"),
                   .arg_task = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "task"),
                   .arg_name = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "name"),
                   .arg_limit = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "limit"),
                   .arg_after = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "after"),
                   .arg_wait = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "wait"),
                   .arg_page = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "page"),
                   .arg_start = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "start"),
                   .arg_end = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "end"),
                   .arg_leaf_index = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
                                                                 "leaf_index"),
                   .arg_tree_size = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
                                                                "tree_size"),
                   .arg_first = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "first"),
                   .arg_second = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "second"),
                   .if_none_match = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
                                                                MHD_HTTP_HEADER_IF_NONE_MATCH),
                   .range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE),
                   .session = MHD_lookup_connection_value(c, MHD_COOKIE_KIND, "cairn_session"),
                   .csrf = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "X-CSRF-Token"),
                   .arg_by = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "by"),
                   .if_modified_since = http_date_parse(MHD_lookup_connection_value(
                     c, MHD_HEADER_KIND, MHD_HTTP_HEADER_IF_MODIFIED_SINCE)),
                   .resumed = k->hold_deadline != 0};
  if (m->slow && slow_request(k))
    return offload(m, c, k, &rq);
  cairn__resp rs = {.fd = -1, .hold = may_hold(m, k) ? &k->hold : NULL};
  k->hold.ms = 0;
  k->hold.job = 0;
  cairn__api_handle(m, k->route, &rq, &rs);
  if (rs.hold && k->hold.ms > 0 && k->hold.job)
    return hold_job(m, c, k, method, url, &rs);
  if (!strcmp(method, "GET"))
    conditional(c, &rs);
  if (rs.hold && k->hold.ms > 0 && rs.status == 204)
    return hold(m, c, k, &rs);
  return send_resp(m, c, k->route, &rs);
}

/* Parks request k (its deadline set and not passed): its connection is
 * suspended, then put in the waiters' table; whoever ends the hold
 * resumes it and on_request goes on in resumed(). A hold the table
 * refuses resumes at once. */
static enum MHD_Result park(cairn_master *m, struct MHD_Connection *c, conn *k) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  cairn__hold_req h = {.conn = c, .fd = ci ? (int)ci->connect_fd : -1, .apps = k->hold.apps,
                       .napps = k->hold.napps, .deadline_ms = k->hold_deadline,
                       .gen = k->hold.gen, .job = k->hold.job, .vol = k->hold.vol,
                       .owner = k->hold.owner, .owner_cap = k->hold.owner_cap};
  MHD_suspend_connection(c); /* before the table knows it: no resume comes first */
  k->wslot = cairn__waiters_hold(m->waiters, &h, &k->instant);
  if (k->wslot < 0) {
    k->unheld = 1;
    MHD_resume_connection(c);
  }
  return MHD_YES;
}

/* Holds work request k (api.c found no task and it asked to wait) until a
 * wake or its deadline (park). Past its deadline: rs (204) now. */
static enum MHD_Result hold(cairn_master *m, struct MHD_Connection *c, conn *k,
                            cairn__resp *rs) {
  int64_t now = cairn__mono_ms();
  if (!k->hold_deadline) {
    k->hold_deadline = now + k->hold.ms;
    k->extra_seconds += k->hold.ms / 1000.0; /* not cut by cfg.request_seconds */
  }
  cairn__waiters_pass(m->waiters, &k->pass); /* woken for a task it did not get */
  k->pass.hops = 0;
  if (now >= k->hold_deadline)
    return send_resp(m, c, k->route, rs);
  free(rs->body);
  return park(m, c, k);
}

/* Holds job wait k (api.c found its job running and rendered nothing):
 * as hold() above, with the job's id and generation; once its wait has
 * passed it is answered at once (the job as it is now). */
static enum MHD_Result hold_job(cairn_master *m, struct MHD_Connection *c, conn *k,
                                const char *method, const char *url, cairn__resp *rs) {
  int64_t now = cairn__mono_ms();
  if (!k->hold_deadline)
    k->hold_deadline = now + k->hold.ms;
  free(rs->body);
  if (now < k->hold_deadline)
    return park(m, c, k);
  k->no_hold = 1;
  return handle(m, c, k, method, url);
}

/* A held (or refused) job wait, resumed (why): its job changed state, or a
 * hold refused as stale (a change came between its look and its hold):
 * look again, and hold again until its wait ends; past its wait, a stop,
 * a full table, or stale too often: the job as it is now. */
static enum MHD_Result resumed_job(cairn_master *m, struct MHD_Connection *c, conn *k,
                                   const char *method, const char *url, cairn__wake why) {
  if (!(why == CAIRN__WAKE_JOB || (why == CAIRN__WAKE_STALE && k->stale++ < HOLD_STALE_MAX)))
    k->no_hold = 1;
  return handle(m, c, k, method, url);
}

/* A held (or refused) work request, resumed: ask the core again when a
 * task may be there, else answer 204, or close for a client that left. */
static enum MHD_Result resumed(cairn_master *m, struct MHD_Connection *c, conn *k,
                               const char *method, const char *url) {
  void *offer = NULL;
  uint64_t seq = 0;
  cairn__wake why = k->unheld ? k->instant
                              : cairn__waiters_take_offer(m->waiters, k->wslot, &k->pass, &offer,
                                                          &seq);
  k->wslot = -1;
  k->unheld = 0;
  if (why == CAIRN__WAKE_GONE)
    return MHD_NO;
  if (k->hold.job)
    return resumed_job(m, c, k, method, url, why);
  if (why == CAIRN__WAKE_HANDED) { /* the core allocated it a task (handoff.c) */
    cairn__resp rs = {.fd = -1};
    cairn__api_work_handed(m, offer, seq, &rs);
    return send_resp(m, c, k->route, &rs);
  }
  if (why == CAIRN__WAKE_TASK || (why == CAIRN__WAKE_STALE && k->stale++ < HOLD_STALE_MAX))
    return handle(m, c, k, method, url);
  cairn_error failure;
  if (cairn__core_health(m->core, &failure) != CAIRN_OK) /* failed while it was held */
    return send_error(m, c, k->route, failure.status, failure.text);
  cairn__resp rs = {.status = 204, .fd = -1};
  return send_resp(m, c, k->route, &rs);
}

/* The core's waker (cairn__core_set_waker): n tasks of app are eligible. */
static void wake_held(void *ud, uint64_t app, unsigned n) {
  cairn__waiters_wake(((cairn_master *)ud)->waiters, app, n);
}

/* The core's job waker: job's state changed (0: some job's). */
static void wake_job_waits(void *ud, int64_t job) {
  cairn__waiters_wake_job(((cairn_master *)ud)->waiters, job);
}

/* The core's handoff (cairn__core_set_handoff): claims a held work
 * request for a task of app, under c->lock; then gives it its offer. */
static int64_t claim_held(void *ud, uint64_t app, int64_t *vol) {
  return cairn__waiters_claim(((cairn_master *)ud)->waiters, app, vol);
}

static void hand_held(void *ud, int64_t claim, json_t *offer, uint64_t seq) {
  cairn__waiters_hand(((cairn_master *)ud)->waiters, claim, offer, seq);
}

static void resume_conn(void *mc) { MHD_resume_connection(mc); }

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *data,
                                  size_t *size, void **ctx) {
  (void)version;
  cairn_master *m = cls;
  conn *k = *ctx;
  if (!k && !(k = *ctx = conn_new(m)))
    return MHD_NO;
  if (k->slow) { /* resumed by the slow lane: its answer is there */
    enum MHD_Result ret = send_resp(m, c, k->route, &k->slow->rs);
    free(k->slow);
    k->slow = NULL;
    k->responded = 1;
    return ret;
  }
  if (past_deadline(m, k)) {
    CAIRN_DEBUG(&m->log, "http: %s %s not complete after %d s: connection closed", method,
                cairn__route_labels[k->route ? k->route->label : RL_UNKNOWN],
                m->cfg.request_seconds);
    return MHD_NO;
  }
  if (!k->begun)
    return first_call(m, c, k, method, url);
  if (k->uploading)
    return upload(m, c, k, data, size);
  if (*size) {
    size_t n = *size;
    *size = 0;
    return body_data(m, c, k, data, n);
  }
  if (k->responded)
    return MHD_YES;
  if (k->too_big)
    return too_big(m, c, k);
  if (k->wslot >= 0 || k->unheld)
    return resumed(m, c, k, method, url);
  return handle(m, c, k, method, url);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe) {
  cairn_master *m = cls;
  (void)toe;
  conn *k = *ctx;
  if (!k)
    return;
  cairn__conn_ent *e = conn_ent(c);
  if (e) /* between requests again (a no-op for an authenticated connection) */
    cairn__conns_done(m->conns, e);
  atomic_fetch_sub(&m->inflight, 1);
  if (k->wslot >= 0) /* closed while held or just resumed */
    cairn__waiters_forget(m->waiters, k->wslot);
  upload_abort(k); /* a truncated upload leaves nothing behind */
  release(m, k);
  if (k->slow) /* done, its client gone before the answer */
    free(k->slow->rs.body);
  free(k->slow);
  free(k);
  *ctx = NULL;
}

/* TLS session resumption (RFC 8446 section 4.6.1, RFC 5077): libmicrohttpd
 * makes each connection's GnuTLS session without session tickets, so a
 * returning client would pay a full handshake each time. The master makes
 * one ticket key when HTTPS starts (random, in memory only, wiped when it
 * stops: a restart makes every ticket void) and enables tickets on each
 * session as it is accepted; GnuTLS derives the keys that encrypt the
 * tickets from it and rotates them every ticket lifetime (its default, 6
 * hours). O(1) per connection, no lock. */
static int tickets_make(cairn_master *m, cairn_error *err) {
  gnutls_datum_t *key = calloc(1, sizeof *key);
  if (!key || gnutls_session_ticket_key_generate(key) != GNUTLS_E_SUCCESS) {
    free(key);
    return cairn__error_set(err, CAIRN_ENOMEM, "cannot make the TLS session-ticket key");
  }
  m->tls_tickets = key;
  return CAIRN_OK;
}

static void tickets_free(cairn_master *m) {
  gnutls_datum_t *key = m->tls_tickets;
  if (!key)
    return;
  gnutls_memset(key->data, 0, key->size);
  gnutls_free(key->data);
  free(key);
  m->tls_tickets = NULL;
}

/* A connection that cannot resume still works: it pays a full handshake. */
static void tickets_enable(cairn_master *m, struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_GNUTLS_SESSION);
  if (ci && ci->tls_session)
    gnutls_session_ticket_enable_server((gnutls_session_t)ci->tls_session, m->tls_tickets);
}

/* A connection accepted (its socket context: its entry in m->conns, made
 * room for there) or closed (the entry freed). Accepting closes at once a
 * connection for which there is no memory. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe) {
  cairn_master *m = cls;
  if (toe == MHD_CONNECTION_NOTIFY_CLOSED) {
    if (*socket_context)
      cairn__conns_close(m->conns, *socket_context);
    *socket_context = NULL;
    return;
  }
  if (m->tls_tickets) /* before its handshake, which runs later on this thread */
    tickets_enable(m, c);
  const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
  if (!ci)
    return;
  if (!(*socket_context = cairn__conns_open(m->conns, (int)ci->connect_fd)))
    shutdown((int)ci->connect_fd, SHUT_RDWR);
}

static void on_log(void *cls, const char *fmt, va_list ap) {
  const cairn_master *m = cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && line[n - 1] == '\n')
    line[--n] = '\0';
  CAIRN_DEBUG(&m->log, "http: %s", line);
}

/* Reads a PEM file (at most 1 MiB) into a NUL-terminated string. */
static char *read_pem(const char *path, cairn_error *err) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    cairn__error_set(err, CAIRN_EIO, "cannot read %s: %s", path, strerror(errno));
    return NULL;
  }
  cairn__buf b;
  cairn__buf_init(&b, 1u << 20);
  char chunk[4096];
  size_t n;
  int bad = 0;
  while (!bad && (n = fread(chunk, 1, sizeof chunk, f)) > 0)
    bad = cairn__buf_append(&b, chunk, n);
  fclose(f);
  if (bad || b.len == 0) {
    cairn__buf_free(&b);
    cairn__error_set(err, CAIRN_EINVAL, "%s is empty or too large for a PEM file", path);
    return NULL;
  }
  return cairn__buf_take(&b, NULL);
}

cairn_status cairn__http_start(cairn_master *m, cairn_error *err) {
  char host[256];
  const char *colon = strrchr(m->listen, ':');
  if (!colon || colon == m->listen || (size_t)(colon - m->listen) >= sizeof host)
    return cairn__error_set(err, CAIRN_EINVAL, "--listen must be HOST:PORT, got \"%s\"", m->listen);
  memcpy(host, m->listen, (size_t)(colon - m->listen));
  host[colon - m->listen] = '\0';
  char *end = NULL;
  long port = strtol(colon + 1, &end, 10);
  if (*end || port < 0 || port > 65535)
    return cairn__error_set(err, CAIRN_EINVAL, "bad port in --listen \"%s\"", m->listen);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  if (strcmp(host, "localhost") == 0)
    snprintf(host, sizeof host, "127.0.0.1");
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1)
    return cairn__error_set(err, CAIRN_EINVAL, "--listen host must be an IPv4 address, got \"%s\"",
                           host);
  char *cert = NULL, *key = NULL;
  int tls = m->cfg.tls_cert || m->cfg.tls_key;
  if (tls) {
    if (!m->cfg.tls_cert || !m->cfg.tls_key) {
      return cairn__error_set(err, CAIRN_EINVAL, "TLS needs both a certificate and a key file");
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
      return cairn__error_set(err, CAIRN_EINVAL, "this libmicrohttpd has no TLS support");
    }
    cert = read_pem(m->cfg.tls_cert, err);
    key = cert ? read_pem(m->cfg.tls_key, err) : NULL;
    if (!cert || !key) {
      free(cert);
      return err ? err->status : CAIRN_EIO;
    }
  }
  if (!m->waiters && !(m->waiters = cairn__waiters_create(
                        m->cfg.max_held_work > 0 && m->cfg.max_held_work <= (int)CAIRN__WAITERS_CAP
                          ? (unsigned)m->cfg.max_held_work : 0,
                        m->cfg.max_job_waits > 0 && m->cfg.max_job_waits <= (int)CAIRN__JOB_WAITS_CAP
                          ? (unsigned)m->cfg.max_job_waits : 0,
                        resume_conn, err))) {
    free(cert);
    free(key);
    return err ? err->status : CAIRN_ENOMEM;
  }
  if (!m->conns && !(m->conns = cairn__conns_create((unsigned)m->cfg.anonymous_connections,
                                                    CAIRN_ANON_HEADER_SECONDS, err))) {
    free(cert);
    free(key);
    return err ? err->status : CAIRN_ENOMEM;
  }
  if (!m->slow && !(m->slow = cairn__slow_create(resume_conn, err))) {
    free(cert);
    free(key);
    return err ? err->status : CAIRN_ENOMEM;
  }
  cairn__core_set_waker(m->core, wake_held, wake_job_waits, m);
  cairn__core_set_handoff(m->core, claim_held, hand_held);
  if (tls && !m->tls_tickets && tickets_make(m, err) != CAIRN_OK) {
    free(cert);
    free(key);
    return err ? err->status : CAIRN_ENOMEM;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_EPOLL | MHD_USE_ERROR_LOG |
                   MHD_USE_ITC | MHD_ALLOW_SUSPEND_RESUME;
  /* MHD ignores options after MHD_OPTION_END, so the TLS options are last:
   * TLS 1.2 and 1.3 only (GnuTLS priorities), then the certificate and key. */
  struct MHD_Daemon *d = MHD_start_daemon(
    flags | (tls ? MHD_USE_TLS : 0), 0, NULL, NULL, on_request, m, MHD_OPTION_SOCK_ADDR,
    (struct sockaddr *)&sa, MHD_OPTION_THREAD_POOL_SIZE, (unsigned)m->cfg.threads,
    MHD_OPTION_NOTIFY_COMPLETED, on_completed, m, MHD_OPTION_URI_LOG_CALLBACK, on_uri, m,
    MHD_OPTION_NOTIFY_CONNECTION, on_connection, m,
    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)m->cfg.idle_timeout_seconds,
    MHD_OPTION_CONNECTION_LIMIT, CAIRN_MAX_CONNECTIONS, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
    m->cfg.per_ip_connections > 0 ? (unsigned)m->cfg.per_ip_connections : 0u,
    MHD_OPTION_EXTERNAL_LOGGER, on_log, m,
    tls ? MHD_OPTION_HTTPS_PRIORITIES : MHD_OPTION_END, CAIRN_TLS_PRIORITIES,
    MHD_OPTION_HTTPS_MEM_CERT, cert, MHD_OPTION_HTTPS_MEM_KEY, key, MHD_OPTION_END);
  int saved = errno;
  free(cert);
  free(key);
  if (!d) {
    tickets_free(m);
    return cairn__error_set(err, CAIRN_EIO, "cannot listen on %s%s: %s", m->listen,
                           tls ? " with that certificate and key" : "", strerror(saved));
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(m->url, sizeof m->url, "%s://%s:%u", tls ? "https" : "http", host,
           info ? info->port : (unsigned)port);
  m->daemon = d;
  return CAIRN_OK;
}

/* How long cairn__http_stop() lets requests in progress finish. */
#define DRAIN_MS 2000

void cairn__http_stop(cairn_master *m) {
  if (!m->daemon)
    return;
  /* stop accepting, let the requests in progress be answered (a failed
   * master's 503s among them), then stop; idle keep-alive connections do
   * not hold it up */
  MHD_socket lsock = MHD_quiesce_daemon(m->daemon);
  cairn__core_stop_bans(m->core); /* a ban ends after its slice (finished at the next start) */
  cairn__slow_stop(m->slow); /* the running one finishes, the queued ones get 503 */
  cairn__waiters_shutdown(m->waiters); /* held requests get 204 now (before the daemon
                                        * stops: it must not keep one suspended) */
  for (int waited = 0; atomic_load(&m->inflight) > 0 && waited < DRAIN_MS; waited += 10)
    usleep(10 * 1000);
  MHD_stop_daemon(m->daemon);
  if (lsock != MHD_INVALID_SOCKET)
    close(lsock);
  m->daemon = NULL;
  tickets_free(m); /* after the daemon: no session uses it any more */
}
