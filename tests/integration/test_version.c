/* test_version.c — the version a program and its binaries report: the
 * library's cairn_version() is the headers' CAIRN_VERSION_STRING, which
 * spells CAIRN_VERSION_MAJOR.MINOR.PATCH, and cairn-server, cairn-worker
 * and cairn print it for --version (exit 0, one line). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/cairn.h"
#include "tests/support/harness.h"

static void test_library(void **state) {
  (void)state;
  char want[32];
  snprintf(want, sizeof want, "%d.%d.%d", CAIRN_VERSION_MAJOR, CAIRN_VERSION_MINOR,
           CAIRN_VERSION_PATCH);
  assert_string_equal(CAIRN_VERSION_STRING, want);
  assert_string_equal(cairn_version(), want);
  assert_int_equal(CAIRN_VERSION_NUMBER,
                   CAIRN_VERSION_MAJOR * 10000 + CAIRN_VERSION_MINOR * 100 + CAIRN_VERSION_PATCH);
}

static void test_binaries(void **state) {
  (void)state;
  static const char *const names[] = {"cairn-server", "cairn-worker", "cairn"};
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    char bin[4096], want[64];
    harness_bin(bin, sizeof bin, names[i]);
    const char *argv[] = {bin, "--version", NULL};
    char *out = NULL;
    assert_int_equal(harness_run(argv, &out), 0);
    snprintf(want, sizeof want, "%s %s\n", names[i], cairn_version());
    assert_non_null(out);
    assert_string_equal(out, want);
    free(out);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test(test_library),
      cmocka_unit_test(test_binaries),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
