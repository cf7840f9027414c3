/* renderer.h — a reading rebuilt in the background while it is read, and
 * published with a reference count: the standings of GET /v1/stats
 * (stats.c, standings.c) and the public pages' leaderboards and home
 * (ranks.c). Private to server/api/.
 *
 * One builder thread per renderer builds a reading (its ops' build, never
 * under c->lock but in the short holds the build itself takes) and
 * publishes it under the renderer's own lock, taken alone, never held while
 * building or while a request copies. A request takes a reference to the
 * published reading (O(1)) and drops it when done.
 *
 * Refresh. A request that finds the reading `refresh` seconds old asks the
 * builder for a new one (once: never while one is asked or being built)
 * and is served the one it found; the others meanwhile are served it too
 * (no stampede). So the builder builds at most once per `refresh`, and only
 * while the reading is read. Only a request finding none, or one `cold`
 * seconds old (nobody read for that long), waits for the build it asked
 * (at most `wait` seconds), so an answer is at most about `cold` seconds
 * old. A build the ops' `same` finds equal to the published one keeps the
 * published one (its ETags stay). */
#ifndef CAIRN_RENDERER_H
#define CAIRN_RENDERER_H

#include <stdint.h>

#include "common/error.h"

struct cairn_master;

typedef struct cairn__renderer_ops {
  const char *what;  /* what the reading is, for the error of a request that finds none */
  /* A new reading with one reference, or NULL with err set. */
  void *(*build)(struct cairn_master *m, cairn_error *err);
  /* 1 when a and b read the same (the older is kept); NULL: never. */
  int (*same)(const void *a, const void *b);
  void (*hold)(void *r); /* adds a reference */
  void (*put)(void *r);  /* drops one, the last frees it; NULL is fine */
  double refresh, cold, wait; /* seconds */
} cairn__renderer_ops;

typedef struct cairn__renderer cairn__renderer;

/* Starts the builder (ops must outlive it): NULL with err set. */
cairn__renderer *cairn__renderer_start(struct cairn_master *m, const cairn__renderer_ops *ops,
                                       cairn_error *err);
/* Stops the builder (a build under way ends first) and drops the published
 * reading; NULL is fine. */
void cairn__renderer_stop(cairn__renderer *r);
/* A reference to the reading to serve (drop it with ops->put), its age in
 * seconds in *age; NULL with err set when there is none. O(1), unless it
 * waits (above). */
void *cairn__renderer_take(cairn__renderer *r, double *age, cairn_error *err);
/* Builds that succeeded, and the builder's CPU seconds in all of them. */
void cairn__renderer_counts(cairn__renderer *r, uint64_t *builds, double *cpu);

#endif
