/* dagview.c — GET /v1/jobs/{id}/dag (admin): a job's dag for the
 * dashboard (docs/dashboard.md) and the eligibility profile E(t) of the IC
 * Pebble Game ([Ros] §4.3.1, plan/ic_game.h) played on it by the job's
 * policy and by fifo.
 *
 * Never under c->lock: the job's tasks and edges are read from the store
 * file through a read-only connection of this request (store_dag.c) (WAL readers
 * do not block the writer), so the answer is the store's view: behind
 * memory only by batches not yet acknowledged to anyone. Bounded: a job of
 * more than CAIRN__DAG_VIEW_MAX tasks or CAIRN__DAG_VIEW_MAX_EDGES edges
 * gets 413 and nothing is built. Cost: O(n log n + m) time and
 * O(n + m) memory for n tasks and m edges.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/dag.h"
#include "plan/ic_game.h"
#include "plan/policy.h"
#include "server/api/api.h"
#include "server/store/store.h"

#define CAIRN__DAG_VIEW_MAX 20000
#define CAIRN__DAG_VIEW_MAX_EDGES 400000

/* E(0..n) of policy ops on d as a JSON array, or NULL. */
static json_t *profile_json(const cairn__dag *d, const cairn__policy_ops *ops) {
  uint32_t *prof = malloc(sizeof *prof * ((size_t)d->n + 1));
  cairn_error err = {0};
  json_t *a = NULL;
  if (prof && cairn__ic_play(d, ops, 1, prof, NULL, &err) >= 0) {
    a = json_array();
    for (uint32_t t = 0; t <= d->n; t++)
      json_array_append_new(a, json_integer(prof[t]));
  }
  free(prof);
  return a;
}

/* {"job", "policy", "keys": [...], "depth": [...], "parents": [[i...]],
 * "profiles": {"fifo": [E(0..n)], P: [...]}} (indices into keys). */
static json_t *dview_json(int64_t job, const cairn__store_dag *v, const cairn__dag *d) {
  uint32_t *depth = malloc(sizeof *depth * (d->n ? d->n : 1));
  if (!depth || cairn__dag_levels(d, depth, NULL) != 0) {
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
  const cairn__policy_ops *own = cairn__policy_find(v->policy);
  json_object_set_new(prof, "fifo", profile_json(d, &cairn__policy_fifo));
  if (own && own != &cairn__policy_fifo)
    json_object_set_new(prof, own->name, profile_json(d, own));
  return json_pack("{sI ss so so so so}", "job", (json_int_t)job, "policy", v->policy, "keys",
                   keys, "depth", dep, "parents", par, "profiles", prof);
}

void cairn__dagview_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t job = cairn__api_job_id(rq, rs);
  if (job < 0)
    return;
  cairn__store_dag v;
  cairn_error err = {0};
  if (cairn__store_dag_read(m->db_path, job, CAIRN__DAG_VIEW_MAX, CAIRN__DAG_VIEW_MAX_EDGES, &v,
                           &err) != CAIRN_OK)
    return cairn__api_failf(rs, err.status, "%s", err.text);
  cairn__dag *d = cairn__dag_build(v.n, v.edges, v.m, &err);
  json_t *o = d ? dview_json(job, &v, d) : NULL;
  cairn__dag_free(d);
  cairn__store_dag_free(&v);
  if (!o)
    return cairn__api_failf(rs, CAIRN_EIO, "job %lld's dag could not be built", (long long)job);
  cairn__api_json(rs, 200, o);
}
