/* test_dist_sources.c — the master's choice of sources for a broadcast input
 * (docs/protocol.md, "Data distribution"), driven over HTTP. Online rule
 * (--broadcast-plan online): the first copy into a cluster comes from the
 * master, the rest of that cluster waits for it and then fetches from
 * holders in the cluster, one local copy at a time per holder; bytes served
 * are accounted by source. Planned (ECEF-LA): the first copy into each
 * cluster comes from the cluster the plan names, in the plan's order. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "tests/support/harness.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static long long reg(const char *url, const char *name, const char *cluster, const char *peer,
                     char tok[65], char peer_token[65]) {
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", name, "cluster", cluster, "apps",
                        "big", "peer_url", peer), *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  json_decref(b);
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  if (peer_token)
    snprintf(peer_token, 65, "%s", json_string_value(json_object_get(r, "peer_token")));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* POST /v1/work; returns the first input's sources (caller decrefs) or NULL on 204. */
static json_t *sources_for(const char *url, const char *tok) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/work", tok, NULL, 0, &r, NULL, NULL);
  if (st == 204)
    return NULL;
  assert_int_equal(st, 200);
  json_t *in = json_array_get(json_object_get(json_object_get(r, "task"), "inputs"), 0);
  json_t *src = json_incref(json_object_get(in, "sources"));
  assert_string_equal(json_string_value(json_object_get(in, "url")),
                      json_string_value(json_array_get(src, 0)));
  json_decref(r);
  return src;
}

static void have(const char *url, const char *tok, const char *sha) {
  json_t *b = json_pack("{s:[s]}", "have", sha);
  assert_int_equal(harness_http_json(url, "POST", "/v1/heartbeat", tok, b, NULL), 200);
  json_decref(b);
}

/* Uploads a 1 MiB file and submits a job of 8 tasks reading it as a
 * broadcast input; returns the job id. */
static long long submit_broadcast(const char *url, char sha[65], char path[128]) {
  size_t size = 1u << 20;
  char *data = malloc(size);
  for (size_t i = 0; i < size; i++)
    data[i] = (char)(i * 7 + 3);
  cairn_sha256_hex(data, size, sha);
  snprintf(path, 128, "/v1/files/%s", sha);
  assert_int_equal(harness_http(url, "PUT", path, ADMIN, data, size, NULL, NULL, NULL), 201);
  free(data);
  json_t *tasks = json_array();
  for (int i = 0; i < 8; i++) {
    char id[8];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s, s:[s]}", "id", id, "inputs", "big.bin"));
  }
  json_t *job = json_pack("{s:s, s:s, s:[{s:s, s:s, s:b}], s:o}", "app", "big", "policy", "fifo",
                          "files", "name", "big.bin", "sha256", sha, "broadcast", 1, "tasks",
                          tasks), *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  long long jid = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  json_decref(job);
  return jid;
}

static void test_sources_follow_clusters(void **state) {
  (void)state;
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  const char *const online[] = {"--broadcast-plan", "online", NULL};
  assert_int_equal(harness_server_start(&srv, db, online), 0);
  size_t size = 1u << 20;
  char sha[65], path[128];
  long long jid = submit_broadcast(srv.url, sha, path);
  json_t *r = NULL;

  char a1[65], a2[65], a3[65], a4[65], b1[65], b2[65], peer_token[65];
  reg(srv.url, "a1", "a", "http://127.0.0.1:7001", a1, peer_token);
  assert_true(cairn_sha256_valid_hex(peer_token));
  reg(srv.url, "a2", "a", "http://127.0.0.1:7002", a2, NULL);
  reg(srv.url, "a3", "a", "http://127.0.0.1:7003", a3, NULL);
  reg(srv.url, "a4", "a", "http://127.0.0.1:7004", a4, NULL);
  reg(srv.url, "b1", "b", "http://127.0.0.1:7101", b1, NULL);
  reg(srv.url, "b2", "b", "http://127.0.0.1:7102", b2, NULL);

  char c1[65];
  reg(srv.url, "c1", "c", "http://127.0.0.1:7201", c1, NULL);
  char a1url[128], a2url[128];
  snprintf(a1url, sizeof a1url, "http://127.0.0.1:7001/v1/files/%s", sha);
  snprintf(a2url, sizeof a2url, "http://127.0.0.1:7002/v1/files/%s", sha);

  /* first copy into cluster a: from the master */
  json_t *s = sources_for(srv.url, a1);
  assert_int_equal(json_array_size(s), 1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* a2 waits: a copy is on its way into a; b1 waits: the master sends one copy at a time */
  assert_null(sources_for(srv.url, a2));
  assert_null(sources_for(srv.url, b1));
  /* a1 holds it now: a2 fetches from a1, the master last */
  have(srv.url, a1, sha);
  s = sources_for(srv.url, a2);
  assert_true(json_array_size(s) >= 2);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  assert_string_equal(json_string_value(json_array_get(s, json_array_size(s) - 1)), path);
  json_decref(s);
  /* a1 sends one local copy at a time: a3 and a4 wait for it (not the master) */
  assert_null(sources_for(srv.url, a3));
  assert_null(sources_for(srv.url, a4));
  /* the master is free again: cluster b's first copy comes from it */
  s = sources_for(srv.url, b1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  assert_null(sources_for(srv.url, b2));
  /* the master is busy with b1: a holder of cluster a forwards to cluster c */
  have(srv.url, a2, sha);
  s = sources_for(srv.url, c1);
  const char *from = json_string_value(json_array_get(s, 0));
  assert_true(strcmp(from, a1url) == 0 || strcmp(from, a2url) == 0);
  assert_string_equal(json_string_value(json_array_get(s, json_array_size(s) - 1)), path);
  json_decref(s);
  /* a3 and a4 now get a2 and a1 (a copy to another cluster does not count
   * against a holder's local copy) */
  s = sources_for(srv.url, a3);
  const char *f3 = json_string_value(json_array_get(s, 0));
  assert_true(strcmp(f3, a1url) == 0 || strcmp(f3, a2url) == 0);
  json_t *s4 = sources_for(srv.url, a4);
  const char *f4 = json_string_value(json_array_get(s4, 0));
  assert_true(strcmp(f4, a1url) == 0 || strcmp(f4, a2url) == 0);
  assert_string_not_equal(f3, f4);
  json_decref(s);
  json_decref(s4);

  /* accounting: one copy sent by the master, peers report what they served */
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(srv.url, "GET", path, a1, NULL, 0, NULL, &raw, &len), 200);
  assert_int_equal(len, size);
  free(raw);
  json_t *b = json_pack("{s:{s:I}}", "served", sha, (json_int_t)(2 * size));
  assert_int_equal(harness_http_json(srv.url, "POST", "/v1/heartbeat", a1, b, NULL), 200);
  json_decref(b);
  assert_int_equal(harness_http(srv.url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  char line[128];
  snprintf(line, sizeof line, "cairn_file_bytes_served_total{source=\"master\"} %zu", size);
  assert_non_null(strstr(raw, line));
  snprintf(line, sizeof line, "cairn_file_bytes_served_total{source=\"peer\"} %zu", 2 * size);
  assert_non_null(strstr(raw, line));
  free(raw);
  snprintf(path, sizeof path, "/v1/jobs/%lld", jid);
  assert_int_equal(harness_http(srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *bs = json_object_get(r, "bytes_served");
  assert_int_equal(json_integer_value(json_object_get(bs, "master")), (json_int_t)size);
  assert_int_equal(json_integer_value(json_object_get(bs, "peer")), (json_int_t)(2 * size));
  json_t *bf = json_array_get(json_object_get(r, "broadcast_files"), 0);
  assert_int_equal(json_integer_value(json_object_get(bf, "workers")), 6);
  assert_int_equal(json_integer_value(json_object_get(bf, "holding")), 2);
  assert_true(json_is_null(json_object_get(bf, "plan")));
  json_decref(r);
  /* malformed reports are refused */
  const char *bad = "{\"have\": [\"nothex\"]}";
  assert_int_equal(harness_http(srv.url, "POST", "/v1/heartbeat", a1, bad, strlen(bad), NULL, NULL, NULL), 400);
  bad = "{\"peer_url\": \"ftp://x\"}";
  assert_int_equal(harness_http(srv.url, "POST", "/v1/work", a1, bad, strlen(bad), NULL, NULL, NULL), 400);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
}

/* The plan (ECEF-LA with the default rates, 1 MiB): master 0, a 1, b 2, c 3;
 * the master sends to a, then to b; a forwards to c. */
static void test_sources_follow_the_plan(void **state) {
  (void)state;
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  const char *const plan[] = {"--broadcast-plan", "ECEF-LA", NULL};
  assert_int_equal(harness_server_start(&srv, db, plan), 0);
  char sha[65], path[128], a1[65], a2[65], a3[65], b1[65], c1[65];
  long long jid = submit_broadcast(srv.url, sha, path);
  reg(srv.url, "a1", "a", "http://127.0.0.1:7001", a1, NULL);
  reg(srv.url, "a2", "a", "http://127.0.0.1:7002", a2, NULL);
  reg(srv.url, "a3", "a", "http://127.0.0.1:7003", a3, NULL);
  reg(srv.url, "b1", "b", "http://127.0.0.1:7101", b1, NULL);
  reg(srv.url, "c1", "c", "http://127.0.0.1:7201", c1, NULL);
  char a1url[128];
  snprintf(a1url, sizeof a1url, "http://127.0.0.1:7001/v1/files/%s", sha);

  /* a1 first: the master sends a its copy (rank 0 of the master) */
  json_t *s = sources_for(srv.url, a1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* the plan, as the job shows it */
  char jpath[64];
  snprintf(jpath, sizeof jpath, "/v1/jobs/%lld", jid);
  json_t *r = NULL;
  assert_int_equal(harness_http(srv.url, "GET", jpath, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *p = json_object_get(json_array_get(json_object_get(r, "broadcast_files"), 0), "plan");
  assert_string_equal(json_string_value(json_object_get(p, "algorithm")), "ECEF-LA");
  assert_int_equal(json_integer_value(json_object_get(p, "clusters")), 3);
  assert_true(json_real_value(json_object_get(p, "lower_bound_s")) > 0);
  assert_true(json_real_value(json_object_get(p, "predicted_s")) >=
              json_real_value(json_object_get(p, "lower_bound_s")));
  json_t *order = json_object_get(p, "clusters_order");
  assert_int_equal(json_array_size(order), 3);
  const char *want_from[3] = {"master", "master", "a"};
  for (int i = 0; i < 3; i++)
    assert_string_equal(json_string_value(json_object_get(json_array_get(order, i), "from")),
                        want_from[i]);
  json_decref(r);
  /* b1 waits (the master is busy with a); c1 waits (a holds nothing yet) */
  assert_null(sources_for(srv.url, b1));
  assert_null(sources_for(srv.url, c1));
  /* a1 holds it: a2 from a1; the master is free for b */
  have(srv.url, a1, sha);
  s = sources_for(srv.url, a2);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  json_decref(s);
  s = sources_for(srv.url, b1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* c's copy comes from a, as planned, although a1 is sending a local copy
   * (the online rule would make c1 wait for a free holder) */
  s = sources_for(srv.url, c1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  assert_string_equal(json_string_value(json_array_get(s, json_array_size(s) - 1)), path);
  json_decref(s);
  /* a3 waits for a1's local copy to end, not for the master */
  assert_null(sources_for(srv.url, a3));
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);

  /* an unknown planner is refused at start-up, naming the choices */
  const char *const bad[] = {"--broadcast-plan", "nope", NULL};
  assert_int_not_equal(harness_server_start(&srv, db, bad), 0);
}

static void test_cluster_defaults_to_the_workers_net(void **state) {
  (void)state;
  char dir[4096], db[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  harness_server srv;
  assert_int_equal(harness_server_start(&srv, db, NULL), 0);
  json_t *b = json_pack("{s:[s]}", "apps", "x"), *r = NULL;
  assert_int_equal(harness_http_json(srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  assert_string_equal(json_string_value(json_object_get(r, "cluster")), "127.0.0.0/24");
  json_decref(b);
  json_decref(r);
  const char *bad = "{\"apps\": [\"x\"], \"cluster\": \"a\\\"b\"}";
  r = NULL;
  assert_int_equal(harness_http(srv.url, "POST", "/v1/volunteers", NULL, bad, strlen(bad), &r,
                                NULL, NULL), 400);
  json_decref(r);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sources_follow_clusters),
    cmocka_unit_test(test_sources_follow_the_plan),
    cmocka_unit_test(test_cluster_defaults_to_the_workers_net),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
