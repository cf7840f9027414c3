/* standings.c — the rendered standings of GET /v1/stats (standings.h):
 * the builder renders each entry's JSON text once per reading of the
 * store; a request's page is then slices of those texts copied around a
 * fixed frame, with nothing rendered and nothing read (stats.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/api/api.h"
#include "server/api/standings.h"

#define FNV_OFFSET 1469598103934665603ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * FNV_PRIME;
  return h;
}

/* Appends one entry's JSON text (n bytes) to l (its `at` allocated): 0,
 * or -1 out of memory or past CAIRN__STATS_MAX entries. O(n) amortized. */
static int jlist_add(cairn__jlist *l, const char *s, size_t n) {
  if (l->n >= CAIRN__STATS_MAX)
    return -1;
  size_t need = l->len + (l->n ? 1 : 0) + n;
  if (need > l->cap) {
    size_t cap = l->cap ? l->cap : 16384;
    while (cap < need)
      cap *= 2;
    char *t = realloc(l->text, cap);
    if (!t)
      return -1;
    l->text = t;
    l->cap = cap;
  }
  if (l->n)
    l->text[l->len++] = ',';
  l->at[l->n++] = l->len;
  memcpy(l->text + l->len, s, n);
  l->len += n;
  l->at[l->n] = l->len + 1; /* as if a ',' followed: entry n - 1 ends at at[n] - 1 */
  return 0;
}

/* Appends o rendered (compact, as every answer), taking o. */
static int jlist_add_json(cairn__jlist *l, json_t *o) {
  char *s = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  int rc = s ? jlist_add(l, s, strlen(s)) : -1;
  free(s);
  return rc;
}

/* One store row into the rendering being built (lists "volunteers",
 * "teams", then the totals). 0, or -1 out of memory. */
static int add_row(void *ud, const cairn__store_stats_row *r) {
  cairn__rendering *g = ud;
  if (r->kind == CAIRN_STATS_VOLUNTEER) {
    json_t *name = json_string(r->name ? r->name : ""); /* NULL: not UTF-8 (an embedder's) */
    return jlist_add_json(
      &g->vols, json_pack("{s:I, s:I, s:o, s:o, s:f, s:f, s:I}", "rank",
                          (json_int_t)g->vols.n + 1, "id", (json_int_t)r->id, "name",
                          name ? name : json_string(""), "team",
                          r->team ? json_string(r->team) : json_null(), "credit", r->credit,
                          "cpu_seconds", r->cpu_seconds, "results", (json_int_t)r->results));
  }
  if (r->kind == CAIRN_STATS_TEAM)
    return jlist_add_json(
      &g->teams, json_pack("{s:I, s:s, s:I, s:f, s:f, s:I}", "rank", (json_int_t)g->teams.n + 1,
                           "team", r->team ? r->team : "", "members", (json_int_t)r->members,
                           "credit", r->credit, "cpu_seconds", r->cpu_seconds, "results",
                           (json_int_t)r->results));
  json_t *o = json_pack("{s:I, s:I, s:f, s:f, s:I}", "volunteers", (json_int_t)r->members,
                        "teams", (json_int_t)r->id, "credit", r->credit, "cpu_seconds",
                        r->cpu_seconds, "results", (json_int_t)r->results);
  free(g->total);
  g->total = o ? json_dumps(o, JSON_COMPACT) : NULL;
  json_decref(o);
  return g->total ? 0 : -1;
}

static void jlist_free(cairn__jlist *l) {
  free(l->text);
  free(l->at);
}

static void rendering_free(cairn__rendering *r) {
  jlist_free(&r->vols);
  jlist_free(&r->teams);
  free(r->total);
  free(r);
}

void cairn__rendering_put(cairn__rendering *r) {
  if (r && atomic_fetch_sub(&r->refs, 1) == 1)
    rendering_free(r);
}

cairn__rendering *cairn__rendering_build(cairn__core *c, cairn_error *err) {
  cairn__rendering *r = calloc(1, sizeof *r);
  if (!r) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  atomic_init(&r->refs, 1);
  r->as_of = (int64_t)time(NULL);
  r->vols.at = malloc((CAIRN__STATS_MAX + 1) * sizeof *r->vols.at);
  r->teams.at = malloc((CAIRN__STATS_MAX + 1) * sizeof *r->teams.at);
  if (!r->vols.at || !r->teams.at) {
    rendering_free(r);
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  r->vols.at[0] = r->teams.at[0] = 1; /* no entry: every slice is empty */
  if (cairn__core_stats(c, CAIRN__STATS_MAX, add_row, r, err) != CAIRN_OK || !r->total) {
    if (!r->total && !err->status)
      cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    rendering_free(r);
    return NULL;
  }
  uint64_t h = fnv(FNV_OFFSET, r->vols.text, r->vols.len);
  h = fnv(h, "|", 1);
  h = fnv(h, r->teams.text, r->teams.len);
  h = fnv(h, "|", 1);
  r->hash = fnv(h, r->total, strlen(r->total));
  return r;
}

int cairn__rendering_same(const cairn__rendering *a, const cairn__rendering *b) {
  return a && b && a->hash == b->hash && a->vols.len == b->vols.len &&
         a->teams.len == b->teams.len && !strcmp(a->total, b->total) &&
         !memcmp(a->vols.text, b->vols.text, a->vols.len) &&
         !memcmp(a->teams.text, b->teams.text, a->teams.len);
}

/* The slice of l holding entries first to first + limit - 1 (those that
 * exist): its start in *p, its length returned (0: none). O(1). */
static size_t slice(const cairn__jlist *l, size_t first, size_t limit, const char **p) {
  *p = "";
  if (first >= l->n)
    return 0;
  size_t end = first + limit < l->n ? first + limit : l->n;
  *p = l->text + l->at[first];
  return l->at[end] - 1 - l->at[first];
}

char *cairn__rendering_page(const cairn__rendering *r, long limit, long page, size_t *len) {
  size_t first = (size_t)(page - 1) * (size_t)limit;
  const char *v, *t;
  size_t nv = slice(&r->vols, first, (size_t)limit, &v);
  size_t nt = slice(&r->teams, first, (size_t)limit, &t);
  char tail[96];
  int ntail = snprintf(tail, sizeof tail, ",\"limit\":%ld,\"page\":%ld,\"as_of\":%lld}", limit,
                       page, (long long)r->as_of);
  static const char a[] = "{\"volunteers\":[", b[] = "],\"teams\":[", c[] = "],\"total\":";
  size_t ntotal = strlen(r->total);
  size_t n = sizeof a - 1 + nv + sizeof b - 1 + nt + sizeof c - 1 + ntotal + (size_t)ntail;
  char *body = malloc(n + 1), *w = body;
  if (!body)
    return NULL;
  const char *part[] = {a, v, b, t, c, r->total, tail};
  size_t plen[] = {sizeof a - 1, nv, sizeof b - 1, nt, sizeof c - 1, ntotal, (size_t)ntail};
  for (size_t i = 0; i < sizeof plen / sizeof *plen; i++) {
    memcpy(w, part[i], plen[i]);
    w += plen[i];
  }
  *w = '\0';
  *len = n;
  return body;
}

void cairn__rendering_etag(const cairn__rendering *r, long limit, long page, char out[20]) {
  long key[2] = {limit, page};
  uint64_t h = fnv(r->hash, key, sizeof key);
  h = fnv(h, &r->as_of, sizeof r->as_of);
  snprintf(out, 20, "\"%016llx\"", (unsigned long long)h);
}
