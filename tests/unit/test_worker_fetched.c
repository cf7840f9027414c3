/* test_worker_fetched.c — the downloads a worker reports to its master
 * ("fetched", docs/protocol.md, "Data distribution"): the fields of each
 * entry, each entry reported once (taken by a report, gone when the master
 * answered, back when it did not), at most 64 per report and a bounded
 * backlog, and a master that refuses the field: over real HTTP on loopback,
 * one that knows "have" but not "fetched" gets the report again without it,
 * one that knows neither gets "{}". */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <arpa/inet.h>
#include <jansson.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/old_master.h"
#include "worker/leases.h"
#include "worker/peerstate.h"
#include "worker/session.h"
#include "worker/transport.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define HOUR_MS (3600LL * 1000)

/* The body of a report, parsed; the report stays open in *r. */
static json_t *begin(cairn__peerstate *ps, long long now, cairn__peer_report *r) {
  char *body = cairn__peerstate_report_begin(ps, 1, now, r);
  assert_non_null(body);
  json_t *j = json_loads(body, 0, NULL);
  assert_non_null(j);
  free(body);
  return j;
}

/* Entries of "fetched" in one report, ended as delivered or not. */
static size_t report_count(cairn__peerstate *ps, long long now, int delivered) {
  cairn__peer_report r;
  json_t *j = begin(ps, now, &r);
  size_t n = json_array_size(json_object_get(j, "fetched"));
  json_decref(j);
  cairn__peerstate_report_end(ps, &r, delivered);
  return n;
}

static void test_entry_fields(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  long long now = cairn__now_ms();
  char src[CAIRN__FETCHED_SOURCE_MAX + 1];
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_fetched(&ps, SHA_A, "http://10.0.0.7:4242/v1/files/" SHA_A, 16777216, 420);
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 0, 0); /* ms at least 1 */
  /* Not reported: not a digest, no source, a source too long or not UTF-8. */
  cairn__peerstate_fetched(&ps, "AAAA", "/v1/files/x", 1, 1);
  cairn__peerstate_fetched(&ps, SHA_A, NULL, 1, 1);
  memset(src, 'x', sizeof src);
  src[CAIRN__FETCHED_SOURCE_MAX] = '\0';
  cairn__peerstate_fetched(&ps, SHA_A, src, 1, 1);
  cairn__peerstate_fetched(&ps, SHA_A, "http://h\xff/v1/files/x", 1, 1);
  /* The longest that fits is kept whole. */
  src[CAIRN__FETCHED_SOURCE_MAX - 1] = '\0';
  cairn__peerstate_fetched(&ps, SHA_A, src, 7, 3);

  json_t *j = begin(&ps, now, &r);
  assert_true(cairn__peerstate_report_extras(&r));
  json_t *f = json_object_get(j, "fetched");
  assert_int_equal(json_array_size(f), 3);
  json_t *e = json_array_get(f, 0);
  assert_int_equal(json_object_size(e), 4);
  assert_string_equal(json_string_value(json_object_get(e, "sha256")), SHA_A);
  assert_string_equal(json_string_value(json_object_get(e, "source")),
                      "http://10.0.0.7:4242/v1/files/" SHA_A);
  assert_int_equal(json_integer_value(json_object_get(e, "bytes")), 16777216);
  assert_int_equal(json_integer_value(json_object_get(e, "ms")), 420);
  e = json_array_get(f, 1);
  assert_string_equal(json_string_value(json_object_get(e, "sha256")), SHA_B);
  assert_string_equal(json_string_value(json_object_get(e, "source")), "/v1/files/" SHA_B);
  assert_int_equal(json_integer_value(json_object_get(e, "bytes")), 0);
  assert_int_equal(json_integer_value(json_object_get(e, "ms")), 1);
  e = json_array_get(f, 2);
  assert_int_equal(json_string_length(json_object_get(e, "source")),
                   CAIRN__FETCHED_SOURCE_MAX - 1);
  /* A download alone is not a holding: "have" comes from _have(). */
  assert_null(json_object_get(j, "have"));
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

static void test_reported_once(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  long long now = cairn__now_ms();
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);

  /* Not delivered: pending again, and still first when newer ones arrive. */
  json_t *j = begin(&ps, now, &r);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 20, 6); /* while it was out */
  cairn__peerstate_report_end(&ps, &r, 0);
  j = begin(&ps, now, &r);
  json_t *f = json_object_get(j, "fetched");
  assert_int_equal(json_array_size(f), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "sha256")), SHA_A);
  assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "sha256")), SHA_B);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);

  /* Delivered: never again. */
  assert_int_equal(report_count(&ps, now, 1), 0);
  /* The same file fetched again is a new measurement. */
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 4);
  assert_int_equal(report_count(&ps, now, 1), 1);
  assert_int_equal(report_count(&ps, now, 1), 0);
  cairn__peerstate_destroy(&ps);
}

static void test_caps(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  char sha[65], src[128];
  long long now = cairn__now_ms();
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  for (int i = 0; i < 70; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    snprintf(src, sizeof src, "/v1/files/%s", sha);
    cairn__peerstate_fetched(&ps, sha, src, (unsigned long long)i, i + 1);
  }
  /* At most 64 per report, the oldest first; the rest waits. */
  json_t *j = begin(&ps, now, &r);
  json_t *f = json_object_get(j, "fetched");
  assert_int_equal(json_array_size(f), CAIRN__FETCHED_PER_REPORT);
  for (size_t i = 0; i < json_array_size(f); i++)
    assert_int_equal(json_integer_value(json_object_get(json_array_get(f, i), "bytes")), i);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_int_equal(report_count(&ps, now, 1), 70 - CAIRN__FETCHED_PER_REPORT);
  assert_int_equal(report_count(&ps, now, 1), 0);

  /* The backlog is bounded: the oldest measurements go first. */
  int total = CAIRN__FETCHED_PENDING + 10;
  for (int i = 0; i < total; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_fetched(&ps, sha, "/v1/files/x", (unsigned long long)i, 1);
  }
  j = begin(&ps, now, &r);
  f = json_object_get(j, "fetched");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(f, 0), "bytes")), 10);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  size_t seen = 0, n;
  while ((n = report_count(&ps, now, 1)) > 0)
    seen += n;
  assert_int_equal(seen, CAIRN__FETCHED_PENDING);
  cairn__peerstate_destroy(&ps);
}

static void test_refused(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  long long now = cairn__now_ms();
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  /* Pending downloads alone make an idle heartbeat due, not at once. */
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  assert_false(cairn__peerstate_beat_due(&ps, 300, now));
  assert_true(cairn__peerstate_beat_due(&ps, 5000, now));

  /* A master that refuses every distribution field: "{}", nothing taken. */
  cairn__peerstate_refused(&ps, now);
  char *body = cairn__peerstate_report_begin(&ps, 1, now + 1000, &r);
  assert_string_equal(body, "{}");
  assert_false(cairn__peerstate_report_extras(&r));
  free(body);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000, now + 1000));
  /* Later on it is tried again, and the download was kept. */
  assert_int_equal(report_count(&ps, now + HOUR_MS, 0), 1);

  /* A master that refuses "fetched" alone still hears of holdings. */
  cairn__peerstate_have(&ps, SHA_B);
  cairn__peerstate_refused_fetched(&ps, now + HOUR_MS);
  json_t *j = begin(&ps, now + HOUR_MS + 1000, &r);
  assert_null(json_object_get(j, "fetched"));
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000, now + HOUR_MS + 1000));
  assert_int_equal(report_count(&ps, now + 2 * HOUR_MS, 1), 1);
  assert_int_equal(report_count(&ps, now + 2 * HOUR_MS, 1), 0);
  cairn__peerstate_destroy(&ps);
}

/* ---- an older master over HTTP ---- */

static void test_older_master(void **state) {
  (void)state;
  cairn__peerstate ps;
  old_master m;
  long long now = cairn__now_ms();

  /* It knows "have", not "fetched": asked again without it. */
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_have(&ps, SHA_A);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  assert_int_equal(old_master_start(&m, OLD_KNOWS_HAVE), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps), 0);
  assert_int_equal(m.n, 2);
  assert_non_null(strstr(m.bodies[0], "\"fetched\""));
  assert_non_null(strstr(m.bodies[0], "\"have\""));
  assert_null(strstr(m.bodies[1], "\"fetched\""));
  assert_non_null(strstr(m.bodies[1], "\"have\""));
  old_master_stop(&m);
  /* "have" was delivered; the download waits for a master that takes it. */
  assert_true(cairn__peerstate_enabled(&ps, cairn__now_ms()));
  cairn__peer_report r;
  json_t *j = begin(&ps, now + HOUR_MS, &r);
  assert_null(json_object_get(j, "have"));
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  cairn__peerstate_destroy(&ps);

  /* It knows neither: without "fetched", then "{}". */
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_have(&ps, SHA_B);
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 10, 5);
  assert_int_equal(old_master_start(&m, OLD_KNOWS_NOTHING), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps), 0);
  assert_int_equal(m.n, 3);
  assert_non_null(strstr(m.bodies[0], "\"fetched\""));
  assert_null(strstr(m.bodies[1], "\"fetched\""));
  assert_non_null(strstr(m.bodies[1], "\"have\""));
  assert_string_equal(m.bodies[2], "{}");
  old_master_stop(&m);
  assert_false(cairn__peerstate_enabled(&ps, cairn__now_ms()));
  j = begin(&ps, now + HOUR_MS, &r);
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_entry_fields),
    cmocka_unit_test(test_reported_once),
    cmocka_unit_test(test_caps),
    cmocka_unit_test(test_refused),
    cmocka_unit_test(test_older_master),
  };
  cairn_http_global_init();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
