/* test_accounts.c — accounts on a real cairn-server over loopback
 * (docs/protocol.md, "Accounts"): a sign-up answers 201 with the id and a
 * 64-hex account key; a taken e-mail (any case) is 409; bad fields are 400
 * naming the field and store nothing; `--registration invite` asks for an
 * invitation and spends it, `closed` refuses; a flood of sign-ups from one
 * address is 429; a wrong e-mail and a wrong password get the same 401;
 * log-in rotates the key (the old one stops opening the account); a real
 * cairn-worker with --account-key attaches its host (the account lists it,
 * the volunteer list shows the account); a wrong key is 403 with no
 * volunteer made; a result's credit counts on the host, the account and the
 * team, with expavg_credit > 0; all of it survives a kill -9 of the
 * master; many sign-ups at once get some 503 (the bound on password
 * hashing), none crash, and /healthz answers meanwhile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static long post(const char *url, const char *path, const char *token, const char *body,
                 json_t **r) {
  return harness_http(url, "POST", path, token, body, strlen(body), r, NULL, NULL);
}

static const char *err_message(json_t *r) {
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  return m ? m : "";
}

/* Signs up name/email/password: the id, the key in key (65 bytes). */
static long long sign_up(const char *url, const char *name, const char *email, char key[65]) {
  char body[512];
  snprintf(body, sizeof body,
           "{\"name\": \"%s\", \"email\": \"%s\", \"password\": \"correct horse\"}", name, email);
  json_t *r = NULL;
  long st = post(url, "/v1/accounts", NULL, body, &r);
  if (st != 201)
    fail_msg("sign-up of %s: %ld %s", email, st, err_message(r));
  const char *k = json_string_value(json_object_get(r, "account_key"));
  assert_non_null(k);
  assert_int_equal(strlen(k), 64);
  assert_int_equal(strspn(k, "0123456789abcdef"), 64);
  snprintf(key, 65, "%s", k);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

static json_t *account(const char *url, long long id, const char *token, long want) {
  char path[64];
  snprintf(path, sizeof path, "/v1/accounts/%lld", id);
  json_t *r = NULL;
  long st = harness_http(url, "GET", path, token, NULL, 0, &r, NULL, NULL);
  if (st != want)
    fail_msg("GET %s: %ld (wanted %ld) %s", path, st, want, err_message(r));
  return r;
}

static void expect_400(const char *url, const char *body, const char *needle) {
  json_t *r = NULL;
  long st = post(url, "/v1/accounts", NULL, body, &r);
  if (st != 400 || !strstr(err_message(r), needle))
    fail_msg("POST /v1/accounts %s: %ld \"%s\" (wanted 400 naming %s)", body, st,
             err_message(r), needle);
  json_decref(r);
}

static void test_sign_up_and_log_in(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  char key[65], key2[65];
  long long id = sign_up(url, "Ann", "ann@example.org", key);
  assert_int_equal(id, 1);

  /* a taken e-mail, in any case */
  json_t *r = NULL;
  const char dup[] = "{\"name\": \"Other\", \"email\": \"ANN@example.org\", \"password\": "
                     "\"12345678\"}";
  assert_int_equal(post(url, "/v1/accounts", NULL, dup, &r), 409);
  json_decref(r);

  /* bad fields: 400 naming the field, nothing stored */
  expect_400(url, "{\"name\": \"x\", \"email\": \"x@y\", \"password\": \"short\"}", "password");
  expect_400(url, "{\"name\": \"x\", \"email\": \"no-at\", \"password\": \"12345678\"}", "email");
  expect_400(url, "{\"name\": \"x\", \"email\": \"a@b@c\", \"password\": \"12345678\"}", "email");
  expect_400(url, "{\"name\": \"x\", \"email\": \"a b@c\", \"password\": \"12345678\"}", "email");
  expect_400(url, "{\"name\": \"\\u001b[31m\", \"email\": \"e@f\", \"password\": \"12345678\"}",
             "name");
  expect_400(url, "{\"email\": \"e@f\", \"password\": \"12345678\"}", "name");
  expect_400(url, "{\"name\": \"x\", \"email\": \"e@f\", \"password\": \"12345678\", "
                  "\"admin\": true}", "admin");
  /* the next account is still number 2 */
  assert_int_equal(sign_up(url, "Bob", "bob@example.org", key2), 2);

  /* reading: the admin and the account itself see the e-mail; another key,
   * a volunteer token or none are refused */
  json_t *a = account(url, id, ADMIN, 200);
  assert_string_equal(json_string_value(json_object_get(a, "email")), "ann@example.org");
  assert_string_equal(json_string_value(json_object_get(a, "name")), "Ann");
  assert_int_equal(json_array_size(json_object_get(a, "hosts")), 0);
  json_decref(a);
  a = account(url, id, key, 200);
  assert_string_equal(json_string_value(json_object_get(a, "email")), "ann@example.org");
  json_decref(a);
  json_decref(account(url, id, key2, 403));
  json_decref(account(url, id, NULL, 401));
  char vtok[65];
  harness_register(url, "w", "x", vtok);
  json_decref(account(url, id, vtok, 401));
  json_decref(account(url, 99, ADMIN, 404));

  /* log-in: the same 401 for a wrong password and an unknown e-mail */
  const char wrong_pw[] = "{\"email\": \"ann@example.org\", \"password\": \"wrong horse\"}";
  const char wrong_em[] = "{\"email\": \"nobody@example.org\", \"password\": \"correct horse\"}";
  json_t *r1 = NULL, *r2 = NULL;
  assert_int_equal(post(url, "/v1/accounts/login", NULL, wrong_pw, &r1), 401);
  assert_int_equal(post(url, "/v1/accounts/login", NULL, wrong_em, &r2), 401);
  assert_string_equal(err_message(r1), "wrong e-mail or password");
  assert_string_equal(err_message(r2), err_message(r1));
  json_decref(r1);
  json_decref(r2);
  /* a right one rotates the key */
  const char right[] = "{\"email\": \"Ann@Example.org\", \"password\": \"correct horse\"}";
  assert_int_equal(post(url, "/v1/accounts/login", NULL, right, &r), 200);
  assert_int_equal(json_integer_value(json_object_get(r, "id")), id);
  char fresh[65];
  snprintf(fresh, sizeof fresh, "%s", json_string_value(json_object_get(r, "account_key")));
  json_decref(r);
  assert_int_equal(strlen(fresh), 64);
  assert_string_not_equal(fresh, key);
  json_decref(account(url, id, key, 401));
  json_decref(account(url, id, fresh, 200));
}

static void test_gating(void **state) {
  (void)state;
  server_fixture f;
  const char *extra[] = {"--registration", "invite", NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  const char *url = f.srv.url;
  json_t *r = NULL;
  const char plain[] = "{\"name\": \"a\", \"email\": \"a@b\", \"password\": \"12345678\"}";
  assert_int_equal(post(url, "/v1/accounts", NULL, plain, &r), 403);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                      "invitation_required");
  json_decref(r);
  assert_int_equal(post(url, "/v1/invitations", ADMIN, "{\"uses\": 1}", &r), 201);
  char body[512];
  snprintf(body, sizeof body,
           "{\"name\": \"a\", \"email\": \"a@b\", \"password\": \"12345678\", \"invitation\": "
           "\"%s\"}", json_string_value(json_object_get(r, "code")));
  json_decref(r);
  assert_int_equal(post(url, "/v1/accounts", NULL, body, &r), 201);
  json_decref(r);
  body[strlen(body) - 1] = '\0'; /* the same code again: used up */
  char again[600];
  snprintf(again, sizeof again, "%s}", body);
  memcpy(strstr(again, "a@b"), "c@d", 3);
  assert_int_equal(post(url, "/v1/accounts", NULL, again, &r), 403);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                      "invitation_used_up");
  json_decref(r);
  assert_int_equal(server_fixture_close(&f), 0);

  const char *closed[] = {"--registration", "closed", NULL};
  assert_int_equal(server_fixture_open(&f, closed, 1), 0);
  assert_int_equal(post(f.srv.url, "/v1/accounts", NULL, plain, &r), 403);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                      "registration_closed");
  json_decref(r);
  assert_int_equal(server_fixture_close(&f), 0);
}

static void test_flood_rate_limited(void **state) {
  (void)state;
  server_fixture f;
  const char *extra[] = {"--address-rate", "6", NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  int created = 0, limited = 0;
  for (int i = 0; i < 40 && !limited; i++) {
    char body[256];
    snprintf(body, sizeof body,
             "{\"name\": \"n\", \"email\": \"f%d@x\", \"password\": \"12345678\"}", i);
    json_t *r = NULL;
    long st = post(f.srv.url, "/v1/accounts", NULL, body, &r);
    json_decref(r);
    created += st == 201;
    limited += st == 429;
  }
  assert_true(limited > 0);
  assert_true(created >= 1);
  assert_int_equal(server_fixture_close(&f), 0);
}

typedef struct burst {
  int port;
  int i;
  long status;
} burst;

/* One sign-up on a raw socket (the client library would retry a 503): its
 * status, 0 when none came. */
static void *burst_one(void *p) {
  burst *b = p;
  char body[256], req[1024], resp[256];
  int n = snprintf(body, sizeof body,
                   "{\"name\": \"n\", \"email\": \"p%d@x\", \"password\": \"12345678\"}", b->i);
  int len = snprintf(req, sizeof req,
                     "POST /v1/accounts HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
                     "application/json\r\nContent-Length: %d\r\nConnection: close\r\n\r\n%s",
                     n, body);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)b->port)};
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd >= 0 && connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0 &&
      write(fd, req, (size_t)len) == len) {
    ssize_t got = read(fd, resp, sizeof resp - 1);
    resp[got > 0 ? got : 0] = '\0';
    if (strncmp(resp, "HTTP/1.1 ", 9) == 0)
      b->status = strtol(resp + 9, NULL, 10);
  }
  if (fd >= 0)
    close(fd);
  return NULL;
}

static void test_pwhash_bound(void **state) {
  (void)state;
  server_fixture f;
  const char *extra[] = {"--address-rate", "-1", NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  enum { N = 12 };
  burst b[N];
  pthread_t t[N];
  for (int i = 0; i < N; i++) {
    b[i] = (burst){f.port, i, 0};
    assert_int_equal(pthread_create(&t[i], NULL, burst_one, &b[i]), 0);
    usleep(10000); /* apart, so that the HTTP pool's threads accept them, not one thread all */
  }
  /* the master answers its health while the hashes run */
  assert_int_equal(harness_http(f.srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL),
                   200);
  int made = 0, busy = 0;
  for (int i = 0; i < N; i++) {
    pthread_join(t[i], NULL);
    made += b[i].status == 201;
    busy += b[i].status == 503 || b[i].status == 429;
    if (b[i].status != 201 && b[i].status != 503 && b[i].status != 429)
      fail_msg("sign-up %d: %ld", i, b[i].status);
  }
  fprintf(stderr, "%d sign-ups at once: %d made, %d busy\n", N, made, busy);
  assert_true(made >= 1);
  assert_true(busy >= 1);
  assert_int_equal(harness_http(f.srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL),
                   200);
  assert_int_equal(server_fixture_close(&f), 0);
}

/* The volunteer list's entry of volunteer id. */
static json_t *volunteer(const char *url, long long id) {
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  json_t *v = json_incref(json_array_get(json_object_get(r, "volunteers"), (size_t)(id - 1)));
  json_decref(r);
  assert_non_null(v);
  return v;
}

/* tok runs the one task of a new job of app sh and claims 2 CPU seconds. */
static void earn(const char *url, const char *tok) {
  const char job[] = "{\"app\": \"sh\", \"tasks\": [{\"id\": \"e\"}]}";
  assert_int_equal(harness_http(url, "POST", "/v1/jobs", ADMIN, job, strlen(job), NULL, NULL,
                                NULL), 201);
  json_t *w = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/work", tok, NULL, 0, &w, NULL, NULL), 200);
  char path[64];
  snprintf(path, sizeof path, "/v1/results/%lld",
           (long long)json_integer_value(json_object_get(w, "index")));
  json_decref(w);
  const char res[] = "{\"exit_status\": 0, \"output\": \"x\", \"cpu_seconds\": 2}";
  assert_int_equal(harness_http(url, "PUT", path, tok, res, strlen(res), NULL, NULL, NULL), 200);
}

/* A host of account a named name, or NULL. */
static json_t *host_named(json_t *a, const char *name) {
  json_t *hosts = json_object_get(a, "hosts"), *h;
  size_t i;
  json_array_foreach(hosts, i, h) {
    if (strcmp(json_string_value(json_object_get(h, "name")), name) == 0)
      return h;
  }
  return NULL;
}

static void test_worker_attaches_and_earns(void **state) {
  server_fixture *f = *state;
  const char *url = f->srv.url;
  char key[65];
  long long acct = sign_up(url, "Cy", "cy@example.org", key);

  /* a wrong key: 403, no volunteer made */
  json_t *r = NULL;
  char body[512];
  snprintf(body, sizeof body, "{\"name\": \"bad\", \"apps\": [\"sh\"], \"account_key\": \"%064d\"}",
           0);
  assert_int_equal(post(url, "/v1/volunteers", NULL, body, &r), 403);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "error"), "code")),
                      "account_key_invalid");
  json_decref(r);
  assert_int_equal(harness_http(url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "volunteers")), 0);
  json_decref(r);

  /* a real worker with --account-key, in team "red", runs one task */
  const char job[] = "{\"app\": \"sh\", \"tasks\": [{\"id\": \"t\", \"args\": [\"-c\", "
                     "\"i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; echo done\"]}]}";
  assert_int_equal(post(url, "/v1/jobs", ADMIN, job, &r), 201);
  long long job_id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  const char *args[] = {"--app", "sh=/bin/sh", "--account-key", key, "--team", "red",
                        "--exit-when-idle", "2", "--no-sandbox", NULL};
  pid_t w = server_fixture_worker(f, "cyhost", args);
  assert_true(w > 0);
  int status = harness_wait(w, 60);
  server_fixture_reaped(f, w);
  assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job_id);
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  assert_string_equal(json_string_value(json_object_get(r, "state")), "done");
  json_decref(r);

  json_t *v = volunteer(url, 1);
  assert_int_equal(json_integer_value(json_object_get(v, "account")), acct);
  double vcredit = json_real_value(json_object_get(v, "credit"));
  assert_true(vcredit > 0);
  assert_true(json_real_value(json_object_get(v, "expavg_credit")) > 0);
  json_decref(v);

  json_t *a = account(url, acct, key, 200);
  json_t *h = host_named(a, "cyhost");
  assert_non_null(h);
  assert_int_equal(json_integer_value(json_object_get(h, "id")), 1);
  assert_true(json_real_value(json_object_get(a, "credit")) == vcredit);
  assert_int_equal(json_integer_value(json_object_get(a, "results")), 1);
  assert_true(json_real_value(json_object_get(a, "expavg_credit")) > 0);
  assert_true(json_real_value(json_object_get(a, "expavg_time")) > 0);
  json_decref(a);

  /* `cairn account show` with the account's key lists the host */
  char cli[4096], *out = NULL;
  harness_bin(cli, sizeof cli, "cairn");
  char idarg[32];
  snprintf(idarg, sizeof idarg, "%lld", acct);
  const char *show[] = {cli, "account", "show", idarg, "--account-key", key, "--server", url, NULL};
  assert_int_equal(harness_run(show, &out), 0);
  if (!out || !strstr(out, "cyhost") || !strstr(out, "cy@example.org"))
    fail_msg("cairn account show: %s", out ? out : "(nothing)");
  free(out);

  /* the team counts it too (GET /v1/stats) */
  assert_int_equal(harness_http(url, "GET", "/v1/stats", ADMIN, NULL, 0, &r, NULL, NULL), 200);
  json_t *team = json_array_get(json_object_get(r, "teams"), 0);
  assert_string_equal(json_string_value(json_object_get(team, "team")), "red");
  assert_true(json_real_value(json_object_get(team, "credit")) == vcredit);
  json_decref(r);

  /* everything survives a kill -9 of the master */
  assert_true(server_fixture_stop(f, SIGKILL) >= 0);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  url = f->srv.url;
  a = account(url, acct, key, 200);
  assert_non_null(host_named(a, "cyhost"));
  assert_true(json_real_value(json_object_get(a, "credit")) == vcredit);
  assert_int_equal(json_integer_value(json_object_get(a, "results")), 1);
  assert_true(json_real_value(json_object_get(a, "expavg_credit")) > 0);
  json_decref(a);
  v = volunteer(url, 1);
  assert_int_equal(json_integer_value(json_object_get(v, "account")), acct);
  assert_true(json_real_value(json_object_get(v, "expavg_credit")) > 0);
  json_decref(v);
  /* log-in still works after the restart, and the new key opens the account */
  const char right[] = "{\"email\": \"cy@example.org\", \"password\": \"correct horse\"}";
  assert_int_equal(post(url, "/v1/accounts/login", NULL, right, &r), 200);
  json_decref(account(url, acct, json_string_value(json_object_get(r, "account_key")), 200));
  json_decref(r);
  /* and a new host registers with the account's new key */
  assert_int_equal(post(url, "/v1/accounts/login", NULL, right, &r), 200);
  char newkey[65];
  snprintf(newkey, sizeof newkey, "%s", json_string_value(json_object_get(r, "account_key")));
  json_decref(r);
  snprintf(body, sizeof body, "{\"name\": \"second\", \"apps\": [\"sh\"], \"account_key\": \"%s\"}",
           newkey);
  assert_int_equal(post(url, "/v1/volunteers", NULL, body, &r), 201);
  json_decref(r);
  a = account(url, acct, ADMIN, 200);
  assert_int_equal(json_array_size(json_object_get(a, "hosts")), 2);
  json_decref(a);

  /* a host registered without a key attaches itself with PATCH; a wrong key
   * is 403, another account's key once attached 409 */
  char vtok[65], other[65], path2[64];
  long long vid = harness_register(url, "plain", "sh", vtok);
  earn(url, vtok); /* 2 credits before it attaches: they come with it */
  snprintf(path2, sizeof path2, "/v1/volunteers/%lld", vid);
  snprintf(body, sizeof body, "{\"account_key\": \"%064d\"}", 7);
  assert_int_equal(harness_http(url, "PATCH", path2, vtok, body, strlen(body), &r, NULL, NULL),
                   403);
  json_decref(r);
  snprintf(body, sizeof body, "{\"account_key\": \"%s\"}", newkey);
  assert_int_equal(harness_http(url, "PATCH", path2, vtok, body, strlen(body), &r, NULL, NULL),
                   200);
  assert_int_equal(json_integer_value(json_object_get(r, "account")), acct);
  json_decref(r);
  sign_up(url, "Dee", "dee@example.org", other);
  snprintf(body, sizeof body, "{\"account_key\": \"%s\"}", other);
  assert_int_equal(harness_http(url, "PATCH", path2, vtok, body, strlen(body), &r, NULL, NULL),
                   409);
  json_decref(r);
  a = account(url, acct, ADMIN, 200);
  assert_int_equal(json_array_size(json_object_get(a, "hosts")), 3);
  assert_non_null(host_named(a, "plain"));
  assert_true(fabs(json_real_value(json_object_get(a, "credit")) - (vcredit + 2)) < 1e-9);
  assert_int_equal(json_integer_value(json_object_get(a, "results")), 2);
  json_decref(a);
  /* the attachment is durable */
  assert_true(server_fixture_stop(f, SIGKILL) >= 0);
  assert_int_equal(server_fixture_restart(f, NULL), 0);
  v = volunteer(f->srv.url, vid);
  assert_int_equal(json_integer_value(json_object_get(v, "account")), acct);
  json_decref(v);
  a = account(f->srv.url, acct, ADMIN, 200);
  assert_true(fabs(json_real_value(json_object_get(a, "credit")) - (vcredit + 2)) < 1e-9);
  json_decref(a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_sign_up_and_log_in, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test(test_gating),
    cmocka_unit_test(test_flood_rate_limited),
    cmocka_unit_test(test_pwhash_bound),
    cmocka_unit_test_setup_teardown(test_worker_attaches_and_earns, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
