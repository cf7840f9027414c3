/* launch_util.c — what every `cairn launch` backend shares (launch.h): the
 * worker's command line, shell quoting, running a command with a timeout,
 * unpacking a worker tarball. */
#include "cli/launch.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Copies the printf result into buf at *used; NULL when it does not fit. */
__attribute__((format(printf, 4, 5))) static const char *put(char *buf, size_t size, size_t *used, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf + *used, size - *used, fmt, ap);
  va_end(ap);
  if (n < 0 || (size_t)n >= size - *used)
    return NULL;
  const char *s = buf + *used;
  *used += (size_t)n + 1;
  return s;
}

int cairn__launch_worker_argv(const cairn__launch_spec *spec, const char *cluster,
                             const char *dir, const char *invitation, const char **argv, int cap,
                             char *buf, size_t bufsize) {
  const char *a[32];
  int n = 0;
  size_t used = 0;
  a[n++] = spec->worker_path;
  a[n++] = "--server";
  a[n++] = spec->server;
  if (!cluster)
    cluster = spec->cluster;
  if (cluster && *cluster) {
    a[n++] = "--cluster";
    a[n++] = cluster;
  }
  if (spec->cores > 0) {
    a[n++] = "--cores";
    if (!(a[n++] = put(buf, bufsize, &used, "%d", spec->cores)))
      return -1;
  }
  if (spec->memory_mib > 0) {
    a[n++] = "--memory";
    if (!(a[n++] = put(buf, bufsize, &used, "%lld", spec->memory_mib)))
      return -1;
  }
  if (spec->slots > 0) {
    a[n++] = "--slots";
    if (!(a[n++] = put(buf, bufsize, &used, "%d", spec->slots)))
      return -1;
  }
  if (spec->idle_exit > 0) {
    a[n++] = "--exit-when-idle";
    if (!(a[n++] = put(buf, bufsize, &used, "%g", spec->idle_exit)))
      return -1;
  }
  if (dir) {
    a[n++] = "--dir";
    a[n++] = dir;
  }
  if (invitation) {
    a[n++] = "--invitation-file";
    a[n++] = invitation;
  }
  int k = 0;
  for (int i = 0; i < n; i++) {
    if (k + 1 >= cap)
      return -1;
    argv[k++] = a[i];
  }
  for (int i = 0; spec->worker_args[i]; i++) {
    if (k + 1 >= cap)
      return -1;
    argv[k++] = spec->worker_args[i];
  }
  argv[k] = NULL;
  return k;
}

int cairn__launch_shell_quote(char *out, size_t outsize, const char *s) {
  size_t len = strlen(out), need = 2;
  for (const char *p = s; *p; p++)
    need += *p == '\'' ? 4 : 1;
  if (len + need + 1 > outsize)
    return -1;
  char *o = out + len;
  *o++ = '\'';
  for (const char *p = s; *p; p++) {
    if (*p == '\'') {
      memcpy(o, "'\\''", 4);
      o += 4;
    } else
      *o++ = *p;
  }
  *o++ = '\'';
  *o = '\0';
  return 0;
}

static double mono(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Feeds in to fd_in and drains fd_out until both are done or the deadline
 * passes. 0, or -1 on timeout. */
static int pump(int fd_in, const char *in, size_t inlen, int fd_out, char *out, size_t outsize,
                double deadline) {
  size_t sent = 0, got = 0;
  if (fd_in >= 0 && inlen == 0) {
    close(fd_in);
    fd_in = -1;
  }
  while (fd_in >= 0 || fd_out >= 0) {
    struct pollfd p[2] = {{fd_in, POLLOUT, 0}, {fd_out, POLLIN, 0}};
    double left = deadline - mono();
    if (left <= 0)
      break;
    if (poll(p, 2, (int)(left * 1000) + 1) < 0 && errno != EINTR)
      break;
    if (fd_in >= 0 && (p[0].revents & (POLLOUT | POLLERR | POLLHUP))) {
      ssize_t w = write(fd_in, in + sent, inlen - sent);
      if (w > 0)
        sent += (size_t)w;
      if (w < 0 || sent == inlen) {
        close(fd_in);
        fd_in = -1;
      }
    }
    if (fd_out >= 0 && (p[1].revents & (POLLIN | POLLERR | POLLHUP))) {
      char tmp[4096];
      ssize_t r = read(fd_out, tmp, sizeof tmp);
      if (r <= 0) {
        close(fd_out);
        fd_out = -1;
      } else if (out && got + 1 < outsize) {
        size_t k = (size_t)r < outsize - 1 - got ? (size_t)r : outsize - 1 - got;
        memcpy(out + got, tmp, k);
        got += k;
      }
    }
  }
  if (out && outsize)
    out[got] = '\0';
  int timed_out = fd_in >= 0 || fd_out >= 0;
  if (fd_in >= 0)
    close(fd_in);
  if (fd_out >= 0)
    close(fd_out);
  return timed_out ? -1 : 0;
}

/* This process's environment without CAIRN_ADMIN_TOKEN (malloc'd array of
 * environ's own strings), or NULL when out of memory. */
static char **env_without_token(void) {
  size_t n = 0;
  while (environ[n])
    n++;
  char **env = malloc((n + 1) * sizeof *env);
  size_t k = 0;
  for (size_t i = 0; env && i < n; i++)
    if (strncmp(environ[i], "CAIRN_ADMIN_TOKEN=", 18) != 0)
      env[k++] = environ[i];
  if (env)
    env[k] = NULL;
  return env;
}

int cairn__launch_run(const char *const *argv, const char *in, size_t inlen, char *out,
                     size_t outsize, double timeout_s) {
  int pin[2], pout[2];
  if (out && outsize)
    out[0] = '\0';
  /* The admin token never reaches a command (sbatch would copy it into the
   * job's environment, kept by the batch system and given to the worker). */
  char **env = env_without_token();
  if (!env)
    return -1;
  if (pipe2(pin, O_CLOEXEC)) {
    free(env);
    return -1;
  }
  if (pipe2(pout, O_CLOEXEC)) {
    close(pin[0]);
    close(pin[1]);
    free(env);
    return -1;
  }
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pin[0], 0);
    dup2(pout[1], 1);
    close_range(3, ~0u, 0);
    signal(SIGPIPE, SIG_DFL);
    execvpe(argv[0], (char *const *)argv, env);
    _exit(127);
  }
  free(env);
  close(pin[0]);
  close(pout[1]);
  if (pid < 0) {
    close(pin[1]);
    close(pout[0]);
    return -1;
  }
  double deadline = mono() + timeout_s;
  int timed_out = pump(pin[1], in, in ? inlen : 0, pout[0], out, outsize, deadline);
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (timed_out || mono() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    struct timespec ts = {0, 10 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

/* Seconds `tar` may take to unpack a worker tarball. */
#define UNPACK_TIMEOUT 120.0

int cairn__launch_unpack_worker(const char *tarball, const char *dir, char *worker, size_t size,
                               char *err, size_t errlen) {
  char abs[PATH_MAX];
  if (access(tarball, R_OK))
    return snprintf(err, errlen, "cannot read --ship-worker %s: %s", tarball, strerror(errno)),
           -1;
  if (mkdir(dir, 0700) && errno != EEXIST)
    return snprintf(err, errlen, "cannot create %s: %s", dir, strerror(errno)), -1;
  const char *argv[] = {"tar", "-xzf", tarball, "-C", dir, "--strip-components=1",
                        "--no-same-owner", NULL};
  int rc = cairn__launch_run(argv, NULL, 0, NULL, 0, UNPACK_TIMEOUT);
  if (rc != 0)
    return snprintf(err, errlen, "tar could not unpack %s into %s (%s)", tarball, dir,
                    rc < 0 ? "failed or timed out" : "see above"),
           -1;
  if (!realpath(dir, abs) || strlen(abs) + sizeof "/bin/cairn-worker" > size)
    return snprintf(err, errlen, "cannot resolve %s", dir), -1;
  snprintf(worker, size, "%s/bin/cairn-worker", abs);
  if (access(worker, X_OK))
    return snprintf(err, errlen, "%s holds no bin/cairn-worker (a worker tarball has one top "
                    "folder with bin/ and lib/)", tarball),
           -1;
  return 0;
}
