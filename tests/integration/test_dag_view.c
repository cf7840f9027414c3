/* test_dag_view.c — the dashboard's routes on a real cairn-server:
 * GET /v1/jobs/{id}/dag (a job's dag: keys, depths, parents in job-file
 * order, and E(t) of its policy and of fifo, equal to the IC Pebble Game
 * played here on the same dag; the admin token, unknown jobs, bad ids, the
 * size bound), GET /v1/jobs/{id}/states, GET /v1/jobs/{id}/distribution
 * for a job without broadcast files (its bad requests; a job with one runs
 * in test_distribution), and conditional GETs (ETag, 304). */
#include <curl/curl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/dag.h"
#include "plan/ic_game.h"
#include "plan/policy.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

/* A wavefront of side k: task (i,j) after (i-1,j) and (i,j-1). */
static json_t *wavefront(int k, const char *policy) {
  json_t *tasks = json_array();
  for (int i = 0; i < k; i++)
    for (int j = 0; j < k; j++) {
      char id[32], a[32], b[32];
      snprintf(id, sizeof id, "%d,%d", i, j);
      json_t *t = json_pack("{ss}", "id", id), *after = json_array();
      if (i) {
        snprintf(a, sizeof a, "%d,%d", i - 1, j);
        json_array_append_new(after, json_string(a));
      }
      if (j) {
        snprintf(b, sizeof b, "%d,%d", i, j - 1);
        json_array_append_new(after, json_string(b));
      }
      json_object_set_new(t, "after", after);
      json_array_append_new(tasks, t);
    }
  return json_pack("{ss ss ss so}", "name", "wave", "app", "x", "policy", policy, "tasks", tasks);
}

static long long submit(const char *url, json_t *job) {
  json_t *r = NULL;
  assert_int_equal(harness_http_json(url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, job, &r), 201);
  long long id = json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  json_decref(job);
  return id;
}

/* The answer's profile under name equals cairn__ic_play of ops on its dag. */
static void check_profile(json_t *o, const char *name, const cairn__policy_ops *ops) {
  json_t *par = json_object_get(o, "parents");
  uint32_t n = (uint32_t)json_array_size(par);
  cairn__edge *e = calloc(2 * (size_t)n + 1, sizeof *e);
  uint64_t m = 0;
  for (uint32_t c = 0; c < n; c++) {
    size_t k;
    json_t *p;
    json_array_foreach(json_array_get(par, c), k, p) e[m++] = (cairn__edge){(uint32_t)json_integer_value(p), c};
  }
  cairn_error err = {0};
  cairn__dag *d = cairn__dag_build(n, e, m, &err);
  assert_non_null(d);
  uint32_t *want = calloc((size_t)n + 1, sizeof *want);
  assert_true(cairn__ic_play(d, ops, 1, want, NULL, &err) >= 0);
  json_t *got = json_object_get(json_object_get(o, "profiles"), name);
  assert_int_equal(json_array_size(got), n + 1);
  for (uint32_t t = 0; t <= n; t++)
    assert_int_equal(json_integer_value(json_array_get(got, t)), want[t]);
  assert_int_equal(want[0], 1);
  assert_int_equal(want[n], 0);
  free(want);
  free(e);
  cairn__dag_free(d);
}

static void test_dag_view(void **state) {
  (void)state;
  char path[64];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  long long id = submit(sf.srv.url, wavefront(5, "ic"));
  snprintf(path, sizeof path, "/v1/jobs/%lld/dag", id);

  json_t *o = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(o, "keys")), 25);
  assert_string_equal(json_string_value(json_object_get(o, "policy")), "ic");
  json_t *depth = json_object_get(o, "depth"), *par = json_object_get(o, "parents");
  for (int i = 0; i < 5; i++)
    for (int j = 0; j < 5; j++) {
      assert_int_equal(json_integer_value(json_array_get(depth, (size_t)(i * 5 + j))), i + j);
      assert_int_equal(json_array_size(json_array_get(par, (size_t)(i * 5 + j))), (i > 0) + (j > 0));
    }
  check_profile(o, "fifo", &cairn__policy_fifo);
  check_profile(o, "ic", &cairn__policy_ic);
  json_decref(o);

  /* A fifo job has one profile; the token, unknown jobs and bad ids. */
  long long fifo = submit(sf.srv.url, wavefront(2, "fifo"));
  snprintf(path, sizeof path, "/v1/jobs/%lld/dag", fifo);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 200);
  assert_int_equal(json_object_size(json_object_get(o, "profiles")), 1);
  json_decref(o);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, NULL, NULL, 0, NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, "wrong-token-0123456789", NULL, 0, NULL, NULL, NULL), 403);
  assert_int_equal(harness_http(sf.srv.url, "POST", path, HARNESS_ADMIN_TOKEN, "{}", 2, NULL, NULL, NULL), 405);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/999/dag", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/x1/dag", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 400);

  /* The distribution view of a job without broadcast files: nothing to
   * show; the token, the method, unknown, bad and deleted jobs. */
  snprintf(path, sizeof path, "/v1/jobs/%lld/distribution", fifo);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 200);
  assert_int_equal(json_integer_value(json_object_get(o, "job")), fifo);
  assert_int_equal(json_array_size(json_object_get(o, "files")), 0);
  assert_true(json_is_array(json_object_get(o, "rates")));
  json_decref(o);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, NULL, NULL, 0, NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, "wrong-token-0123456789", NULL, 0, NULL, NULL, NULL), 403);
  assert_int_equal(harness_http(sf.srv.url, "POST", path, HARNESS_ADMIN_TOKEN, "{}", 2, NULL, NULL, NULL), 405);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/999/distribution", HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 404);
  assert_string_equal(json_string_value(json_object_get(json_object_get(o, "error"), "message")), "no job 999");
  json_decref(o);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/01/distribution", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 400);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/-1/distribution", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 400);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/1/distribution/x", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 404);
  char del[64];
  snprintf(del, sizeof del, "/v1/jobs/%lld", fifo);
  assert_int_equal(harness_http(sf.srv.url, "DELETE", del, HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 200);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 404);

  /* Past 20,000 tasks: 413 naming the bound, nothing built. */
  long long big = submit(sf.srv.url, wavefront(142, "fifo")); /* 20,164 tasks */
  snprintf(path, sizeof path, "/v1/jobs/%lld/dag", big);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 413);
  const char *msg = json_string_value(json_object_get(json_object_get(o, "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "20000 tasks"));
  json_decref(o);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static size_t on_header(char *b, size_t size, size_t n, void *ud) {
  if (size * n > 6 && strncasecmp(b, "ETag: ", 6) == 0)
    snprintf(ud, 32, "%.*s", (int)strcspn(b + 6, "\r\n"), b + 6);
  return size * n;
}
static size_t on_body(char *b, size_t size, size_t n, void *ud) {
  (void)b;
  *(size_t *)ud += size * n;
  return size * n;
}

/* GET url+path with If-None-Match inm (NULL: none): the status; the ETag
 * answered to etag (32 bytes), the body's length to *len. */
static long get_etag(const char *url, const char *path, const char *inm, char *etag, size_t *len) {
  char full[512], auth[128], cond[64];
  snprintf(full, sizeof full, "%s%s", url, path);
  snprintf(auth, sizeof auth, "Authorization: Bearer %s", HARNESS_ADMIN_TOKEN);
  struct curl_slist *h = curl_slist_append(NULL, auth);
  if (inm) {
    snprintf(cond, sizeof cond, "If-None-Match: %s", inm);
    h = curl_slist_append(h, cond);
  }
  CURL *c = curl_easy_init();
  etag[0] = '\0';
  *len = 0;
  curl_easy_setopt(c, CURLOPT_URL, full);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, h);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, etag);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, len);
  long st = 0;
  if (curl_easy_perform(c) == CURLE_OK)
    curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &st);
  curl_easy_cleanup(c);
  curl_slist_free_all(h);
  return st;
}

/* GET /v1/jobs/{id}/states: a letter per task in job-file order, the first
 * key; a second GET with the ETag is 304 without a body until a state
 * changes (a worker's lease makes a task running). */
static void test_states_and_etags(void **state) {
  (void)state;
  char path[64];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  long long id = submit(sf.srv.url, wavefront(3, "fifo"));
  snprintf(path, sizeof path, "/v1/jobs/%lld/states", id);
  json_t *o = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &o, NULL, NULL), 200);
  assert_string_equal(json_string_value(json_object_get(o, "states")), "ewwwwwwww");
  json_t *tasks = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &tasks, NULL, NULL), 200);
  assert_int_equal(json_integer_value(json_object_get(o, "first_key")),
                   json_integer_value(json_object_get(json_array_get(json_object_get(tasks, "tasks"), 0), "key")));
  json_decref(tasks);
  json_decref(o);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/v1/jobs/77/states", HARNESS_ADMIN_TOKEN, NULL, 0, NULL, NULL, NULL), 404);
  snprintf(path, sizeof path, "/v1/jobs/%lld/states", id);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, NULL, NULL, 0, NULL, NULL, NULL), 401);

  char etag[32], again[32];
  size_t len = 0;
  assert_int_equal(get_etag(sf.srv.url, path, NULL, etag, &len), 200);
  assert_true(strlen(etag) > 2 && len > 0);
  assert_int_equal(get_etag(sf.srv.url, path, etag, again, &len), 304);
  assert_int_equal(len, 0);
  assert_int_equal(get_etag(sf.srv.url, "/v1/jobs", "\"0000000000000000\"", again, &len), 200);
  char dpath[64], dtag[32];
  snprintf(dpath, sizeof dpath, "/v1/jobs/%lld/distribution", id);
  assert_int_equal(get_etag(sf.srv.url, dpath, NULL, dtag, &len), 200);
  assert_true(strlen(dtag) > 2 && len > 0);
  assert_int_equal(get_etag(sf.srv.url, dpath, dtag, again, &len), 304);
  assert_int_equal(len, 0);
  char vtok[65];
  assert_true(harness_register(sf.srv.url, "w", "x", vtok) > 0);
  json_t *work = json_pack("{s[s]}", "apps", "x"), *lease = NULL;
  assert_int_equal(harness_http_json(sf.srv.url, "POST", "/v1/work", vtok, work, &lease), 200);
  json_decref(work);
  json_decref(lease);
  assert_int_equal(get_etag(sf.srv.url, path, etag, again, &len), 200); /* changed: a new body */
  assert_string_not_equal(etag, again);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_dag_view),
                                     cmocka_unit_test(test_states_and_etags)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
