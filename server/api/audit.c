/* audit.c — accountability views ([Ros] §4.3.2): who computed index N,
 * and a volunteer's allocations in order. The index alone names the
 * volunteer and its allocation through φ⁻¹; the store adds what happened. */
#include <jansson.h>
#include <string.h>

#include "server/api/api.h"

/* The volunteer's figures, its trust (trust.c) and quarantine
 * (quarantine.c) as GET /v1/volunteers shows them, or JSON null when there
 * is none. */
static json_t *volunteer_brief(cairn__core *c, int64_t id) {
  cairn__vol_info v;
  if (cairn__core_volunteer(c, id, &v, NULL) != CAIRN_OK)
    return json_null();
  return json_pack("{s:I, s:s, s:s, s:I, s:b, s:I, s:I, s:I, s:I, s:I, s:b, s:b}", "id",
                   (json_int_t)v.id, "name", v.name, "cluster", v.cluster, "row",
                   (json_int_t)v.id, "banned", v.banned, "allocations",
                   (json_int_t)v.allocations, "valid", (json_int_t)v.valid, "invalid",
                   (json_int_t)v.invalid, "pending", (json_int_t)v.pending, "trust",
                   (json_int_t)v.trust, "trusted", v.trusted, "quarantined", v.quarantined);
}

static json_t *row_json(const cairn__store_audit_row *r) {
  json_t *res = json_null();
  if (r->has_result)
    res = json_pack("{s:i, s:s, s:s, s:I, s:o, s:f}", "exit_status", r->exit_status, "digest",
                    r->digest ? r->digest : "", "outcome", r->outcome ? r->outcome : "",
                    "received", (json_int_t)r->received, "cpu_seconds",
                    r->cpu_seconds >= 0 ? json_real(r->cpu_seconds) : json_null(), "credit",
                    r->credit);
  return json_pack("{s:I, s:I, s:I, s:s, s:I, s:I, s:I, s:s, s:I, s:o}", "index",
                   (json_int_t)r->idx, "t", (json_int_t)r->t, "job", (json_int_t)r->job, "task",
                   r->task ? r->task : "", "task_key", (json_int_t)r->task_key, "issued",
                   (json_int_t)r->issued, "lease_expires", (json_int_t)r->lease_expires,
                   "lease_state", r->lease_state ? r->lease_state : "", "round",
                   (json_int_t)r->round, "result", res);
}

static int collect(void *ud, const cairn__store_audit_row *r) {
  json_array_append_new((json_t *)ud, row_json(r));
  return 0;
}

json_t *cairn__audit_index(cairn_master *m, int64_t n, cairn_error *err) {
  uint64_t x = 0, t = 0;
  if (cairn__ataf_invert(cairn__core_family(m->core), (uint64_t)n, &x, &t, err) != CAIRN_OK)
    return NULL;
  json_t *rows = json_array();
  if (cairn__core_audit(m->core, 0, n, collect, rows, err) != CAIRN_OK) {
    json_decref(rows);
    return NULL;
  }
  json_t *o = json_pack("{s:I, s:s, s:I, s:I}", "index", (json_int_t)n, "family",
                        cairn__ataf_family_name(cairn__core_family(m->core)), "row", (json_int_t)x, "t",
                        (json_int_t)t);
  json_t *row = json_array_get(rows, 0);
  json_object_set_new(o, "allocated", json_boolean(row != NULL));
  json_object_set_new(o, "volunteer", volunteer_brief(m->core, (int64_t)x));
  if (row) {
    const char *k;
    json_t *v;
    json_object_foreach(row, k, v) {
      if (strcmp(k, "index") != 0 && strcmp(k, "t") != 0)
        json_object_set(o, k, v);
    }
  }
  json_decref(rows);
  cairn__api_log_leaves(m, n, o); /* the log's leaves of its entries */
  return o;
}

json_t *cairn__audit_volunteer(cairn_master *m, int64_t id, cairn_error *err) {
  json_t *vol = volunteer_brief(m->core, id);
  if (json_is_null(vol)) {
    cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)id);
    return NULL;
  }
  json_t *rows = json_array();
  if (cairn__core_audit(m->core, 1, id, collect, rows, err) != CAIRN_OK) {
    json_decref(rows);
    json_decref(vol);
    return NULL;
  }
  return json_pack("{s:o, s:s, s:o}", "volunteer", vol, "family",
                   cairn__ataf_family_name(cairn__core_family(m->core)), "allocations", rows);
}
