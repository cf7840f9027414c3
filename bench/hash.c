/* hash.c — bench-hash: SHA-256 and base64 throughput, libsodium called
 * directly ("sodium") beside common/sha256.h and common/base64.h ("cairn",
 * what the master, the worker and the CLI call), measured alternately in
 * one run.
 *
 *   bench-hash [--reps N] [--file-mib M]     (N >= 1, default 9; M default 64)
 *
 * What is timed (the median of N repetitions of each, the two implementations
 * taking turns; wall clock, and the CPU time of the thread, which a shared
 * machine's other load disturbs less):
 *   sha256_file   a file of M MiB (a temporary file in $TMPDIR, in the page
 *                 cache) read 64 KiB at a time and hashed incrementally: how
 *                 the master and the worker hash an input or an output file
 *   sha256_small  65,536 messages of 1 KiB, each hashed on its own (init,
 *                 update, final): result outputs, grants, chain entries
 *   base64_encode, base64_decode  a buffer of 1 MiB (the cap of a result
 *                 output, which travels as base64 when it is not UTF-8)
 * Each line: NAME: impl=IMPL ... mib_per_s=X cpu_mib_per_s=Y; then one line
 * per measure with the ratios cairn/sodium of the medians (> 1: cairn
 * faster). The digests of both are compared before timing; a mismatch
 * exits 1.
 */
#include <errno.h>
#include <fcntl.h>
#include <sodium.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/sha256.h"

#define READ_SIZE (64 * 1024)
#define SMALL_SIZE 1024
#define SMALL_COUNT 65536
#define B64_SIZE (1024 * 1024)
#define MAX_REPS 101

enum { SODIUM, CAIRN, NIMPL };
static const char *const impl_name[NIMPL] = {"sodium", "cairn"};

/* A point in time: wall clock and this thread's CPU time, in seconds. */
typedef struct stamp {
  double wall, cpu;
} stamp;

static double clock_s(clockid_t id) {
  struct timespec ts;
  clock_gettime(id, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static stamp now(void) {
  return (stamp){clock_s(CLOCK_MONOTONIC), clock_s(CLOCK_THREAD_CPUTIME_ID)};
}

/* Durations of each implementation's repetitions of one measure. */
typedef struct series {
  double wall[NIMPL][MAX_REPS], cpu[NIMPL][MAX_REPS];
} series;

static void record(series *s, int impl, int rep, stamp a, stamp b) {
  s->wall[impl][rep] = b.wall - a.wall;
  s->cpu[impl][rep] = b.cpu - a.cpu;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof v[0], cmp_double);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static void fill(unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    p[i] = (unsigned char)(rng() >> 56);
}

/* Hashes the file open at fd from its start, READ_SIZE bytes a read. 0, or
 * -1 on a read error. */
static int hash_file(int impl, int fd, unsigned char *buf, uint8_t out[32]) {
  if (lseek(fd, 0, SEEK_SET) != 0)
    return -1;
  crypto_hash_sha256_state s;
  cairn__sha256 c;
  if (impl == SODIUM)
    crypto_hash_sha256_init(&s);
  else
    cairn__sha256_init(&c);
  for (;;) {
    ssize_t r = read(fd, buf, READ_SIZE);
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      return -1;
    if (r == 0)
      break;
    if (impl == SODIUM)
      crypto_hash_sha256_update(&s, buf, (unsigned long long)r);
    else
      cairn__sha256_update(&c, buf, (size_t)r);
  }
  if (impl == SODIUM)
    crypto_hash_sha256_final(&s, out);
  else
    cairn__sha256_final(&c, out);
  return 0;
}

/* Hashes SMALL_COUNT messages of SMALL_SIZE bytes; folds the digests into acc. */
static void hash_small(int impl, const unsigned char *msgs, uint8_t acc[32]) {
  uint8_t d[32];
  for (size_t i = 0; i < SMALL_COUNT; i++) {
    const unsigned char *m = msgs + i * 16; /* overlapping windows: distinct messages */
    if (impl == SODIUM) {
      crypto_hash_sha256(d, m, SMALL_SIZE);
    } else {
      cairn__sha256 c;
      cairn__sha256_init(&c);
      cairn__sha256_update(&c, m, SMALL_SIZE);
      cairn__sha256_final(&c, d);
    }
    for (int k = 0; k < 32; k++)
      acc[k] ^= d[k];
  }
}

static size_t b64_encode(int impl, const unsigned char *src, size_t n, char *dst, size_t cap) {
  if (impl == SODIUM) {
    sodium_bin2base64(dst, cap, src, n, sodium_base64_VARIANT_ORIGINAL);
    return strlen(dst);
  }
  return cairn__base64_encode(src, n, dst);
}

static int b64_decode(int impl, const char *src, size_t n, unsigned char *dst, size_t cap,
                      size_t *len) {
  if (impl == SODIUM)
    return sodium_base642bin(dst, cap, src, n, NULL, len, NULL, sodium_base64_VARIANT_ORIGINAL);
  return cairn__base64_decode(src, n, dst, cap, len);
}

/* Prints the medians of s as MiB/s (mib MiB per repetition) and the ratios. */
static void report(const char *name, const char *what, series *s, double mib, int reps) {
  double w[NIMPL], c[NIMPL];
  for (int i = 0; i < NIMPL; i++) {
    w[i] = median(s->wall[i], reps);
    c[i] = median(s->cpu[i], reps);
    printf("%s: impl=%s %s mib_per_s=%.1f cpu_mib_per_s=%.1f (medians of %d)\n", name,
           impl_name[i], what, mib / w[i], mib / c[i], reps);
  }
  printf("%s: cairn/sodium throughput ratio=%.3f cpu_ratio=%.3f (> 1: cairn faster)\n", name,
         w[SODIUM] / w[CAIRN], c[SODIUM] / c[CAIRN]);
}

int main(int argc, char **argv) {
  int reps = 9;
  long file_mib = 64;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--reps") && i + 1 < argc) {
      reps = atoi(argv[++i]);
    } else if (!strcmp(argv[i], "--file-mib") && i + 1 < argc) {
      file_mib = atol(argv[++i]);
    } else {
      fprintf(stderr, "usage: bench-hash [--reps N] [--file-mib M]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS || file_mib < 1 || file_mib > 4096) {
    fprintf(stderr, "bench-hash: REPS must be 1..%d and M 1..4096\n", MAX_REPS);
    return 2;
  }
  if (sodium_init() < 0) {
    fprintf(stderr, "bench-hash: libsodium cannot start\n");
    return 1;
  }
  size_t file_bytes = (size_t)file_mib << 20;
  const char *tmp = getenv("TMPDIR");
  const char *path = tmp && *tmp ? tmp : "/tmp"; /* an unnamed file there, gone at exit */
  int fd = open(path, O_TMPFILE | O_RDWR, 0600);
  unsigned char *buf = malloc(READ_SIZE);
  unsigned char *msgs = malloc((size_t)SMALL_COUNT * 16 + SMALL_SIZE);
  unsigned char *bin = malloc(B64_SIZE), *back = malloc(B64_SIZE);
  size_t b64cap = cairn__base64_encoded_len(B64_SIZE) + 1;
  char *text = malloc(b64cap);
  if (fd < 0 || !buf || !msgs || !bin || !back || !text) {
    fprintf(stderr, "bench-hash: cannot set up (%s)\n", fd < 0 ? strerror(errno) : "no memory");
    return 1;
  }
  for (size_t done = 0; done < file_bytes; done += READ_SIZE) {
    fill(buf, READ_SIZE);
    if (write(fd, buf, READ_SIZE) != READ_SIZE) {
      fprintf(stderr, "bench-hash: cannot write in %s: %s\n", path, strerror(errno));
      return 1;
    }
  }
  fill(msgs, (size_t)SMALL_COUNT * 16 + SMALL_SIZE);
  fill(bin, B64_SIZE);

  /* The two agree (and the file is read once into the page cache). */
  uint8_t d[NIMPL][32], acc[NIMPL][32];
  size_t elen[NIMPL] = {0}, dlen[NIMPL] = {0};
  int bad = 0;
  for (int i = 0; i < NIMPL; i++) {
    memset(acc[i], 0, 32);
    bad |= hash_file(i, fd, buf, d[i]);
    hash_small(i, msgs, acc[i]);
    elen[i] = b64_encode(i, bin, B64_SIZE, text, b64cap);
    bad |= b64_decode(i, text, elen[i], back, B64_SIZE, &dlen[i]);
    bad |= dlen[i] != B64_SIZE || memcmp(back, bin, B64_SIZE) != 0;
  }
  if (bad || memcmp(d[0], d[1], 32) || memcmp(acc[0], acc[1], 32) || elen[0] != elen[1]) {
    fprintf(stderr, "bench-hash: the implementations disagree\n");
    return 1;
  }

  static series s_file, s_small, s_enc, s_dec;
  for (int r = 0; r < reps; r++) {
    for (int k = 0; k < NIMPL; k++) {
      int i = (r + k) % NIMPL; /* who goes first alternates */
      stamp t0 = now();
      if (hash_file(i, fd, buf, d[i]) != 0) {
        fprintf(stderr, "bench-hash: cannot read back the file in %s\n", path);
        return 1;
      }
      stamp t1 = now();
      hash_small(i, msgs, acc[i]);
      stamp t2 = now();
      b64_encode(i, bin, B64_SIZE, text, b64cap);
      stamp t3 = now();
      if (b64_decode(i, text, elen[i], back, B64_SIZE, &dlen[i]) != 0) {
        fprintf(stderr, "bench-hash: base64 decode failed\n");
        return 1;
      }
      stamp t4 = now();
      record(&s_file, i, r, t0, t1);
      record(&s_small, i, r, t1, t2);
      record(&s_enc, i, r, t2, t3);
      record(&s_dec, i, r, t3, t4);
    }
  }

  close(fd);
  char what[128];
  snprintf(what, sizeof what, "mib=%ld read_kib=%d", file_mib, READ_SIZE / 1024);
  report("sha256_file", what, &s_file, (double)file_mib, reps);
  snprintf(what, sizeof what, "messages=%d bytes=%d", SMALL_COUNT, SMALL_SIZE);
  report("sha256_small", what, &s_small, (double)SMALL_COUNT * SMALL_SIZE / (1 << 20), reps);
  for (int i = 0; i < NIMPL; i++)
    printf("sha256_small: impl=%s messages_per_s=%.0f (wall)\n", impl_name[i],
           SMALL_COUNT / median(s_small.wall[i], reps));
  snprintf(what, sizeof what, "bytes=%d", B64_SIZE);
  report("base64_encode", what, &s_enc, 1.0, reps);
  report("base64_decode", what, &s_dec, 1.0, reps);

  free(buf);
  free(msgs);
  free(bin);
  free(back);
  free(text);
  return 0;
}
