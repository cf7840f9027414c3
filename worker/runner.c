/* runner.c — vfork/exec one program with captured, capped standard output.
 *
 * Life of a run:
 *   prepare  argv, envp and every descriptor in the parent (the child of a
 *            threaded process may only call async-signal-safe functions);
 *   start    vfork with every signal blocked (the child borrows the parent's
 *            memory until it execs, so no handler of ours may run in it and
 *            it touches only its own stack frame, no heap, no locks); the
 *            child makes its own process group, moves into the task
 *            directory, wires fds 0/1/2, closes the rest, resets signal
 *            dispositions, unblocks signals, execv()s; a close-on-exec pipe
 *            carries errno back when any step fails. vfork spares copying
 *            the worker's page tables, which fork paid on every task;
 *   watch    poll stdout (and the stop pipe) every <=100 ms; kill the group
 *            on overflow or cancel; notice the exit with waitid(WNOWAIT) so
 *            the group can be swept before the pid is reaped;
 *   finish   drain what is left of stdout, SIGKILL the group, reap.
 */
#include "worker/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

enum { STAGE_CHDIR = 1, STAGE_FDS, STAGE_EXEC };

typedef struct child_failure {
  int stage;
  int err;
} child_failure;

/* 1 if "NAME=..." entry has the same NAME as one of extra. */
static int overridden(const char *entry, const char *const *extra) {
  const char *eq = strchr(entry, '=');
  size_t n = eq ? (size_t)(eq - entry) : strlen(entry);
  for (size_t i = 0; extra && extra[i]; i++)
    if (strncmp(extra[i], entry, n) == 0 && extra[i][n] == '=')
      return 1;
  return 0;
}

static char **make_envp(const char *const *extra) {
  size_t n = 0, k = 0, m = 0;
  while (environ && environ[n])
    n++;
  while (extra && extra[m])
    m++;
  char **envp = calloc(n + m + 1, sizeof *envp);
  if (!envp)
    return NULL;
  for (size_t i = 0; i < n; i++)
    if (!overridden(environ[i], extra))
      envp[k++] = environ[i];
  for (size_t i = 0; i < m; i++)
    envp[k++] = (char *)extra[i];
  return envp;
}

__attribute__((noreturn)) static void child_fail(int fd, int stage) {
  child_failure f = {stage, errno};
  ssize_t w = write(fd, &f, sizeof f);
  (void)w;
  _exit(127);
}

/* Runs in the vforked child: only async-signal-safe system calls from here
 * to execve, writing nothing but local variables. */
__attribute__((noreturn)) static void child(const cairn__run_spec *spec, char **argv, char **envp, int in, int out,
                  int errfd, int report, int maxfd) {
  setpgid(0, 0);
  if (chdir(spec->dir) != 0)
    child_fail(report, STAGE_CHDIR);
  /* Move the sources above 2 first so that no dup2 clobbers another. */
  int src[3] = {in, out, errfd};
  for (int i = 0; i < 3; i++) {
    src[i] = fcntl(src[i], F_DUPFD_CLOEXEC, 3);
    if (src[i] < 0)
      child_fail(report, STAGE_FDS);
  }
  for (int i = 0; i < 3; i++)
    if (dup2(src[i], i) != i)
      child_fail(report, STAGE_FDS);
  if (report > 3 && close_range(3, (unsigned)report - 1, 0) != 0)
    for (int fd = 3; fd < report; fd++)
      close(fd);
  if (close_range((unsigned)report + 1, ~0u, 0) != 0)
    for (int fd = report + 1; fd <= maxfd; fd++)
      close(fd);
  struct sigaction dfl;
  memset(&dfl, 0, sizeof dfl);
  dfl.sa_handler = SIG_DFL;
  for (int s = 1; s < NSIG; s++)
    sigaction(s, &dfl, NULL);
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, NULL);
  execve(spec->path, argv, envp);
  child_fail(report, STAGE_EXEC);
}

/* Starts the child with every signal blocked in between (see "start").
 * Returns its pid, or -1 with *fork_errno set. Kept apart so that no local
 * of the caller lives across vfork. */
static pid_t start_child(const cairn__run_spec *spec, char **argv, char **envp, int in, int out,
                         int errfd, int report, int maxfd, int *fork_errno) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = vfork();
  if (pid == 0)
    child(spec, argv, envp, in, out, errfd, report, maxfd);
  *fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return pid;
}

/* Reads what stdout has now. Returns 1 at EOF, 0 otherwise; sets *overflow
 * when the cap is exceeded (the excess is not kept). */
static int read_available(int fd, cairn_buf *out, int *overflow) {
  char chunk[16384];
  for (;;) {
    ssize_t k = read(fd, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR)
      continue;
    if (k == 0)
      return 1;
    if (k < 0)
      return errno != EAGAIN;
    if (cairn_buf_append(out, chunk, (size_t)k) != 0) {
      /* keep what fits, then stop reading: the app is over its cap */
      size_t room = out->max - out->len;
      if (room < (size_t)k && room && cairn_buf_append(out, chunk, room) != 0)
        room = 0;
      *overflow = 1;
      return 0;
    }
  }
}

static void describe_noexec(const cairn__run_spec *spec, const child_failure *f,
                            cairn__run_result *res) {
  const char *what = f->stage == STAGE_CHDIR ? "cannot enter task directory"
                     : f->stage == STAGE_FDS ? "cannot set up descriptors for"
                                             : "cannot execute";
  const char *arg = f->stage == STAGE_CHDIR ? spec->dir : spec->path;
  snprintf(res->note, sizeof res->note, "%s %s: %s", what, arg, strerror(f->err));
}

/* Watches the running child until it has exited; returns its wait status. */
static int watch(const cairn__run_spec *spec, pid_t pid, int out, cairn__run_result *res) {
  int out_open = 1, overflow = 0, killed = 0, status = 0;
  long wait_ms = 100;
  int stop_fd = spec->cancel ? cairn__stopper_stop_fd(spec->cancel->stopper) : -1;
  for (;;) {
    struct pollfd p[2];
    nfds_t n = 0;
    if (out_open)
      p[n++] = (struct pollfd){.fd = out, .events = POLLIN};
    if (stop_fd >= 0 && !killed)
      p[n++] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
    if (poll(p, n, (int)wait_ms) < 0 && errno != EINTR)
      wait_ms = 100;
    if (out_open && read_available(out, &res->output, &overflow)) {
      out_open = 0;
      wait_ms = 1;  /* stdout closed: the exit is near, look often */
    }
    if (overflow && !killed) {
      kill(-pid, SIGKILL);
      killed = 1;
      res->outcome = CAIRN__RUN_OVERFLOW;
      snprintf(res->note, sizeof res->note, "output exceeded %zu bytes: app killed",
               spec->max_output);
      out_open = 0;
    }
    if (!killed && spec->cancel && cairn__cancelled(spec->cancel)) {
      kill(-pid, SIGKILL);
      killed = 1;
      res->outcome = CAIRN__RUN_CANCELLED;
      snprintf(res->note, sizeof res->note, "task cancelled: app killed");
    }
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
      if (out_open && !overflow)
        read_available(out, &res->output, &overflow);
      if (overflow && res->outcome == CAIRN__RUN_EXITED) {
        res->outcome = CAIRN__RUN_OVERFLOW;
        snprintf(res->note, sizeof res->note, "output exceeded %zu bytes", spec->max_output);
      }
      kill(-pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
      return status;
    }
    if (!out_open && wait_ms < 100)
      wait_ms *= 2;
  }
}

cairn_status cairn__run(const cairn__run_spec *spec, cairn__run_result *res, cairn_error *err) {
  char **argv = NULL, **envp = NULL, *errpath = NULL;
  int in = -1, errfd = -1, out[2] = {-1, -1}, report[2] = {-1, -1};
  cairn_status rc = CAIRN_OK;
  memset(res, 0, sizeof *res);
  cairn_buf_init(&res->output, spec->max_output);
  res->outcome = CAIRN__RUN_EXITED;
  argv = calloc(spec->nargs + 2, sizeof *argv);
  envp = make_envp(spec->env);
  if (!argv || !envp || asprintf(&errpath, "%s/stderr", spec->dir) < 0) {
    errpath = NULL;
    rc = cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  argv[0] = (char *)spec->path;
  for (size_t i = 0; i < spec->nargs; i++)
    argv[i + 1] = (char *)spec->args[i];
  in = open("/dev/null", O_RDONLY | O_CLOEXEC);
  errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (in < 0 || errfd < 0) {
    rc = cairn_error_set(err, CAIRN_EIO, "cannot open %s: %s", in < 0 ? "/dev/null" : errpath,
                         strerror(errno));
    goto out;
  }
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    rc = cairn_error_set(err, CAIRN_EIO, "cannot create a pipe: %s", strerror(errno));
    goto out;
  }
  struct rlimit rl;
  int maxfd = 65535;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
    maxfd = (int)rl.rlim_cur - 1;
  int fork_errno = 0;
  pid_t pid = start_child(spec, argv, envp, in, out[1], errfd, report[1], maxfd, &fork_errno);
  if (pid < 0) {
    rc = cairn_error_set(err, CAIRN_EIO, "cannot fork: %s", strerror(fork_errno));
    goto out;
  }
  close(out[1]);
  close(report[1]);
  out[1] = report[1] = -1;
  child_failure f = {0, 0};
  ssize_t got;
  do
    got = read(report[0], &f, sizeof f);
  while (got < 0 && errno == EINTR);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  int status = watch(spec, pid, out[0], res);
  if (got == (ssize_t)sizeof f) {
    res->outcome = CAIRN__RUN_NOEXEC;
    res->exit_status = 127;
    describe_noexec(spec, &f, res);
    cairn_buf_free(&res->output);
    cairn_buf_init(&res->output, spec->max_output);
  } else if (res->outcome == CAIRN__RUN_OVERFLOW)
    res->exit_status = 128 + SIGKILL;  /* killed for its output, even if it had just exited */
  else if (WIFEXITED(status))
    res->exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    res->exit_status = 128 + WTERMSIG(status);
  else
    res->exit_status = 255;
out:
  if (in >= 0)
    close(in);
  if (errfd >= 0)
    close(errfd);
  for (int i = 0; i < 2; i++) {
    if (out[i] >= 0)
      close(out[i]);
    if (report[i] >= 0)
      close(report[i]);
  }
  free(argv);
  free(envp);
  free(errpath);
  return rc;
}
