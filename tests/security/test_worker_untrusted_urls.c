/* test_worker_untrusted_urls.c — a work offer cannot make a real
 * cairn-worker read a local file, reach a host the master did not name, or
 * store an input larger than declared. A hostile master on 127.0.0.1
 * offers three tasks: one whose parent url is file://SECRET, one whose
 * parent url is on 127.0.0.2 (no master, no peer source), and one whose
 * input (declared 16 bytes) is served with 64. Each must come back as a
 * worker-side failure (125) with the refusal, the secret never in any
 * output, no connection made to 127.0.0.2, and nothing stored in the
 * cache. What the worker reported is printed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"

#define TOKEN "5555555555555555555555555555555555555555555555555555555555555555"
#define PEER_KEY "6666666666666666666666666666666666666666666666666666666666666666"
#define SECRET "secret-of-the-worker-host"
#define TASKS 3

typedef struct master {
  pthread_mutex_t mu;
  int offered;                 /* offers made */
  int status[TASKS];           /* exit status reported per task, -1: none yet */
  char output[TASKS][512];
  char secret_path[4200];
  unsigned trap_port;          /* the listener on 127.0.0.2 */
  char big_sha[65];            /* 64 bytes of 'x' */
} master;

/* The offer for task i (caller frees). */
static char *offer(master *m, int i) {
  char *s = NULL;
  int n;
  if (i == 0)
    n = asprintf(&s, "{\"index\": 0, \"lease_seconds\": 60, \"task\": {\"job\": 1, \"id\": \"file\","
                 " \"app\": \"sh\", \"args\": [\"-c\", \"cat parents/*\"], \"parents\":"
                 " [{\"id\": \"p\", \"url\": \"file://%s\"}]}}", m->secret_path);
  else if (i == 1)
    n = asprintf(&s, "{\"index\": 1, \"lease_seconds\": 60, \"task\": {\"job\": 1, \"id\": \"host\","
                 " \"app\": \"sh\", \"args\": [\"-c\", \"cat parents/*\"], \"parents\":"
                 " [{\"id\": \"p\", \"url\": \"http://127.0.0.2:%u/v1/tasks/1/output\"}]}}",
             m->trap_port);
  else
    n = asprintf(&s, "{\"index\": 2, \"lease_seconds\": 60, \"task\": {\"job\": 1, \"id\": \"big\","
                 " \"app\": \"sh\", \"args\": [\"-c\", \"wc -c < inputs/f\"], \"inputs\":"
                 " [{\"name\": \"f\", \"sha256\": \"%s\", \"size\": 16}]}}", m->big_sha);
  assert_true(n > 0);
  return s;
}

static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, char *body) {
  struct MHD_Response *r =
    MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE);
  MHD_add_response_header(r, "Content-Type", "application/json");
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* Records PUT /v1/results/<i>. */
static void record(master *m, const char *url, const char *body) {
  int i = atoi(url + strlen("/v1/results/"));
  json_t *j = json_loads(body, 0, NULL);
  if (i >= 0 && i < TASKS && j) {
    pthread_mutex_lock(&m->mu);
    m->status[i] = (int)json_integer_value(json_object_get(j, "exit_status"));
    const char *out = json_string_value(json_object_get(j, "output"));
    snprintf(m->output[i], sizeof m->output[i], "%s", out ? out : "");
    pthread_mutex_unlock(&m->mu);
  }
  json_decref(j);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url,
                                  const char *method, const char *version, const char *upload,
                                  size_t *upload_size, void **ctx) {
  master *m = cls;
  char **body = (char **)ctx;
  if (!*body) {  /* first call: collect the body */
    *body = calloc(1, 65536);
    return MHD_YES;
  }
  if (*upload_size) {
    size_t have = strlen(*body), n = *upload_size < 65535 - have ? *upload_size : 65535 - have;
    memcpy(*body + have, upload, n);
    *upload_size = 0;
    return MHD_YES;
  }
  if (strcmp(url, "/v1/volunteers") == 0)
    return answer(c, 201, strdup("{\"id\": 1, \"row\": 1, \"token\": \"" TOKEN "\","
                                 " \"peer_key\": \"" PEER_KEY "\", \"features\": []}"));
  if (strcmp(url, "/v1/work") == 0) {
    pthread_mutex_lock(&m->mu);
    int i = m->offered < TASKS ? m->offered++ : -1;
    pthread_mutex_unlock(&m->mu);
    return i < 0 ? answer(c, 204, strdup("")) : answer(c, 200, offer(m, i));
  }
  if (strncmp(url, "/v1/results/", 12) == 0) {
    record(m, url, *body);
    return answer(c, 200, strdup("{\"state\": \"accepted\"}"));
  }
  if (strncmp(url, "/v1/files/", 10) == 0) {
    char *x = malloc(65);
    memset(x, 'x', 64);
    x[64] = '\0';
    return answer(c, 200, x);
  }
  return answer(c, 200, strdup("{}"));  /* heartbeats */
}

static void on_done(void *cls, struct MHD_Connection *c, void **ctx,
                    enum MHD_RequestTerminationCode toe) {
  free(*ctx);
  *ctx = NULL;
}

static int listen_on(const char *addr, unsigned *port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  struct sockaddr_in a = {.sin_family = AF_INET};
  socklen_t len = sizeof a;
  inet_pton(AF_INET, addr, &a.sin_addr);
  assert_int_equal(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  assert_int_equal(listen(fd, 16), 0);
  assert_int_equal(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  *port = ntohs(a.sin_port);
  return fd;
}

/* Number of regular files (not temp files) in dir. */
static int cached_files(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
    n += e->d_name[0] != '.';
  if (d)
    closedir(d);
  return n;
}

static void test_untrusted_urls_and_sizes(void **state) {
  (void)state;
  master m = {.offered = 0};
  char dir[4096], wdir[4200], log[4200], cache[4300], url[64], x[64];
  pthread_mutex_init(&m.mu, NULL);
  for (int i = 0; i < TASKS; i++)
    m.status[i] = -1;
  harness_tmpdir(dir, sizeof dir);
  snprintf(m.secret_path, sizeof m.secret_path, "%s/secret", dir);
  assert_int_equal(harness_write_file(m.secret_path, SECRET "\n"), 0);
  memset(x, 'x', 64);
  cairn__sha256_hex(x, 64, m.big_sha);
  int trap = listen_on("127.0.0.2", &m.trap_port);
  unsigned port = 0;
  int lfd = listen_on("127.0.0.1", &port);
  fcntl(lfd, F_SETFL, 0);
  struct MHD_Daemon *d = MHD_start_daemon(
    MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, on_request, &m, MHD_OPTION_LISTEN_SOCKET, lfd,
    MHD_OPTION_NOTIFY_COMPLETED, on_done, NULL, MHD_OPTION_END);
  assert_non_null(d);
  snprintf(url, sizeof url, "http://127.0.0.1:%u", port);
  snprintf(wdir, sizeof wdir, "%s/w", dir);
  snprintf(log, sizeof log, "%s/w.log", dir);
  const char *args[] = {"--app", "sh=/bin/sh", "--max-tasks", "3", "--peer-listen", "off",
                        "--stall-timeout", "2", NULL};
  pid_t w = harness_worker(url, dir, "w", args);
  int ws = harness_wait(w, 60);
  if (ws == -1) {
    kill(w, SIGKILL);
    waitpid(w, NULL, 0);
  }
  MHD_stop_daemon(d);
  int reached = accept(trap, NULL, NULL) >= 0;
  close(trap);
  for (int i = 0; i < TASKS; i++)
    printf("task %d: exit %d, output: %s\n", i, m.status[i], m.output[i]);
  snprintf(cache, sizeof cache, "%s/cache", wdir);
  int stored = cached_files(cache);
  printf("127.0.0.2 reached: %s; files in the cache: %d\n", reached ? "YES" : "no", stored);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  for (int i = 0; i < TASKS; i++) {
    assert_int_equal(m.status[i], 125);
    assert_null(strstr(m.output[i], SECRET));
  }
  assert_non_null(strstr(m.output[0], "refused"));
  assert_non_null(strstr(m.output[1], "refused"));
  assert_false(reached);
  assert_int_equal(stored, 0);
  pthread_mutex_destroy(&m.mu);
  char cmd[4200];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_untrusted_urls_and_sizes),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
