/* verify.h — which cache files were found to match their digest since they
 * last changed (docs/worker.md, "Cache integrity").
 *
 * A table maps a digest to the stamp its file had when its bytes were last
 * hashed and found right: device, inode, size, mtime and ctime (ns). Every
 * write to a file, by any user (root included) and through any of its
 * links, sets its ctime to the current time, and no system call sets a
 * ctime to a chosen value; so a file whose stamp is unchanged was not
 * written since it was hashed. Timestamps are taken from a coarse clock: a
 * write in the same tick as the hash could leave ctime unchanged, so a stamp
 * is trusted only when its ctime is older than the hash by VERIFY_SETTLE_MS
 * (a newer file is hashed again at each check until it has settled).
 *
 * The worker's cache owns its table; its peer server borrows it (a file the
 * cache stored is served without a second hash). Thread-safe (one mutex).
 * Private to worker/.
 */
#ifndef CAIRN_VERIFY_H
#define CAIRN_VERIFY_H

typedef struct cairn__verify cairn__verify;

/* Outcome of a check. */
enum {
  CAIRN__VERIFY_OK = 0,        /* the file holds the bytes of its digest */
  CAIRN__VERIFY_MISMATCH = 1,  /* wrong size, wrong digest, or changed while hashed */
  CAIRN__VERIFY_ERROR = -1,    /* could not be read (or out of memory) */
};

/* A new, empty table, or NULL on OOM. */
cairn__verify *cairn__verify_new(void);
/* Frees the table. Accepts NULL. */
void cairn__verify_free(cairn__verify *v);

/* Checks that the regular file open as fd holds the bytes of sha256 (64
 * lowercase hex digits), and size bytes when size >= 0: at once when its
 * stamp is the one recorded at its last successful hash, else by hashing
 * it from its start (pread; fd's offset is not moved). A failed check
 * forgets the file. Returns a CAIRN__VERIFY_* value; *hashed (may be NULL)
 * is set to 1 when the file was hashed now. */
int cairn__verify_fd(cairn__verify *v, int fd, const char *sha256, long long size, int *hashed);

/* Records the stamp of the file open as fd as verified for sha256 without
 * hashing it: for a file whose bytes the caller has just hashed itself and
 * that nobody else could write since (a cache file just renamed into place
 * from the caller's own verified download). */
void cairn__verify_record(cairn__verify *v, int fd, const char *sha256);

/* Checks every file of the directory open as dfd whose name is a sha256
 * (as cairn__verify_fd() does, size unknown): one that does not hold the
 * bytes of its name is removed (counted in *removed), fn(ud, sha256) is
 * called for each that does (fn may be NULL). Returns 0, or -1 when the
 * directory cannot be read. */
int cairn__verify_dir(cairn__verify *v, int dfd, void (*fn)(void *ud, const char *sha256),
                      void *ud, unsigned *removed);

/* Forgets sha256 (its file was removed or replaced). */
void cairn__verify_forget(cairn__verify *v, const char *sha256);

#endif
