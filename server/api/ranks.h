/* ranks.h — the public pages' rendering (ranks.c): the leaderboards of
 * accounts, teams of accounts and hosts by total and by recent credit, and
 * the home page's body (the project, its totals, its jobs when the operator
 * shows them). Built by a renderer (renderer.h) from copies of the core's
 * state taken a slice at a time (core/roster.h), never in one long hold of
 * c->lock; a request reads it without building anything but its page.
 * Private to server/api/.
 *
 * Bounds: each leaderboard keeps its first CAIRN__RANKS_MAX rows by each
 * order (CAIRN__RANKS_MAX / CAIRN__RANKS_PAGE pages); the rows of both
 * orders are kept once, so a rendering holds at most 2 × CAIRN__RANKS_MAX
 * rows a kind, each a few hundred bytes (names of at most 256 bytes): at
 * most about 16 MiB, about 3 MiB with short names. A build copies the
 * whole population (O(A + T + V + jobs) time and memory while it runs,
 * CAIRN__ROSTER_SLICE rows a hold of c->lock) and sorts it, at most once
 * every CAIRN__RANKS_REFRESH_SECONDS while the pages are read
 * (bench/results/ranks.md). */
#ifndef CAIRN_RANKS_H
#define CAIRN_RANKS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/api/renderer.h"
#include "server/core/roster.h"

#define CAIRN__RANKS_PAGE 50
#define CAIRN__RANKS_MAX 10000
#define CAIRN__RANKS_JOBS 100   /* the newest jobs the home page lists (--public-jobs) */
#define CAIRN__RANKS_REFRESH_SECONDS 5.0
#define CAIRN__RANKS_COLD_SECONDS 10.0
#define CAIRN__RANKS_WAIT_SECONDS 10.0

enum { CAIRN__BY_TOTAL, CAIRN__BY_RECENT };

/* One kind's leaderboards: rows (each once), and by each order the
 * indices of its first rows in it. */
typedef struct cairn__ranking {
  cairn__roster_row *rows;
  size_t nrows;
  uint32_t *order[2];
  size_t norder[2];
} cairn__ranking;

typedef struct cairn__ranks {
  atomic_uint refs;
  cairn__ranking kind[3];   /* by CAIRN__ROSTER_ACCOUNTS, _TEAMS, _HOSTS */
  char *home;               /* the body of GET /v1/public/home */
  size_t home_len;
} cairn__ranks;

/* The ops of m->ranks (started and stopped with the standings, stats.c). */
extern const cairn__renderer_ops cairn__ranks_ops;

/* The body of GET /v1/public/top/{kind}?by=&page= (kind a
 * CAIRN__ROSTER_*, by a CAIRN__BY_*, page from 1; past the last page: no
 * rows): malloc'd, NULL out of memory. O(CAIRN__RANKS_PAGE). */
char *cairn__ranks_page(const cairn__ranks *r, int kind, int by, long page);
/* Drops a reference; the last frees r. NULL is fine. */
void cairn__ranks_put(cairn__ranks *r);

#endif
