/* verify.c — digests checked since the file's last change. */
#include "worker/verify.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/sha256.h"

/* A stamp is trusted only when its ctime is this much older than the hash:
 * twice the longest tick of the clock file times are taken from (10 ms at
 * HZ=100), so that any later write gets a later ctime. */
#define VERIFY_SETTLE_MS 20
/* Files remembered; past it the oldest entry is reused (it is hashed again). */
#define VERIFY_MAX_ENTRIES 4096u
#define HASH_CHUNK (256u * 1024u)

typedef struct stamp {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} stamp;

typedef struct entry {
  char sha256[65];
  stamp st;
} entry;

struct cairn__verify {
  pthread_mutex_t mu;
  entry *e;       /* n entries, cap VERIFY_MAX_ENTRIES */
  size_t n, next; /* next: the slot reused when full */
};

cairn__verify *cairn__verify_new(void) {
  cairn__verify *v = calloc(1, sizeof *v);
  if (!v)
    return NULL;
  v->e = calloc(VERIFY_MAX_ENTRIES, sizeof *v->e);
  if (!v->e || pthread_mutex_init(&v->mu, NULL) != 0) {
    free(v->e);
    free(v);
    return NULL;
  }
  return v;
}

void cairn__verify_free(cairn__verify *v) {
  if (!v)
    return;
  pthread_mutex_destroy(&v->mu);
  free(v->e);
  free(v);
}

static void stamp_of(const struct stat *s, stamp *out) {
  memset(out, 0, sizeof *out);
  out->dev = s->st_dev;
  out->ino = s->st_ino;
  out->size = s->st_size;
  out->mtime = s->st_mtim;
  out->ctime = s->st_ctim;
}

static int same_stamp(const stamp *a, const stamp *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
         a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/* Index of sha256 in the table, or -1. Called with the mutex held. */
static long find(const cairn__verify *v, const char *sha256) {
  for (size_t i = 0; i < v->n; i++)
    if (memcmp(v->e[i].sha256, sha256, 64) == 0)
      return (long)i;
  return -1;
}

static int trusted(cairn__verify *v, const char *sha256, const stamp *now) {
  pthread_mutex_lock(&v->mu);
  long i = find(v, sha256);
  int ok = i >= 0 && same_stamp(&v->e[i].st, now);
  pthread_mutex_unlock(&v->mu);
  return ok;
}

static void remember(cairn__verify *v, const char *sha256, const stamp *st) {
  pthread_mutex_lock(&v->mu);
  long i = find(v, sha256);
  if (i < 0 && v->n < VERIFY_MAX_ENTRIES)
    i = (long)v->n++;
  else if (i < 0) {
    i = (long)v->next;
    v->next = (v->next + 1) % VERIFY_MAX_ENTRIES;
  }
  memcpy(v->e[i].sha256, sha256, 65);
  v->e[i].st = *st;
  pthread_mutex_unlock(&v->mu);
}

void cairn__verify_record(cairn__verify *v, int fd, const char *sha256) {
  struct stat s;
  stamp st;
  if (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode))
    return;
  stamp_of(&s, &st);
  remember(v, sha256, &st);
}

void cairn__verify_forget(cairn__verify *v, const char *sha256) {
  pthread_mutex_lock(&v->mu);
  long i = find(v, sha256);
  if (i >= 0)
    v->e[i] = v->e[--v->n];
  if (v->next >= v->n)
    v->next = 0;
  pthread_mutex_unlock(&v->mu);
}

static long long ns_of(const struct timespec *t) {
  return (long long)t->tv_sec * 1000000000LL + t->tv_nsec;
}

/* SHA-256 of the file open as fd, from its start. Returns 0 or -1. */
static int hash_fd(int fd, char hex[65]) {
  unsigned char *buf = malloc(HASH_CHUNK);
  cairn__sha256 c;
  off_t off = 0;
  if (!buf)
    return -1;
  cairn__sha256_init(&c);
  for (;;) {
    ssize_t k = pread(fd, buf, HASH_CHUNK, off);
    if (k < 0 && errno == EINTR)
      continue;
    if (k < 0) {
      free(buf);
      return -1;
    }
    if (k == 0)
      break;
    cairn__sha256_update(&c, buf, (size_t)k);
    off += k;
  }
  free(buf);
  cairn__sha256_final_hex(&c, hex);
  return 0;
}

int cairn__verify_fd(cairn__verify *v, int fd, const char *sha256, long long size, int *hashed) {
  struct stat before, after;
  stamp sb, sa;
  char got[65];
  if (hashed)
    *hashed = 0;
  if (fstat(fd, &before) != 0 || !S_ISREG(before.st_mode))
    return CAIRN__VERIFY_ERROR;
  stamp_of(&before, &sb);
  if (size >= 0 && (long long)before.st_size != size) {
    cairn__verify_forget(v, sha256);
    return CAIRN__VERIFY_MISMATCH;
  }
  if (trusted(v, sha256, &sb))
    return CAIRN__VERIFY_OK;
  struct timespec start;
  clock_gettime(CLOCK_REALTIME, &start);
  long long young = ns_of(&sb.ctime) + VERIFY_SETTLE_MS * 1000000LL + 1 - ns_of(&start);
  /* changed just now: let it settle, so that its stamp can be kept */
  if (young > 0 && young <= VERIFY_SETTLE_MS * 1000000LL + 1) {
    struct timespec pause = {0, (long)young};
    nanosleep(&pause, NULL);
    if (fstat(fd, &before) != 0)
      return CAIRN__VERIFY_ERROR;
    stamp_of(&before, &sb);
    clock_gettime(CLOCK_REALTIME, &start);
  }
  if (hashed)
    *hashed = 1;
  if (hash_fd(fd, got) != 0 || fstat(fd, &after) != 0)
    return CAIRN__VERIFY_ERROR;
  stamp_of(&after, &sa);
  if (strcmp(got, sha256) != 0 || !same_stamp(&sb, &sa)) {
    cairn__verify_forget(v, sha256);
    return CAIRN__VERIFY_MISMATCH;
  }
  if (ns_of(&sb.ctime) + VERIFY_SETTLE_MS * 1000000LL < ns_of(&start))
    remember(v, sha256, &sb);
  return CAIRN__VERIFY_OK;
}

int cairn__verify_dir(cairn__verify *v, int dfd, void (*fn)(void *ud, const char *sha256),
                      void *ud, unsigned *removed) {
  int dup_fd = dup(dfd);
  DIR *d = dup_fd >= 0 ? fdopendir(dup_fd) : NULL;
  *removed = 0;
  if (!d) {
    if (dup_fd >= 0)
      close(dup_fd);
    return -1;
  }
  rewinddir(d);
  for (struct dirent *e = readdir(d); e; e = readdir(d)) {
    if (!cairn__sha256_valid_hex(e->d_name))
      continue;
    int fd = openat(dfd, e->d_name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    int rc = fd >= 0 ? cairn__verify_fd(v, fd, e->d_name, -1, NULL) : CAIRN__VERIFY_ERROR;
    if (fd >= 0)
      close(fd);
    if (rc == CAIRN__VERIFY_OK && fn)
      fn(ud, e->d_name);
    else if (rc == CAIRN__VERIFY_MISMATCH && unlinkat(dfd, e->d_name, 0) == 0)
      (*removed)++;
  }
  closedir(d);
  return 0;
}
