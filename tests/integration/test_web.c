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

static void test_dashboard_files(void **state) {
  (void)state;
  char dir[4096], db[4200], web[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/cairn.db", dir);
  snprintf(web, sizeof web, "%s/web", getenv("CAIRN_SOURCE_DIR") ? getenv("CAIRN_SOURCE_DIR") : ".");
  harness_server srv;
  const char *extra[] = {"--web", web, NULL};
  assert_int_equal(harness_server_start(&srv, db, extra), 0);
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(srv.url, "GET", "/", NULL, NULL, 0, NULL, &raw, &len), 200);
  assert_non_null(strstr(raw, "<title>Cairn</title>"));
  free(raw);
  assert_int_equal(harness_http(srv.url, "GET", "/app.js", NULL, NULL, 0, NULL, &raw, &len), 200);
  assert_non_null(strstr(raw, "/v1/jobs"));
  free(raw);
  assert_int_equal(harness_http(srv.url, "GET", "/nothing.html", NULL, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(srv.url, "GET", "/../CMakeLists.txt", NULL, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_http(srv.url, "GET", "/%2e%2e/CMakeLists.txt", NULL, NULL, 0, NULL, NULL, NULL), 404);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_dashboard_files)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
