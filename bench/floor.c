/* floor.c — what this machine charges for the steps no serial round trip
 * can skip, measured without Cairn in the way.
 *
 *   bench-floor [--n N] [--dir D]
 *
 * A serial round trip (bench/roundtrip.c) is one chain: the client's
 * submission reaches the master, whose durable commit precedes the offer,
 * which reaches a worker, which runs the app; its result reaches the
 * master, whose durable commit precedes the client's answer. Four messages
 * on loopback, two fsyncs and one app run, however the master is built.
 * This program times each of those alone, N times (default 2,000):
 *   fsync   append 4 KiB to a file in D (default: a new folder under
 *           TMPDIR, the filesystem bench-roundtrip's store is on) and
 *           fdatasync it, as a commit of a write-ahead log does;
 *   spawn   vfork, execve /bin/true, wait4: how the worker runs an app
 *           (worker/runner.c), from the call to the reaped exit;
 *   hop     one 128-byte message over a kept-alive loopback TCP
 *           connection to a thread that answers it: half the round trip;
 *   wake    a condition variable signalled to a sleeping thread and
 *           answered back: half that round trip (one thread waking
 *           another, as a request thread and a commit thread do).
 * Prints each one's p10 and p50 in ms, then one line other scripts parse:
 *   floor: fsync_ms=F spawn_ms=S hop_ms=H wake_ms=W durable_ms=D nofsync_ms=X
 * (p50s; durable = 2 F + S + 4 H: the least a durable round trip over
 * HTTP can take before any request is parsed or any row written;
 * nofsync = the same without the fsyncs).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define HOP_BYTES 128

extern char **environ;

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void die(const char *what) {
  fprintf(stderr, "bench-floor: %s: %s\n", what, strerror(errno));
  exit(1);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Sorts t[0..n) and prints its p10 and p50 in ms; returns the p50. */
static double report(const char *name, double *t, int n) {
  qsort(t, (size_t)n, sizeof *t, cmp_double);
  double p10 = t[n / 10] * 1e3, p50 = t[n / 2] * 1e3;
  printf("  %-6s p10 %.3f ms  p50 %.3f ms\n", name, p10, p50);
  return p50;
}

static void time_fsync(const char *dir, double *t, int n) {
  char path[4200];
  if (snprintf(path, sizeof path, "%s/floor-wal", dir) >= (int)sizeof path)
    die("--dir is too long");
  int fd = open(path, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC, 0600);
  if (fd < 0)
    die(path);
  char page[4096];
  memset(page, 0x5a, sizeof page);
  for (int i = 0; i < n; i++) {
    double t0 = now();
    if (write(fd, page, sizeof page) != (ssize_t)sizeof page || fdatasync(fd) != 0)
      die("append and fdatasync");
    t[i] = now() - t0;
  }
  close(fd);
  unlink(path);
}

static void time_spawn(double *t, int n) {
  char *argv[] = {"/bin/true", NULL};
  for (int i = 0; i < n; i++) {
    double t0 = now();
    pid_t pid = vfork();
    if (pid == 0) {
      execve(argv[0], argv, environ);
      _exit(127);
    }
    int st;
    struct rusage ru;
    if (pid < 0 || wait4(pid, &st, 0, &ru) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0)
      die("vfork, execve /bin/true, wait4");
    t[i] = now() - t0;
  }
}

/* The answering side of the hop: echoes each message until EOF. */
static void *echo_main(void *arg) {
  int fd = *(int *)arg;
  char buf[HOP_BYTES];
  for (;;) {
    ssize_t k = recv(fd, buf, sizeof buf, MSG_WAITALL);
    if (k <= 0 || send(fd, buf, (size_t)k, MSG_NOSIGNAL) != k)
      break;
  }
  close(fd);
  return NULL;
}

static void time_hop(double *t, int n) {
  int ls = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof a;
  if (ls < 0 || bind(ls, (struct sockaddr *)&a, sizeof a) != 0 || listen(ls, 1) != 0 ||
      getsockname(ls, (struct sockaddr *)&a, &alen) != 0)
    die("loopback listener");
  int c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
    die("connect to loopback");
  int s = accept(ls, NULL, NULL);
  if (s < 0)
    die("accept");
  setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  pthread_t th;
  if (pthread_create(&th, NULL, echo_main, &s) != 0)
    die("thread");
  char msg[HOP_BYTES];
  memset(msg, 'h', sizeof msg);
  for (int i = 0; i < n; i++) {
    double t0 = now();
    if (send(c, msg, sizeof msg, MSG_NOSIGNAL) != (ssize_t)sizeof msg ||
        recv(c, msg, sizeof msg, MSG_WAITALL) != (ssize_t)sizeof msg)
      die("loopback message");
    t[i] = (now() - t0) / 2;
  }
  close(c);
  pthread_join(th, NULL);
  close(ls);
}

typedef struct pingpong {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int turn; /* 1: the other thread's; 0: the timer's; -1: stop */
} pingpong;

static void *pong_main(void *arg) {
  pingpong *p = arg;
  pthread_mutex_lock(&p->mu);
  for (;;) {
    while (p->turn == 0)
      pthread_cond_wait(&p->cv, &p->mu);
    if (p->turn < 0)
      break;
    p->turn = 0;
    pthread_cond_broadcast(&p->cv);
  }
  pthread_mutex_unlock(&p->mu);
  return NULL;
}

static void time_wake(double *t, int n) {
  pingpong p = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
  pthread_t th;
  if (pthread_create(&th, NULL, pong_main, &p) != 0)
    die("thread");
  for (int i = 0; i < n; i++) {
    usleep(200); /* let the other thread fall asleep, as an idle one is */
    double t0 = now();
    pthread_mutex_lock(&p.mu);
    p.turn = 1;
    pthread_cond_broadcast(&p.cv);
    while (p.turn == 1)
      pthread_cond_wait(&p.cv, &p.mu);
    pthread_mutex_unlock(&p.mu);
    t[i] = (now() - t0) / 2;
  }
  pthread_mutex_lock(&p.mu);
  p.turn = -1;
  pthread_cond_broadcast(&p.cv);
  pthread_mutex_unlock(&p.mu);
  pthread_join(th, NULL);
}

int main(int argc, char **argv) {
  int n = 2000;
  const char *dir = NULL;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--n") && i + 1 < argc && atoi(argv[i + 1]) >= 10)
      n = atoi(argv[++i]);
    else if (!strcmp(argv[i], "--dir") && i + 1 < argc)
      dir = argv[++i];
    else {
      fprintf(stderr, "usage: bench-floor [--n N (>= 10)] [--dir D]\n");
      return 2;
    }
  }
  char tmp[4096];
  if (!dir) {
    const char *base = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(tmp, sizeof tmp, "%s/cairn-floor-XXXXXX", base);
    if (!mkdtemp(tmp))
      die(tmp);
  }
  double *t = calloc((size_t)n, sizeof *t);
  if (!t)
    die("out of memory");
  printf("bench-floor: %d of each\n", n);
  time_fsync(dir ? dir : tmp, t, n);
  double f = report("fsync", t, n);
  time_spawn(t, n);
  double s = report("spawn", t, n);
  time_hop(t, n);
  double h = report("hop", t, n);
  time_wake(t, n);
  double w = report("wake", t, n);
  if (!dir)
    rmdir(tmp);
  free(t);
  printf("floor: fsync_ms=%.3f spawn_ms=%.3f hop_ms=%.3f wake_ms=%.3f durable_ms=%.3f "
         "nofsync_ms=%.3f\n",
         f, s, h, w, 2 * f + s + 4 * h, s + 4 * h);
  return 0;
}
