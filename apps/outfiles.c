/* outfiles.c — a task app that writes output files (docs/jobs.md,
 * "Outputs"), for tests and as an example.
 *
 *   cairn-app-outfiles write NAME BYTES [NAME BYTES ...]
 *       writes each file (folders created), bytes from a generator seeded by
 *       NAME, 64 KiB at a time; prints "NAME SHA256" per file
 *   cairn-app-outfiles --corrupt write ...   the same with the first byte of
 *       each file flipped (a volunteer that alters its outputs)
 *   cairn-app-outfiles digest FILE...   prints "SHA256 FILE" per file read
 *   cairn-app-outfiles fail BYTES       writes BYTES of numbered lines to
 *       standard error, then exits with status 3
 *   cairn-app-outfiles none             writes nothing, exits 0
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/sha256.h"

static int make_parents(char *path) {
  for (char *p = path + 1; *p; p++)
    if (*p == '/') {
      *p = '\0';
      mkdir(path, 0755);
      *p = '/';
    }
  return 0;
}

static int write_file(const char *name, long long bytes, int corrupt) {
  char path[4096];
  snprintf(path, sizeof path, "%s", name);
  make_parents(path);
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  uint64_t x = 1469598103934665603ull;
  for (const char *c = name; *c; c++)
    x = (x ^ (unsigned char)*c) * 1099511628211ull;
  static unsigned char buf[65536];
  cairn__sha256 h;
  cairn__sha256_init(&h);
  for (long long done = 0; done < bytes;) {
    size_t n = bytes - done < (long long)sizeof buf ? (size_t)(bytes - done) : sizeof buf;
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13;
      x ^= x >> 7;
      x ^= x << 17;
      buf[i] = (unsigned char)x;
    }
    if (done == 0 && corrupt && n)
      buf[0] ^= 0xff;
    cairn__sha256_update(&h, buf, n);
    if (fwrite(buf, 1, n, f) != n) {
      fclose(f);
      return -1;
    }
    done += (long long)n;
  }
  if (fclose(f))
    return -1;
  char hex[65];
  cairn__sha256_final_hex(&h, hex);
  printf("%s %s\n", name, hex);
  return 0;
}

static int digest(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return -1;
  static unsigned char buf[65536];
  cairn__sha256 h;
  cairn__sha256_init(&h);
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0)
    cairn__sha256_update(&h, buf, n);
  fclose(f);
  char hex[65];
  cairn__sha256_final_hex(&h, hex);
  printf("%s %s\n", hex, path);
  return 0;
}

int main(int argc, char **argv) {
  int corrupt = argc > 1 && strcmp(argv[1], "--corrupt") == 0;
  argv += corrupt;
  argc -= corrupt;
  if (argc >= 2 && strcmp(argv[1], "write") == 0 && argc % 2 == 0) {
    for (int i = 2; i + 1 < argc; i += 2)
      if (write_file(argv[i], atoll(argv[i + 1]), corrupt)) {
        fprintf(stderr, "outfiles: cannot write %s\n", argv[i]);
        return 2;
      }
    return 0;
  }
  if (argc >= 3 && strcmp(argv[1], "digest") == 0) {
    for (int i = 2; i < argc; i++)
      if (digest(argv[i])) {
        fprintf(stderr, "outfiles: cannot read %s\n", argv[i]);
        return 2;
      }
    return 0;
  }
  if (argc == 3 && strcmp(argv[1], "fail") == 0) {
    long long want = atoll(argv[2]), done = 0;
    for (long long line = 0; done < want; line++)
      done += fprintf(stderr, "stderr line %08lld\n", line);
    return 3;
  }
  if (argc == 2 && strcmp(argv[1], "none") == 0)
    return 0;
  fprintf(stderr, "usage: cairn-app-outfiles [--corrupt] write NAME BYTES ... | digest FILE... "
                  "| fail BYTES | none\n");
  return 2;
}
