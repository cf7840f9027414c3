/* stats.c — GET /v1/stats: the credit standings, public and without
 * secrets (docs/protocol.md, "GET /v1/stats"; docs/accountability.md,
 * "Credit").
 *
 * Per volunteer: its id, name, team, credit, CPU seconds and valid results
 * (never its token or address); per team: its members and their sums; the
 * project's totals. Banned volunteers are left out. The standings come
 * from the store's reader connection, never from the core under c->lock:
 * a snapshot of the top CAIRN__STATS_MAX volunteers and teams is read at
 * most once every CAIRN__STATS_REFRESH_SECONDS (cost: cairn_store_stats,
 * O(V) for the team sums), held under m->standings_lock, and each request
 * copies at most its limit of entries of each list from it. The store is
 * behind memory only by batches not yet acknowledged to anyone.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "server/master.h"

static double mono_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Appends one store row to the snapshot being built (lists "volunteers",
 * "teams", object "total"). 0, or -1 out of memory. */
static int add_row(void *ud, const cairn_store_stats_row *r) {
  json_t *snap = ud, *o = NULL;
  if (r->kind == CAIRN_STATS_VOLUNTEER) {
    json_t *a = json_object_get(snap, "volunteers");
    json_t *name = json_string(r->name ? r->name : ""); /* NULL: not UTF-8 (an embedder's) */
    o = json_pack("{s:I, s:I, s:o, s:o, s:f, s:f, s:I}", "rank", (json_int_t)json_array_size(a) + 1,
                  "id", (json_int_t)r->id, "name", name ? name : json_string(""), "team",
                  r->team ? json_string(r->team) : json_null(), "credit", r->credit,
                  "cpu_seconds", r->cpu_seconds, "results", (json_int_t)r->results);
    return o ? json_array_append_new(a, o) : -1;
  }
  if (r->kind == CAIRN_STATS_TEAM) {
    json_t *a = json_object_get(snap, "teams");
    o = json_pack("{s:I, s:s, s:I, s:f, s:f, s:I}", "rank", (json_int_t)json_array_size(a) + 1,
                  "team", r->team ? r->team : "", "members", (json_int_t)r->members, "credit",
                  r->credit, "cpu_seconds", r->cpu_seconds, "results", (json_int_t)r->results);
    return o ? json_array_append_new(a, o) : -1;
  }
  o = json_pack("{s:I, s:I, s:f, s:f, s:I}", "volunteers", (json_int_t)r->members, "teams",
                (json_int_t)r->id, "credit", r->credit, "cpu_seconds", r->cpu_seconds, "results",
                (json_int_t)r->results);
  return o ? json_object_set_new(snap, "total", o) : -1;
}

/* A fresh snapshot from the store, or NULL with err set. */
static json_t *read_snapshot(cairn_master *m, cairn_error *err) {
  json_t *snap = json_pack("{s:[], s:[], s:I}", "volunteers", "teams", "as_of",
                           (json_int_t)time(NULL));
  if (!snap) {
    cairn_error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  if (cairn__core_stats(m->core, CAIRN__STATS_MAX, add_row, snap, err) != CAIRN_OK) {
    json_decref(snap);
    return NULL;
  }
  return snap;
}

/* Copies of the first n entries of array a: the answer shares nothing with
 * the snapshot, which other requests read meanwhile. */
static json_t *head(json_t *a, size_t n) {
  json_t *out = json_array();
  for (size_t i = 0; out && i < n && i < json_array_size(a); i++)
    json_array_append_new(out, json_deep_copy(json_array_get(a, i)));
  return out;
}

void cairn__stats_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  long limit = CAIRN__STATS_DEFAULT;
  if (rq->arg_limit) {
    const char *p = rq->arg_limit;
    char *end = NULL;
    limit = *p >= '1' && *p <= '9' && strlen(p) <= 5 ? strtol(p, &end, 10) : -1;
    if (limit < 1 || limit > CAIRN__STATS_MAX || !end || *end)
      return cairn__api_failf(rs, CAIRN_EINVAL, "\"limit\" must be an integer from 1 to %d",
                              CAIRN__STATS_MAX);
  }
  cairn_error err = {0};
  pthread_mutex_lock(&m->standings_lock);
  double now = mono_seconds();
  if (!m->standings || now - m->standings_at >= CAIRN__STATS_REFRESH_SECONDS) {
    json_t *fresh = read_snapshot(m, &err); /* the store's reader, not c->lock */
    if (fresh) {
      json_decref(m->standings);
      m->standings = fresh;
      m->standings_at = now;
    }
  }
  json_t *snap = m->standings, *out = NULL;
  if (snap)
    out = json_pack("{s:o, s:o, s:o, s:I, s:o}", "volunteers",
                    head(json_object_get(snap, "volunteers"), (size_t)limit), "teams",
                    head(json_object_get(snap, "teams"), (size_t)limit), "total",
                    json_deep_copy(json_object_get(snap, "total")), "limit", (json_int_t)limit,
                    "as_of", json_deep_copy(json_object_get(snap, "as_of")));
  pthread_mutex_unlock(&m->standings_lock);
  if (!snap)
    return cairn__api_error(rs, err.status ? err.status : CAIRN_EIO, err.text);
  if (!out)
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  cairn__api_json(rs, 200, out);
}
