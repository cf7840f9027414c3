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
 *   watch    poll stdout, the stop pipe and the child's pidfd (readable
 *            once it has exited: the exit is seen at once) every <=100 ms
 *            (without a pidfd, once stdout closed, from 50 us doubling: the
 *            exit is near); kill the group on overflow, cancel, the wall
 *            limit or the disk limit; notice the exit with waitid(WNOWAIT)
 *            so the group can be swept before the pid is reaped;
 *   finish   drain what is left of stdout, SIGKILL the group, reap (wait4:
 *            its CPU time), name the reason.
 * The child sets its own RLIMIT_CPU and RLIMIT_AS, or moves itself into
 * the memory cgroup the parent made, before it execs.
 */
#include "worker/runner.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "worker/enforce.h"
#include "worker/throttle.h"

enum { STAGE_CHDIR = 1, STAGE_FDS, STAGE_EXEC, STAGE_LIMITS };

/* What the child applies to itself before exec (0 / -1: nothing), and
 * what it execs. */
typedef struct child_limits {
  int cgroup_fd;            /* the memory cgroup's cgroup.procs */
  rlim_t cpu, as;           /* RLIMIT_CPU seconds, RLIMIT_AS bytes */
  const char *exec_path;    /* the program, or bwrap for a sandbox */
} child_limits;

typedef struct child_failure {
  int stage;
  int err;
} child_failure;

/* The program's whole environment: the entries of env (NULL: none), and
 * nothing of the worker's own (docs/worker.md, "The app's environment").
 * A new array of the same strings (the caller owns them); NULL when out of
 * memory. */
static char **make_envp(const char *const *env) {
  size_t m = 0;
  while (env && env[m])
    m++;
  char **envp = calloc(m + 1, sizeof *envp);
  if (!envp)
    return NULL;
  for (size_t i = 0; i < m; i++)
    envp[i] = (char *)env[i];
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
                  int errfd, int report, int maxfd, const child_limits *lim) {
  setpgid(0, 0);
  prctl(PR_SET_PDEATHSIG, SIGKILL); /* the worker's death ends it (a kept task runs again) */
  if (lim->cgroup_fd >= 0 && write(lim->cgroup_fd, "0", 1) != 1)
    child_fail(report, STAGE_LIMITS);
  if (lim->cpu) {
    struct rlimit r = {lim->cpu, lim->cpu + 1}; /* SIGXCPU, then SIGKILL */
    struct rlimit none = {0, 0};                /* and no core file from SIGXCPU */
    if (setrlimit(RLIMIT_CPU, &r) != 0 || setrlimit(RLIMIT_CORE, &none) != 0)
      child_fail(report, STAGE_LIMITS);
  }
  if (lim->as) {
    struct rlimit r = {lim->as, lim->as};
    if (setrlimit(RLIMIT_AS, &r) != 0)
      child_fail(report, STAGE_LIMITS);
  }
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
  execve(lim->exec_path, argv, envp);
  child_fail(report, STAGE_EXEC);
}

/* Starts the child with every signal blocked in between (see "start").
 * Returns its pid, or -1 with *fork_errno set. Kept apart so that no local
 * of the caller lives across vfork. */
static pid_t start_child(const cairn__run_spec *spec, char **argv, char **envp, int in, int out,
                         int errfd, int report, int maxfd, const child_limits *lim,
                         int *fork_errno) {
  sigset_t all, old;
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  pid_t pid = vfork();
  if (pid == 0)
    child(spec, argv, envp, in, out, errfd, report, maxfd, lim);
  *fork_errno = errno;
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  return pid;
}

/* Reads what stdout has now. Returns 1 at EOF, 0 otherwise; sets *overflow
 * when the cap is exceeded (the excess is not kept). */
static int read_available(int fd, cairn__buf *out, int *overflow) {
  char chunk[16384];
  for (;;) {
    ssize_t k = read(fd, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR)
      continue;
    if (k == 0)
      return 1;
    if (k < 0)
      return errno != EAGAIN;
    if (cairn__buf_append(out, chunk, (size_t)k) != 0) {
      /* keep what fits, then stop reading: the app is over its cap */
      size_t room = out->max - out->len;
      if (room < (size_t)k && room && cairn__buf_append(out, chunk, room) != 0)
        room = 0;
      *overflow = 1;
      return 0;
    }
  }
}

static void describe_noexec(const cairn__run_spec *spec, const child_failure *f,
                            cairn__run_result *res) {
  const char *what = f->stage == STAGE_CHDIR    ? "cannot enter task directory"
                     : f->stage == STAGE_FDS    ? "cannot set up descriptors for"
                     : f->stage == STAGE_LIMITS ? "cannot apply the limits to"
                                                : "cannot execute";
  const char *arg = f->stage == STAGE_CHDIR ? spec->dir
                    : f->stage == STAGE_EXEC && spec->sandbox ? spec->sandbox->bwrap
                                                              : spec->path;
  snprintf(res->note, sizeof res->note, "%s %s: %s", what, arg, strerror(f->err));
}

static double mono_now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int64_t limit_of(const cairn__run_spec *spec, int i) {
  return spec->limits ? spec->limits[i] : 0;
}

/* Kills the group for limit reason (a static name) with a note. */
static void stop_for(pid_t pid, cairn__run_result *res, const char *reason, const char *fmt,
                     ...) __attribute__((format(printf, 4, 5)));
static void stop_for(pid_t pid, cairn__run_result *res, const char *reason, const char *fmt,
                     ...) {
  va_list ap;
  kill(-pid, SIGKILL);
  res->outcome = CAIRN__RUN_LIMIT;
  snprintf(res->reason, sizeof res->reason, "%s", reason);
  va_start(ap, fmt);
  vsnprintf(res->note, sizeof res->note, fmt, ap);
  va_end(ap);
}

/* The watch loop's state of the limits it checks itself, and of the
 * measurements it samples. */
typedef struct watch_limits {
  double start, wall, next_disk, next_mem;
  uint64_t disk, as, vm_peak;  /* bytes (0: none) */
  uint64_t rss_peak, disk_peak; /* the largest samples, bytes */
} watch_limits;

/* Checks the wall and disk limits, samples the address space; 1 when the
 * group was killed. */
static int check_limits(const cairn__run_spec *spec, pid_t pid, watch_limits *wl,
                        cairn__run_result *res) {
  double now = mono_now();
  double ran = now - wl->start - cairn__throttle_stopped_s(spec->throttle, spec->slot);
  if (wl->wall > 0 && ran >= wl->wall) {
    stop_for(pid, res, "wall", "wall limit of %.0f s reached after %.2f s running (%.2f s in "
             "all): app killed", wl->wall, ran, now - wl->start);
    return 1;
  }
  if (wl->as) {
    uint64_t peak = spec->sandbox ? cairn__vm_peak_tree(pid) : cairn__vm_peak(pid);
    if (peak > wl->vm_peak)
      wl->vm_peak = peak;
  }
  if (now >= wl->next_mem) { /* the measurement: at most 64 /proc files */
    wl->next_mem = now + CAIRN__MEM_SAMPLE_MS / 1000.0;
    uint64_t rss = cairn__rss_peak_tree(pid);
    if (rss > wl->rss_peak)
      wl->rss_peak = rss;
  }
  if (wl->disk && now >= wl->next_disk) {
    wl->next_disk = now + CAIRN__DISK_CHECK_MS / 1000.0;
    uint64_t used = cairn__dir_usage(spec->dir, CAIRN__DISK_SCAN_ENTRIES);
    if (used > wl->disk_peak)
      wl->disk_peak = used;
    if (used > wl->disk) {
      stop_for(pid, res, "disk", "disk limit of %llu MiB reached (%llu bytes in the task "
               "directory after %.2f s): app killed", (unsigned long long)(wl->disk >> 20),
               (unsigned long long)used, now - wl->start);
      return 1;
    }
  }
  return 0;
}

/* A descriptor that becomes readable when process pid exits (pidfd_open,
 * Linux 5.3), or -1 where there is none. */
static int pid_fd(pid_t pid) {
#ifdef SYS_pidfd_open
  return (int)syscall(SYS_pidfd_open, pid, 0);
#else
  (void)pid;
  return -1;
#endif
}

/* Watches the running child until it has exited; returns its wait status
 * and fills *ru with its resource use. */
static int watch(const cairn__run_spec *spec, pid_t pid, int out, watch_limits *wl,
                 cairn__run_result *res, struct rusage *ru) {
  int out_open = 1, overflow = 0, killed = 0, status = 0;
  long wait_us = 100000;
  int stop_fd = spec->cancel ? cairn__stopper_stop_fd(spec->cancel->stopper) : -1;
  int exit_fd = pid_fd(pid); /* closed before the pid is reaped */
  for (;;) {
    struct pollfd p[3];
    nfds_t n = 0;
    if (out_open)
      p[n++] = (struct pollfd){.fd = out, .events = POLLIN};
    if (stop_fd >= 0 && !killed)
      p[n++] = (struct pollfd){.fd = stop_fd, .events = POLLIN};
    if (exit_fd >= 0)
      p[n++] = (struct pollfd){.fd = exit_fd, .events = POLLIN};
    long us = wait_us;
    if (wl->wall > 0 && !killed) { /* wake up at the wall limit */
      double left = (wl->start + wl->wall +
                     cairn__throttle_stopped_s(spec->throttle, spec->slot) - mono_now()) *
                    1e6 + 1000;
      us = left < 0 ? 0 : left < (double)us ? (long)left : us;
    }
    struct timespec ts = {us / 1000000, (us % 1000000) * 1000};
    if (ppoll(p, n, &ts, NULL) < 0 && errno != EINTR)
      wait_us = 100000;
    if (out_open && read_available(out, &res->output, &overflow)) {
      out_open = 0;
      if (exit_fd < 0)
        wait_us = 50; /* stdout closed: the exit is near, look often (50 us doubling) */
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
    if (!killed && check_limits(spec, pid, wl, res))
      killed = 1;
    siginfo_t si;
    memset(&si, 0, sizeof si);
    if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0 && si.si_pid == pid) {
      if (out_open && !overflow)
        read_available(out, &res->output, &overflow);
      if (overflow && res->outcome == CAIRN__RUN_EXITED) {
        res->outcome = CAIRN__RUN_OVERFLOW;
        snprintf(res->note, sizeof res->note, "output exceeded %zu bytes", spec->max_output);
      }
      cairn__throttle_detach(spec->throttle, spec->slot); /* before the group can be reused */
      kill(-pid, SIGKILL);
      if (exit_fd >= 0)
        close(exit_fd);
      while (wait4(pid, &status, 0, ru) < 0 && errno == EINTR)
        ;
      return status;
    }
    if (!out_open && wait_us < 100000)
      wait_us *= 2;
  }
}

/* Names why the program failed (res->reason), when no limit the watch loop
 * enforced did already: the CPU limit (SIGXCPU, or a failure with its CPU
 * time at the limit: SIGKILL at the hard limit, or an app that caught
 * SIGXCPU), the memory limit (the cgroup's OOM kill, or under RLIMIT_AS a
 * failure with the peak address space or resident size near the limit),
 * else the signal or the exit status. */
static void name_reason(const cairn__run_spec *spec, int status, const cairn__memcg *cg,
                        const watch_limits *wl, cairn__run_result *res) {
  int64_t cpu = limit_of(spec, CAIRN_LIMIT_CPU), mem = limit_of(spec, CAIRN_LIMIT_MEMORY);
  if (res->outcome == CAIRN__RUN_LIMIT || res->outcome == CAIRN__RUN_CANCELLED)
    return;
  if (res->outcome == CAIRN__RUN_OVERFLOW) {
    snprintf(res->reason, sizeof res->reason, "output");
    return;
  }
  if (res->exit_status == 0) {
    res->reason[0] = '\0';
    return;
  }
  int sig = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
  if (spec->sandbox && WIFEXITED(status) && WEXITSTATUS(status) > 128 &&
      WEXITSTATUS(status) <= 128 + 64)
    sig = WEXITSTATUS(status) - 128; /* bwrap passes a death by signal N on as exit 128+N */
  if (cpu && (sig == SIGXCPU || res->cpu_seconds >= (double)cpu - 0.05)) {
    res->outcome = CAIRN__RUN_LIMIT;
    snprintf(res->reason, sizeof res->reason, "cpu");
    snprintf(res->note, sizeof res->note, "cpu limit of %lld s reached (%.2f s of CPU in %.2f s): "
             "app killed", (long long)cpu, res->cpu_seconds, res->seconds);
  } else if (mem && (cairn__memcg_oom_killed(cg) ||
                     (wl->as && wl->vm_peak >= wl->as / 4 * CAIRN__AS_FAIL_SHARE))) {
    res->outcome = CAIRN__RUN_LIMIT;
    snprintf(res->reason, sizeof res->reason, "memory");
    snprintf(res->note, sizeof res->note, "memory limit of %lld MiB reached (by %s%s%s; peak "
             "%llu MiB): app %s", (long long)mem, res->memory_by,
             wl->as ? ": " : "", wl->as ? res->memory_why : "",
             (unsigned long long)(wl->vm_peak >> 20), sig ? "killed" : "failed");
  } else if (sig)
    snprintf(res->reason, sizeof res->reason, "signal %d", sig);
  else
    cairn__reason_of_exit(res->exit_status, res->reason);
}

/* Fills res->usage once the program has exited (cg not destroyed yet):
 * memory from the cgroup's memory.peak, else the largest of the sampled
 * VmHWM sums and of ru's ru_maxrss when it is above the worker's own
 * high-water mark (below it, it may be the worker's: enforce.h); not
 * measured (-1) when none says anything. Disk: the largest of the samples
 * and the directory's size now. O(the directory, capped) + a few files. */
static void measure(const cairn__run_spec *spec, const cairn__memcg *cg, const watch_limits *wl,
                    const struct rusage *ru, cairn__run_result *res) {
  uint64_t mem = cairn__memcg_peak(cg);
  if (!mem) {
    uint64_t maxrss = (uint64_t)ru->ru_maxrss * 1024u;
    mem = wl->rss_peak;
    if (maxrss > mem && maxrss > cairn__self_rss_peak())
      mem = maxrss;
  }
  uint64_t disk = cairn__dir_usage(spec->dir, CAIRN__DISK_SCAN_ENTRIES);
  if (wl->disk_peak > disk)
    disk = wl->disk_peak;
  res->usage = (cairn__usage){mem ? (int64_t)mem : -1, (int64_t)disk, res->seconds};
}

/* The argv to exec: the program's (argv[0] = path, then the arguments),
 * or with a sandbox bwrap's around it. A new array of borrowed strings;
 * NULL when out of memory. */
static char **make_argv(const cairn__run_spec *spec) {
  if (spec->sandbox) {
    cairn__sandbox_task t = {spec->dir, spec->path, spec->ro_binds, spec->nro_binds, spec->args,
                             spec->nargs, spec->network};
    return (char **)cairn__sandbox_argv(spec->sandbox, &t);
  }
  char **argv = calloc(spec->nargs + 2, sizeof *argv);
  if (!argv)
    return NULL;
  argv[0] = (char *)spec->path;
  for (size_t i = 0; i < spec->nargs; i++)
    argv[i + 1] = (char *)spec->args[i];
  return argv;
}

/* In a sandbox the program is exec'd by bwrap, whose failure would read
 * as the program's exit 1: a program the worker cannot execute is NOEXEC
 * before bwrap starts, as without a sandbox. 1 when res says so. */
static int sandbox_precheck(const cairn__run_spec *spec, cairn__run_result *res) {
  struct stat st;
  int e = 0;
  if (access(spec->path, X_OK) != 0)
    e = errno;
  else if (stat(spec->path, &st) != 0 || !S_ISREG(st.st_mode))
    e = EACCES;
  if (!e)
    return 0;
  res->outcome = CAIRN__RUN_NOEXEC;
  res->exit_status = 127;
  snprintf(res->note, sizeof res->note, "cannot execute %s: %s", spec->path, strerror(e));
  snprintf(res->reason, sizeof res->reason, "exit 127");
  return 1;
}

/* bwrap exits 1 with "bwrap: ..." as the first line of standard error when
 * it cannot set the sandbox up or exec the program (the program has not
 * run): 1 when errpath shows that, with the line in res->note. */
static int sandbox_failed(const char *errpath, int status, cairn__run_result *res) {
  char line[400];
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 1)
    return 0;
  int fd = open(errpath, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  ssize_t n = fd >= 0 ? read(fd, line, sizeof line - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n < 7 || strncmp(line, "bwrap: ", 7) != 0)
    return 0;
  line[n] = '\0';
  line[strcspn(line, "\n")] = '\0';
  snprintf(res->note, sizeof res->note, "the sandbox could not start the program: %s", line);
  return 1;
}

cairn_status cairn__run(const cairn__run_spec *spec, cairn__run_result *res, cairn_error *err) {
  char **argv = NULL, **envp = NULL, *errpath = NULL;
  int in = -1, errfd = -1, out[2] = {-1, -1}, report[2] = {-1, -1};
  cairn_status rc = CAIRN_OK;
  cairn__memcg cg = {.procs_fd = -1};
  memset(res, 0, sizeof *res);
  cairn__buf_init(&res->output, spec->max_output);
  res->outcome = CAIRN__RUN_EXITED;
  res->usage = CAIRN_USAGE_NONE;
  if (spec->sandbox && sandbox_precheck(spec, res))
    return CAIRN_OK;
  argv = make_argv(spec);
  envp = make_envp(spec->env);
  if (!argv || !envp || asprintf(&errpath, "%s/stderr", spec->dir) < 0) {
    errpath = NULL;
    rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  const char *inpath = spec->stdin_path ? spec->stdin_path : "/dev/null";
  in = open(inpath, O_RDONLY | O_CLOEXEC | (spec->stdin_path ? O_NOFOLLOW : 0));
  errfd = open(errpath, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
  if (in < 0 || errfd < 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", in < 0 ? inpath : errpath,
                         strerror(errno));
    goto out;
  }
  /* the limits: memory by a cgroup when one can be made, else RLIMIT_AS */
  child_limits lim = {.cgroup_fd = -1, .exec_path = argv[0]};
  watch_limits wl = {.wall = (double)limit_of(spec, CAIRN_LIMIT_WALL),
                     .disk = (uint64_t)limit_of(spec, CAIRN_LIMIT_DISK) << 20};
  lim.cpu = (rlim_t)limit_of(spec, CAIRN_LIMIT_CPU);
  uint64_t mem = (uint64_t)limit_of(spec, CAIRN_LIMIT_MEMORY) << 20;
  if (mem && cairn__memcg_create(&cg, spec->cgroup_name ? spec->cgroup_name : "cairn-task", mem,
                                 res->memory_why, sizeof res->memory_why) == 0) {
    lim.cgroup_fd = cg.procs_fd;
    res->memory_by = "cgroup";
  } else if (mem) {
    lim.as = wl.as = (rlim_t)mem;
    res->memory_by = "RLIMIT_AS";
  }
  if (pipe2(out, O_CLOEXEC) != 0 || pipe2(report, O_CLOEXEC) != 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cannot create a pipe: %s", strerror(errno));
    goto out;
  }
  struct rlimit rl;
  int maxfd = 65535;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && rl.rlim_cur < 65536)
    maxfd = (int)rl.rlim_cur - 1;
  int fork_errno = 0;
  wl.start = mono_now();
  pid_t pid = start_child(spec, argv, envp, in, out[1], errfd, report[1], maxfd, &lim,
                          &fork_errno);
  if (pid < 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cannot fork: %s", strerror(fork_errno));
    goto out;
  }
  cairn__throttle_attach(spec->throttle, spec->slot, pid);
  close(out[1]);
  close(report[1]);
  out[1] = report[1] = -1;
  child_failure f = {0, 0};
  ssize_t got;
  do
    got = read(report[0], &f, sizeof f);
  while (got < 0 && errno == EINTR);
  fcntl(out[0], F_SETFL, fcntl(out[0], F_GETFL) | O_NONBLOCK);
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  int status = watch(spec, pid, out[0], &wl, res, &ru);
  res->seconds = mono_now() - wl.start;
  measure(spec, &cg, &wl, &ru, res);
  if ((uint64_t)ru.ru_maxrss * 1024u > wl.vm_peak) /* resident peak: a fast hog's too */
    wl.vm_peak = (uint64_t)ru.ru_maxrss * 1024u;
  res->cpu_seconds = (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
                     (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
  int noexec = got == (ssize_t)sizeof f ||
               (spec->sandbox && res->outcome == CAIRN__RUN_EXITED &&
                sandbox_failed(errpath, status, res));
  if (noexec) {
    res->usage = CAIRN_USAGE_NONE;
    res->outcome = CAIRN__RUN_NOEXEC;
    res->exit_status = 127;
    if (got == (ssize_t)sizeof f)
      describe_noexec(spec, &f, res);
    cairn__buf_free(&res->output);
    cairn__buf_init(&res->output, spec->max_output);
  } else if (res->outcome == CAIRN__RUN_OVERFLOW || res->outcome == CAIRN__RUN_LIMIT)
    res->exit_status = 128 + SIGKILL;  /* killed for its output or a limit, even if it had just exited */
  else if (WIFEXITED(status))
    res->exit_status = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    res->exit_status = 128 + WTERMSIG(status);
  else
    res->exit_status = 255;
  if (res->outcome == CAIRN__RUN_NOEXEC)
    snprintf(res->reason, sizeof res->reason, "exit 127");
  else
    name_reason(spec, status, &cg, &wl, res);
out:
  cairn__memcg_destroy(&cg);
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
