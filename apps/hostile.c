/* hostile.c — cairn-app-hostile: a task that tries to get out of its task
 * directory (tests/security/test_sandbox.c runs it in and out of the
 * worker's sandbox). Prints one line per attempt, "NAME: ok ..." when it
 * got what it tried, "NAME: denied ..." (with errno) when it did not; exits 0.
 *
 *   probe CRED HOMEFILE OUTSIDE PORT PID SUID
 *     read_credentials  read CRED (the worker's credentials.json)
 *     read_home         read HOMEFILE (a file in the worker's $HOME)
 *     write_outside     create OUTSIDE (a new file next to CRED)
 *     connect_master    TCP connect to 127.0.0.1:PORT (the master)
 *     list_processes    find PID among /proc's entries
 *     signal_process    send SIGTERM to PID
 *     setuid            run SUID (a setuid-root cairn-app-euid copy), read
 *                       the effective uid it reports
 *   connect PORT        connect_master alone
 */
#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

static void report(const char *what, int ok, int err, const char *detail) {
  if (ok)
    printf("%s: ok%s%s\n", what, detail ? " " : "", detail ? detail : "");
  else
    printf("%s: denied errno %d (%s)%s%s\n", what, err, strerror(err), detail ? " " : "",
           detail ? detail : "");
  fflush(stdout);
}

static void try_read(const char *what, const char *path) {
  char buf[64];
  int fd = open(path, O_RDONLY);
  ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
  int e = errno;
  if (fd >= 0)
    close(fd);
  report(what, n > 0, n == 0 ? EIO : e, NULL);
}

static void try_write(const char *path) {
  int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0644);
  int e = errno, ok = fd >= 0 && write(fd, "planted\n", 8) == 8;
  if (fd >= 0)
    close(fd);
  report("write_outside", ok, e, NULL);
}

static void try_connect(const char *port) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  int ok = s >= 0 && connect(s, (struct sockaddr *)&a, sizeof a) == 0;
  int e = errno;
  if (s >= 0)
    close(s);
  report("connect_master", ok, e, NULL);
}

static void try_list(const char *pid) {
  DIR *d = opendir("/proc");
  struct dirent *ent;
  int seen = 0, n = 0, e = errno;
  while (d && (ent = readdir(d)) != NULL)
    if (ent->d_name[0] >= '1' && ent->d_name[0] <= '9') {
      n++;
      seen |= strcmp(ent->d_name, pid) == 0;
    }
  if (d)
    closedir(d);
  char detail[64];
  snprintf(detail, sizeof detail, "(%d processes visible)", n);
  report("list_processes", seen, d ? ESRCH : e, detail);
}

static void try_signal(const char *pid) {
  int ok = kill((pid_t)atol(pid), SIGTERM) == 0;
  report("signal_process", ok, errno, NULL);
}

static void try_setuid(const char *suid) {
  int p[2];
  char out[128] = "";
  if (pipe(p) != 0)
    return report("setuid", 0, errno, NULL);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(p[1], 1);
    close(p[0]);
    execl(suid, suid, (char *)NULL);
    _exit(127);
  }
  close(p[1]);
  ssize_t n = pid > 0 ? read(p[0], out, sizeof out - 1) : -1;
  int e = errno;
  close(p[0]);
  if (pid > 0)
    waitpid(pid, NULL, 0);
  out[n > 0 ? n : 0] = '\0';
  out[strcspn(out, "\n")] = '\0';
  long euid = -1;
  if (sscanf(out, "euid %ld", &euid) != 1)
    return report("setuid", 0, n < 0 ? e : ENOEXEC, NULL);
  char detail[160];
  snprintf(detail, sizeof detail, "(%s)", out);
  report("setuid", euid == 0, EPERM, detail);
}

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "connect") == 0) {
    try_connect(argv[2]);
    return 0;
  }
  if (argc != 8 || strcmp(argv[1], "probe") != 0) {
    fputs("usage: cairn-app-hostile probe CRED HOMEFILE OUTSIDE PORT PID SUID | connect PORT\n",
          stderr);
    return 2;
  }
  try_read("read_credentials", argv[2]);
  try_read("read_home", argv[3]);
  try_write(argv[4]);
  try_connect(argv[5]);
  try_list(argv[6]);
  try_signal(argv[6]);
  try_setuid(argv[7]);
  return 0;
}
