/* test_resume.c — a copy broken off after checked chunks goes on from its
 * last checked chunk at the next source (docs/protocol.md, "Resumed
 * copies"), with a real cairn-server (--broadcast-plan online), real
 * cairn-workers on loopback in one cluster and a 16 MiB broadcast input.
 *
 * A's sources are two volunteers that say they hold the file, both served
 * by one fake file server: the first connection sends 3 MiB and hangs up;
 * the second (asked for "Range: bytes=3145728-") ignores the Range, sends
 * the file from byte 0 and hangs up after 6 MiB; A then gets only the last
 * 10 MiB from the master (206; the master's bytes served count exactly
 * those). C copies A's whole file. W, its download capped at 2 MiB/s,
 * copies from A or C (W's log names the source), which is killed with
 * SIGKILL mid-copy: W goes on at the other (a worker's file server
 * answering the Range with 206), and the master sends no byte more. Every task's output is the file's digest. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "common/sha256.h"
#include "tests/support/bigjob.h"
#include "tests/support/editdist.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define BIG (16u * 1024 * 1024)
#define CHUNK (1u << 20)
#define MASTER_BYTES "cairn_file_bytes_served_total{source=\"master\"}"

static unsigned char *data; /* the file's bytes */

static int setup(void **state) {
  (void)state;
  e2e_init();
  signal(SIGPIPE, SIG_IGN);
  data = bigjob_data(BIG, 29);
  return data ? 0 : -1;
}

static int teardown(void **state) {
  (void)state;
  free(data);
  return 0;
}

/* Starts worker NAME in cluster c-W, its download capped at limit KiB/s
 * when limit is not NULL. */
static pid_t start_worker(const char *url, const char *dir, const char *name, const char *limit) {
  return bigjob_worker(url, dir, name, "c-W", "5", limit);
}

/* Waits up to timeout seconds until the master's store records n holders of
 * sha (fake ones included): the master has heard each holder's report, so a
 * worker started now is offered them. Reads the live database read-only. */
static int await_holders(const char *db, const char *sha, int n, double timeout) {
  int got = 0;
  for (double until = harness_now() + timeout; got < n && harness_now() < until;
       usleep(50 * 1000)) {
    sqlite3 *h = NULL;
    sqlite3_stmt *st = NULL;
    if (sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL) == SQLITE_OK &&
        sqlite3_prepare_v2(h, "SELECT count(*) FROM file_holders WHERE sha256 = ?", -1, &st,
                           NULL) == SQLITE_OK &&
        sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC) == SQLITE_OK &&
        sqlite3_step(st) == SQLITE_ROW)
      got = sqlite3_column_int(st, 0);
    sqlite3_finalize(st);
    sqlite3_close(h);
  }
  return got >= n;
}

/* Waits up to timeout seconds until a download into worker name's cache
 * (a .tmp- file) holds at least bytes. */
static int await_partial(const char *dir, const char *name, long long bytes, double timeout) {
  char cdir[4200], path[4600];
  snprintf(cdir, sizeof cdir, "%s/%s/cache", dir, name);
  for (double until = harness_now() + timeout; harness_now() < until; usleep(20 * 1000)) {
    DIR *d = opendir(cdir);
    struct dirent *e;
    struct stat st;
    while (d && (e = readdir(d)))
      if (strncmp(e->d_name, ".tmp-", 5) == 0) {
        snprintf(path, sizeof path, "%s/%s", cdir, e->d_name);
        if (stat(path, &st) == 0 && st.st_size >= bytes) {
          closedir(d);
          return 1;
        }
      }
    if (d)
      closedir(d);
  }
  return 0;
}

/* ---- the fake holder: breaks off each copy ---- */

typedef struct fake {
  int fd;
  unsigned port;
  pthread_t thread;
  char range[2][128]; /* the Range header of each connection ("" without) */
  int conns;
} fake;

/* Reads a request's head from c; copies its Range value into range. */
static void read_head(int c, char *range, size_t len) {
  char req[4096];
  bigjob_read_head(c, req, sizeof req);
  range[0] = '\0';
  const char *r = strcasestr(req, "\r\nRange: ");
  if (r)
    snprintf(range, len, "%.*s", (int)strcspn(r + 9, "\r\n"), r + 9);
}

/* Connection i sends a 200 with the whole file's length (whatever Range
 * asked) and hangs up after (i + 1) * 3 MiB. */
static void *fake_main(void *ud) {
  fake *f = ud;
  for (int i = 0; i < 2; i++) {
    int c = accept(f->fd, NULL, NULL);
    if (c < 0)
      return NULL; /* nobody came within the timeout */
    read_head(c, f->range[i], sizeof f->range[i]);
    char head[200];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Length: %u\r\nConnection: close\r\n\r\n", BIG);
    send(c, head, (size_t)hl, MSG_NOSIGNAL);
    size_t end = (size_t)(i + 1) * 3 * CHUNK;
    for (size_t off = 0; off < end;) {
      ssize_t k = send(c, data + off, end - off < 65536 ? end - off : 65536, MSG_NOSIGNAL);
      if (k <= 0)
        break;
      off += (size_t)k;
    }
    shutdown(c, SHUT_WR);
    usleep(200 * 1000); /* the client reads what was sent before the close */
    close(c);
    f->conns = i + 1;
  }
  return NULL;
}

static void fake_start(fake *f) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  struct timeval tv = {60, 0};
  memset(f, 0, sizeof *f);
  f->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(f->fd >= 0);
  assert_int_equal(setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(f->fd, 4), 0);
  assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &len), 0);
  f->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

/* A volunteer of cluster c-W whose peer_url is the fake's and that says it
 * holds sha. */
static void fake_holder(const char *url, const char *name, unsigned port, const char *sha) {
  char peer[64], tok[65], body[200];
  snprintf(peer, sizeof peer, "http://127.0.0.1:%u", port);
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", name, "cluster", "c-W", "apps", "sum",
                        "peer_url", peer), *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(b);
  json_decref(r);
  snprintf(body, sizeof body, "{\"have\": [\"%s\"]}", sha);
  assert_int_equal(harness_http(url, "POST", "/v1/heartbeat", tok, body, strlen(body), NULL,
                                NULL, NULL),
                   200);
}

/* The port worker name's file server listens on (its log), 0 if none. */
static unsigned peer_port(const char *dir, const char *name) {
  char line[4300];
  if (!bigjob_log_line(dir, name, "peer server listening on ", line, sizeof line))
    return 0;
  const char *p = strstr(line, "(port ");
  return p ? (unsigned)strtoul(p + 6, NULL, 10) : 0;
}

/* 1 when W's copy comes from C's file server, 0 when from A's (asserted to
 * be one of them). */
static int copying_from_c(const char *dir) {
  char line[4300], a[64], c[64];
  snprintf(a, sizeof a, "127.0.0.1:%u/", peer_port(dir, "A"));
  snprintf(c, sizeof c, "127.0.0.1:%u/", peer_port(dir, "C"));
  assert_true(bigjob_log_line(dir, "W", "copying from http://", line, sizeof line));
  assert_true(strstr(line, a) || strstr(line, c));
  return strstr(line, c) != NULL;
}

static void test_resume(void **state) {
  (void)state;
  char sha[65], line[4300], want[200];
  fake f;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir, *db = sf.db;
  const char *extra[] = {"--broadcast-plan", "online", "--log-level", "info", NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  bigjob_write(dir, "resume", data, BIG, 3, sha);
  fake_start(&f);
  long long job = e2e_submit(sf.srv.url, dir);
  fake_holder(sf.srv.url, "fake1", f.port, sha);
  fake_holder(sf.srv.url, "fake2", f.port, sha);
  pid_t w[3] = {0};

  /* A: 3 MiB from the first, the second ignores Range (6 MiB from byte 0),
   * the master sends the last 10 MiB */
  w[0] = start_worker(sf.srv.url, dir, "A", NULL);
  assert_true(bigjob_await_cached(dir, "A", sha, 120));
  pthread_join(f.thread, NULL);
  close(f.fd);
  assert_int_equal(f.conns, 2);
  assert_string_equal(f.range[0], "");
  snprintf(want, sizeof want, "bytes=%u-", 3 * CHUNK);
  assert_string_equal(f.range[1], want);
  snprintf(want, sizeof want, "resuming at byte %u (6 checked chunks) from /v1/files/", 6 * CHUNK);
  assert_true(bigjob_log_line(dir, "A", want, line, sizeof line));
  assert_int_equal(harness_metric(sf.srv.url, MASTER_BYTES), BIG - 6 * CHUNK);

  /* C copies A's whole file, once the master knows A has it */
  assert_true(await_holders(db, sha, 3, 60));
  w[1] = start_worker(sf.srv.url, dir, "C", NULL);
  assert_true(bigjob_await_cached(dir, "C", sha, 120));

  /* W copies from A or C at 2 MiB/s (both hold the file: the master names
   * either); that holder dies mid-copy and the other sends the rest */
  w[2] = start_worker(sf.srv.url, dir, "W", "2048");
  assert_true(await_partial(dir, "W", 4ll * CHUNK, 60));
  int c = copying_from_c(dir);
  const char *other = c ? "A" : "C";
  fprintf(stderr, "W copies from %s; killing it\n", c ? "C" : "A");
  bigjob_kill9(w[c]);
  w[c] = 0;
  assert_true(bigjob_await_cached(dir, "W", sha, 120));
  assert_true(bigjob_log_line(dir, "W", "resuming at byte ", line, sizeof line));
  unsigned long long from = strtoull(strstr(line, "resuming at byte ") + 17, NULL, 10);
  fprintf(stderr, "W went on at byte %llu: %s", from, line);
  assert_true(from >= 3ull * CHUNK && from < BIG && from % CHUNK == 0);
  assert_non_null(strstr(line, "from http://"));
  snprintf(want, sizeof want, "peer: sending %s from byte %llu (%llu bytes)", sha, from,
           BIG - from);
  assert_true(bigjob_log_line(dir, other, want, line, sizeof line));
  assert_int_equal(harness_metric(sf.srv.url, MASTER_BYTES), BIG - 6 * CHUNK);

  bigjob_release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 180), "done"); /* A's task runs again elsewhere */
  bigjob_check_outputs(sf.srv.url, job, 3, sha);
  harness_stop_all(w, 3, 60);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_resume),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
