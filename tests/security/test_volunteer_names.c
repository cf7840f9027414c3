/* test_volunteer_names.c — a volunteer's name and cluster are shown to the
 * operator (cairn volunteers, cairn audit, the dashboard): a real
 * cairn-server refuses, at registration, names holding C0 or C1 controls,
 * DEL, Unicode bidirectional controls (U+202E would reverse what a
 * terminal shows after it) or invalid UTF-8, with a 400 naming the field,
 * and registers no volunteer; names in other scripts stay welcome. The
 * shared check (common/termsafe.h, cairn__text_valid) and the CLI's
 * escaping of bidirectional controls are checked on their own too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/termsafe.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

/* How many volunteers the master lists. */
static size_t volunteers(fixture *f) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  size_t n = json_array_size(json_object_get(r, "volunteers"));
  json_decref(r);
  return n;
}

/* POST /v1/volunteers with body; its status, and the error message in msg. */
static long register_raw(fixture *f, const char *body, char *msg, size_t cap) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "POST", "/v1/volunteers", NULL, body, strlen(body), &r,
                         NULL, NULL);
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  snprintf(msg, cap, "%s", m ? m : "");
  json_decref(r);
  return st;
}

/* JSON string texts (escaped as JSON) that must be refused as a name. */
static const char *const bad[] = {
  "a\\u0007b",  "\\u001b[2Jx", "tab\\there", "del\\u007f", "c1\\u009b1m", "c1\\u0085",
  "evil\\u202Etxt.exe", "\\u202Aembed", "\\u202Bembed", "\\u202Cpop", "\\u202Doverride",
  "\\u2066iso", "\\u2067iso", "\\u2068iso", "\\u2069pdi", "lrm\\u200E", "rlm\\u200F",
  "alm\\u061C"};

static void test_bad_names_refused(void **state) {
  fixture *f = *state;
  char body[512], msg[512];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(body, sizeof body, "{\"name\": \"%s\", \"apps\": [\"sum\"]}", bad[i]);
    long st = register_raw(f, body, msg, sizeof msg);
    if (st != 400 || !strstr(msg, "\"name\""))
      fail_msg("name \"%s\": %ld \"%s\" (wanted 400 naming \"name\")", bad[i], st, msg);
    assert_non_null(strstr(msg, "control"));
  }
  /* the cluster too */
  long st = register_raw(f, "{\"name\": \"ok\", \"cluster\": \"c\\u202E\", \"apps\": [\"sum\"]}",
                         msg, sizeof msg);
  assert_int_equal(st, 400);
  assert_non_null(strstr(msg, "\"cluster\""));
  /* invalid UTF-8 (a raw 0xff, a lone surrogate) never becomes a name */
  assert_int_equal(register_raw(f, "{\"name\": \"x\xff\", \"apps\": [\"sum\"]}", msg, sizeof msg),
                   400);
  assert_int_equal(register_raw(f, "{\"name\": \"x\\ud800\", \"apps\": [\"sum\"]}", msg,
                                sizeof msg), 400);
  assert_int_equal(volunteers(f), 0);
}

static void test_other_scripts_welcome(void **state) {
  fixture *f = *state;
  char msg[512];
  /* Latin with a diacritic, Japanese, Hebrew and Arabic letters (right to
   * left by themselves, without any control), an emoji */
  assert_int_equal(register_raw(f, "{\"name\": \"Zo\\u00eb \\u5c71\\u7530 \\u05e9\\u05dc\\u05d5"
                                   "\\u05dd \\u0633\\u0644\\u0627\\u0645 \\ud83c\\udf32\", "
                                   "\"apps\": [\"sum\"]}", msg, sizeof msg), 201);
  assert_int_equal(volunteers(f), 1);
}

/* The one definition the master and the CLI share. */
static void test_text_check(void **state) {
  (void)state;
  assert_true(cairn__text_valid("plain name", 10));
  assert_true(cairn__text_valid("Zo\xc3\xab \xe5\xb1\xb1", 8));
  assert_true(cairn__text_valid("", 0));
  assert_false(cairn__text_valid("a\x1b", 2));
  assert_false(cairn__text_valid("a\x7f", 2));
  assert_false(cairn__text_valid("a\xc2\x85", 3));                 /* C1 NEL */
  assert_false(cairn__text_valid("a\xe2\x80\xae", 4));             /* U+202E */
  assert_false(cairn__text_valid("\xe2\x81\xa6", 3));              /* U+2066 */
  assert_false(cairn__text_valid("\xd8\x9c", 2));                  /* U+061C */
  assert_false(cairn__text_valid("\xe2\x80\x8f", 3));              /* U+200F */
  assert_false(cairn__text_valid("a\xff", 2));                     /* not UTF-8 */
  assert_false(cairn__text_valid("\xe2\x80", 2));                  /* cut short */
  assert_false(cairn__text_valid("\xc0\xaf", 2));                  /* overlong */
  assert_false(cairn__text_valid("\xed\xa0\x80", 3));              /* surrogate */
  assert_false(cairn__text_valid("a\0b", 3));                      /* NUL inside */
  /* and cairn prints a bidi control from a master escaped */
  char out[64];
  assert_string_equal(cairn__termsafe("evil\xe2\x80\xaetxt", out, sizeof out),
                      "evil\\xe2\\x80\\xaetxt");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_bad_names_refused, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_other_scripts_welcome, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test(test_text_check),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
