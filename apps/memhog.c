/* memhog.c — cairn-app-memhog: a task whose memory is known, for tasks
 * that size themselves (tests/integration/test_autosize_e2e.c; docs/jobs.md,
 * "Automatic sizes"). Built without sanitizers, which reserve more address
 * space than a memory limit by RLIMIT_AS allows.
 *
 *   cairn-app-memhog MIB [SECONDS]
 *     allocates MIB MiB, 1 MiB at a time, and touches every page (resident,
 *     not only reserved), holds it SECONDS (default 0), then prints
 *     "held MIB MiB" and exits 0; exits 3 with "allocation failed after N
 *     MiB" on its standard error when an allocation fails (a memory limit).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int main(int argc, char **argv) {
  char *end = NULL;
  long mib = argc >= 2 ? strtol(argv[1], &end, 10) : -1;
  double hold = argc == 3 ? atof(argv[2]) : 0;
  if (argc < 2 || argc > 3 || mib < 0 || !end || *end || hold < 0 || hold > 3600) {
    fputs("usage: cairn-app-memhog MIB [SECONDS]\n", stderr);
    return 2;
  }
  char **blocks = calloc((size_t)mib + 1, sizeof *blocks);
  for (long i = 0; blocks && i < mib; i++) {
    if (!(blocks[i] = malloc(1 << 20))) {
      fprintf(stderr, "allocation failed after %ld MiB\n", i);
      return 3;
    }
    memset(blocks[i], (int)(i & 0x7f) + 1, 1 << 20);
  }
  if (!blocks) {
    fputs("allocation failed after 0 MiB\n", stderr);
    return 3;
  }
  struct timespec ts = {(time_t)hold, (long)((hold - (double)(time_t)hold) * 1e9)};
  while (nanosleep(&ts, &ts) != 0)
    ;
  long sum = 0;
  for (long i = 0; i < mib; i++)
    sum += blocks[i][i % (1 << 20)]; /* still there */
  printf("held %ld MiB (%ld)\n", mib, sum);
  return 0;
}
