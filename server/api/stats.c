/* stats.c — GET /v1/stats: the credit standings, public and without
 * secrets (docs/protocol.md, "GET /v1/stats"; docs/accountability.md,
 * "Credit").
 *
 * Per volunteer: its id, name, team, credit, CPU seconds and valid results
 * (never its token or address); per team: its members and their sums; the
 * project's totals. Banned volunteers are left out.
 *
 * Cost. Anyone may ask, so a request's cost must not grow with the
 * population. One builder thread (this file's) reads the standings from
 * the store's reader connection, never under c->lock (cairn__store_stats:
 * O(V) for the totals), and renders each of the top CAIRN__STATS_MAX
 * volunteers' and teams' entries once (standings.c); the rendering is
 * published with a reference count (renderer.c). A request takes a
 * reference, copies its page's slices into its body (O(body): at most
 * ?limit= entries of each list, about 250 KiB for 1,000 of each with short
 * names, 2.3 MiB at most) and drops it: no JSON built, no store read, no
 * lock held while it copies. An If-None-Match naming the page's ETag is
 * answered 304 without copying.
 *
 * Refresh (renderer.h, with CAIRN__STATS_REFRESH_SECONDS, _COLD_ and
 * _WAIT_): the builder reads the store at most once a refresh interval, and
 * only while the standings are read; an answer is at most about
 * CAIRN__STATS_COLD_SECONDS old. A build that finds the standings as they
 * were keeps the rendering it had (its as_of and ETags): a poller's
 * If-None-Match goes on matching while nothing changes.
 *
 * Memory: the published rendering, the one being built, and old ones
 * still copied by a request (freed by the last): each at most 2.3 MiB.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"
#include "server/api/ranks.h"
#include "server/api/renderer.h"
#include "server/api/standings.h"

static void *build(cairn_master *m, cairn_error *err) {
  return cairn__rendering_build(m->core, err);
}

static int same(const void *a, const void *b) { return cairn__rendering_same(a, b); }

static void hold(void *r) { atomic_fetch_add(&((cairn__rendering *)r)->refs, 1); }

static void put(void *r) { cairn__rendering_put(r); }

static const cairn__renderer_ops ops = {
  .what = "standings", .build = build, .same = same, .hold = hold, .put = put,
  .refresh = CAIRN__STATS_REFRESH_SECONDS, .cold = CAIRN__STATS_COLD_SECONDS,
  .wait = CAIRN__STATS_WAIT_SECONDS};

/* ?name= of GET /v1/stats: an integer from 1 to max, def when absent; -1
 * with the 400 in rs. */
static long query_arg(const char *name, const char *p, long def, long max, cairn__resp *rs) {
  if (!p)
    return def;
  char *end = NULL;
  long v = *p >= '1' && *p <= '9' && strlen(p) <= 5 ? strtol(p, &end, 10) : -1;
  if (v < 1 || v > max || !end || *end) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be an integer from 1 to %ld", name, max);
    return -1;
  }
  return v;
}

void cairn__stats_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  long limit = query_arg("limit", rq->arg_limit, CAIRN__STATS_DEFAULT, CAIRN__STATS_MAX, rs);
  long page = limit < 0 ? -1
                        : query_arg("page", rq->arg_page, 1,
                                    (CAIRN__STATS_MAX + limit - 1) / limit, rs);
  if (page < 0)
    return;
  if (!m->standings)
    return cairn__api_failf(rs, CAIRN_EIO, "the standings are not served");
  cairn_error err = {0};
  double age = 0;
  cairn__rendering *r = cairn__renderer_take(m->standings, &age, &err);
  if (!r)
    return cairn__api_error(rs, err.status, err.text);
  cairn__rendering_etag(r, limit, page, rs->etag);
  double fresh = CAIRN__STATS_REFRESH_SECONDS - age; /* until a request asks for the next */
  rs->max_age = fresh > 1 ? (int)(fresh + 0.999) : 1;
  if (rq->if_none_match && strstr(rq->if_none_match, rs->etag)) {
    rs->status = 304; /* the client has it: nothing copied */
  } else if ((rs->body = cairn__rendering_page(r, limit, page, &rs->len))) {
    rs->status = 200;
    rs->ctype = "application/json";
  } else {
    rs->etag[0] = '\0';
    rs->max_age = 0;
    cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  }
  cairn__rendering_put(r);
}

cairn_status cairn__stats_start(cairn_master *m, cairn_error *err) {
  if (!(m->standings = cairn__renderer_start(m, &ops, err)) ||
      !(m->ranks = cairn__renderer_start(m, &cairn__ranks_ops, err))) {
    cairn__stats_stop(m);
    return err->status;
  }
  return CAIRN_OK;
}

void cairn__stats_stop(cairn_master *m) {
  cairn__renderer_stop(m->standings);
  cairn__renderer_stop(m->ranks);
  m->standings = m->ranks = NULL;
}

char *cairn__stats_metrics(cairn_master *m, char *buf, size_t *len) {
  uint64_t renders = 0;
  double cpu = 0;
  if (m->standings)
    cairn__renderer_counts(m->standings, &renders, &cpu);
  char line[600];
  int k = snprintf(line, sizeof line,
                   "# HELP cairn_stats_renders_total Readings of the standings rendered for GET "
                   "/v1/stats (at most one per refresh interval while it is read).\n"
                   "# TYPE cairn_stats_renders_total counter\ncairn_stats_renders_total %llu\n"
                   "# HELP cairn_stats_render_cpu_seconds_total CPU seconds of the builder of "
                   "the standings (store reads and rendering).\n"
                   "# TYPE cairn_stats_render_cpu_seconds_total counter\n"
                   "cairn_stats_render_cpu_seconds_total %.6f\n",
                   (unsigned long long)renders, cpu);
  char *nb = buf && k > 0 && (size_t)k < sizeof line ? realloc(buf, *len + (size_t)k + 1) : NULL;
  if (!nb)
    return buf;
  memcpy(nb + *len, line, (size_t)k + 1);
  *len += (size_t)k;
  return nb;
}
