/* report_fixture.c — see report_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tests/support/report_fixture.h"

void report_fixture_init(cairn__peerstate *ps) {
  assert_int_equal(cairn__peerstate_init(ps, NULL), 0);
  cairn__peerstate_set_features(ps, CAIRN_FEATURES_ALL);
}

json_t *report_fixture_begin(cairn__peerstate *ps, cairn__peer_report *r) {
  assert_int_equal(cairn__peerstate_report_begin(ps, CAIRN_HEARTBEAT_FIELDS, r), 0);
  json_t *j = cairn__report_json(&r->wire);
  assert_non_null(j);
  return j;
}

size_t report_fixture_count(cairn__peerstate *ps, const char *field, int delivered) {
  cairn__peer_report r;
  json_t *j = report_fixture_begin(ps, &r);
  size_t n = json_array_size(json_object_get(j, field));
  json_decref(j);
  cairn__peerstate_report_end(ps, &r, delivered);
  return n;
}
