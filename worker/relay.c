/* relay.c — downloads in progress, relayed chunk by checked chunk. */
#include "worker/relay.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/protocol.h"
#include "common/sha256.h"

/* One registered download. Its fields after the digests are guarded by the
 * registry's mutex, except the chunk hash state (the downloading thread's
 * alone). */
struct cairn__relay_in {
  cairn__relay *r;
  struct cairn__relay_in *next;
  char sha256[65];
  char *path;
  cairn__chunklist chunks;  /* owned copy */
  cairn__sha256 hash;        /* of the current chunk: downloading thread only */
  unsigned long long got;   /* bytes received: downloading thread only */
  unsigned long long verified; /* bytes below the end of the last checked chunk */
  int state;                /* 0 receiving, 1 done (in the cache), -1 failed */
  int registered, refs;     /* refs: the download and each open relay */
};

struct cairn__relay_rd {
  cairn__relay_in *in;
  int fd;
  int partial;
};

struct cairn__relay {
  pthread_mutex_t mu;
  pthread_cond_t cv;
  cairn__relay_in *list;
  unsigned gen;
  const cairn__logger *const *log; /* borrowed: the cache's logger field */
};

cairn_status cairn__chunklist_parse(const char *body, size_t len, const char *sha256,
                                    long long size, cairn__chunklist *out, cairn_error *err) {
  memset(out, 0, sizeof *out);
  json_t *root = json_loadb(body, len, 0, NULL);
  json_t *a = json_object_get(root, "chunks");
  json_int_t sz = json_integer_value(json_object_get(root, "size"));
  cairn_status st = CAIRN_OK;
  if (!json_is_array(a) || !json_is_integer(json_object_get(root, "size")) || sz < 0 ||
      (size >= 0 && sz != size) ||
      json_integer_value(json_object_get(root, "chunk_size")) != CAIRN_CHUNK_SIZE ||
      !json_is_string(json_object_get(root, "sha256")) ||
      strcmp(json_string_value(json_object_get(root, "sha256")), sha256) != 0)
    st = cairn__error_set(err, CAIRN_EINVAL, "chunk list of %s: malformed, or of another file",
                         sha256);
  size_t n = st == CAIRN_OK ? (size_t)((sz + CAIRN_CHUNK_SIZE - 1) / CAIRN_CHUNK_SIZE) : 0;
  if (st == CAIRN_OK && (json_array_size(a) != n || n > CAIRN_MAX_CHUNKS))
    st = cairn__error_set(err, CAIRN_EINVAL, "chunk list of %s: %zu chunks for %lld bytes",
                         sha256, json_array_size(a), (long long)sz);
  if (st == CAIRN_OK && !(out->digest = malloc(n * 32 + 1)))
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  for (size_t i = 0; st == CAIRN_OK && i < n; i++) {
    const char *hex = json_string_value(json_array_get(a, i));
    if (!hex || !cairn__sha256_valid_hex(hex)) {
      st = cairn__error_set(err, CAIRN_EINVAL, "chunk list of %s: chunks[%zu] is not a sha256",
                           sha256, i);
      break;
    }
    for (size_t b = 0; b < 32; b++) {
      unsigned v = 0;
      for (int k = 0; k < 2; k++) {
        char ch = hex[2 * b + (size_t)k];
        v = v * 16 + (unsigned)(ch <= '9' ? ch - '0' : ch - 'a' + 10);
      }
      out->digest[i][b] = (unsigned char)v;
    }
  }
  json_decref(root);
  if (st != CAIRN_OK) {
    cairn__chunklist_free(out);
    return st;
  }
  out->size = sz;
  out->n = n;
  return CAIRN_OK;
}

void cairn__chunklist_free(cairn__chunklist *l) {
  free(l->digest);
  memset(l, 0, sizeof *l);
}

cairn__relay *cairn__relay_new(const cairn__logger *const *log) {
  cairn__relay *r = calloc(1, sizeof *r);
  if (!r)
    return NULL;
  pthread_condattr_t ca;
  pthread_condattr_init(&ca);
  pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
  if (pthread_mutex_init(&r->mu, NULL) != 0 || pthread_cond_init(&r->cv, &ca) != 0) {
    pthread_condattr_destroy(&ca);
    free(r);
    return NULL;
  }
  pthread_condattr_destroy(&ca);
  r->log = log;
  return r;
}

void cairn__relay_free(cairn__relay *r) {
  if (!r)
    return;
  pthread_cond_destroy(&r->cv);
  pthread_mutex_destroy(&r->mu);
  free(r);
}

/* Drops a reference; frees in at the last. Called with mu held. */
static void unref_locked(cairn__relay_in *in) {
  if (--in->refs > 0)
    return;
  free(in->path);
  cairn__chunklist_free(&in->chunks);
  free(in);
}

static void unlink_locked(cairn__relay *r, cairn__relay_in *in) {
  for (cairn__relay_in **p = &r->list; *p; p = &(*p)->next)
    if (*p == in) {
      *p = in->next;
      break;
    }
  in->registered = 0;
}

cairn__relay_in *cairn__relay_begin(cairn__relay *r, const char *sha256, const char *path,
                                    const cairn__chunklist *chunks) {
  cairn__relay_in *in = calloc(1, sizeof *in);
  if (!in)
    return NULL;
  in->r = r;
  memcpy(in->sha256, sha256, 64);
  in->path = strdup(path);
  in->chunks = *chunks;
  in->chunks.digest = malloc(chunks->n * 32 + 1);
  if (!in->path || !in->chunks.digest) {
    free(in->path);
    free(in->chunks.digest);
    free(in);
    return NULL;
  }
  memcpy(in->chunks.digest, chunks->digest, chunks->n * 32);
  cairn__sha256_init(&in->hash);
  in->refs = 1;
  return in;
}

/* Registers in at its first checked chunk, unless another download of the
 * file is registered. Called with mu held. */
static void publish_locked(cairn__relay_in *in) {
  cairn__relay *r = in->r;
  for (cairn__relay_in *o = r->list; o; o = o->next)
    if (strcmp(o->sha256, in->sha256) == 0)
      return;
  in->registered = 1;
  in->next = r->list;
  r->list = in;
  r->gen++;
}

/* Bytes of chunk i. */
static size_t chunk_len(const cairn__relay_in *in, size_t i) {
  unsigned long long off = (unsigned long long)i * CAIRN_CHUNK_SIZE;
  unsigned long long left = (unsigned long long)in->chunks.size - off;
  return left < CAIRN_CHUNK_SIZE ? (size_t)left : CAIRN_CHUNK_SIZE;
}

int cairn__relay_data(cairn__relay_in *in, const void *p, size_t n) {
  const unsigned char *b = p;
  if (in->got + n > (unsigned long long)in->chunks.size) {
    CAIRN_WARN(*in->r->log, "relay: %s: more than its %lld bytes arrived", in->sha256,
               in->chunks.size);
    return -1;
  }
  while (n) {
    size_t i = (size_t)(in->got / CAIRN_CHUNK_SIZE);
    size_t end = (size_t)((unsigned long long)i * CAIRN_CHUNK_SIZE + chunk_len(in, i) - in->got);
    size_t k = n < end ? n : end;
    cairn__sha256_update(&in->hash, b, k);
    in->got += k;
    b += k;
    n -= k;
    if (k < end)
      break;
    unsigned char d[32];
    cairn__sha256_final(&in->hash, d);
    cairn__sha256_init(&in->hash);
    if (memcmp(d, in->chunks.digest[i], 32) != 0) {
      CAIRN_WARN(*in->r->log, "relay: %s: chunk %zu of %zu does not match its digest", in->sha256,
                 i, in->chunks.n);
      return -1;
    }
    pthread_mutex_lock(&in->r->mu);
    if (!in->verified && !in->registered)
      publish_locked(in);
    in->verified = in->got;
    pthread_cond_broadcast(&in->r->cv);
    pthread_mutex_unlock(&in->r->mu);
  }
  return 0;
}

unsigned long long cairn__relay_rewind(cairn__relay_in *in) {
  pthread_mutex_lock(&in->r->mu);
  unsigned long long v = in->verified;
  pthread_mutex_unlock(&in->r->mu);
  in->got = v;
  cairn__sha256_init(&in->hash);
  return v;
}

void cairn__relay_end(cairn__relay_in *in, int ok) {
  cairn__relay *r = in->r;
  pthread_mutex_lock(&r->mu);
  in->state = ok ? 1 : -1;
  if (ok)
    in->verified = (unsigned long long)in->chunks.size;
  if (in->registered)
    unlink_locked(r, in);
  r->gen++;
  pthread_cond_broadcast(&r->cv);
  unref_locked(in);
  pthread_mutex_unlock(&r->mu);
}

unsigned cairn__relay_gen(cairn__relay *r) {
  pthread_mutex_lock(&r->mu);
  unsigned g = r->gen;
  pthread_mutex_unlock(&r->mu);
  return g;
}

static void deadline_in(struct timespec *t, long ms) {
  clock_gettime(CLOCK_MONOTONIC, t);
  t->tv_sec += ms / 1000;
  t->tv_nsec += (ms % 1000) * 1000000L;
  if (t->tv_nsec >= 1000000000L) {
    t->tv_sec++;
    t->tv_nsec -= 1000000000L;
  }
}

void cairn__relay_wait(cairn__relay *r, unsigned gen, long ms) {
  struct timespec t;
  deadline_in(&t, ms);
  pthread_mutex_lock(&r->mu);
  while (r->gen == gen)
    if (pthread_cond_timedwait(&r->cv, &r->mu, &t) == ETIMEDOUT)
      break;
  pthread_mutex_unlock(&r->mu);
}

cairn__relay_rd *cairn__relay_open(cairn__relay *r, const char *sha256, long long *size) {
  cairn__relay_rd *rd = calloc(1, sizeof *rd);
  if (!rd)
    return NULL;
  rd->fd = -1;
  pthread_mutex_lock(&r->mu);
  cairn__relay_in *in = r->list;
  while (in && strcmp(in->sha256, sha256) != 0)
    in = in->next;
  if (in) /* opened under the mutex: the file is not renamed or removed meanwhile */
    rd->fd = open(in->path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (in && rd->fd >= 0) {
    in->refs++;
    rd->in = in;
    rd->partial = in->state == 0;
    *size = in->chunks.size;
  }
  pthread_mutex_unlock(&r->mu);
  if (!rd->in) {
    if (rd->fd >= 0)
      close(rd->fd);
    free(rd);
    return NULL;
  }
  return rd;
}

ssize_t cairn__relay_read(cairn__relay_rd *rd, uint64_t pos, void *buf, size_t max,
                          long stall_ms) {
  cairn__relay_in *in = rd->in;
  cairn__relay *r = in->r;
  struct timespec t;
  deadline_in(&t, stall_ms);
  pthread_mutex_lock(&r->mu);
  while (in->state == 0 && in->verified <= pos)
    if (pthread_cond_timedwait(&r->cv, &r->mu, &t) == ETIMEDOUT)
      break;
  int state = in->state;
  unsigned long long verified = in->verified;
  pthread_mutex_unlock(&r->mu);
  if (state < 0 || verified <= pos)
    return pos >= (uint64_t)in->chunks.size && state > 0 ? 0 : -1;
  size_t n = verified - pos < max ? (size_t)(verified - pos) : max;
  ssize_t k;
  do
    k = pread(rd->fd, buf, n, (off_t)pos);
  while (k < 0 && errno == EINTR);
  return k > 0 ? k : -1;
}

int cairn__relay_was_partial(const cairn__relay_rd *rd) { return rd->partial; }

void cairn__relay_close(cairn__relay_rd *rd) {
  if (!rd)
    return;
  cairn__relay *r = rd->in->r;
  close(rd->fd);
  pthread_mutex_lock(&r->mu);
  unref_locked(rd->in);
  pthread_mutex_unlock(&r->mu);
  free(rd);
}
