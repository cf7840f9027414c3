/* test_web.c — cairn-server --web DIR serves the dashboard's static files at
 * / and nothing outside DIR. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

static void test_dashboard_files(void **state) {
  (void)state;
  char web[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  snprintf(web, sizeof web, "%s/web", getenv("CAIRN_SOURCE_DIR") ? getenv("CAIRN_SOURCE_DIR") : ".");
  const char *extra[] = {"--web", web, NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(sf.srv.url, "GET", "/", NULL, NULL, 0, NULL, &raw, &len), 200);
  assert_non_null(strstr(raw, "<title>Cairn</title>"));
  free(raw);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/app.js", NULL, NULL, 0, NULL, &raw, &len),
                   200);
  assert_non_null(strstr(raw, "/v1/jobs"));
  free(raw);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/nothing.html", NULL, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/../CMakeLists.txt", NULL, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/%2e%2e/CMakeLists.txt", NULL, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_dashboard_files)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
