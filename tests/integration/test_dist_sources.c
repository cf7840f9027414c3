/* test_dist_sources.c — the master's choice of sources for a broadcast input
 * (docs/protocol.md, "Data distribution"), driven over HTTP. Online rule
 * (--broadcast-plan online): the first copy into a cluster comes from the
 * master, the rest of that cluster waits for it and then fetches from
 * holders in the cluster, one local copy at a time per holder; bytes served
 * are accounted by source. Planned (ECEF-LA): the first copy into each
 * cluster comes from the cluster the plan names, in the plan's order. And
 * the master remembers holders across a kill -9: a real cairn-worker that
 * holds the file is the first source of the next worker of its cluster
 * after the restart, and the master sends no copy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/grant.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static long long reg(const char *url, const char *name, const char *cluster, const char *peer,
                     char tok[65], char peer_key[65]) {
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", name, "cluster", cluster, "apps",
                        "big", "peer_url", peer), *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  json_decref(b);
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  if (peer_key)
    snprintf(peer_key, 65, "%s", json_string_value(json_object_get(r, "peer_key")));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* POST /v1/work; returns the first input's sources as the master wrote
 * them (caller decrefs) or NULL on 204. */
static json_t *granted_sources_for(const char *url, const char *tok) {
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

/* The same, each peer source without its grant, once the grant was found
 * well formed and good for a while (the master's path has none). */
static json_t *sources_for(const char *url, const char *tok) {
  json_t *src = granted_sources_for(url, tok), *plain = json_array();
  size_t i;
  json_t *v;
  json_array_foreach(src, i, v) {
    char s[512], *q, sha[65], not_the_key[65];
    snprintf(s, sizeof s, "%s", json_string_value(v));
    q = strchr(s, '?');
    assert_true((q != NULL) == (s[0] != '/'));
    if (q) {
      assert_true(strncmp(q, "?" CAIRN_GRANT_PARAM "=", 7) == 0);
      snprintf(sha, sizeof sha, "%.64s", q - 64);
      memset(not_the_key, '0', 64);
      not_the_key[64] = '\0';
      cairn__grant_verdict g = cairn__grant_check(not_the_key, sha, q + 7,
                                                (long long)time(NULL) + CAIRN_GRANT_SECONDS -
                                                  CAIRN_GRANT_SKEW_SECONDS - 60, NULL);
      assert_int_equal(g, CAIRN_GRANT_WRONG); /* not malformed, not expired */
      *q = '\0';
    }
    json_array_append_new(plain, json_string(s));
  }
  json_decref(src);
  if (!json_array_size(plain)) {
    json_decref(plain);
    return NULL;
  }
  return plain;
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
  cairn__sha256_hex(data, size, sha);
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
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *const online[] = {"--broadcast-plan", "online", NULL};
  assert_int_equal(server_fixture_restart(&sf, online), 0);
  size_t size = 1u << 20;
  char sha[65], path[128];
  long long jid = submit_broadcast(sf.srv.url, sha, path);
  json_t *r = NULL;

  char a1[65], a2[65], a3[65], a4[65], b1[65], b2[65], peer_key[65];
  reg(sf.srv.url, "a1", "a", "http://127.0.0.1:7001", a1, peer_key);
  assert_true(cairn__sha256_valid_hex(peer_key));
  reg(sf.srv.url, "a2", "a", "http://127.0.0.1:7002", a2, NULL);
  reg(sf.srv.url, "a3", "a", "http://127.0.0.1:7003", a3, NULL);
  reg(sf.srv.url, "a4", "a", "http://127.0.0.1:7004", a4, NULL);
  reg(sf.srv.url, "b1", "b", "http://127.0.0.1:7101", b1, NULL);
  reg(sf.srv.url, "b2", "b", "http://127.0.0.1:7102", b2, NULL);

  char c1[65];
  reg(sf.srv.url, "c1", "c", "http://127.0.0.1:7201", c1, NULL);
  char a1url[128], a2url[128];
  snprintf(a1url, sizeof a1url, "http://127.0.0.1:7001/v1/files/%s", sha);
  snprintf(a2url, sizeof a2url, "http://127.0.0.1:7002/v1/files/%s", sha);

  /* first copy into cluster a: from the master */
  json_t *s = sources_for(sf.srv.url, a1);
  assert_int_equal(json_array_size(s), 1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* a2 waits: a copy is on its way into a; b1 waits: the master sends one copy at a time */
  assert_null(sources_for(sf.srv.url, a2));
  assert_null(sources_for(sf.srv.url, b1));
  /* a1 holds it now: a2 fetches from a1, the master last */
  have(sf.srv.url, a1, sha);
  s = sources_for(sf.srv.url, a2);
  assert_true(json_array_size(s) >= 2);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  assert_string_equal(json_string_value(json_array_get(s, json_array_size(s) - 1)), path);
  json_decref(s);
  /* a1 sends one local copy at a time: a3 and a4 wait for it (not the master) */
  assert_null(sources_for(sf.srv.url, a3));
  assert_null(sources_for(sf.srv.url, a4));
  /* the master is free again: cluster b's first copy comes from it */
  s = sources_for(sf.srv.url, b1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  assert_null(sources_for(sf.srv.url, b2));
  /* the master is busy with b1: a holder of cluster a forwards to cluster c */
  have(sf.srv.url, a2, sha);
  s = sources_for(sf.srv.url, c1);
  const char *from = json_string_value(json_array_get(s, 0));
  assert_true(strcmp(from, a1url) == 0 || strcmp(from, a2url) == 0);
  assert_string_equal(json_string_value(json_array_get(s, json_array_size(s) - 1)), path);
  json_decref(s);
  /* a3 and a4 now get a2 and a1 (a copy to another cluster does not count
   * against a holder's local copy) */
  s = sources_for(sf.srv.url, a3);
  const char *f3 = json_string_value(json_array_get(s, 0));
  assert_true(strcmp(f3, a1url) == 0 || strcmp(f3, a2url) == 0);
  json_t *s4 = sources_for(sf.srv.url, a4);
  const char *f4 = json_string_value(json_array_get(s4, 0));
  assert_true(strcmp(f4, a1url) == 0 || strcmp(f4, a2url) == 0);
  assert_string_not_equal(f3, f4);
  json_decref(s);
  json_decref(s4);

  /* accounting: one copy sent by the master, peers report what they served */
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(sf.srv.url, "GET", path, a1, NULL, 0, NULL, &raw, &len), 200);
  assert_int_equal(len, size);
  free(raw);
  json_t *b = json_pack("{s:{s:I}}", "served", sha, (json_int_t)(2 * size));
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/heartbeat", a1, b, NULL), 200);
  json_decref(b);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len),
                   200);
  char line[128];
  snprintf(line, sizeof line, "cairn_file_bytes_served_total{source=\"master\"} %zu", size);
  assert_non_null(strstr(raw, line));
  snprintf(line, sizeof line, "cairn_file_bytes_served_total{source=\"peer\"} %zu", 2 * size);
  assert_non_null(strstr(raw, line));
  free(raw);
  snprintf(path, sizeof path, "/v1/jobs/%lld", jid);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
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
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/heartbeat", a1, bad, strlen(bad), NULL, NULL, NULL), 400);
  bad = "{\"peer_url\": \"ftp://x\"}";
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/work", a1, bad, strlen(bad), NULL, NULL, NULL), 400);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* The plan (ECEF-LA with the default rates, 1 MiB): master 0, a 1, b 2, c 3;
 * the master sends to a, then to b; a forwards to c. */
static void test_sources_follow_the_plan(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *const plan[] = {"--broadcast-plan", "ECEF-LA", NULL};
  assert_int_equal(server_fixture_restart(&sf, plan), 0);
  char sha[65], path[128], a1[65], a2[65], a3[65], b1[65], c1[65];
  long long jid = submit_broadcast(sf.srv.url, sha, path);
  reg(sf.srv.url, "a1", "a", "http://127.0.0.1:7001", a1, NULL);
  reg(sf.srv.url, "a2", "a", "http://127.0.0.1:7002", a2, NULL);
  reg(sf.srv.url, "a3", "a", "http://127.0.0.1:7003", a3, NULL);
  reg(sf.srv.url, "b1", "b", "http://127.0.0.1:7101", b1, NULL);
  reg(sf.srv.url, "c1", "c", "http://127.0.0.1:7201", c1, NULL);
  char a1url[128];
  snprintf(a1url, sizeof a1url, "http://127.0.0.1:7001/v1/files/%s", sha);

  /* a1 first: the master sends a its copy (rank 0 of the master) */
  json_t *s = sources_for(sf.srv.url, a1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* the plan, as the job shows it */
  char jpath[64];
  snprintf(jpath, sizeof jpath, "/v1/jobs/%lld", jid);
  json_t *r = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", jpath, ADMIN, NULL, 0, &r, NULL, NULL), 200);
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
  assert_null(sources_for(sf.srv.url, b1));
  assert_null(sources_for(sf.srv.url, c1));
  /* a1 holds it: a2 from a1; the master is free for b */
  have(sf.srv.url, a1, sha);
  s = sources_for(sf.srv.url, a2);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  json_decref(s);
  s = sources_for(sf.srv.url, b1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* c's copy comes from a, as planned, although a1 is sending a local copy
   * (the online rule would make c1 wait for a free holder) */
  s = sources_for(sf.srv.url, c1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  assert_string_equal(json_string_value(json_array_get(s, json_array_size(s) - 1)), path);
  json_decref(s);
  /* a3 waits for a1's local copy to end, not for the master */
  assert_null(sources_for(sf.srv.url, a3));
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);

  /* an unknown planner is refused at start-up, naming the choices */
  const char *const bad[] = {"--broadcast-plan", "nope", NULL};
  assert_int_not_equal(server_fixture_restart(&sf, bad), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* The same plan, but nobody in cluster a asks for work: c, planned to get
 * its copy from a, waits for a while and then takes what the online rule
 * gives (the master, once it is free). */
static void test_silent_parent_is_bypassed(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *const plan[] = {"--broadcast-plan", "ECEF-LA", NULL};
  assert_int_equal(server_fixture_restart(&sf, plan), 0);
  char sha[65], path[128], a1[65], a2[65], a3[65], b1[65], c1[65];
  submit_broadcast(sf.srv.url, sha, path);
  reg(sf.srv.url, "a1", "a", "http://127.0.0.1:7001", a1, NULL);
  reg(sf.srv.url, "a2", "a", "http://127.0.0.1:7002", a2, NULL);
  reg(sf.srv.url, "a3", "a", "http://127.0.0.1:7003", a3, NULL);
  reg(sf.srv.url, "b1", "b", "http://127.0.0.1:7101", b1, NULL);
  reg(sf.srv.url, "c1", "c", "http://127.0.0.1:7201", c1, NULL);
  /* c1 waits for a; b1, whose earlier sibling a is not asking, gets the master */
  assert_null(sources_for(sf.srv.url, c1));
  json_t *s = sources_for(sf.srv.url, b1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  /* past a's planned start plus the grace (5 s), a is still silent */
  sleep(6);
  assert_null(sources_for(sf.srv.url, c1)); /* the master is busy with b1, nobody holds it */
  have(sf.srv.url, b1, sha);
  s = sources_for(sf.srv.url, c1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_cluster_defaults_to_the_workers_net(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  json_t *b = json_pack("{s:[s]}", "apps", "x"), *r = NULL;
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  assert_string_equal(json_string_value(json_object_get(r, "cluster")), "127.0.0.0/24");
  json_decref(b);
  json_decref(r);
  const char *bad = "{\"apps\": [\"x\"], \"cluster\": \"a\\\"b\"}";
  r = NULL;
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/volunteers", NULL, bad, strlen(bad), &r,
                                NULL, NULL), 400);
  json_decref(r);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* ---- holders across a restart of the master ---- */

/* The port of the peer server in a cairn-worker log, or 0. */
static unsigned peer_port(const char *log) {
  FILE *fp = fopen(log, "r");
  char line[1024];
  unsigned port = 0;
  while (fp && !port && fgets(line, sizeof line, fp)) {
    const char *p = strstr(line, "peer server listening on ");
    if (p && (p = strstr(p, "(port ")))
      port = (unsigned)atoi(p + 6);
  }
  if (fp)
    fclose(fp);
  return port;
}

/* cairn_file_bytes_served_total{source="master"} of /metrics. */
static long long master_bytes(const char *url) {
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  const char *key = "cairn_file_bytes_served_total{source=\"master\"} ";
  const char *p = strstr(raw, key);
  assert_non_null(p);
  long long v = atoll(p + strlen(key));
  free(raw);
  return v;
}

/* Submits a job of app with one task reading the broadcast file sha. */
static long long submit_one(const char *url, const char *app, const char *sha) {
  json_t *job = json_pack("{s:s, s:s, s:[{s:s, s:s, s:b}], s:[{s:s, s:[s, s], s:[s]}]}", "app",
                          app, "policy", "fifo", "files", "name", "big.bin", "sha256", sha,
                          "broadcast", 1, "tasks", "id", "t0", "args", "-c",
                          "sha256sum inputs/big.bin", "inputs", "big.bin"), *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  json_decref(job);
  return id;
}

/* "state" of job id, and the "holders" of its first broadcast file in *holders. */
static char *job_state(const char *url, long long id, long long *holders) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  char *st = strdup(json_string_value(json_object_get(r, "state")));
  json_t *bf = json_array_get(json_object_get(r, "broadcast_files"), 0);
  *holders = (long long)json_integer_value(json_object_get(bf, "holders"));
  json_decref(r);
  return st;
}

/* last_seen of the volunteer called name, or -1. */
static long long last_seen(const char *url, const char *name) {
  json_t *r = NULL, *v;
  size_t i;
  long long seen = -1;
  assert_int_equal(harness_http(url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  json_array_foreach(json_object_get(r, "volunteers"), i, v)
    if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0)
      seen = (long long)json_integer_value(json_object_get(v, "last_seen"));
  json_decref(r);
  return seen;
}

/* size bytes of a pattern that seed varies (caller frees). */
static char *pattern(size_t size, int seed) {
  char *data = malloc(size);
  assert_non_null(data);
  for (size_t i = 0; i < size; i++)
    data[i] = (char)(i * 13 + (size_t)seed);
  return data;
}

/* Uploads size bytes of pattern seed to the master; their digest in sha
 * and their /v1/files path in path. */
static void upload(const char *url, size_t size, int seed, char sha[65], char path[128]) {
  char *data = pattern(size, seed);
  cairn__sha256_hex(data, size, sha);
  snprintf(path, 128, "/v1/files/%s", sha);
  assert_int_equal(harness_http(url, "PUT", path, ADMIN, data, size, NULL, NULL, NULL), 201);
  free(data);
}

/* 1 when a line of the file at path holds needle. */
static int log_has(const char *path, const char *needle) {
  FILE *fp = fopen(path, "r");
  char line[1024];
  int found = 0;
  while (fp && !found && fgets(line, sizeof line, fp))
    found = strstr(line, needle) != NULL;
  if (fp)
    fclose(fp);
  return found;
}

/* Starts a real cairn-worker "w1" of cluster a for app sum on dir/w1, its
 * peer server on listen, logging to log. */
static pid_t start_w1(const char *url, const char *dir, const char *listen, const char *log) {
  char bin[4096], wdir[4200];
  harness_bin(bin, sizeof bin, "cairn-worker");
  snprintf(wdir, sizeof wdir, "%s/w1", dir);
  const char *argv[] = {bin, "--server", url, "--app", "sum=/bin/sh", "--dir", wdir,
                        "--name", "w1", "--cluster", "a", "--exit-when-idle", "120",
                        "--peer-listen", listen, "--log-level", "debug", NULL};
  pid_t pid = harness_spawn(argv, log);
  assert_true(pid > 0);
  return pid;
}

/* Waits (60 s at most) for job to be done with its file held by one
 * volunteer. */
static void wait_held_once(const char *url, long long job) {
  double until = harness_now() + 60;
  long long holders = 0;
  char *st = NULL;
  for (;;) {
    free(st);
    st = job_state(url, job, &holders);
    if ((strcmp(st, "done") == 0 && holders == 1) || harness_now() > until)
      break;
    usleep(50000);
  }
  assert_string_equal(st, "done");
  free(st);
  assert_int_equal(holders, 1);
}

/* A real cairn-worker (cluster a) runs a task on a broadcast file, so it
 * holds it; the master is killed with SIGKILL and restarted on the same
 * database and port. The worker does not report the file again (the master
 * still knows its token), yet the next worker of cluster a asking for a task
 * on that file is sent to the first worker's peer URL first, which serves
 * it, and the master sends no copy. */
static void test_holders_survive_a_master_kill(void **state) {
  (void)state;
  char log[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  size_t size = 1u << 20;
  char sha[65], path[128];
  upload(sf.srv.url, size, 5, sha, path);
  long long first = submit_one(sf.srv.url, "sum", sha);
  snprintf(log, sizeof log, "%s/w1.log", dir);
  pid_t w1 = start_w1(sf.srv.url, dir, "0.0.0.0:0", log);
  wait_held_once(sf.srv.url, first);
  unsigned port = peer_port(log);
  assert_true(port > 0);
  char peer[64], from_peer[192];
  snprintf(peer, sizeof peer, "http://127.0.0.1:%u", port);
  snprintf(from_peer, sizeof from_peer, "%s/v1/files/%s", peer, sha);
  assert_true(master_bytes(sf.srv.url) == (long long)size); /* w1's copy came from the master */

  /* kill -9 the master; bring it back on the same database and port */
  int ws = server_fixture_stop(&sf, SIGKILL);
  assert_true(WIFSIGNALED(ws) && WTERMSIG(ws) == SIGKILL);
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%s", strrchr(sf.srv.url, ':') + 1);
  const char *again[] = {"--listen", listen, NULL};
  long long restarted = (long long)time(NULL);
  assert_int_equal(server_fixture_restart(&sf, again), 0);
  assert_int_equal(master_bytes(sf.srv.url), 0);
  /* w1 polls the new master (so it counts as reachable) but reports nothing new */
  double until = harness_now() + 30;
  while (last_seen(sf.srv.url, "w1") < restarted && harness_now() < until)
    usleep(100000);
  assert_true(last_seen(sf.srv.url, "w1") >= restarted);

  /* a second worker of cluster a, for an app w1 does not run */
  long long second = submit_one(sf.srv.url, "late", sha);
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", "w2", "cluster", "a", "apps", "late",
                        "peer_url", "http://127.0.0.1:9"), *r = NULL;
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  json_decref(b);
  char tok[65], granted[512];
  snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(r);
  json_t *src = granted_sources_for(sf.srv.url, tok);
  assert_non_null(src);
  snprintf(granted, sizeof granted, "%s", json_string_value(json_array_get(src, 0)));
  assert_true(strncmp(granted, from_peer, strlen(from_peer)) == 0);
  assert_string_equal(json_string_value(json_array_get(src, json_array_size(src) - 1)), path);
  json_decref(src);
  /* that source really has it: w1 serves the file to w2's grant, which the
   * restarted master made with the key w1 heard from the first one (the
   * secret comes from the admin token), and to nobody without a grant */
  char *raw = NULL, got[65];
  size_t len = 0;
  assert_int_equal(harness_http(peer, "GET", path, NULL, NULL, 0, NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(peer, "GET", granted + strlen(peer), NULL, NULL, 0, NULL, &raw,
                                &len), 200);
  assert_int_equal(len, size);
  cairn__sha256_hex(raw, len, got);
  free(raw);
  assert_string_equal(got, sha);
  assert_int_equal(master_bytes(sf.srv.url), 0);
  long long h2 = 0;
  char *st = job_state(sf.srv.url, second, &h2);
  assert_string_equal(st, "running");
  free(st);
  assert_int_equal(h2, 1);

  kill(w1, SIGTERM);
  ws = harness_wait(w1, 60);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}


/* A real cairn-worker restarted on its directory reuses its credentials
 * (no registration), so it learns the master's features from its first
 * heartbeat; then, without any task to run, it reports a file found in its
 * cache and its peer server's new URL, and the next worker of its cluster
 * is sent there. */
static void test_restarted_worker_reports(void **state) {
  (void)state;
  char log[4200], cached[4300];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  char sha[65], path[128], sha2[65], path2[128];
  upload(sf.srv.url, 1u << 20, 5, sha, path);
  snprintf(log, sizeof log, "%s/w1.log", dir);
  pid_t w1 = start_w1(sf.srv.url, dir, "127.0.0.1:0", log);
  wait_held_once(sf.srv.url, submit_one(sf.srv.url, "sum", sha));
  unsigned port = peer_port(log);
  assert_true(port > 0);
  kill(w1, SIGTERM);
  int ws = harness_wait(w1, 60);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);

  /* While it is stopped, a second file lands in its cache. */
  size_t size2 = 256u * 1024;
  upload(sf.srv.url, size2, 7, sha2, path2);
  char *data = pattern(size2, 7);
  snprintf(cached, sizeof cached, "%s/w1/cache/%s", dir, sha2);
  FILE *f = fopen(cached, "wb");
  assert_non_null(f);
  assert_int_equal(fwrite(data, 1, size2, f), size2);
  fclose(f);
  free(data);
  long long second = submit_one(sf.srv.url, "late", sha2);

  /* Back on another port: the master hears of the file and the URL. */
  char listen[64], log2[4200], from_peer[192];
  unsigned port2 = harness_unused_port(port);
  assert_true(port2 > 0);
  snprintf(listen, sizeof listen, "127.0.0.1:%u", port2);
  snprintf(log2, sizeof log2, "%s/w1-again.log", dir);
  w1 = start_w1(sf.srv.url, dir, listen, log2);
  double until = harness_now() + 30;
  long long holders = 0;
  do {
    usleep(100000);
    free(job_state(sf.srv.url, second, &holders));
  } while (holders < 1 && harness_now() < until);
  assert_int_equal(holders, 1);
  assert_true(log_has(log2, "reusing volunteer"));
  assert_false(log_has(log2, "registered with"));
  json_t *b = json_pack("{s:s, s:s, s:[s]}", "name", "w2", "cluster", "a", "apps", "late"), *r;
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  json_decref(b);
  char tok[65];
  snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(r);
  json_t *src = sources_for(sf.srv.url, tok);
  assert_non_null(src);
  snprintf(from_peer, sizeof from_peer, "http://127.0.0.1:%u/v1/files/%s", port2, sha2);
  assert_string_equal(json_string_value(json_array_get(src, 0)), from_peer);
  json_decref(src);

  kill(w1, SIGTERM);
  ws = harness_wait(w1, 60);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* ---- peer sources that failed a worker ("failed") ---- */

/* The value of the /metrics line that starts with key (up to the value). */
static long long metric(const char *url, const char *key) {
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  const char *p = strstr(raw, key);
  assert_non_null(p);
  long long v = atoll(p + strlen(key) + 1);
  free(raw);
  return v;
}

static long long failures(const char *url, const char *reason) {
  char key[96];
  snprintf(key, sizeof key, "cairn_peer_failures_total{reason=\"%s\"}", reason);
  return metric(url, key);
}

/* POSTs body to path as tok; returns the status, and the error message (a
 * static copy, "" when none). */
static long post(const char *url, const char *path, const char *tok, const char *body,
                 const char **msg) {
  static char text[600];
  json_t *r = NULL;
  long st = harness_http(url, "POST", path, tok, body, strlen(body), &r, NULL, NULL);
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  snprintf(text, sizeof text, "%s", m ? m : "");
  json_decref(r);
  *msg = text;
  return st;
}

/* {"failed": [{"sha256": sha, "source": source, "reason": reason}]} */
static char *one_failure(const char *sha, const char *source, const char *reason) {
  json_t *b = json_pack("{s:[{s:s, s:s, s:s}]}", "failed", "sha256", sha, "source", source,
                        "reason", reason);
  char *text = json_dumps(b, JSON_COMPACT);
  json_decref(b);
  return text;
}

/* a2 is sent to a1 and reports that a1's bytes were wrong: a1 holds the file
 * no more, and a3 of the same cluster is not sent to it. A source that is
 * unreachable stays a holder but is not offered for a while. Malformed
 * reports are refused with a message naming the entry and field, and change
 * nothing. */
static void test_failed_sources(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *const online[] = {"--broadcast-plan", "online", NULL};
  assert_int_equal(server_fixture_restart(&sf, online), 0);
  char sha[65], path[128], a1[65], a2[65], a3[65], a4[65], a5[65];
  long long jid = submit_broadcast(sf.srv.url, sha, path);
  reg(sf.srv.url, "a1", "a", "http://127.0.0.1:7001", a1, NULL);
  reg(sf.srv.url, "a2", "a", "http://127.0.0.1:7002", a2, NULL);
  reg(sf.srv.url, "a3", "a", "http://127.0.0.1:7003", a3, NULL);
  reg(sf.srv.url, "a4", "a", "http://127.0.0.1:7004", a4, NULL);
  reg(sf.srv.url, "a5", "a", "http://127.0.0.1:7005", a5, NULL);
  char a1url[128], a3url[128];
  snprintf(a1url, sizeof a1url, "http://127.0.0.1:7001/v1/files/%s", sha);
  snprintf(a3url, sizeof a3url, "http://127.0.0.1:7003/v1/files/%s", sha);
  static const char *const reasons[] = {"unreachable", "stalled", "status", "size", "digest"};
  for (size_t i = 0; i < 5; i++) /* printed from the start */
    assert_int_equal(failures(sf.srv.url, reasons[i]), 0);

  /* a1 gets the master's copy; a2 is sent to a1 */
  json_t *s = sources_for(sf.srv.url, a1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);
  have(sf.srv.url, a1, sha);
  long long holders = 0;
  free(job_state(sf.srv.url, jid, &holders));
  assert_int_equal(holders, 1);
  s = sources_for(sf.srv.url, a2);
  assert_int_equal(json_array_size(s), 2);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  json_decref(s);

  /* malformed reports: 400 naming the entry and field; nothing changes (not
   * even the holding reported beside them) */
  const char *msg = NULL;
  char longsrc[600];
  memset(longsrc, 'x', sizeof longsrc);
  memcpy(longsrc, "http://", 7);
  longsrc[512] = '\0'; /* 512 bytes: one too many */
  json_t *many = json_array();
  for (int i = 0; i < 65; i++)
    json_array_append_new(many, json_pack("{s:s, s:s, s:s}", "sha256", sha, "source", a1url,
                                          "reason", "size"));
  const char *not_array = "\"failed\" must be an array of at most 64 failed sources";
  const char *not_peer = "failed[0].source must be a peer's http:// or https:// URL of at most "
                         "511 bytes";
  const char *not_reason = "must be one of unreachable, stalled, status, size, digest";
  char reason0[128], reason1[128];
  snprintf(reason0, sizeof reason0, "failed[0].reason %s", not_reason);
  snprintf(reason1, sizeof reason1, "failed[1].reason %s", not_reason);
  struct {
    json_t *body;
    const char *msg;
  } bad[] = {
    {json_pack("{s:{}}", "failed"), not_array},
    {json_pack("{s:o}", "failed", many), not_array},
    {json_pack("{s:[i]}", "failed", 1), "failed[0] must be an object"},
    {json_pack("{s:[{s:s, s:s, s:s, s:i}]}", "failed", "sha256", sha, "source", a1url, "reason",
               "digest", "bytes", 1), "failed[0]: unknown field \"bytes\""},
    {json_pack("{s:[{s:s, s:s, s:s}]}", "failed", "sha256", "nothex", "source", a1url, "reason",
               "digest"), "failed[0].sha256 must be a sha256 digest (64 lowercase hex)"},
    {json_pack("{s:[{s:s, s:s}]}", "failed", "sha256", sha, "reason", "digest"), not_peer},
    {json_pack("{s:[{s:s, s:s, s:s}]}", "failed", "sha256", sha, "source", path, "reason",
               "digest"), not_peer},
    {json_pack("{s:[{s:s, s:s, s:s}]}", "failed", "sha256", sha, "source", longsrc, "reason",
               "digest"), not_peer},
    {json_pack("{s:[{s:s, s:s, s:s}]}", "failed", "sha256", sha, "source", a1url, "reason",
               "slow"), reason0},
    {json_pack("{s:[s], s:[{s:s, s:s, s:s}, {s:s, s:s, s:i}]}", "have", sha, "failed", "sha256",
               sha, "source", a1url, "reason", "digest", "sha256", sha, "source", a1url,
               "reason", 5), reason1},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_non_null(bad[i].body);
    char *b = json_dumps(bad[i].body, JSON_COMPACT);
    assert_int_equal(post(sf.srv.url, "/v1/heartbeat", a2, b, &msg), 400);
    assert_string_equal(msg, bad[i].msg);
    assert_int_equal(post(sf.srv.url, "/v1/work", a2, b, &msg), 400);
    assert_string_equal(msg, bad[i].msg);
    free(b);
    json_decref(bad[i].body);
  }
  free(job_state(sf.srv.url, jid, &holders));
  assert_int_equal(holders, 1);
  for (size_t i = 0; i < 5; i++)
    assert_int_equal(failures(sf.srv.url, reasons[i]), 0);

  /* a2 reports that a1 served bytes of the wrong digest: a1 holds it no more */
  char *report = one_failure(sha, a1url, "digest");
  assert_int_equal(post(sf.srv.url, "/v1/heartbeat", a2, report, &msg), 200);
  free(report);
  free(job_state(sf.srv.url, jid, &holders));
  assert_int_equal(holders, 0);
  assert_int_equal(failures(sf.srv.url, "digest"), 1);
  assert_int_equal(failures(sf.srv.url, "unreachable"), 0);
  /* a3 is not sent to a1 (nor made to wait for a2's copy from it): the master */
  s = sources_for(sf.srv.url, a3);
  assert_int_equal(json_array_size(s), 1);
  assert_string_equal(json_string_value(json_array_get(s, 0)), path);
  json_decref(s);

  /* a3 holds it now, and a1 once more (it reported the file again) */
  have(sf.srv.url, a3, sha);
  have(sf.srv.url, a1, sha);
  free(job_state(sf.srv.url, jid, &holders));
  assert_int_equal(holders, 2);
  s = sources_for(sf.srv.url, a4);
  assert_int_equal(json_array_size(s), 3);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a3url);
  assert_string_equal(json_string_value(json_array_get(s, 1)), a1url);
  json_decref(s);
  /* a4 cannot reach a3: a3 still holds the file, but is not offered for
   * now; a5 is sent to a1 alone */
  report = one_failure(sha, a3url, "unreachable");
  assert_int_equal(post(sf.srv.url, "/v1/heartbeat", a4, report, &msg), 200);
  free(report);
  assert_int_equal(failures(sf.srv.url, "unreachable"), 1);
  assert_int_equal(failures(sf.srv.url, "digest"), 1);
  free(job_state(sf.srv.url, jid, &holders));
  assert_int_equal(holders, 2);
  s = sources_for(sf.srv.url, a5);
  assert_int_equal(json_array_size(s), 2);
  assert_string_equal(json_string_value(json_array_get(s, 0)), a1url);
  assert_string_equal(json_string_value(json_array_get(s, 1)), path);
  json_decref(s);

  /* a work request carries failures too */
  report = one_failure(sha, a1url, "status");
  long st = post(sf.srv.url, "/v1/work", a5, report, &msg);
  assert_true(st == 200 || st == 204);
  free(report);
  assert_int_equal(failures(sf.srv.url, "status"), 1);

  /* a volunteer of another cluster, never sent to a1, says a1's copy is
   * bad: its word only pauses a1, which stays a holder */
  char x1[65];
  reg(sf.srv.url, "x1", "x", "http://127.0.0.1:7301", x1, NULL);
  report = one_failure(sha, a1url, "digest");
  assert_int_equal(post(sf.srv.url, "/v1/heartbeat", x1, report, &msg), 200);
  free(report);
  assert_int_equal(failures(sf.srv.url, "digest"), 2);
  free(job_state(sf.srv.url, jid, &holders));
  assert_int_equal(holders, 2);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sources_follow_clusters),
    cmocka_unit_test(test_sources_follow_the_plan),
    cmocka_unit_test(test_silent_parent_is_bypassed),
    cmocka_unit_test(test_cluster_defaults_to_the_workers_net),
    cmocka_unit_test(test_holders_survive_a_master_kill),
    cmocka_unit_test(test_restarted_worker_reports),
    cmocka_unit_test(test_failed_sources),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
