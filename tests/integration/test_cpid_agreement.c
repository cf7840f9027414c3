/* test_cpid_agreement.c — a person's accounts on two projects come to one
 * cross-project id through their worker (docs/project.md, "Cross-project
 * ids"), with real processes on loopback: two cairn-server masters, an
 * account of the same e-mail on each (the second project's made a second
 * earlier, its e-mail in another case), and one cairn-worker of both
 * projects (--config, each project's account key) running CPU-bound tasks.
 *
 *   agreement  the first master takes the older id (the second's): both
 *              databases hold one cross_project_id and the second's time,
 *              and both statistics exports (user.gz, BOINC's format) give
 *              the person the same cpid, MD5(id ‖ e-mail in lower case);
 *   durable    the first master, killed with SIGKILL and started again,
 *              answers a heartbeat's "cpid" with that id and the e-mail's
 *              MD5; a newer offer changes nothing; an older one is taken;
 *              malformed ones are 400 naming the problem and change
 *              nothing;
 *   unattached an account of another e-mail keeps its own id. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "common/md5.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define BURN "i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done"

static void sign_up(const char *url, const char *email, char key[65]) {
  char body[512];
  snprintf(body, sizeof body, "{\"name\": \"Ann\", \"email\": \"%s\", \"password\": \"correct "
           "horse\"}", email);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "POST", "/v1/accounts", NULL, body, strlen(body), &r, NULL,
                                NULL), 201);
  snprintf(key, 65, "%s", json_string_value(json_object_get(r, "account_key")));
  json_decref(r);
}

static long long submit(server_fixture *f, int n) {
  char text[8192];
  size_t k = (size_t)snprintf(text, sizeof text, "{\"app\": \"sh\", \"policy\": \"fifo\", "
                              "\"lease_seconds\": 3, \"tasks\": [");
  for (int i = 0; i < n; i++)
    k += (size_t)snprintf(text + k, sizeof text - k, "%s{\"id\": \"t%d\", \"args\": [\"-c\", "
                          "\"%s\"]}", i ? ", " : "", i, BURN);
  snprintf(text + k, sizeof text - k, "]}");
  return server_fixture_submit(f, text);
}

/* Account id's cross_project_id and cpid_time in db (read while it runs). */
static void stored(const char *db, int id, char cpid[33], long long *time) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open_v2(db, &h, SQLITE_OPEN_READONLY, NULL), SQLITE_OK);
  sqlite3_busy_timeout(h, 5000);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT cross_project_id, cpid_time FROM accounts "
                                      "WHERE id = ?1", -1, &q, NULL), SQLITE_OK);
  sqlite3_bind_int(q, 1, id);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  snprintf(cpid, 33, "%s", (const char *)sqlite3_column_text(q, 0));
  *time = sqlite3_column_int64(q, 1);
  sqlite3_finalize(q);
  sqlite3_close(h);
}

/* The text of user.gz of a fresh export of f (malloc'd): export N asked
 * for, and read once GET /v1/stats/export says N ended. */
static char *user_xml(server_fixture *f) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/stats/export", ADMIN, NULL, 0, &r, NULL,
                                NULL), 202);
  long long n = json_integer_value(json_object_get(r, "export"));
  json_decref(r);
  int ended = 0;
  for (double until = harness_now() + 60; harness_now() < until && !ended; usleep(200000)) {
    json_t *st = server_fixture_get(f, "/v1/stats/export");
    ended = json_integer_value(json_object_get(st, "exports")) >= n;
    json_decref(st);
  }
  assert_true(ended);
  char path[4400];
  snprintf(path, sizeof path, "%s.stats/user.gz", f->db);
  gzFile g = gzopen(path, "rb");
  assert_non_null(g);
  size_t cap = 1 << 16, len = 0;
  char *text = malloc(cap);
  assert_non_null(text);
  int k;
  while ((k = gzread(g, text + len, (unsigned)(cap - len - 1))) > 0)
    len += (size_t)k;
  gzclose(g);
  text[len] = '\0';
  return text;
}

static void wait_done(server_fixture *f, long long job, int n) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  for (double until = harness_now() + 120; harness_now() < until; usleep(250000)) {
    json_t *j = server_fixture_get(f, path);
    long long done = json_integer_value(json_object_get(json_object_get(j, "counts"), "done"));
    json_decref(j);
    if (done == n)
      return;
  }
  fail_msg("job %lld did not finish", job);
}

/* The <cpid> of the user record of the only user in xml. */
static void user_cpid(const char *xml, char out[33]) {
  const char *p = strstr(xml, "<cpid>");
  assert_non_null(p);
  snprintf(out, 33, "%s", p + 6);
}

static long heartbeat(server_fixture *f, const char *token, const char *body, json_t **resp) {
  return harness_http(f->srv.url, "POST", "/v1/heartbeat", token, body, strlen(body), resp, NULL,
                      NULL);
}

/* The token of the worker's volunteer on project url (its credentials). */
static void token_of(const char *wdir, const char *url, char token[128]) {
  char hex[65], path[4400];
  cairn__sha256_hex(url, strlen(url), hex);
  hex[16] = '\0';
  snprintf(path, sizeof path, "%s/projects/%s/credentials.json", wdir, hex);
  json_t *o = json_load_file(path, 0, NULL);
  assert_non_null(o);
  snprintf(token, 128, "%s", json_string_value(json_object_get(o, "token")));
  json_decref(o);
}

static void test_agreement(void **state) {
  (void)state;
  server_fixture f1, f2;
  char port[32];
  snprintf(port, sizeof port, "127.0.0.1:%u", harness_unused_port(0));
  const char *extra[] = {"--listen", port, NULL};
  assert_int_equal(server_fixture_open(&f1, extra, 1), 0);
  assert_int_equal(server_fixture_open(&f2, NULL, 1), 0);
  char k1[65], k2[65], other[65];
  sign_up(f2.srv.url, "ann@example.org", k2); /* the older account */
  sleep(1);
  sign_up(f1.srv.url, "Ann@Example.ORG", k1);
  sign_up(f1.srv.url, "bob@example.org", other);
  char c1[33], c2[33], b0[33];
  long long t1, t2, tb0;
  stored(f1.db, 1, c1, &t1);
  stored(f2.db, 1, c2, &t2);
  stored(f1.db, 2, b0, &tb0);
  assert_true(t2 < t1);
  assert_string_not_equal(c1, c2);

  char dir[4200], log[4300], conf[4300], text[1024], bin[4096];
  snprintf(dir, sizeof dir, "%s/w", f1.dir);
  snprintf(log, sizeof log, "%s/w.log", f1.dir);
  snprintf(conf, sizeof conf, "%s/projects.conf", f1.dir);
  snprintf(text, sizeof text, "project %s account-key=%s\nproject %s account-key=%s\n",
           f1.srv.url, k1, f2.srv.url, k2);
  assert_int_equal(harness_write_file(conf, text), 0);
  long long j1 = submit(&f1, 12), j2 = submit(&f2, 12);
  harness_bin(bin, sizeof bin, "cairn-worker");
  const char *argv[] = {bin, "--config", conf, "--app", "sh=/bin/sh", "--slots", "2",
                        "--dir", dir, "--peer-listen", "off", "--log-level", "info", NULL};
  pid_t w = server_fixture_track(&f1, harness_spawn(argv, log));
  assert_true(w > 0);
  double t0 = harness_now();
  for (double until = t0 + 90; harness_now() < until; usleep(250000)) {
    stored(f1.db, 1, c1, &t1);
    if (strcmp(c1, c2) == 0)
      break;
  }
  fprintf(stderr, "the first master took the second's id after %.1f s\n", harness_now() - t0);
  assert_string_equal(c1, c2);
  assert_int_equal(t1, t2);
  stored(f2.db, 1, c2, &t2); /* the older one never moves */
  assert_string_equal(c1, c2);

  /* both exports: one cpid, MD5(id || e-mail in lower case) */
  wait_done(&f1, j1, 12);
  wait_done(&f2, j2, 12);
  char *x1 = user_xml(&f1), *x2 = user_xml(&f2), p1[33], p2[33], want[33], in[100];
  user_cpid(x1, p1);
  user_cpid(x2, p2);
  snprintf(in, sizeof in, "%sann@example.org", c2);
  cairn__md5_hex(in, strlen(in), want);
  fprintf(stderr, "cpid in both exports: %s and %s\n", p1, p2);
  assert_string_equal(p1, want);
  assert_string_equal(p2, want);
  free(x1);
  free(x2);

  /* durable: the first master killed and started again */
  char tok[128];
  token_of(dir, f1.srv.url, tok);
  kill(w, SIGTERM);
  assert_true(harness_wait(w, 60) != -1);
  server_fixture_reaped(&f1, w);
  assert_int_equal(server_fixture_stop(&f1, SIGKILL), 9);
  assert_int_equal(server_fixture_restart(&f1, extra), 0);
  json_t *r = NULL;
  char hash[33];
  cairn__md5_hex("ann@example.org", strlen("ann@example.org"), hash);
  assert_int_equal(heartbeat(&f1, tok, "{\"cpid\": {}}", &r), 200);
  json_t *cp = json_object_get(r, "cpid");
  assert_string_equal(json_string_value(json_object_get(cp, "id")), c2);
  assert_int_equal(json_integer_value(json_object_get(cp, "time")), t2);
  assert_string_equal(json_string_value(json_object_get(cp, "email_hash")), hash);
  json_decref(r);
  /* without "cpid": no "cpid" in the answer */
  assert_int_equal(heartbeat(&f1, tok, "{}", &r), 200);
  assert_null(json_object_get(r, "cpid"));
  json_decref(r);
  /* a newer offer changes nothing; an older one is taken */
  snprintf(text, sizeof text, "{\"cpid\": {\"id\": \"00000000000000000000000000000000\", "
           "\"time\": %lld}}", t2 + 1);
  assert_int_equal(heartbeat(&f1, tok, text, &r), 200);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "cpid"), "id")), c2);
  json_decref(r);
  snprintf(text, sizeof text, "{\"cpid\": {\"id\": \"ffffffffffffffffffffffffffffffff\", "
           "\"time\": %lld}}", t2 - 1);
  assert_int_equal(heartbeat(&f1, tok, text, &r), 200);
  assert_string_equal(json_string_value(json_object_get(json_object_get(r, "cpid"), "id")),
                      "ffffffffffffffffffffffffffffffff");
  json_decref(r);
  stored(f1.db, 1, c1, &t1);
  assert_string_equal(c1, "ffffffffffffffffffffffffffffffff");
  assert_int_equal(t1, t2 - 1);
  /* malformed: 400 naming it, nothing changed */
  static const struct { const char *body, *says; } bad[] = {
    {"{\"cpid\": 1}", "\"cpid\" must be {} or {\"id\", \"time\"}"},
    {"{\"cpid\": {\"id\": \"00\", \"time\": 0}}", "cpid.id must be 32 lowercase hex digits"},
    {"{\"cpid\": {\"id\": \"00000000000000000000000000000000\", \"time\": -5}}",
     "cpid.time must be Unix seconds"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    assert_int_equal(heartbeat(&f1, tok, bad[i].body, &r), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    assert_non_null(msg);
    assert_non_null(strstr(msg, bad[i].says));
    json_decref(r);
  }
  stored(f1.db, 1, c1, &t1);
  assert_string_equal(c1, "ffffffffffffffffffffffffffffffff");
  /* bob, whose hosts offered nothing, keeps his own */
  char b1[33];
  long long tb1;
  stored(f1.db, 2, b1, &tb1);
  assert_string_equal(b1, b0);
  assert_int_equal(tb1, tb0);
  assert_int_equal(server_fixture_close(&f2), 0);
  assert_int_equal(server_fixture_close(&f1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_agreement),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
