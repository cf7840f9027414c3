/* test_worker_cpid.c — the cross-project ids a worker of several projects
 * offers its masters (worker/cpid.h): the oldest id among the projects of
 * one e-mail (by time, then the smaller id), none across e-mails, nothing
 * from a malformed or missing answer, and when a heartbeat is due for it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "worker/cpid.h"

#define ANN "0123456789abcdef0123456789abcdef" /* e-mail hashes */
#define BOB "fedcba9876543210fedcba9876543210"

static void hear(cairn__cpids *t, size_t k, const char *hash, const char *id, long long time) {
  char body[256];
  snprintf(body, sizeof body, "{\"extended\": [], \"cpid\": {\"email_hash\": \"%s\", \"id\": "
           "\"%s\", \"time\": %lld}}", hash, id, time);
  json_t *root = json_loads(body, 0, NULL);
  cairn__cpids_heard(t, k, json_object_get(root, "cpid"), 1000);
  json_decref(root);
}

static void test_oldest_of_one_email(void **state) {
  (void)state;
  cairn__cpids t;
  char id[33];
  int64_t time = 0;
  cairn__cpids_init(&t, 4);
  assert_true(cairn__cpids_due(&t, 0, 0)); /* never asked */
  assert_int_equal(cairn__cpids_offer(&t, 0, id, &time), 0);
  hear(&t, 0, ANN, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", 300);
  hear(&t, 1, ANN, "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", 200);
  hear(&t, 2, BOB, "cccccccccccccccccccccccccccccccc", 100); /* another person's */
  hear(&t, 3, ANN, "11111111111111111111111111111111", 200); /* same second, smaller */
  assert_int_equal(cairn__cpids_offer(&t, 0, id, &time), 1);
  assert_string_equal(id, "11111111111111111111111111111111");
  assert_int_equal(time, 200);
  assert_true(cairn__cpids_due(&t, 0, 2000));
  assert_int_equal(cairn__cpids_offer(&t, 1, id, &time), 1);
  assert_string_equal(id, "11111111111111111111111111111111");
  assert_int_equal(cairn__cpids_offer(&t, 3, id, &time), 0); /* its own is the oldest */
  assert_false(cairn__cpids_due(&t, 3, 2000));
  assert_int_equal(cairn__cpids_offer(&t, 2, id, &time), 0); /* bob's alone */
  assert_false(cairn__cpids_due(&t, 2, 2000));
  assert_true(cairn__cpids_due(&t, 2, 1000 + CAIRN__CPID_ASK_MS)); /* asked again later */
  /* the first master took it: nothing more to offer */
  hear(&t, 0, ANN, "11111111111111111111111111111111", 200);
  assert_int_equal(cairn__cpids_offer(&t, 0, id, &time), 0);
  assert_false(cairn__cpids_due(&t, 0, 2000));
  cairn__cpids_destroy(&t);
}

static void test_malformed_answers(void **state) {
  (void)state;
  cairn__cpids t;
  char id[33];
  int64_t time = 0;
  cairn__cpids_init(&t, 2);
  hear(&t, 1, ANN, "00000000000000000000000000000000", 1);
  static const char *const bad[] = {
    "", "not json", "{}", "{\"cpid\": null}",
    "{\"cpid\": {\"email_hash\": \"" ANN "\", \"id\": \"0123\", \"time\": 5}}",
    "{\"cpid\": {\"email_hash\": \"" ANN "\", \"id\": \"ABCDEFABCDEFABCDEFABCDEFABCDEFAB\", "
    "\"time\": 5}}",
    "{\"cpid\": {\"email_hash\": \"x\", \"id\": \"" BOB "\", \"time\": 5}}",
    "{\"cpid\": {\"email_hash\": \"" ANN "\", \"id\": \"" BOB "\", \"time\": -1}}",
    "{\"cpid\": {\"email_hash\": \"" ANN "\", \"id\": \"" BOB "\", \"time\": \"5\"}}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    hear(&t, 0, ANN, BOB, 9); /* known first */
    json_t *root = json_loads(bad[i], 0, NULL); /* an answer as the heartbeat reads it */
    cairn__cpids_heard(&t, 0, json_object_get(root, "cpid"), 1000);
    json_decref(root);
    /* forgotten: nothing offered to it, and it offers nothing to the other */
    assert_int_equal(cairn__cpids_offer(&t, 0, id, &time), 0);
    assert_int_equal(cairn__cpids_offer(&t, 1, id, &time), 0);
    assert_false(cairn__cpids_due(&t, 0, 2000)); /* heard: not asked again at once */
  }
  assert_int_equal(cairn__cpids_offer(&t, 5, id, &time), 0); /* no such project */
  cairn__cpids_destroy(&t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_oldest_of_one_email),
    cmocka_unit_test(test_malformed_answers),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
