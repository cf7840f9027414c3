/* dagview.c — GET /v1/jobs/{id}/dag (admin): a job's dag for the
 * dashboard (docs/dashboard.md) and the eligibility profile E(t) of the IC
 * Pebble Game ([Ros] §4.3.1, common/ic_game.h) played on it by the job's
 * policy and by fifo.
 *
 * Never under c->lock: the job's tasks and edges are read from the store
 * file through a read-only SQLite connection of this request (WAL readers
 * do not block the writer), so the answer is the store's view: behind
 * memory only by batches not yet acknowledged to anyone. Bounded: a job of
 * more than CAIRN__DAG_VIEW_MAX tasks or CAIRN__DAG_VIEW_MAX_EDGES edges
 * gets 413 and nothing is built. Cost: O(n log n + m) time and
 * O(n + m) memory for n tasks and m edges.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dag.h"
#include "common/ic_game.h"
#include "common/policy.h"
#include "server/master.h"

#define CAIRN__DAG_VIEW_MAX 20000
#define CAIRN__DAG_VIEW_MAX_EDGES 400000

typedef struct dview {
  uint32_t n;
  int64_t *keys;     /* task keys in job-file order (seq) */
  cairn_edge *edges; /* indices into keys */
  uint64_t m;
  char policy[32];
} dview;

static void dview_free(dview *v) {
  free(v->keys);
  free(v->edges);
}

/* The index of key in v->keys (sorted: keys grow with seq), or -1. */
static int64_t key_index(const dview *v, int64_t key) {
  uint32_t lo = 0, hi = v->n;
  while (lo < hi) {
    uint32_t mid = lo + (hi - lo) / 2;
    if (v->keys[mid] < key)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo < v->n && v->keys[lo] == key ? (int64_t)lo : -1;
}

static int64_t count_of(sqlite3 *db, const char *sql, int64_t job) {
  sqlite3_stmt *st = NULL;
  int64_t n = -1;
  if (sqlite3_prepare_v2(db, sql, -1, &st, NULL) == SQLITE_OK) {
    sqlite3_bind_int64(st, 1, job);
    if (sqlite3_step(st) == SQLITE_ROW)
      n = sqlite3_column_int64(st, 0);
  }
  sqlite3_finalize(st);
  return n;
}

/* Reads job's policy, keys and edges into v. 200, 404 (no such job), 413
 * (too large) or 503 (the store could not be read), msg set on failure. */
static int dview_read(sqlite3 *db, int64_t job, dview *v, char *msg, size_t len) {
  sqlite3_stmt *st = NULL;
  if (sqlite3_prepare_v2(db, "SELECT policy FROM jobs WHERE id = ? AND (ended IS NULL OR ended = 'cancelled')",
                         -1, &st, NULL) != SQLITE_OK)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  sqlite3_bind_int64(st, 1, job);
  int found = sqlite3_step(st) == SQLITE_ROW;
  if (found)
    snprintf(v->policy, sizeof v->policy, "%s", (const char *)sqlite3_column_text(st, 0));
  sqlite3_finalize(st);
  if (!found)
    return snprintf(msg, len, "no job %lld", (long long)job), 404;
  int64_t n = count_of(db, "SELECT count(*) FROM tasks WHERE job_id = ?", job);
  int64_t m = count_of(db, "SELECT count(*) FROM task_parents JOIN tasks ON tasks.id = task_id "
                           "WHERE job_id = ?", job);
  if (n < 0 || m < 0)
    return snprintf(msg, len, "the store: %s", sqlite3_errmsg(db)), 503;
  if (n > CAIRN__DAG_VIEW_MAX || m > CAIRN__DAG_VIEW_MAX_EDGES)
    return snprintf(msg, len, "job %lld has %lld tasks and %lld edges: the dag view is limited "
                    "to %d tasks and %d edges", (long long)job, (long long)n, (long long)m,
                    CAIRN__DAG_VIEW_MAX, CAIRN__DAG_VIEW_MAX_EDGES), 413;
  v->keys = malloc(sizeof *v->keys * (size_t)(n ? n : 1));
  v->edges = malloc(sizeof *v->edges * (size_t)(m ? m : 1));
  if (!v->keys || !v->edges)
    return snprintf(msg, len, "out of memory"), 503;
  sqlite3_prepare_v2(db, "SELECT id FROM tasks WHERE job_id = ? ORDER BY id", -1, &st, NULL);
  sqlite3_bind_int64(st, 1, job);
  while (v->n < n && sqlite3_step(st) == SQLITE_ROW)
    v->keys[v->n++] = sqlite3_column_int64(st, 0);
  sqlite3_finalize(st);
  sqlite3_prepare_v2(db, "SELECT task_id, parent_id FROM task_parents JOIN tasks ON tasks.id = "
                         "task_id WHERE job_id = ?", -1, &st, NULL);
  sqlite3_bind_int64(st, 1, job);
  while (v->m < (uint64_t)m && sqlite3_step(st) == SQLITE_ROW) {
    int64_t c = key_index(v, sqlite3_column_int64(st, 0));
    int64_t p = key_index(v, sqlite3_column_int64(st, 1));
    if (c >= 0 && p >= 0)
      v->edges[v->m++] = (cairn_edge){(uint32_t)p, (uint32_t)c};
  }
  sqlite3_finalize(st);
  return 200;
}

/* E(0..n) of policy ops on d as a JSON array, or NULL. */
static json_t *profile_json(const cairn_dag *d, const cairn_policy_ops *ops) {
  uint32_t *prof = malloc(sizeof *prof * ((size_t)d->n + 1));
  cairn_error err = {0};
  json_t *a = NULL;
  if (prof && cairn_ic_play(d, ops, 1, prof, NULL, &err) >= 0) {
    a = json_array();
    for (uint32_t t = 0; t <= d->n; t++)
      json_array_append_new(a, json_integer(prof[t]));
  }
  free(prof);
  return a;
}

/* {"job", "policy", "keys": [...], "depth": [...], "parents": [[i...]],
 * "profiles": {"fifo": [E(0..n)], P: [...]}} (indices into keys). */
static json_t *dview_json(int64_t job, const dview *v, const cairn_dag *d) {
  uint32_t *depth = malloc(sizeof *depth * (d->n ? d->n : 1));
  if (!depth || cairn_dag_levels(d, depth, NULL) != 0) {
    free(depth);
    return NULL;
  }
  json_t *keys = json_array(), *dep = json_array(), *par = json_array(), *prof = json_object();
  for (uint32_t i = 0; i < d->n; i++) {
    json_array_append_new(keys, json_integer(v->keys[i]));
    json_array_append_new(dep, json_integer(depth[i]));
    json_t *p = json_array();
    for (uint32_t k = d->par_off[i]; k < d->par_off[i + 1]; k++)
      json_array_append_new(p, json_integer(d->par[k]));
    json_array_append_new(par, p);
  }
  free(depth);
  const cairn_policy_ops *own = cairn_policy_find(v->policy);
  json_object_set_new(prof, "fifo", profile_json(d, &cairn_policy_fifo));
  if (own && own != &cairn_policy_fifo)
    json_object_set_new(prof, own->name, profile_json(d, own));
  return json_pack("{sI ss so so so so}", "job", (json_int_t)job, "policy", v->policy, "keys",
                   keys, "depth", dep, "parents", par, "profiles", prof);
}

void cairn__dagview_get(cairn_master *m, int64_t job, cairn__resp *rs) {
  sqlite3 *db = NULL;
  if (sqlite3_open_v2(m->db_path, &db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK) {
    sqlite3_close(db);
    return cairn__api_failf(rs, CAIRN_EIO, "the store could not be opened for reading");
  }
  sqlite3_busy_timeout(db, 2000);
  dview v = {0};
  char msg[256] = "";
  int code = 503;
  sqlite3_exec(db, "BEGIN", NULL, NULL, NULL); /* one snapshot for all reads */
  code = dview_read(db, job, &v, msg, sizeof msg);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  if (code != 200) {
    dview_free(&v);
    cairn_status st = code == 404 ? CAIRN_ENOTFOUND : code == 413 ? CAIRN_ETOOBIG : CAIRN_EIO;
    return cairn__api_failf(rs, st, "%s", msg);
  }
  cairn_error err = {0};
  cairn_dag *d = cairn_dag_build(v.n, v.edges, v.m, &err);
  json_t *o = d ? dview_json(job, &v, d) : NULL;
  cairn_dag_free(d);
  dview_free(&v);
  if (!o)
    return cairn__api_failf(rs, CAIRN_EIO, "job %lld's dag could not be built", (long long)job);
  cairn__api_json(rs, 200, o);
}
