/* stats_reads.c — what anonymous reads of GET /v1/stats cost the master,
 * and what they do to /healthz meanwhile (the security issue "Public
 * /v1/stats costs more than it should").
 *
 *   bench-stats_reads [--volunteers V] [--addresses A] [--reads R] [--limit L]
 *
 * Starts cairn-server (a separate process, fresh database in a temporary
 * folder, --no-fsync, the default per-address limit: a burst of 60
 * anonymous requests, then 60 a minute), registers V volunteers (3,000),
 * each in a team of its own, through POST /v1/volunteers from ceil(V / 60)
 * loopback addresses (127.0.1.x, each within its burst), reads
 * /v1/stats?limit=L once (the cold read), then from A addresses (127.0.2.x,
 * 40) at once, each on one kept-alive connection, R reads each (60: within
 * the burst, so none is refused) of /v1/stats?limit=L (1,000: the largest
 * page). Meanwhile a probe from 127.0.3.1 asks GET /healthz every 20 ms.
 * Measures the master's CPU (utime + stime, /proc) and wall time over the
 * reads, and the probe's latencies. Ends with one line:
 *   stats_reads: volunteers=V addresses=A reads=N ok=… body_bytes=… wall_s=…
 *     master_cpu_s=… cpu_ms_per_read=… cores_busy=… renders=…
 *     healthz_p50_ms=… healthz_p99_ms=… healthz_max_ms=…
 * (renders: cairn_stats_renders_total over the reads, -1 for a master
 * without it). Every process it starts is stopped at its end.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"

#define PER_ADDRESS 60 /* the master's default burst of anonymous requests */
#define MAX_READERS 250

static int port;

/* A blocking connection from address `from` to the master; -1 on failure. */
static int conn_open(const char *from) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_in me = {.sin_family = AF_INET}, to = {.sin_family = AF_INET,
                                                         .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, from, &me.sin_addr);
  inet_pton(AF_INET, "127.0.0.1", &to.sin_addr);
  struct timeval tv = {.tv_sec = 60};
  int one = 1;
  if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) ||
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) ||
      bind(fd, (struct sockaddr *)&me, sizeof me) ||
      connect(fd, (struct sockaddr *)&to, sizeof to)) {
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

/* One request on fd (kept alive) and its whole answer: its status (0: none,
 * the connection is lost), the body's length in *body_len. buf grows. */
static int exchange(int fd, const char *req, size_t len, char **buf, size_t *cap,
                    size_t *body_len) {
  for (size_t sent = 0; sent < len;) {
    ssize_t w = send(fd, req + sent, len - sent, MSG_NOSIGNAL);
    if (w <= 0)
      return 0;
    sent += (size_t)w;
  }
  size_t got = 0, want = 0;
  char *end = NULL;
  for (;;) {
    if (got + 65536 > *cap) {
      char *nb = realloc(*buf, *cap = got + (1u << 20));
      if (!nb)
        return 0;
      *buf = nb;
    }
    ssize_t r = recv(fd, *buf + got, *cap - got - 1, 0);
    if (r <= 0)
      return 0;
    got += (size_t)r;
    (*buf)[got] = '\0';
    if (!end && (end = strstr(*buf, "\r\n\r\n"))) {
      const char *cl = strcasestr(*buf, "\r\ncontent-length:");
      *body_len = cl && cl < end ? strtoul(cl + 17, NULL, 10) : 0;
      want = (size_t)(end + 4 - *buf) + *body_len;
    }
    if (end && got >= want)
      break;
  }
  int st = 0;
  return sscanf(*buf, "HTTP/1.%*d %d", &st) == 1 ? st : 0;
}

typedef struct registrar {
  int addr, from, to; /* volunteers from..to-1, from 127.0.1.addr */
  int ok;
} registrar;

static void *register_some(void *arg) {
  registrar *g = arg;
  char from[32], req[512], *buf = NULL;
  size_t cap = 0, blen = 0;
  snprintf(from, sizeof from, "127.0.1.%d", g->addr);
  int fd = conn_open(from);
  for (int i = g->from; fd >= 0 && i < g->to; i++) {
    char body[160];
    int n = snprintf(body, sizeof body,
                     "{\"name\": \"volunteer-%05d\", \"apps\": [\"a\"], \"team\": \"team-%05d\"}",
                     i, i);
    int k = snprintf(req, sizeof req,
                     "POST /v1/volunteers HTTP/1.1\r\nHost: b\r\nContent-Type: application/json"
                     "\r\nContent-Length: %d\r\n\r\n%s", n, body);
    g->ok += exchange(fd, req, (size_t)k, &buf, &cap, &blen) == 201;
  }
  if (fd >= 0)
    close(fd);
  free(buf);
  return NULL;
}

typedef struct reader {
  int addr, n, limit;
  int ok, throttled;
  size_t bytes;
} reader;

static void *read_stats(void *arg) {
  reader *r = arg;
  char from[32], req[160], *buf = NULL;
  size_t cap = 0, blen = 0;
  snprintf(from, sizeof from, "127.0.2.%d", r->addr);
  int k = snprintf(req, sizeof req, "GET /v1/stats?limit=%d HTTP/1.1\r\nHost: b\r\n\r\n", r->limit);
  int fd = conn_open(from);
  for (int i = 0; fd >= 0 && i < r->n; i++) {
    int st = exchange(fd, req, (size_t)k, &buf, &cap, &blen);
    if (st == 200)
      r->ok++, r->bytes += blen;
    r->throttled += st == 429;
    if (st == 0)
      break;
  }
  if (fd >= 0)
    close(fd);
  free(buf);
  return NULL;
}

typedef struct probe {
  volatile int stop;
  double ms[100000];
  int n;
} probe;

static void *probe_healthz(void *arg) {
  probe *p = arg;
  static const char req[] = "GET /healthz HTTP/1.1\r\nHost: b\r\n\r\n";
  char *buf = NULL;
  size_t cap = 0, blen = 0;
  int fd = conn_open("127.0.3.1");
  while (!p->stop && fd >= 0 && p->n < (int)(sizeof p->ms / sizeof *p->ms)) {
    double t = harness_now();
    if (exchange(fd, req, sizeof req - 1, &buf, &cap, &blen) != 200)
      break;
    p->ms[p->n++] = (harness_now() - t) * 1e3;
    usleep(20000);
  }
  if (fd >= 0)
    close(fd);
  free(buf);
  return NULL;
}

/* CPU seconds (user + system) used so far by pid. */
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
  unsigned long utime = 0, stime = 0;
  /* fields after the command: state(3) ... utime(14) stime(15) */
  if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &utime,
                   &stime) != 2)
    return -1;
  return (double)(utime + stime) / (double)sysconf(_SC_CLK_TCK);
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double pct(const double *v, int n, double q) {
  return n ? v[(int)(q * (n - 1) + 0.5)] : -1;
}

static void usage(void) {
  fprintf(stderr, "usage: bench-stats_reads [--volunteers V] [--addresses A (1-%d)] "
                  "[--reads R (1-%d)] [--limit L]\n", MAX_READERS, PER_ADDRESS);
  exit(2);
}

int main(int argc, char **argv) {
  int nvol = 3000, naddr = 40, reads = PER_ADDRESS, limit = 1000;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--volunteers") && i + 1 < argc)
      nvol = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--addresses") && i + 1 < argc)
      naddr = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--reads") && i + 1 < argc)
      reads = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--limit") && i + 1 < argc)
      limit = atoi(argv[++i]);
    else
      usage();
  }
  if (nvol < 1 || nvol > 250 * PER_ADDRESS || naddr < 1 || naddr > MAX_READERS || reads < 1 ||
      reads > PER_ADDRESS || limit < 1 || limit > 1000)
    usage();
  signal(SIGPIPE, SIG_IGN);
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  harness_server srv;
  const char *extra[] = {"--no-fsync", NULL};
  if (harness_server_start(&srv, db, extra)) {
    fprintf(stderr, "bench-stats_reads: cannot start cairn-server\n");
    return 1;
  }
  port = atoi(strrchr(srv.url, ':') + 1);

  /* V volunteers, PER_ADDRESS from each registering address */
  int nreg = (nvol + PER_ADDRESS - 1) / PER_ADDRESS, registered = 0;
  pthread_t th[MAX_READERS];
  registrar *g = calloc((size_t)nreg, sizeof *g);
  double t0 = harness_now();
  for (int k = 0; k < nreg; k += 8) { /* 8 addresses at a time */
    int m = nreg - k < 8 ? nreg - k : 8;
    for (int j = 0; j < m; j++) {
      g[k + j] = (registrar){.addr = k + j + 1, .from = (k + j) * PER_ADDRESS,
                             .to = (k + j + 1) * PER_ADDRESS < nvol ? (k + j + 1) * PER_ADDRESS
                                                                    : nvol};
      pthread_create(&th[j], NULL, register_some, &g[k + j]);
    }
    for (int j = 0; j < m; j++) {
      pthread_join(th[j], NULL);
      registered += g[k + j].ok;
    }
  }
  free(g);
  fprintf(stderr, "bench-stats_reads: %d volunteers registered in %.1f s\n", registered,
          harness_now() - t0);

  /* the cold read, from an address of its own */
  char path[64];
  snprintf(path, sizeof path, "/v1/stats?limit=%d", limit);
  double c0 = proc_cpu(srv.pid);
  t0 = harness_now();
  long st = harness_http(srv.url, "GET", path, NULL, NULL, 0, NULL, NULL, NULL);
  fprintf(stderr, "bench-stats_reads: cold read %ld in %.1f ms, master CPU %.0f ms\n", st,
          (harness_now() - t0) * 1e3, (proc_cpu(srv.pid) - c0) * 1e3);

  /* the reads, with the probe */
  probe *p = calloc(1, sizeof *p);
  pthread_t pth;
  pthread_create(&pth, NULL, probe_healthz, p);
  usleep(200000);
  reader *rd = calloc((size_t)naddr, sizeof *rd);
  long long r0 = harness_metric(srv.url, "cairn_stats_renders_total ");
  int has_renders = r0 > 0; /* the cold read made one */
  c0 = proc_cpu(srv.pid);
  t0 = harness_now();
  for (int k = 0; k < naddr; k++) {
    rd[k] = (reader){.addr = k + 1, .n = reads, .limit = limit};
    pthread_create(&th[k], NULL, read_stats, &rd[k]);
  }
  int ok = 0, throttled = 0;
  size_t bytes = 0;
  for (int k = 0; k < naddr; k++) {
    pthread_join(th[k], NULL);
    ok += rd[k].ok;
    throttled += rd[k].throttled;
    bytes += rd[k].bytes;
  }
  double wall = harness_now() - t0, cpu = proc_cpu(srv.pid) - c0;
  long long r1 = harness_metric(srv.url, "cairn_stats_renders_total ");
  usleep(200000);
  p->stop = 1;
  pthread_join(pth, NULL);
  qsort(p->ms, (size_t)p->n, sizeof *p->ms, cmp);
  printf("stats_reads: volunteers=%d addresses=%d reads=%d ok=%d throttled=%d body_bytes=%zu "
         "wall_s=%.2f master_cpu_s=%.2f cpu_ms_per_read=%.3f cores_busy=%.2f renders=%lld "
         "healthz_n=%d healthz_p50_ms=%.2f healthz_p99_ms=%.2f healthz_max_ms=%.2f\n",
         registered, naddr, naddr * reads, ok, throttled, ok ? bytes / (size_t)ok : 0, wall, cpu,
         ok ? cpu * 1e3 / ok : -1.0, wall > 0 ? cpu / wall : 0,
         has_renders ? r1 - r0 : -1, p->n, pct(p->ms, p->n, 0.5), pct(p->ms, p->n, 0.99),
         p->n ? p->ms[p->n - 1] : -1.0);
  free(p);
  free(rd);
  harness_server_stop(&srv, SIGTERM);
  harness_rmtree(dir);
  return ok == naddr * reads && registered == nvol ? 0 : 1;
}
