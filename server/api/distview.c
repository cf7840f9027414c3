/* distview.c — GET /v1/jobs/{id}/distribution (admin): what the
 * dashboard's distribution view draws (docs/dashboard.md). For each
 * broadcast file of the job: the plan in force (as the master recorded it
 * when it built it, distribution.c), the copies that actually travelled
 * (as the receiving workers reported them), the bytes each source sent,
 * and the link rates the master measured.
 *
 * Never under c->lock: everything is read from the store file through a
 * read-only connection of this request (store_dist.c), so the answer is
 * the store's view, behind memory only by batches not yet acknowledged.
 * Times are seconds from the file's t0: when it was first handed out as a
 * broadcast input (or, with no plan recorded, the first copy's start).
 * Bounded: at most CAIRN__DIST_VIEW_MAX transfers and senders per file,
 * 512 clusters per plan (as recorded), 4,096 links. Cost: O(rows read).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/api/api.h"
#include "server/store/store.h"

typedef struct dview {
  json_t *files, *rates;
  json_t *file;  /* the file being read */
  int64_t t0;    /* its t0 (Unix ms), 0 until known */
} dview;

static double secs(int64_t ms, int64_t t0) { return (double)(ms - t0) / 1000.0; }

/* The plan's clusters as Gantt rows: seconds from t0 (the plan's own
 * times count from its build). */
static json_t *plan_rows(json_t *rec, int64_t t0, int64_t plans) {
  int64_t built = json_integer_value(json_object_get(rec, "built_ms"));
  double off = secs(built, t0);
  json_t *rows = json_array(), *c;
  size_t i;
  json_array_foreach(json_object_get(rec, "clusters_order"), i, c) {
    double at = json_number_value(json_object_get(c, "at_s"));
    json_array_append_new(rows, json_pack("{s:O, s:O, s:O, s:f, s:f, s:f}", "from",
                                          json_object_get(c, "from"), "to",
                                          json_object_get(c, "cluster"), "workers",
                                          json_object_get(c, "workers"), "start_s", off + at,
                                          "end_s", off + json_number_value(json_object_get(c, "end_s")),
                                          "done_s", off + json_number_value(json_object_get(c, "done_s"))));
  }
  return json_pack("{s:O, s:I, s:f, s:O, s:f, s:f, s:o}", "algorithm",
                   json_object_get(rec, "algorithm"), "plans", (json_int_t)plans, "built_s", off,
                   "informed", json_object_get(rec, "informed"), "predicted_s",
                   off + json_number_value(json_object_get(rec, "predicted_s")), "lower_bound_s",
                   off + json_number_value(json_object_get(rec, "lower_bound_s")), "transfers",
                   rows);
}

static int on_file(void *ud, const char *name, const char *sha256, int64_t size,
                   int64_t started_ms, int64_t plans, const char *plan_body, int64_t total) {
  dview *v = ud;
  json_t *rec = plan_body ? json_loads(plan_body, 0, NULL) : NULL;
  v->t0 = started_ms;
  v->file = json_pack("{s:s, s:s, s:I, s:o, s:I, s:[], s:[]}", "name", name, "sha256", sha256,
                      "size", (json_int_t)size, "plan",
                      rec && started_ms ? plan_rows(rec, started_ms, plans) : json_null(),
                      "transfers_total", (json_int_t)total, "transfers", "by_source");
  json_decref(rec);
  if (!v->file)
    return -1;
  json_object_set_new(v->file, "t0_ms", started_ms ? json_integer(started_ms) : json_null());
  return json_array_append_new(v->files, v->file);
}

static int on_xfer(void *ud, const cairn__store_xfer_row *r) {
  dview *v = ud;
  if (!v->t0) { /* no plan: the first copy (transfers come by start) */
    v->t0 = r->start_ms;
    json_object_set_new(v->file, "t0_ms", json_integer(v->t0));
  }
  json_t *x = json_pack("{s:I, s:s, s:I, s:s, s:o, s:f, s:f, s:I}", "from", (json_int_t)r->src,
                        "from_cluster", r->src ? r->src_cluster : "master", "to",
                        (json_int_t)r->dst, "to_cluster", r->dst_cluster, "assigned",
                        r->assigned >= 0 ? json_integer(r->assigned) : json_null(), "start_s",
                        secs(r->start_ms, v->t0), "end_s", secs(r->end_ms, v->t0), "bytes",
                        (json_int_t)r->bytes);
  return json_array_append_new(json_object_get(v->file, "transfers"), x);
}

static int on_source(void *ud, int64_t src, const char *cluster, int64_t bytes, int64_t copies) {
  dview *v = ud;
  return json_array_append_new(json_object_get(v->file, "by_source"),
                               json_pack("{s:I, s:s, s:I, s:I}", "source", (json_int_t)src,
                                         "cluster", src ? cluster : "master", "bytes",
                                         (json_int_t)bytes, "copies", (json_int_t)copies));
}

static int on_rate(void *ud, const char *src, const char *dst, int64_t bps, int64_t samples) {
  dview *v = ud;
  return json_array_append_new(v->rates, json_pack("{s:s, s:s, s:I, s:I}", "from",
                                                   *src ? src : "master", "to", dst,
                                                   "bytes_per_second", (json_int_t)bps,
                                                   "samples", (json_int_t)samples));
}

void cairn__distview_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t job = cairn__api_job_id(rq, rs);
  if (job < 0)
    return;
  dview v = {.files = json_array(), .rates = json_array()};
  cairn__store_dist_cb cb = {&v, on_file, on_xfer, on_source, on_rate};
  cairn_error err = {0};
  if (!v.files || !v.rates) {
    json_decref(v.files);
    json_decref(v.rates);
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  }
  if (cairn__store_dist_read(m->db_path, job, CAIRN__DIST_VIEW_MAX, &cb, &err) != CAIRN_OK) {
    json_decref(v.files);
    json_decref(v.rates);
    return cairn__api_failf(rs, err.status, "%s", err.text);
  }
  cairn__api_json(rs, 200, json_pack("{s:I, s:o, s:o}", "job", (json_int_t)job, "files", v.files,
                                     "rates", v.rates));
}
