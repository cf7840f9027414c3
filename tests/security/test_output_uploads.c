/* test_output_uploads.c — output file uploads against a real master: only
 * the lease's holder uploads (403), a digest mismatch or a truncated upload
 * stores nothing (400), a file over its cap is refused from its headers
 * (413, before the body), a result naming a file never uploaded, one
 * outside the declared patterns or missing a required one is refused (400),
 * and job files with bad patterns are refused (400) and change nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/security/rawconn.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef struct upl {
  server_fixture *f;
  char tok[65], other[65];
  long long idx;
} upl;

/* 1 when the file store holds sha, or (sha NULL) any temporary upload. */
static int stored(const server_fixture *f, const char *sha) {
  char path[4400];
  snprintf(path, sizeof path, "%s/cairn.db.files", f->dir);
  DIR *d = opendir(path);
  int found = 0;
  for (struct dirent *e = d ? readdir(d) : NULL; e; e = readdir(d))
    if (sha ? strcmp(e->d_name, sha) == 0 : strncmp(e->d_name, ".upload-", 8) == 0)
      found = 1;
  if (d)
    closedir(d);
  return found;
}

static long put_file(const upl *u, const char *token, long long idx, const char *sha,
                     const char *body, json_t **resp) {
  char path[160];
  snprintf(path, sizeof path, "/v1/results/%lld/files/%s", idx, sha);
  return harness_http(u->f->srv.url, "PUT", path, token, body, strlen(body), resp, NULL, NULL);
}

static const char *message(json_t *r) {
  const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  return m ? m : "";
}

static void test_uploads(void **state) {
  upl u = {.f = *state};
  server_fixture *f = u.f;
  harness_register(f->srv.url, "holder", "upl", u.tok);
  harness_register(f->srv.url, "other", "upl", u.other);
  const char *job = "{\"app\": \"upl\", \"tasks\": [{\"id\": \"t\", \"outputs\": "
                    "[{\"name\": \"out.bin\", \"max_mib\": 1}, {\"name\": \"logs/*.log\", "
                    "\"max_mib\": 1}]}]}";
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r,
                                NULL, NULL), 201);
  json_decref(r);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", u.tok, "{}", 2, &r, NULL, NULL),
                   200);
  u.idx = (long long)json_integer_value(json_object_get(r, "index"));
  json_t *outs = json_object_get(json_object_get(r, "task"), "outputs");
  assert_int_equal(json_array_size(outs), 2); /* the offer lists the patterns */
  json_decref(r);
  char hello[65], hellx[65], never[65];
  cairn__sha256_hex("hello", 5, hello);
  cairn__sha256_hex("hellx", 5, hellx);
  cairn__sha256_hex("never", 5, never);

  /* a lease not held: another volunteer's, or none */
  r = NULL;
  assert_int_equal(put_file(&u, u.other, u.idx, hello, "hello", &r), 403);
  fprintf(stderr, "uploads: another volunteer's lease: 403 %s\n", message(r));
  json_decref(r);
  assert_int_equal(put_file(&u, u.tok, u.idx + 1000, hello, "hello", NULL), 403);
  assert_int_equal(put_file(&u, NULL, u.idx, hello, "hello", NULL), 401);
  assert_false(stored(f, hello));

  /* the bytes do not hash to the URL's digest */
  r = NULL;
  assert_int_equal(put_file(&u, u.tok, u.idx, hello, "hellx", &r), 400);
  fprintf(stderr, "uploads: digest mismatch: 400 %s\n", message(r));
  json_decref(r);
  assert_false(stored(f, hello));
  assert_false(stored(f, hellx));
  assert_false(stored(f, NULL));

  /* truncated: fewer bytes than the Content-Length, then the client stops */
  char req[1024], buf[4096];
  int fd = raw_connect("127.0.0.1", f->port, 0);
  assert_true(fd >= 0);
  snprintf(req, sizeof req,
           "PUT /v1/results/%lld/files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Length: 1000\r\n\r\nhello", u.idx, hello, u.tok);
  raw_send(fd, req, strlen(req), 5);
  shutdown(fd, SHUT_WR);
  raw_recv(fd, buf, sizeof buf, 5);
  close(fd);
  /* the master drops the temporary file as the connection ends, at the
   * latest at its request deadline (30 s) when a loaded machine delays the
   * end of the connection */
  double end = harness_now() + 40;
  while (stored(f, NULL) && harness_now() < end)
    usleep(20 * 1000);
  assert_false(stored(f, NULL));
  assert_false(stored(f, hello));
  fprintf(stderr, "uploads: truncated upload: nothing stored (answer: %d)\n", raw_status(buf));

  /* over the pattern's cap of 1 MiB: 413 from the headers, no body sent */
  fd = raw_connect("127.0.0.1", f->port, 0);
  assert_true(fd >= 0);
  snprintf(req, sizeof req,
           "PUT /v1/results/%lld/files/%s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
           "Content-Length: 2097152\r\nExpect: 100-continue\r\n\r\n", u.idx, hello, u.tok);
  raw_send(fd, req, strlen(req), 5);
  raw_recv(fd, buf, sizeof buf, 5);
  close(fd);
  fprintf(stderr, "uploads: 2 MiB over a 1 MiB cap, headers only: %d\n", raw_status(buf));
  assert_int_equal(raw_status(buf), 413);
  assert_false(stored(f, NULL));

  /* a result naming a file never uploaded */
  char body[1024];
  snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"\", \"outputs\": "
           "[{\"name\": \"out.bin\", \"sha256\": \"%s\", \"size\": 5}]}", never);
  char rpath[64];
  snprintf(rpath, sizeof rpath, "/v1/results/%lld", u.idx);
  r = NULL;
  assert_int_equal(harness_http(f->srv.url, "PUT", rpath, u.tok, body, strlen(body), &r, NULL,
                                NULL), 400);
  fprintf(stderr, "uploads: result naming a file never uploaded: 400 %s\n", message(r));
  assert_non_null(strstr(message(r), "was not uploaded"));
  json_decref(r);

  /* uploaded, but named outside the patterns; a required one missing; bad names */
  assert_int_equal(put_file(&u, u.tok, u.idx, hello, "hello", NULL), 201);
  assert_true(stored(f, hello));
  static const char *const bad[] = {
    "{\"exit_status\": 0, \"output\": \"\", \"outputs\": [{\"name\": \"other.txt\", "
    "\"sha256\": \"%s\", \"size\": 5}]}",
    "{\"exit_status\": 0, \"output\": \"\", \"outputs\": [{\"name\": \"logs/a.log\", "
    "\"sha256\": \"%s\", \"size\": 5}]}",
    "{\"exit_status\": 0, \"output\": \"\", \"outputs\": [{\"name\": \"../out.bin\", "
    "\"sha256\": \"%s\", \"size\": 5}]}",
    "{\"exit_status\": 0, \"output\": \"\", \"outputs\": [{\"name\": \"out.bin\", "
    "\"sha256\": \"%s\", \"size\": 6}]}",
    "{\"exit_status\": 0, \"output\": \"\", \"stderr\": \"x\", \"stderr_encoding\": \"hex\", "
    "\"outputs\": [{\"name\": \"out.bin\", \"sha256\": \"%s\", \"size\": 5}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(body, sizeof body, bad[i], hello);
    r = NULL;
    assert_int_equal(harness_http(f->srv.url, "PUT", rpath, u.tok, body, strlen(body), &r, NULL,
                                  NULL), 400);
    fprintf(stderr, "uploads: bad result %zu: 400 %s\n", i, message(r));
    json_decref(r);
  }

  /* and the good one: accepted, served to the admin */
  snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"ok\", \"stderr\": \"warn\\n\", "
           "\"outputs\": [{\"name\": \"out.bin\", \"sha256\": \"%s\", \"size\": 5}]}", hello);
  assert_int_equal(harness_http(f->srv.url, "PUT", rpath, u.tok, body, strlen(body), NULL, NULL,
                                NULL), 200);
  char *raw = NULL;
  size_t rawlen = 0;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs/1/output?task=t&name=out.bin",
                                ADMIN, NULL, 0, NULL, &raw, &rawlen), 200);
  assert_int_equal(rawlen, 5);
  assert_memory_equal(raw, "hello", 5);
  free(raw);
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs/1/output?task=t&name=out.bin",
                                u.tok, NULL, 0, NULL, NULL, NULL), 403);
  /* the lease is returned: no more uploads for it */
  assert_int_equal(put_file(&u, u.tok, u.idx, hellx, "hellx", NULL), 403);
  assert_false(stored(f, hellx));
}

static void test_bad_job_files(void **state) {
  server_fixture *f = *state;
  static const char *const jobs[] = {
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [\"../up\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [\"/etc/passwd\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [\"a[bc\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [\"a//b\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [\"x\", \"x\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [{\"name\": \"x\", \"max_mib\": 0}]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [{\"name\": \"x\", \"cap\": 1}]}]}",
    "{\"app\": \"a\", \"outputs\": \"*\", \"tasks\": [{\"id\": \"t\"}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"p\", \"outputs\": [\"*.txt\"]}, "
    "{\"id\": \"c\", \"inputs\": [\"p/x.bin\"], \"after\": [\"p\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"p\", \"outputs\": [\"x\"]}, "
    "{\"id\": \"c\", \"inputs\": [\"p/x\"]}]}",
  };
  for (size_t i = 0; i < sizeof jobs / sizeof *jobs; i++) {
    json_t *r = NULL;
    assert_int_equal(harness_http(f->srv.url, "POST", "/v1/jobs", ADMIN, jobs[i],
                                  strlen(jobs[i]), &r, NULL, NULL), 400);
    fprintf(stderr, "jobs: bad outputs %zu: 400 %s\n", i, message(r));
    json_decref(r);
  }
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/jobs", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  assert_int_equal(json_array_size(json_object_get(r, "jobs")), 0);
  json_decref(r);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_uploads, server_fixture_setup, server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_bad_job_files, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
