/* enforce.c — cgroup v2 memory limits, task directory sizes, peak address
 * space and resident memory (see enforce.h). Every function is bounded: one cgroup of a few
 * files, a walk capped in entries and depth, one /proc file. */
#include "worker/enforce.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CGROUP_ROOT "/sys/fs/cgroup"

/* Writes text to path; 0 or -1. */
static int write_file(const char *path, const char *text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* Reads up to len - 1 bytes of path into buf; 0 or -1. */
static int read_file(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n < 0)
    return -1;
  buf[n] = '\0';
  return 0;
}

/* 1 when word is one of the space-separated words of list. */
static int has_word(const char *list, const char *word) {
  size_t n = strlen(word);
  for (const char *p = list; (p = strstr(p, word)) != NULL; p += n)
    if ((p == list || p[-1] == ' ') && (p[n] == ' ' || p[n] == '\n' || p[n] == '\0'))
      return 1;
  return 0;
}

int cairn__memcg_create(cairn__memcg *m, const char *name, uint64_t bytes, char *why,
                        size_t whylen) {
  char self[4096], parent[512], path[600], buf[512];
  m->procs_fd = -1;
  m->dir[0] = '\0';
  const char *rel = NULL;
  char *save = NULL;
  if (read_file("/proc/self/cgroup", self, sizeof self) == 0)
    for (char *line = strtok_r(self, "\n", &save); line; line = strtok_r(NULL, "\n", &save))
      if (strncmp(line, "0::", 3) == 0)
        rel = line + 3;
  if (!rel || access(CGROUP_ROOT "/cgroup.controllers", F_OK) != 0) {
    snprintf(why, whylen, "no cgroup v2 here");
    return -1;
  }
  snprintf(parent, sizeof parent, CGROUP_ROOT "%s", strcmp(rel, "/") == 0 ? "" : rel);
  snprintf(path, sizeof path, "%s/cgroup.subtree_control", parent);
  if (read_file(path, buf, sizeof buf) != 0 ||
      (!has_word(buf, "memory") && write_file(path, "+memory") != 0)) {
    snprintf(why, whylen, "cannot enable the memory controller in %.200s: %s", parent,
             strerror(errno));
    return -1;
  }
  if (snprintf(m->dir, sizeof m->dir, "%s/%s", parent, name) >= (int)sizeof m->dir ||
      (mkdir(m->dir, 0700) != 0 && errno != EEXIST)) {
    snprintf(why, whylen, "cannot create a cgroup in %.200s: %s", parent, strerror(errno));
    m->dir[0] = '\0';
    return -1;
  }
  snprintf(buf, sizeof buf, "%llu", (unsigned long long)bytes);
  snprintf(path, sizeof path, "%s/memory.max", m->dir);
  if (write_file(path, buf) != 0) {
    snprintf(why, whylen, "cannot set memory.max: %s", strerror(errno));
    cairn__memcg_destroy(m);
    return -1;
  }
  snprintf(path, sizeof path, "%s/memory.swap.max", m->dir);
  write_file(path, "0"); /* absent without swap accounting: fine */
  snprintf(path, sizeof path, "%s/cgroup.procs", m->dir);
  m->procs_fd = open(path, O_WRONLY | O_CLOEXEC);
  if (m->procs_fd < 0) {
    snprintf(why, whylen, "cannot open %.200s: %s", path, strerror(errno));
    cairn__memcg_destroy(m);
    return -1;
  }
  return 0;
}

int cairn__memcg_oom_killed(const cairn__memcg *m) {
  char path[600], buf[1024];
  if (!m->dir[0])
    return 0;
  snprintf(path, sizeof path, "%s/memory.events", m->dir);
  if (read_file(path, buf, sizeof buf) != 0)
    return 0;
  const char *k = strstr(buf, "oom_kill ");
  return k && atol(k + 9) > 0;
}

uint64_t cairn__memcg_peak(const cairn__memcg *m) {
  char path[600], buf[64];
  if (!m->dir[0])
    return 0;
  snprintf(path, sizeof path, "%s/memory.peak", m->dir);
  return read_file(path, buf, sizeof buf) == 0 ? (uint64_t)strtoull(buf, NULL, 10) : 0;
}

void cairn__memcg_destroy(cairn__memcg *m) {
  char path[600];
  if (m->procs_fd >= 0)
    close(m->procs_fd);
  m->procs_fd = -1;
  if (!m->dir[0])
    return;
  snprintf(path, sizeof path, "%s/cgroup.kill", m->dir);
  write_file(path, "1");
  for (int i = 0; i < 50 && rmdir(m->dir) != 0 && errno == EBUSY; i++)
    usleep(2000); /* the killed processes are leaving */
  m->dir[0] = '\0';
}

static uint64_t usage_at(int dirfd, size_t *left, int depth) {
  uint64_t sum = 0;
  DIR *d = fdopendir(dirfd);
  if (!d) {
    close(dirfd);
    return 0;
  }
  struct dirent *e;
  while (*left && (e = readdir(d)) != NULL) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    struct stat st;
    (*left)--;
    if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0)
      continue;
    sum += (uint64_t)st.st_blocks * 512u;
    if (S_ISDIR(st.st_mode) && depth < 64) {
      int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub >= 0)
        sum += usage_at(sub, left, depth + 1);
    }
  }
  closedir(d);
  return sum;
}

uint64_t cairn__dir_usage(const char *dir, size_t max_entries) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  return fd < 0 ? 0 : usage_at(fd, &max_entries, 0);
}

/* The value of field ("VmPeak:", "VmHWM:") of /proc/PID/status (PID 0:
 * self), in bytes; 0 when unknown. */
static uint64_t status_kib(pid_t pid, const char *field) {
  char path[64], buf[4096];
  if (pid)
    snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
  else
    snprintf(path, sizeof path, "/proc/self/status");
  if (read_file(path, buf, sizeof buf) != 0)
    return 0;
  const char *p = strstr(buf, field);
  return p ? (uint64_t)strtoull(p + strlen(field), NULL, 10) * 1024u : 0;
}

uint64_t cairn__vm_peak(pid_t pid) { return status_kib(pid, "VmPeak:"); }
uint64_t cairn__self_rss_peak(void) { return status_kib(0, "VmHWM:"); }

/* Folds field of pid into *acc (the largest, or with sum their sum), then
 * its children's while depth and *budget last. */
static void peak_walk(pid_t pid, int depth, int *budget, const char *field, int sum,
                      uint64_t *acc) {
  char path[80], buf[1024];
  if ((*budget)-- <= 0)
    return;
  uint64_t p = status_kib(pid, field);
  if (sum)
    *acc += p;
  else if (p > *acc)
    *acc = p;
  snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)pid, (int)pid);
  if (depth <= 0 || read_file(path, buf, sizeof buf) != 0)
    return;
  char *save = NULL;
  for (char *w = strtok_r(buf, " \n", &save); w; w = strtok_r(NULL, " \n", &save))
    peak_walk((pid_t)atoi(w), depth - 1, budget, field, sum, acc);
}

uint64_t cairn__vm_peak_tree(pid_t pid) {
  uint64_t peak = 0;
  int budget = 64;
  peak_walk(pid, 4, &budget, "VmPeak:", 0, &peak);
  return peak;
}

uint64_t cairn__rss_peak_tree(pid_t pid) {
  uint64_t sum = 0;
  int budget = 64;
  peak_walk(pid, 4, &budget, "VmHWM:", 1, &sum);
  return sum;
}
