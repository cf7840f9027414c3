/* ckpt.c — a long task app that keeps to the checkpoint contract
 * (docs/worker.md, "Checkpoints and progress"), for tests and as an
 * example.
 *
 *   cairn-app-ckpt SECONDS
 *       works SECONDS seconds, one second at a time; after each second it
 *       saves its checkpoint in its task directory (the file "ckpt":
 *       seconds done, seconds of work performed in all its runs, runs;
 *       written to a temporary file, fsync'd and renamed) and writes the
 *       fraction done to $CAIRN_PROGRESS_FILE. Started with
 *       CAIRN_RESUMED=1 it goes on from its checkpoint. At the end it prints
 *       "done D performed P runs R resumed X": P counts every second of
 *       work it began in every run (a second cut short by the end of a
 *       run is counted, and done again by the next), R its runs for this
 *       task, X whether this run was resumed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define CKPT "ckpt"

typedef struct state {
  long done, performed, runs;
} state;

static int save(const state *s) {
  char text[128];
  int n = snprintf(text, sizeof text, "%ld %ld %ld\n", s->done, s->performed, s->runs);
  int fd = open(CKPT ".tmp", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd < 0 || write(fd, text, (size_t)n) != n || fsync(fd) != 0 || close(fd) != 0 ||
      rename(CKPT ".tmp", CKPT) != 0) {
    perror("ckpt: cannot save the checkpoint");
    return -1;
  }
  return 0;
}

static void progress(const state *s, long total) {
  const char *path = getenv("CAIRN_PROGRESS_FILE");
  char tmp[4200];
  if (!path || snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp)
    return;
  FILE *f = fopen(tmp, "w");
  if (!f)
    return;
  fprintf(f, "%.4f\n", total ? (double)s->done / (double)total : 1.0);
  if (fclose(f) == 0)
    rename(tmp, path);
}

static void one_second(void) {
  struct timespec ts = {1, 0};
  while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
    ;
}

int main(int argc, char **argv) {
  state s = {0, 0, 0};
  char *end = NULL;
  long total = argc == 2 ? strtol(argv[1], &end, 10) : -1;
  if (total < 0 || !end || *end) {
    fprintf(stderr, "usage: cairn-app-ckpt SECONDS\n");
    return 2;
  }
  const char *resumed = getenv("CAIRN_RESUMED");
  int again = resumed && strcmp(resumed, "1") == 0;
  FILE *f = again ? fopen(CKPT, "r") : NULL;
  if (f) {
    if (fscanf(f, "%ld %ld %ld", &s.done, &s.performed, &s.runs) != 3)
      s = (state){0, 0, 0}; /* unreadable: from the start */
    fclose(f);
  }
  s.runs++;
  if (save(&s) != 0)
    return 1;
  fprintf(stderr, "ckpt: run %ld, %s at %ld of %ld seconds\n", s.runs,
          again ? "resumed" : "started", s.done, total);
  while (s.done < total) {
    s.performed++; /* counted when begun: a second cut short counts too */
    if (save(&s) != 0)
      return 1;
    one_second();
    s.done++;
    if (save(&s) != 0)
      return 1;
    progress(&s, total);
  }
  printf("done %ld performed %ld runs %ld resumed %d\n", s.done, s.performed, s.runs, again);
  return 0;
}
