/* test_served_counts.c — what volunteers report as "served" to peers, as
 * a real cairn-server counts it (cairn_file_bytes_served_total{source=
 * "peer"} of /metrics):
 *   - a report for a file the master knows but the volunteer does not hold
 *     counts nothing (neither from a volunteer holding nothing, nor from
 *     one that holds other files); the holder's own report counts;
 *   - reports of the most a report may carry (256 files at 2^50 bytes each,
 *     2^58 bytes) sent 70 times, past 2^64, never wrap the counter: it
 *     grows monotonically and stops at 2^63 - 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define NFILES 256          /* CAIRN_MAX_SERVED, CAIRN_MAX_HAVE: the most a report names */
#define MAX_BYTES "1125899906842624" /* 2^50, the most one entry may say */
#define REPORTS 70          /* 70 x 2^58 > 2^64 */

typedef server_fixture fixture;

static char g_sha[NFILES][65];

/* The peer bytes of /metrics, read as unsigned (what a wrap would show). */
static unsigned long long peer_bytes(fixture *f) {
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(f->srv.url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len),
                   200);
  const char *name = "cairn_file_bytes_served_total{source=\"peer\"} ";
  const char *line = strstr(raw, name);
  assert_non_null(line);
  unsigned long long v = strtoull(line + strlen(name), NULL, 10);
  free(raw);
  return v;
}

/* The admin uploads NFILES distinct small files; their digests in g_sha. */
static void upload_files(fixture *f) {
  for (int i = 0; i < NFILES; i++) {
    char text[32], path[96];
    int n = snprintf(text, sizeof text, "served file %d\n", i);
    cairn__sha256_hex(text, (size_t)n, g_sha[i]);
    snprintf(path, sizeof path, "/v1/files/%s", g_sha[i]);
    long st = harness_http(f->srv.url, "PUT", path, ADMIN, text, (size_t)n, NULL, NULL, NULL);
    assert_true(st == 200 || st == 201);
  }
}

/* POST /v1/heartbeat as token with body (JSON); must be 200. */
static void heartbeat(fixture *f, const char *token, json_t *body) {
  json_t *r = NULL;
  long st = harness_http_json(f->srv.url, "POST", "/v1/heartbeat", token, body, &r);
  if (st != 200)
    fail_msg("heartbeat: %ld", st);
  json_decref(r);
  json_decref(body);
}

/* {"served": {sha: bytes}} for files [from, to) at bytes each. */
static json_t *served(int from, int to, json_int_t bytes) {
  json_t *m = json_object();
  for (int i = from; i < to; i++)
    json_object_set_new(m, g_sha[i], json_integer(bytes));
  return json_pack("{s:o}", "served", m);
}

static void test_only_holdings_count(void **state) {
  fixture *f = *state;
  upload_files(f);
  char other[65];
  assert_true(harness_register(f->srv.url, "w2", "sum", other) > 0);
  /* w1 holds file 0 only */
  heartbeat(f, f->vol, json_pack("{s:[s]}", "have", g_sha[0]));
  assert_int_equal(peer_bytes(f), 0);
  /* w2 holds nothing: its word about file 0 (held by w1) counts nothing */
  heartbeat(f, other, served(0, 1, 1000000));
  assert_int_equal(peer_bytes(f), 0);
  /* w1, about file 1, which the master knows but w1 does not hold: nothing */
  heartbeat(f, f->vol, served(1, 2, 1000000));
  assert_int_equal(peer_bytes(f), 0);
  /* w1 about file 0, which it holds: counted */
  heartbeat(f, f->vol, served(0, 1, 1000));
  assert_int_equal(peer_bytes(f), 1000);
  /* a file the master does not know at all: nothing */
  json_t *b = json_pack("{s:{s:i}}", "served",
                        "ffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffffff", 5);
  heartbeat(f, f->vol, b);
  assert_int_equal(peer_bytes(f), 1000);
}

static void test_counter_saturates(void **state) {
  fixture *f = *state;
  upload_files(f);
  json_t *have = json_array();
  for (int i = 0; i < NFILES; i++)
    json_array_append_new(have, json_string(g_sha[i]));
  heartbeat(f, f->vol, json_pack("{s:o}", "have", have));
  unsigned long long last = peer_bytes(f);
  assert_int_equal(last, 0);
  for (int k = 1; k <= REPORTS; k++) {
    heartbeat(f, f->vol, served(0, NFILES, (json_int_t)strtoll(MAX_BYTES, NULL, 10)));
    unsigned long long now = peer_bytes(f);
    if (now < last)
      fail_msg("report %d: the peer byte counter went from %llu to %llu (wrapped)", k, last,
               now);
    last = now;
  }
  printf("served: %d reports of 256 x 2^50 bytes: counter %llu\n", REPORTS, last);
  assert_true(last == (unsigned long long)INT64_MAX);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_only_holdings_count, server_fixture_setup_with_volunteer,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_counter_saturates, server_fixture_setup_with_volunteer,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
