/* files.c — the master's content-addressed file store: DB.files/<sha256>.
 * A file is on disk (fsync'd, renamed into place) before its row commits;
 * an output file uploaded under a lease gets its row only when a result
 * names it (uploads.h). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/limits.h"
#include "common/sha256.h"
#include "server/dist/chunks.h"
#include "server/api/api.h"
#include "server/core/uploads.h"

static int sync_dir(const char *dir) {
  int fd = open(dir, O_RDONLY | O_DIRECTORY);
  if (fd < 0)
    return -1;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

/* Checks the digest, fsyncs tmp_path and renames it into place with its
 * chunk digests; removes tmp_path on failure. */
static cairn_status place(cairn__core *c, const char *tmp_path, const char *want, const char *got,
                          int64_t size, cairn_error *err) {
  char final[4200];
  if (strcmp(want, got) != 0) {
    unlink(tmp_path);
    return cairn__error_set(err, CAIRN_EINVAL,
                           "sha256 mismatch: the URL names %s but the %lld bytes received hash "
                           "to %s", want, (long long)size, got);
  }
  snprintf(final, sizeof final, "%s/%s", cairn__core_files_dir(c), want);
  int fd = open(tmp_path, O_RDONLY);
  if (fd < 0 || fsync(fd) != 0) {
    if (fd >= 0)
      close(fd);
    unlink(tmp_path);
    return cairn__error_set(err, CAIRN_EIO, "cannot sync an upload: %s", strerror(errno));
  }
  close(fd);
  if (rename(tmp_path, final) != 0 || sync_dir(cairn__core_files_dir(c)) != 0) {
    unlink(tmp_path);
    return cairn__error_set(err, CAIRN_EIO, "cannot store %s: %s", want, strerror(errno));
  }
  (void)cairn__chunks_write(cairn__core_files_dir(c), want, size); /* else written when asked */
  return CAIRN_OK;
}

cairn_status cairn__files_commit(cairn__core *c, const char *tmp_path, const char *want,
                                 const char *got, int64_t size, int *existed, cairn_error *err) {
  char final[4200];
  cairn_status st = place(c, tmp_path, want, got, size, err);
  if (st != CAIRN_OK)
    return st;
  snprintf(final, sizeof final, "%s/%s", cairn__core_files_dir(c), want);
  st = cairn__core_add_file(c, want, size, existed, err);
  if (st == CAIRN_OK && access(final, F_OK) != 0) /* a job's deletion removed it meanwhile */
    st = cairn__error_set(err, CAIRN_ECONFLICT, "%s was removed with a deleted job as it "
                         "arrived; upload it again", want);
  return st;
}

cairn_status cairn__files_commit_output(cairn__core *c, const char *tmp_path, const char *want,
                                        const char *got, int64_t size, int64_t vol, int64_t idx,
                                        int *existed, cairn_error *err) {
  cairn_status st = place(c, tmp_path, want, got, size, err);
  return st == CAIRN_OK ? cairn__core_upload_stored(c, vol, idx, want, size, existed, err) : st;
}

cairn_status cairn__files_import(cairn__core *c, const char *path, char sha256[65], int64_t *size,
                                 cairn_error *err) {
  char tmp[4200];
  snprintf(tmp, sizeof tmp, "%s/.import-XXXXXX", cairn__core_files_dir(c));
  FILE *in = fopen(path, "rb");
  if (!in)
    return cairn__error_set(err, CAIRN_EINVAL, "cannot read %s: %s", path, strerror(errno));
  int fd = mkstemp(tmp);
  if (fd < 0) {
    fclose(in);
    return cairn__error_set(err, CAIRN_EIO, "cannot create a file in %s: %s", cairn__core_files_dir(c),
                           strerror(errno));
  }
  cairn__sha256 h;
  cairn__sha256_init(&h);
  char buf[65536];
  size_t n;
  int64_t total = 0;
  cairn_status st = CAIRN_OK;
  while ((n = fread(buf, 1, sizeof buf, in)) > 0) {
    cairn__sha256_update(&h, buf, n);
    total += (int64_t)n;
    if ((uint64_t)total > CAIRN_MAX_FILE) {
      st = cairn__error_set(err, CAIRN_ETOOBIG, "%s exceeds the file cap", path);
      break;
    }
    if (write(fd, buf, n) != (ssize_t)n) {
      st = cairn__error_set(err, CAIRN_EIO, "cannot copy %s: %s", path, strerror(errno));
      break;
    }
  }
  if (st == CAIRN_OK && ferror(in))
    st = cairn__error_set(err, CAIRN_EIO, "cannot read %s", path);
  fclose(in);
  close(fd);
  if (st != CAIRN_OK) {
    unlink(tmp);
    return st;
  }
  cairn__sha256_final_hex(&h, sha256);
  *size = total;
  int existed = 0;
  return cairn__files_commit(c, tmp, sha256, sha256, total, &existed, err);
}
