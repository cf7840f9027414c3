/* cache.c — verified, content-addressed input files. */
#include "worker/cache.h"

#include <dirent.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/protocol.h"
#include "common/log.h"
#include "common/sha256.h"
#include "worker/fsutil.h"

#define TMP_PREFIX ".tmp-"

cairn_status cairn__cache_init(cairn__cache *c, const char *dir, cairn_error *err) {
  c->log = NULL; /* the caller sets it after */
  c->dir = strdup(dir);
  c->verified = cairn__verify_new();
  c->relay = cairn__relay_new(&c->log);
  atomic_init(&c->counter, 0);
  if (!c->dir || !c->verified || !c->relay)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status rc = cairn__mkdirs(dir, 0755, err);
  if (rc != CAIRN_OK)
    return rc;
  DIR *d = opendir(dir);
  if (!d)
    return cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", dir, strerror(errno));
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    /* Temp files of this pid are ours; others may belong to a live worker
     * sharing the cache, so only files of dead processes are removed. */
    long pid = 0;
    if (strncmp(e->d_name, TMP_PREFIX, strlen(TMP_PREFIX)) != 0)
      continue;
    if (sscanf(e->d_name + strlen(TMP_PREFIX), "%ld-", &pid) == 1 && pid > 0 &&
        kill((pid_t)pid, 0) != 0 && errno == ESRCH)
      unlinkat(dirfd(d), e->d_name, 0);
  }
  closedir(d);
  return CAIRN_OK;
}

void cairn__cache_destroy(cairn__cache *c) {
  free(c->dir);
  c->dir = NULL;
  cairn__verify_free(c->verified);
  c->verified = NULL;
  cairn__relay_free(c->relay);
  c->relay = NULL;
}

char *cairn__cache_path(const cairn__cache *c, const char *sha256) {
  return cairn__path_join(c->dir, sha256);
}

cairn_status cairn__cache_each(const cairn__cache *c, void (*fn)(void *ud, const char *sha256),
                               void *ud, cairn_error *err) {
  unsigned removed = 0;
  int dfd = open(c->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  int rc = dfd >= 0 ? cairn__verify_dir(c->verified, dfd, fn, ud, &removed) : -1;
  if (dfd >= 0)
    close(dfd);
  if (rc != 0)
    return cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", c->dir, strerror(errno));
  if (removed)
    CAIRN_WARN(c->log, "cache: %u files no longer held the bytes of their digest: removed",
               removed);
  return CAIRN_OK;
}

static cairn_status classify(cairn_status rc, long status, cairn_error *err) {
  if (rc == CAIRN_OK)
    return CAIRN_OK;
  if (rc == CAIRN_ETOOBIG || rc == CAIRN_EINVAL)  /* too many bytes, or wrong ones */
    return rc;
  if (status == 200)  /* the answer began but the transfer broke */
    return CAIRN_EIO;
  if (status == 404)
    return CAIRN_ENOTFOUND;
  if (status == 401 || status == 403)
    return CAIRN_EFORBIDDEN;
  if (status == 0 || status == 429 || status >= 500)
    return CAIRN_EIO;
  if (err)
    err->status = CAIRN_EINVAL;
  return CAIRN_EINVAL;
}

/* Removes path when it is still the file open as fd (not a good copy
 * renamed there since). */
static void drop_if_same(const char *path, int fd) {
  struct stat a, b;
  if (fstat(fd, &a) == 0 && lstat(path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    unlink(path);
}

/* 1 when the cached file path holds the bytes of sha256 (and size bytes
 * when size >= 0); a file that does not is removed. */
static int reuse(cairn__cache *c, const char *sha256, long long size, const char *path) {
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0)
    return 0;
  int v = cairn__verify_fd(c->verified, fd, sha256, size, NULL);
  if (v != CAIRN__VERIFY_OK) {
    CAIRN_WARN(c->log, "cache: %s no longer holds the bytes of its digest%s: removed, fetching "
               "again", path, size >= 0 ? " and size" : "");
    drop_if_same(path, fd);
  }
  close(fd);
  return v == CAIRN__VERIFY_OK;
}

static int observe(void *ud, const void *p, size_t n) { return cairn__relay_data(ud, p, n); }

/* Downloads url into tmp, registered in c->relay when chunks says how to
 * check it; *rejected when a chunk did not match. *in is the registration
 * (NULL: none), still to be ended by the caller. A registration carried
 * over from a broken download (*in set) goes on from its last checked
 * chunk, tmp kept up to there. */
static cairn_status download(cairn__cache *c, cairn__http *h, const char *sha256,
                             const char *url, const char *tmp, unsigned long long max,
                             const cairn__chunklist *chunks, cairn__relay_in **in,
                             long *status, cairn_error *err) {
  unsigned long long from = 0;
  if (*in) {
    from = cairn__relay_rewind(*in);
    if (from)
      CAIRN_INFO(c->log, "input %s: resuming at byte %llu (%llu checked chunks) from %s", sha256,
                 from, from / CAIRN_CHUNK_SIZE, url);
  } else if (chunks) { /* the file must exist before a relay may open it */
    FILE *f = fopen(tmp, "wb");
    if (f)
      fclose(f);
    *in = f ? cairn__relay_begin(c->relay, sha256, tmp, chunks) : NULL;
  }
  if (*in)
    cairn__http_set_observer(h, observe, *in);
  cairn_status rc = *in ? cairn__http_download_at(h, url, tmp, sha256, max, from, status, err)
                        : cairn__http_download(h, url, tmp, sha256, max, status, err);
  cairn__http_set_observer(h, NULL, NULL);
  return rc;
}

cairn_status cairn__cache_fetch(cairn__cache *c, cairn__http *h, const char *sha256,
                                long long size, const char *url, char **path, long *status,
                                int *reason, cairn_error *err) {
  return cairn__cache_fetch_chunked(c, h, sha256, size, url, NULL, NULL, path, status, reason,
                                    err);
}

void cairn__cache_partial_end(cairn__partial *part) {
  if (part->in) /* its relays end with an error */
    cairn__relay_end(part->in, 0);
  if (part->tmp)
    unlink(part->tmp);
  free(part->tmp);
  memset(part, 0, sizeof *part);
}

unsigned long long cairn__cache_partial_at(cairn__partial *part) {
  return part && part->in ? cairn__relay_rewind(part->in) : 0;
}

/* The temporary file of a download of sha256 (caller frees); NULL out of
 * memory. */
static char *tmp_name(cairn__cache *c, const char *sha256) {
  char *tmp = NULL;
  unsigned long n = atomic_fetch_add(&c->counter, 1);
  if (asprintf(&tmp, "%s/" TMP_PREFIX "%ld-%lu-%s", c->dir, (long)getpid(), n, sha256) < 0)
    return NULL;
  return tmp;
}

/* After a failed download into tmp registered as in: keeps both in part
 * when a chunk was checked (the next source goes on from there); else
 * ends in and removes tmp. */
static void keep_partial(cairn__partial *part, cairn__relay_in *in, char *tmp) {
  if (part && in && cairn__relay_rewind(in) > 0) {
    part->in = in;
    part->tmp = tmp;
    return;
  }
  if (in)
    cairn__relay_end(in, 0);
  if (part)
    memset(part, 0, sizeof *part);
  unlink(tmp);
  free(tmp);
}

cairn_status cairn__cache_fetch_chunked(cairn__cache *c, cairn__http *h, const char *sha256,
                                        long long size, const char *url,
                                        const cairn__chunklist *chunks, cairn__partial *part,
                                        char **path, long *status, int *reason,
                                        cairn_error *err) {
  char *final = NULL, *tmp = NULL;
  cairn__relay_in *in = NULL;
  cairn_status rc = CAIRN_OK;
  int fault = -1;
  *path = NULL;
  *status = 0;
  if (reason)
    *reason = -1;
  if (!cairn__sha256_valid_hex(sha256))
    return cairn__error_set(err, CAIRN_EINVAL, "not a sha256: %.80s", sha256);
  final = cairn__cache_path(c, sha256);
  if (!final)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  if (reuse(c, sha256, size, final)) {
    if (part)
      cairn__cache_partial_end(part);
    *path = final;
    return CAIRN_OK;
  }
  if (chunks && chunks->size != size)
    chunks = NULL; /* not this file's: checked whole, as without */
  if (part && part->in && chunks) { /* a broken copy goes on */
    in = part->in;
    tmp = part->tmp;
    memset(part, 0, sizeof *part);
  } else if (part) {
    cairn__cache_partial_end(part);
  }
  if (!tmp && !(tmp = tmp_name(c, sha256))) {
    rc = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    goto out;
  }
  if (size > (long long)CAIRN_MAX_FILE) {
    rc = cairn__error_set(err, CAIRN_ETOOBIG, "input %s: declared size %lld is over %llu bytes",
                         sha256, size, (unsigned long long)CAIRN_MAX_FILE);
    goto out;
  }
  unsigned long long max = size >= 0 ? (unsigned long long)size : CAIRN_MAX_FILE;
  rc = download(c, h, sha256, url, tmp, max, chunks, &in, status, err);
  unsigned long long received = 0;
  fault = cairn__http_download_fault(h, &received);
  /* a copy of the wrong length is "size", whatever its digest (a chunk
   * found wrong on the way is "digest") */
  if (fault == CAIRN_FAIL_DIGEST && size >= 0 && received != (unsigned long long)size &&
      !(rc == CAIRN_EINVAL && in && *status == 0))
    fault = CAIRN_FAIL_SIZE;
  rc = classify(rc, *status, err);
  if (rc != CAIRN_OK)
    goto out;
  long long got = cairn__file_size(tmp);
  if (size >= 0 && got != size) {
    rc = cairn__error_set(err, CAIRN_EINVAL, "GET %s: %lld bytes, expected %lld", url, got, size);
    fault = got >= 0 ? CAIRN_FAIL_SIZE : -1;
    goto out;
  }
  if (chmod(tmp, 0444) != 0 || rename(tmp, final) != 0) {
    rc = cairn__error_set(err, CAIRN_EIO, "cache: cannot store %s: %s", final, strerror(errno));
    goto out;
  }
  int fd = open(final, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd >= 0) {  /* hashed while it arrived, written by no one else */
    cairn__verify_record(c->verified, fd, sha256);
    close(fd);
  }
  CAIRN_DEBUG(c->log, "cache: stored %s (%lld bytes)", sha256, got);
  *path = final;
  final = NULL;
  if (in)
    cairn__relay_end(in, 1);
  in = NULL;
out:
  if (rc != CAIRN_OK && reason)
    *reason = fault;
  if (rc != CAIRN_OK && tmp) {
    /* a whole answer whose bytes were wrong is no start to go on from */
    int whole = (rc == CAIRN_EINVAL || rc == CAIRN_ETOOBIG) && *status == 200;
    keep_partial(whole ? NULL : part, in, tmp);
  } else {
    if (in) /* failed before the download: its relays end with an error */
      cairn__relay_end(in, 0);
    free(tmp);
  }
  free(final);
  return rc;
}

cairn_status cairn__cache_adopt(cairn__cache *c, const char *path, const char *sha256,
                                cairn_error *err) {
  char *final = cairn__cache_path(c, sha256);
  if (!final)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  struct stat st;
  cairn_status rc = CAIRN_OK;
  if (lstat(final, &st) == 0 && S_ISREG(st.st_mode))
    unlink(path); /* held already: a peer gets it after its check */
  else if (chmod(path, 0444) != 0 || rename(path, final) != 0)
    rc = cairn__error_set(err, CAIRN_EIO, "cannot keep %s in the cache: %s", path,
                         strerror(errno));
  else {
    /* the worker hashed it as it collected it: a peer gets it without a
     * second hash, until its stamp changes (verify.h) */
    int fd = open(final, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
      cairn__verify_record(c->verified, fd, sha256);
      close(fd);
    }
  }
  free(final);
  return rc;
}
