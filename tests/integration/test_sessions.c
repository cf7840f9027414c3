/* test_sessions.c — the pages' log-in sessions and public data on a real
 * cairn-server over loopback (docs/protocol.md, "Sessions", "Public
 * pages"; docs/security.md, "Sessions"), read on plain sockets as a browser
 * would see them: a log-in sets the cookie cairn_session (64 hex digits,
 * Path=/, HttpOnly, SameSite=Strict, Max-Age of 30 days, no Secure over
 * plain HTTP, Secure over TLS) and answers the CSRF token, with
 * Cache-Control: no-store; the cookie reads the session and the account;
 * a change with the cookie but without X-CSRF-Token, or with a wrong one,
 * is 403 naming CSRF; a session survives a kill -9 of the master; a
 * log-out clears the cookie and ends the session; a 17th log-in ends the
 * first; a wrong e-mail and a wrong password get the same 401; a flood of
 * log-ins from one address gets 429 with Retry-After; the public routes
 * never show an e-mail and return hostile names as they were given; the
 * files under /project/ carry the pages' Content-Security-Policy. */
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
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/rawhttp.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define PW "correct horse"
#define PROJECT_CSP                                                                            \
  "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; "                  \
  "object-src 'none'; frame-ancestors 'none'"

static const char *err_message(json_t *r) {
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  return m ? m : "";
}

/* Signs up name/email (password PW): its id. */
static long long sign_up(const char *url, const char *name, const char *email) {
  json_t *b = json_pack("{s:s, s:s, s:s}", "name", name, "email", email, "password", PW), *r;
  long st = harness_http_json(url, "POST", "/v1/accounts", NULL, b, &r);
  json_decref(b);
  if (st != 201)
    fail_msg("sign-up of %s: %ld %s", email, st, err_message(r));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static int hex64(const char *s) {
  return s && strlen(s) == 64 && strspn(s, "0123456789abcdef") == 64;
}

/* POST /v1/session for email and password: its status; on 200 the
 * cookie's value, the CSRF token (65 bytes each) and the Set-Cookie line
 * (set_cookie, 512 bytes; may be NULL). */
static long log_in(int port, const char *email, const char *pw, char cookie[65], char csrf[65],
                   char *set_cookie) {
  char body[512], sc[512];
  snprintf(body, sizeof body, "{\"email\": \"%s\", \"password\": \"%s\"}", email, pw);
  raw_answer a;
  long st = raw_http(port, "POST", "/v1/session", "Content-Type: application/json\r\n", body, &a);
  if (st == 200) {
    json_t *o = raw_json(&a);
    assert_non_null(raw_header(&a, "Set-Cookie", sc, sizeof sc));
    assert_int_equal(strncmp(sc, "cairn_session=", 14), 0);
    snprintf(cookie, 65, "%.64s", sc + 14);
    snprintf(csrf, 65, "%s", json_string_value(json_object_get(o, "csrf")));
    if (set_cookie)
      snprintf(set_cookie, 512, "%s", sc);
    json_decref(o);
  }
  raw_free(&a);
  return st;
}

/* method path with the session's cookie and (csrf non-NULL) its token:
 * the status, the answer's JSON in *out when out. */
static long with_cookie(int port, const char *method, const char *path, const char *cookie,
                        const char *csrf, const char *body, json_t **out) {
  char h[512];
  snprintf(h, sizeof h, "Cookie: cairn_session=%s\r\n%s%s%s", cookie, csrf ? "X-CSRF-Token: " : "",
           csrf ? csrf : "", csrf ? "\r\n" : "");
  raw_answer a;
  long st = raw_http(port, method, path, h, body, &a);
  if (out)
    *out = raw_json(&a);
  raw_free(&a);
  return st;
}

static void test_session_life(void **state) {
  server_fixture *f = *state;
  long long eve = sign_up(f->srv.url, "Eve", "eve@example.org");
  long long fay = sign_up(f->srv.url, "Fay", "fay@example.org");
  char cookie[65], csrf[65], sc[512], v[256];

  /* the log-in: the cookie's flags, the CSRF token, never cached */
  raw_answer a;
  assert_int_equal(raw_http(f->port, "POST", "/v1/session", NULL,
                            "{\"email\": \"EVE@example.org\", \"password\": \"" PW "\"}", &a),
                   200);
  assert_non_null(raw_header(&a, "Set-Cookie", sc, sizeof sc));
  assert_non_null(raw_header(&a, "Cache-Control", v, sizeof v));
  assert_string_equal(v, "no-store");
  json_t *o = raw_json(&a);
  raw_free(&a);
  assert_int_equal(json_integer_value(json_object_get(o, "account")), eve);
  assert_string_equal(json_string_value(json_object_get(o, "name")), "Eve");
  snprintf(csrf, sizeof csrf, "%s", json_string_value(json_object_get(o, "csrf")));
  json_decref(o);
  assert_true(hex64(csrf));
  fprintf(stderr, "Set-Cookie: %s\n", sc);
  assert_int_equal(strncmp(sc, "cairn_session=", 14), 0);
  snprintf(cookie, sizeof cookie, "%.64s", sc + 14);
  assert_true(hex64(cookie));
  assert_int_equal(sc[14 + 64], ';');
  assert_non_null(strstr(sc, "; Path=/"));
  assert_non_null(strstr(sc, "; HttpOnly"));
  assert_non_null(strstr(sc, "; SameSite=Strict"));
  assert_non_null(strstr(sc, "; Max-Age=2592000"));
  assert_null(strstr(sc, "Secure")); /* plain HTTP */

  /* the cookie reads the session; none is 401 */
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", cookie, NULL, NULL, &o), 200);
  assert_int_equal(json_integer_value(json_object_get(o, "account")), eve);
  assert_string_equal(json_string_value(json_object_get(o, "csrf")), csrf);
  assert_true(json_is_null(json_object_get(o, "team")));
  json_decref(o);
  assert_int_equal(raw_http(f->port, "GET", "/v1/session", NULL, NULL, &a), 401);
  raw_free(&a);
  char wrong[65];
  memset(wrong, '0', 64);
  wrong[64] = '\0';
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", wrong, NULL, NULL, NULL), 401);

  /* a change with the cookie needs the CSRF token */
  const char team[] = "{\"name\": \"Evening\"}";
  assert_int_equal(with_cookie(f->port, "POST", "/v1/teams", cookie, NULL, team, &o), 403);
  assert_non_null(strstr(err_message(o), "CSRF"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(o, "error"), "code")),
                      "forbidden");
  json_decref(o);
  assert_int_equal(with_cookie(f->port, "POST", "/v1/teams", cookie, wrong, team, &o), 403);
  assert_non_null(strstr(err_message(o), "CSRF"));
  json_decref(o);
  assert_int_equal(with_cookie(f->port, "POST", "/v1/teams", cookie, csrf, team, &o), 201);
  long long tid = (long long)json_integer_value(json_object_get(o, "id"));
  json_decref(o);
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", cookie, NULL, NULL, &o), 200);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "team"), "id")), tid);
  assert_string_equal(json_string_value(json_object_get(json_object_get(o, "team"), "name")),
                      "Evening");
  json_decref(o);

  /* the account's own reading, not another's; its change with the token */
  char path[64], other[64];
  snprintf(path, sizeof path, "/v1/accounts/%lld", eve);
  snprintf(other, sizeof other, "/v1/accounts/%lld", fay);
  assert_int_equal(with_cookie(f->port, "GET", path, cookie, NULL, NULL, &o), 200);
  assert_string_equal(json_string_value(json_object_get(o, "email")), "eve@example.org");
  json_decref(o);
  assert_int_equal(with_cookie(f->port, "GET", other, cookie, NULL, NULL, NULL), 403);
  assert_int_equal(with_cookie(f->port, "PATCH", path, cookie, NULL, "{\"team\": null}", NULL),
                   403);
  assert_int_equal(with_cookie(f->port, "PATCH", path, cookie, csrf, "{\"team\": null}", &o), 200);
  assert_true(json_is_null(json_object_get(o, "team")));
  json_decref(o);

  /* the session survives a kill -9 of the master */
  assert_true(server_fixture_stop(f, SIGKILL) >= 0);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", cookie, NULL, NULL, &o), 200);
  assert_string_equal(json_string_value(json_object_get(o, "csrf")), csrf);
  json_decref(o);

  /* a log-out needs the token, clears the cookie, ends the session */
  assert_int_equal(with_cookie(f->port, "DELETE", "/v1/session", cookie, NULL, NULL, NULL), 403);
  char h[512];
  snprintf(h, sizeof h, "Cookie: cairn_session=%s\r\nX-CSRF-Token: %s\r\n", cookie, csrf);
  assert_int_equal(raw_http(f->port, "DELETE", "/v1/session", h, NULL, &a), 204);
  assert_non_null(raw_header(&a, "Set-Cookie", sc, sizeof sc));
  raw_free(&a);
  assert_int_equal(strncmp(sc, "cairn_session=;", 15), 0);
  assert_non_null(strstr(sc, "; Max-Age=0"));
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", cookie, NULL, NULL, NULL), 401);
  assert_int_equal(with_cookie(f->port, "DELETE", "/v1/session", cookie, csrf, NULL, NULL), 401);
  assert_int_equal(with_cookie(f->port, "GET", path, cookie, NULL, NULL, NULL), 401);

  /* at most 16 sessions an account: the 17th log-in ends the first */
  char first[65], last[65], t[65];
  assert_int_equal(log_in(f->port, "eve@example.org", PW, first, t, NULL), 200);
  for (int i = 0; i < 16; i++)
    assert_int_equal(log_in(f->port, "eve@example.org", PW, last, t, NULL), 200);
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", first, NULL, NULL, NULL), 401);
  assert_int_equal(with_cookie(f->port, "GET", "/v1/session", last, NULL, NULL, NULL), 200);
}

/* A wrong e-mail and a wrong password: the same answer. */
static void test_same_answer(void **state) {
  server_fixture *f = *state;
  sign_up(f->srv.url, "Gil", "gil@example.org");
  raw_answer a, b;
  assert_int_equal(raw_http(f->port, "POST", "/v1/session", NULL,
                            "{\"email\": \"gil@example.org\", \"password\": \"wrong horse\"}", &a),
                   401);
  assert_int_equal(raw_http(f->port, "POST", "/v1/session", NULL,
                            "{\"email\": \"nobody@example.org\", \"password\": \"" PW "\"}", &b),
                   401);
  assert_string_equal(a.body, b.body);
  json_t *o = raw_json(&a);
  assert_string_equal(err_message(o), "wrong e-mail or password");
  json_decref(o);
  char sc[64];
  assert_null(raw_header(&a, "Set-Cookie", sc, sizeof sc));
  raw_free(&a);
  raw_free(&b);
}

static void test_login_flood(void **state) {
  (void)state;
  server_fixture f;
  const char *extra[] = {"--address-rate", "6", NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  sign_up(f.srv.url, "Hal", "hal@example.org");
  int limited = 0, refused = 0;
  char ra[32];
  for (int i = 0; i < 40 && !limited; i++) {
    raw_answer a;
    long st = raw_http(f.port, "POST", "/v1/session", NULL,
                       "{\"email\": \"hal@example.org\", \"password\": \"guess guess\"}", &a);
    refused += st == 401;
    if (st == 429) {
      limited = 1;
      assert_non_null(raw_header(&a, "Retry-After", ra, sizeof ra));
      assert_true(atoi(ra) >= 1);
    }
    raw_free(&a);
  }
  fprintf(stderr, "log-in flood: %d refused before the limit, Retry-After %s s\n", refused, ra);
  assert_true(limited);
  assert_true(refused >= 1 && refused <= 7);
  /* the right password from that address is limited too, for a while */
  char c[65], t[65];
  assert_int_equal(log_in(f.port, "hal@example.org", PW, c, t, NULL), 429);
  assert_int_equal(server_fixture_close(&f), 0);
}

static void test_secure_over_tls(void **state) {
  (void)state;
  server_fixture f;
  assert_int_equal(server_fixture_open(&f, NULL, 0), 0);
  char cert[4200], key[4200];
  snprintf(cert, sizeof cert, "%s/cert.pem", f.dir);
  snprintf(key, sizeof key, "%s/key.pem", f.dir);
  const char *mk[] = {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                      "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                      "-addext", "subjectAltName=IP:127.0.0.1", NULL};
  assert_int_equal(harness_run(mk, NULL), 0);
  const char *extra[] = {"--tls-cert", cert, "--tls-key", key, NULL};
  assert_int_equal(server_fixture_restart(&f, extra), 0);
  setenv("CAIRN_CA_FILE", cert, 1);
  sign_up(f.srv.url, "Ida", "ida@example.org");
  char url[512], *out = NULL;
  snprintf(url, sizeof url, "%s/v1/session", f.srv.url);
  const char *curl[] = {"/usr/bin/curl", "-s", "-i", "--cacert", cert, "-X", "POST", "-d",
                        "{\"email\": \"ida@example.org\", \"password\": \"" PW "\"}", url, NULL};
  assert_int_equal(harness_run(curl, &out), 0);
  const char *sc = out ? strstr(out, "Set-Cookie: cairn_session=") : NULL;
  if (!sc)
    fail_msg("no session cookie over TLS: %s", out ? out : "(nothing)");
  char line[512];
  snprintf(line, sizeof line, "%.*s", (int)strcspn(sc, "\r\n"), sc);
  fprintf(stderr, "over TLS: %s\n", line);
  assert_non_null(strstr(line, "; Secure"));
  assert_non_null(strstr(line, "; HttpOnly"));
  free(out);
  unsetenv("CAIRN_CA_FILE");
  assert_int_equal(server_fixture_close(&f), 0);
}

/* GET path: its JSON, polled until pred holds (the rendering is rebuilt
 * every few seconds), at most 30 s. */
static json_t *poll_json(const char *url, const char *path, int (*pred)(json_t *, const void *),
                         const void *arg) {
  double until = harness_now() + 30;
  for (;;) {
    json_t *o = NULL;
    long st = harness_http(url, "GET", path, NULL, NULL, 0, &o, NULL, NULL);
    if (st == 200 && pred(o, arg))
      return o;
    json_decref(o);
    if (harness_now() > until)
      fail_msg("GET %s: %ld, never as wanted", path, st);
    usleep(300000);
  }
}

/* The first row of a page whose name is arg. */
static json_t *row_named(json_t *page, const char *name) {
  json_t *r;
  size_t i;
  json_array_foreach(json_object_get(page, "rows"), i, r) {
    if (!strcmp(json_string_value(json_object_get(r, "name")), name))
      return r;
  }
  return NULL;
}

static int has_row(json_t *o, const void *name) { return row_named(o, name) != NULL; }

static int two_accounts(json_t *o, const void *arg) {
  (void)arg;
  return json_integer_value(json_object_get(json_object_get(o, "totals"), "accounts")) == 2;
}

static const char hostile_account[] = "<script>alert(\"x\")</script> & \\ '日本' </b>";
static const char hostile_team[] = "</td><img src=x onerror=alert(1)> \"&amp;\"";

static void test_public_data(void **state) {
  (void)state;
  server_fixture f;
  assert_int_equal(server_fixture_open(&f, NULL, 0), 0);
  char web[4300], desc[4300], page[4400];
  snprintf(web, sizeof web, "%s/web", f.dir);
  snprintf(page, sizeof page, "%s/project", web);
  assert_int_equal(mkdir(web, 0755), 0);
  assert_int_equal(mkdir(page, 0755), 0);
  snprintf(page, sizeof page, "%s/project/index.html", web);
  assert_int_equal(harness_write_file(page, "<!doctype html><title>p</title>\n"), 0);
  snprintf(page, sizeof page, "%s/index.html", web);
  assert_int_equal(harness_write_file(page, "<!doctype html><title>d</title>\n"), 0);
  snprintf(desc, sizeof desc, "%s/about.txt", f.dir);
  assert_int_equal(harness_write_file(desc, "Folding <b>proteins</b>.\nSecond line.\n"), 0);
  const char *extra[] = {"--web", web, "--project-name", "Proj <\"é\">",
                         "--project-description-file", desc, NULL};
  assert_int_equal(server_fixture_restart(&f, extra), 0);
  const char *url = f.srv.url;

  long long a1 = sign_up(url, hostile_account, "hostile@example.org");
  sign_up(url, "Plain", "plain@example.org");
  char key[65], body[512];
  json_t *r = NULL;
  snprintf(body, sizeof body, "{\"email\": \"hostile@example.org\", \"password\": \"" PW "\"}");
  assert_int_equal(harness_http(url, "POST", "/v1/accounts/login", NULL, body, strlen(body), &r,
                                NULL, NULL), 200);
  snprintf(key, sizeof key, "%s", json_string_value(json_object_get(r, "account_key")));
  json_decref(r);
  json_t *t = json_pack("{s:s, s:s}", "name", hostile_team, "description", "<i>x</i>\n");
  assert_int_equal(harness_http_json(url, "POST", "/v1/teams", key, t, &r), 201);
  json_decref(t);
  long long tid = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);

  /* home: the operator's text as given, the totals, no jobs unless shown */
  json_t *home = poll_json(url, "/v1/public/home", two_accounts, NULL);
  json_t *proj = json_object_get(home, "project");
  assert_string_equal(json_string_value(json_object_get(proj, "name")), "Proj <\"é\">");
  assert_string_equal(json_string_value(json_object_get(proj, "description")),
                      "Folding <b>proteins</b>.\nSecond line.\n");
  json_t *tot = json_object_get(home, "totals");
  assert_true(json_is_integer(json_object_get(tot, "hosts_active_day")));
  assert_true(json_is_integer(json_object_get(tot, "tasks_done")));
  assert_true(json_is_number(json_object_get(tot, "credit_day")));
  assert_null(json_object_get(home, "jobs"));
  json_decref(home);

  /* the leaderboards: names exactly as given (escaping is the page's job) */
  json_t *top = poll_json(url, "/v1/public/top/accounts?by=total&page=1", has_row,
                          hostile_account);
  json_t *row = row_named(top, hostile_account);
  assert_int_equal(json_integer_value(json_object_get(row, "id")), a1);
  assert_true(json_integer_value(json_object_get(row, "rank")) >= 1);
  assert_string_equal(json_string_value(json_object_get(json_object_get(row, "team"), "name")),
                      hostile_team);
  assert_string_equal(json_string_value(json_object_get(top, "kind")), "accounts");
  assert_int_equal(json_integer_value(json_object_get(top, "pages")), 1);
  json_decref(top);
  top = poll_json(url, "/v1/public/top/teams?by=recent", has_row, hostile_team);
  row = row_named(top, hostile_team);
  assert_int_equal(json_integer_value(json_object_get(row, "id")), tid);
  assert_int_equal(json_integer_value(json_object_get(row, "members")), 1);
  assert_string_equal(json_string_value(json_object_get(top, "by")), "recent");
  json_decref(top);
  assert_int_equal(harness_http(url, "GET", "/v1/public/top/accounts?page=2", NULL, NULL, 0, &r,
                                NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "rows")), 0);
  json_decref(r);
  assert_int_equal(harness_http(url, "GET", "/v1/public/top/people", NULL, NULL, 0, NULL, NULL,
                                NULL), 404);
  assert_int_equal(harness_http(url, "GET", "/v1/public/top/hosts?page=0", NULL, NULL, 0, NULL,
                                NULL, NULL), 400);
  assert_int_equal(harness_http(url, "GET", "/v1/public/top/hosts?by=best", NULL, NULL, 0, NULL,
                                NULL, NULL), 400);

  /* no public route shows an e-mail */
  char path[64];
  snprintf(path, sizeof path, "/v1/public/accounts/%lld", a1);
  const char *paths[] = {"/v1/public/home", "/v1/public/top/accounts",
                         "/v1/public/top/hosts", "/v1/public/top/teams", path, "/v1/teams/1",
                         NULL};
  for (int i = 0; paths[i]; i++) {
    char *raw = NULL;
    size_t len = 0;
    assert_int_equal(harness_http(url, "GET", paths[i], NULL, NULL, 0, NULL, &raw, &len), 200);
    if (raw && (strstr(raw, "example.org") || strstr(raw, "email")))
      fail_msg("GET %s shows an e-mail: %s", paths[i], raw);
    free(raw);
  }
  assert_int_equal(harness_http(url, "GET", path, NULL, NULL, 0, &r, NULL, NULL), 200);
  assert_string_equal(json_string_value(json_object_get(r, "name")), hostile_account);
  assert_true(json_is_array(json_object_get(r, "results")));
  assert_true(json_is_array(json_object_get(r, "hosts")));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "team"), "id")), tid);
  json_decref(r);
  assert_int_equal(harness_http(url, "GET", "/v1/public/accounts/99", NULL, NULL, 0, NULL, NULL,
                                NULL), 404);

  /* the pages' files carry their Content-Security-Policy; the dashboard keeps its own */
  char csp[512];
  raw_answer a;
  assert_int_equal(raw_http(f.port, "GET", "/project/index.html", NULL, NULL, &a), 200);
  assert_non_null(raw_header(&a, "Content-Security-Policy", csp, sizeof csp));
  assert_string_equal(csp, PROJECT_CSP);
  assert_non_null(strstr(a.body, "<title>p</title>"));
  raw_free(&a);
  assert_int_equal(raw_http(f.port, "GET", "/project/none.html", NULL, NULL, &a), 404);
  assert_string_equal(raw_header(&a, "Content-Security-Policy", csp, sizeof csp), PROJECT_CSP);
  raw_free(&a);
  assert_int_equal(raw_http(f.port, "GET", "/index.html", NULL, NULL, &a), 200);
  assert_non_null(raw_header(&a, "Content-Security-Policy", csp, sizeof csp));
  assert_string_not_equal(csp, PROJECT_CSP);
  raw_free(&a);

  /* --public-jobs: the home page lists the jobs */
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  const char *more[] = {"--web", web, "--public-jobs", NULL};
  assert_int_equal(server_fixture_restart(&f, more), 0);
  long long job = server_fixture_submit(&f, "{\"name\": \"j <1>\", \"app\": \"sh\", \"tasks\": "
                                            "[{\"id\": \"a\"}, {\"id\": \"b\"}]}");
  assert_int_equal(harness_http(f.srv.url, "GET", "/v1/public/home", NULL, NULL, 0, &r, NULL,
                                NULL), 200);
  json_t *j = json_array_get(json_object_get(r, "jobs"), 0); /* the first rendering: fresh */
  assert_non_null(j);
  assert_int_equal(json_integer_value(json_object_get(j, "id")), job);
  assert_string_equal(json_string_value(json_object_get(j, "name")), "j <1>");
  assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
  assert_int_equal(json_integer_value(json_object_get(j, "tasks")), 2);
  assert_int_equal(json_integer_value(json_object_get(j, "done")), 0);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "project"), "name")),
                      "Cairn");
  json_decref(r);
  assert_int_equal(server_fixture_close(&f), 0);
}

static int setup_unlimited(void **state) {
  const char *extra[] = {"--address-rate", "-1", NULL};
  return server_fixture_start(state, extra);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_session_life, setup_unlimited, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_same_answer, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test(test_login_flood),
    cmocka_unit_test(test_secure_over_tls),
    cmocka_unit_test(test_public_data),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
