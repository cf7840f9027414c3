/* launch_local.c — the `local` backend (launch.h): cairn-worker processes on
 * this machine, each in its own process group, its state in
 * WORKDIR/local/wN and its output in WORKDIR/local/wN.log (--ship-worker: the
 * tarball is unpacked into WORKDIR/local/worker and its bin/cairn-worker
 * runs). poll reaps with
 * waitpid(WNOHANG); remove sends SIGTERM to the group; fini waits up to
 * LOCAL_GRACE seconds for the removed ones, then SIGKILLs their groups.
 * Ids are the workers' pids. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/launch.h"

/* Seconds a removed worker has to exit after SIGTERM before SIGKILL. */
#define LOCAL_GRACE 10.0

typedef struct local_worker {
  pid_t pid;
  int state;   /* last known CAIRN_LAUNCH_* */
  int removed; /* remove was called: fini makes sure it is gone */
} local_worker;

typedef struct local_state {
  char dir[PATH_MAX];          /* WORKDIR/local */
  char worker[PATH_MAX];       /* the resolved cairn-worker */
  local_worker *w;             /* every worker started, in order */
  size_t n, cap;
  unsigned seq;                /* numbers the state folders */
} local_state;

/* The cairn-worker to run: spec->worker_path when it names a folder; a bare
 * name is looked for next to this program first, then on PATH. */
static int resolve_worker(const char *name, char *out, size_t size) {
  if (strchr(name, '/')) {
    snprintf(out, size, "%s", name);
    return access(out, X_OK);
  }
  char self[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
  if (k > 0) {
    self[k] = '\0';
    char *slash = strrchr(self, '/');
    if (slash && (size_t)(slash - self) + strlen(name) + 2 <= size) {
      snprintf(out, size, "%.*s/%s", (int)(slash - self), self, name);
      if (access(out, X_OK) == 0)
        return 0;
    }
  }
  const char *path = getenv("PATH");
  while (path && *path) {
    size_t len = strcspn(path, ":");
    snprintf(out, size, "%.*s/%s", (int)len, path, name);
    if (len && access(out, X_OK) == 0)
      return 0;
    path += len + (path[len] == ':');
  }
  return -1;
}

static int local_init(void **st, const cairn__launch_opt *opts, int n,
                      const cairn__launch_spec *spec, char *err, size_t errlen) {
  (void)opts;
  (void)n;
  local_state *s = calloc(1, sizeof *s);
  if (!s)
    return snprintf(err, errlen, "out of memory"), -1;
  snprintf(s->dir, sizeof s->dir, "%s/local", spec->work_dir);
  if (mkdir(s->dir, 0700) && errno != EEXIST) {
    snprintf(err, errlen, "cannot create %s: %s", s->dir, strerror(errno));
    free(s);
    return -1;
  }
  if (spec->shipped_worker) {
    char unpack[PATH_MAX + 8];
    snprintf(unpack, sizeof unpack, "%s/worker", s->dir);
    if (cairn__launch_unpack_worker(spec->shipped_worker, unpack, s->worker, sizeof s->worker,
                                   err, errlen)) {
      free(s);
      return -1;
    }
  } else if (resolve_worker(spec->worker_path, s->worker, sizeof s->worker)) {
    snprintf(err, errlen, "no executable %s (give --worker PATH)", spec->worker_path);
    free(s);
    return -1;
  }
  *st = s;
  return 0;
}

/* Forks one worker; its pid, or -1 with err. */
static pid_t start_one(local_state *s, const cairn__launch_spec *spec, char *err, size_t errlen) {
  char dir[PATH_MAX + 16], log[PATH_MAX + 32], buf[256];
  unsigned k = ++s->seq;
  snprintf(dir, sizeof dir, "%s/w%u", s->dir, k);
  snprintf(log, sizeof log, "%s/w%u.log", s->dir, k);
  cairn__launch_spec local = *spec;
  local.worker_path = s->worker;
  const char *argv[96];
  if (cairn__launch_worker_argv(&local, NULL, dir, spec->invitation_file, argv, 96, buf,
                               sizeof buf) < 0) {
    snprintf(err, errlen, "the worker's command line is too long");
    return -1;
  }
  int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    snprintf(err, errlen, "cannot create %s: %s", log, strerror(errno));
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0); /* its own group: remove signals it and its apps */
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0)
      dup2(null, 0);
    dup2(fd, 1);
    dup2(fd, 2);
    close_range(3, ~0u, 0); /* nothing of the factory's (its connection to the master) */
    signal(SIGPIPE, SIG_DFL); /* the factory ignores it; the worker starts as usual */
    unsetenv("CAIRN_ADMIN_TOKEN"); /* the admin token never reaches a worker (one thread here) */
    execv(argv[0], (char *const *)argv);
    _exit(127);
  }
  close(fd);
  if (pid < 0) {
    snprintf(err, errlen, "fork: %s", strerror(errno));
    return -1;
  }
  setpgid(pid, pid); /* also here: no race with a signal sent right away */
  return pid;
}

static int local_submit(void *st, const cairn__launch_spec *spec, int n,
                        char ids[][CAIRN_LAUNCH_ID_MAX], char *err, size_t errlen) {
  local_state *s = st;
  int k = 0;
  for (; k < n; k++) {
    if (s->n == s->cap) {
      size_t cap = s->cap ? 2 * s->cap : 16;
      local_worker *w = realloc(s->w, cap * sizeof *w);
      if (!w) {
        snprintf(err, errlen, "out of memory");
        break;
      }
      s->w = w;
      s->cap = cap;
    }
    pid_t pid = start_one(s, spec, err, errlen);
    if (pid < 0)
      break;
    s->w[s->n++] = (local_worker){pid, CAIRN_LAUNCH_RUNNING, 0};
    snprintf(ids[k], CAIRN_LAUNCH_ID_MAX, "%ld", (long)pid);
  }
  return k ? k : -1;
}

static local_worker *find(local_state *s, const char *id) {
  char *end;
  long pid = strtol(id, &end, 10);
  for (size_t i = 0; !*end && i < s->n; i++)
    if (s->w[i].pid == pid)
      return &s->w[i];
  return NULL;
}

/* Reaps w if it exited; its state. */
static int reap(local_worker *w) {
  if (w->state != CAIRN_LAUNCH_RUNNING)
    return w->state;
  int status;
  pid_t r = waitpid(w->pid, &status, WNOHANG);
  if (r == w->pid)
    w->state = WIFEXITED(status) && WEXITSTATUS(status) == 0 ? CAIRN_LAUNCH_DONE
                                                             : CAIRN_LAUNCH_FAILED;
  else if (r < 0 && errno == ECHILD)
    w->state = CAIRN_LAUNCH_FAILED;
  return w->state;
}

static int local_poll(void *st, const char *id) {
  local_worker *w = find(st, id);
  return w ? reap(w) : CAIRN_LAUNCH_FAILED;
}

static int local_remove(void *st, const char *id) {
  local_worker *w = find(st, id);
  if (!w)
    return -1;
  w->removed = 1;
  if (reap(w) == CAIRN_LAUNCH_RUNNING && kill(-w->pid, SIGTERM) && errno != ESRCH)
    return -1;
  return 0;
}

static void local_fini(void *st) {
  local_state *s = st;
  struct timespec tick = {0, 50 * 1000 * 1000};
  for (int round = 0; round < (int)(LOCAL_GRACE / 0.05); round++) {
    int alive = 0;
    for (size_t i = 0; i < s->n; i++)
      alive += s->w[i].removed && reap(&s->w[i]) == CAIRN_LAUNCH_RUNNING;
    if (!alive)
      break;
    nanosleep(&tick, NULL);
  }
  for (size_t i = 0; i < s->n; i++)
    if (s->w[i].removed && reap(&s->w[i]) == CAIRN_LAUNCH_RUNNING) {
      kill(-s->w[i].pid, SIGKILL);
      waitpid(s->w[i].pid, NULL, 0);
    }
  free(s->w);
  free(s);
}

const cairn__launch_backend cairn__launch_local = {
  .name = "local",
  .summary = "cairn-worker processes on this machine",
  .options = (const char *const[]){NULL},
  .help = "    no options of its own; --worker: default the cairn-worker next to\n"
          "    cairn, else on PATH; --ship-worker: unpacked into WORKDIR/local/worker;\n"
          "    logs and state in WORKDIR/local/\n",
  .init = local_init,
  .submit = local_submit,
  .poll = local_poll,
  .remove = local_remove,
  .fini = local_fini,
};
