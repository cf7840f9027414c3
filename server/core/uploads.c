/* uploads.c — output files uploaded under a lease that no result claimed
 * yet (uploads.h): held in memory per lease and in c->uploads, removed from
 * DB.files/ when their last lease ends unclaimed, and swept at start-up.
 * Functions documented "under c->lock" run inside the core's lock; their
 * bounds are stated in uploads.h. */
#include "server/core/uploads.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/outputs.h"
#include "common/sha256.h"
#include "server/dist/chunks.h"
#include "server/dist/dist.h"

/* The entry of sha256 in c->uploads, or NULL (a key collision is NULL). */
static cairn__upl *entry(cairn__core *c, const char *sha256) {
  cairn__upl *e = cairn__hmap_get(&c->uploads, cairn__hash_key(sha256));
  return e && strcmp(e->sha256, sha256) == 0 ? e : NULL;
}

/* 1 when the master records sha256 with its bytes (a `files` row not kept
 * on workers only): the store decides when that goes (job deletion). */
static int recorded(cairn__core *c, const char *sha256) {
  return cairn__dist_has_file(c->dist, sha256, NULL) && !cairn__dist_remote(c->dist, sha256);
}

/* Removes DB.files/sha256 and its chunk digests when no lease holds it and
 * the master does not record it; adds size to the reclaimed counts then.
 * Two unlinks. */
static void reclaim(cairn__core *c, const char *sha256, int64_t size) {
  if (entry(c, sha256) || recorded(c, sha256))
    return;
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", c->files_dir, sha256);
  if (unlink(path) == 0) {
    c->uploads_reclaimed++;
    c->upload_bytes_reclaimed += size > 0 ? (uint64_t)size : 0;
  } else if (errno != ENOENT)
    CAIRN_WARN(&c->log, "cannot remove the unclaimed upload %s: %s", path, strerror(errno));
  cairn__chunks_remove(c->files_dir, sha256);
}

/* Drops one lease's hold of sha256; reclaims it when that was the last. */
static void release(cairn__core *c, const char *sha256) {
  cairn__upl *e = entry(c, sha256);
  if (!e)
    return;
  int64_t size = e->size;
  if (--e->refs == 0) {
    cairn__hmap_del(&c->uploads, cairn__hash_key(sha256));
    c->upload_bytes -= size;
    free(e);
    reclaim(c, sha256, size);
  }
}

/* Adds sha256 (size) to l's list and c->uploads. 0, 1 when l held it
 * already, -1 out of memory or on a key collision. */
static int hold(cairn__core *c, mlease *l, const char *sha256, int64_t size) {
  for (uint32_t i = 0; i < l->nup; i++)
    if (strcmp(l->up[i], sha256) == 0)
      return 1;
  cairn__upl *e = entry(c, sha256);
  if (!e && cairn__hmap_get(&c->uploads, cairn__hash_key(sha256)))
    return -1; /* another file's key */
  char(*n)[65] = realloc(l->up, (l->nup + 1) * sizeof *n); /* nup <= out_files <= 256 */
  if (!n)
    return -1;
  l->up = n;
  if (!e) {
    if (!(e = calloc(1, sizeof *e)))
      return -1;
    snprintf(e->sha256, sizeof e->sha256, "%s", sha256);
    e->size = size;
    if (cairn__hmap_put(&c->uploads, cairn__hash_key(sha256), e)) {
      free(e);
      return -1;
    }
    c->upload_bytes += size;
  }
  e->refs++;
  e->orphan = 0; /* a lease holds it now */
  snprintf(l->up[l->nup++], 65, "%s", sha256);
  return 0;
}

cairn_status cairn__core_upload_stored(cairn__core *c, int64_t vol, int64_t idx,
                                       const char *sha256, int64_t size, int *existed,
                                       cairn_error *err) {
  cairn_status st = CAIRN_OK;
  char path[4200];
  struct stat sb;
  snprintf(path, sizeof path, "%s/%s", c->files_dir, sha256);
  pthread_mutex_lock(&c->lock);
  mlease *l = idx > 0 ? cairn__hmap_get(&c->leases, (uint64_t)idx) : NULL;
  *existed = recorded(c, sha256) || entry(c, sha256);
  if (!l || l->vol->id != vol) {
    st = cairn__error_set(err, CAIRN_ECONFLICT, "the lease of index %lld ended during the "
                         "upload: %s is not kept", (long long)idx, sha256);
    reclaim(c, sha256, size);
  } else if (stat(path, &sb) != 0) { /* under the lock: nothing reclaims a held file */
    st = cairn__error_set(err, CAIRN_ECONFLICT, "%s was removed as it arrived; upload it again",
                         sha256);
    reclaim(c, sha256, 0);
  } else {
    int h = hold(c, l, sha256, size);
    if (h < 0) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory holding the upload %s", sha256);
      reclaim(c, sha256, size);
    }
    *existed = *existed || h == 1;
  }
  cairn__core_unlock(c);
  return st;
}

void cairn__uploads_lease_end(cairn__core *c, mlease *l) {
  mvol *v = l->vol;
  v->up_bytes = v->up_bytes > l->out_bytes ? v->up_bytes - l->out_bytes : 0;
  for (uint32_t i = 0; i < l->nup; i++)
    release(c, l->up[i]);
  free(l->up);
  l->up = NULL;
  l->nup = 0;
}

int64_t cairn__uploads_of(cairn__core *c, const mlease *l, const char *sha256) {
  for (uint32_t i = 0; i < l->nup; i++)
    if (strcmp(l->up[i], sha256) == 0) {
      const cairn__upl *e = entry(c, sha256);
      return e ? e->size : -1;
    }
  const cairn__upl *e = entry(c, sha256); /* an upload a restart interrupted */
  return e && e->orphan ? e->size : -1;
}

/* Keeps DB.files/sha256 (size bytes), found at start-up without a record,
 * as an orphan. 0, or -1 (out of memory, a key collision: removed then). */
static int adopt(cairn__core *c, const char *sha256, int64_t size) {
  if (cairn__hmap_get(&c->uploads, cairn__hash_key(sha256)))
    return -1;
  cairn__upl *e = calloc(1, sizeof *e);
  if (!e || cairn__hmap_put(&c->uploads, cairn__hash_key(sha256), e)) {
    free(e);
    return -1;
  }
  snprintf(e->sha256, sizeof e->sha256, "%s", sha256);
  e->size = size;
  e->orphan = 1;
  c->upload_bytes += size;
  return 0;
}

void cairn__uploads_orphans_end(cairn__core *c, int64_t now) {
  if (!c->orphans_until || now < c->orphans_until)
    return;
  c->orphans_until = 0;
  for (size_t i = 0; i < c->uploads.cap; i++) {
    cairn__upl *e = c->uploads.keys[i] ? c->uploads.vals[i] : NULL;
    if (!e || !e->orphan || e->refs)
      continue;
    char sha[65];
    snprintf(sha, sizeof sha, "%s", e->sha256);
    e->orphan = 0;
    e->refs = 1;
    release(c, sha); /* refs 0: out of the map, reclaimed unless recorded */
    i--; /* the map's deletion may have moved another entry into slot i */
  }
}

int cairn__uploads_held(cairn__core *c, const char *sha256) { return entry(c, sha256) != NULL; }

/* 1 when name starts with 64 lowercase hex digits followed by end or '.'. */
static int sha_name(const char *name) {
  for (int i = 0; i < 64; i++)
    if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f')))
      return 0;
  return name[64] == '\0' || name[64] == '.';
}

/* One pass over DB.files/ (chunks 0) or DB.files/.chunks/ (chunks 1): what
 * the master does not record goes (see uploads.h). */
static void sweep_dir(cairn__core *c, int chunks, uint64_t *files, uint64_t *bytes) {
  char dir[4200], path[4500];
  snprintf(dir, sizeof dir, chunks ? "%s/.chunks" : "%s", c->files_dir);
  DIR *d = opendir(dir);
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d)) {
    const char *n = e->d_name;
    int temp = !chunks && (strncmp(n, ".upload-", 8) == 0 || strncmp(n, ".import-", 8) == 0);
    if (!temp && !(sha_name(n) && (chunks || n[64] == '\0')))
      continue;
    char sha[65];
    snprintf(sha, sizeof sha, "%.64s", n);
    snprintf(path, sizeof path, "%s/%s", dir, n);
    struct stat sb;
    int64_t size = stat(path, &sb) == 0 ? (int64_t)sb.st_size : 0;
    pthread_mutex_lock(&c->lock);
    int keep = !temp && (chunks ? cairn__dist_has_file(c->dist, sha, NULL) || entry(c, sha)
                                : recorded(c, sha) || (c->orphans_until && adopt(c, sha, size) == 0));
    cairn__core_unlock(c);
    if (keep)
      continue;
    if (unlink(path) != 0) {
      CAIRN_WARN(&c->log, "cannot remove %s: %s", path, strerror(errno));
      continue;
    }
    if (!chunks && !temp) {
      (*files)++;
      *bytes += (uint64_t)size;
    }
  }
  if (d)
    closedir(d);
}

/* The latest expiry of the live leases (0: none). O(leases), at start-up. */
static int64_t last_expiry(cairn__core *c) {
  int64_t last = 0;
  for (size_t i = 0; i < c->leases.cap; i++) {
    const mlease *l = c->leases.keys[i] ? c->leases.vals[i] : NULL;
    if (l && l->expires > last)
      last = l->expires;
  }
  return last;
}

cairn_status cairn__uploads_sweep(cairn__core *c, cairn_error *err) {
  uint64_t files = 0, bytes = 0;
  DIR *d = opendir(c->files_dir);
  if (!d)
    return cairn__error_set(err, CAIRN_EIO, "cannot read %s: %s", c->files_dir, strerror(errno));
  closedir(d);
  pthread_mutex_lock(&c->lock);
  c->orphans_until = last_expiry(c); /* the live leases' files are kept until then */
  cairn__core_unlock(c);
  sweep_dir(c, 0, &files, &bytes);
  sweep_dir(c, 1, &files, &bytes);
  pthread_mutex_lock(&c->lock);
  c->uploads_reclaimed += files;
  c->upload_bytes_reclaimed += bytes;
  cairn__core_unlock(c);
  if (files)
    CAIRN_WARN(&c->log, "start-up: %llu stored files no result claimed (%llu bytes: uploads "
               "of leases a stop interrupted) removed from %s", (unsigned long long)files,
               (unsigned long long)bytes, c->files_dir);
  return CAIRN_OK;
}

void cairn__uploads_free(cairn__core *c) {
  for (size_t i = 0; i < c->uploads.cap; i++)
    if (c->uploads.keys[i])
      free(c->uploads.vals[i]);
  cairn__hmap_free(&c->uploads);
}
