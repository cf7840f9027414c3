/* sandbox.c — the bwrap command line of a task, the host's system layout
 * and the start-up probe (sandbox.h). Called by the runner (the argv) and
 * by cairn_worker_run (host and probe, once).
 */
#include "worker/sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* The top-level entries cairn__sandbox_host looks for. */
static const char *const sys_paths[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                        "/libx32"};

/* The files of /etc a program may need: the dynamic loader's cache and
 * configuration, alternatives (symlinks of /usr/bin lead there), users and
 * groups, name service and hosts, the time zone, TLS certificates. Bound
 * read-only where the host has them; nothing else of /etc (no shadow, no
 * keys, no service configuration). */
static const char *const etc_paths[] = {
  "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d", "/etc/alternatives",
  "/etc/passwd", "/etc/group", "/etc/nsswitch.conf", "/etc/host.conf", "/etc/hosts",
  "/etc/resolv.conf", "/etc/localtime", "/etc/timezone", "/etc/ssl", "/etc/ca-certificates",
  "/etc/os-release"};
#define NETC (sizeof etc_paths / sizeof etc_paths[0])

void cairn__sandbox_host(cairn__sandbox *sb) {
  sb->bwrap = CAIRN__BWRAP_PATH;
  sb->nsys = 0;
  for (size_t i = 0; i < sizeof sys_paths / sizeof sys_paths[0]; i++) {
    struct stat st;
    if (lstat(sys_paths[i], &st) != 0 || sb->nsys == CAIRN__SANDBOX_SYS_MAX)
      continue;
    cairn__sandbox_sys *s = &sb->sys[sb->nsys];
    snprintf(s->path, sizeof s->path, "%s", sys_paths[i]);
    s->link[0] = '\0';
    if (S_ISLNK(st.st_mode)) {
      ssize_t n = readlink(sys_paths[i], s->link, sizeof s->link - 1);
      if (n <= 0 || (size_t)n >= sizeof s->link - 1)
        continue; /* unreadable or too long a target: left out */
      s->link[n] = '\0';
    } else if (!S_ISDIR(st.st_mode))
      continue;
    sb->nsys++;
  }
}

int cairn__sandbox_network(const cairn__sandbox *sb, const cairn__sandbox_task *t) {
  return t->network && sb->allow_network;
}

/* 1 when path lies under one of the directories bound from the host
 * already (then the program needs no bind of its own). */
static int under_system(const cairn__sandbox *sb, const char *path) {
  for (size_t i = 0; i < sb->nsys; i++) {
    size_t n = strlen(sb->sys[i].path);
    if (!sb->sys[i].link[0] && strncmp(path, sb->sys[i].path, n) == 0 && path[n] == '/')
      return 1;
  }
  return 0;
}

static void add3(const char **v, size_t *n, const char *a, const char *b, const char *c) {
  v[(*n)++] = a;
  v[(*n)++] = b;
  if (c)
    v[(*n)++] = c;
}

const char **cairn__sandbox_argv(const cairn__sandbox *sb, const cairn__sandbox_task *t) {
  if (t->nro > CAIRN__SANDBOX_MAX_RO || sb->nbinds > CAIRN__SANDBOX_MAX_BINDS)
    return NULL;
  size_t cap = 36 + 3 * (sb->nsys + NETC + sb->nbinds + t->nro) + t->nargs;
  const char **v = calloc(cap, sizeof *v);
  size_t n = 0;
  if (!v)
    return NULL;
  v[n++] = sb->bwrap;
  v[n++] = "--die-with-parent";
  v[n++] = "--unshare-ipc";
  v[n++] = "--unshare-pid";
  v[n++] = "--as-pid-1"; /* PID 1 is the reaper below, which bwrap waits for */
  v[n++] = "--unshare-uts";
  v[n++] = "--unshare-cgroup-try";
  if (!cairn__sandbox_network(sb, t))
    v[n++] = "--unshare-net";
  add3(v, &n, "--cap-drop", "ALL", NULL);
  for (size_t i = 0; i < sb->nsys; i++)
    if (sb->sys[i].link[0])
      add3(v, &n, "--symlink", sb->sys[i].link, sb->sys[i].path);
    else
      add3(v, &n, "--ro-bind", sb->sys[i].path, sb->sys[i].path);
  for (size_t i = 0; i < NETC; i++)
    add3(v, &n, "--ro-bind-try", etc_paths[i], etc_paths[i]);
  add3(v, &n, "--proc", "/proc", NULL);
  add3(v, &n, "--dev", "/dev", NULL);
  /* no controlling terminal to reach: /dev/tty is /dev/null (sandbox.h) */
  add3(v, &n, "--dev-bind", "/dev/null", "/dev/tty");
  add3(v, &n, "--tmpfs", "/tmp", NULL); /* before any bind that may lie under /tmp */
  for (size_t i = 0; i < sb->nbinds; i++)
    add3(v, &n, sb->binds[i].rw ? "--bind" : "--ro-bind", sb->binds[i].path, sb->binds[i].path);
  for (size_t i = 0; i < t->nro; i++)
    add3(v, &n, "--ro-bind", t->ro[i], t->ro[i]);
  if (t->program[0] == '/' && !under_system(sb, t->program))
    add3(v, &n, "--ro-bind", t->program, t->program);
  add3(v, &n, "--bind", t->dir, t->dir);
  add3(v, &n, "--remount-ro", "/", NULL); /* the root and the mount points made in it */
  add3(v, &n, "--chdir", t->dir, NULL);
  v[n++] = "--";
  v[n++] = CAIRN__SANDBOX_REAPER;
  v[n++] = "-c";
  v[n++] = CAIRN__SANDBOX_REAPER_SCRIPT;
  v[n++] = t->program;
  for (size_t i = 0; i < t->nargs; i++)
    v[n++] = t->args[i];
  v[n] = NULL;
  return v;
}

/* The first line of what fd holds (at most cap - 1 bytes), without its
 * end of line. */
static void first_line(int fd, char *out, size_t cap) {
  size_t got = 0;
  ssize_t k;
  while (got + 1 < cap && (k = read(fd, out + got, cap - 1 - got)) != 0) {
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0)
      break;
    got += (size_t)k;
  }
  out[got] = '\0';
  out[strcspn(out, "\n")] = '\0';
}

int cairn__sandbox_probe(const cairn__sandbox *sb, const char *dir, char *why, size_t cap) {
  cairn__sandbox_task t = {.dir = dir, .program = "/bin/true"};
  const char **argv = cairn__sandbox_argv(sb, &t);
  int errp[2] = {-1, -1}, rc = -1, status = 0;
  posix_spawn_file_actions_t fa;
  char line[400] = "";
  if (!argv || pipe2(errp, O_CLOEXEC) != 0) {
    snprintf(why, cap, "cannot prepare the probe: %s", strerror(errno));
    free(argv);
    return -1;
  }
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, errp[1], 2);
  char *const envp[] = {"PATH=/usr/bin:/bin", NULL};
  pid_t pid;
  int e = posix_spawn(&pid, sb->bwrap, &fa, NULL, (char *const *)argv, envp);
  posix_spawn_file_actions_destroy(&fa);
  close(errp[1]);
  if (e != 0)
    snprintf(why, cap, "cannot run %s: %s", sb->bwrap, strerror(e));
  else {
    first_line(errp[0], line, sizeof line);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
      ;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0)
      rc = 0;
    else if (line[0])
      snprintf(why, cap, "%s", line);
    else
      snprintf(why, cap, "%s failed (status %d) without a message", sb->bwrap, status);
  }
  close(errp[0]);
  free(argv);
  return rc;
}
