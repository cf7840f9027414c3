/* peer.c — serve the verified cache to peers over HTTP (libmicrohttpd). */
#include "worker/peer.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/grant.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/sha256.h"
#include "worker/deadline.h"
#include "worker/relay.h"
#include "worker/verify.h"

#define FILES_PREFIX "/v1/files/"
/* Connections at once, in all and from one address (docs/worker.md, "Peer
 * file server"): one address cannot take the server's connections from the
 * rest of its cluster. */
#define CONNECTION_LIMIT 256u
#define PER_ADDRESS_LIMIT 16u
/* A connection that moves no byte for this long is closed. */
#define CONNECTION_TIMEOUT_S 30u
/* A request header must be complete this long after the connection opened
 * or its previous request ended (deadline.h). */
#define HEADER_DEADLINE_MS 5000u
/* A granted GET for a file neither cached nor being received waits this
 * long for its download to deliver a checked chunk (the master may name
 * this worker as a source as soon as it hands it the file, cut-through)
 * before its 404. */
#define RELAY_WAIT_MS 10000
/* A relay waits this long for the next checked chunk before it gives up. */
#define RELAY_STALL_MS 30000
#define RELAY_BLOCK (64u * 1024u)

struct cairn__peer {
  struct MHD_Daemon *daemon;
  int cache_fd;              /* the cache directory, for openat() */
  unsigned max_transfers;
  atomic_uint active;
  unsigned port;
  cairn__peerstate *ps;
  cairn__verify *verified;   /* files hashed since their last change: owned when own_verified,
                                else borrowed from the cache */
  int own_verified;
  cairn__relay *relay;       /* borrowed from the cache: downloads to relay, or NULL */
  atomic_ullong relayed;     /* transfers completed while their file was still arriving */
  cairn__deadline *deadline; /* owned: the request-header deadline */
  const cairn__logger *log;   /* borrowed: the worker's */
};

/* One file transfer in progress (the request's context). */
typedef struct transfer {
  char sha256[65];
  unsigned long long size;
  int partial;   /* relayed while this worker was still receiving it */
} transfer;

typedef struct listen_addr {
  struct sockaddr_storage sa;
  int v6;
} listen_addr;

static int parse_addr(const char *spec, listen_addr *out) {
  char host[64];
  const char *colon = NULL, *h = spec;
  size_t hlen;
  memset(out, 0, sizeof *out);
  if (!spec)
    return -1;
  if (spec[0] == '[') {
    const char *close = strchr(spec, ']');
    if (!close || close[1] != ':')
      return -1;
    h = spec + 1;
    hlen = (size_t)(close - h);
    colon = close + 1;
    out->v6 = 1;
  } else {
    colon = strrchr(spec, ':');
    if (!colon)
      return -1;
    hlen = (size_t)(colon - spec);
  }
  if (hlen == 0 || hlen >= sizeof host)
    return -1;
  memcpy(host, h, hlen);
  host[hlen] = '\0';
  char *end = NULL;
  errno = 0;
  unsigned long port = strtoul(colon + 1, &end, 10);
  if (!colon[1] || *end || errno || port > 65535 || colon[1] == '-' || colon[1] == '+')
    return -1;
  if (out->v6) {
    struct sockaddr_in6 *a = (struct sockaddr_in6 *)&out->sa;
    a->sin6_family = AF_INET6;
    a->sin6_port = htons((unsigned short)port);
    return inet_pton(AF_INET6, host, &a->sin6_addr) == 1 ? 0 : -1;
  }
  struct sockaddr_in *a = (struct sockaddr_in *)&out->sa;
  a->sin_family = AF_INET;
  a->sin_port = htons((unsigned short)port);
  return inet_pton(AF_INET, host, &a->sin_addr) == 1 ? 0 : -1;
}

int cairn__peer_parse_listen(const char *spec) {
  listen_addr a;
  return parse_addr(spec, &a);
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status, const char *code,
                             const char *message) {
  char body[300];
  int n = snprintf(body, sizeof body, "{\"error\": {\"code\": \"%s\", \"message\": \"%s\"}}\n",
                   code, message);
  struct MHD_Response *r =
    MHD_create_response_from_buffer((size_t)n, body, MHD_RESPMEM_MUST_COPY);
  if (!r)
    return MHD_NO;
  MHD_add_response_header(r, "Content-Type", "application/json");
  if (status == 401)
    MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
  if (status == 503)
    MHD_add_response_header(r, "Retry-After", "1");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* Answers a request for file name whose grant (common/grant.h) does not
 * let it in; MHD_NO when the grant does. */
static int refuse_grant(cairn__peer *p, struct MHD_Connection *c, const char *name,
                        enum MHD_Result *ret) {
  const char *grant = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, CAIRN_GRANT_PARAM);
  if (!grant) {
    *ret = reply(c, 401, "unauthorized", "a grant from the master is required");
    return 1;
  }
  switch (cairn__peerstate_check_grant(p->ps, name, grant, (long long)time(NULL))) {
  case CAIRN_GRANT_OK: return 0;
  case CAIRN_GRANT_MALFORMED: *ret = reply(c, 403, "forbidden", "malformed grant"); break;
  case CAIRN_GRANT_EXPIRED: *ret = reply(c, 403, "forbidden", "expired grant"); break;
  case CAIRN_GRANT_WRONG: *ret = reply(c, 403, "forbidden", "grant not valid for this file"); break;
  }
  return 1;
}

/* The cached file name (a sha256) open for reading when it still holds
 * the bytes of its digest (verify.h), else -1. A file that does not is
 * removed from the cache (logged at warn) and never sent. */
static int open_verified(cairn__peer *p, const char *name) {
  int fd = openat(p->cache_fd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return -1;
  int hashed = 0, v = cairn__verify_fd(p->verified, fd, name, -1, &hashed);
  if (v == CAIRN__VERIFY_OK) {
    if (hashed)
      CAIRN_DEBUG(p->log, "peer: %s hashed before serving", name);
    return fd;
  }
  struct stat a, b;
  if (v == CAIRN__VERIFY_MISMATCH && fstat(fd, &a) == 0 &&
      fstatat(p->cache_fd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 && a.st_dev == b.st_dev &&
      a.st_ino == b.st_ino) {
    CAIRN_WARN(p->log, "peer: cache file %s no longer holds the bytes of its digest: removed, "
               "not served", name);
    unlinkat(p->cache_fd, name, 0);
  }
  close(fd);
  return -1;
}

/* 1 when the request announces a body. */
static int has_body(struct MHD_Connection *c) {
  const char *len = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
  const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Transfer-Encoding");
  return te || (len && strspn(len, "0") != strlen(len));
}

/* The connection's deadline watch (NULL when it is not watched). */
static cairn__deadline_conn *watch_of(struct MHD_Connection *c) {
  const union MHD_ConnectionInfo *i =
    MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
  return i ? i->socket_context : NULL;
}

/* Tells the deadline watch that c's request header is complete. */
static void header_arrived(cairn__peer *p, struct MHD_Connection *c) {
  cairn__deadline_conn *w = watch_of(c);
  if (w)
    cairn__deadline_got_header(p->deadline, w);
}

/* Watches each new connection's header deadline; forgets it when it closes. */
static void on_connection(void *cls, struct MHD_Connection *c, void **socket_ctx,
                          enum MHD_ConnectionNotificationCode code) {
  cairn__peer *p = cls;
  if (code == MHD_CONNECTION_NOTIFY_STARTED) {
    const union MHD_ConnectionInfo *i =
      MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    *socket_ctx = i ? cairn__deadline_add(p->deadline, i->connect_fd) : NULL;
  } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
    cairn__deadline_remove(p->deadline, *socket_ctx);
    *socket_ctx = NULL;
  }
}

static long long mono_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000 + t.tv_nsec / 1000000;
}

/* The cached file name open (verified), or -1 with *rd the download of it
 * in progress (relay.h), or -1 and NULL when neither appears within
 * RELAY_WAIT_MS. */
static int await_file(cairn__peer *p, const char *name, cairn__relay_rd **rd, long long *size) {
  long long deadline = mono_ms() + RELAY_WAIT_MS;
  for (;;) {
    unsigned gen = cairn__relay_gen(p->relay);
    if ((*rd = cairn__relay_open(p->relay, name, size)))
      return -1;
    int fd = open_verified(p, name);
    long long left = deadline - mono_ms();
    if (fd >= 0 || left <= 0)
      return fd;
    cairn__relay_wait(p->relay, gen, (long)left);
  }
}

/* A relayed answer: the download it reads, from byte from of the file. */
typedef struct relayed {
  cairn__relay_rd *rd;
  uint64_t from;
} relayed;

static ssize_t relay_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  relayed *x = cls;
  ssize_t k = cairn__relay_read(x->rd, x->from + pos, buf, max, RELAY_STALL_MS);
  return k > 0 ? k : k == 0 ? MHD_CONTENT_READER_END_OF_STREAM
                            : MHD_CONTENT_READER_END_WITH_ERROR;
}

static void relay_done(void *cls) {
  relayed *x = cls;
  cairn__relay_close(x->rd);
  free(x);
}

/* The response for file name: from the cache, else (a GET, with a relay
 * registry) from its download in progress, relayed as its chunks are
 * checked; NULL when there is neither. range: the request's Range header
 * (NULL: none): the file from the byte it names, *from, when it is one a
 * resumed copy sends (cairn__range_start), else 0 and the whole file.
 * *size: the bytes sent; *partial: relayed. */
static struct MHD_Response *respond(cairn__peer *p, const char *name, int get, const char *range,
                                    unsigned long long *size, unsigned long long *from,
                                    int *partial) {
  cairn__relay_rd *rd = NULL;
  long long rsize = 0, at;
  struct stat st;
  int fd = get && p->relay ? await_file(p, name, &rd, &rsize) : open_verified(p, name);
  struct MHD_Response *r = NULL;
  *partial = 0;
  *from = 0;
  if (fd >= 0 && fstat(fd, &st) == 0) {
    at = get ? cairn__range_start(range, (unsigned long long)st.st_size) : -1;
    *from = at > 0 ? (unsigned long long)at : 0;
    *size = (unsigned long long)st.st_size - *from;
    r = MHD_create_response_from_fd_at_offset64(*size, fd, *from);
  }
  if (!r && fd >= 0)
    close(fd);
  relayed *x = rd ? malloc(sizeof *x) : NULL;
  if (x) {
    at = cairn__range_start(range, (unsigned long long)rsize);
    *from = at > 0 ? (unsigned long long)at : 0;
    *size = (unsigned long long)rsize - *from;
    *partial = cairn__relay_was_partial(rd);
    *x = (relayed){rd, *from};
    r = MHD_create_response_from_callback(*size, RELAY_BLOCK, relay_reader, x, relay_done);
  }
  if (rd && !r) {
    cairn__relay_close(rd);
    free(x);
  }
  return r;
}

/* Answers a checked request for the cached file name: 200 with it, 404,
 * or 503 when a GET would exceed max_transfers (a place is taken before
 * the file is opened, so that concurrent requests cannot exceed it). */
static enum MHD_Result serve(cairn__peer *p, struct MHD_Connection *c, const char *name, int get,
                             void **ctx) {
  if (get && atomic_fetch_add(&p->active, 1) >= p->max_transfers) {
    atomic_fetch_sub(&p->active, 1);
    return reply(c, 503, "overloaded", "too many transfers at once");
  }
  transfer *t = get ? calloc(1, sizeof *t) : NULL;
  unsigned long long size = 0, from = 0;
  int partial = 0;
  const char *range = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_RANGE);
  struct MHD_Response *r = !get || t ? respond(p, name, get, range, &size, &from, &partial) : NULL;
  if (!r) {
    if (get)
      atomic_fetch_sub(&p->active, 1);
    free(t);
    return !get || t ? reply(c, 404, "not_found", "no such file in this cache") : MHD_NO;
  }
  MHD_add_response_header(r, "Content-Type", "application/octet-stream");
  if (from) { /* the rest of a copy broken off elsewhere */
    char cr[80];
    snprintf(cr, sizeof cr, "bytes %llu-%llu/%llu", from, from + size - 1, from + size);
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_RANGE, cr);
    CAIRN_INFO(p->log, "peer: sending %s from byte %llu (%llu bytes)", name, from, size);
  }
  enum MHD_Result ret = MHD_queue_response(c, from ? MHD_HTTP_PARTIAL_CONTENT : MHD_HTTP_OK, r);
  MHD_destroy_response(r);
  if (t && ret == MHD_YES) {
    memcpy(t->sha256, name, 65);
    t->size = size;
    t->partial = partial;
    *ctx = t;
    if (partial)
      CAIRN_INFO(p->log, "peer: sending %s (%llu bytes) while receiving it", t->sha256, t->size);
    else
      CAIRN_DEBUG(p->log, "peer: sending %s (%llu bytes)", t->sha256, t->size);
  } else {
    if (get)
      atomic_fetch_sub(&p->active, 1);
    free(t);
  }
  return ret;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version,
                                  const char *upload_data, size_t *upload_data_size,
                                  void **ctx) {
  cairn__peer *p = cls;
  int get = strcmp(method, "GET") == 0, head = strcmp(method, "HEAD") == 0;
  if (*ctx)  /* a transfer already answered */
    return MHD_YES;
  header_arrived(p, c);
  if (!get && !head)
    return reply(c, 405, "bad_request", "only GET and HEAD are served");
  if (has_body(c))  /* never read: the answer does not wait for a body */
    return reply(c, 400, "bad_request", "a request body is not accepted");
  if (strncmp(url, FILES_PREFIX, strlen(FILES_PREFIX)) != 0)
    return reply(c, 404, "not_found", "no such route");
  const char *name = url + strlen(FILES_PREFIX);
  if (!cairn__sha256_valid_hex(name))
    return reply(c, 404, "not_found", "not a sha256");
  enum MHD_Result refused = MHD_NO; /* set by refuse_grant when it returns 1 */
  if (refuse_grant(p, c, name, &refused))
    return refused;
  return serve(p, c, name, get, ctx);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **ctx,
                         enum MHD_RequestTerminationCode toe) {
  cairn__peer *p = cls;
  transfer *t = *ctx;
  cairn__deadline_conn *w = watch_of(c);
  if (w)  /* the next request's header is due in time */
    cairn__deadline_wait(p->deadline, w);
  if (!t)
    return;
  atomic_fetch_sub(&p->active, 1);
  if (toe == MHD_REQUEST_TERMINATED_COMPLETED_OK) {
    cairn__peerstate_served(p->ps, t->sha256, t->size);
    if (t->partial) {
      unsigned long long n = atomic_fetch_add(&p->relayed, 1) + 1;
      CAIRN_INFO(p->log, "peer: relayed %s (%llu bytes) while receiving it (%llu such "
                 "transfers)", t->sha256, t->size, n);
    } else
      CAIRN_DEBUG(p->log, "peer: served %s (%llu bytes)", t->sha256, t->size);
  } else
    CAIRN_DEBUG(p->log, "peer: transfer of %s ended early (%d)", t->sha256, (int)toe);
  free(t);
  *ctx = NULL;
}

static void on_log(void *cls, const char *fmt, va_list ap) {
  const cairn__peer *p = cls;
  char line[512];
  vsnprintf(line, sizeof line, fmt, ap);
  size_t n = strlen(line);
  while (n && (line[n - 1] == '\n' || line[n - 1] == '\r'))
    line[--n] = '\0';
  CAIRN_DEBUG(p->log, "peer: %s", line);
}

/* A thread per connection, so that neither a slow client nor the hash of
 * a file before it is served (open_verified()) holds up the others. */
static struct MHD_Daemon *start_daemon(cairn__peer *p, const listen_addr *a) {
  unsigned flags = MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD |
                   MHD_USE_ERROR_LOG | (a->v6 ? MHD_USE_IPv6 : 0);
  return MHD_start_daemon(
    flags, 0, NULL, NULL, on_request, p, MHD_OPTION_SOCK_ADDR, (const struct sockaddr *)&a->sa,
    MHD_OPTION_NOTIFY_COMPLETED, on_completed, p, MHD_OPTION_NOTIFY_CONNECTION, on_connection, p,
    MHD_OPTION_CONNECTION_LIMIT, CONNECTION_LIMIT, MHD_OPTION_PER_IP_CONNECTION_LIMIT,
    PER_ADDRESS_LIMIT, MHD_OPTION_CONNECTION_TIMEOUT, CONNECTION_TIMEOUT_S,
    MHD_OPTION_EXTERNAL_LOGGER, on_log, p, MHD_OPTION_END);
}

cairn__peer *cairn__peer_start(const char *listen, const char *cache_dir, unsigned max_transfers,
                               cairn__peerstate *ps, const cairn__logger *log, cairn_error *err) {
  return cairn__peer_start_shared(listen, cache_dir, max_transfers, ps, NULL, NULL, log, err);
}

cairn__peer *cairn__peer_start_shared(const char *listen, const char *cache_dir,
                                      unsigned max_transfers, cairn__peerstate *ps,
                                      cairn__verify *verified, cairn__relay *relay,
                                      const cairn__logger *log, cairn_error *err) {
  listen_addr a;
  if (parse_addr(listen, &a) != 0) {
    cairn__error_set(err, CAIRN_EINVAL, "peer listen address \"%.100s\" is not HOST:PORT",
                    listen ? listen : "");
    return NULL;
  }
  cairn__peer *p = calloc(1, sizeof *p);
  if (!p) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  p->max_transfers = max_transfers ? max_transfers : 1;
  p->ps = ps;
  p->log = log;
  p->relay = relay;
  atomic_init(&p->active, 0);
  atomic_init(&p->relayed, 0);
  p->cache_fd = open(cache_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (p->cache_fd < 0) {
    cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", cache_dir, strerror(errno));
    free(p);
    return NULL;
  }
  p->own_verified = !verified;
  p->verified = verified ? verified : cairn__verify_new();
  p->deadline = cairn__deadline_start(HEADER_DEADLINE_MS);
  if (!p->verified || !p->deadline) {
    cairn__error_set(err, CAIRN_ENOMEM, "peer server: out of memory or threads");
    cairn__peer_stop(p);
    return NULL;
  }
  unsigned removed = 0;  /* its own table: the files found now are hashed now */
  if (p->own_verified && cairn__verify_dir(p->verified, p->cache_fd, NULL, NULL, &removed) == 0 &&
      removed)
    CAIRN_WARN(p->log, "peer: %u cache files did not hold the bytes of their digest: removed",
               removed);
  p->daemon = start_daemon(p, &a);
  const union MHD_DaemonInfo *info =
    p->daemon ? MHD_get_daemon_info(p->daemon, MHD_DAEMON_INFO_BIND_PORT) : NULL;
  if (!info || !info->port) {
    cairn__error_set(err, CAIRN_EIO, "peer server: cannot listen on %s", listen);
    cairn__peer_stop(p);
    return NULL;
  }
  p->port = info->port;
  CAIRN_INFO(p->log, "peer server listening on %s (port %u, at most %u transfers, %u connections "
             "from one address)", listen, p->port, p->max_transfers, PER_ADDRESS_LIMIT);
  return p;
}

unsigned cairn__peer_port(const cairn__peer *p) { return p->port; }

unsigned cairn__peer_active(cairn__peer *p) { return atomic_load(&p->active); }

unsigned long long cairn__peer_relayed(cairn__peer *p) { return atomic_load(&p->relayed); }

void cairn__peer_stop(cairn__peer *p) {
  if (!p)
    return;
  if (p->daemon)  /* first: closing its connections ends their watches */
    MHD_stop_daemon(p->daemon);
  cairn__deadline_stop(p->deadline);
  if (p->own_verified)
    cairn__verify_free(p->verified);
  if (p->cache_fd >= 0)
    close(p->cache_fd);
  free(p);
}
