/* test_stats_cost.c — an anonymous GET /v1/stats costs a copy of a cached
 * rendering, not a rendering: with 3,000 volunteers in 3,000 teams
 * (registered through POST /v1/volunteers, --address-rate -1), 200 reads
 * of the largest page (1,000 volunteers and 1,000 teams), 8 at a time,
 * make the builder render at most once per refresh interval (2 s) they
 * span, plus one (/metrics cairn_stats_renders_total), and the master's
 * CPU for all 200 (its threads' schedstat, ns) is a fraction of what one
 * cold read costs (the first, which waits for the build it asked). Pages
 * (?page=) slice the same ranks; a conditional read (If-None-Match) of the
 * page's ETag is 304 without a body; answers carry Cache-Control:
 * max-age; a new volunteer is counted within a few seconds. Prints the
 * figures. Real cairn-server on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/security/rawconn.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"
#include "worker/transport.h"

#define VOLUNTEERS 3000
#define REGISTRARS 4
#define READS 200
#define READERS 8
#define REFRESH_SECONDS 2.0 /* CAIRN__STATS_REFRESH_SECONDS */

typedef server_fixture fixture;

typedef struct job {
  const char *url;
  int from, to, step; /* volunteers from, from + step, ... below to */
  int ok;
} job;

/* Registers volunteers from..to-1 (by step) on one kept-alive connection:
 * volunteer i named v<i> in team t<i>. */
static void *registrar(void *arg) {
  job *j = arg;
  cairn__http *h = cairn__http_create(j->url);
  for (int i = j->from; h && i < j->to; i += j->step) {
    char body[160];
    int n = snprintf(body, sizeof body,
                     "{\"name\": \"volunteer-%05d\", \"apps\": [\"a\"], \"team\": \"team-%05d\"}",
                     i, i);
    cairn__http_response r;
    cairn_error err = {0};
    if (cairn__http_request(h, "POST", "/v1/volunteers", "application/json", body, (size_t)n,
                           1u << 16, &r, &err) == CAIRN_OK && r.status == 201)
      j->ok++;
    cairn__buf_free(&r.body);
  }
  cairn__http_delete(h);
  return NULL;
}

static int setup(void **state) {
  const char *extra[] = {"--no-fsync", "--address-rate", "-1", NULL};
  if (server_fixture_start(state, extra))
    return -1;
  fixture *f = *state;
  double t0 = harness_now();
  pthread_t th[REGISTRARS];
  job jobs[REGISTRARS];
  for (int k = 0; k < REGISTRARS; k++) {
    jobs[k] = (job){.url = f->srv.url, .from = k, .to = VOLUNTEERS, .step = REGISTRARS};
    pthread_create(&th[k], NULL, registrar, &jobs[k]);
  }
  int ok = 0;
  for (int k = 0; k < REGISTRARS; k++) {
    pthread_join(th[k], NULL);
    ok += jobs[k].ok;
  }
  fprintf(stderr, "registered %d volunteers in %.1f s\n", ok, harness_now() - t0);
  return ok == VOLUNTEERS ? 0 : -1;
}

/* CPU time (ns) used so far by every thread of pid (each task's schedstat:
 * ns on a CPU). */
static long long cpu_ns(pid_t pid) {
  char path[64];
  snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
  DIR *d = opendir(path);
  long long sum = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    if (e->d_name[0] == '.')
      continue;
    char p[128];
    snprintf(p, sizeof p, "/proc/%d/task/%.32s/schedstat", (int)pid, e->d_name);
    FILE *fp = fopen(p, "r");
    long long ns = 0;
    if (fp && fscanf(fp, "%lld", &ns) == 1)
      sum += ns;
    if (fp)
      fclose(fp);
  }
  if (d)
    closedir(d);
  return sum;
}

typedef struct reader {
  const char *url;
  int n, ok;
  size_t bytes;
} reader;

/* n reads of the largest page on one kept-alive connection. */
static void *read_pages(void *arg) {
  reader *r = arg;
  cairn__http *h = cairn__http_create(r->url);
  for (int i = 0; h && i < r->n; i++) {
    cairn__http_response resp;
    cairn_error err = {0};
    if (cairn__http_request(h, "GET", "/v1/stats?limit=1000", NULL, NULL, 0, 1u << 24, &resp,
                           &err) == CAIRN_OK && resp.status == 200) {
      r->ok++;
      r->bytes += resp.body.len;
    }
    cairn__buf_free(&resp.body);
  }
  cairn__http_delete(h);
  return NULL;
}

static long long renders(const char *url) {
  return harness_metric(url, "cairn_stats_renders_total ");
}

static void test_reads_do_not_render(void **state) {
  fixture *f = *state;
  const char *url = f->srv.url;
  /* the first read finds no rendering: it waits for the one build it asked */
  long long cpu0 = cpu_ns(f->srv.pid);
  json_t *s = NULL;
  assert_int_equal(harness_http(url, "GET", "/v1/stats?limit=1000", NULL, NULL, 0, &s, NULL, NULL),
                   200);
  long long cold = cpu_ns(f->srv.pid) - cpu0;
  assert_int_equal(json_array_size(json_object_get(s, "volunteers")), 1000);
  assert_int_equal(json_array_size(json_object_get(s, "teams")), 1000);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(s, "total"), "volunteers")),
                   VOLUNTEERS);
  json_decref(s);
  long long r0 = renders(url);

  pthread_t th[READERS];
  reader rd[READERS];
  double t0 = harness_now();
  long long c0 = cpu_ns(f->srv.pid);
  for (int k = 0; k < READERS; k++) {
    rd[k] = (reader){.url = url, .n = READS / READERS};
    pthread_create(&th[k], NULL, read_pages, &rd[k]);
  }
  int ok = 0;
  size_t bytes = 0;
  for (int k = 0; k < READERS; k++) {
    pthread_join(th[k], NULL);
    ok += rd[k].ok;
    bytes += rd[k].bytes;
  }
  long long hot = cpu_ns(f->srv.pid) - c0;
  double span = harness_now() - t0;
  long long r1 = renders(url);
  long long allowed = (long long)(span / REFRESH_SECONDS) + 2;
  fprintf(stderr,
          "%d reads of %zu bytes in %.2f s: renders %lld (at most %lld); master CPU: cold read "
          "%.2f ms, then %.3f ms a read (%.1f%% of the cold one)\n",
          ok, bytes / (size_t)(ok ? ok : 1), span, r1 - r0, allowed, cold / 1e6,
          hot / 1e6 / READS, 100.0 * (double)hot / READS / (double)cold);
  assert_int_equal(ok, READS);
  /* each read copies the rendering: far less than building it */
  assert_true(hot / READS * 10 < cold);
  /* one build per interval at most, whatever the reads (the builder counts
   * what it renders: the cold read made one) */
  assert_true(r0 >= 1);
  assert_true(r1 - r0 <= allowed);
}

/* One raw GET of path with extra headers; the response in buf. */
static int raw_get(const char *url, const char *path, const char *headers, char *buf,
                   size_t cap) {
  int port = atoi(strrchr(url, ':') + 1);
  int fd = raw_connect("127.0.0.1", port, 0);
  assert_true(fd >= 0);
  char req[512];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n%sConnection: close\r\n\r\n",
                   path, headers);
  assert_int_equal(raw_send(fd, req, (size_t)n, 5), (size_t)n);
  ssize_t got = raw_recv(fd, buf, cap, 10);
  close(fd);
  assert_true(got > 0);
  return raw_status(buf);
}

/* The value of header name in response buf (copied to out), or "". */
static void header(const char *buf, const char *name, char *out, size_t len) {
  out[0] = '\0';
  const char *end = strstr(buf, "\r\n\r\n");
  for (const char *p = strstr(buf, "\r\n"); p && p < end; p = strstr(p + 2, "\r\n"))
    if (strncasecmp(p + 2, name, strlen(name)) == 0 && p[2 + strlen(name)] == ':') {
      const char *v = p + 3 + strlen(name);
      while (*v == ' ')
        v++;
      snprintf(out, len, "%.*s", (int)strcspn(v, "\r"), v);
      return;
    }
}

static void test_pages_etag_freshness(void **state) {
  fixture *f = *state;
  const char *url = f->srv.url;
  /* page 3 of 100: ranks 201 to 300 of both lists */
  json_t *s = NULL;
  assert_int_equal(harness_http(url, "GET", "/v1/stats?limit=100&page=3", NULL, NULL, 0, &s,
                                NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(s, "volunteers")), 100);
  assert_int_equal(json_integer_value(json_object_get(
                     json_array_get(json_object_get(s, "volunteers"), 0), "rank")), 201);
  assert_int_equal(json_integer_value(json_object_get(
                     json_array_get(json_object_get(s, "teams"), 99), "rank")), 300);
  assert_int_equal(json_integer_value(json_object_get(s, "page")), 3);
  json_decref(s);
  static const char *const bad[] = {"/v1/stats?page=0", "/v1/stats?page=11",
                                    "/v1/stats?limit=1000&page=2", "/v1/stats?page=x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char *raw = NULL;
    assert_int_equal(harness_http(url, "GET", bad[i], NULL, NULL, 0, NULL, &raw, NULL), 400);
    assert_non_null(strstr(raw, "\\\"page\\\""));
    free(raw);
  }

  /* ETag, Cache-Control; If-None-Match of it: 304, no body */
  size_t cap = 1u << 20;
  char *buf = malloc(cap), etag[64], cc[64];
  assert_int_equal(raw_get(url, "/v1/stats?limit=10", "", buf, cap), 200);
  header(buf, "ETag", etag, sizeof etag);
  header(buf, "Cache-Control", cc, sizeof cc);
  fprintf(stderr, "ETag %s, Cache-Control %s\n", etag, cc);
  assert_true(strlen(etag) == 18 && etag[0] == '"');
  assert_non_null(strstr(cc, "max-age="));
  char inm[128];
  snprintf(inm, sizeof inm, "If-None-Match: %s\r\n", etag);
  assert_int_equal(raw_get(url, "/v1/stats?limit=10", inm, buf, cap), 304);
  char etag2[64];
  header(buf, "ETag", etag2, sizeof etag2);
  assert_string_equal(etag2, etag);
  assert_string_equal(strstr(buf, "\r\n\r\n"), "\r\n\r\n");
  /* another page's ETag differs: a full answer */
  assert_int_equal(raw_get(url, "/v1/stats?limit=11", inm, buf, cap), 200);
  free(buf);

  /* the standings still follow the store: a new volunteer is counted */
  char token[65];
  assert_true(harness_register(url, "late", "a", token) > 0);
  long long seen = 0;
  for (double until = harness_now() + 10; harness_now() < until && seen != VOLUNTEERS + 1;
       usleep(200 * 1000)) {
    assert_int_equal(harness_http(url, "GET", "/v1/stats?limit=1", NULL, NULL, 0, &s, NULL, NULL),
                     200);
    seen = json_integer_value(json_object_get(json_object_get(s, "total"), "volunteers"));
    json_decref(s);
  }
  assert_int_equal(seen, VOLUNTEERS + 1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_reads_do_not_render),
    cmocka_unit_test(test_pages_etag_freshness),
  };
  return cmocka_run_group_tests(tests, setup, server_fixture_teardown);
}
