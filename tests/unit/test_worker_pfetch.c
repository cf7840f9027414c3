/* test_worker_pfetch.c — a task's inputs fetched in parallel
 * (cairn__taskdir_fill, worker/taskdir.h), over real HTTP on loopback into a
 * real cache and task directory. The fake master holds every transfer at
 * its first byte until CAIRN__FETCH_PARALLEL of them are open at once, so
 * that overlap is seen at the server (transfers open at once), not on a
 * clock: all inputs arrive verified and in place, and never more than the
 * cap were open; one input the master refuses (404) or sends with a wrong
 * digest fails the task with that input's name and stops the others
 * (nothing unverified in the cache, no fd left open); a cancel during the
 * fetch stops them all. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "worker/cache.h"
#include "worker/fsutil.h"
#include "worker/peerstate.h"
#include "worker/taskdir.h"
#include "worker/transport.h"

#define NFILES 6
#define FILE_SIZE (192u * 1024)
#define HOLD_LIMIT_MS 30000 /* a held transfer gives up waiting after this */

enum { SERVE_ALL, SERVE_404, SERVE_CORRUPT, SERVE_NONE };

/* The fake master: /v1/files/<sha> of NFILES random files. */
typedef struct master {
  struct MHD_Daemon *d;
  unsigned port;
  unsigned char *data[NFILES];
  char sha[NFILES][65];
  int bad;                /* the file served wrong (mode), -1: none */
  int mode;               /* SERVE_*: how file bad is served */
  int hold_for;           /* transfers held at byte 0 until this many are open */
  atomic_int *cancel_at;  /* set to 1 once hold_for are open (NULL: not) */
  atomic_int open;        /* transfers begun and not ended */
  atomic_int max_open;
  atomic_int released;    /* ends every hold (at stop) */
  atomic_int reached;     /* hold_for were open at once */
} master;

typedef struct transfer {
  master *m;
  int file;
  int passed;   /* past the hold */
  int ended;
} transfer;

static void transfer_end(transfer *t) {
  if (!t->ended) {
    t->ended = 1;
    atomic_fetch_sub(&t->m->open, 1);
  }
}

/* Waits until stop() says so or the master is released (HOLD_LIMIT_MS at
 * most); 1 when stop() said so. */
static int hold(master *m, int (*stop)(master *)) {
  for (int i = 0; i < HOLD_LIMIT_MS / 10 && !stop(m) && !atomic_load(&m->released); i++)
    usleep(10 * 1000);
  return stop(m);
}

/* Once hold_for were open at once, every hold ends (and no more begin). */
static int enough_open(master *m) {
  if (atomic_load(&m->open) >= m->hold_for)
    atomic_store(&m->reached, 1);
  return atomic_load(&m->reached);
}
static int never(master *m) { (void)m; return 0; }

static ssize_t reader(void *cls, uint64_t pos, char *buf, size_t max) {
  transfer *t = cls;
  master *m = t->m;
  if (!t->passed && t->file != m->bad) { /* held until hold_for are open at once */
    if (!hold(m, enough_open) || atomic_load(&m->released))
      return MHD_CONTENT_READER_END_WITH_ERROR;
    t->passed = 1;
    if (m->cancel_at)
      atomic_store(m->cancel_at, 1);
  }
  if (m->mode == SERVE_NONE) { /* never a byte: until the worker leaves */
    hold(m, never);
    return MHD_CONTENT_READER_END_WITH_ERROR;
  }
  size_t n = FILE_SIZE - (size_t)pos < max ? FILE_SIZE - (size_t)pos : max;
  memcpy(buf, m->data[t->file] + pos, n);
  if (t->file == m->bad && m->mode == SERVE_CORRUPT && pos <= FILE_SIZE / 2 &&
      FILE_SIZE / 2 < pos + n)
    buf[FILE_SIZE / 2 - pos] ^= 0x5a;
  if (pos + n == FILE_SIZE) /* before the client can see the last byte */
    transfer_end(t);
  return (ssize_t)n;
}

static void transfer_free(void *cls) {
  transfer_end(cls);
  free(cls);
}

static enum MHD_Result request(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **ctx) {
  master *m = cls;
  int file = -1;
  for (int i = 0; i < NFILES; i++)
    if (strncmp(url, "/v1/files/", 10) == 0 && strcmp(url + 10, m->sha[i]) == 0)
      file = i;
  if (file < 0 || (file == m->bad && m->mode == SERVE_404)) {
    struct MHD_Response *r = MHD_create_response_from_buffer(0, (void *)"",
                                                             MHD_RESPMEM_PERSISTENT);
    enum MHD_Result ret = MHD_queue_response(c, 404, r);
    MHD_destroy_response(r);
    return ret;
  }
  transfer *t = calloc(1, sizeof *t);
  assert_non_null(t);
  t->m = m;
  t->file = file;
  int now = atomic_fetch_add(&m->open, 1) + 1;
  for (int was = atomic_load(&m->max_open); now > was;)
    if (atomic_compare_exchange_weak(&m->max_open, &was, now))
      break;
  struct MHD_Response *r = MHD_create_response_from_callback(FILE_SIZE, 16 * 1024, reader, t,
                                                             transfer_free);
  enum MHD_Result ret = MHD_queue_response(c, 200, r);
  MHD_destroy_response(r);
  return ret;
}

static void master_start(master *m, int bad, int mode, int hold_for, atomic_int *cancel_at) {
  memset(m, 0, sizeof *m);
  m->bad = bad;
  m->mode = mode;
  m->hold_for = hold_for;
  m->cancel_at = cancel_at;
  for (int i = 0; i < NFILES; i++) {
    m->data[i] = malloc(FILE_SIZE);
    assert_non_null(m->data[i]);
    unsigned s = 777u + (unsigned)i;
    for (size_t k = 0; k < FILE_SIZE; k++) {
      s = s * 1103515245u + 12345u;
      m->data[i][k] = (unsigned char)(s >> 16);
    }
    cairn__sha256_hex(m->data[i], FILE_SIZE, m->sha[i]);
  }
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  m->d = MHD_start_daemon(MHD_USE_THREAD_PER_CONNECTION | MHD_USE_INTERNAL_POLLING_THREAD, 0,
                          NULL, NULL, request, m, MHD_OPTION_SOCK_ADDR, &a, MHD_OPTION_END);
  assert_non_null(m->d);
  m->port = MHD_get_daemon_info(m->d, MHD_DAEMON_INFO_BIND_PORT)->port;
}

/* Stops the master (every connection thread joined). */
static void master_stop(master *m) {
  atomic_store(&m->released, 1);
  MHD_stop_daemon(m->d);
  assert_int_equal(atomic_load(&m->open), 0);
  for (int i = 0; i < NFILES; i++)
    free(m->data[i]);
}

static int open_fds(void) {
  int n = 0;
  DIR *d = opendir("/proc/self/fd");
  assert_non_null(d);
  while (readdir(d))
    n++;
  closedir(d);
  return n;
}

/* A worker's side: a cache, a slot's task directory, peers and a task of
 * NFILES inputs, each from the master only. */
typedef struct side {
  char root[3000], cache_dir[4096], run_dir[4096];
  cairn__cache cache;
  cairn__taskdir td;
  cairn__peerstate peers;
  cairn__stopper stopper;
  atomic_int lost;
  cairn__cancel cancel;
  cairn__input inputs[NFILES];
  char names[NFILES][32], urls[NFILES][128];
  cairn__task task;
  cairn__http *h;
} side;

static void side_make(side *s, const master *m) {
  cairn_error err = {0};
  memset(s, 0, sizeof *s);
  harness_tmpdir(s->root, sizeof s->root);
  snprintf(s->cache_dir, sizeof s->cache_dir, "%s/cache", s->root);
  snprintf(s->run_dir, sizeof s->run_dir, "%s/run", s->root);
  assert_int_equal(cairn__cache_init(&s->cache, s->cache_dir, &err), CAIRN_OK);
  assert_int_equal(cairn__taskdir_init(&s->td, s->run_dir, 0, &err), CAIRN_OK);
  assert_int_equal(cairn__peerstate_init(&s->peers, NULL), 0);
  cairn__peerstate_set_features(&s->peers, CAIRN_FEATURES_ALL & ~(unsigned)CAIRN_FEAT_CHUNKS);
  assert_int_equal(cairn__stopper_init(&s->stopper), 0);
  atomic_init(&s->lost, 0);
  s->cancel = (cairn__cancel){&s->stopper, &s->lost, NULL};
  for (int i = 0; i < NFILES; i++) {
    snprintf(s->names[i], sizeof s->names[i], "part-%d.bin", i);
    snprintf(s->urls[i], sizeof s->urls[i], "/v1/files/%s", m->sha[i]);
    s->inputs[i] = (cairn__input){.name = s->names[i], .size = FILE_SIZE, .url = s->urls[i]};
    memcpy(s->inputs[i].sha256, m->sha[i], 65);
  }
  s->task = (cairn__task){.id = "t", .inputs = s->inputs, .ninputs = NFILES};
  char base[64];
  snprintf(base, sizeof base, "http://127.0.0.1:%u", m->port);
  s->h = cairn__http_create(base);
  assert_non_null(s->h);
  cairn__http_set_token(s->h, "4444444444444444444444444444444444444444444444444444444444444444");
  cairn__http_set_stall_timeout(s->h, HOLD_LIMIT_MS * 2);
  assert_int_equal(cairn__taskdir_prepare(&s->td, &s->task, 1, &err), CAIRN_OK);
}

static void side_free(side *s) {
  cairn_error err = {0};
  cairn__http_delete(s->h);
  cairn__taskdir_destroy(&s->td);
  cairn__cache_destroy(&s->cache);
  cairn__peerstate_destroy(&s->peers);
  cairn__stopper_destroy(&s->stopper);
  assert_int_equal(cairn__remove_tree(s->root, &err), CAIRN_OK);
}

static int cancel_cb(void *ud) { return cairn__cancelled(ud); }

static cairn_status fill(side *s, cairn_error *err) {
  cairn__http_set_cancel(s->h, cancel_cb, &s->cancel);
  return cairn__taskdir_fill(&s->td, &s->task, &s->cache, s->h, &s->peers, &s->cancel, err);
}

/* The cache holds nothing but verified files: none of a temp name, and
 * each file's bytes hash to its name. Returns how many it holds. */
static int cache_verified(const side *s) {
  int n = 0;
  DIR *d = opendir(s->cache_dir);
  assert_non_null(d);
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (e->d_name[0] == '.' && (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0))
      continue;
    assert_int_not_equal(strncmp(e->d_name, ".tmp-", 5), 0);
    if (strlen(e->d_name) != 64)
      continue; /* the cache's own bookkeeping */
    char path[8192], sha[65];
    cairn__buf b;
    cairn_error err = {0};
    snprintf(path, sizeof path, "%s/%s", s->cache_dir, e->d_name);
    assert_int_equal(cairn__read_file(path, FILE_SIZE + 1, &b, &err), CAIRN_OK);
    cairn__sha256_hex(b.data, b.len, sha);
    assert_string_equal(sha, e->d_name);
    cairn__buf_free(&b);
    n++;
  }
  closedir(d);
  return n;
}

static void test_inputs_overlap(void **state) {
  (void)state;
  master m;
  side s;
  cairn_error err = {0};
  int fds = open_fds();
  master_start(&m, -1, SERVE_ALL, CAIRN__FETCH_PARALLEL, NULL);
  side_make(&s, &m);
  assert_int_equal(fill(&s, &err), CAIRN_OK);
  /* the first CAIRN__FETCH_PARALLEL were open at once (each was held until
   * then), never more */
  assert_int_equal(atomic_load(&m.max_open), CAIRN__FETCH_PARALLEL);
  for (int i = 0; i < NFILES; i++) { /* each in place, its bytes */
    cairn__buf b;
    assert_int_equal(cairn__read_file(s.td.input_paths[i], FILE_SIZE + 1, &b, &err), CAIRN_OK);
    assert_int_equal(b.len, FILE_SIZE);
    assert_memory_equal(b.data, m.data[i], FILE_SIZE);
    cairn__buf_free(&b);
  }
  assert_int_equal(cache_verified(&s), NFILES);
  side_free(&s);
  master_stop(&m);
  assert_int_equal(open_fds(), fds);
}

/* File 1 is refused (404) or sent wrong (mode) while the others are held
 * at their first byte (never NFILES open at once): the task fails with
 * file 1's name, the held fetches stop. */
static void fails_with(int mode, const char *why) {
  master m;
  side s;
  cairn_error err = {0};
  int fds = open_fds();
  master_start(&m, 1, mode, NFILES + 1, NULL);
  side_make(&s, &m);
  cairn_status rc = fill(&s, &err);
  fprintf(stderr, "%s\n", err.text);
  assert_int_not_equal(rc, CAIRN_OK);
  assert_int_not_equal(rc, CAIRN_EIO); /* a failure, not a cancel */
  assert_non_null(strstr(err.text, "input part-1.bin: "));
  assert_non_null(strstr(err.text, why));
  assert_int_equal(s.lost, 0); /* the task's own cancel was not touched */
  assert_int_equal(cache_verified(&s), 0);
  side_free(&s);
  master_stop(&m); /* the held transfers were left by the worker */
  assert_int_equal(open_fds(), fds);
}

static void test_refused_input_stops_the_others(void **state) {
  (void)state;
  fails_with(SERVE_404, "404");
}

static void test_corrupt_input_stops_the_others(void **state) {
  (void)state;
  fails_with(SERVE_CORRUPT, "sha256 mismatch");
}

/* The task's lease is lost once CAIRN__FETCH_PARALLEL transfers are open:
 * every fetch stops, nothing is cached. */
static void test_cancel_stops_all(void **state) {
  (void)state;
  master m;
  side s;
  cairn_error err = {0};
  atomic_int lost; /* the lease's flag, set by the master's thread */
  int fds = open_fds();
  atomic_init(&lost, 0);
  master_start(&m, -1, SERVE_NONE, CAIRN__FETCH_PARALLEL, &lost);
  side_make(&s, &m);
  s.cancel.lost = &lost;
  assert_int_equal(fill(&s, &err), CAIRN_EIO);
  assert_non_null(strstr(err.text, "cancelled"));
  assert_int_equal(atomic_load(&m.max_open), CAIRN__FETCH_PARALLEL);
  side_free(&s);
  master_stop(&m);
  assert_int_equal(open_fds(), fds);
}

/* One input: today's path (on the task's handle, no thread). */
static void test_one_input(void **state) {
  (void)state;
  master m;
  side s;
  cairn_error err = {0};
  master_start(&m, -1, SERVE_ALL, 1, NULL);
  side_make(&s, &m);
  s.task.ninputs = 1;
  cairn_error e2 = {0};
  assert_int_equal(cairn__taskdir_prepare(&s.td, &s.task, 1, &e2), CAIRN_OK);
  assert_int_equal(fill(&s, &err), CAIRN_OK);
  assert_int_equal(atomic_load(&m.max_open), 1);
  assert_int_equal(cache_verified(&s), 1);
  side_free(&s);
  master_stop(&m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_inputs_overlap),
    cmocka_unit_test(test_refused_input_stops_the_others),
    cmocka_unit_test(test_corrupt_input_stops_the_others),
    cmocka_unit_test(test_cancel_stops_all),
    cmocka_unit_test(test_one_input),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
