/* diskcap.c — --max-disk admission and cache eviction (diskcap.h). Each
 * admission is bounded: two directory sums capped in entries, one listing
 * of the cache capped at CAIRN__DISKCAP_EVICT_MAX files. */
#include "worker/diskcap.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "worker/enforce.h"

static int older(const void *a, const void *b) {
  const cairn__cached_file *x = a, *y = b;
  if (x->mtime != y->mtime)
    return x->mtime < y->mtime ? -1 : 1;
  return strcmp(x->name, y->name);
}

size_t cairn__diskcap_plan(cairn__cached_file *files, size_t n, uint64_t over) {
  qsort(files, n, sizeof *files, older);
  uint64_t freed = 0;
  for (size_t i = 0; i < n; i++) {
    if (freed >= over)
      return i;
    freed += files[i].bytes;
  }
  return n;
}

uint64_t cairn__diskcap_need(const cairn__task *t, const char *cache_dir) {
  uint64_t need = t->resources.disk_mib > 0 ? (uint64_t)t->resources.disk_mib << 20 : 0;
  char path[4200];
  for (size_t i = 0; i < t->ninputs; i++) {
    if (t->inputs[i].size <= 0)
      continue;
    uint64_t size = (uint64_t)t->inputs[i].size;
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", cache_dir, t->inputs[i].sha256);
    need += size + (stat(path, &st) == 0 ? 0 : size);
  }
  return need;
}

void cairn__diskcap_init(cairn__diskcap *d, uint64_t cap_mib, const char *cache_dir,
                         const char *run_dir, const cairn__logger *log) {
  memset(d, 0, sizeof *d);
  d->cap = cap_mib << 20;
  d->cache_dir = cache_dir;
  d->run_dir = run_dir;
  d->log = log;
  pthread_mutex_init(&d->mu, NULL);
}

void cairn__diskcap_destroy(cairn__diskcap *d) { pthread_mutex_destroy(&d->mu); }

static int named_by(const cairn__task *t, const char *name) {
  for (size_t i = 0; i < t->ninputs; i++)
    if (strcmp(t->inputs[i].sha256, name) == 0)
      return 1;
  return 0;
}

/* Lists the cached files t does not name (at most CAIRN__DISKCAP_EVICT_MAX);
 * returns their count, files malloc'd (NULL when none). */
static size_t evictable(const cairn__diskcap *d, const cairn__task *t,
                        cairn__cached_file **files) {
  size_t n = 0;
  *files = NULL;
  DIR *dir = opendir(d->cache_dir);
  if (!dir)
    return 0;
  cairn__cached_file *f = calloc(CAIRN__DISKCAP_EVICT_MAX, sizeof *f);
  struct dirent *e;
  char path[4200];
  while (f && n < CAIRN__DISKCAP_EVICT_MAX && (e = readdir(dir)) != NULL) {
    struct stat st;
    if (e->d_name[0] == '.' || strlen(e->d_name) != 64 || named_by(t, e->d_name))
      continue;
    snprintf(path, sizeof path, "%s/%s", d->cache_dir, e->d_name);
    if (lstat(path, &st) != 0 || !S_ISREG(st.st_mode))
      continue;
    memcpy(f[n].name, e->d_name, 65); /* 64 hex digits and the NUL */
    f[n].bytes = (uint64_t)st.st_blocks * 512u;
    f[n].mtime = st.st_mtime;
    n++;
  }
  closedir(dir);
  *files = f;
  return f ? n : 0;
}

int cairn__diskcap_admit(cairn__diskcap *d, const cairn__task *t, uint64_t *need,
                         cairn_error *err) {
  *need = 0;
  if (!d->cap)
    return 0;
  uint64_t want = cairn__diskcap_need(t, d->cache_dir);
  pthread_mutex_lock(&d->mu);
  uint64_t used = cairn__dir_usage(d->cache_dir, CAIRN__DISKCAP_SCAN_ENTRIES) +
                  cairn__dir_usage(d->run_dir, CAIRN__DISKCAP_SCAN_ENTRIES) + d->pending;
  int rc = 0;
  if (used + want > d->cap) {
    cairn__cached_file *files;
    size_t n = evictable(d, t, &files);
    uint64_t over = used + want - d->cap, freed = 0;
    size_t k = cairn__diskcap_plan(files, n, over);
    for (size_t i = 0; i < k; i++)
      freed += files[i].bytes;
    if (freed < over) {
      rc = -1;
      cairn__error_set(err, CAIRN_ETOOBIG, "the task needs %llu MiB of disk; --max-disk %llu MiB "
                      "leaves %llu MiB with %llu MiB in use (%llu MiB of it in cached files "
                      "the task does not name)", (unsigned long long)((want + (1u << 20) - 1) >> 20),
                      (unsigned long long)(d->cap >> 20),
                      (unsigned long long)(used < d->cap ? (d->cap - used) >> 20 : 0),
                      (unsigned long long)(used >> 20), (unsigned long long)(freed >> 20));
    } else {
      char path[4200];
      for (size_t i = 0; i < k; i++) {
        snprintf(path, sizeof path, "%s/%s", d->cache_dir, files[i].name);
        if (unlink(path) == 0)
          CAIRN_INFO(d->log, "--max-disk: removed cached %s (%llu bytes) to make room",
                     files[i].name, (unsigned long long)files[i].bytes);
      }
    }
    free(files);
  }
  if (rc == 0) {
    d->pending += want;
    *need = want;
  }
  pthread_mutex_unlock(&d->mu);
  return rc;
}

void cairn__diskcap_prepared(cairn__diskcap *d, uint64_t need) {
  if (!d->cap || !need)
    return;
  pthread_mutex_lock(&d->mu);
  d->pending -= need < d->pending ? need : d->pending;
  pthread_mutex_unlock(&d->mu);
}
