/* wq_bench.c — the Work Queue side of bench/compare.sh (not part of the
 * CMake build: compare.sh compiles it against the Debian package
 * coop-computing-tools-dev, so the project never depends on Work Queue).
 *
 *   wq_bench bag N K        N tasks of /bin/true queued at once, then K
 *                           work_queue_worker processes started; wall time
 *                           from the end of queueing to the last result
 *   wq_bench bag-fed N K    the same bag, queued as work_queue_hungry() asks
 *   wq_bench roundtrip N K  K workers connected and idle, then N times:
 *                           submit one /bin/true task and wait for its result
 *
 * Ends with
 *   wq: mode=bag|bag-fed tasks=N workers=K per_s=X workers_lost=L retries=R
 *   wq: mode=roundtrip tasks=N workers=K per_s=X p50_ms=Y p99_ms=Z workers_lost=L retries=R
 * and exits 0 only when every task ran and exited 0. workers_lost and
 * retries (dispatches beyond a task's first: the library retries a task on
 * another worker) count what happened inside the figures.
 *
 * The manager listens on a port the library picks (work_queue_create(0)
 * without WORK_QUEUE_PORT scans for a free one); the library binds every
 * interface, so the queue takes a random password and only our workers,
 * started on localhost with the password file, can join. Each worker has one
 * core, so runs one task at a time, like a cairn-worker with one slot. A
 * worker leaves when this process dies (--parent-death and PR_SET_PDEATHSIG)
 * or after 60 s without a manager; this process kills the PIDs it started on
 * exit, on SIGTERM/SIGINT and when its own deadline (SIGALRM) passes. Scratch
 * files live in a fresh folder under $TMPDIR, removed on a normal exit.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <work_queue.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum { MAX_WORKERS = 256, DEADLINE_S = 600 };

static pid_t workers[MAX_WORKERS];
static volatile sig_atomic_t nworkers;
static char scratch[4096];

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Signal handler and exit path alike: only kill(2) on our own PIDs. */
static void kill_workers(void) {
  for (int i = 0; i < nworkers; i++)
    if (workers[i] > 0)
      kill(workers[i], SIGKILL);
}

static void on_signal(int sig) {
  kill_workers();
  signal(sig, SIG_DFL);
  raise(sig);
}

static void cleanup(void) {
  kill_workers();
  for (int i = 0; i < nworkers; i++)
    if (workers[i] > 0)
      waitpid(workers[i], NULL, 0);
  nworkers = 0;
  if (scratch[0]) {
    char cmd[4200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", scratch);
    if (system(cmd) != 0)
      fprintf(stderr, "wq_bench: could not remove %s\n", scratch);
  }
}

/* Starts worker i for the manager on localhost:port, working in the
 * scratch folder's wI/ and writing its output to wI.log. */
static pid_t start_worker(int i, int port, const char *pwfile) {
  char wdir[4200], log[4200], port_s[16];
  snprintf(wdir, sizeof wdir, "%s/w%d", scratch, i);
  snprintf(log, sizeof log, "%s/w%d.log", scratch, i);
  snprintf(port_s, sizeof port_s, "%d", port);
  if (mkdir(wdir, 0700) != 0)
    return -1;
  pid_t pid = fork();
  if (pid != 0)
    return pid;
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (!freopen(log, "w", stdout) || !freopen(log, "a", stderr))
    _exit(126);
  char *av[] = {"work_queue_worker", "--cores", "1", "--timeout", "60", "--parent-death",
                "--password", (char *)pwfile, "--workdir", wdir, "localhost", port_s, NULL};
  execvp(av[0], av);
  _exit(127);
}

/* Waits until `deadline` (now() seconds) for the next finished task and
 * returns it; past the deadline, or when a task did not run or exited
 * non-zero, ends the benchmark (exit 1). */
static struct work_queue_task *next_result(struct work_queue *q, double deadline) {
  while (now() < deadline) {
    struct work_queue_task *t = work_queue_wait(q, 1);
    if (!t)
      continue;
    if (t->result != WORK_QUEUE_RESULT_SUCCESS || t->return_status != 0) {
      fprintf(stderr, "wq_bench: task %d failed (result %d, exit %d)\n", t->taskid,
              (int)t->result, t->return_status);
      exit(1);
    }
    return t;
  }
  fprintf(stderr, "wq_bench: no result before the deadline\n");
  exit(1);
}

static long retries; /* dispatches beyond the first, summed over tasks */

static struct work_queue_task *noop_task(void) {
  return work_queue_task_create("/bin/true");
}

static void finish(struct work_queue_task *t) {
  retries += t->try_count > 1 ? t->try_count - 1 : 0;
  work_queue_task_delete(t);
}

/* Workers lost and tasks retried so far, which the figures include. */
static int workers_lost(struct work_queue *q) {
  struct work_queue_stats s;
  work_queue_get_stats(q, &s);
  return s.workers_lost;
}

static void start_workers(struct work_queue *q, int k, const char *pwfile) {
  for (int i = 0; i < k; i++) {
    workers[i] = start_worker(i, work_queue_port(q), pwfile);
    if (workers[i] < 0) {
      perror("wq_bench: starting a worker");
      exit(1);
    }
    nworkers = i + 1;
  }
}

/* The bag: with fed == 0 all N tasks are queued before the workers start
 * (as a Cairn job hands the master its whole bag); with fed != 0 the queue
 * is kept topped up with work_queue_hungry() as results come back, the use
 * the Work Queue manual recommends for large bags. */
static void bag(struct work_queue *q, long n, int k, const char *pwfile, int fed) {
  long submitted = 0;
  if (!fed)
    for (; submitted < n; submitted++)
      work_queue_submit(q, noop_task());
  double t0 = now();
  start_workers(q, k, pwfile);
  for (long done = 0; done < n; done++) {
    while (submitted < n && (submitted == done || work_queue_hungry(q) > 0)) {
      work_queue_submit(q, noop_task());
      submitted++;
    }
    finish(next_result(q, t0 + DEADLINE_S));
  }
  double elapsed = now() - t0;
  printf("wq: mode=%s tasks=%ld workers=%d per_s=%.0f workers_lost=%d retries=%ld\n",
         fed ? "bag-fed" : "bag", n, k, (double)n / elapsed, workers_lost(q), retries);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void roundtrip(struct work_queue *q, long n, int k, const char *pwfile) {
  start_workers(q, k, pwfile);
  /* until every worker has connected and reported its resources */
  double ready_by = now() + 60;
  for (;;) {
    struct work_queue_stats s;
    work_queue_wait(q, 0); /* lets the manager accept and hear its workers */
    work_queue_get_stats(q, &s);
    if (s.workers_idle >= k && s.workers_init == 0)
      break;
    if (now() > ready_by) {
      fprintf(stderr, "wq_bench: only %d of %d workers ready\n", s.workers_idle, k);
      exit(1);
    }
    usleep(10000);
  }
  double *lat = calloc((size_t)n, sizeof *lat);
  if (!lat)
    exit(1);
  double t0 = now();
  for (long i = 0; i < n; i++) {
    double s = now();
    work_queue_submit(q, noop_task());
    finish(next_result(q, t0 + DEADLINE_S));
    lat[i] = now() - s;
  }
  double elapsed = now() - t0;
  qsort(lat, (size_t)n, sizeof *lat, cmp_double);
  printf("wq: mode=roundtrip tasks=%ld workers=%d per_s=%.1f p50_ms=%.2f p99_ms=%.2f "
         "workers_lost=%d retries=%ld\n",
         n, k, (double)n / elapsed, lat[(n - 1) / 2] * 1e3, lat[(n * 99 - 1) / 100] * 1e3,
         workers_lost(q), retries);
  free(lat);
}

/* A random password in scratch/pw, so no stranger's worker joins. */
static void write_password(const char *path, struct work_queue *q) {
  FILE *r = fopen("/dev/urandom", "rb"), *f = fopen(path, "w");
  unsigned char b[16];
  if (!r || !f || fread(b, 1, sizeof b, r) != sizeof b) {
    fprintf(stderr, "wq_bench: cannot write %s\n", path);
    exit(1);
  }
  char pw[2 * sizeof b + 1];
  for (size_t i = 0; i < sizeof b; i++)
    snprintf(pw + 2 * i, 3, "%02x", b[i]);
  fputs(pw, f);
  fclose(f);
  fclose(r);
  work_queue_specify_password(q, pw);
}

int main(int argc, char **argv) {
  if (argc != 4 ||
      (strcmp(argv[1], "bag") && strcmp(argv[1], "bag-fed") && strcmp(argv[1], "roundtrip"))) {
    fprintf(stderr, "usage: wq_bench bag|bag-fed|roundtrip TASKS WORKERS\n");
    return 2;
  }
  long n = atol(argv[2]);
  int k = atoi(argv[3]);
  if (n <= 0 || k <= 0 || k > MAX_WORKERS) {
    fprintf(stderr, "wq_bench: TASKS > 0 and 0 < WORKERS <= %d\n", MAX_WORKERS);
    return 2;
  }
  const char *base = getenv("TMPDIR");
  snprintf(scratch, sizeof scratch, "%s/wq-bench-XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(scratch)) {
    perror("wq_bench: mkdtemp");
    return 1;
  }
  atexit(cleanup);
  signal(SIGTERM, on_signal);
  signal(SIGINT, on_signal);
  signal(SIGALRM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  alarm(DEADLINE_S + 60);

  unsetenv("WORK_QUEUE_PORT"); /* port 0: the library picks a free one */
  struct work_queue *q = work_queue_create(0);
  if (!q) {
    fprintf(stderr, "wq_bench: cannot create the queue: %s\n", strerror(errno));
    return 1;
  }
  char pwfile[4200];
  snprintf(pwfile, sizeof pwfile, "%s/pw", scratch);
  write_password(pwfile, q);
  if (!strcmp(argv[1], "bag") || !strcmp(argv[1], "bag-fed"))
    bag(q, n, k, pwfile, !strcmp(argv[1], "bag-fed"));
  else
    roundtrip(q, n, k, pwfile);
  fflush(stdout);
  work_queue_delete(q);
  return 0;
}
