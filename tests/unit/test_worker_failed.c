/* test_worker_failed.c — the peer sources a worker reports as having failed
 * it ("failed", docs/protocol.md, "Data distribution"): the fields of each
 * entry and the names of the reasons, each failure reported once (taken by
 * a report, gone when the master answered, back when it did not), at most
 * 64 per report and a bounded backlog, a heartbeat soon after a failure,
 * and a master that refuses the field: over real HTTP on loopback, one that
 * knows "fetched" but not "failed" gets the report again without "failed"
 * only, one that knows neither gets it without both, one that knows no
 * distribution field at all gets "{}" in the end. */
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

#include "common/limits.h"
#include "tests/support/harness.h"
#include "tests/support/old_master.h"
#include "worker/leases.h"
#include "worker/peerstate.h"
#include "worker/session.h"
#include "worker/transport.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"
#define PEER_A "http://10.0.0.7:4242/v1/files/" SHA_A
#define PEER_B "http://10.0.0.8:4242/v1/files/" SHA_B
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

/* Entries of "failed" in one report, ended as delivered or not. */
static size_t report_count(cairn__peerstate *ps, long long now, int delivered) {
  cairn__peer_report r;
  json_t *j = begin(ps, now, &r);
  size_t n = json_array_size(json_object_get(j, "failed"));
  json_decref(j);
  cairn__peerstate_report_end(ps, &r, delivered);
  return n;
}

static const char *field(json_t *e, const char *k) {
  return json_string_value(json_object_get(e, k));
}

static void test_entry_fields(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  long long now = cairn__now_ms();
  char src[CAIRN__FETCHED_SOURCE_MAX + 1];
  static const char *const names[] = {"unreachable", "stalled", "status", "size", "digest"};
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
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
  src[CAIRN__FETCHED_SOURCE_MAX] = '\0';
  cairn__peerstate_failed(&ps, SHA_A, src, CAIRN_FAIL_DIGEST);
  cairn__peerstate_failed(&ps, SHA_A, "http://h\xff/v1/files/x", CAIRN_FAIL_DIGEST);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, -1);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_REASONS);
  /* The longest source that fits is kept whole. */
  src[CAIRN__FETCHED_SOURCE_MAX - 1] = '\0';
  cairn__peerstate_failed(&ps, SHA_B, src, CAIRN_FAIL_STATUS);

  json_t *j = begin(&ps, now, &r);
  assert_true(cairn__peerstate_report_extras(&r));
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
                   CAIRN__FETCHED_SOURCE_MAX - 1);
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
  long long now = cairn__now_ms();
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);

  /* Not delivered: pending again, and still first when newer ones arrive. */
  json_t *j = begin(&ps, now, &r);
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_failed(&ps, SHA_B, PEER_B, CAIRN_FAIL_STALLED); /* while it was out */
  cairn__peerstate_report_end(&ps, &r, 0);
  j = begin(&ps, now, &r);
  json_t *f = json_object_get(j, "failed");
  assert_int_equal(json_array_size(f), 2);
  assert_string_equal(field(json_array_get(f, 0), "sha256"), SHA_A);
  assert_string_equal(field(json_array_get(f, 0), "reason"), "digest");
  assert_string_equal(field(json_array_get(f, 1), "sha256"), SHA_B);
  assert_string_equal(field(json_array_get(f, 1), "reason"), "stalled");
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);

  /* Delivered: never again. */
  assert_int_equal(report_count(&ps, now, 1), 0);
  /* The same source failing again is a new failure. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);
  assert_int_equal(report_count(&ps, now, 1), 1);
  assert_int_equal(report_count(&ps, now, 1), 0);

  /* A work request (no "served") carries failures as well, beside downloads. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_UNREACHABLE);
  cairn__peerstate_fetched(&ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  char *body = cairn__peerstate_report_begin(&ps, 0, now, &r);
  j = json_loads(body, 0, NULL);
  free(body);
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
  long long now = cairn__now_ms();
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  for (int i = 0; i < 70; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_failed(&ps, sha, PEER_A, CAIRN_FAIL_STATUS);
  }
  /* At most 64 per report, the oldest first; the rest waits. */
  json_t *j = begin(&ps, now, &r);
  json_t *f = json_object_get(j, "failed");
  assert_int_equal(json_array_size(f), CAIRN__FAILED_PER_REPORT);
  assert_int_equal(CAIRN__FAILED_PER_REPORT, 64);
  for (size_t i = 0; i < json_array_size(f); i++) {
    snprintf(sha, sizeof sha, "%064zx", i);
    assert_string_equal(field(json_array_get(f, i), "sha256"), sha);
  }
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_int_equal(report_count(&ps, now, 1), 70 - CAIRN__FAILED_PER_REPORT);
  assert_int_equal(report_count(&ps, now, 1), 0);

  /* The backlog is bounded: the oldest failures go first. */
  int total = CAIRN__FAILED_PENDING + 10;
  for (int i = 0; i < total; i++) {
    snprintf(sha, sizeof sha, "%064x", i);
    cairn__peerstate_failed(&ps, sha, PEER_A, CAIRN_FAIL_STATUS);
  }
  j = begin(&ps, now, &r);
  f = json_object_get(j, "failed");
  snprintf(sha, sizeof sha, "%064x", 10);
  assert_string_equal(field(json_array_get(f, 0), "sha256"), sha);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  size_t seen = 0, n;
  while ((n = report_count(&ps, now, 1)) > 0)
    seen += n;
  assert_int_equal(seen, CAIRN__FAILED_PENDING);
  cairn__peerstate_destroy(&ps);
}

static void test_refused(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  long long now = cairn__now_ms();
  assert_int_equal(cairn__peerstate_init(&ps, NULL), 0);
  /* A failure is news: a heartbeat soon, so the master stops offering it. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);
  assert_false(cairn__peerstate_beat_due(&ps, 100, now));
  assert_true(cairn__peerstate_beat_due(&ps, 300, now));

  /* A master that refuses every distribution field: "{}", nothing taken. */
  cairn__peerstate_refused(&ps, now);
  char *body = cairn__peerstate_report_begin(&ps, 1, now + 1000, &r);
  assert_string_equal(body, "{}");
  assert_false(cairn__peerstate_report_extras(&r));
  free(body);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000, now + 1000));
  /* Later on it is tried again, and the failure was kept. */
  assert_int_equal(report_count(&ps, now + HOUR_MS, 0), 1);

  /* A master that refuses "failed" alone still hears of holdings and
   * downloads; the failure waits, and makes no heartbeat due meanwhile. */
  cairn__peerstate_have(&ps, SHA_B);
  cairn__peerstate_fetched(&ps, SHA_B, PEER_B, 10, 5);
  cairn__peerstate_refused_failed(&ps, now + HOUR_MS);
  json_t *j = begin(&ps, now + HOUR_MS + 1000, &r);
  assert_null(json_object_get(j, "failed"));
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  assert_false(cairn__peerstate_beat_due(&ps, 100000, now + HOUR_MS + 1000));
  /* Five minutes on, it goes again: due soon, then reported once. */
  long long later = now + HOUR_MS + 5 * 60 * 1000;
  assert_true(cairn__peerstate_beat_due(&ps, 300, later));
  assert_int_equal(report_count(&ps, later, 1), 1);
  assert_int_equal(report_count(&ps, later, 1), 0);

  /* Refusing "fetched" leaves "failed" alone. */
  cairn__peerstate_failed(&ps, SHA_A, PEER_A, CAIRN_FAIL_SIZE);
  cairn__peerstate_fetched(&ps, SHA_A, PEER_A, 10, 5);
  cairn__peerstate_refused_fetched(&ps, later);
  j = begin(&ps, later + 1000, &r);
  assert_null(json_object_get(j, "fetched"));
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);
}

/* ---- an older master over HTTP ---- */

/* What the master knows besides the plain fields; none knows "failed". */
static void loaded(cairn__peerstate *ps) {
  assert_int_equal(cairn__peerstate_init(ps, NULL), 0);
  cairn__peerstate_have(ps, SHA_A);
  cairn__peerstate_fetched(ps, SHA_A, "/v1/files/" SHA_A, 10, 5);
  cairn__peerstate_failed(ps, SHA_A, PEER_A, CAIRN_FAIL_DIGEST);
}

static int has(const char *body, const char *field_name) {
  char quoted[64];
  snprintf(quoted, sizeof quoted, "\"%s\"", field_name);
  return strstr(body, quoted) != NULL;
}

static void test_older_master(void **state) {
  (void)state;
  cairn__peerstate ps;
  cairn__peer_report r;
  old_master m;
  long long now = cairn__now_ms();

  /* It knows "fetched", not "failed": asked again without "failed" only. */
  loaded(&ps);
  assert_int_equal(old_master_start(&m, OLD_KNOWS_FETCHED), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps), 0);
  assert_int_equal(m.n, 2);
  assert_true(has(m.bodies[0], "failed") && has(m.bodies[0], "fetched") &&
              has(m.bodies[0], "have"));
  assert_false(has(m.bodies[1], "failed"));
  assert_true(has(m.bodies[1], "fetched") && has(m.bodies[1], "have"));
  old_master_stop(&m);
  /* The rest was delivered; the failure waits for a master that takes it,
   * for five minutes, during which reports leave it out. */
  assert_true(cairn__peerstate_enabled(&ps, cairn__now_ms()));
  cairn__peerstate_fetched(&ps, SHA_B, "/v1/files/" SHA_B, 10, 5);
  json_t *j = begin(&ps, cairn__now_ms() + 1000, &r);
  assert_null(json_object_get(j, "failed"));
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  j = begin(&ps, now + HOUR_MS, &r);
  assert_null(json_object_get(j, "have"));
  assert_null(json_object_get(j, "fetched"));
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 0);
  cairn__peerstate_destroy(&ps);

  /* It knows neither: without "failed", then without "fetched" too. */
  loaded(&ps);
  assert_int_equal(old_master_start(&m, OLD_KNOWS_HAVE), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps), 0);
  assert_int_equal(m.n, 3);
  assert_true(has(m.bodies[0], "failed") && has(m.bodies[0], "fetched"));
  assert_true(!has(m.bodies[1], "failed") && has(m.bodies[1], "fetched"));
  assert_true(!has(m.bodies[2], "failed") && !has(m.bodies[2], "fetched"));
  assert_true(has(m.bodies[2], "have"));
  old_master_stop(&m);
  assert_true(cairn__peerstate_enabled(&ps, cairn__now_ms()));
  j = begin(&ps, now + HOUR_MS, &r);
  assert_null(json_object_get(j, "have"));
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
  json_decref(j);
  cairn__peerstate_report_end(&ps, &r, 1);
  cairn__peerstate_destroy(&ps);

  /* It knows no distribution field: one field at a time, then "{}". */
  loaded(&ps);
  assert_int_equal(old_master_start(&m, OLD_KNOWS_NOTHING), 0);
  assert_int_equal(old_master_heartbeat(&m, &ps), 0);
  assert_int_equal(m.n, 4);
  assert_true(has(m.bodies[0], "failed"));
  assert_true(!has(m.bodies[1], "failed") && has(m.bodies[1], "fetched"));
  assert_true(!has(m.bodies[2], "fetched") && has(m.bodies[2], "have"));
  assert_string_equal(m.bodies[3], "{}");
  old_master_stop(&m);
  assert_false(cairn__peerstate_enabled(&ps, cairn__now_ms()));
  j = begin(&ps, now + HOUR_MS, &r);
  assert_int_equal(json_array_size(json_object_get(j, "have")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "fetched")), 1);
  assert_int_equal(json_array_size(json_object_get(j, "failed")), 1);
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
