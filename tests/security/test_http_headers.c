/* test_http_headers.c — the headers a real cairn-server (with --web, the
 * dashboard of web/) sends with every answer, read from the raw response:
 * X-Content-Type-Options: nosniff, X-Frame-Options: DENY and
 * Referrer-Policy: no-referrer everywhere (the dashboard, its scripts, JSON
 * routes, /metrics, errors); the dashboard's strict Content-Security-Policy
 * (scripts, styles and fetches from its own origin only, no inline script
 * or style, no framing) on its pages and files, and a policy allowing
 * nothing on everything else. That web/ runs under the policy is the
 * browser test's part (tests/browser, label browser: a refused script or
 * style is a console error, which fails it). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/security/rawconn.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static int setup(void **state) {
  const char *src = getenv("CAIRN_SOURCE_DIR");
  char web[4200];
  snprintf(web, sizeof web, "%s/web", src ? src : ".");
  const char *extra[] = {"--web", web, NULL};
  return server_fixture_start(state, extra);
}

/* GET path (with the admin token when admin) over a raw connection; the
 * response's head (status line and headers) into head. Returns the
 * status. */
static int get(fixture *f, const char *path, int admin, char *head, size_t cap) {
  int fd = raw_connect("127.0.0.1", f->port, 0);
  assert_true(fd >= 0);
  char req[512];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\n%s%s%s"
                   "Connection: close\r\n\r\n", path, admin ? "Authorization: Bearer " : "",
                   admin ? ADMIN : "", admin ? "\r\n" : "");
  assert_int_equal(raw_send(fd, req, (size_t)n, 5), (size_t)n);
  static char buf[1 << 20];
  assert_true(raw_recv(fd, buf, sizeof buf, 5) > 0);
  close(fd);
  char *end = strstr(buf, "\r\n\r\n");
  assert_non_null(end);
  size_t len = (size_t)(end - buf) + 2;
  assert_true(len < cap);
  memcpy(head, buf, len);
  head[len] = '\0';
  return raw_status(head);
}

/* The value of header name in head (the first), or NULL; into out. */
static const char *header(const char *head, const char *name, char *out, size_t cap) {
  size_t nl = strlen(name);
  for (const char *line = strstr(head, "\r\n"); line && line[2]; line = strstr(line + 2, "\r\n")) {
    const char *h = line + 2;
    if (strncasecmp(h, name, nl) == 0 && h[nl] == ':') {
      const char *v = h + nl + 1, *e = strstr(v, "\r\n");
      while (*v == ' ')
        v++;
      snprintf(out, cap, "%.*s", (int)(e - v), v);
      return out;
    }
  }
  return NULL;
}

/* head carries the headers every answer carries; returns its CSP. */
static const char *common(const char *path, const char *head, char *csp, size_t cap) {
  char v[1024];
  if (!header(head, "X-Content-Type-Options", v, sizeof v) || strcmp(v, "nosniff") != 0)
    fail_msg("%s: no X-Content-Type-Options: nosniff\n%s", path, head);
  if (!header(head, "X-Frame-Options", v, sizeof v) || strcmp(v, "DENY") != 0)
    fail_msg("%s: no X-Frame-Options: DENY\n%s", path, head);
  if (!header(head, "Referrer-Policy", v, sizeof v) || strcmp(v, "no-referrer") != 0)
    fail_msg("%s: no Referrer-Policy: no-referrer\n%s", path, head);
  if (!header(head, "Content-Security-Policy", csp, cap))
    fail_msg("%s: no Content-Security-Policy\n%s", path, head);
  return csp;
}

static void test_dashboard_policy(void **state) {
  fixture *f = *state;
  static const char *const pages[] = {"/", "/index.html", "/app.js", "/style.css", "/nope.html"};
  char head[16384], csp[1024];
  for (size_t i = 0; i < sizeof pages / sizeof *pages; i++) {
    int st = get(f, pages[i], 0, head, sizeof head);
    assert_int_equal(st, i == 4 ? 404 : 200);
    common(pages[i], head, csp, sizeof csp);
    printf("headers: %s: Content-Security-Policy: %s\n", pages[i], csp);
    static const char *const want[] = {"default-src 'none'", "script-src 'self'",
                                       "style-src 'self'", "connect-src 'self'",
                                       "frame-ancestors 'none'", "base-uri 'none'"};
    for (size_t k = 0; k < sizeof want / sizeof *want; k++)
      if (!strstr(csp, want[k]))
        fail_msg("%s: the policy lacks %s: %s", pages[i], want[k], csp);
    assert_null(strstr(csp, "unsafe-inline"));
    assert_null(strstr(csp, "unsafe-eval"));
    assert_null(strstr(csp, "*"));
  }
}

static void test_api_policy(void **state) {
  fixture *f = *state;
  static const struct {
    const char *path;
    int admin, status;
  } routes[] = {{"/healthz", 0, 200}, {"/metrics", 0, 200}, {"/v1/jobs", 1, 200},
                {"/v1/volunteers", 1, 200}, {"/v1/jobs", 0, 401}, {"/v1/jobs/0", 1, 400}};
  char head[16384], csp[1024];
  for (size_t i = 0; i < sizeof routes / sizeof *routes; i++) {
    assert_int_equal(get(f, routes[i].path, routes[i].admin, head, sizeof head),
                     routes[i].status);
    common(routes[i].path, head, csp, sizeof csp);
    if (strncmp(csp, "default-src 'none'", 18) != 0 || !strstr(csp, "sandbox") ||
        strstr(csp, "'self'"))
      fail_msg("%s: not a policy allowing nothing: %s", routes[i].path, csp);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_dashboard_policy, setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_api_policy, setup, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
