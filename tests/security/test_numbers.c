/* test_numbers.c — numbers and names a hostile volunteer or client sends a
 * real cairn-server: report numbers out of range get 400 naming the field
 * (and a rate from extreme but valid numbers is clamped), a peer_url with
 * a path is refused, ids in paths are decimal digits only, a wrong method
 * says method_not_allowed, and the database files are mode 0600. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define SHA "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

typedef server_fixture fixture;

/* method path with body gets status, and its error message holds needle. */
static void expect(fixture *f, const char *method, const char *path, const char *token,
                   const char *body, long status, const char *code, const char *needle) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, method, path, token, body, body ? strlen(body) : 0, &r,
                         NULL, NULL);
  json_t *e = json_object_get(r, "error");
  const char *msg = json_string_value(json_object_get(e, "message"));
  const char *c = json_string_value(json_object_get(e, "code"));
  if (st != status || (needle && (!msg || !strstr(msg, needle))) ||
      (code && (!c || strcmp(c, code) != 0)))
    fail_msg("%s %s %.80s: %ld %s \"%s\" (wanted %ld %s naming \"%s\")", method, path,
             body ? body : "", st, c ? c : "", msg ? msg : "", status, code ? code : "",
             needle ? needle : "");
  json_decref(r);
}

static void fetched(fixture *f, const char *bytes, const char *ms, long status,
                    const char *needle) {
  char body[512];
  snprintf(body, sizeof body, "{\"fetched\": [{\"sha256\": \"" SHA "\", \"source\": "
           "\"/v1/files/" SHA "\", \"bytes\": %s, \"ms\": %s}]}", bytes, ms);
  expect(f, "POST", "/v1/work", f->vol, body, status, status == 400 ? "bad_request" : NULL,
         needle);
}

static void test_report_numbers(void **state) {
  fixture *f = *state;
  fetched(f, "4611686018427387904", "10", 400, "fetched[0].bytes must be at most");
  fetched(f, "-1", "10", 400, "fetched[0].bytes must be a non-negative integer");
  fetched(f, "1000", "0", 400, "fetched[0].ms must be at least 1");
  fetched(f, "1000", "9223372036854775807", 400, "fetched[0].ms must be at most");
  fetched(f, "1e300", "10", 400, "fetched[0].bytes must be a non-negative integer");
  /* past int64: jansson refuses the number itself */
  fetched(f, "99999999999999999999999", "10", 400, "malformed JSON");
  expect(f, "POST", "/v1/heartbeat", f->vol,
         "{\"served\": {\"" SHA "\": 9223372036854775807}}", 400, "bad_request",
         "must be at most");
  /* the largest numbers accepted make a rate that is clamped, not cast out
   * of range: 2^50 bytes in 1 ms */
  fetched(f, "1125899906842624", "1", 204, NULL);
  char *raw = NULL;
  size_t len = 0;
  assert_int_equal(harness_http(f->srv.url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len),
                   200);
  const char *line = strstr(raw, "cairn_link_rate_bytes_per_second{from=\"master\"");
  assert_non_null(line);
  long long rate = atoll(strchr(line, '}') + 1);
  printf("numbers: 2^50 bytes in 1 ms is recorded as %lld bytes/s\n", rate);
  assert_true(rate > 0 && rate <= 1000000000000LL);
  free(raw);
}

static void test_peer_url_without_path(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"http://h:1/x", "http://h:1?x", "http://u@h:1", "http://",
                                    "https://h:1/v1/files"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char body[256];
    snprintf(body, sizeof body, "{\"apps\": [\"sum\"], \"peer_url\": \"%s\"}", bad[i]);
    expect(f, "POST", "/v1/volunteers", NULL, body, 400, "bad_request", "peer_url");
    snprintf(body, sizeof body, "{\"peer_url\": \"%s\"}", bad[i]);
    expect(f, "POST", "/v1/work", f->vol, body, 400, "bad_request", "peer_url");
  }
  expect(f, "POST", "/v1/work", f->vol, "{\"peer_url\": \"http://127.0.0.1:7001\"}", 204, NULL,
         NULL);
}

static void test_ids_in_paths(void **state) {
  fixture *f = *state;
  static const char *const bad[] = {"+5", "-5", "05", "0", "%205", "5%20", "99999999999999999999",
                                    "9223372036854775808", "5x"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char path[128];
    snprintf(path, sizeof path, "/v1/results/%s", bad[i]);
    expect(f, "PUT", path, f->vol, "{\"exit_status\": 0, \"output\": \"\"}", 400, "bad_request",
           "is not an allocation index");
    snprintf(path, sizeof path, "/v1/jobs/%s", bad[i]);
    expect(f, "GET", path, ADMIN, NULL, 400, "bad_request", "is not a job id");
    snprintf(path, sizeof path, "/v1/jobs/%s/tasks", bad[i]);
    expect(f, "GET", path, ADMIN, NULL, 400, "bad_request", "is not a job id");
    snprintf(path, sizeof path, "/v1/tasks/%s/output", bad[i]);
    expect(f, "GET", path, ADMIN, NULL, 400, "bad_request", "is not a task number");
    snprintf(path, sizeof path, "/v1/volunteers/%s/ban", bad[i]);
    expect(f, "POST", path, ADMIN, "{}", 400, "bad_request", "is not a volunteer id");
    snprintf(path, sizeof path, "/v1/audit/volunteers/%s", bad[i]);
    expect(f, "GET", path, ADMIN, NULL, 400, "bad_request", "is not a positive integer");
  }
  /* the largest id is well formed: not found */
  expect(f, "GET", "/v1/jobs/9223372036854775807", ADMIN, NULL, 404, "not_found", NULL);
}

static void test_method_not_allowed(void **state) {
  fixture *f = *state;
  expect(f, "DELETE", "/v1/work", f->vol, NULL, 405, "method_not_allowed", "DELETE");
  expect(f, "PUT", "/healthz", NULL, NULL, 405, "method_not_allowed", "not allowed");
}

static void expect_private(const char *path) {
  struct stat st;
  if (stat(path, &st) != 0)
    fail_msg("%s: missing", path);
  if ((st.st_mode & 0777) != 0600)
    fail_msg("%s: mode %o, wanted 600", path, (unsigned)(st.st_mode & 0777));
}

static void test_database_files_private(void **state) {
  fixture *f = *state;
  char path[4300];
  expect_private(f->srv.db); /* written: setup registered a volunteer */
  snprintf(path, sizeof path, "%s-wal", f->srv.db);
  expect_private(path);
  snprintf(path, sizeof path, "%s-shm", f->srv.db);
  expect_private(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_report_numbers, server_fixture_setup_with_volunteer, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_peer_url_without_path, server_fixture_setup_with_volunteer, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_ids_in_paths, server_fixture_setup_with_volunteer, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_method_not_allowed, server_fixture_setup_with_volunteer, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_database_files_private, server_fixture_setup_with_volunteer, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
