/* harness.c — real processes and real HTTP for the integration tests. */
#include "tests/support/harness.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "worker/transport.h"

extern char **environ;

#if defined(__SANITIZE_THREAD__)
#define HARNESS_TSAN 1
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define HARNESS_TSAN 1
#endif
#endif

/* Every process started here, so that a failing test (cmocka leaves it by
 * longjmp) cannot leave a server or worker running: they are killed at exit. */
static pid_t g_children[256];
static int g_nchildren;

static void kill_children(void) {
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] > 0) {
      kill(g_children[i], SIGKILL);
      waitpid(g_children[i], NULL, 0);
    }
  g_nchildren = 0;
}

#ifdef HARNESS_TSAN
/* Under ThreadSanitizer the processes started here (servers, workers, the
 * cairn command and the apps these run) write their reports into a folder
 * of this test (log_path) rather than into logs that tests do not read; at
 * exit the test prints them and fails when there is any, even when the
 * process that made one was killed since. */
static char g_tsan_dir[4096];

static void tsan_setup(void) {
  const char *base = getenv("TMPDIR");
  snprintf(g_tsan_dir, sizeof g_tsan_dir, "%s/cairn-tsan-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(g_tsan_dir)) {
    perror("harness: mkdtemp");
    abort();
  }
  const char *old = getenv("TSAN_OPTIONS");
  size_t len = (old ? strlen(old) : 0) + strlen(g_tsan_dir) + 32;
  char *opts = malloc(len);
  if (!opts)
    abort();
  snprintf(opts, len, "%s%slog_path=%s/report", old ? old : "", old && *old ? ":" : "",
           g_tsan_dir);
  setenv("TSAN_OPTIONS", opts, 1);
  free(opts);
}

/* Prints and removes the reports of the children; returns how many. */
static int tsan_collect(void) {
  DIR *d = opendir(g_tsan_dir);
  struct dirent *e;
  int n = 0;
  while (d && (e = readdir(d)) != NULL) {
    if (e->d_name[0] == '.')
      continue;
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", g_tsan_dir, e->d_name);
    FILE *f = fopen(path, "r");
    if (f) {
      fprintf(stderr, "harness: ThreadSanitizer report of a child process (%s):\n", e->d_name);
      char buf[4096];
      size_t k;
      while ((k = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, k, stderr);
      fclose(f);
      n++;
    }
    unlink(path);
  }
  if (d)
    closedir(d);
  rmdir(g_tsan_dir);
  return n;
}
#endif

static void at_exit(void) {
  kill_children();
#ifdef HARNESS_TSAN
  if (tsan_collect() > 0) {
    fprintf(stderr, "harness: FAILED: ThreadSanitizer reported in a child process\n");
    fflush(NULL);
    _exit(66);
  }
#endif
}

/* Before the first process is started: the exit handler, and under
 * ThreadSanitizer the children's report folder. */
static void setup(void) {
  static int done;
  if (done)
    return;
  done = 1;
#ifdef HARNESS_TSAN
  tsan_setup();
#endif
  atexit(at_exit);
}

static void track(pid_t pid) {
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] <= 0) {
      g_children[i] = pid;
      return;
    }
  if (g_nchildren < (int)(sizeof g_children / sizeof g_children[0]))
    g_children[g_nchildren++] = pid;
}

static void untrack(pid_t pid) {
  for (int i = 0; i < g_nchildren; i++)
    if (g_children[i] == pid)
      g_children[i] = 0;
}

double harness_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The folders harness_tmpdir made (owned here, each malloc'd), removed when
 * the test exits with status 0 unless CAIRN_TEST_KEEP is set; a failing
 * test keeps them, and says where, for inspection. */
static char *g_tmpdirs[64];
static int g_ntmpdirs;

static void remove_tmpdirs(int status, void *arg) {
  (void)arg;
  const char *keep = getenv("CAIRN_TEST_KEEP");
  for (int i = 0; i < g_ntmpdirs; i++) {
    if (status != 0 || (keep && *keep))
      fprintf(stderr, "harness: kept %s\n", g_tmpdirs[i]);
    else {
      kill_children(); /* nothing may still write below the folder */
      harness_rmtree(g_tmpdirs[i]);
    }
    free(g_tmpdirs[i]);
  }
  g_ntmpdirs = 0;
}

void harness_tmpdir(char *out, size_t len) {
  const char *base = getenv("TMPDIR");
  snprintf(out, len, "%s/cairn-test-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(out)) {
    perror("mkdtemp");
    abort();
  }
  if (g_ntmpdirs == 0)
    on_exit(remove_tmpdirs, NULL);
  if (g_ntmpdirs < (int)(sizeof g_tmpdirs / sizeof g_tmpdirs[0])) {
    g_tmpdirs[g_ntmpdirs] = strdup(out);
    if (g_tmpdirs[g_ntmpdirs])
      g_ntmpdirs++;
  }
}

void harness_bin(char *out, size_t len, const char *name) {
  const char *dir = getenv("CAIRN_BIN_DIR");
  snprintf(out, len, "%s/%s", dir && *dir ? dir : "build/bin", name);
}

void harness_bin_dir(char *out, size_t len) {
  const char *dir = getenv("CAIRN_BIN_DIR");
  char real[PATH_MAX];
  if (!dir || !*dir)
    dir = "build/bin";
  snprintf(out, len, "%s", realpath(dir, real) ? real : dir);
}

pid_t harness_spawn(const char *const *argv, const char *log) {
  setup();
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  if (log) {
    posix_spawn_file_actions_addopen(&fa, 1, log, O_WRONLY | O_CREAT | O_APPEND, 0644);
    posix_spawn_file_actions_adddup2(&fa, 1, 2);
  }
  pid_t pid = -1;
  if (posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ) != 0)
    pid = -1;
  posix_spawn_file_actions_destroy(&fa);
  if (pid > 0)
    track(pid);
  return pid;
}

pid_t harness_worker(const char *url, const char *dir, const char *name, const char *const *args) {
  char bin[4096], wdir[4200], log[4300];
  harness_bin(bin, sizeof bin, "cairn-worker");
  snprintf(wdir, sizeof wdir, "%s/%s", dir, name);
  snprintf(log, sizeof log, "%s/%s.log", dir, name);
  const char *argv[64] = {bin, "--server", url, "--dir", wdir, "--name", name};
  int n = 7;
  for (int i = 0; args && args[i]; i++)
    if (n < 63)
      argv[n++] = args[i];
    else {
      fprintf(stderr, "harness: too many arguments for worker %s\n", name);
      return -1;
    }
  argv[n] = NULL;
  pid_t pid = harness_spawn(argv, log);
  if (pid <= 0)
    fprintf(stderr, "harness: worker %s did not start\n", name);
  return pid > 0 ? pid : -1;
}

int harness_wait(pid_t pid, double timeout) {
  double until = harness_now() + timeout;
  int status;
  for (;;) {
    pid_t r = waitpid(pid, &status, WNOHANG);
    if (r == pid) {
      untrack(pid);
      return status;
    }
    if (r < 0)
      return -1;
    if (harness_now() > until)
      return -1;
    usleep(20000);
  }
}

void harness_stop_all(pid_t *pids, int n, double timeout) {
  for (int i = 0; i < n; i++)
    if (pids[i] > 0) {
      kill(pids[i], SIGTERM);
      if (harness_wait(pids[i], timeout) == -1) {
        kill(pids[i], SIGKILL);
        harness_wait(pids[i], 30);
      }
      pids[i] = 0;
    }
}

int harness_rmtree(const char *dir) {
  if (strchr(dir, '\''))
    return -1; /* the folders of harness_tmpdir never hold one */
  char cmd[4200];
  if (snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir) >= (int)sizeof cmd)
    return -1;
  return system(cmd) == 0 ? 0 : -1;
}

int harness_server_start(harness_server *s, const char *db, const char *const *extra) {
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn-server");
  const char *argv[32] = {bin, "--db", db, "--listen", "127.0.0.1:0"};
  int n = 5;
  for (int i = 0; extra && extra[i] && n < 30; i++)
    argv[n++] = extra[i];
  argv[n] = NULL;
  snprintf(s->db, sizeof s->db, "%s", db);
  setup();
  setenv("CAIRN_ADMIN_TOKEN", HARNESS_ADMIN_TOKEN, 1);
  int pfd[2];
  if (pipe(pfd))
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pfd[0]);
  int rc = posix_spawn(&s->pid, bin, &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (rc) {
    close(pfd[0]);
    return -1;
  }
  track(s->pid);
  char line[512];
  size_t len = 0;
  double until = harness_now() + 30;
  while (len < sizeof line - 1 && harness_now() < until) {
    struct pollfd p = {.fd = pfd[0], .events = POLLIN};
    if (poll(&p, 1, 200) <= 0)
      continue;
    ssize_t k = read(pfd[0], line + len, 1);
    if (k <= 0)
      break;
    if (line[len] == '\n')
      break;
    len++;
  }
  line[len] = '\0';
  close(pfd[0]);
  const char *prefix = "cairn-server listening on ";
  if (strncmp(line, prefix, strlen(prefix)) != 0) {
    fprintf(stderr, "harness: server did not start (got \"%s\")\n", line);
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    untrack(s->pid);
    return -1;
  }
  snprintf(s->url, sizeof s->url, "%.255s", line + strlen(prefix));
  return 0;
}

int harness_server_stop(harness_server *s, int sig) {
  if (s->pid <= 0)
    return -1;
  kill(s->pid, sig);
  int st = harness_wait(s->pid, 60);
  if (st == -1) {
    kill(s->pid, SIGKILL);
    waitpid(s->pid, &st, 0);
    untrack(s->pid);
  }
  s->pid = 0;
  return st;
}

long harness_http(const char *url, const char *method, const char *path, const char *token,
                  const char *body, size_t body_len, json_t **resp, char **raw, size_t *rawlen) {
  cairn__http *h = cairn__http_create(url);
  /* Longer than the transport's 30 s: a request the master answers slowly
   * (a 100,000-task job under ThreadSanitizer on a loaded machine) is still
   * answered; a test's own time is bounded by its ctest TIMEOUT. */
  cairn__http_set_timeout(h, 120);
  if (token)
    cairn__http_set_token(h, token);
  cairn__http_response r;
  cairn_error err = {0};
  if (resp)
    *resp = NULL;
  long status = 0;
  if (cairn__http_request(h, method, path, body ? "application/json" : NULL, body, body_len,
                         1u << 28, &r, &err) == CAIRN_OK) {
    status = r.status;
    if (resp && r.body.len)
      *resp = json_loadb(r.body.data, r.body.len, 0, NULL);
    if (raw) {
      *raw = cairn__buf_take(&r.body, rawlen);
    }
  } else
    fprintf(stderr, "harness: %s %s: %s\n", method, path, err.text);
  cairn__buf_free(&r.body);
  cairn__http_delete(h);
  return status;
}

long harness_http_json(const char *url, const char *method, const char *path, const char *token,
                       json_t *body, json_t **resp) {
  char *s = body ? json_dumps(body, JSON_COMPACT) : NULL;
  long st = harness_http(url, method, path, token, s, s ? strlen(s) : 0, resp, NULL, NULL);
  free(s);
  return st;
}

long long harness_register(const char *url, const char *name, const char *app, char token[65]) {
  json_t *body = json_pack("{s:s, s:[s]}", "name", name, "apps", app), *resp = NULL;
  long st = harness_http_json(url, "POST", "/v1/volunteers", NULL, body, &resp);
  json_decref(body);
  long long id = -1;
  if (st == 201) {
    snprintf(token, 65, "%s", json_string_value(json_object_get(resp, "token")));
    id = (long long)json_integer_value(json_object_get(resp, "id"));
  }
  json_decref(resp);
  return id;
}

int harness_write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  if (!f)
    return -1;
  fputs(text, f);
  return fclose(f);
}

int harness_run(const char *const *argv, char **out) {
  setup();
  int pfd[2];
  if (pipe(pfd))
    return -1;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pfd[1], 1);
  posix_spawn_file_actions_addclose(&fa, pfd[0]);
  pid_t pid;
  int rc = posix_spawn(&pid, argv[0], &fa, NULL, (char *const *)argv, environ);
  posix_spawn_file_actions_destroy(&fa);
  close(pfd[1]);
  if (rc) {
    close(pfd[0]);
    return -1;
  }
  cairn__buf b;
  cairn__buf_init(&b, 1u << 28);
  char chunk[4096];
  ssize_t k;
  while ((k = read(pfd[0], chunk, sizeof chunk)) > 0)
    if (cairn__buf_append(&b, chunk, (size_t)k))
      break;
  close(pfd[0]);
  int st;
  waitpid(pid, &st, 0);
  if (out)
    *out = cairn__buf_take(&b, NULL);
  else
    cairn__buf_free(&b);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

unsigned harness_unused_port(unsigned avoid) {
  for (int tries = 0; tries < 100; tries++) {
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    socklen_t len = sizeof a;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int ok = fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
             getsockname(fd, (struct sockaddr *)&a, &len) == 0;
    if (fd >= 0)
      close(fd);
    if (ok && ntohs(a.sin_port) != avoid)
      return ntohs(a.sin_port);
  }
  return 0;
}

long long harness_metric(const char *url, const char *prefix) {
  char *raw = NULL;
  size_t len = 0;
  if (harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len) != 200) {
    free(raw);
    return -1;
  }
  long long sum = 0;
  for (char *line = raw; line && *line;) {
    char *nl = strchr(line, '\n');
    if (nl)
      *nl = '\0';
    if (strncmp(line, prefix, strlen(prefix)) == 0) {
      const char *sp = strrchr(line, ' ');
      sum += sp ? atoll(sp + 1) : 0;
    }
    line = nl ? nl + 1 : NULL;
  }
  free(raw);
  return sum;
}

int harness_wait_metric(const char *url, const char *prefix, long long want, double timeout) {
  for (double until = harness_now() + timeout; harness_now() < until; usleep(20000))
    if (harness_metric(url, prefix) == want)
      return 0;
  return -1;
}

int harness_send_work(const char *url, const char *token, const char *body) {
  const char *colon = strrchr(url, ':');
  struct sockaddr_in sa = {.sin_family = AF_INET,
                           .sin_port = htons((uint16_t)(colon ? atoi(colon + 1) : 0))};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  char req[1024];
  int n = snprintf(req, sizeof req,
                   "POST /v1/work HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer %s\r\n"
                   "Content-Type: application/json\r\nContent-Length: %zu\r\n\r\n%s",
                   token, strlen(body), body);
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || n <= 0 ||
      (size_t)n >= sizeof req || write(fd, req, (size_t)n) != n) {
    fprintf(stderr, "harness: POST /v1/work to %s not sent\n", url);
    if (fd >= 0)
      close(fd);
    return -1;
  }
  return fd;
}

int harness_read_status(int fd, double timeout) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  if (fd < 0 || poll(&p, 1, (int)(timeout * 1000)) <= 0)
    return 0;
  char buf[4096];
  ssize_t k = read(fd, buf, sizeof buf - 1);
  if (k < 12)
    return 0;
  buf[k] = '\0';
  return atoi(buf + 9); /* "HTTP/1.1 204" */
}
