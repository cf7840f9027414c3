/* volunteers.c — the master under N volunteers, simulated over real HTTP.
 *
 *   bench-volunteers --n N [--duration S] [--interval S] [--keepalive K]
 *                    [--fresh F] [--workers W] [--slots S] [--task-sleep S]
 *                    [--threads T] [--timeout S] [--admin-every S] [--sources K]
 *                    [--warmup S] [--tls ec|rsa]
 *
 * Starts cairn-server (a separate process, fresh database in a temporary
 * folder, durable) with the limits a project of N volunteers on one address
 * needs (--address-rate -1, --address-connections -1), submits two bag
 * jobs: "work", run by W real cairn-worker processes (app /bin/sleep
 * TASK_SLEEP, or /bin/true when 0), and "sim", which the simulated
 * volunteers draw from now and then. Then, from this one process with one
 * epoll loop and hand-written HTTP/1.1 (no thread per volunteer):
 *
 * 1. ramp-up: N volunteers register (POST /v1/volunteers), reported apart;
 *    the master's VmRSS before and after gives its memory per volunteer;
 * 2. the real workers start; every volunteer then sends one request every
 *    INTERVAL seconds on average (jittered uniformly over 0.5–1.5 ×), N /
 *    INTERVAL a second offered in all: a result (PUT /v1/results/{n}) when
 *    it holds a lease, else a heartbeat (POST /v1/heartbeat, 1 in 4) or a
 *    poll for work (POST /v1/work, never "wait"): 1 in 20 polls may take a
 *    task of "sim" (reported at the volunteer's next request), the others
 *    ask only for an app no job has and get 204;
 * 3. after a warm-up of WARMUP s (5), a window of DURATION s is measured
 *    (a volunteer's first request after registering is spread over one
 *    INTERVAL: a WARMUP of INTERVAL + 5 opens the window after every
 *    volunteer's first request): requests
 *    a second achieved against offered, latency percentiles per route
 *    (from the first byte sent, or the connect of a fresh connection, to
 *    the whole answer), errors by kind (HTTP status, connection failures,
 *    timeouts) with 429s counted apart as throttling, the master's RSS and
 *    CPU (utime + stime) over the window, and the real workers' tasks done
 *    a second.
 *
 * With --tls the master serves HTTPS with a self-signed test certificate
 * made at start in the temporary folder (openssl: ECDSA P-256, or RSA 2048
 * with "rsa"), and every connection speaks TLS without blocking
 * (bench/lib/tlsconn.h): the latency of a fresh connection includes its
 * handshake. Each keep-alive connection, and each volunteer for its fresh
 * ones, keeps the session data of its last connection and offers it at its
 * next, so that it resumes (a TLS 1.3 ticket) instead of paying a full
 * handshake; full and resumed handshakes are counted apart. The master's
 * CPU per request (utime + stime over the window / requests answered) is
 * printed in both modes.
 *
 * Connections: a pool of K keep-alive connections (a request waits for an
 * idle one; one idle for 10 s is reopened before use, below the master's
 * idle timeout) and a fraction F of requests on a fresh connection each
 * (Connection: close), at most FRESH_MAX at once. Memory is bounded: N
 * volunteers of 64 bytes, two queues of N, fixed buffers per connection;
 * with --tls one session's data per volunteer (GnuTLS's: the ticket and
 * the server's certificate).
 * Ends with one line:
 *   volunteers: n=… req_per_s=… p50_ms=… p99_ms=… p999_ms=… errors=… …
 */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "bench/lib/tlsconn.h"
#include "tests/support/harness.h"

enum { R_REG, R_WORK, R_HB, R_RES, NROUTES };
static const char *const route_name[NROUTES] = {"register", "work", "heartbeat", "result"};
enum { E_CONNECT, E_RESET, E_TIMEOUT, E_PROTO, E_TLS, NERR };
static const char *const err_name[NERR] = {"connect", "reset", "timeout", "protocol", "tls"};

enum { FRESH_MAX = 1024, OUT_MAX = 512, IN_MAX = 4096, IDLE_REOPEN_S = 10 };
/* latency bins: 10 µs up to 1 s, then 1 ms up to 61 s */
enum { FINE = 100000, NBINS = FINE + 60000 };

typedef struct vol {
  double due;     /* its next request (heap key) */
  int64_t lease;  /* the allocation index it holds, or 0 */
  uint8_t tok[32];
  uint8_t registered;
  tlsconn_ticket tk; /* --tls: its last fresh connection's session, to resume */
} vol;

typedef struct conn {
  int fd, keep, state, route, reused;
  uint32_t vid;
  double t0, last;  /* request start; last answer (pool) */
  tlsconn *tls;     /* --tls: the session on fd */
  tlsconn_ticket tk; /* --tls, a pool connection: its last session, to resume */
  size_t outlen, outoff, inlen;
  char out[OUT_MAX], in[IN_MAX];
} conn;
enum { C_IDLE, C_CONNECTING, C_HANDSHAKE, C_SENDING, C_READING };

typedef struct ring {
  uint32_t *v;
  size_t cap, head, n;
} ring;

typedef struct stats {
  uint32_t *bins[NROUTES];
  uint64_t count[NROUTES], status[NROUTES][600], err[NERR], throttled, tasks, results;
  uint64_t idle_closed, resent; /* pool connections the master closed while idle */
  uint64_t late;                /* requests sent over 10 ms after they were due */
  double late_max;
  uint64_t tls_full, tls_resumed; /* TLS handshakes done, by kind */
} stats;

static struct sim {
  long n;
  double interval, fresh, timeout;
  int keepalive, port, epfd, nfresh, phase, sources; /* phase 0: ramp, 1: steady, 2: drain */
  vol *v;
  uint32_t *heap;
  size_t hn;
  ring q_keep, q_fresh;
  conn *pool, *fr;
  int *fr_free, nfr_free;
  stats st;
  long registered, reg_failed;
  uint64_t rng;
  struct sockaddr_in sa;
  tlsconn_ctx *tls; /* --tls, else NULL */
} S;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double rnd(void) { /* xorshift64*, uniform in [0, 1) */
  S.rng ^= S.rng >> 12;
  S.rng ^= S.rng << 25;
  S.rng ^= S.rng >> 27;
  return (double)((S.rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

/* ---- the master's process: /proc ---- */

static double proc_cpu(pid_t pid) {
  char path[64], buf[2048];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  const char *p = strrchr(buf, ')');
  unsigned long ut = 0, stt = 0;
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) != 2)
    return -1;
  return (double)(ut + stt) / (double)sysconf(_SC_CLK_TCK);
}

static long proc_rss_kib(pid_t pid) {
  char path[64], line[256];
  long kib = -1;
  snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "VmRSS: %ld kB", &kib) == 1)
      break;
  fclose(f);
  return kib;
}

/* ---- the schedule: a min-heap of volunteers by due time ---- */

static void heap_push(uint32_t id) {
  size_t i = S.hn++;
  while (i > 0 && S.v[S.heap[(i - 1) / 2]].due > S.v[id].due) {
    S.heap[i] = S.heap[(i - 1) / 2];
    i = (i - 1) / 2;
  }
  S.heap[i] = id;
}

static uint32_t heap_pop(void) {
  uint32_t top = S.heap[0], last = S.heap[--S.hn];
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= S.hn)
      break;
    if (c + 1 < S.hn && S.v[S.heap[c + 1]].due < S.v[S.heap[c]].due)
      c++;
    if (S.v[S.heap[c]].due >= S.v[last].due)
      break;
    S.heap[i] = S.heap[c];
    i = c;
  }
  if (S.hn)
    S.heap[i] = last;
  return top;
}

static void schedule(uint32_t id, double due) {
  S.v[id].due = due;
  heap_push(id);
}

static void ring_push(ring *r, uint32_t id) { /* never full: a volunteer is queued once */
  r->v[(r->head + r->n++) % r->cap] = id;
}

static uint32_t ring_pop(ring *r) {
  uint32_t id = r->v[r->head];
  r->head = (r->head + 1) % r->cap;
  r->n--;
  return id;
}

/* ---- outcomes ---- */

static void record(int route, double secs) {
  uint64_t us = (uint64_t)(secs * 1e6);
  size_t b = us < 1000000 ? us / 10 : FINE + (us - 1000000) / 1000;
  S.st.bins[route][b < NBINS ? b : NBINS - 1]++;
  S.st.count[route]++;
}

/* Microseconds at quantile q of route's bins (all routes when route < 0). */
static double quantile(int route, double q) {
  uint64_t total = 0, seen = 0;
  for (int r = 0; r < NROUTES; r++)
    if (route < 0 || r == route)
      total += S.st.count[r];
  if (!total)
    return 0;
  uint64_t want = (uint64_t)ceil(q * (double)total);
  for (size_t b = 0; b < NBINS; b++) {
    for (int r = 0; r < NROUTES; r++)
      if (route < 0 || r == route)
        seen += S.st.bins[r][b];
    if (seen >= want)
      return b < FINE ? (double)(b + 1) * 10 : 1e6 + (double)(b - FINE + 1) * 1000;
  }
  return 0;
}

static void stats_reset(void) {
  for (int r = 0; r < NROUTES; r++)
    memset(S.st.bins[r], 0, NBINS * sizeof *S.st.bins[r]);
  uint32_t *keep[NROUTES];
  memcpy(keep, S.st.bins, sizeof keep);
  memset(&S.st, 0, sizeof S.st);
  memcpy(S.st.bins, keep, sizeof keep);
}

/* ---- requests ---- */

static void hex(const uint8_t *b, size_t n, char *out) {
  for (size_t i = 0; i < n; i++)
    sprintf(out + 2 * i, "%02x", b[i]);
}

static int unhex(const char *s, uint8_t *b, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned x;
    if (sscanf(s + 2 * i, "%2x", &x) != 1)
      return -1;
    b[i] = (uint8_t)x;
  }
  return 0;
}

/* Writes volunteer c->vid's next request into c->out and sets c->route. */
static void build_request(conn *c) {
  vol *v = &S.v[c->vid];
  char path[64], body[128], auth[96] = "";
  const char *method = "POST";
  if (!v->registered) {
    c->route = R_REG;
    snprintf(path, sizeof path, "/v1/volunteers");
    snprintf(body, sizeof body, "{\"name\":\"v%u\",\"apps\":[\"sim\",\"idle\"]}", c->vid);
  } else {
    char tok[65];
    hex(v->tok, 32, tok);
    snprintf(auth, sizeof auth, "Authorization: Bearer %s\r\n", tok);
    if (v->lease) {
      c->route = R_RES;
      method = "PUT";
      snprintf(path, sizeof path, "/v1/results/%lld", (long long)v->lease);
      snprintf(body, sizeof body, "{\"exit_status\":0,\"output\":\"ok\"}");
    } else if (rnd() < 0.25) {
      c->route = R_HB;
      snprintf(path, sizeof path, "/v1/heartbeat");
      snprintf(body, sizeof body, "{}");
    } else {
      c->route = R_WORK;
      snprintf(path, sizeof path, "/v1/work");
      snprintf(body, sizeof body, "{\"apps\":[\"%s\"]}", rnd() < 0.05 ? "sim" : "idle");
    }
  }
  int n = snprintf(c->out, OUT_MAX,
                   "%s %s HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n%sContent-Type: application/json\r\n"
                   "Content-Length: %zu\r\n%s\r\n%s",
                   method, path, S.port, auth, strlen(body), c->keep ? "" : "Connection: close\r\n",
                   body);
  c->outlen = (size_t)n;
  c->outoff = c->inlen = 0;
}

static void ep(conn *c, int op, uint32_t events) {
  struct epoll_event e = {.events = events, .data.u32 = (uint32_t)(c - S.pool)};
  if (!c->keep)
    e.data.u32 = (uint32_t)(S.keepalive + (c - S.fr));
  epoll_ctl(S.epfd, op, c->fd, &e);
}

/* Closes c's socket and its TLS session (no close_notify). */
static void sock_close(conn *c) {
  if (c->fd >= 0) {
    epoll_ctl(S.epfd, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
  }
  tlsconn_free(c->tls);
  c->tls = NULL;
  c->fd = -1;
}

static void conn_close(conn *c) {
  sock_close(c);
  c->state = C_IDLE;
  if (!c->keep)
    S.fr_free[S.nfr_free++] = (int)(c - S.fr);
}

/* The volunteer of c is done with this request: its next one at due. */
static void release_vol(conn *c, double due) {
  if (S.phase < 2)
    schedule(c->vid, due);
}

static double next_due(void) { return now() + S.interval * (0.5 + rnd()); }

static void fail(conn *c, int kind) {
  if (S.phase == 1 || c->route == R_REG)
    S.st.err[kind]++;
  if (c->route == R_REG)
    S.reg_failed++;
  release_vol(c, c->route == R_REG ? now() + 1 : next_due());
  conn_close(c);
}

/* With --sources K > 1, a fresh connection comes from one of K loopback
 * addresses 127.1.x.y chosen by its volunteer (the port is picked at
 * connect, per address): the ports of one address cannot carry thousands
 * of fresh connections a second for long, a population of addresses can. */
static int bind_source(conn *c) {
  if (S.sources <= 1 || c->keep)
    return 0;
  int one = 1;
  uint32_t k = c->vid % (uint32_t)S.sources;
  struct sockaddr_in me = {.sin_family = AF_INET,
                           .sin_addr.s_addr = htonl(0x7f010000u | ((k / 254) << 8) | (k % 254 + 1))};
  setsockopt(c->fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
  return bind(c->fd, (struct sockaddr *)&me, sizeof me);
}

/* The session data c offers to resume: its own (pool) or its volunteer's. */
static tlsconn_ticket *ticket_of(conn *c) { return c->keep ? &c->tk : &S.v[c->vid].tk; }

enum { IO_WAIT = -1, IO_ERROR = -2 };

/* Sends (out) or receives up to len bytes on c, plain or TLS: the bytes
 * moved, 0 at the end of the connection (receiving), IO_WAIT (c's epoll
 * interest set to what the socket must become) or IO_ERROR. */
static ssize_t io(conn *c, int out, void *buf, size_t len) {
  if (!c->tls) {
    ssize_t n = out ? send(c->fd, buf, len, MSG_NOSIGNAL) : recv(c->fd, buf, len, 0);
    return n >= 0 ? n : errno == EAGAIN || errno == EINTR ? IO_WAIT : IO_ERROR;
  }
  ssize_t n = out ? tlsconn_send(c->tls, buf, len) : tlsconn_recv(c->tls, buf, len);
  if (n == TLSCONN_WANT_READ || n == TLSCONN_WANT_WRITE) {
    ep(c, EPOLL_CTL_MOD, n == TLSCONN_WANT_READ ? EPOLLIN : EPOLLOUT);
    return IO_WAIT;
  }
  return n >= 0 ? n : IO_ERROR;
}

/* Sends c's request: connects first when c has no socket. */
static void start(conn *c, uint32_t vid) {
  c->vid = vid;
  build_request(c);
  c->t0 = now();
  c->reused = c->fd >= 0;
  double late = c->t0 - S.v[vid].due; /* waiting for a connection: the simulator's lag */
  if (S.phase == 1 && S.v[vid].registered && late > 0.01) {
    S.st.late++;
    S.st.late_max = late > S.st.late_max ? late : S.st.late_max;
  }
  if (c->fd >= 0 && c->t0 - c->last > IDLE_REOPEN_S) {
    sock_close(c);
    c->reused = 0;
  }
  if (c->fd < 0) {
    int one = 1;
    c->state = C_CONNECTING;
    c->fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (c->fd < 0 || setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) ||
        bind_source(c) ||
        (connect(c->fd, (struct sockaddr *)&S.sa, sizeof S.sa) && errno != EINPROGRESS)) {
      fail(c, E_CONNECT);
      return;
    }
    ep(c, EPOLL_CTL_ADD, EPOLLOUT);
    return;
  }
  c->state = C_SENDING;
  ep(c, EPOLL_CTL_MOD, EPOLLOUT);
}

/* Case-insensitive search for header name in [h, end); its value or NULL. */
static const char *header(const char *h, const char *end, const char *name) {
  size_t n = strlen(name);
  for (const char *p = h; p && p + n < end; p = memchr(p, '\n', (size_t)(end - p))) {
    if (*p == '\n')
      p++;
    if (!strncasecmp(p, name, n) && p[n] == ':')
      return p + n + 1;
  }
  return NULL;
}

/* A whole answer in c->in: act on it. */
static void answered(conn *c, int status, const char *body, size_t blen, int close_after) {
  vol *v = &S.v[c->vid];
  double t = now();
  if (S.phase == 1 || c->route == R_REG) {
    record(c->route, t - c->t0);
    S.st.status[c->route][status]++;
    if (status == 429)
      S.st.throttled++;
  }
  double due = next_due();
  if (c->route == R_REG) {
    json_t *j = status == 201 ? json_loadb(body, blen, 0, NULL) : NULL;
    const char *tok = json_string_value(json_object_get(j, "token"));
    if (tok && strlen(tok) == 64 && !unhex(tok, v->tok, 32)) {
      v->registered = 1;
      S.registered++;
      due = t + S.interval * rnd(); /* the first request: spread over one interval */
    } else {
      S.reg_failed++;
      due = t + 1;
    }
    json_decref(j);
  } else if (c->route == R_WORK && status == 200) {
    json_t *j = json_loadb(body, blen, 0, NULL);
    v->lease = (int64_t)json_integer_value(json_object_get(j, "index"));
    json_decref(j);
    if (S.phase == 1)
      S.st.tasks++;
  } else if (c->route == R_RES && status != 429) {
    v->lease = 0; /* accepted, or the lease is gone: either way not ours */
    if (S.phase == 1 && status == 200)
      S.st.results++;
  }
  release_vol(c, due);
  c->last = t;
  if (c->tls && (!c->keep || !c->reused)) /* the ticket came after the handshake */
    tlsconn_save(c->tls, ticket_of(c));
  if (close_after || !c->keep)
    conn_close(c);
  else {
    c->state = C_IDLE;
    ep(c, EPOLL_CTL_MOD, 0);
  }
}

/* Parses c->in: 1 when an answer was complete (and handled), 0 for more. */
static int parse(conn *c, int eof) {
  char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
  if (!end) {
    if (eof || c->inlen == IN_MAX)
      fail(c, c->inlen ? E_PROTO : E_RESET);
    return eof || c->inlen == IN_MAX;
  }
  int status = 0;
  if (sscanf(c->in, "HTTP/1.%*d %d", &status) != 1 || status < 100 || status > 599) {
    fail(c, E_PROTO);
    return 1;
  }
  const char *cl = header(c->in, end, "content-length");
  const char *conn_h = header(c->in, end, "connection");
  int close_after = conn_h && !strncasecmp(conn_h + strspn(conn_h, " "), "close", 5);
  size_t hlen = (size_t)(end + 4 - c->in), blen = cl ? strtoul(cl, NULL, 10) : 0;
  if (!cl && status != 204 && status != 304) { /* until the end of the connection */
    if (!eof && c->inlen < IN_MAX)
      return 0;
    blen = c->inlen - hlen;
    close_after = 1;
  }
  if (header(c->in, end, "transfer-encoding") || hlen + blen > IN_MAX) {
    fail(c, E_PROTO);
    return 1;
  }
  if (c->inlen < hlen + blen) {
    if (eof)
      fail(c, E_RESET);
    return eof;
  }
  answered(c, status, c->in + hlen, blen, close_after || eof);
  return 1;
}

static void on_event(conn *c, uint32_t events) {
  if (c->state == C_IDLE) { /* an idle pool connection the master closed or reset */
    sock_close(c);
    S.st.idle_closed++;
    return;
  }
  if (c->state == C_CONNECTING) {
    int e = 0;
    socklen_t len = sizeof e;
    getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &e, &len);
    if (e) {
      fail(c, E_CONNECT);
      return;
    }
    c->state = S.tls ? C_HANDSHAKE : C_SENDING;
    if (S.tls && !(c->tls = tlsconn_open(S.tls, c->fd, ticket_of(c)))) {
      fail(c, E_TLS);
      return;
    }
  }
  if (c->state == C_HANDSHAKE) {
    int rc = tlsconn_handshake(c->tls);
    if (rc != TLSCONN_DONE) {
      if (rc == TLSCONN_ERROR)
        fail(c, E_TLS);
      else
        ep(c, EPOLL_CTL_MOD, rc == TLSCONN_WANT_READ ? EPOLLIN : EPOLLOUT);
      return;
    }
    if (tlsconn_resumed(c->tls))
      S.st.tls_resumed++;
    else
      S.st.tls_full++;
    c->state = C_SENDING;
  }
  if (c->state == C_SENDING) {
    ssize_t w = io(c, 1, c->out + c->outoff, c->outlen - c->outoff);
    if (w == IO_ERROR) {
      fail(c, c->tls ? E_TLS : E_RESET);
      return;
    }
    c->outoff += w > 0 ? (size_t)w : 0;
    if (c->outoff == c->outlen) {
      c->state = C_READING;
      ep(c, EPOLL_CTL_MOD, EPOLLIN);
    }
    return;
  }
  if (c->state != C_READING || (!c->tls && !(events & (EPOLLIN | EPOLLHUP | EPOLLERR))))
    return;
  for (;;) { /* TLS may hold decrypted bytes the socket will not signal */
    ssize_t r = io(c, 0, c->in + c->inlen, IN_MAX - c->inlen);
    if (r == IO_WAIT)
      return;
    if (r == 0 && c->inlen == 0 && c->reused) { /* closed while idle: resend on a new one */
      S.st.resent++;
      sock_close(c);
      start(c, c->vid);
      return;
    }
    if (r < 0) {
      fail(c, c->tls ? E_TLS : E_RESET);
      return;
    }
    c->inlen += (size_t)r;
    if (parse(c, r == 0) || !c->tls || !tlsconn_pending(c->tls))
      return;
  }
}

/* Hands queued requests to idle connections. */
static void dispatch(void) {
  /* the ramp-up holds at most as many fresh connections as the pool: the
   * master's memory for connections stays out of its memory per volunteer */
  int floor = S.phase == 0 && S.nfresh > S.keepalive ? S.nfresh - S.keepalive : 0;
  while (S.q_fresh.n && S.nfr_free > floor)
    start(&S.fr[S.fr_free[--S.nfr_free]], ring_pop(&S.q_fresh));
  for (int i = 0; i < S.keepalive && S.q_keep.n; i++)
    if (S.pool[i].state == C_IDLE)
      start(&S.pool[i], ring_pop(&S.q_keep));
}

static void check_timeouts(double t) {
  for (int i = 0; i < S.keepalive + S.nfresh; i++) {
    conn *c = i < S.keepalive ? &S.pool[i] : &S.fr[i - S.keepalive];
    if (c->state != C_IDLE && t - c->t0 > S.timeout)
      fail(c, E_TIMEOUT);
  }
}

/* Runs the loop until `until` (or, in the ramp, until every volunteer is
 * registered). */
static void run_until(double until) {
  struct epoll_event evs[256];
  double last_check = now();
  for (;;) {
    double t = now();
    if (t >= until || (S.phase == 0 && S.registered == S.n))
      return;
    while (S.hn && S.v[S.heap[0]].due <= t) {
      uint32_t id = heap_pop();
      ring_push(rnd() < S.fresh ? &S.q_fresh : &S.q_keep, id);
    }
    dispatch();
    double wake = S.hn ? S.v[S.heap[0]].due : until;
    int ms = (int)ceil(((wake < until ? wake : until) - t) * 1000);
    int n = epoll_wait(S.epfd, evs, 256, ms < 0 ? 0 : ms > 20 ? 20 : ms);
    for (int i = 0; i < n; i++) {
      uint32_t k = evs[i].data.u32;
      on_event(k < (uint32_t)S.keepalive ? &S.pool[k] : &S.fr[k - (uint32_t)S.keepalive],
               evs[i].events);
    }
    if (t - last_check > 0.1) {
      check_timeouts(t);
      last_check = t;
    }
  }
}

/* ---- the master, its jobs and its real workers ---- */

/* Submits a bag of `tasks` tasks of app (each with args) named name; its
 * id, or -1. */
static long long submit(const harness_server *srv, const char *name, const char *app, long tasks,
                        const char *arg) {
  json_t *job = json_pack("{s:s, s:s, s:s, s:i}", "name", name, "app", app, "policy", "fifo",
                          "lease_seconds", 600);
  json_t *list = json_array();
  for (long i = 0; i < tasks; i++) {
    char id[32];
    snprintf(id, sizeof id, "t%ld", i);
    json_t *t = json_pack("{s:s}", "id", id);
    if (arg)
      json_object_set_new(t, "args", json_pack("[s]", arg));
    json_array_append_new(list, t);
  }
  json_object_set_new(job, "tasks", list);
  json_t *resp = NULL;
  long st = harness_http_json(srv->url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, job, &resp);
  json_decref(job);
  long long id = st == 201 ? (long long)json_integer_value(json_object_get(resp, "id")) : -1;
  json_decref(resp);
  return id;
}

/* Tasks done of job id, or -1. */
static long job_done(const harness_server *srv, long long id) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  json_t *j = NULL;
  long done = -1;
  if (harness_http(srv->url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &j, NULL, NULL) == 200)
    done = (long)json_integer_value(json_object_get(json_object_get(j, "counts"), "done"));
  json_decref(j);
  return done;
}

/* A child process that lists every volunteer (GET /v1/volunteers, as a
 * dashboard or `cairn volunteers` would) every `every` seconds and prints
 * how long each listing took; stopped by the caller. */
static pid_t admin_lister(const harness_server *srv, double every) {
  fflush(stdout);
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  for (;;) {
    double t = now();
    size_t len = 0;
    char *raw = NULL;
    long st = harness_http(srv->url, "GET", "/v1/volunteers", HARNESS_ADMIN_TOKEN, NULL, 0, NULL,
                           &raw, &len);
    printf("  admin: GET /v1/volunteers %ld, %zu bytes in %.0f ms; master RSS %ld KiB\n", st,
           len, (now() - t) * 1e3, proc_rss_kib(srv->pid));
    fflush(stdout);
    free(raw);
    usleep((useconds_t)(every * 1e6));
  }
}

static void usage(void) {
  fprintf(stderr, "usage: bench-volunteers --n N [--duration S] [--interval S] [--keepalive K]\n"
                  "       [--fresh F] [--workers W] [--slots S] [--task-sleep S] [--threads T]\n"
                  "       [--timeout S] [--admin-every S] [--sources K] [--warmup S]\n"
                  "       [--tls ec|rsa]\n");
  exit(2);
}

static void setup_sim(long n, int keepalive, int nfresh) {
  S.v = calloc((size_t)n, sizeof *S.v);
  S.heap = calloc((size_t)n, sizeof *S.heap);
  S.q_keep = (ring){calloc((size_t)n, sizeof(uint32_t)), (size_t)n, 0, 0};
  S.q_fresh = (ring){calloc((size_t)n, sizeof(uint32_t)), (size_t)n, 0, 0};
  S.pool = calloc((size_t)keepalive, sizeof *S.pool);
  S.fr = calloc((size_t)nfresh, sizeof *S.fr);
  S.fr_free = calloc((size_t)nfresh, sizeof *S.fr_free);
  for (int r = 0; r < NROUTES; r++)
    S.st.bins[r] = calloc(NBINS, sizeof(uint32_t));
  if (!S.v || !S.heap || !S.q_keep.v || !S.q_fresh.v || !S.pool || !S.fr || !S.fr_free ||
      !S.st.bins[NROUTES - 1]) {
    fprintf(stderr, "bench-volunteers: out of memory\n");
    exit(1);
  }
  for (int i = 0; i < keepalive; i++)
    S.pool[i] = (conn){.fd = -1, .keep = 1};
  for (int i = 0; i < nfresh; i++) {
    S.fr[i] = (conn){.fd = -1};
    S.fr_free[S.nfr_free++] = nfresh - 1 - i;
  }
  S.epfd = epoll_create1(EPOLL_CLOEXEC);
}

static void free_sim(void) {
  for (int i = 0; i < S.keepalive; i++) {
    sock_close(&S.pool[i]);
    tlsconn_ticket_free(&S.pool[i].tk);
  }
  for (int i = 0; i < S.nfresh; i++)
    sock_close(&S.fr[i]);
  for (long i = 0; i < S.n; i++)
    tlsconn_ticket_free(&S.v[i].tk);
  tlsconn_ctx_free(S.tls);
  close(S.epfd);
  for (int r = 0; r < NROUTES; r++)
    free(S.st.bins[r]);
  free(S.v);
  free(S.heap);
  free(S.q_keep.v);
  free(S.q_fresh.v);
  free(S.pool);
  free(S.fr);
  free(S.fr_free);
}

static void report_routes(double window) {
  for (int r = 0; r < NROUTES; r++) {
    if (!S.st.count[r])
      continue;
    printf("  %-9s count=%-8llu per_s=%-8.1f p50_ms=%.2f p99_ms=%.2f p999_ms=%.2f  HTTP", route_name[r],
           (unsigned long long)S.st.count[r], (double)S.st.count[r] / window,
           quantile(r, 0.5) / 1e3, quantile(r, 0.99) / 1e3, quantile(r, 0.999) / 1e3);
    for (int s = 0; s < 600; s++)
      if (S.st.status[r][s])
        printf(" %d:%llu", s, (unsigned long long)S.st.status[r][s]);
    printf("\n");
  }
}

/* --tls: a self-signed certificate for 127.0.0.1 and its key in dir
 * (openssl; key "ec": ECDSA P-256, "rsa": RSA 2048), the client trusting
 * it (S.tls) and the harness's clients too (CAIRN_CA_FILE); the master's
 * options in extra[0..3]. 0, or -1 with a message. */
static int tls_setup(const char *dir, const char *key_type, char *cert, char *key, size_t cap,
                     const char **extra) {
  snprintf(cert, cap, "%s/cert.pem", dir);
  snprintf(key, cap, "%s/key.pem", dir);
  int ec = !strcmp(key_type, "ec");
  const char *mk[] = {"/usr/bin/openssl", "req", "-x509", "-newkey", ec ? "ec" : "rsa:2048",
                      "-pkeyopt", ec ? "ec_paramgen_curve:prime256v1" : "rsa_keygen_bits:2048",
                      "-nodes", "-keyout", key, "-out", cert, "-days", "2", "-subj",
                      "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1", NULL};
  if (harness_run(mk, NULL) != 0) {
    fprintf(stderr, "bench-volunteers: openssl cannot make the test certificate\n");
    return -1;
  }
  setenv("CAIRN_CA_FILE", cert, 1);
  if (!(S.tls = tlsconn_ctx_new(cert, "127.0.0.1")))
    return -1;
  extra[0] = "--tls-cert";
  extra[1] = cert;
  extra[2] = "--tls-key";
  extra[3] = key;
  return 0;
}

/* Errors of the window: statuses other than 2xx and 429, and the kinds of
 * failure; printed one by one. */
static uint64_t count_errors(int print) {
  uint64_t e = 0;
  for (int r = 0; r < NROUTES; r++)
    for (int s = 0; s < 600; s++)
      if (S.st.status[r][s] && (s < 200 || s > 299) && s != 429) {
        e += S.st.status[r][s];
        if (print)
          printf("  error %s http_%d=%llu\n", route_name[r], s,
                 (unsigned long long)S.st.status[r][s]);
      }
  for (int k = 0; k < NERR; k++)
    if (S.st.err[k]) {
      e += S.st.err[k];
      if (print)
        printf("  error %s=%llu\n", err_name[k], (unsigned long long)S.st.err[k]);
    }
  return e;
}

int main(int argc, char **argv) {
  long n = 0;
  double duration = 60, task_sleep = 0.1, admin_every = 0, warmup = 5;
  int workers = 2, slots = 2, threads = 16, keepalive = 0;
  const char *tls = NULL; /* --tls: the key's type */
  S.interval = 30;
  S.fresh = 0.2;
  S.timeout = 10;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
    if (!v)
      usage();
    i++;
    if (!strcmp(a, "--n")) n = atol(v);
    else if (!strcmp(a, "--duration")) duration = atof(v);
    else if (!strcmp(a, "--interval")) S.interval = atof(v);
    else if (!strcmp(a, "--keepalive")) keepalive = atoi(v);
    else if (!strcmp(a, "--fresh")) S.fresh = atof(v);
    else if (!strcmp(a, "--workers")) workers = atoi(v);
    else if (!strcmp(a, "--slots")) slots = atoi(v);
    else if (!strcmp(a, "--task-sleep")) task_sleep = atof(v);
    else if (!strcmp(a, "--threads")) threads = atoi(v);
    else if (!strcmp(a, "--timeout")) S.timeout = atof(v);
    else if (!strcmp(a, "--admin-every")) admin_every = atof(v);
    else if (!strcmp(a, "--sources")) S.sources = atoi(v);
    else if (!strcmp(a, "--warmup")) warmup = atof(v);
    else if (!strcmp(a, "--tls") && (!strcmp(v, "ec") || !strcmp(v, "rsa"))) tls = v;
    else usage();
  }
  if (n < 1 || n > 1000000 || !(duration > 0) || !(S.interval > 0) || !(S.fresh >= 0) ||
      S.fresh > 1 || workers < 0 || slots < 1 || task_sleep < 0 || threads < 1 ||
      !(S.timeout > 0) || keepalive < 0 || admin_every < 0 || S.sources < 0 ||
      S.sources > 254 * 254 || !(warmup >= 0))
    usage();
  if (!keepalive) /* a pool that keeps each connection busy more often than its idle limit */
    keepalive = n / 400 < 8 ? 8 : n / 400 > 256 ? 256 : (int)(n / 400);
  signal(SIGPIPE, SIG_IGN);
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = rl.rlim_max;
  setrlimit(RLIMIT_NOFILE, &rl);
  long room = (long)rl.rlim_cur - keepalive - 64;
  int nfresh = S.fresh <= 0 ? 0 : room < FRESH_MAX ? (int)(room > 1 ? room : 1) : FRESH_MAX;
  S.n = n;
  S.keepalive = keepalive;
  S.nfresh = nfresh;
  S.rng = 0x9E3779B97F4A7C15ULL ^ (uint64_t)n;
  setup_sim(n, keepalive, nfresh);

  char dir[4096], db[4200], thr[16], cert[4200], key[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  snprintf(thr, sizeof thr, "%d", threads);
  /* one loopback address plays every volunteer: lift the per-address limits */
  const char *extra[] = {"--threads", thr, "--address-rate", "-1", "--address-connections", "-1",
                         NULL, NULL, NULL, NULL, NULL};
  if (tls && tls_setup(dir, tls, cert, key, sizeof cert, extra + 6)) {
    harness_rmtree(dir);
    return 1;
  }
  harness_server srv;
  if (harness_server_start(&srv, db, extra)) {
    fprintf(stderr, "bench-volunteers: cannot start cairn-server\n");
    return 1;
  }
  S.port = atoi(strrchr(srv.url, ':') + 1);
  S.sa = (struct sockaddr_in){.sin_family = AF_INET, .sin_port = htons((uint16_t)S.port)};
  inet_pton(AF_INET, "127.0.0.1", &S.sa.sin_addr);
  double offered = (double)n / S.interval;
  long sim_tasks = (long)(offered * 0.75 * 0.05 * (duration + 3 * S.interval + 30)) + 100;
  if (submit(&srv, "sim", "sim", sim_tasks, NULL) < 0) {
    fprintf(stderr, "bench-volunteers: cannot submit the sim job\n");
    return 1;
  }
  usleep(500000);
  long rss0 = proc_rss_kib(srv.pid);

  /* 1. ramp-up: every volunteer registers */
  for (long i = 0; i < n; i++)
    schedule((uint32_t)i, 0);
  double t_ramp = now(), cpu_ramp = proc_cpu(srv.pid);
  S.phase = 0;
  run_until(t_ramp + 900);
  double ramp_s = now() - t_ramp, ramp_cpu = proc_cpu(srv.pid) - cpu_ramp;
  if (S.registered < n) {
    fprintf(stderr, "bench-volunteers: only %ld of %ld volunteers registered in %.0f s\n",
            S.registered, n, ramp_s);
    harness_server_stop(&srv, SIGTERM);
    return 1;
  }
  usleep(200000);
  long rss1 = proc_rss_kib(srv.pid);
  double reg_p50 = quantile(R_REG, 0.5), reg_p99 = quantile(R_REG, 0.99);
  uint64_t reg_errors = count_errors(0), reg_throttled = S.st.throttled;
  printf("ramp-up: %ld volunteers registered in %.1f s (%.0f/s), p50_ms=%.2f p99_ms=%.2f, "
         "errors=%llu throttled=%llu, master CPU %.1f s, RSS %ld -> %ld KiB; TLS handshakes "
         "full=%llu resumed=%llu\n",
         n, ramp_s, (double)n / ramp_s, reg_p50 / 1e3, reg_p99 / 1e3,
         (unsigned long long)reg_errors, (unsigned long long)reg_throttled, ramp_cpu, rss0, rss1,
         (unsigned long long)S.st.tls_full, (unsigned long long)S.st.tls_resumed);

  /* 2. the real workers and their job */
  double per_s = task_sleep > 0 ? (double)workers * slots / task_sleep : 300.0 * workers * slots;
  long work_tasks = (long)(per_s * (duration + 60)) + 100;
  char sleep_arg[32];
  snprintf(sleep_arg, sizeof sleep_arg, "%g", task_sleep);
  long long work_job = submit(&srv, "work", "work", work_tasks, task_sleep > 0 ? sleep_arg : NULL);
  pid_t *pids = calloc((size_t)workers + 1, sizeof *pids);
  char bin[4096], appspec[64], slots_s[16];
  harness_bin(bin, sizeof bin, "cairn-worker");
  snprintf(appspec, sizeof appspec, "work=%s", task_sleep > 0 ? "/bin/sleep" : "/bin/true");
  snprintf(slots_s, sizeof slots_s, "%d", slots);
  for (int i = 0; i < workers && work_job > 0; i++) {
    char wdir[4200], log[4200];
    snprintf(wdir, sizeof wdir, "%s/w%d", dir, i);
    snprintf(log, sizeof log, "%s/w%d.log", dir, i);
    const char *av[] = {bin, "--server", srv.url, "--app", appspec, "--dir", wdir,
                        "--slots", slots_s, NULL};
    pids[i] = harness_spawn(av, log);
  }

  /* 3. steady state: a warm-up, then the window */
  S.phase = 1;
  run_until(now() + warmup);
  stats_reset();
  pid_t lister = admin_every > 0 ? admin_lister(&srv, admin_every) : 0;
  double t0 = now(), cpu0 = proc_cpu(srv.pid);
  long done0 = job_done(&srv, work_job), rss_max = proc_rss_kib(srv.pid);
  for (double t = t0 + 1; t < t0 + duration + 0.5; t += 1) {
    run_until(t < t0 + duration ? t : t0 + duration);
    long r = proc_rss_kib(srv.pid);
    rss_max = r > rss_max ? r : rss_max;
  }
  double window = now() - t0, cpu = proc_cpu(srv.pid) - cpu0;
  long done1 = job_done(&srv, work_job);
  harness_stop_all(&lister, 1, 5);
  S.phase = 2;
  run_until(now() + 2); /* answers in flight: not counted */

  harness_stop_all(pids, workers, 5);
  free(pids);
  harness_server_stop(&srv, SIGTERM);
  harness_rmtree(dir);

  uint64_t total = 0;
  for (int r = 0; r < NROUTES; r++)
    total += S.st.count[r];
  double dispatch = done0 >= 0 && done1 >= 0 ? (double)(done1 - done0) / window : -1;
  double rss_per_vol = (double)(rss1 - rss0) * 1024.0 / (double)n;
  printf("steady state, %.0f s: offered %.1f req/s, achieved %.1f req/s over %d keep-alive "
         "connections and %.0f%% fresh ones; %llu sim tasks taken, %llu results accepted\n",
         window, offered, (double)total / window, keepalive, S.fresh * 100,
         (unsigned long long)S.st.tasks, (unsigned long long)S.st.results);
  report_routes(window);
  uint64_t errors = count_errors(1);
  printf("  simulator: %llu requests sent over 10 ms late (at most %.0f ms)\n",
         (unsigned long long)S.st.late, S.st.late_max * 1e3);
  printf("  throttled (429)=%llu; idle keep-alive connections closed by the master=%llu, "
         "requests resent after one=%llu\n", (unsigned long long)S.st.throttled,
         (unsigned long long)S.st.idle_closed, (unsigned long long)S.st.resent);
  printf("master: RSS max %ld KiB, CPU %.1f%% of one core, %.1f us per request; real workers: "
         "%d x %d slots, %.1f tasks/s\n", rss_max, cpu / window * 100,
         total ? cpu / (double)total * 1e6 : 0, workers, slots, dispatch);
  printf("  TLS (%s): handshakes full=%llu resumed=%llu\n", tls ? tls : "off",
         (unsigned long long)S.st.tls_full, (unsigned long long)S.st.tls_resumed);
  printf("volunteers: n=%ld offered_per_s=%.0f req_per_s=%.0f p50_ms=%.2f p99_ms=%.2f "
         "p999_ms=%.2f errors=%llu throttled=%llu rss_per_volunteer_bytes=%.0f "
         "master_rss_kib=%ld master_cpu_pct=%.1f dispatch_per_s=%.1f reg_per_s=%.0f "
         "reg_p99_ms=%.2f tls=%s cpu_us_per_req=%.1f tls_full=%llu tls_resumed=%llu\n",
         n, offered, (double)total / window, quantile(-1, 0.5) / 1e3, quantile(-1, 0.99) / 1e3,
         quantile(-1, 0.999) / 1e3, (unsigned long long)errors,
         (unsigned long long)S.st.throttled, rss_per_vol, rss_max, cpu / window * 100, dispatch,
         (double)n / ramp_s, reg_p99 / 1e3, tls ? tls : "off",
         total ? cpu / (double)total * 1e6 : 0, (unsigned long long)S.st.tls_full,
         (unsigned long long)S.st.tls_resumed);
  free_sim();
  return 0;
}
