/* fsutil.c — mkdir -p, rm -rf, atomic writes, copies of input files. */
#include "worker/fsutil.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

char *cairn__path_join(const char *a, const char *b) {
  char *p = NULL;
  size_t n = strlen(a);
  const char *sep = n && a[n - 1] == '/' ? "" : "/";
  if (asprintf(&p, "%s%s%s", a, sep, b) < 0)
    return NULL;
  return p;
}

cairn_status cairn__mkdirs(const char *path, mode_t mode, cairn_error *err) {
  char *p = strdup(path);
  cairn_status rc = CAIRN_OK;
  if (!p)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (char *s = p + 1; rc == CAIRN_OK; s++) {
    int end = *s == '\0';
    if (*s != '/' && !end)
      continue;
    *s = '\0';
    if (mkdir(p, mode) != 0 && errno != EEXIST)
      rc = cairn__error_set(err, CAIRN_EIO, "cannot create directory %s: %s", p, strerror(errno));
    if (end)
      break;
    *s = '/';
  }
  if (rc == CAIRN_OK) {
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
      rc = cairn__error_set(err, CAIRN_EIO, "%s is not a directory", path);
  }
  free(p);
  return rc;
}

/* Removes everything inside the directory open as dfd (not dfd itself). */
static int remove_contents(int dfd);

/* Removes name (relative to dfd) and, for a directory, all it holds. */
static int remove_entry(int dfd, const char *name) {
  struct stat st;
  if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
    return errno == ENOENT ? 0 : -1;
  if (S_ISDIR(st.st_mode)) {
    if ((st.st_mode & S_IRWXU) != S_IRWXU)
      fchmodat(dfd, name, st.st_mode | S_IRWXU, 0);
    int sub = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0)
      return -1;
    int r = remove_contents(sub);
    close(sub);
    if (r != 0)
      return -1;
    return unlinkat(dfd, name, AT_REMOVEDIR) == 0 || errno == ENOENT ? 0 : -1;
  }
  return unlinkat(dfd, name, 0) == 0 || errno == ENOENT ? 0 : -1;
}

static int remove_contents(int dfd) {
  int dup_fd = dup(dfd);
  if (dup_fd < 0)
    return -1;
  DIR *d = fdopendir(dup_fd);
  if (!d) {
    close(dup_fd);
    return -1;
  }
  int rc = 0;
  struct dirent *e;
  for (e = readdir(d); e && rc == 0; e = readdir(d)) {
    if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
      continue;
    rc = remove_entry(dfd, e->d_name);
  }
  closedir(d);
  return rc;
}

int cairn__remove_at(int dfd, const char *name) { return remove_entry(dfd, name); }

cairn_status cairn__remove_tree(const char *path, cairn_error *err) {
  if (remove_entry(AT_FDCWD, path) != 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot remove %s: %s", path, strerror(errno));
  return CAIRN_OK;
}

static int write_all(int fd, const void *data, size_t len) {
  const char *p = data;
  while (len) {
    ssize_t k = write(fd, p, len);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    len -= (size_t)k;
  }
  return 0;
}

cairn_status cairn__write_file_atomic(const char *path, const void *data, size_t len,
                                      mode_t mode, cairn_error *err) {
  char *tmp = NULL;
  cairn_status rc = CAIRN_OK;
  if (asprintf(&tmp, "%s.tmp-%ld", path, (long)getpid()) < 0)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, mode);
  if (fd < 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cannot create %s: %s", tmp, strerror(errno));
    goto out;
  }
  /* open() honours the umask; the mode must be exact (0600 for secrets). */
  if (fchmod(fd, mode) != 0 || write_all(fd, data, len) != 0 || fsync(fd) != 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cannot write %s: %s", tmp, strerror(errno));
    close(fd);
    unlink(tmp);
    goto out;
  }
  if (close(fd) != 0 || rename(tmp, path) != 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cannot write %s: %s", path, strerror(errno));
    unlink(tmp);
  }
out:
  free(tmp);
  return rc;
}

cairn_status cairn__read_file(const char *path, size_t max, cairn__buf *out, cairn_error *err) {
  char chunk[8192];
  cairn__buf_init(out, max);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cairn__error_set(err, errno == ENOENT ? CAIRN_ENOTFOUND : CAIRN_EIO,
                           "cannot open %s: %s", path, strerror(errno));
  cairn_status rc = CAIRN_OK;
  for (;;) {
    ssize_t k = read(fd, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0) {
      rc = cairn__error_set(err, CAIRN_EIO, "cannot read %s: %s", path, strerror(errno));
      break;
    }
    if (k == 0)
      break;
    if (cairn__buf_append(out, chunk, (size_t)k) != 0) {
      rc = cairn__error_set(err, CAIRN_ETOOBIG, "%s is larger than %zu bytes", path, max);
      break;
    }
  }
  close(fd);
  if (rc != CAIRN_OK)
    cairn__buf_free(out);
  return rc;
}

/* Copies the rest of in to out: copy_file_range() (in the kernel), then
 * read/write when the file systems do not allow it. Returns 0 or -1. */
static int copy_fds(int in, int out) {
  char chunk[65536];
  for (;;) {
    ssize_t k = copy_file_range(in, NULL, out, NULL, 1u << 30, 0);
    if (k < 0 && errno == EINTR)
      continue;
    if (k == 0)
      return 0;
    if (k < 0)
      break;
  }
  if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
    return -1;
  for (;;) {
    ssize_t k = read(in, chunk, sizeof chunk);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return k == 0 ? 0 : -1;
    if (write_all(out, chunk, (size_t)k) != 0)
      return -1;
  }
}

cairn_status cairn__clone_or_copy(const char *src, const char *dst, cairn_error *err) {
  cairn_status rc = CAIRN_OK;
  if (unlink(dst) != 0 && errno != ENOENT)
    return cairn__error_set(err, CAIRN_EIO, "cannot replace %s: %s", dst, strerror(errno));
  int in = open(src, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in < 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", src, strerror(errno));
  int out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0444);
  if (out < 0) {
    close(in);
    return cairn__error_set(err, CAIRN_EIO, "cannot create %s: %s", dst, strerror(errno));
  }
  /* A reflink shares the blocks until either side is written (copy on write). */
  if (ioctl(out, FICLONE, in) != 0 && copy_fds(in, out) != 0)
    rc = cairn__error_set(err, CAIRN_EIO, "cannot copy %s to %s: %s", src, dst, strerror(errno));
  close(in);
  if (close(out) != 0 && rc == CAIRN_OK)
    rc = cairn__error_set(err, CAIRN_EIO, "cannot write %s: %s", dst, strerror(errno));
  if (rc != CAIRN_OK)
    unlink(dst);
  return rc;
}

long long cairn__file_size(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
    return -1;
  return (long long)st.st_size;
}
