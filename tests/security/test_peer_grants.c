/* test_peer_grants.c — a worker's peer server sends a file only to the
 * volunteer the master granted it to, and a ban revokes the grant.
 *
 * A real cairn-worker w1 (cluster a) runs a task on two broadcast files A
 * and B, so it holds both. A second volunteer v2 of cluster a asks the
 * master for a task on A: its source list names w1 with a grant for A. With
 * it, v2 downloads A from w1; the same grant does not open B, a request
 * without a grant or with a volunteer token gets nothing, and a volunteer
 * forging grants with its own peer key gets nothing. Then the admin bans
 * v2: as soon as w1 hears its next key, v2's grant is refused, while a
 * grant the master issues after the ban works. Real cairn-server, real
 * worker, loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/grant.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define SIZE (256u * 1024u)

typedef struct fixture {
  server_fixture s;
  char log[4300]; /* worker w1's */
  pid_t w1;
  char peer[64];
  char sha_a[65], sha_b[65];
} fixture;

static void upload(fixture *f, int seed, char sha[65]) {
  char *data = malloc(SIZE), path[128];
  assert_non_null(data);
  for (unsigned i = 0; i < SIZE; i++)
    data[i] = (char)(i * 31u + (unsigned)seed * 7u + i / 97u);
  cairn__sha256_hex(data, SIZE, sha);
  snprintf(path, sizeof path, "/v1/files/%s", sha);
  assert_int_equal(harness_http(f->s.srv.url, "PUT", path, ADMIN, data, SIZE, NULL, NULL, NULL), 201);
  free(data);
}

/* Submits a one-task job of app reading the broadcast files named (A, and
 * B when both); returns its id. */
static long long submit(fixture *f, const char *app, int both) {
  char job[2048];
  json_t *r = NULL;
  snprintf(job, sizeof job,
           "{\"app\": \"%s\", \"policy\": \"fifo\", \"files\": ["
           "{\"name\": \"a\", \"sha256\": \"%s\", \"broadcast\": true},"
           "{\"name\": \"b\", \"sha256\": \"%s\", \"broadcast\": true}],"
           " \"tasks\": [{\"id\": \"t\", \"args\": [\"-c\", \"cat inputs/* | wc -c\"],"
           " \"inputs\": [\"a\"%s]}]}",
           app, f->sha_a, f->sha_b, both ? ", \"b\"" : "");
  json_t *body = json_loads(job, 0, NULL);
  assert_non_null(body);
  assert_int_equal(harness_http_json(f->s.srv.url, "POST", "/v1/jobs", ADMIN, body, &r), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(body);
  json_decref(r);
  return id;
}

/* The port w1's peer server reports in its log, waiting up to 30 s. */
static unsigned peer_port(const char *log) {
  for (double until = harness_now() + 30; harness_now() < until; usleep(50000)) {
    FILE *fp = fopen(log, "r");
    char line[1024];
    unsigned port = 0;
    while (fp && !port && fgets(line, sizeof line, fp)) {
      const char *p = strstr(line, "peer server listening on ");
      if (p && (p = strstr(p, "(port ")))
        port = (unsigned)atoi(p + 6);
    }
    if (fp)
      fclose(fp);
    if (port)
      return port;
  }
  return 0;
}

/* Waits (60 s at most) for job to be done with both its files held. */
static void wait_done_and_held(fixture *f, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  for (double until = harness_now() + 60;; usleep(50000)) {
    json_t *r = NULL;
    assert_int_equal(harness_http(f->s.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
    json_t *bf = json_object_get(r, "broadcast_files");
    int held = json_array_size(bf) == 2 &&
               json_integer_value(json_object_get(json_array_get(bf, 0), "holders")) == 1 &&
               json_integer_value(json_object_get(json_array_get(bf, 1), "holders")) == 1;
    int done = strcmp(json_string_value(json_object_get(r, "state")), "done") == 0;
    json_decref(r);
    if (done && held)
      return;
    if (harness_now() > until)
      fail_msg("job %lld not done with its files held within 60 s", job);
  }
}

/* Registers a raw volunteer of cluster a for app x; its token into tok,
 * its peer key into key; returns its id. */
static long long enrol(fixture *f, const char *name, char tok[65], char key[65]) {
  json_t *b = json_pack("{s:s, s:s, s:[s], s:s}", "name", name, "cluster", "a", "apps", "x",
                        "peer_url", "http://127.0.0.1:9"), *r = NULL;
  assert_int_equal(harness_http_json(f->s.srv.url, "POST", "/v1/volunteers", NULL, b, &r), 201);
  assert_null(json_object_get(r, "peer_token")); /* nothing shared by every volunteer */
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  snprintf(key, 65, "%s", json_string_value(json_object_get(r, "peer_key")));
  assert_true(cairn__sha256_valid_hex(key));
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(b);
  json_decref(r);
  return id;
}

/* The source on w1 the master names for tok's next task (the path on w1,
 * with its grant) into out; fails the test when there is none. */
static void granted_path(fixture *f, const char *tok, char out[512]) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->s.srv.url, "POST", "/v1/work", tok, NULL, 0, &r, NULL, NULL), 200);
  json_t *in = json_array_get(json_object_get(json_object_get(r, "task"), "inputs"), 0);
  const char *src = json_string_value(json_array_get(json_object_get(in, "sources"), 0));
  assert_non_null(src);
  assert_true(strncmp(src, f->peer, strlen(f->peer)) == 0);
  snprintf(out, 512, "%s", src + strlen(f->peer));
  assert_non_null(strstr(out, "?" CAIRN_GRANT_PARAM "="));
  json_decref(r);
}

/* GET path from w1; the status, and the body's digest in sha (or "-"). */
static long from_w1(fixture *f, const char *path, const char *token, char sha[65]) {
  char *raw = NULL;
  size_t len = 0;
  long st = harness_http(f->peer, "GET", path, token, NULL, 0, NULL, &raw, &len);
  if (st == 200)
    cairn__sha256_hex(raw, len, sha);
  else
    snprintf(sha, 65, "-");
  free(raw);
  return st;
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || server_fixture_open(&f->s, NULL, 1)) {
    free(f);
    return -1;
  }
  snprintf(f->log, sizeof f->log, "%s/w1.log", f->s.dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = server_fixture_close(&f->s);
  free(f);
  return rc;
}

static void test_grants_open_one_file_to_one_volunteer(void **state) {
  fixture *f = *state;
  char sha[65];
  upload(f, 1, f->sha_a);
  upload(f, 2, f->sha_b);
  const char *args[] = {"--app", "sh=/bin/sh", "--cluster", "a", "--peer-listen", "127.0.0.1:0",
                        "--log-level", "debug", NULL};
  f->w1 = server_fixture_worker(&f->s, "w1", args);
  assert_true(f->w1 > 0);
  unsigned port = peer_port(f->log);
  assert_true(port > 0);
  snprintf(f->peer, sizeof f->peer, "http://127.0.0.1:%u", port);
  wait_done_and_held(f, submit(f, "sh", 1));

  /* v2 is sent to w1 for A, with a grant: w1 serves A to it */
  char tok2[65], key2[65], grant_a[512];
  long long v2 = enrol(f, "v2", tok2, key2);
  submit(f, "x", 0);
  granted_path(f, tok2, grant_a);
  assert_int_equal(from_w1(f, grant_a, NULL, sha), 200);
  assert_string_equal(sha, f->sha_a);
  printf("v2 downloaded A from w1 with its grant: %s\n", sha);
  /* v2 says so, as a worker does: w1 is free to send another copy */
  char src[600];
  snprintf(src, sizeof src, "%s%s", f->peer, grant_a);
  json_t *hb = json_pack("{s:[{s:s, s:s, s:I, s:I}]}", "fetched", "sha256", f->sha_a, "source",
                         src, "bytes", (json_int_t)SIZE, "ms", (json_int_t)5);
  assert_int_equal(harness_http_json(f->s.srv.url, "POST", "/v1/heartbeat", tok2, hb, NULL), 200);
  json_decref(hb);

  /* the grant opens nothing else; nothing opens w1 without one */
  char other[512], path_a[128];
  snprintf(other, sizeof other, "/v1/files/%s%s", f->sha_b, strchr(grant_a, '?'));
  snprintf(path_a, sizeof path_a, "/v1/files/%s", f->sha_a);
  long b_with_a = from_w1(f, other, NULL, sha);
  long bare = from_w1(f, path_a, NULL, sha);
  long with_token = from_w1(f, path_a, tok2, sha);
  /* a volunteer's own peer key makes grants for its own copies only */
  char forged[CAIRN_GRANT_MAX + 1], forged_path[512];
  assert_int_equal(cairn__grant_make(key2, f->sha_a, v2, (long long)time(NULL) + 600, forged), 0);
  snprintf(forged_path, sizeof forged_path, "%s?" CAIRN_GRANT_PARAM "=%s", path_a, forged);
  long forged_st = from_w1(f, forged_path, NULL, sha);
  printf("B with A's grant: %ld; no grant: %ld; volunteer token: %ld; forged grant: %ld\n",
         b_with_a, bare, with_token, forged_st);
  assert_int_equal(b_with_a, 403);
  assert_int_equal(bare, 401);
  assert_int_equal(with_token, 401);
  assert_int_equal(forged_st, 403);

  /* the admin bans v2: its grant stops working once w1 hears its new key
   * (a refused grant makes w1 ask for it within about a second; it would
   * anyway within 30 s) */
  char ban[64];
  snprintf(ban, sizeof ban, "/v1/volunteers/%lld/ban", v2);
  assert_int_equal(harness_http(f->s.srv.url, "POST", ban, ADMIN, "{\"reason\": \"test\"}", 18, NULL,
                                NULL, NULL), 200);
  double t0 = harness_now();
  long st = 200;
  while (st == 200 && harness_now() - t0 < 45) {
    st = from_w1(f, grant_a, NULL, sha);
    if (st == 200) {
      (void)from_w1(f, forged_path, NULL, sha);
      usleep(200000);
    }
  }
  printf("v2's grant after the ban: %ld, %.1f s after it\n", st, harness_now() - t0);
  assert_int_equal(st, 403);

  /* a volunteer granted A after the ban gets it from w1 */
  char tok3[65], key3[65], grant3[512];
  enrol(f, "v3", tok3, key3);
  submit(f, "x", 0);
  granted_path(f, tok3, grant3);
  assert_int_equal(from_w1(f, grant3, NULL, sha), 200);
  assert_string_equal(sha, f->sha_a);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_grants_open_one_file_to_one_volunteer, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
