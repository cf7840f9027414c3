/* roundtrip.c — serial round trip through the master: how fast one task
 * reaches an idle worker and its result comes back.
 *
 *   bench-roundtrip --tasks N --workers K [--no-fsync] [--threads T]
 *
 * Starts cairn-server (a separate process, fresh database in a temporary
 * folder, durable group commits unless --no-fsync, T HTTP threads when
 * given) and K cairn-worker processes on loopback
 * whose app is /bin/true, waits until all K have registered, then N times:
 * submits a job of one task (POST /v1/jobs) and waits until it is done
 * with GET /v1/jobs/{id}?wait= (held by the master until the job
 * finishes, as `cairn wait` asks) over one kept-alive connection. Each
 * round trip is timed from the submit to the answer that shows the job
 * done. Ends with
 *   roundtrip: tasks=N workers=K per_s=X p50_ms=P p99_ms=Q
 * (per_s: round trips per second over the whole run; p50/p99: of the round
 * trips' times). Other scripts parse this line: keep its form.
 */
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "worker/transport.h"

/* A round trip that takes longer than this fails the run. */
#define ROUNDTRIP_TIMEOUT_S 60.0

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void usage(void) {
  fprintf(stderr, "usage: bench-roundtrip --tasks N --workers K [--no-fsync] [--threads T]\n");
  exit(2);
}

/* One request over h's kept-alive connection; *resp the JSON body or NULL.
 * Returns the HTTP status, 0 when no answer came. */
static long call(cairn__http *h, const char *method, const char *path, const char *body,
                 json_t **resp) {
  cairn__http_response r;
  cairn_error err = {0};
  *resp = NULL;
  if (cairn__http_request(h, method, path, body ? "application/json" : NULL, body,
                         body ? strlen(body) : 0, 1u << 20, &r, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-roundtrip: %s %s: %s\n", method, path, err.text);
    return 0;
  }
  if (r.body.len)
    *resp = json_loadb(r.body.data, r.body.len, 0, NULL);
  cairn__buf_free(&r.body);
  return r.status;
}

/* Waits until k volunteers are registered; 0, or -1 after 60 s. */
static int wait_volunteers(cairn__http *h, int k) {
  for (double until = now() + 60; now() < until; usleep(20000)) {
    json_t *v = NULL;
    long st = call(h, "GET", "/v1/volunteers", NULL, &v);
    size_t n = json_array_size(json_object_get(v, "volunteers"));
    json_decref(v);
    if (st == 200 && n >= (size_t)k)
      return 0;
  }
  return -1;
}

/* Submits one single-task job and waits for it; the seconds it took, or -1. */
static double roundtrip(cairn__http *h, long i) {
  char body[160], path[64];
  snprintf(body, sizeof body,
           "{\"name\":\"rt%ld\",\"app\":\"noop\",\"lease_seconds\":600,"
           "\"tasks\":[{\"id\":\"t\"}]}",
           i);
  double t0 = now();
  json_t *resp = NULL;
  long st = call(h, "POST", "/v1/jobs", body, &resp);
  long long id = (long long)json_integer_value(json_object_get(resp, "id"));
  json_decref(resp);
  if (st != 201 || id <= 0) {
    fprintf(stderr, "bench-roundtrip: submit failed (HTTP %ld)\n", st);
    return -1;
  }
  while (now() - t0 < ROUNDTRIP_TIMEOUT_S) {
    /* held until the job finishes; a running answer: the wait passed */
    long ms = (long)((ROUNDTRIP_TIMEOUT_S - (now() - t0)) * 1000) + 1;
    snprintf(path, sizeof path, "/v1/jobs/%lld?wait=%ld", id, ms < 60000 ? ms : 60000);
    json_t *j = NULL;
    st = call(h, "GET", path, NULL, &j);
    const char *s = json_string_value(json_object_get(j, "state"));
    int done = st == 200 && s && strcmp(s, "running") != 0;
    int ok = done && strcmp(s, "done") == 0;
    json_decref(j);
    if (done)
      return ok ? now() - t0 : -1;
    if (st != 200) {
      fprintf(stderr, "bench-roundtrip: GET %s: HTTP %ld\n", path, st);
      return -1;
    }
  }
  fprintf(stderr, "bench-roundtrip: job %lld not done after %.0f s\n", id, ROUNDTRIP_TIMEOUT_S);
  return -1;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  long tasks = 500;
  int workers = 8, durable = 1;
  const char *threads = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--tasks") && i + 1 < argc)
      tasks = atol(argv[++i]);
    else if (!strcmp(argv[i], "--workers") && i + 1 < argc)
      workers = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--no-fsync"))
      durable = 0;
    else if (!strcmp(argv[i], "--threads") && i + 1 < argc && atoi(argv[i + 1]) > 0)
      threads = argv[++i];
    else
      usage();
  }
  if (tasks <= 0 || workers <= 0 || workers > 1024)
    usage();
  signal(SIGPIPE, SIG_IGN);
  cairn__http_global_init();

  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  harness_server srv;
  const char *extra[4] = {NULL}; /* --no-fsync, --threads T */
  int nx = 0;
  if (!durable)
    extra[nx++] = "--no-fsync";
  if (threads) {
    extra[nx++] = "--threads";
    extra[nx++] = threads;
  }
  if (harness_server_start(&srv, db, extra)) {
    fprintf(stderr, "bench-roundtrip: cannot start cairn-server\n");
    return 1;
  }
  pid_t *pids = calloc((size_t)workers, sizeof *pids);
  double *times = calloc((size_t)tasks, sizeof *times);
  cairn__http *h = cairn__http_create(srv.url);
  if (!pids || !times || !h)
    return 1;
  cairn__http_set_token(h, HARNESS_ADMIN_TOKEN);
  cairn__http_set_timeout(h, (long)ROUNDTRIP_TIMEOUT_S + 30);
  for (int i = 0; i < workers; i++) {
    char bin[4096], wdir[4200], log[4200];
    harness_bin(bin, sizeof bin, "cairn-worker");
    snprintf(wdir, sizeof wdir, "%s/w%d", dir, i);
    snprintf(log, sizeof log, "%s/w%d.log", dir, i);
    /* --no-sandbox: the round trip of the protocol, not the sandbox's start
     * (bench/results/sandbox.md) */
    const char *av[] = {bin, "--server", srv.url, "--app", "noop=/bin/true", "--dir", wdir,
                        "--no-sandbox", NULL};
    pids[i] = harness_spawn(av, log);
  }
  int rc = 0;
  double t0 = now(), elapsed = 0;
  if (wait_volunteers(h, workers)) {
    fprintf(stderr, "bench-roundtrip: the %d workers did not all register\n", workers);
    rc = 1;
  } else {
    t0 = now();
    for (long i = 0; i < tasks && !rc; i++)
      if ((times[i] = roundtrip(h, i)) < 0)
        rc = 1;
    elapsed = now() - t0;
  }
  cairn__http_delete(h);
  harness_stop_all(pids, workers, 10);
  harness_server_stop(&srv, SIGTERM);
  if (!rc) {
    qsort(times, (size_t)tasks, sizeof *times, cmp_double);
    double p50 = times[(tasks - 1) / 2], p99 = times[(tasks * 99 + 99) / 100 - 1];
    printf("roundtrip: tasks=%ld workers=%d per_s=%.0f p50_ms=%.2f p99_ms=%.2f\n", tasks,
           workers, (double)tasks / elapsed, p50 * 1e3, p99 * 1e3);
  }
  if (harness_rmtree(dir))
    fprintf(stderr, "bench-roundtrip: could not remove %s\n", dir);
  free(pids);
  free(times);
  return rc;
}
