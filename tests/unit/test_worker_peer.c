/* test_worker_peer.c — data distribution on the worker side, over real HTTP
 * on loopback and real cache directories: the peer file server (token
 * checks, 404 for names it must not serve, the cap on transfers at once,
 * served bytes), the fetch of an input from several sources (a dead one, one
 * that stalls, one that serves corrupt bytes, one that answers 404, one
 * that answers 503, one that serves too few bytes, then a good peer; the
 * master last; the download that worked is the one reported as fetched,
 * each peer that failed is reported as failed with its reason, the master
 * never is), and the reports a worker sends the master. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/grant.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "worker/cache.h"
#include "worker/fetch.h"
#include "worker/fsutil.h"
#include "worker/leases.h"
#include "worker/peer.h"
#include "worker/peerstate.h"
#include "worker/transport.h"

#define KEY "1111111111111111111111111111111111111111111111111111111111111111"
#define WRONG "2222222222222222222222222222222222222222222222222222222222222222"
#define VOLUNTEER "3333333333333333333333333333333333333333333333333333333333333333"

/* A cache directory holding one random file. */
typedef struct fixture {
  char root[3000];
  char cache_dir[4096];
  cairn__cache cache;
  char sha[65];
  unsigned char *data;
  size_t size;
} fixture;

static void fixture_make(fixture *f, size_t size, int with_file) {
  cairn_error err = {0};
  memset(f, 0, sizeof *f);
  harness_tmpdir(f->root, sizeof f->root);
  snprintf(f->cache_dir, sizeof f->cache_dir, "%s/cache", f->root);
  assert_int_equal(cairn__cache_init(&f->cache, f->cache_dir, &err), CAIRN_OK);
  f->size = size;
  f->data = malloc(size);
  assert_non_null(f->data);
  unsigned s = 12345;
  for (size_t i = 0; i < size; i++) {
    s = s * 1103515245u + 12345u;
    f->data[i] = (unsigned char)(s >> 16);
  }
  cairn__sha256_hex(f->data, size, f->sha);
  if (with_file) {
    char *path = cairn__cache_path(&f->cache, f->sha);
    assert_int_equal(cairn__write_file_atomic(path, f->data, size, 0444, &err), CAIRN_OK);
    free(path);
  }
}

static void fixture_free(fixture *f) {
  cairn_error err = {0};
  cairn__cache_destroy(&f->cache);
  assert_int_equal(cairn__remove_tree(f->root, &err), CAIRN_OK);
  free(f->data);
}

/* Sends req to 127.0.0.1:port and reads the answer (at most cap-1 bytes,
 * NUL-terminated) until EOF. Returns the HTTP status, 0 when none. */
static int raw_http(unsigned port, const char *req, char *out, size_t cap) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_true(fd >= 0);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
  size_t n = 0;
  ssize_t k;
  while (n + 1 < cap && (k = read(fd, out + n, cap - 1 - n)) > 0)
    n += (size_t)k;
  out[n] = '\0';
  close(fd);
  int status = 0;
  return sscanf(out, "HTTP/1.%*d %d", &status) == 1 ? status : 0;
}

static int raw_get(unsigned port, const char *method, const char *path) {
  char req[2200], out[8192]; /* room for a path of up to 2 KiB */
  snprintf(req, sizeof req, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n",
           method, path);
  return raw_http(port, req, out, sizeof out);
}

/* The path of file sha with a grant under key for volunteer 9 that expires
 * at (Unix seconds), as the master would write it into a source URL. */
static void granted(char *out, size_t n, const char *sha, const char *key, long long at) {
  char g[CAIRN_GRANT_MAX + 1];
  assert_int_equal(cairn__grant_make(key, sha, 9, at, g), 0);
  snprintf(out, n, "/v1/files/%s?" CAIRN_GRANT_PARAM "=%s", sha, g);
}

#define SOON ((long long)time(NULL) + CAIRN_GRANT_SECONDS)

static void test_peer_server_answers(void **state) {
  (void)state;
  fixture f;
  cairn__peerstate ps;
  cairn_error err = {0};
  char url[128], path[256], *raw = NULL;
  size_t rawlen = 0;
  fixture_make(&f, 300 * 1000, 1);
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peer *p = cairn__peer_start("127.0.0.1:0", f.cache_dir, 4, &ps, NULL, &err);
  assert_non_null(p);
  unsigned port = cairn__peer_port(p);
  snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
  snprintf(path, sizeof path, "/v1/files/%s", f.sha);
  char gpath[512];
  granted(gpath, sizeof gpath, f.sha, KEY, SOON);

  /* Before the master issued a key, nothing is served. */
  assert_int_equal(raw_get(port, "GET", gpath), 403);
  cairn__peerstate_set_key(&ps, KEY);

  assert_int_equal(harness_http(url, "GET", gpath, NULL, NULL, 0, NULL, &raw, &rawlen), 200);
  assert_int_equal(rawlen, f.size);
  assert_memory_equal(raw, f.data, f.size);
  free(raw);
  for (int i = 0; i < 100 && cairn__peerstate_served_total(&ps) < f.size; i++)
    usleep(20 * 1000);
  assert_int_equal(cairn__peerstate_served_total(&ps), f.size);

  char out[4096], req[1024];
  snprintf(req, sizeof req, "HEAD %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", gpath);
  assert_int_equal(raw_http(port, req, out, sizeof out), 200);
  char clen[64];
  snprintf(clen, sizeof clen, "Content-Length: %zu", f.size);
  assert_non_null(strcasestr(out, clen));

  /* No grant, a grant under another holder's key, a malformed one, an
   * expired one, one for another file, a bearer token instead. */
  char other[65], bad_grant[512];
  memset(other, 'a', 64);
  other[64] = '\0';
  assert_int_equal(raw_get(port, "GET", path), 401);
  granted(bad_grant, sizeof bad_grant, f.sha, WRONG, SOON);
  assert_int_equal(raw_get(port, "GET", bad_grant), 403);
  snprintf(bad_grant, sizeof bad_grant, "%s?grant=short", path);
  assert_int_equal(raw_get(port, "GET", bad_grant), 403);
  granted(bad_grant, sizeof bad_grant, f.sha, KEY,
          (long long)time(NULL) - CAIRN_GRANT_SKEW_SECONDS - 5);
  assert_int_equal(raw_get(port, "GET", bad_grant), 403);
  granted(bad_grant, sizeof bad_grant, other, KEY, SOON);
  memcpy(bad_grant + 10, f.sha, 64); /* other's grant on this file's path */
  assert_int_equal(raw_get(port, "GET", bad_grant), 403);
  snprintf(req, sizeof req,
           "GET %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nConnection: close\r\n\r\n",
           path, KEY);
  assert_int_equal(raw_http(port, req, out, sizeof out), 401);
  assert_int_equal(raw_get(port, "POST", gpath), 405);

  /* A file it does not hold, and names that are not sha256 digests. */
  granted(req, sizeof req, other, KEY, SOON);
  assert_int_equal(raw_get(port, "GET", req), 404);
  static const char *bad[] = {
    "/v1/files/", "/v1/files/abc", "/v1/files/../credentials.json", "/v1/files/..%2Fcredentials.json",
    "/v1/files/.tmp-1-2-x", "/etc/passwd", "/v1/files/%2e%2e/lock", "/",
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
    assert_int_equal(raw_get(port, "GET", bad[i]), 404);
  char upper[128];
  snprintf(upper, sizeof upper, "/v1/files/%s", f.sha);
  for (char *c = upper + 10; *c; c++)
    if (*c >= 'a' && *c <= 'f')
      *c = (char)(*c - 'a' + 'A');
  assert_int_equal(raw_get(port, "GET", upper), 404);
  snprintf(req, sizeof req, "/v1/files/%s/", f.sha);
  assert_int_equal(raw_get(port, "GET", req), 404);

  /* A key renewed by the master (a ban): grants under the old one are
   * refused at once, those under the new one served. */
  cairn__peerstate_set_key(&ps, WRONG);
  assert_int_equal(raw_get(port, "HEAD", gpath), 403);
  granted(req, sizeof req, f.sha, WRONG, SOON);
  assert_int_equal(raw_get(port, "HEAD", req), 200);

  cairn__peer_stop(p);
  cairn__peerstate_destroy(&ps);
  fixture_free(&f);
}

/* Opens a GET of path with a small receive buffer and reads the status
 * line only, so the transfer stays in progress. Returns the socket. */
static int open_transfer(unsigned port, const char *path, char status[16]) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  int small = 16 * 1024;
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof small);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
  char req[1024];
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\n\r\n", path);
  assert_int_equal(write(fd, req, strlen(req)), (ssize_t)strlen(req));
  size_t n = 0;
  while (n < 12) {
    ssize_t k = read(fd, status + n, 12 - n);
    assert_true(k > 0);
    n += (size_t)k;
  }
  status[12] = '\0';
  return fd;
}

static void test_peer_server_cap(void **state) {
  (void)state;
  fixture f;
  cairn__peerstate ps;
  cairn_error err = {0};
  char path[512], status[16], out[8192], req[1024];
  fixture_make(&f, 32u * 1024 * 1024, 1);
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_set_key(&ps, KEY);
  cairn__peer *p = cairn__peer_start("127.0.0.1:0", f.cache_dir, 2, &ps, NULL, &err);
  assert_non_null(p);
  unsigned port = cairn__peer_port(p);
  granted(path, sizeof path, f.sha, KEY, SOON);

  int a = open_transfer(port, path, status);
  assert_string_equal(status, "HTTP/1.1 200");
  int b = open_transfer(port, path, status);
  assert_string_equal(status, "HTTP/1.1 200");
  assert_int_equal(cairn__peer_active(p), 2);
  snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", path);
  assert_int_equal(raw_http(port, req, out, sizeof out), 503);
  assert_non_null(strcasestr(out, "Retry-After: 1"));
  /* HEAD sends no file: not counted against the cap. */
  assert_int_equal(raw_get(port, "HEAD", path), 200);

  close(a);
  for (int i = 0; i < 200 && cairn__peer_active(p) > 1; i++)
    usleep(10 * 1000);
  assert_int_equal(cairn__peer_active(p), 1);
  char url[128], *raw = NULL;
  size_t rawlen = 0;
  snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
  assert_int_equal(harness_http(url, "GET", path, NULL, NULL, 0, NULL, &raw, &rawlen), 200);
  assert_int_equal(rawlen, f.size);
  free(raw);
  close(b);
  /* Only the complete transfer counts as served. */
  for (int i = 0; i < 100 && cairn__peerstate_served_total(&ps) < f.size; i++)
    usleep(20 * 1000);
  usleep(100 * 1000);
  assert_int_equal(cairn__peerstate_served_total(&ps), f.size);

  cairn__peer_stop(p);
  cairn__peerstate_destroy(&ps);
  fixture_free(&f);
}

/* ---- a tiny source server: stalls, corrupt bytes, 404, 503, short, and the master ---- */

typedef struct source_server {
  struct MHD_Daemon *d;
  unsigned port;
  const unsigned char *data;
  size_t size;
  atomic_int released;        /* lets stalled transfers end (set by the test thread) */
  atomic_int master_corrupt;  /* read by the server's connection threads */
  pthread_mutex_t mu;
  int master_hits;
  char auth[8][128];          /* Authorization headers seen, per route kind */
} source_server;

enum { R_STALL, R_CORRUPT, R_MISSING, R_BUSY, R_SHORT, R_MASTER };

static ssize_t stall_reader(void *cls, uint64_t pos, char *buf, size_t max) {
  source_server *s = cls;
  if (pos < 1024) {
    size_t n = 1024 - (size_t)pos < max ? 1024 - (size_t)pos : max;
    memcpy(buf, s->data + pos, n);
    return (ssize_t)n;
  }
  for (int i = 0; i < 6000 && !atomic_load(&s->released); i++)
    usleep(10 * 1000);
  return MHD_CONTENT_READER_END_WITH_ERROR;
}

static enum MHD_Result source_request(void *cls, struct MHD_Connection *c, const char *url,
                                      const char *method, const char *version,
                                      const char *upload, size_t *upload_size, void **ctx) {
  source_server *s = cls;
  struct MHD_Response *r = NULL;
  unsigned status = 200;
  int kind = strncmp(url, "/stall/", 7) == 0     ? R_STALL
             : strncmp(url, "/corrupt/", 9) == 0 ? R_CORRUPT
             : strncmp(url, "/missing/", 9) == 0 ? R_MISSING
             : strncmp(url, "/busy/", 6) == 0    ? R_BUSY
             : strncmp(url, "/short/", 7) == 0   ? R_SHORT
                                                 : R_MASTER;
  const char *auth = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization");
  pthread_mutex_lock(&s->mu);
  snprintf(s->auth[kind], sizeof s->auth[kind], "%s", auth ? auth : "");
  if (kind == R_MASTER)
    s->master_hits++;
  pthread_mutex_unlock(&s->mu);
  if (kind == R_STALL)
    r = MHD_create_response_from_callback(s->size, 1024, stall_reader, s, NULL);
  else if (kind == R_MISSING || kind == R_BUSY) {
    status = kind == R_MISSING ? 404 : 503;
    r = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
  } else if (kind == R_SHORT) {
    /* the first half, announced as such: a whole answer, the wrong length */
    r = MHD_create_response_from_buffer(s->size / 2, (void *)s->data, MHD_RESPMEM_PERSISTENT);
  } else {
    unsigned char *copy = malloc(s->size);
    memcpy(copy, s->data, s->size);
    if (kind == R_CORRUPT || atomic_load(&s->master_corrupt))
      copy[s->size / 2] ^= 0x5a;
    r = MHD_create_response_from_buffer(s->size, copy, MHD_RESPMEM_MUST_FREE);
  }
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

static void source_start(source_server *s, const fixture *f) {
  memset(s, 0, sizeof *s);
  atomic_init(&s->released, 0);
  atomic_init(&s->master_corrupt, 0);
  pthread_mutex_init(&s->mu, NULL);
  s->data = f->data;
  s->size = f->size;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  s->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                          NULL, NULL, source_request, s, MHD_OPTION_SOCK_ADDR, &a,
                          MHD_OPTION_END);
  assert_non_null(s->d);
  s->port = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

static void source_stop(source_server *s) {
  atomic_store(&s->released, 1);
  MHD_stop_daemon(s->d);
  pthread_mutex_destroy(&s->mu);
}


static int no_temp_files(const char *dir) {
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "ls -a '%s' | grep -q '^\\.tmp-'", dir);
  return system(cmd) != 0;
}

/* Begins a report of ps for a body that takes fields; returns its JSON
 * text (caller frees). The report stays open in *r. */
static char *report_text(cairn__peerstate *ps, unsigned fields, cairn__peer_report *r) {
  assert_int_equal(cairn__peerstate_report_begin(ps, fields, r), 0);
  json_t *j = cairn__report_json(&r->wire);
  char *text = j ? json_dumps(j, JSON_COMPACT) : NULL;
  json_decref(j);
  assert_non_null(text);
  return text;
}

/* Ends a report of ps; returns its one "fetched" entry's source (static
 * copy) after checking its digest, bytes and time, or "" when there is none.
 * *failed (static too) gets its "failed" entries, in order, each as
 * "REASON SOURCE\n" after checking its digest and that it has no other
 * field. */
static const char *fetched_source(cairn__peerstate *ps, const fixture *f, const char **failed) {
  static char source[CAIRN_MAX_SOURCE_LEN + 1], fails[8192];
  cairn__peer_report r;
  char *body = report_text(ps, CAIRN_WORK_FIELDS, &r);
  json_t *j = json_loads(body, 0, NULL);
  json_t *a = json_object_get(j, "fetched");
  assert_true(json_array_size(a) <= 1);
  json_t *e = json_array_get(a, 0);
  source[0] = '\0';
  if (e) {
    assert_string_equal(json_string_value(json_object_get(e, "sha256")), f->sha);
    assert_int_equal(json_integer_value(json_object_get(e, "bytes")), f->size);
    assert_true(json_integer_value(json_object_get(e, "ms")) >= 1);
    snprintf(source, sizeof source, "%s", json_string_value(json_object_get(e, "source")));
  }
  size_t i, n = 0;
  fails[0] = '\0';
  json_array_foreach(json_object_get(j, "failed"), i, e) {
    assert_int_equal(json_object_size(e), 3);
    assert_string_equal(json_string_value(json_object_get(e, "sha256")), f->sha);
    n += (size_t)snprintf(fails + n, sizeof fails - n, "%s %s\n",
                          json_string_value(json_object_get(e, "reason")),
                          json_string_value(json_object_get(e, "source")));
    assert_true(n < sizeof fails);
  }
  *failed = fails;
  json_decref(j);
  free(body);
  cairn__peerstate_report_end(ps, &r, 1);
  return source;
}

static void test_fetch_skips_bad_sources(void **state) {
  (void)state;
  fixture holder, fetcher;
  source_server src;
  cairn__peerstate holder_ps, ps;
  cairn__stopper stopper;
  cairn_error err = {0};
  char base[128], *sources[8] = {0}, want_failed[4096];
  const char *failed = NULL;
  fixture_make(&holder, 2u * 1024 * 1024, 1);
  fixture_make(&fetcher, 2u * 1024 * 1024, 0);
  assert_int_equal(cairn__peerstate_init(&holder_ps, NULL), 0);
  cairn__peerstate_set_key(&holder_ps, KEY);
  cairn__peer *p = cairn__peer_start("127.0.0.1:0", holder.cache_dir, 4, &holder_ps, NULL, &err);
  assert_non_null(p);
  source_start(&src, &holder);
  assert_int_equal(cairn__stopper_init(&stopper), 0);
  cairn__cancel cancel = {&stopper, NULL, NULL};
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  /* this master serves no chunk digests (test_cut_through.c does) */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL & ~(unsigned)CAIRN_FEAT_CHUNKS);

  snprintf(base, sizeof base, "http://127.0.0.1:%u", src.port);
  cairn__http *h = cairn__http_create(base);
  cairn__http_set_token(h, VOLUNTEER);
  cairn__http_set_stall_timeout(h, 500);
  assert_int_equal(asprintf(&sources[0], "http://127.0.0.1:%u/v1/files/%s", harness_unused_port(0),
                            holder.sha) > 0, 1);
  assert_int_equal(asprintf(&sources[1], "http://localhost:%u/stall/%s", src.port, holder.sha) > 0,
                   1);
  assert_int_equal(
    asprintf(&sources[2], "http://localhost:%u/corrupt/%s", src.port, holder.sha) > 0, 1);
  assert_int_equal(
    asprintf(&sources[3], "http://localhost:%u/missing/%s", src.port, holder.sha) > 0, 1);
  assert_int_equal(asprintf(&sources[4], "http://localhost:%u/busy/%s", src.port, holder.sha) > 0,
                   1);
  assert_int_equal(asprintf(&sources[5], "http://localhost:%u/short/%s", src.port, holder.sha) > 0,
                   1);
  char gpath[512];
  granted(gpath, sizeof gpath, holder.sha, KEY, SOON);
  assert_int_equal(asprintf(&sources[6], "http://127.0.0.1:%u%s", cairn__peer_port(p), gpath) > 0,
                   1);
  assert_int_equal(asprintf(&sources[7], "/v1/files/%s", holder.sha) > 0, 1);
  cairn__input in = {.name = "big.bin", .size = (long long)holder.size, .url = sources[0],
                     .sources = sources, .nsources = 8};
  /* What the bad peers are reported for, each time they are tried; the
   * busy one (503: it sends its --peer-max files already) is no fault and
   * is not reported (with the master among the sources, it is not waited
   * for either). */
  snprintf(want_failed, sizeof want_failed,
           "unreachable %s\nstalled %s\ndigest %s\nstatus %s\nsize %s\n", sources[0],
           sources[1], sources[2], sources[3], sources[5]);
  memcpy(in.sha256, holder.sha, 65);

  double t0 = harness_now();
  char *path = NULL;
  assert_int_equal(cairn__fetch_input(&fetcher.cache, h, &ps, &in, &cancel, &path, &err), CAIRN_OK);
  double took = harness_now() - t0;
  fprintf(stderr, "fetched through six failing sources in %.2f s\n", took);
  /* the stalled source was waited for (its stall timeout), then left: the
   * bound only says it was not waited on for good (the holder hashes its
   * 32 MiB before serving them, about 6 s under ASan on a loaded machine) */
  assert_true(took < 60.0);
  assert_true(took >= 0.4);
  cairn__buf got;
  assert_int_equal(cairn__read_file(path, holder.size + 1, &got, &err), CAIRN_OK);
  assert_int_equal(got.len, holder.size);
  assert_memory_equal(got.data, holder.data, holder.size);
  cairn__buf_free(&got);
  free(path);
  assert_true(no_temp_files(fetcher.cache_dir));
  /* The good peer served it: the master was not asked. Peers saw no
   * token at all, never the volunteer token. */
  assert_int_equal(src.master_hits, 0);
  for (int k = R_STALL; k <= R_SHORT; k++)
    assert_string_equal(src.auth[k], "");
  for (int i = 0; i < 100 && cairn__peerstate_served_total(&holder_ps) < holder.size; i++)
    usleep(20 * 1000);
  assert_int_equal(cairn__peerstate_served_total(&holder_ps), holder.size);

  /* The fetcher now reports the file as held, and the one download that
   * worked: from the good peer, as the master named it, whole; and each
   * peer that failed, as the master named it, with why. */
  cairn__peer_report r;
  char *body = report_text(&ps, CAIRN_WORK_FIELDS, &r);
  assert_non_null(strstr(body, holder.sha));
  free(body);
  cairn__peerstate_report_end(&ps, &r, 0);
  assert_string_equal(fetched_source(&ps, &holder, &failed), sources[6]);
  assert_string_equal(failed, want_failed);

  /* Present in the cache: no source is asked again, and nothing was
   * downloaded. */
  int hits = src.master_hits;
  assert_int_equal(cairn__fetch_input(&fetcher.cache, h, &ps, &in, &cancel, &path, &err), CAIRN_OK);
  free(path);
  assert_int_equal(src.master_hits, hits);
  assert_string_equal(fetched_source(&ps, &holder, &failed), "");
  assert_string_equal(failed, "");

  /* Every peer fails: the master, last, serves it, with the volunteer token. */
  char *gone = cairn__cache_path(&fetcher.cache, holder.sha);
  assert_int_equal(unlink(gone), 0);
  char *with_master[7] = {sources[0], sources[1], sources[2], sources[3],
                          sources[4], sources[5], sources[7]};
  in.sources = with_master;
  in.nsources = 7;
  assert_int_equal(cairn__fetch_input(&fetcher.cache, h, &ps, &in, &cancel, &path, &err), CAIRN_OK);
  free(path);
  assert_int_equal(src.master_hits, 1);
  assert_string_equal(src.auth[R_MASTER], "Bearer " VOLUNTEER);
  assert_string_equal(fetched_source(&ps, &holder, &failed), sources[7]);
  assert_string_equal(failed, want_failed);

  /* No source has the right bytes: no verified file, no task input. */
  assert_int_equal(unlink(gone), 0);
  atomic_store(&src.master_corrupt, 1);
  path = NULL;
  cairn_status rc = cairn__fetch_input(&fetcher.cache, h, &ps, &in, &cancel, &path, &err);
  assert_int_equal(rc, CAIRN_EINVAL);
  assert_null(path);
  assert_int_equal(access(gone, F_OK), -1);
  assert_true(no_temp_files(fetcher.cache_dir));
  /* The peers failed again (reported again); the master's wrong bytes are
   * not a peer's failure (not reported). */
  assert_string_equal(fetched_source(&ps, &holder, &failed), "");
  assert_string_equal(failed, want_failed);
  free(gone);

  for (int i = 0; i < 8; i++)
    free(sources[i]);
  cairn__http_delete(h);
  source_stop(&src);
  cairn__peer_stop(p);
  cairn__stopper_destroy(&stopper);
  cairn__peerstate_destroy(&ps);
  cairn__peerstate_destroy(&holder_ps);
  fixture_free(&fetcher);
  fixture_free(&holder);
}

static void test_reports(void **state) {
  char g[512];
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  char sha[65];
  assert_int_equal(cairn__peerstate_init(&ps, "10.0.0.7"), 0);
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  char *body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  assert_string_equal(body, "{}");  /* no server yet, nothing held */
  assert_int_equal(r.wire.fields, 0);
  free(body);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));

  cairn__peerstate_set_port(&ps, 4242);
  cairn__peerstate_set_peer_max(&ps, 2);
  for (int i = 0; i < 70; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_have(&ps, sha);
    cairn__peerstate_have(&ps, sha);
  }
  cairn__peerstate_served(&ps, sha, 1000);
  cairn__peerstate_served(&ps, sha, 24);
  assert_true(cairn__peerstate_beat_due(&ps, 300));
  assert_false(cairn__peerstate_beat_due(&ps, 100));

  /* Not delivered: everything is pending again. */
  body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  json_t *j = json_loads(body, 0, NULL);
  assert_string_equal(json_string_value(json_object_get(j, "peer_url")), "http://10.0.0.7:4242");
  assert_int_equal(json_array_size(json_object_get(j, "have")), CAIRN__HAVE_PER_REPORT);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "served"), sha)), 1024);
  /* its --peer-max, in every report while its server runs */
  assert_int_equal(json_integer_value(json_object_get(j, "peer_max")), 2);
  json_decref(j);
  free(body);
  cairn__peerstate_report_end(&ps, &r, 0);
  /* not to a master that does not list "peer_max" */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL & ~(unsigned)CAIRN_FEAT_PEER_MAX);
  body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  j = json_loads(body, 0, NULL);
  assert_null(json_object_get(j, "peer_max"));
  json_decref(j);
  free(body);
  cairn__peerstate_report_end(&ps, &r, 0);
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);

  /* Delivered in two requests; a work request carries no "served". */
  size_t seen = 0;
  for (int k = 0; k < 2; k++) {
    body = report_text(&ps, CAIRN_WORK_FIELDS, &r);
    j = json_loads(body, 0, NULL);
    seen += json_array_size(json_object_get(j, "have"));
    assert_null(json_object_get(j, "served"));
    assert_int_equal(json_object_get(j, "peer_url") != NULL, k == 0);
    assert_int_equal(json_integer_value(json_object_get(j, "peer_max")), 2);
    json_decref(j);
    free(body);
    cairn__peerstate_report_end(&ps, &r, 1);
  }
  assert_int_equal(seen, 70);
  body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  j = json_loads(body, 0, NULL);
  assert_null(json_object_get(j, "have"));
  assert_null(json_object_get(j, "peer_url"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(j, "served"), sha)), 1024);
  json_decref(j);
  free(body);
  cairn__peerstate_report_end(&ps, &r, 1);

  /* Nothing left to report: no heartbeat without a lease to renew, but
   * for the peer key, renewed every 30 s while it serves held files. */
  assert_false(cairn__peerstate_beat_due(&ps, 29999));
  assert_true(cairn__peerstate_beat_due(&ps, 30000));
  /* A grant its key does not verify (none issued yet, or a stale one):
   * a heartbeat a second later, which names its leases, brings the
   * current key. */
  granted(g, sizeof g, KEY, WRONG, SOON);
  assert_int_equal(cairn__peerstate_check_grant(&ps, KEY, strchr(g, '=') + 1, (long long)time(NULL)),
                   CAIRN_GRANT_WRONG);
  assert_false(cairn__peerstate_beat_due(&ps, 999));
  assert_true(cairn__peerstate_beat_due(&ps, 1000));
  cairn__peerstate_set_key(&ps, WRONG);
  assert_false(cairn__peerstate_beat_due(&ps, 1000));

  /* The master forgot this worker: it registers again (without its URL)
   * and reports it all, the URL too. */
  cairn__peerstate_registered(&ps, KEY, CAIRN_FEATURES_ALL);
  assert_false(cairn__peerstate_beat_due(&ps, 100));
  assert_true(cairn__peerstate_beat_due(&ps, 300));
  granted(g, sizeof g, KEY, KEY, SOON);
  assert_int_equal(cairn__peerstate_check_grant(&ps, KEY, strchr(g, '=') + 1,
                                                (long long)time(NULL)), CAIRN_GRANT_OK);
  body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  j = json_loads(body, 0, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "have")), CAIRN__HAVE_PER_REPORT);
  assert_string_equal(json_string_value(json_object_get(j, "peer_url")), "http://10.0.0.7:4242");
  json_decref(j);
  free(body);
  cairn__peerstate_report_end(&ps, &r, 0);

  /* A master without a feature list (an older one): plain bodies, no idle
   * heartbeats; one with a list: the fields it names (a name this worker
   * does not know is ignored). */
  json_t *list = json_pack("[s, s]", "have", "compressed");
  cairn__peerstate_set_features(&ps, cairn__features_parse(NULL));
  assert_int_equal(cairn__peerstate_features(&ps), CAIRN_FEATURES_BASELINE);
  body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  assert_string_equal(body, "{}");
  free(body);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));
  cairn__peerstate_set_features(&ps, cairn__features_parse(list));
  json_decref(list);
  assert_int_equal(cairn__peerstate_features(&ps), CAIRN_FEAT_HAVE);
  assert_true(cairn__peerstate_beat_due(&ps, 300));
  body = report_text(&ps, CAIRN_HEARTBEAT_FIELDS, &r);
  j = json_loads(body, 0, NULL);
  assert_int_equal(json_array_size(json_object_get(j, "have")), CAIRN__HAVE_PER_REPORT);
  assert_int_equal(json_object_size(j), 1);
  json_decref(j);
  free(body);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);

  /* A learned IPv6 address is bracketed in the URL. */
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_set_port(&ps, 80);
  assert_null(cairn__peerstate_url(&ps)); /* the host is not known yet */
  cairn__peerstate_learn_ip(&ps, "fe80::1");
  body = cairn__peerstate_url(&ps);
  assert_string_equal(body, "http://[fe80::1]:80");
  free(body);
  cairn__peerstate_destroy(&ps);

  assert_int_equal(cairn__peer_parse_listen("0.0.0.0:0"), 0);
  assert_int_equal(cairn__peer_parse_listen("[::1]:8080"), 0);
  assert_int_equal(cairn__peer_parse_listen("localhost:80"), -1);
  assert_int_equal(cairn__peer_parse_listen("1.2.3.4"), -1);
  assert_int_equal(cairn__peer_parse_listen("1.2.3.4:70000"), -1);
  assert_int_equal(cairn__peer_parse_listen("1.2.3.4:-1"), -1);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_peer_server_answers),
    cmocka_unit_test(test_peer_server_cap),
    cmocka_unit_test(test_fetch_skips_bad_sources),
    cmocka_unit_test(test_reports),
  };
  cairn__http_global_init();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
