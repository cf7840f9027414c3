/* test_worker_fetched.c — the downloads a worker reports to its master
 * ("fetched", docs/protocol.md, "Data distribution"): the fields of each
 * entry, each entry reported once (taken by a report, gone when the master
 * answered, back when it did not), at most 64 per report and a bounded
 * backlog, and the master's features: reports carry "fetched" only to a
 * master that lists it, and over real HTTP on loopback a master without
 * the feature list gets bare bodies. */
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
#include "tests/support/report_fixture.h"
#include "worker/leases.h"
#include "worker/peerstate.h"
#include "worker/session.h"
#include "worker/transport.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"


static void test_entry_fields(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  char src[(CAIRN_MAX_SOURCE_LEN + 1) + 1];
  report_fixture_init(&ps);
  cairn__peerstate_fetched(&ps, SHA_A, "http://10.0.0.7:4242/v1/files/" SHA_A, 16777216, 420);
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 0, 0); /* ms at least 1 */
  /* Not reported: not a digest, no source, a source too long or not UTF-8. */
  cairn__peerstate_fetched(&ps, "AAAA", "/v1/files/x", 1, 1);
  cairn__peerstate_fetched(&ps, SHA_A, NULL, 1, 1);
  memset(src, 'x', sizeof src);
  src[(CAIRN_MAX_SOURCE_LEN + 1)] = '\0';
  cairn__peerstate_fetched(&ps, SHA_A, src, 1, 1);
  cairn__peerstate_fetched(&ps, SHA_A, "http://h\xff/v1/files/x", 1, 1);
  /* The longest that fits is kept whole. */
  src[(CAIRN_MAX_SOURCE_LEN + 1) - 1] = '\0';
  cairn__peerstate_fetched(&ps, SHA_A, src, 7, 3);

  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(r.wire.fields, CAIRN_FEAT_FETCHED);
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
                   (CAIRN_MAX_SOURCE_LEN + 1) - 1);
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
  report_fixture_init(&ps);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);

  /* Not delivered: pending again, and still first when newer ones arrive. */
  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 20, 6); /* while it was out */
  cairn__peerstate_report_end(&ps, &r, 0);
  j = report_fixture_begin(&ps, &r);
  json_t *f = json_object_get(j, "fetched");
  assert_int_equal(json_array_size(f), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(f, 0), "sha256")), SHA_A);
  assert_string_equal(json_string_value(json_object_get(json_array_get(f, 1), "sha256")), SHA_B);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);

  /* Delivered: never again. */
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 0);
  /* The same file fetched again is a new measurement. */
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 4);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 1);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 0);
  cairn__peerstate_destroy(&ps);
}

static void test_caps(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  char sha[65], src[128];
  report_fixture_init(&ps);
  for (int i = 0; i < 70; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    snprintf(src, sizeof src, "/v1/files/%s", sha);
    cairn__peerstate_fetched(&ps, sha, src, (unsigned long long)i, i + 1);
  }
  /* At most 64 per report, the oldest first; the rest waits. */
  json_t *j = report_fixture_begin(&ps, &r);
  json_t *f = json_object_get(j, "fetched");
  assert_int_equal(json_array_size(f), CAIRN_MAX_FETCHED);
  for (size_t i = 0; i < json_array_size(f); i++)
    assert_int_equal(json_integer_value(json_object_get(json_array_get(f, i), "bytes")), i);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 70 - CAIRN_MAX_FETCHED);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 0);

  /* The backlog is bounded: the oldest measurements go first. */
  int total = CAIRN__FETCHED_PENDING + 10;
  for (int i = 0; i < total; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_fetched(&ps, sha, "/v1/files/x", (unsigned long long)i, 1);
  }
  j = report_fixture_begin(&ps, &r);
  f = json_object_get(j, "fetched");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(f, 0), "bytes")), 10);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  size_t seen = 0, n;
  while ((n = report_fixture_count(&ps, "fetched", 1)) > 0)
    seen += n;
  assert_int_equal(seen, CAIRN__FETCHED_PENDING);
  cairn__peerstate_destroy(&ps);
}

static void test_features(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  report_fixture_init(&ps);
  /* Pending downloads alone make an idle heartbeat due, not at once. */
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  assert_false(cairn__peerstate_beat_due(&ps, 300));
  assert_true(cairn__peerstate_beat_due(&ps, 5000));

  /* A master that takes no report field: "{}", nothing taken. */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_BASELINE);
  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(json_object_size(j), 0);
  assert_int_equal(r.wire.fields, 0);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));
  /* One that takes it gets it: the download was kept. */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  assert_int_equal(report_fixture_count(&ps, "fetched", 0), 1);

  /* A master that does not list "fetched" still hears of holdings. */
  cairn__peerstate_have(&ps, SHA_B);
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL & ~CAIRN_FEAT_FETCHED);
  j = report_fixture_begin(&ps, &r);
  assert_null(json_object_get(j, "fetched"));
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 1);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 0);

  /* A work request never carries "served" nor "running", whatever the
   * master lists. */
  cairn__peerstate_served(&ps, SHA_A, 100);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  assert_int_equal(cairn__peerstate_report_begin(&ps, CAIRN_WORK_FIELDS, &r), 0);
  assert_int_equal(r.wire.fields, CAIRN_FEAT_FETCHED);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);

  /* Before the master's features are known: nothing is taken, and a
   * heartbeat is due soon to learn them. */
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  assert_int_equal(cairn__peerstate_features(&ps), -1);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  j = report_fixture_begin(&ps, &r);
  assert_int_equal(json_object_size(j), 0);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100));
  assert_true(cairn__peerstate_beat_due(&ps, 300));
  /* A registration tells them. */
  cairn__peerstate_registered(&ps, NULL, CAIRN_FEAT_FETCHED);
  assert_int_equal(cairn__peerstate_features(&ps), CAIRN_FEAT_FETCHED);
  assert_int_equal(report_fixture_count(&ps, "fetched", 1), 1);
  cairn__peerstate_destroy(&ps);
}

/* ---- a master without the feature list, over HTTP ---- */

static void test_master_without_features(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  old_master m;
  const int64_t running[] = {13};

  /* Everything a current master would take waits: holdings, a download, a
   * failed source, the peer URL; and the worker runs a task. */
  assert_int_equal(cairn__peerstate_init(&ps, "127.0.0.1"), 0);
  cairn__peerstate_set_port(&ps, 4242);
  cairn__peerstate_have(&ps, SHA_A);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  cairn__peerstate_failed(&ps, SHA_B, "http://10.0.0.8:4242/v1/files/" SHA_B,
                          CAIRN_FAIL_DIGEST);
  assert_true(cairn__peerstate_beat_due(&ps, 300)); /* to learn the features */

  /* The first heartbeat is bare; its answer lists no features, so the
   * master takes the baseline: none of the report fields, never a 400. */
  assert_int_equal(old_master_start(&m, -1), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps, running, 1), 0);
  assert_int_equal(cairn__peerstate_features(&ps), CAIRN_FEATURES_BASELINE);
  assert_false(cairn__peerstate_beat_due(&ps, 100000));
  assert_int_equal(old_master_heartbeat(&m, &ps, running, 1), 0);
  assert_int_equal(m.n, 2);
  assert_string_equal(m.bodies[0], "{}");
  assert_string_equal(m.bodies[1], "{}");
  old_master_stop(&m);

  /* What waited goes to a master that takes it. */
  cairn__peerstate_set_features(&ps, CAIRN_FEATURES_ALL);
  json_t *j = report_fixture_begin(&ps, &r);
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  assert_string_equal(json_string_value(json_object_get(j, "peer_url")),
                      "http://127.0.0.1:4242");
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_entry_fields),
    cmocka_unit_test(test_reported_once),
    cmocka_unit_test(test_caps),
    cmocka_unit_test(test_features),
    cmocka_unit_test(test_master_without_features),
  };
  cairn__http_global_init();
  return cmocka_run_group_tests(tests, NULL, NULL);
}
