/* appfetch.c — bench-appfetch: the time a worker takes to fetch and verify
 * a signed app version (docs/apps.md) from a real cairn-server on loopback,
 * and to verify it again before each later task.
 *
 *   bench-appfetch [--reps N] [--mib M]      (N >= 1, default 9; M default 20)
 *
 * A master is started with --app-key, a version of one executable and one
 * data file of M MiB (random bytes) is published with the real `cairn app
 * publish`, then worker/appver.c is timed in this process, with the
 * worker's own cache and libcurl transport:
 *   cold   a fresh DIR each time: GET the signed manifest, verify it, download
 *          both files into the cache (hashed as they arrive), copy them into
 *          the version's directory and verify the copies, rename it in place
 *   warm   the version stored and unchanged: the signature verified again
 *          and each file's stamp found unchanged (no hash): every later task
 *   rehash the version stored, its verified stamps forgotten (a worker
 *          started again): the signature and both files hashed again
 * Each line: NAME: median_ms=X min_ms=Y mib=M reps=N; and the ratio of the
 * cold median to the time of downloading the bytes alone is left to the
 * reader (the cold figure includes two SHA-256 passes and a copy).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/appsig.h"
#include "tests/support/harness.h"
#include "worker/appver.h"
#include "worker/cache.h"
#include "worker/fsutil.h"
#include "worker/transport.h"
#include "worker/verify.h"

#define MAX_REPS 101

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void report(const char *name, double *v, int n, int mib) {
  qsort(v, (size_t)n, sizeof *v, cmp);
  printf("%s: median_ms=%.1f min_ms=%.1f mib=%d reps=%d\n", name, v[n / 2], v[0], mib, n);
}

static int write_random(const char *path, int mib) {
  int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
  unsigned char buf[1 << 16];
  unsigned x = 12345;
  for (int i = 0; fd >= 0 && i < mib * 16; i++) {
    for (size_t k = 0; k < sizeof buf; k++)
      buf[k] = (unsigned char)((x = x * 1103515245u + 12345u) >> 16);
    if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
      return -1;
  }
  return fd >= 0 ? close(fd) : -1;
}

/* One run of cairn__appver_get on a worker DIR dir; its ms. *table: the
 * verified stamps kept from the run before (NULL: none, as after a worker's
 * start); the run's are left there. */
static double fetch_once(const char *dir, const uint8_t key[32], cairn__http *h,
                         cairn__verify **table) {
  cairn__cache cache;
  cairn__appver a;
  cairn_error err = {0};
  char cdir[4200], adir[4200], *exe = NULL, *vdir = NULL;
  snprintf(cdir, sizeof cdir, "%s/cache", dir);
  snprintf(adir, sizeof adir, "%s/apps", dir);
  if (cairn__cache_init(&cache, cdir, &err) != CAIRN_OK ||
      cairn__appver_init(&a, adir, key, &cache, NULL, &err) != CAIRN_OK) {
    fprintf(stderr, "bench-appfetch: %s\n", err.text);
    exit(1);
  }
  if (*table) { /* the warm case: the stamps of the run before */
    cairn__verify_free(a.verified);
    a.verified = *table;
  }
  double t0 = now_ms();
  cairn_status st = cairn__appver_get(&a, h, "big", "1.0", "linux-bench", &exe, &vdir, &err);
  double ms = now_ms() - t0;
  if (st != CAIRN_OK) {
    fprintf(stderr, "bench-appfetch: %s\n", err.text);
    exit(1);
  }
  free(exe);
  free(vdir);
  *table = a.verified; /* kept for a warm run */
  a.verified = NULL;
  cairn__appver_destroy(&a);
  cairn__cache_destroy(&cache);
  return ms;
}

int main(int argc, char **argv) {
  int reps = 9, mib = 20;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--reps") == 0 && i + 1 < argc)
      reps = atoi(argv[++i]);
    else if (strcmp(argv[i], "--mib") == 0 && i + 1 < argc)
      mib = atoi(argv[++i]);
    else {
      fprintf(stderr, "usage: bench-appfetch [--reps N] [--mib M]\n");
      return 2;
    }
  }
  if (reps < 1 || reps > MAX_REPS || mib < 1 || mib > 4096) {
    fprintf(stderr, "bench-appfetch: reps 1 to %d, mib 1 to 4096\n", MAX_REPS);
    return 2;
  }
  char tmp[4096], key[4200], pub[4300], exe[4200], data[4200], db[4200], cli[4096];
  harness_tmpdir(tmp, sizeof tmp);
  harness_bin(cli, sizeof cli, "cairn");
  snprintf(key, sizeof key, "%s/k", tmp);
  snprintf(pub, sizeof pub, "%s/k.pub", tmp);
  snprintf(exe, sizeof exe, "%s/big", tmp);
  snprintf(data, sizeof data, "%s/data.bin", tmp);
  snprintf(db, sizeof db, "%s/cairn.db", tmp);
  if (harness_write_file(exe, "#!/bin/sh\necho ok\n") || chmod(exe, 0755) ||
      write_random(data, mib)) {
    fprintf(stderr, "bench-appfetch: cannot write the app's files in %s\n", tmp);
    return 1;
  }
  const char *kg[] = {cli, "app", "keygen", "--out", key, NULL};
  char *pk = NULL;
  uint8_t k[32];
  if (harness_run(kg, &pk) != 0 || cairn__app_pubkey_parse(pk, k, NULL) != CAIRN_OK)
    return fprintf(stderr, "bench-appfetch: cairn app keygen failed\n"), 1;
  free(pk);
  harness_server srv;
  const char *extra[] = {"--app-key", pub, NULL};
  if (harness_server_start(&srv, db, extra) != 0)
    return fprintf(stderr, "bench-appfetch: the master did not start\n"), 1;
  const char *pb[] = {cli, "app", "publish", "big", "1.0", exe, data, "--key", key,
                      "--platform", "linux-bench", "--server", srv.url, NULL};
  if (harness_run(pb, NULL) != 0)
    return fprintf(stderr, "bench-appfetch: cairn app publish failed\n"), 1;
  cairn__http *h = cairn__http_create(srv.url);
  cairn__http_set_token(h, HARNESS_ADMIN_TOKEN);
  double cold[MAX_REPS], warm[MAX_REPS], rehash[MAX_REPS];
  for (int i = 0; i < reps; i++) {
    char dir[4200];
    cairn__verify *table = NULL;
    snprintf(dir, sizeof dir, "%s/w%d", tmp, i);
    cold[i] = fetch_once(dir, k, h, &table);
    usleep(50000); /* the copies' stamps settle (verify.h), as between two tasks */
    warm[i] = fetch_once(dir, k, h, &table);
    cairn__verify_free(table);
    table = NULL;
    rehash[i] = fetch_once(dir, k, h, &table);
    cairn__verify_free(table);
    cairn_error err = {0};
    cairn__remove_tree(dir, &err); /* the next cold run starts bare */
  }
  printf("bench-appfetch: a signed version of %d MiB + a script, from cairn-server on "
         "loopback\n", mib);
  report("cold", cold, reps, mib);
  report("warm", warm, reps, mib);
  report("rehash", rehash, reps, mib);
  cairn__http_delete(h);
  harness_server_stop(&srv, 15);
  return 0;
}
