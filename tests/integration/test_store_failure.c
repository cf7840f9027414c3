/* test_store_failure.c — the one failure rule of the journal, against a real
 * cairn-server: when its SQLite store refuses a write, the master answers
 * 503 "failed", acknowledges nothing more, and cairn-server exits with
 * status 70; a restarted master has everything acknowledged before and
 * nothing after. The store is made to refuse by another connection that
 * holds the database's write lock past the master's busy timeout (10 s). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

static json_t *registration(const char *name) {
  return json_pack("{s:s, s:[s], s:i}", "name", name, "apps", "sum", "slots", 1);
}

static size_t volunteers(const char *url) {
  json_t *r = NULL;
  assert_int_equal(
    harness_http(url, "GET", "/v1/volunteers", HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL), 200);
  size_t n = json_array_size(json_object_get(r, "volunteers"));
  json_decref(r);
  return n;
}

static void test_failed_store_stops_acknowledging(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *db = sf.db;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  char token[65];
  assert_true(harness_register(sf.srv.url, "before", "sum", token) > 0);

  sqlite3 *h = NULL;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_exec(h, "BEGIN IMMEDIATE", NULL, NULL, NULL), SQLITE_OK);

  json_t *body = registration("after"), *resp = NULL;
  double t0 = harness_now();
  long status = harness_http_json(sf.srv.url, "POST", "/v1/volunteers", NULL, body, &resp);
  json_decref(body);
  assert_int_equal(status, 503);
  assert_non_null(resp);
  json_t *e = json_object_get(resp, "error");
  assert_string_equal(json_string_value(json_object_get(e, "code")), "failed");
  const char *msg = json_string_value(json_object_get(e, "message"));
  assert_non_null(msg);
  assert_non_null(strstr(msg, "commit"));
  fprintf(stderr, "503 after %.1f s: %s\n", harness_now() - t0, msg);
  json_decref(resp);

  /* cairn-server ends by itself, with EX_SOFTWARE, so a supervisor restarts it */
  int st = harness_wait(sf.srv.pid, 30);
  sf.srv.pid = 0;
  assert_true(st != -1 && WIFEXITED(st));
  assert_int_equal(WEXITSTATUS(st), 70);

  assert_int_equal(sqlite3_exec(h, "ROLLBACK", NULL, NULL, NULL), SQLITE_OK);
  sqlite3_close(h);

  /* what was acknowledged is there, what was refused is not */
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  assert_int_equal(volunteers(sf.srv.url), 1);
  assert_true(harness_register(sf.srv.url, "again", "sum", token) > 0);
  assert_int_equal(volunteers(sf.srv.url), 2);
  int stop = server_fixture_stop(&sf, SIGTERM);
  assert_true(WIFEXITED(stop) && WEXITSTATUS(stop) == 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_failed_store_stops_acknowledging),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
