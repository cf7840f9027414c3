/* limits.c — cairn-app-limits: a task that misbehaves on purpose, to show
 * the worker's limits (docs/worker.md, "Limits") and its environment and
 * stdin. Built without sanitizers, which reserve more address space than a
 * memory limit allows.
 *
 *   hang          sleeps for good (wall limit)
 *   cpu           spins for good (cpu limit)
 *   burn SECONDS  spins until it has used SECONDS of CPU time, then prints
 *                 "burned" (a known claim for credit)
 *   mem MIB       allocates and touches MIB MiB, 1 MiB at a time; exits 3
 *                 when an allocation fails (memory limit)
 *   disk MIB      writes MIB MiB to ./junk, then sleeps (disk limit)
 *   spew MIB      writes MIB MiB to its standard output (output limit)
 *   env NAME...   prints NAME=VALUE for each NAME (or NAME unset)
 *   cat           copies its standard input to standard output
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static int usage(void) {
  fputs("usage: cairn-app-limits hang | cpu | burn SECONDS | mem MIB | disk MIB | spew MIB | env NAME... | cat\n", stderr);
  return 2;
}

int main(int argc, char **argv) {
  if (argc < 2)
    return usage();
  const char *mode = argv[1];
  if (strcmp(mode, "hang") == 0) {
    for (;;)
      pause();
  }
  if (strcmp(mode, "cpu") == 0) {
    volatile unsigned long x = 0;
    for (;;)
      x++;
  }
  if (strcmp(mode, "burn") == 0 && argc == 3) {
    double want = atof(argv[2]), used = 0;
    volatile unsigned long x = 0;
    while (used < want) {
      for (int i = 0; i < 100000; i++)
        x++;
      struct timespec ts;
      clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
      used = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
    }
    puts("burned");
    return 0;
  }
  if (strcmp(mode, "mem") == 0 && argc == 3) {
    long mib = atol(argv[2]);
    for (long i = 0; i < mib; i++) {
      char *p = malloc(1 << 20);
      if (!p) {
        fprintf(stderr, "allocation failed after %ld MiB\n", i);
        return 3;
      }
      memset(p, 1, 1 << 20); /* resident, not only reserved */
    }
    printf("allocated %ld MiB\n", mib);
    return 0;
  }
  if (strcmp(mode, "disk") == 0 && argc == 3) {
    long mib = atol(argv[2]);
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    FILE *f = fopen("junk", "w");
    for (long i = 0; f && i < mib; i++)
      if (fwrite(block, 1, sizeof block, f) != sizeof block || fflush(f) != 0)
        return 4;
    if (f)
      fsync(fileno(f));
    for (;;)
      pause();
  }
  if (strcmp(mode, "spew") == 0 && argc == 3) {
    static char line[1024];
    memset(line, 'y', sizeof line - 1);
    line[sizeof line - 1] = '\n';
    for (long i = 0, n = atol(argv[2]) * 1024; i < n; i++)
      if (fwrite(line, 1, sizeof line, stdout) != sizeof line)
        return 4;
    return 0;
  }
  if (strcmp(mode, "env") == 0) {
    for (int i = 2; i < argc; i++) {
      const char *v = getenv(argv[i]);
      printf(v ? "%s=%s\n" : "%s unset\n", argv[i], v ? v : "");
    }
    return 0;
  }
  if (strcmp(mode, "cat") == 0) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, stdin)) > 0)
      fwrite(buf, 1, n, stdout);
    return 0;
  }
  return usage();
}
