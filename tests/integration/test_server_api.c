/* test_server_api.c — a real cairn-server on loopback, driven over HTTP:
 * bad input is refused with a message naming the problem and changes nothing;
 * caps, auth, routes; leases expire and a late result gets 409; files are
 * content-addressed; kill -9 loses no acknowledged result; workers' reports
 * of measured downloads ("fetched") are checked and counted; registration
 * and heartbeat answers list the report fields the master takes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static long jobs_count(const char *url) {
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "GET", "/v1/jobs", ADMIN, NULL, 0, &r, NULL, NULL), 200);
  long n = (long)json_array_size(json_object_get(r, "jobs"));
  json_decref(r);
  return n;
}

static void expect_400(const char *url, const char *body, const char *needle) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/jobs", ADMIN, body, strlen(body), &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  if (st != 400 || !msg || !strstr(msg, needle))
    fail_msg("body %s: status %ld message \"%s\" (wanted 400 naming \"%s\")", body, st,
             msg ? msg : "", needle);
  json_decref(r);
}

static void test_bad_jobs_change_nothing(void **state) {
  fixture *f = *state;
  long before = jobs_count(f->srv.url);
  expect_400(f->srv.url, "{\"app\": \"x\", \"tasks\": [", "malformed JSON");
  expect_400(f->srv.url, "{\"app\": \"x\", \"colour\": 1, \"tasks\": [{\"id\": \"a\"}]}",
             "unknown field \"colour\"");
  expect_400(f->srv.url, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"bogus\": 1}]}",
             "task \"a\": unknown field \"bogus\"");
  expect_400(f->srv.url,
             "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"after\": [\"c\"]}, "
             "{\"id\": \"b\", \"after\": [\"a\"]}, {\"id\": \"c\", \"after\": [\"b\"]}]}",
             "dependency cycle");
  expect_400(f->srv.url, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"after\": [\"zz\"]}]}",
             "task \"a\": unknown parent \"zz\"");
  expect_400(f->srv.url, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"a\"}]}",
             "task \"a\": duplicate id");
  expect_400(f->srv.url, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"after\": [\"a\"]}]}",
             "task \"a\"");
  expect_400(f->srv.url, "{\"app\": \"x\", \"policy\": \"nope\", \"tasks\": [{\"id\": \"a\"}]}",
             "unknown policy");
  expect_400(f->srv.url,
             "{\"app\": \"x\", \"policy\": \"fifo\", \"files\": [{\"name\": \"g\", \"sha256\": "
             "\"0000000000000000000000000000000000000000000000000000000000000000\"}], "
             "\"tasks\": [{\"id\": \"a\", \"inputs\": [\"g\"]}]}",
             "has not been uploaded");
  expect_400(f->srv.url, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"inputs\": [\"g\"]}]}",
             "input g is not in \"files\"");
  expect_400(f->srv.url, "[1, 2]", "must be a JSON object");
  assert_int_equal(jobs_count(f->srv.url), before);
}

static void test_caps_auth_routes(void **state) {
  fixture *f = *state;
  json_t *r = NULL;
  /* unknown route, wrong tokens */
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/nothing", ADMIN, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs", NULL, NULL, 0, NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs", "wrong-token-wrong-token", NULL, 0, NULL, NULL, NULL), 403);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", "0123", "{}", 2, NULL, NULL, NULL), 401);
  char tok[65];
  assert_true(harness_register(f->srv.url, "w", "x", tok) > 0);
  /* a volunteer token is not an admin token */
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs", tok, NULL, 0, NULL, NULL, NULL), 403);
  /* the demand route is the admin's; a volunteer that just asked is present and idle */
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/demand", NULL, NULL, 0, NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/demand", tok, NULL, 0, NULL, NULL, NULL), 403);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/demand", ADMIN, "{}", 2, NULL, NULL, NULL), 405);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/demand", ADMIN, NULL, 0, &r, NULL, NULL), 200);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "volunteers"), "idle")), 1);
  assert_string_equal(json_string_value(json_object_get(r, "registration")), "open");
  json_decref(r);
  r = NULL;
  /* registration: unknown field and missing apps */
  const char *bad = "{\"name\": \"w\", \"apps\": [\"x\"], \"speed\": 3}";
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/volunteers", NULL, bad, strlen(bad), &r, NULL, NULL), 400);
  assert_non_null(strstr(json_string_value(json_object_get(json_object_get(r, "error"), "message")), "speed"));
  json_decref(r);
  /* oversized body: 65 MiB of JSON is refused with 413 */
  size_t big = 65u * 1024 * 1024;
  char *huge = malloc(big);
  memset(huge, ' ', big);
  huge[0] = '{';
  huge[big - 1] = '}';
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, huge, big, NULL, NULL, NULL), 413);
  free(huge);
  /* oversized result: 2 MiB output */
  assert_int_equal(harness_http(f->srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL), 200);
  char *raw = NULL;
  size_t rawlen = 0;
  assert_int_equal(harness_http(f->srv.url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &rawlen), 200);
  assert_non_null(strstr(raw, "cairn_http_requests_total{route=\"/v1/jobs\",status=\"413\"} 1"));
  assert_non_null(strstr(raw, "cairn_tasks{state=\"eligible\"}"));
  free(raw);
}

static long long submit(const char *url, const char *job) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r, NULL, NULL);
  assert_int_equal(st, 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static json_t *work(const char *url, const char *tok) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", "/v1/work", tok, NULL, 0, &r, NULL, NULL);
  if (st == 204)
    return NULL;
  assert_int_equal(st, 200);
  return r;
}

static long put_result(const char *url, const char *tok, long long idx, int exit_status,
                       const char *output) {
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  json_t *b = json_pack("{s:i, s:s}", "exit_status", exit_status, "output", output);
  long st = harness_http_json(url, "PUT", path, tok, b, NULL);
  json_decref(b);
  return st;
}

static void test_late_result_after_reissue_gets_409(void **state) {
  fixture *f = *state;
  char a[65], b[65];
  harness_register(f->srv.url, "slow", "late", a);
  harness_register(f->srv.url, "fast", "late", b);
  long long job = submit(f->srv.url, "{\"app\": \"late\", \"policy\": \"fifo\", "
                                     "\"lease_seconds\": 1, \"tasks\": [{\"id\": \"t\"}]}");
  json_t *wa = work(f->srv.url, a);
  assert_non_null(wa);
  long long ia = (long long)json_integer_value(json_object_get(wa, "index"));
  json_decref(wa);
  assert_null(work(f->srv.url, b)); /* nothing else eligible while leased */
  /* the lease expires; the task is reissued to b */
  json_t *wb = NULL;
  double until = harness_now() + 10;
  while (!wb && harness_now() < until) {
    usleep(200000);
    wb = work(f->srv.url, b);
  }
  assert_non_null(wb);
  long long ib = (long long)json_integer_value(json_object_get(wb, "index"));
  assert_true(ib != ia);
  json_decref(wb);
  assert_int_equal(put_result(f->srv.url, a, ia, 0, "late"), 409);
  assert_int_equal(put_result(f->srv.url, b, ia, 0, "stolen"), 403);
  assert_int_equal(put_result(f->srv.url, b, ib, 0, "on time"), 200);
  assert_int_equal(put_result(f->srv.url, b, ib, 0, "twice"), 409);
  assert_int_equal(put_result(f->srv.url, b, 999999937, 0, "never"), 404);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *t = json_array_get(json_object_get(r, "tasks"), 0);
  assert_string_equal(json_string_value(json_object_get(t, "output")), "on time");
  assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
  assert_int_equal(json_integer_value(json_object_get(t, "index")), ib);
  json_decref(r);
}

static void test_failed_app_retries_then_fails(void **state) {
  fixture *f = *state;
  char a[65];
  harness_register(f->srv.url, "crashy", "crash", a);
  long long job = submit(f->srv.url, "{\"app\": \"crash\", \"policy\": \"fifo\", \"max_attempts\": 2, "
                                     "\"tasks\": [{\"id\": \"t\"}, {\"id\": \"u\", \"after\": [\"t\"]}]}");
  for (int i = 0; i < 2; i++) {
    json_t *w = work(f->srv.url, a);
    assert_non_null(w);
    assert_int_equal(put_result(f->srv.url, a, (long long)json_integer_value(json_object_get(w, "index")),
                                139, "segfault"), 200);
    json_decref(w);
  }
  assert_null(work(f->srv.url, a));
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "failed");
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "failed")), 1);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "counts"), "waiting")), 1);
  json_decref(r);
}

static void test_files_content_addressed(void **state) {
  fixture *f = *state;
  const char *data = "ACGTACGT\nTTGA\n";
  char sha[65], path[128];
  cairn__sha256_hex(data, strlen(data), sha);
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  /* wrong hash in the URL: refused, nothing stored */
  char other[65];
  cairn__sha256_hex("x", 1, other);
  char opath[128];
  snprintf(opath, sizeof opath, "/v1/files/%s", other);
  assert_int_equal(harness_http(f->srv.url, "PUT", opath, ADMIN, data, strlen(data), NULL, NULL, NULL), 400);
  assert_int_equal(harness_http(f->srv.url, "GET", opath, ADMIN, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(f->srv.url, "PUT", path, NULL, data, strlen(data), NULL, NULL, NULL), 401);
  assert_int_equal(harness_http(f->srv.url, "PUT", "/v1/files/abc", ADMIN, data, strlen(data), NULL, NULL, NULL), 400);
  assert_int_equal(harness_http(f->srv.url, "PUT", path, ADMIN, data, strlen(data), NULL, NULL, NULL), 201);
  assert_int_equal(harness_http(f->srv.url, "PUT", path, ADMIN, data, strlen(data), NULL, NULL, NULL), 200);
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(f->srv.url, "GET", path, ADMIN, NULL, 0, NULL, &raw, &len), 200);
  assert_int_equal(len, strlen(data));
  assert_memory_equal(raw, data, len);
  free(raw);
  /* a job may now name the file; the work response carries its hash and size */
  char tok[65];
  harness_register(f->srv.url, "reader", "readf", tok);
  char job[512];
  snprintf(job, sizeof job, "{\"app\": \"readf\", \"policy\": \"fifo\", \"files\": [{\"name\": \"g.fa\", \"sha256\": \"%s\"}], "
                            "\"tasks\": [{\"id\": \"r\", \"inputs\": [\"g.fa\"]}]}", sha);
  submit(f->srv.url, job);
  json_t *w = work(f->srv.url, tok);
  json_t *in = json_array_get(json_object_get(json_object_get(w, "task"), "inputs"), 0);
  assert_string_equal(json_string_value(json_object_get(in, "sha256")), sha);
  assert_int_equal(json_integer_value(json_object_get(in, "size")), (json_int_t)strlen(data));
  assert_string_equal(json_string_value(json_object_get(in, "url")), path);
  json_decref(w);
}

static void test_result_with_next_task(void **state) {
  fixture *f = *state;
  char a[65];
  harness_register(f->srv.url, "chain", "chain", a);
  submit(f->srv.url, "{\"app\": \"chain\", \"tasks\": [{\"id\": \"p\"}, "
                     "{\"id\": \"c\", \"after\": [\"p\"]}]}");
  json_t *w = work(f->srv.url, a);
  assert_non_null(w);
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld",
           (long long)json_integer_value(json_object_get(w, "index")));
  json_decref(w);
  /* the child becomes eligible with this result and comes back in the same answer */
  json_t *b = json_pack("{s:i, s:s, s:b}", "exit_status", 0, "output", "p-out", "next", 1), *r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "PUT", path, a, b, &r), 200);
  json_decref(b);
  json_t *next = json_object_get(r, "next");
  assert_non_null(next);
  assert_string_equal(json_string_value(json_object_get(json_object_get(next, "task"), "id")), "c");
  long long ic = (long long)json_integer_value(json_object_get(next, "index"));
  json_decref(r);
  snprintf(path, sizeof path, "/v1/results/%lld", ic);
  b = json_pack("{s:i, s:s, s:b}", "exit_status", 0, "output", "c-out", "next", 1);
  assert_int_equal(harness_http_json(f->srv.url, "PUT", path, a, b, &r), 200);
  json_decref(b);
  assert_null(json_object_get(r, "next")); /* nothing left */
  json_decref(r);
  b = json_pack("{s:i, s:s, s:i}", "exit_status", 0, "output", "x", "next", 1);
  assert_int_equal(harness_http_json(f->srv.url, "PUT", path, a, b, NULL), 400);
  json_decref(b);
}

/* cairn_fetch_reports_total, or -1. */
/* The value of the /metrics line that starts with key, or -1. */
static long long metric(const char *url, const char *key) {
  char *raw = NULL, line[256];
  size_t len = 0;
  long long n = -1;
  snprintf(line, sizeof line, "\n%s ", key);
  if (harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len) == 200 && raw) {
    const char *p = strstr(raw, line);
    if (p)
      n = atoll(p + strlen(line));
  }
  free(raw);
  return n;
}

static long long fetch_reports(const char *url) {
  return metric(url, "cairn_fetch_reports_total");
}

/* POSTs body to route as tok; 400 whose message names needle. */
static void expect_report_400(const char *url, const char *route, const char *tok,
                              const char *body, const char *needle) {
  json_t *r = NULL;
  long st = harness_http(url, "POST", route, tok, body, strlen(body), &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  if (st != 400 || !msg || !strstr(msg, needle))
    fail_msg("%s %.200s: status %ld message \"%s\" (wanted 400 naming \"%s\")", route, body,
             st, msg ? msg : "", needle);
  json_decref(r);
}

/* {"fetched": [n entries]} where entry i has bytes i and ms i + 1. */
static json_t *fetched_body(int n, const char *source) {
  json_t *a = json_array();
  char sha[65];
  for (int i = 0; i < n; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:i}", "sha256", sha, "source", source,
                                       "bytes", i, "ms", i + 1));
  }
  return json_pack("{s:o}", "fetched", a);
}

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
/* One well-formed "fetched" entry. */
#define GOOD "{\"sha256\": \"" SHA_A "\", \"source\": \"/v1/files/" SHA_A "\", " \
             "\"bytes\": 10, \"ms\": 5}"

static void test_fetched_reports(void **state) {
  fixture *f = *state;
  char tok[65], big[700];
  assert_true(harness_register(f->srv.url, "fetcher", "x", tok) > 0);
  long long before = fetch_reports(f->srv.url);
  assert_true(before >= 0);
  static const struct {
    const char *body, *needle;
  } bad[] = {
    {"{\"fetched\": {}}", "\"fetched\" must be an array of at most 64"},
    {"{\"fetched\": [1]}", "fetched[0] must be an object"},
    {"{\"fetched\": [{\"sha256\": \"" SHA_A "\", \"source\": \"/v1/files/x\", "
     "\"bytes\": 1, \"ms\": 1, \"speed\": 3}]}",
     "fetched[0]: unknown field \"speed\""},
    {"{\"fetched\": [" GOOD ", {\"sha256\": \"AAAA\", \"source\": \"/x\", \"bytes\": 1, "
     "\"ms\": 1}]}",
     "fetched[1].sha256 must be a sha256 digest"},
    {"{\"fetched\": [{\"sha256\": \"" SHA_A "\", \"bytes\": 1, \"ms\": 1}]}",
     "fetched[0].source must be a string of at most 511 bytes"},
    {"{\"fetched\": [{\"sha256\": \"" SHA_A "\", \"source\": \"/x\", \"bytes\": -1, "
     "\"ms\": 1}]}",
     "fetched[0].bytes must be a non-negative integer"},
    {"{\"fetched\": [" GOOD ", " GOOD ", {\"sha256\": \"" SHA_A "\", \"source\": \"/x\", "
     "\"bytes\": 1, \"ms\": 1.5}]}",
     "fetched[2].ms must be a non-negative integer"},
    {"{\"have\": [\"" SHA_A "\"], \"fetched\": [" GOOD ", {\"sha256\": \"" SHA_A "\", "
     "\"source\": \"/x\", \"bytes\": 1}]}",
     "fetched[1].ms must be a non-negative integer"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    expect_report_400(f->srv.url, "/v1/heartbeat", tok, bad[i].body, bad[i].needle);
    expect_report_400(f->srv.url, "/v1/work", tok, bad[i].body, bad[i].needle);
  }
  /* 65 entries, and a source of 512 bytes. */
  json_t *b = fetched_body(65, "/v1/files/x"), *r = NULL;
  char *text = json_dumps(b, JSON_COMPACT);
  expect_report_400(f->srv.url, "/v1/heartbeat", tok, text, "at most 64 downloads");
  free(text);
  json_decref(b);
  memset(big, 'x', 512);
  big[512] = '\0';
  b = fetched_body(1, big);
  text = json_dumps(b, JSON_COMPACT);
  expect_report_400(f->srv.url, "/v1/work", tok, text, "fetched[0].source");
  free(text);
  json_decref(b);
  /* Refused reports count for nothing. */
  assert_int_equal(fetch_reports(f->srv.url), before);

  /* Good ones: 64 in a heartbeat (sources of 511 bytes), 3 in a work
   * request (none to give: 204), each entry counted. */
  big[511] = '\0';
  b = fetched_body(64, big);
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/heartbeat", tok, b, &r), 200);
  json_decref(r);
  json_decref(b);
  b = fetched_body(3, "http://127.0.0.1:9/v1/files/" SHA_A);
  json_object_set_new(b, "have", json_pack("[s]", SHA_A));
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/work", tok, b, NULL), 204);
  json_decref(b);
  assert_int_equal(fetch_reports(f->srv.url), before + 67);
}

/* A report is applied whole or not at all: good "have", "served" and
 * "fetched" entries next to a malformed "failed" one count for nothing.
 * (Served bytes count only for a file the reporter holds: its "have".) */
static void test_report_all_or_nothing(void **state) {
  fixture *f = *state;
  const char *data = "served by peers\n";
  const char *peer = "cairn_file_bytes_served_total{source=\"peer\"}";
  char sha[65], path[128], tok[65], good[600], body[900];
  cairn__sha256_hex(data, strlen(data), sha);
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  assert_int_equal(
    harness_http(f->srv.url, "PUT", path, ADMIN, data, strlen(data), NULL, NULL, NULL), 201);
  assert_true(harness_register(f->srv.url, "whole", "x", tok) > 0);
  long long bytes = metric(f->srv.url, peer), reports = fetch_reports(f->srv.url);
  assert_true(bytes >= 0 && reports >= 0);
  snprintf(good, sizeof good,
           "\"have\": [\"%s\"], \"served\": {\"%s\": 1000}, \"fetched\": [{\"sha256\": "
           "\"%s\", \"source\": \"%s\", \"bytes\": 16, \"ms\": 1}]", sha, sha, sha, path);
  snprintf(body, sizeof body,
           "{%s, \"failed\": [{\"sha256\": \"%s\", \"source\": \"http://127.0.0.1:9\", "
           "\"reason\": \"bored\"}]}", good, sha);
  expect_report_400(f->srv.url, "/v1/heartbeat", tok, body, "failed[0].reason");
  assert_int_equal(metric(f->srv.url, peer), bytes);
  assert_int_equal(fetch_reports(f->srv.url), reports);
  snprintf(body, sizeof body, "{%s}", good);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", tok, body, strlen(body),
                                NULL, NULL, NULL), 200);
  assert_int_equal(metric(f->srv.url, peer), bytes + 1000);
  assert_int_equal(fetch_reports(f->srv.url), reports + 1);
}

/* "features" of answer: the names of every report field, in order. */
static void lists_every_feature(json_t *answer) {
  char *text = json_dumps(json_object_get(answer, "features"), JSON_COMPACT);
  assert_non_null(text);
  assert_string_equal(text,
                      "[\"have\",\"served\",\"peer_url\",\"running\",\"fetched\",\"failed\","
                      "\"next\",\"resources\",\"reason\",\"outputs\",\"suspended\",\"wait\",\"batch\",\"cpu\","
                      "\"keep\",\"chunks\",\"peer_max\",\"kept_chunks\",\"progress\",\"usage\",\"cpid\"]");
  free(text);
}

static void test_features_advertised(void **state) {
  fixture *f = *state;
  json_t *b = json_pack("{s:s, s:[s]}", "name", "feat", "apps", "x"), *r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  json_decref(b);
  lists_every_feature(r);
  char tok[65];
  snprintf(tok, sizeof tok, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(r);
  r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", tok, NULL, 0, &r, NULL,
                                NULL), 200);
  lists_every_feature(r);
  json_decref(r);
  /* A registration may state the offer; a bad one is refused, naming it. */
  b = json_pack("{s:s, s:[s], s:{s:i}}", "name", "res", "apps", "x", "resources", "cores", 0);
  r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/volunteers", NULL, b, &r), 400);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "registration: resources: \"cores\" must be an integer"));
  json_decref(b);
  json_decref(r);
  b = json_pack("{s:s, s:[s], s:{s:i, s:i}}", "name", "res", "apps", "x", "resources", "cores",
                8, "memory_mib", 4096);
  r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  json_decref(b);
  json_decref(r);
  /* ... and a report states it as "resources" (in range, known keys only) */
  expect_report_400(f->srv.url, "/v1/work", tok, "{\"resources\": {\"cores\": 2, \"gpus\": 1}}",
                    "resources: unknown field \"gpus\"");
  /* Each body takes its own fields; anything else is an unknown field. */
  expect_report_400(f->srv.url, "/v1/work", tok, "{\"served\": {}}", "unknown field \"served\"");
  expect_report_400(f->srv.url, "/v1/work", tok, "{\"running\": []}",
                    "unknown field \"running\"");
  expect_report_400(f->srv.url, "/v1/heartbeat", tok, "{\"apps\": [\"x\"]}",
                    "unknown field \"apps\"");
  expect_report_400(f->srv.url, "/v1/heartbeat", tok, "{\"have\": [], \"compressed\": 1}",
                    "unknown field \"compressed\"");
  expect_report_400(f->srv.url, "/v1/heartbeat", tok, "{\"have\": [\"" SHA_A "\", \"x\"]}",
                    "have[1] is not a sha256 digest");
  /* "running": [] names no lease: none is extended, none listed. */
  const char *none = "{\"running\": []}";
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", tok, none, strlen(none), &r,
                                NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "extended")), 0);
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_bad_jobs_change_nothing),
    cmocka_unit_test(test_caps_auth_routes),
    cmocka_unit_test(test_report_all_or_nothing),
    cmocka_unit_test(test_late_result_after_reissue_gets_409),
    cmocka_unit_test(test_failed_app_retries_then_fails),
    cmocka_unit_test(test_files_content_addressed),
    cmocka_unit_test(test_result_with_next_task),
    cmocka_unit_test(test_fetched_reports),
    cmocka_unit_test(test_features_advertised),
  };
  return cmocka_run_group_tests(tests, server_fixture_setup, server_fixture_teardown);
}
