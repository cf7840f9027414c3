/* test_worker_failed.c — the peer sources a worker reports as having failed
 * it ("failed", docs/protocol.md, "Data distribution"): the fields of each
 * entry and the names of the reasons, each failure reported once (taken by
 * a report, gone when the master answered, back when it did not), at most
 * 64 per report and a bounded backlog, a heartbeat soon after a failure,
 * and the master's features: reports carry "failed" only to a master that
 * lists it, and over real HTTP on loopback a master whose list lacks it
 * gets the other fields after the heartbeat that told the worker so. */
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

#include "common/protocol.h"
#include "tests/support/harness.h"
#include "tests/support/old_master.h"
#include "tests/support/report_fixture.h"
#include "worker/leases.h"
#include "worker/peerstate.h"
#include "worker/session.h"
#include "worker/transport.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define PEER_A "http://10.0.0.7:4242/v1/files/" SHA_A
#define PEER_B "http://10.0.0.8:4242/v1/files/" SHA_B


static const char *field(json_t *e, const char *k) {
  return json_string_value(json_object_get(e, k));
}

static void test_entry_fields(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  char src[(CAIRN_MAX_SOURCE_LEN + 1) + 1];
  static const char *const names[] = {"unreachable", "stalled", "status", "size", "digest"};
  report_fixture_init(&ps);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_UNREACHABLE);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_STALLED);
  cairn__peerstate_failed(&ps, SHA_B, PEER_B, CAIRN_FAIL_STATUS);
  cairn__peerstate_failed(&ps, SHA_B, PEER_B, CAIRN_FAIL_SIZE);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);
  /* Not reported: not a digest, no source, a source too long or not UTF-8,
   * a reason that is none. */
  cairn__peerstate_failed(&ps, "AAAA", PEER_A, CAIRN_FAIL_DIGEST);
  cairn__peerstate_failed(&ps, SHA_A, NULL, CAIRN_FAIL_DIGEST);
  memset(src, 'x', sizeof src);
  src[(CAIRN_MAX_SOURCE_LEN + 1)] = '\0';
  cairn__peerstate_failed(&ps, SHA_A, src, CAIRN_FAIL_DIGEST);
  cairn__peerstate_failed(&ps, SHA_A, "http://h\xff/v1/files/x", CAIRN_FAIL_DIGEST);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, -1);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_REASONS);
  /* The longest source that fits is kept whole. */
  src[(CAIRN_MAX_SOURCE_LEN + 1) - 1] = '\0';
  cairn__peerstate_failed(&ps, SHA_B, src, CAIRN_FAIL_STATUS);

  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(r.wire.fields, CAIRN_FEAT_FAILED);
  json_t *f = json_object_get(j, "failed");
  assert_int_equal(json_array_size(f), 6);
  for (size_t i = 0; i < 5; i++) {
    json_t *e = json_array_get(f, i);
    assert_int_equal(json_object_size(e), 3); /* exactly sha256, source, reason */
    assert_string_equal(field(e, "sha256"), i == 2 || i == 3 ? SHA_B : SHA_A);
    assert_string_equal(field(e, "source"), i == 2 || i == 3 ? PEER_B : PEER_A);
    assert_string_equal(field(e, "reason"), names[i]);
  }
  json_t *e = json_array_get(f, 5);
  assert_int_equal(json_string_length(json_object_get(e, "source")),
                   (CAIRN_MAX_SOURCE_LEN + 1) - 1);
  /* A failure is neither a holding nor a measured download. */
  assert_null(json_object_get(j, "have"));
  assert_null(json_object_get(j, "fetched"));
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

static void test_reported_once(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  report_fixture_init(&ps);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);

  /* Not delivered: pending again, and still first when newer ones arrive. */
  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_failed(&ps, SHA_B, PEER_B, CAIRN_FAIL_STALLED); /* while it was out */
  cairn__peerstate_report_end(&ps, &r, 0);
  j = report_fixture_begin(&ps, &r);
  json_t *f = json_object_get(j, "failed");
  assert_int_equal(json_array_size(f), 2);
  assert_string_equal(field(json_array_get(f, 0), "sha256"), SHA_A);
  assert_string_equal(field(json_array_get(f, 0), "reason"), "digest");
  assert_string_equal(field(json_array_get(f, 1), "sha256"), SHA_B);
  assert_string_equal(field(json_array_get(f, 1), "reason"), "stalled");
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);

  /* Delivered: never again. */
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 0);
  /* The same source failing again is a new failure. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 1);
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 0);

  /* A work request (no "served") carries failures as well, beside downloads. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_UNREACHABLE);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  assert_int_equal(cairn__peerstate_report_begin(&ps, CAIRN_WORK_FIELDS, &r), 0);
  j = cairn__report_json(&r.wire);
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

static void test_caps(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  char sha[65];
  report_fixture_init(&ps);
  for (int i = 0; i < 70; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_failed(&ps, sha, PEER_A, CAIRN_FAIL_STATUS);
  }
  /* At most 64 per report, the oldest first; the rest waits. */
  json_t *j = report_fixture_begin(&ps, &r);
  json_t *f = json_object_get(j, "failed");
  assert_int_equal(json_array_size(f), CAIRN_MAX_FAILED);
  assert_int_equal(CAIRN_MAX_FAILED, 64);
  for (size_t i = 0; i < json_array_size(f); i++) {
    snprintf(sha, sizeof sha, "%064zx", i);
    assert_string_equal(field(json_array_get(f, i), "sha256"), sha);
  }
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 70 - CAIRN_MAX_FAILED);
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 0);

  /* The backlog is bounded: the oldest failures go first. */
  int total = CAIRN__FAILED_PENDING + 10;
  for (int i = 0; i < total; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_failed(&ps, sha, PEER_A, CAIRN_FAIL_STATUS);
  }
  j = report_fixture_begin(&ps, &r);
  f = json_object_get(j, "failed");
  snprintf(sha, sizeof sha, "%064x", 10);
  assert_string_equal(field(json_array_get(f, 0), "sha256"), sha);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  size_t seen = 0, n;
  while ((n = report_fixture_count(&ps, "failed", 1)) > 0)
    seen += n;
  assert_int_equal(seen, CAIRN__FAILED_PENDING);
  cairn__peerstate_destroy(&ps);
}

static void test_features(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  report_fixture_init(&ps);
  /* A failure is news: a heartbeat soon, so the master stops offering it. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);
  assert_false(cairn__peerstate_beat_due(&ps, 100));
  assert_true(cairn__peerstate_beat_due(&ps, 300));

  /* A master that takes no report field: "{}", nothing taken. */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_BASELINE);
  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(json_object_size(j), 0);
  assert_int_equal(r.wire.fields, 0);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));
  /* One that takes it gets it: the failure was kept. */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  assert_int_equal(report_fixture_count(&ps, "failed", 0), 1);

  /* A master that does not list "failed" still hears of holdings and
   * downloads; the failure waits, and makes no heartbeat due meanwhile. */
  cairn__peerstate_have(&ps, SHA_B);
  cairn__peerstate_fetched(&ps, SHA_B, PEER_B, 10, 5);
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL & ~CAIRN_FEAT_FAILED);
  j = report_fixture_begin(&ps, &r);
  assert_null(json_object_get(j, "failed"));
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));
  /* Once the master lists it, it goes: due soon, then reported once. */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  assert_true(cairn__peerstate_beat_due(&ps, 300));
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 1);
  assert_int_equal(report_fixture_count(&ps, "failed", 1), 0);

  /* A master that does not list "fetched" still takes "failed". */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_SIZE);
  cairn__peerstate_fetched(&ps, SHA_A, PEER_A, 10, 5);
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL & ~CAIRN_FEAT_FETCHED);
  j = report_fixture_begin(&ps, &r);
  assert_null(json_object_get(j, "fetched"));
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

/* ---- a master that does not list "failed", over HTTP ---- */

static int has(const char *body, const char *field_name) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\"", field_name);
  return strstr(body, quoted) != NULL;
}

static void test_master_without_failed(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  old_master m;
  const int64_t running[] = {21};
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_have(&ps, SHA_A);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);

  /* The first heartbeat learns what it takes; the next one carries all of
   * that, "running" included, and not "failed": never a 400. */
  assert_int_equal(old_master_start(&m, CAIRN_FEATURES_ALL & ~CAIRN_FEAT_FAILED), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps, running, 1), 0);
  assert_int_equal(cairn__peerstate_features(&ps), CAIRN_FEATURES_ALL & ~CAIRN_FEAT_FAILED);
  assert_int_equal(old_master_heartbeat(&m, &ps, running, 1), 0);
  assert_int_equal(m.n, 2);
  assert_string_equal(m.bodies[0], "{}");
  assert_false(has(m.bodies[1], "failed"));
  assert_true(has(m.bodies[1], "fetched") && has(m.bodies[1], "have"));
  assert_non_null(strstr(m.bodies[1], "\"running\":[21]"));
  old_master_stop(&m);

  /* The rest was delivered; the failure waits for a master that takes it,
   * and reports leave it out meanwhile. */
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 10, 5);
  json_t *j = report_fixture_begin(&ps, &r);
  assert_null(json_object_get(j, "failed"));
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  j = report_fixture_begin(&ps, &r);
  assert_null(json_object_get(j, "have"));
  assert_null(json_object_get(j, "fetched"));
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  cairn__peerstate_destroy(&ps);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_entry_fields),
    cmocka_unit_test(test_reported_once),
    cmocka_unit_test(test_caps),
    cmocka_unit_test(test_features),
    cmocka_unit_test(test_master_without_failed),
  };
  cairn__http_global_init();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
