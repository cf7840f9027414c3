/* standings.h — the rendered standings of GET /v1/stats (standings.c):
 * each entry's JSON text made once, by the builder, and the pages a
 * request copies from it. Private to stats.c, which publishes renderings
 * and counts their references.
 *
 * Bounds: a rendering holds at most CAIRN__STATS_MAX volunteers and as
 * many teams; a volunteer's entry is at most about 1.7 KiB (a name of
 * CAIRN_MAX_NAME bytes, each escaped in at most 6), a team's at most about
 * 0.5 KiB, so a rendering and the largest page are at most about 2.3 MiB
 * (about 250 KiB with names of 20 bytes). */
#ifndef CAIRN_STANDINGS_H
#define CAIRN_STANDINGS_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "server/core/core.h"

/* The JSON texts of n entries joined by ',': entry i is text[at[i],
 * at[i + 1] - 1), so entries a to b - 1 are one slice of text. */
typedef struct cairn__jlist {
  char *text;  /* malloc'd, cap bytes */
  size_t len, cap;
  size_t *at;  /* n + 1 offsets (malloc'd, CAIRN__STATS_MAX + 1) */
  size_t n;
} cairn__jlist;

/* One reading of the standings, rendered; never changed once built. */
typedef struct cairn__rendering {
  atomic_uint refs;        /* the publisher's and each request's while it copies */
  cairn__jlist vols, teams;
  char *total;             /* the "total" object's JSON text (malloc'd) */
  int64_t as_of;           /* Unix seconds of the read */
  uint64_t hash;           /* FNV-1a 64 of the lists and totals (not as_of) */
} cairn__rendering;

/* Reads the standings from the store (cairn__core_stats on its reader
 * connection, never c->lock: O(V) for the totals) and renders each entry
 * once: a rendering with one reference, or NULL with err set. */
cairn__rendering *cairn__rendering_build(cairn__core *c, cairn_error *err);
/* 1 when a and b list the same entries and totals (as_of aside). */
int cairn__rendering_same(const cairn__rendering *a, const cairn__rendering *b);
/* Drops a reference; the last frees r. NULL: nothing. */
void cairn__rendering_put(cairn__rendering *r);
/* The 200 body of page `page` (from 1) of `limit` entries of each list:
 * entries (page - 1) × limit to page × limit - 1 of each (fewer, or none,
 * past the end), the totals, limit, page and as_of. malloc'd, its length
 * in *len; NULL when out of memory. O(the body): slices copied, nothing
 * rendered. */
char *cairn__rendering_page(const cairn__rendering *r, long limit, long page, size_t *len);
/* The ETag of that page ("\"<16 hex>\"", 19 bytes with its NUL): the
 * rendering's hash, limit and page. O(1). */
void cairn__rendering_etag(const cairn__rendering *r, long limit, long page, char out[20]);

#endif
