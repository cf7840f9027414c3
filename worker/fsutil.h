/* fsutil.h — small file-system helpers for the worker's state directory.
 * Each returns CAIRN_OK or CAIRN_EIO with err naming the path and the reason.
 * Private to worker/.
 */
#ifndef CAIRN_FSUTIL_H
#define CAIRN_FSUTIL_H

#include <stddef.h>
#include <sys/types.h>

#include "common/buf.h"
#include "common/error.h"

/* mkdir -p path with the given mode for the directories it creates. */
cairn_status cairn__mkdirs(const char *path, mode_t mode, cairn_error *err);

/* rm -rf path (a missing path is fine). Symbolic links are removed, never
 * followed; directories without write or search permission are opened up
 * first so that whatever an app left behind can be removed. */
cairn_status cairn__remove_tree(const char *path, cairn_error *err);

/* Like cairn__remove_tree() for name relative to the directory open as dfd.
 * Returns 0, or -1 with errno set. */
int cairn__remove_at(int dfd, const char *name);

/* Writes len bytes to path atomically (temp file, fsync, rename) with mode. */
cairn_status cairn__write_file_atomic(const char *path, const void *data, size_t len,
                                      mode_t mode, cairn_error *err);

/* Reads the whole file into out (initialised here with cap max). */
cairn_status cairn__read_file(const char *path, size_t max, cairn__buf *out, cairn_error *err);

/* Makes dst (mode 0444) a file of its own with the bytes of src: a reflink
 * (ioctl FICLONE) where the file system shares blocks, else a copy. Never a
 * hard link, so that writing dst cannot change src. An existing dst is
 * replaced. */
cairn_status cairn__clone_or_copy(const char *src, const char *dst, cairn_error *err);

/* Size of the regular file at path, or -1 when it is missing or not a file. */
long long cairn__file_size(const char *path);

/* Joins a and b with one '/' into a new string (caller frees); NULL on OOM. */
char *cairn__path_join(const char *a, const char *b);

#endif
