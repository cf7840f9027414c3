/* test_kept_chunks.c — chunk digests of outputs kept on workers (feature
 * "kept_chunks", docs/protocol.md "Cut-through relays"), with a real
 * cairn-server and real cairn-workers serving peers on loopback.
 *   1. Crossing: producer P in cluster a keeps a 12 MiB output that
 *      children read on P and on four workers of cluster b, each download capped at
 *      4 MiB/s: every b worker checks each chunk as it arrives (the
 *      producer's list), the file is copied from P by fewer b workers than
 *      there are (the others get it from a b worker still receiving it,
 *      "relay=1"), and every child printed the right digest.
 *   2. Resume: P and A (cluster a) hold the file; W (cluster b, 2 MiB/s)
 *      copies it, and the holder it copies from is killed with SIGKILL
 *      mid-copy: W goes on at the other from its last checked chunk
 *      ("resuming at byte N"), and the job completes with the right digests.
 *   3. A lying producer: a volunteer played here (a peer server of its own)
 *      reports the right file with wrong chunk digests; the child's worker
 *      fails the copy's chunk check ("does not match its digest"), the
 *      parent is recomputed on a real worker and the job completes with the
 *      right digest. Lists of the wrong shape are refused (400 naming
 *      them) first, and the producer's list outlives a master restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/bigjob.h"
#include "tests/support/server_fixture.h"
#include "tests/support/editdist.h"
#include "tests/support/harness.h"

#define SIZE (12u * 1024 * 1024)
#define CHUNK (1u << 20)
#define LINE "kept chunks test line"

static unsigned char *data; /* what `yes LINE | head -c SIZE` writes */
static char sha[65];

static int setup(void **state) {
  (void)state;
  e2e_init();
  signal(SIGPIPE, SIG_IGN);
  data = malloc(SIZE);
  if (!data)
    return -1;
  static const char line[] = LINE "\n";
  for (size_t at = 0; at < SIZE; at++)
    data[at] = (unsigned char)line[at % (sizeof line - 1)];
  cairn__sha256_hex(data, SIZE, sha);
  return 0;
}

static int teardown(void **state) {
  (void)state;
  free(data);
  return 0;
}

/* Writes DIR/job.json: task p writes out.bin (kept on workers), then n
 * children that print its digest and hold their worker until DIR/gate/go
 * exists (at most 120 s; bigjob_worker shows DIR/gate to the sandbox), so
 * that each worker takes one. */
static void write_job(const char *dir, int n) {
  char text[8192], path[4300];
  snprintf(path, sizeof path, "%s/gate", dir);
  assert_true(mkdir(path, 0755) == 0 || errno == EEXIST);
  size_t k = (size_t)snprintf(text, sizeof text,
                              "{\"name\": \"kept-chunks\", \"app\": \"sum\", \"keep\": \"workers\", "
                              "\"lease_seconds\": 15, \"max_attempts\": 10, \"tasks\": ["
                              "{\"id\": \"p\", \"outputs\": [\"out.bin\"], \"args\": [\"-c\", "
                              "\"yes '" LINE "' | head -c %u > out.bin\"]}",
                              SIZE);
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(text + k, sizeof text - k,
                          ", {\"id\": \"c%d\", \"inputs\": [\"p/out.bin\"], \"after\": [\"p\"], "
                          "\"args\": [\"-c\", \"sha256sum < inputs/p/out.bin; n=0; while [ ! -e "
                          "%s/gate/go ] && [ $n -lt 1200 ]; do sleep 0.1; n=$((n+1)); done\"]}",
                          i, dir);
  snprintf(text + k, sizeof text - k, "]}\n");
  snprintf(path, sizeof path, "%s/job.json", dir);
  assert_int_equal(harness_write_file(path, text), 0);
}

/* The children of job are done with sha's digest; p is done. */
static void check_job(const char *url, long long job) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL),
                   200);
  json_t *tasks = json_object_get(r, "tasks"), *t;
  size_t i;
  json_array_foreach(tasks, i, t) {
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    if (strcmp(json_string_value(json_object_get(t, "id")), "p") != 0)
      assert_memory_equal(json_string_value(json_object_get(t, "output")), sha, 64);
  }
  json_decref(r);
}

/* The port worker name's file server listens on (its log), 0 if none. */
static unsigned peer_port(const char *dir, const char *name) {
  char line[4300];
  if (!bigjob_await_log(dir, name, "peer server listening on ", 30) ||
      !bigjob_log_line(dir, name, "peer server listening on ", line, sizeof line))
    return 0;
  const char *p = strstr(line, "(port ");
  return p ? (unsigned)strtoul(p + 6, NULL, 10) : 0;
}

/* 1 when worker name's log says it copied (began a copy) from port. */
static int copied_from(const char *dir, const char *name, unsigned port) {
  char text[128];
  snprintf(text, sizeof text, "copying from http://127.0.0.1:%u/", port);
  return bigjob_log_line(dir, name, text, NULL, 0);
}

/* Waits up to timeout seconds until job's task p is done. */
static int await_parent(const char *url, long long job, double timeout) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  for (double until = harness_now() + timeout; harness_now() < until; usleep(100 * 1000)) {
    json_t *r = NULL, *t;
    size_t i;
    int done = 0;
    if (harness_http(url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL) == 200)
      json_array_foreach(json_object_get(r, "tasks"), i, t)
        done |= strcmp(json_string_value(json_object_get(t, "id")), "p") == 0 &&
                strcmp(json_string_value(json_object_get(t, "state")), "done") == 0;
    json_decref(r);
    if (done)
      return 1;
  }
  return 0;
}

/* f's master (started again on its database), logging at info. */
static void start_server(server_fixture *f) {
  const char *extra[] = {"--log-level", "info", NULL};
  assert_int_equal(server_fixture_restart(f, extra), 0);
}

static void release(const char *dir) {
  char go[4300];
  snprintf(go, sizeof go, "%s/gate/go", dir);
  assert_int_equal(harness_write_file(go, "go\n"), 0);
}

/* ---- 1. a file crosses into a cluster about once ---- */

static void test_crossing(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  start_server(&sf);
  const char *dir = sf.dir;
  write_job(dir, 5); /* P may take one child, each b worker one */
  pid_t w[5] = {0};
  static const char *const b[4] = {"B0", "B1", "B2", "B3"};
  w[0] = bigjob_worker(sf.srv.url, dir, "P", "a", "10", NULL);
  unsigned pport = peer_port(dir, "P");
  assert_true(pport > 0);
  long long job = e2e_submit(sf.srv.url, dir);
  assert_true(await_parent(sf.srv.url, job, 120)); /* P ran p: no b worker takes it */
  for (int i = 0; i < 4; i++)
    w[1 + i] = bigjob_worker(sf.srv.url, dir, b[i], "b", "10", "4096");
  int crossed = 0, relayed = 0;
  for (int i = 0; i < 4; i++) {
    assert_true(bigjob_await_cached(dir, b[i], sha, 120));
    assert_true(bigjob_log_line(dir, b[i], "chunk digests: each chunk checked as it arrives",
                                NULL, 0));
    crossed += copied_from(dir, b[i], pport);
    relayed += bigjob_log_line(dir, b[i], "&relay=1", NULL, 0);
  }
  release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 180), "done");
  check_job(sf.srv.url, job);
  long long relays = harness_metric(sf.srv.url, "cairn_relay_sources_total ");
  fprintf(stderr, "kept chunks: 4 children in cluster b; %d copies crossed from P, %d were "
          "relayed inside b (%lld relay sources named)\n", crossed, relayed, relays);
  assert_true(crossed >= 1);
  assert_true(crossed < 4);
  assert_true(relayed >= 1);
  assert_true(relays >= 1);
  harness_stop_all(w, 5, 60);
  /* the producer's list outlives a restart of the master */
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  start_server(&sf);
  char path[128], hex[65];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/files/%s/chunks", sha);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL,
                                NULL), 200);
  json_t *list = json_object_get(r, "chunks");
  assert_int_equal(json_array_size(list), SIZE / CHUNK);
  for (size_t i = 0; i < SIZE / CHUNK; i++) {
    cairn__sha256_hex(data + i * CHUNK, CHUNK, hex);
    assert_string_equal(json_string_value(json_array_get(list, i)), hex);
  }
  json_decref(r);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* ---- 2. a holder killed mid-copy: resumed at the other ---- */

/* Waits up to timeout seconds until a download into worker name's cache
 * (a .tmp- file) holds at least bytes. */
static int await_partial(const char *dir, const char *name, long long bytes, double timeout) {
  char cdir[4200], path[4600];
  snprintf(cdir, sizeof cdir, "%s/%s/cache", dir, name);
  for (double until = harness_now() + timeout; harness_now() < until; usleep(20 * 1000)) {
    DIR *d = opendir(cdir);
    struct dirent *e;
    struct stat st;
    int found = 0;
    while (d && !found && (e = readdir(d))) {
      snprintf(path, sizeof path, "%s/%s", cdir, e->d_name);
      found = strncmp(e->d_name, ".tmp-", 5) == 0 && stat(path, &st) == 0 && st.st_size >= bytes;
    }
    if (d)
      closedir(d);
    if (found)
      return 1;
  }
  return 0;
}

static void test_resume(void **state) {
  (void)state;
  char line[4300];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  start_server(&sf);
  const char *dir = sf.dir;
  write_job(dir, 3);
  pid_t w[3] = {0};
  w[0] = bigjob_worker(sf.srv.url, dir, "P", "a", "5", NULL);
  long long job = e2e_submit(sf.srv.url, dir);
  assert_true(await_parent(sf.srv.url, job, 120));
  /* A copies it (a child of its own): then P and A hold it */
  w[1] = bigjob_worker(sf.srv.url, dir, "A", "a", "5", NULL);
  assert_true(bigjob_await_cached(dir, "A", sha, 120));
  sleep(2); /* A's report of the copy reaches the master */
  unsigned port[2] = {peer_port(dir, "P"), peer_port(dir, "A")};
  w[2] = bigjob_worker(sf.srv.url, dir, "W", "b", "5", "2048");
  assert_true(await_partial(dir, "W", 4ll * CHUNK, 60));
  int v = copied_from(dir, "W", port[1]); /* 1: from A */
  assert_true(v || copied_from(dir, "W", port[0]));
  fprintf(stderr, "kept chunks: W copies from %s; killing it\n", v ? "A" : "P");
  bigjob_kill9(w[v]);
  w[v] = 0;
  assert_true(bigjob_await_cached(dir, "W", sha, 120));
  assert_true(bigjob_log_line(dir, "W", "resuming at byte ", line, sizeof line));
  unsigned long long from = strtoull(strstr(line, "resuming at byte ") + 17, NULL, 10);
  fprintf(stderr, "kept chunks: W went on at byte %llu: %s", from, line);
  assert_true(from >= 4ull * CHUNK && from < SIZE && from % CHUNK == 0);
  char want[64];
  snprintf(want, sizeof want, "from http://127.0.0.1:%u/", port[!v]);
  assert_non_null(strstr(line, want));
  release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done"); /* the killed worker's child runs again */
  check_job(sf.srv.url, job);
  harness_stop_all(w, 3, 60);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* ---- 3. a producer that reports wrong chunk digests ---- */

/* A file server that answers every request with the whole file (200),
 * until the test ends (its socket closed). */
typedef struct fake {
  int fd;
  unsigned port;
  pthread_t thread;
  atomic_int conns; /* copies sent, read by the test's thread */
} fake;

static void *fake_main(void *ud) {
  fake *f = ud;
  for (;;) {
    int c = accept(f->fd, NULL, NULL);
    if (c < 0)
      return NULL;
    char req[4096];
    bigjob_read_head(c, req, sizeof req);
    char head[200];
    int hl = snprintf(head, sizeof head,
                      "HTTP/1.1 200 OK\r\nContent-Length: %u\r\nConnection: close\r\n\r\n", SIZE);
    send(c, head, (size_t)hl, MSG_NOSIGNAL);
    for (size_t off = 0; off < SIZE;) {
      ssize_t k = send(c, data + off, SIZE - off < 65536 ? SIZE - off : 65536, MSG_NOSIGNAL);
      if (k <= 0)
        break;
      off += (size_t)k;
    }
    shutdown(c, SHUT_WR);
    close(c);
    atomic_fetch_add(&f->conns, 1);
  }
}

static void fake_start(fake *f) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  memset(f, 0, sizeof *f);
  f->fd = socket(AF_INET, SOCK_STREAM, 0);
  assert_true(f->fd >= 0);
  assert_int_equal(bind(f->fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(f->fd, 8), 0);
  assert_int_equal(getsockname(f->fd, (struct sockaddr *)&a, &len), 0);
  f->port = ntohs(a.sin_port);
  assert_int_equal(pthread_create(&f->thread, NULL, fake_main, f), 0);
}

static void test_lying_producer(void **state) {
  (void)state;
  char peer[64], tok[65], path[64];
  fake f;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  start_server(&sf);
  const char *dir = sf.dir;
  write_job(dir, 1);
  fake_start(&f);
  snprintf(peer, sizeof peer, "http://127.0.0.1:%u", f.port);
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", "liar", "cluster", "a", "apps", "sum",
                        "peer_url", peer), *r = NULL;
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(b);
  json_decref(r);
  long long job = e2e_submit(sf.srv.url, dir);
  /* the liar takes p (offered to keep it) and reports the right file with
   * every chunk's digest wrong */
  r = NULL;
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/work", tok, NULL, 0, &r, NULL, NULL), 200);
  const char *keep = json_string_value(json_object_get(json_object_get(r, "task"), "keep"));
  assert_non_null(keep);
  assert_string_equal(keep, "workers");
  long long idx = (long long)json_integer_value(json_object_get(r, "index"));
  json_decref(r);
  json_t *chunks = json_array();
  for (size_t i = 0; i < SIZE / CHUNK; i++) {
    char hex[65];
    cairn__sha256_hex(data, 1 + i, hex); /* not the chunk's */
    json_array_append_new(chunks, json_string(hex));
  }
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  /* a list of the wrong length, or with a digest not in lowercase hex, is
   * refused naming it, and changes nothing */
  static const char *const bad[2][2] = {
    {"11", "outputs[0].chunks has 11 digests"},
    {"12", "outputs[0].chunks[3] is not 64 lowercase hex"}};
  for (int k = 0; k < 2; k++) {
    json_t *c = json_array(), *e = NULL;
    for (int i = 0; i < atoi(bad[k][0]); i++)
      json_array_append_new(c, json_string(i == 3 && k ? "ABC" : sha));
    b = json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:o}]}", "exit_status", 0, "output", "p",
                  "outputs", "name", "out.bin", "sha256", sha, "size", (json_int_t)SIZE,
                  "chunks", c);
    assert_int_equal(harness_http_json(sf.srv.url, "PUT", path, tok, b, &e), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(e, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, bad[k][1]));
    json_decref(e);
    json_decref(b);
  }
  b = json_pack("{s:i, s:s, s:[{s:s, s:s, s:I, s:o}]}", "exit_status", 0, "output", "p",
                "outputs", "name", "out.bin", "sha256", sha, "size", (json_int_t)SIZE, "chunks",
                chunks);
  assert_int_equal(harness_http_json(sf.srv.url, "PUT", path, tok, b, NULL), 200);
  json_decref(b);
  /* the child's worker (the only real one) gets the liar's list */
  pid_t w[1] = {bigjob_worker(sf.srv.url, dir, "C", "b", "5", NULL)};
  assert_true(bigjob_await_log(dir, "C", "does not match its digest", 60));
  release(dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  check_job(sf.srv.url, job);
  long long rec = harness_metric(sf.srv.url, "cairn_outputs_recomputed_total ");
  int conns = atomic_load(&f.conns);
  fprintf(stderr, "kept chunks: the liar's copy failed its chunk check (%d connections); %lld "
          "task recomputed; job done with the right digest\n", conns, rec);
  assert_true(conns >= 1);
  assert_true(rec >= 1);
  harness_stop_all(w, 1, 60);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  shutdown(f.fd, SHUT_RDWR);
  close(f.fd);
  pthread_join(f.thread, NULL);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_lying_producer),
    cmocka_unit_test(test_crossing),
    cmocka_unit_test(test_resume),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
