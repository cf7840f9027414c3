/* respool.c — the worker's resource pool and the machine's offer
 * (respool.h). */
#include "worker/respool.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#define WAIT_STEP_MS 50

int cairn__respool_init(cairn__respool *p, const cairn__resources *total) {
  memset(p, 0, sizeof *p);
  p->total = *total;
  if (pthread_mutex_init(&p->mu, NULL) != 0)
    return -1;
  if (pthread_cond_init(&p->cv, NULL) != 0) {
    pthread_mutex_destroy(&p->mu);
    return -1;
  }
  return 0;
}

void cairn__respool_destroy(cairn__respool *p) {
  pthread_cond_destroy(&p->cv);
  pthread_mutex_destroy(&p->mu);
}

/* Under mu: takes req when it fits what is free. */
static int take_locked(cairn__respool *p, const cairn__resources *req) {
  if (!cairn__resources_fit(req, &p->total))
    return CAIRN__POOL_NEVER;
  cairn__resources avail = p->total;
  cairn__resources_add(&avail, &p->used, 0);
  if (!cairn__resources_fit(req, &avail))
    return CAIRN__POOL_BUSY;
  cairn__resources_add(&p->used, req, 1);
  cairn__resources_max(&p->peak, &p->used);
  return CAIRN__POOL_TAKEN;
}

int cairn__respool_try(cairn__respool *p, const cairn__resources *req) {
  pthread_mutex_lock(&p->mu);
  int rc = take_locked(p, req);
  pthread_mutex_unlock(&p->mu);
  return rc;
}

int cairn__respool_acquire(cairn__respool *p, const cairn__resources *req,
                           const cairn__cancel *cancel) {
  pthread_mutex_lock(&p->mu);
  int rc;
  while ((rc = take_locked(p, req)) == CAIRN__POOL_BUSY) {
    if (cancel && cairn__cancelled(cancel)) {
      rc = CAIRN__POOL_CANCELLED;
      break;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_nsec += WAIT_STEP_MS * 1000000L;
    if (ts.tv_nsec >= 1000000000L) {
      ts.tv_sec++;
      ts.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&p->cv, &p->mu, &ts);
  }
  pthread_mutex_unlock(&p->mu);
  return rc;
}

void cairn__respool_release(cairn__respool *p, const cairn__resources *req) {
  pthread_mutex_lock(&p->mu);
  cairn__resources_add(&p->used, req, 0);
  pthread_cond_broadcast(&p->cv);
  pthread_mutex_unlock(&p->mu);
}

void cairn__respool_usage(cairn__respool *p, cairn__resources *used, cairn__resources *peak) {
  pthread_mutex_lock(&p->mu);
  if (used)
    *used = p->used;
  if (peak)
    *peak = p->peak;
  pthread_mutex_unlock(&p->mu);
}

/* The kB of line "key" (e.g. "MemTotal:") in text, or -1. */
static long long meminfo_kb(const char *text, const char *key) {
  size_t n = strlen(key);
  for (const char *s = text; s && *s; s = strchr(s, '\n'), s = s ? s + 1 : NULL)
    if (strncmp(s, key, n) == 0) {
      char *end = NULL;
      errno = 0;
      long long kb = strtoll(s + n, &end, 10);
      return errno || end == s + n || kb < 0 ? -1 : kb;
    }
  return -1;
}

long long cairn__meminfo_mib(const char *text) {
  long long kb = meminfo_kb(text, "MemAvailable:");
  if (kb < 0)
    kb = meminfo_kb(text, "MemTotal:");
  return kb < 0 ? -1 : kb / 1024;
}

static int64_t cap(long long v, int64_t lo, int64_t hi) {
  return v < lo ? lo : v > hi ? hi : v;
}

void cairn__resources_detect(const char *dir, cairn__resources *out) {
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  long long mem = -1, disk = 0;
  char text[8192];
  FILE *f = fopen("/proc/meminfo", "re");
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    text[n] = '\0';
    fclose(f);
    mem = cairn__meminfo_mib(text);
  }
  if (mem < 0) {
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    mem = pages > 0 && psize > 0 ? (long long)pages / 1024 * psize / 1024 : 0;
  }
  struct statvfs sv;
  if (dir && statvfs(dir, &sv) == 0)
    disk = (long long)(sv.f_bavail / 1024 * sv.f_frsize / 1024);
  out->cores = cap(cpus, 1, CAIRN_MAX_CORES);
  out->memory_mib = cap(mem, 0, CAIRN_MAX_RES_MIB);
  out->disk_mib = cap(disk, 0, CAIRN_MAX_RES_MIB);
}
