/* auditlog.c — the audit log's public routes (docs/protocol.md, "Audit
 * log"; server/store/tree.h): GET /v1/audit/key, /v1/audit/sth,
 * /v1/audit/entries, /v1/audit/proof, /v1/audit/consistency, no token
 * needed; and what other answers carry of it: a result's receipt, the
 * newest head in a heartbeat's answer, the leaves of an index's entries in
 * the audit answer. Every read goes through one of the log's two readers
 * (each its own read-only connection and mutex: m->audit for the public
 * routes, m->audit_own for the master's own answers), never under c->lock:
 * O(log n) reads an answer, a range of entries O(its at most
 * CAIRN_TREE_MAX_ENTRIES rows). */
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/sth.h"
#include "server/api/api.h"
#include "server/store/tree.h"

/* 1 when the master keeps the log, else 0 with the 404 in rs. */
static int log_on(cairn_master *m, cairn__resp *rs) {
  if (m->audit)
    return 1;
  cairn__api_failf(rs, CAIRN_ENOTFOUND, "this master keeps no audit log (it runs with "
                   "--audit-tree off or --audit-chain off)");
  return 0;
}

/* Query argument name (value v): a whole number from lo; -1 with the 400
 * naming it in rs. */
static int64_t arg(const char *name, const char *v, int64_t lo, cairn__resp *rs) {
  int64_t n = 0;
  const char *p = v;
  if (!v) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" is missing: a whole number from %" PRId64
                     " is needed", name, lo);
    return -1;
  }
  for (; *p >= '0' && *p <= '9' && n <= (INT64_MAX - 9) / 10; p++)
    n = n * 10 + (*p - '0');
  if (!*v || *p || n < lo) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be a whole number from %" PRId64 ", not "
                     "\"%.40s\"", name, lo, v);
    return -1;
  }
  return n;
}

void cairn__api_log_key(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  (void)rq;
  if (log_on(m, rs))
    cairn__api_json(rs, 200, json_pack("{s:o}", "public_key", cairn__b64_json(m->audit_pk, 32)));
}

void cairn__api_log_sth(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  (void)rq;
  cairn__sth h;
  cairn_error err = {0};
  if (!log_on(m, rs))
    return;
  if (cairn__tree_newest(m->audit, &h, &err) != CAIRN_OK)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, cairn__sth_json(&h));
}

static int add_entry(void *ud, uint64_t leaf, const void *body, size_t len) {
  (void)leaf;
  char *b = malloc(cairn__base64_encoded_len(len) + 1);
  if (!b)
    return -1;
  cairn__base64_encode(body, len, b);
  json_t *o = json_pack("{s:s}", "leaf_input", b);
  free(b);
  return o ? json_array_append_new(ud, o) : -1;
}

void cairn__api_log_entries(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t start = arg("start", rq->arg_start, 0, rs), end = -1;
  if (start < 0 || (end = arg("end", rq->arg_end, 0, rs)) < 0 || !log_on(m, rs))
    return;
  if (end < start)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"end\" %" PRId64 " is below \"start\" %" PRId64,
                            end, start);
  if (end - start >= CAIRN_TREE_MAX_ENTRIES)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"start\" %" PRId64 " to \"end\" %" PRId64
                            " names %" PRId64 " entries: at most %d a request", start, end,
                            end - start + 1, CAIRN_TREE_MAX_ENTRIES);
  json_t *list = json_array();
  uint64_t last = 0;
  cairn_error err = {0};
  if (!list)
    return cairn__api_failf(rs, CAIRN_ENOMEM, "out of memory");
  if (cairn__tree_entries(m->audit, (uint64_t)start, (uint64_t)end, add_entry, list, &last,
                          &err) != CAIRN_OK) {
    json_decref(list);
    return cairn__api_fail(rs, &err);
  }
  cairn__api_json(rs, 200, json_pack("{s:o}", "entries", list));
}

void cairn__api_log_proof(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t leaf = arg("leaf_index", rq->arg_leaf_index, 0, rs), size = -1;
  if (leaf < 0 || (size = arg("tree_size", rq->arg_tree_size, 1, rs)) < 0 || !log_on(m, rs))
    return;
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t n = 0;
  cairn_error err = {0};
  if (cairn__tree_inclusion(m->audit, (uint64_t)leaf, (uint64_t)size, path, &n, &err) != CAIRN_OK)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, json_pack("{s:I, s:I, s:o}", "leaf_index", (json_int_t)leaf,
                                     "tree_size", (json_int_t)size, "audit_path",
                                     cairn__proof_json(path, n)));
}

void cairn__api_log_consistency(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t first = arg("first", rq->arg_first, 1, rs), second = -1;
  if (first < 0 || (second = arg("second", rq->arg_second, 1, rs)) < 0 || !log_on(m, rs))
    return;
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t n = 0;
  cairn_error err = {0};
  if (cairn__tree_consistency(m->audit, (uint64_t)first, (uint64_t)second, path, &n, &err) !=
      CAIRN_OK)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, json_pack("{s:o}", "consistency", cairn__proof_json(path, n)));
}

json_t *cairn__api_log_receipt(cairn_master *m, int64_t idx) {
  int64_t alloc = -1, result = -1;
  uint8_t h[CAIRN_MERKLE_HASH];
  uint64_t leaf = 0;
  cairn_error err = {0};
  if (m->audit_tree && cairn__tree_recent(m->audit_tree, idx, &leaf, h)) /* O(1), no read */
    result = (int64_t)leaf;
  else if (!m->audit_own ||
      cairn__tree_leaves_of(m->audit_own, idx, &alloc, &result, h, &err) != CAIRN_OK || result < 0)
    return NULL;
  return json_pack("{s:I, s:o}", "leaf_index", (json_int_t)result, "leaf_hash",
                   cairn__b64_json(h, sizeof h));
}

void cairn__api_log_heartbeat(cairn_master *m, json_t *answer) {
  cairn__sth h;
  cairn_error err = {0};
  if (m->audit_own && cairn__tree_newest(m->audit_own, &h, &err) == CAIRN_OK)
    json_object_set_new(answer, "sth", cairn__sth_json(&h));
}

void cairn__api_log_leaves(cairn_master *m, int64_t idx, json_t *o) {
  int64_t alloc = -1, result = -1;
  uint8_t h[CAIRN_MERKLE_HASH];
  cairn_error err = {0};
  if (!m->audit_own ||
      cairn__tree_leaves_of(m->audit_own, idx, &alloc, &result, h, &err) != CAIRN_OK)
    return;
  if (alloc >= 0)
    json_object_set_new(o, "leaf_index", json_integer(alloc));
  json_t *res = json_object_get(o, "result");
  if (json_is_object(res) && result >= 0)
    json_object_set_new(res, "leaf_index", json_integer(result));
}
