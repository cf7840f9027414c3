/* chunks.c — the chunk digests of stored files. */
#include "server/dist/chunks.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/protocol.h"
#include "common/sha256.h"

/* The lists, under the file store's folder (hidden: its listing is the
 * stored files). */
#define CHUNKS_DIR ".chunks"

/* Chunks of a file of size bytes. */
static size_t nchunks(int64_t size) {
  return size <= 0 ? 0 : (size_t)((size + CAIRN_CHUNK_SIZE - 1) / CAIRN_CHUNK_SIZE);
}

static int read_full(int fd, unsigned char *p, size_t n, off_t off) {
  while (n) {
    ssize_t k = pread(fd, p, n, off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
    off += k;
  }
  return 0;
}

static int write_full(int fd, const unsigned char *p, size_t n) {
  while (n) {
    ssize_t k = write(fd, p, n);
    if (k < 0 && errno == EINTR)
      continue;
    if (k <= 0)
      return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

/* The digests of dir/sha256 into out (nchunks(size) * 32 bytes). */
static int hash_chunks(const char *dir, const char *sha256, int64_t size, unsigned char *out) {
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", dir, sha256);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  unsigned char *buf = malloc(CAIRN_CHUNK_SIZE);
  int rc = fd >= 0 && buf ? 0 : -1;
  for (size_t i = 0; rc == 0 && i < nchunks(size); i++) {
    off_t off = (off_t)i * CAIRN_CHUNK_SIZE;
    size_t n = size - off < CAIRN_CHUNK_SIZE ? (size_t)(size - off) : CAIRN_CHUNK_SIZE;
    cairn__sha256 c;
    rc = read_full(fd, buf, n, off);
    cairn__sha256_init(&c);
    cairn__sha256_update(&c, buf, n);
    cairn__sha256_final(&c, out + 32 * i);
  }
  free(buf);
  if (fd >= 0)
    close(fd);
  return rc;
}

/* Writes n digests d to dir/.chunks/name (a temporary file renamed into
 * place; fsync'd first when sync). 0 or -1. */
static int store(const char *dir, const char *name, const unsigned char *d, size_t n, int sync) {
  char tmp[4300], final[4300], sub[4300];
  snprintf(tmp, sizeof tmp, "%s/" CHUNKS_DIR "/.tmp-XXXXXX", dir);
  snprintf(final, sizeof final, "%s/" CHUNKS_DIR "/%s", dir, name);
  snprintf(sub, sizeof sub, "%s/" CHUNKS_DIR, dir);
  if (mkdir(sub, 0755) != 0 && errno != EEXIST)
    return -1;
  int fd = mkstemp(tmp);
  if (fd < 0)
    return -1;
  int rc = write_full(fd, d, n * 32) || fchmod(fd, 0644) || (sync && fsync(fd)) ? -1 : 0;
  rc = close(fd) || rc ? -1 : 0;
  if (rc || rename(tmp, final) != 0) {
    unlink(tmp);
    rc = -1;
  }
  return rc;
}

/* Hashes and stores; the digests in out when not NULL. */
static int write_list(const char *dir, const char *sha256, int64_t size, unsigned char *out) {
  size_t n = nchunks(size);
  if (n > CAIRN_MAX_CHUNKS)
    return -1;
  unsigned char *d = out ? out : malloc(n * 32 + 1);
  int rc = d ? hash_chunks(dir, sha256, size, d) : -1;
  if (rc == 0)
    rc = store(dir, sha256, d, n, 0);
  if (!out)
    free(d);
  return rc;
}

int cairn__chunks_write(const char *dir, const char *sha256, int64_t size) {
  return write_list(dir, sha256, size, NULL);
}

/* Reads dir/.chunks/sha256 into out when it holds n digests. */
static int read_list(const char *dir, const char *sha256, size_t n, unsigned char *out) {
  char path[4300];
  snprintf(path, sizeof path, "%s/" CHUNKS_DIR "/%s", dir, sha256);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return -1;
  off_t end = lseek(fd, 0, SEEK_END);
  int rc = end == (off_t)(n * 32) ? read_full(fd, out, n * 32, 0) : -1;
  close(fd);
  return rc;
}

cairn_status cairn__chunks_json(const char *dir, const char *sha256, int64_t size, int kept,
                                char **body, size_t *len, cairn_error *err) {
  size_t n = nchunks(size);
  *body = NULL;
  *len = 0;
  if (n > CAIRN_MAX_CHUNKS)
    return cairn__error_set(err, CAIRN_EIO, "file %s has more than %u chunks", sha256,
                           CAIRN_MAX_CHUNKS);
  unsigned char *d = malloc(n * 32 + 1);
  char *out = malloc(n * 67 + 256);
  if (!d || !out) {
    free(d);
    free(out);
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  }
  if (read_list(dir, sha256, n, d) != 0 && (kept || write_list(dir, sha256, size, d) != 0)) {
    free(d);
    free(out);
    if (kept)
      return cairn__error_set(err, CAIRN_ENOTFOUND, "the producer of file %s (kept on workers) "
                             "reported no chunk digests", sha256);
    return cairn__error_set(err, CAIRN_EIO, "file %s is recorded but cannot be read", sha256);
  }
  size_t k = (size_t)sprintf(out, "{\"sha256\":\"%s\",\"size\":%lld,\"chunk_size\":%u,"
                             "\"chunks\":[", sha256, (long long)size, CAIRN_CHUNK_SIZE);
  for (size_t i = 0; i < n; i++) {
    out[k++] = i ? ',' : '"';
    if (i)
      out[k++] = '"';
    for (size_t b = 0; b < 32; b++)
      k += (size_t)sprintf(out + k, "%02x", d[32 * i + b]);
    out[k++] = '"';
  }
  k += (size_t)sprintf(out + k, "]}");
  free(d);
  *body = out;
  *len = k;
  return CAIRN_OK;
}

void cairn__chunks_remove(const char *dir, const char *sha256) {
  char path[4300];
  snprintf(path, sizeof path, "%s/" CHUNKS_DIR "/%s", dir, sha256);
  unlink(path);
}

int cairn__chunks_put_kept(const char *dir, const char *sha256, int64_t vol,
                           const unsigned char *d, size_t n) {
  char name[96];
  snprintf(name, sizeof name, "%s.%lld", sha256, (long long)vol);
  return store(dir, name, d, n, 1);
}

int cairn__chunks_settle(const char *dir, const char *sha256, int64_t vol, int accepted) {
  char path[4300], final[4300];
  snprintf(path, sizeof path, "%s/" CHUNKS_DIR "/%s.%lld", dir, sha256, (long long)vol);
  snprintf(final, sizeof final, "%s/" CHUNKS_DIR "/%s", dir, sha256);
  if (accepted && rename(path, final) == 0)
    return 1;
  if (accepted)
    unlink(final); /* an earlier result's list is not this one's: none is served */
  unlink(path);
  return 0;
}
