/* ic_fanin.c — the master under a wide fan-in dag with the "ic" policy.
 *
 *   bench-ic_fanin [--roots R] [--children K] [--allocs A] [--policy P] [--no-fsync]
 *
 * Starts cairn-server (a separate process, fresh database in a temporary
 * folder), submits a job of R independent roots and K children each listing
 * all R roots in "after" (R·K edges; default R = 4,096, K = 1,000, the
 * largest "after" a task may have), then one registered volunteer asks for
 * work A times (default 1,000), returning each result at once, and the
 * master is restarted on the same database (it loads the job back). While the
 * submission is being answered another connection probes GET /healthz every
 * 50 ms and records how long each probe took. Prints
 *   ic_fanin: policy=P roots=R children=K edges=E submit_s=S body_mib=B
 *             healthz_max_ms=H first_allocs=A first_allocs_s=T alloc_p50_ms=X alloc_p99_ms=Y
 *             restart_s=L
 * (one line). Every timeout is bounded (--deadline SECONDS, default 600):
 * past it the bench prints what it has and stops the server.
 */
#include <jansson.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"

typedef struct probe {
  const char *url;
  volatile int stop;
  double worst;
  long n;
} probe;

static void *healthz(void *arg) {
  probe *p = arg;
  while (!p->stop) {
    double t = harness_now();
    harness_http(p->url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL);
    double dt = harness_now() - t;
    if (dt > p->worst)
      p->worst = dt;
    p->n++;
    usleep(50000);
  }
  return NULL;
}

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The job body, written directly (a jansson tree of 4 M strings would cost
 * the bench more than the master). */
static char *job_body(const char *policy, unsigned R, unsigned K, size_t *len) {
  size_t cap = 256 + (size_t)R * 24 + (size_t)K * (32 + (size_t)R * 9);
  char *b = malloc(cap), *p = b;
  if (!b)
    return NULL;
  p += sprintf(p, "{\"name\":\"fanin\",\"app\":\"noop\",\"policy\":\"%s\",\"lease_seconds\":600,"
                  "\"tasks\":[", policy);
  for (unsigned r = 0; r < R; r++)
    p += sprintf(p, "%s{\"id\":\"r%u\"}", r ? "," : "", r);
  for (unsigned c = 0; c < K; c++) {
    p += sprintf(p, ",{\"id\":\"c%u\",\"after\":[", c);
    for (unsigned r = 0; r < R; r++)
      p += sprintf(p, "%s\"r%u\"", r ? "," : "", r);
    p += sprintf(p, "]}");
  }
  p += sprintf(p, "]}");
  *len = (size_t)(p - b);
  return b;
}

static void usage(void) {
  fprintf(stderr, "usage: bench-ic_fanin [--roots R] [--children K] [--allocs A] [--policy P] "
                  "[--no-fsync] [--deadline SECONDS]\n");
  exit(2);
}

static pid_t server_pid;
static void on_alarm(int sig) {
  (void)sig;
  static const char msg[] = "bench-ic_fanin: deadline passed; master stopped\n";
  if (server_pid > 0)
    kill(server_pid, SIGKILL);
  if (write(2, msg, sizeof msg - 1) < 0)
    _exit(1);
  _exit(1);
}

int main(int argc, char **argv) {
  unsigned R = 4096, K = 1000, A = 1000, deadline = 600;
  int durable = 1;
  const char *policy = "ic";
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--roots") && i + 1 < argc)
      R = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--children") && i + 1 < argc)
      K = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--allocs") && i + 1 < argc)
      A = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--policy") && i + 1 < argc)
      policy = argv[++i];
    else if (!strcmp(argv[i], "--deadline") && i + 1 < argc)
      deadline = (unsigned)atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-fsync"))
      durable = 0;
    else
      usage();
  }
  if (!R || !A || !deadline)
    usage();
  signal(SIGPIPE, SIG_IGN);

  size_t len = 0;
  char *body = job_body(policy, R, K, &len);
  if (!body) {
    fprintf(stderr, "bench-ic_fanin: out of memory\n");
    return 1;
  }
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  harness_server srv;
  const char *extra[] = {durable ? NULL : "--no-fsync", NULL};
  if (harness_server_start(&srv, db, extra)) {
    fprintf(stderr, "bench-ic_fanin: cannot start cairn-server\n");
    return 1;
  }
  server_pid = srv.pid;
  signal(SIGALRM, on_alarm);
  alarm(deadline);

  harness_http(srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL); /* curl set up */
  probe pr = {srv.url, 0, 0, 0};
  pthread_t th;
  pthread_create(&th, NULL, healthz, &pr);
  double t0 = harness_now();
  json_t *resp = NULL;
  long st = harness_http(srv.url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, body, len, &resp, NULL,
                         NULL);
  double submit = harness_now() - t0;
  pr.stop = 1;
  pthread_join(th, NULL);
  free(body);
  json_decref(resp);
  if (st != 201) {
    fprintf(stderr, "bench-ic_fanin: submit failed (HTTP %ld)\n", st);
    harness_server_stop(&srv, SIGKILL);
    return 1;
  }

  char token[65];
  if (harness_register(srv.url, "bench", "noop", token) <= 0) {
    fprintf(stderr, "bench-ic_fanin: cannot register\n");
    harness_server_stop(&srv, SIGKILL);
    return 1;
  }
  double *lat = calloc(A, sizeof *lat), ta = harness_now();
  unsigned got = 0;
  for (; got < A; got++) {
    double t = harness_now();
    json_t *w = NULL;
    long ws = harness_http(srv.url, "POST", "/v1/work", token, "{}", 2, &w, NULL, NULL);
    lat[got] = harness_now() - t;
    if (ws != 200) {
      json_decref(w);
      break; /* 204: nothing eligible (fewer tasks than A) */
    }
    long long index = (long long)json_integer_value(json_object_get(w, "index"));
    json_decref(w);
    char path[64];
    snprintf(path, sizeof path, "/v1/results/%lld", index);
    static const char ok[] = "{\"exit_status\":0,\"output\":\"\"}";
    if (harness_http(srv.url, "PUT", path, token, ok, sizeof ok - 1, NULL, NULL, NULL) != 200) {
      fprintf(stderr, "bench-ic_fanin: result %lld refused\n", index);
      got++;
      break;
    }
  }
  double allocs = harness_now() - ta;
  /* a restart loads the job back from the store and rebuilds its policy */
  harness_server_stop(&srv, SIGTERM);
  double tr = harness_now(), restart = -1;
  if (harness_server_start(&srv, db, extra) == 0) {
    server_pid = srv.pid;
    json_t *j = NULL;
    if (harness_http(srv.url, "GET", "/v1/jobs/1", HARNESS_ADMIN_TOKEN, NULL, 0, &j, NULL, NULL) ==
        200)
      restart = harness_now() - tr;
    json_decref(j);
    harness_server_stop(&srv, SIGTERM);
  }
  alarm(0);
  qsort(lat, got, sizeof *lat, cmp_d);
  double p50 = got ? lat[(got - 1) / 2] : 0, p99 = got ? lat[(size_t)((got - 1) * 0.99)] : 0;
  printf("ic_fanin: policy=%s roots=%u children=%u edges=%llu submit_s=%.2f body_mib=%.1f "
         "healthz_max_ms=%.0f first_allocs=%u first_allocs_s=%.2f alloc_p50_ms=%.2f "
         "alloc_p99_ms=%.2f restart_s=%.2f\n",
         policy, R, K, (unsigned long long)R * K, submit, (double)len / 1048576.0,
         pr.worst * 1e3, got, allocs, p50 * 1e3, p99 * 1e3, restart);
  free(lat);
  char rm[4200];
  snprintf(rm, sizeof rm, "rm -rf '%s'", dir);
  if (system(rm) != 0)
    fprintf(stderr, "bench-ic_fanin: could not remove %s\n", dir);
  return 0;
}
