/* test_invitations.c — who may register a volunteer (cairn-server
 * --registration): closed refuses everyone (403 registration_closed, and a
 * worker gives up); invite needs a code from `cairn invite` (403
 * invitation_required without one, invitation_invalid for a wrong one,
 * invitation_used_up past its uses, invitation_expired after its time,
 * invalid once revoked with `cairn invitations revoke`); a worker registers
 * with --invitation-file or $CAIRN_INVITATION and runs a task; a list never
 * shows a code; eight concurrent registrations with a one-use code: exactly
 * one wins; wrong codes spend the address's failed-authentication tokens;
 * an acknowledged invitation and its uses survive kill -9. Real
 * cairn-server, cairn-worker and cairn processes on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/security/rawconn.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef server_fixture fixture;

static int start(void **state, const char *mode) {
  const char *extra[] = {"--registration", mode, NULL};
  return server_fixture_start(state, extra);
}

static int setup_invite(void **state) { return start(state, "invite"); }
static int setup_closed(void **state) { return start(state, "closed"); }

/* POST /v1/volunteers with invitation code (NULL: none); the status, and
 * the error code of a refusal in why (may be NULL). */
static long enrol(const fixture *f, const char *code, char *why, size_t len) {
  json_t *body = json_pack("{s:s, s:[s]}", "name", "v", "apps", "sh"), *r = NULL;
  if (code)
    json_object_set_new(body, "invitation", json_string(code));
  long st = harness_http_json(f->srv.url, "POST", "/v1/volunteers", NULL, body, &r);
  json_decref(body);
  if (why)
    snprintf(why, len, "%s",
             st == 201 ? "" : json_string_value(json_object_get(json_object_get(r, "error"),
                                                                "code")) ?: "");
  json_decref(r);
  return st;
}

static void expect_refused(const fixture *f, const char *code, const char *want) {
  char why[64];
  long st = enrol(f, code, why, sizeof why);
  if (st != 403 || strcmp(why, want) != 0)
    fail_msg("registration with %s: %ld %s, wanted 403 %s", code ? code : "no code", st, why,
             want);
}

/* Runs `cairn ARGS...` against the server; its exit status, stdout in *out. */
static int cli(const fixture *f, const char *const *args, char **out) {
  char bin[4096];
  const char *argv[16];
  int n = 0;
  harness_bin(bin, sizeof bin, "cairn");
  argv[n++] = bin;
  for (int i = 0; args[i]; i++)
    argv[n++] = args[i];
  argv[n++] = "--server";
  argv[n++] = f->srv.url;
  argv[n++] = "--token";
  argv[n++] = ADMIN;
  argv[n] = NULL;
  return harness_run(argv, out);
}

/* `cairn invite ARGS...`: the code it printed (copied into code). */
static void invite(const fixture *f, const char *const *args, char code[128]) {
  const char *argv[12] = {"invite"};
  int n = 1;
  for (int i = 0; args[i]; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  char *out = NULL;
  assert_int_equal(cli(f, argv, &out), 0);
  assert_non_null(out);
  size_t len = strcspn(out, "\n");
  assert_int_equal(len, 64);
  memcpy(code, out, len);
  code[len] = '\0';
  free(out);
}

/* Starts cairn-worker (app sh, one task then exit) with extra args and env
 * CAIRN_INVITATION=env_code (NULL: unset); its exit status. */
static int run_worker(const fixture *f, const char *name, const char *const *extra,
                      const char *env_code) {
  char log[4300];
  snprintf(log, sizeof log, "%s/%s.log", f->dir, name);
  const char *args[24] = {"--app", "sh=/bin/sh", "--peer-listen", "off", "--max-tasks", "1",
                          "--exit-when-idle", "10"};
  int n = 8;
  for (int i = 0; extra && extra[i] && n < 23; i++)
    args[n++] = extra[i];
  args[n] = NULL;
  if (env_code)
    setenv("CAIRN_INVITATION", env_code, 1);
  pid_t pid = harness_worker(f->srv.url, f->dir, name, args);
  unsetenv("CAIRN_INVITATION");
  assert_true(pid > 0);
  int st = harness_wait(pid, 60);
  if (st == -1) {
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
  }
  if (st == -1 || !WIFEXITED(st) || WEXITSTATUS(st) != 0) {
    char cmd[4400];
    snprintf(cmd, sizeof cmd, "tail -n 5 '%s' >&2", log);
    if (system(cmd) != 0)
      fprintf(stderr, "(no log)\n");
  }
  return st == -1 ? -1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128;
}

static void submit(const fixture *f, int ntasks) {
  char job[2048];
  size_t k = (size_t)snprintf(job, sizeof job, "{\"app\": \"sh\", \"tasks\": [");
  for (int i = 0; i < ntasks; i++)
    k += (size_t)snprintf(job + k, sizeof job - k, "%s{\"id\": \"t%d\", \"args\": [\"-c\", "
                          "\"echo %d\"]}", i ? ", " : "", i, i);
  snprintf(job + k, sizeof job - k, "]}");
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), NULL,
                                NULL, NULL), 201);
}

static void test_closed_refuses_everyone(void **state) {
  fixture *f = *state;
  expect_refused(f, NULL, "registration_closed");
  expect_refused(f, "anything", "registration_closed");
  /* a worker is told so and gives up (exit 1), it does not retry forever */
  assert_int_equal(run_worker(f, "w", NULL, NULL), 1);
  char log[4300], cmd[4400];
  snprintf(log, sizeof log, "%s/w.log", f->dir);
  snprintf(cmd, sizeof cmd, "grep -q 'registers no new volunteers' '%s'", log);
  assert_int_equal(system(cmd), 0);
  fprintf(stderr, "closed: registrations refused with 403 registration_closed\n");
}

static void test_invite_codes(void **state) {
  fixture *f = *state;
  char code[128], other[128], path[4300];
  expect_refused(f, NULL, "invitation_required");
  expect_refused(f, "0000000000000000000000000000000000000000000000000000000000000000",
                 "invitation_invalid");
  const char *two[] = {"--uses", "2", "--note", "lab machines", NULL};
  invite(f, two, code);
  expect_refused(f, "0000000000000000000000000000000000000000000000000000000000000000",
                 "invitation_invalid");
  submit(f, 2);
  /* a worker with the code in a file, one with it in the environment */
  snprintf(path, sizeof path, "%s/code.txt", f->dir);
  char text[200];
  snprintf(text, sizeof text, "%s\n", code);
  assert_int_equal(harness_write_file(path, text), 0);
  const char *by_file[] = {"--invitation-file", path, NULL};
  assert_int_equal(run_worker(f, "w1", by_file, NULL), 0);
  assert_int_equal(run_worker(f, "w2", NULL, code), 0);
  /* its two uses are spent */
  expect_refused(f, code, "invitation_used_up");
  /* the list shows the prefix, uses and note, never the code */
  const char *list[] = {"invitations", NULL};
  char *out = NULL;
  assert_int_equal(cli(f, list, &out), 0);
  fprintf(stderr, "%s", out);
  assert_null(strstr(out, code));
  char prefix[9];
  memcpy(prefix, code, 8);
  prefix[8] = '\0';
  assert_non_null(strstr(out, prefix));
  assert_non_null(strstr(out, "lab machines"));
  free(out);
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/invitations", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  json_t *first = json_array_get(json_object_get(r, "invitations"), 0);
  assert_int_equal(json_integer_value(json_object_get(first, "used")), 2);
  assert_int_equal(json_integer_value(json_object_get(first, "uses_left")), 0);
  assert_null(json_object_get(first, "code"));
  long long id = json_integer_value(json_object_get(first, "id"));
  json_decref(r);
  /* the list and the creation need the admin token */
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/invitations", NULL, NULL, 0, NULL, NULL,
                                NULL), 401);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/invitations", code, "{}", 2, NULL, NULL,
                                NULL), 403);
  /* bad input is refused and creates nothing */
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/invitations", ADMIN,
                                "{\"uses\": 0}", 11, NULL, NULL, NULL), 400);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/invitations", ADMIN,
                                "{\"code\": \"mine\"}", 16, NULL, NULL, NULL), 400);

  /* revoked: refused as unknown */
  const char *one[] = {NULL};
  invite(f, one, other);
  char idtext[32];
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/invitations", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "invitations")), 2);
  snprintf(idtext, sizeof idtext, "%lld",
           (long long)json_integer_value(json_object_get(
             json_array_get(json_object_get(r, "invitations"), 1), "id")));
  json_decref(r);
  const char *revoke[] = {"invitations", "revoke", idtext, NULL};
  assert_int_equal(cli(f, revoke, NULL), 0);
  expect_refused(f, other, "invitation_invalid");
  assert_int_equal(cli(f, revoke, NULL), 1); /* gone */
  /* the used-up invitation is still listed until revoked */
  snprintf(idtext, sizeof idtext, "%lld", id);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/invitations", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "invitations")), 1);
  json_decref(r);

  /* expired: a code good for one second */
  json_t *made = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/invitations", ADMIN,
                                "{\"expires_seconds\": 1}", 22, &made, NULL, NULL), 201);
  snprintf(other, sizeof other, "%s", json_string_value(json_object_get(made, "code")));
  long long expires = json_integer_value(json_object_get(made, "expires"));
  json_decref(made);
  while ((long long)time(NULL) <= expires) /* the master's clock is this host's */
    usleep(100000);
  expect_refused(f, other, "invitation_expired");
  fprintf(stderr, "invite: required, invalid, used up, revoked and expired codes refused; "
          "2 workers registered with a 2-use code\n");
}

typedef struct racer {
  const fixture *f;
  const char *code;
  pthread_barrier_t *go;
  long status;
  char why[64];
} racer;

static void *race(void *arg) {
  racer *r = arg;
  pthread_barrier_wait(r->go);
  r->status = enrol(r->f, r->code, r->why, sizeof r->why);
  return NULL;
}

static void test_single_use_race(void **state) {
  fixture *f = *state;
  enum { N = 8 };
  const char *one[] = {"--uses", "1", NULL};
  int wins = 0, used_up = 0;
  for (int round = 0; round < 3; round++) {
    char code[128];
    invite(f, one, code);
    pthread_t t[N];
    racer r[N];
    pthread_barrier_t go;
    pthread_barrier_init(&go, NULL, N);
    for (int i = 0; i < N; i++) {
      r[i] = (racer){.f = f, .code = code, .go = &go};
      assert_int_equal(pthread_create(&t[i], NULL, race, &r[i]), 0);
    }
    int won = 0;
    for (int i = 0; i < N; i++) {
      pthread_join(t[i], NULL);
      won += r[i].status == 201;
      used_up += r[i].status == 403 && strcmp(r[i].why, "invitation_used_up") == 0;
    }
    pthread_barrier_destroy(&go);
    assert_int_equal(won, 1);
    wins += won;
  }
  fprintf(stderr, "race: 3 rounds of %d concurrent registrations with a one-use code: %d won, "
          "%d refused invitation_used_up\n", N, wins, used_up);
  assert_int_equal(used_up, 3 * (N - 1));
}

static void test_wrong_codes_spend_failed_auth_tokens(void **state) {
  fixture *f = *state;
  char req[1024], resp[4096];
  const char *body = "{\"apps\": [\"sh\"], \"invitation\": \"guess\"}";
  snprintf(req, sizeof req, "POST /v1/volunteers HTTP/1.1\r\nHost: 127.0.0.1\r\n"
           "Content-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
           strlen(body), body);
  int port = atoi(strrchr(f->srv.url, ':') + 1), n = 0, st = 0;
  while (n < 200) {
    int fd = raw_connect("127.0.0.11", port, 0);
    assert_true(fd >= 0);
    assert_int_equal(raw_send(fd, req, strlen(req), 5), strlen(req));
    assert_true(raw_recv(fd, resp, sizeof resp - 1, 5) > 0);
    close(fd);
    if ((st = raw_status(resp)) != 403)
      break;
    n++;
  }
  fprintf(stderr, "guessing: %d wrong codes answered 403, then %d\n", n, st);
  assert_int_equal(st, 429);
  /* each guess spends its registration's token and a failed authentication's */
  assert_true(n >= 29 && n <= 31);
}

static void test_survives_kill9(void **state) {
  fixture *f = *state;
  char code[128];
  const char *three[] = {"--uses", "3", "--note", "kept", NULL};
  invite(f, three, code);
  assert_int_equal(enrol(f, code, NULL, 0), 201);
  server_fixture_stop(f, SIGKILL);
  const char *extra[] = {"--registration", "invite", NULL};
  assert_int_equal(server_fixture_restart(f, extra), 0);
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/invitations", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  json_t *x = json_array_get(json_object_get(r, "invitations"), 0);
  assert_non_null(x);
  assert_int_equal(json_integer_value(json_object_get(x, "used")), 1);
  assert_string_equal(json_string_value(json_object_get(x, "note")), "kept");
  json_decref(r);
  assert_int_equal(enrol(f, code, NULL, 0), 201);
  assert_int_equal(enrol(f, code, NULL, 0), 201);
  expect_refused(f, code, "invitation_used_up");
  fprintf(stderr, "kill -9: the invitation came back with 1 of its 3 uses spent; the 2 left "
          "worked, a 4th was refused\n");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_closed_refuses_everyone, setup_closed,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_invite_codes, setup_invite, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_single_use_race, setup_invite, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_wrong_codes_spend_failed_auth_tokens, setup_invite,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_survives_kill9, setup_invite, server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
