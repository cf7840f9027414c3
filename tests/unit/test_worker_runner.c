/* test_worker_runner.c — the worker's task runner on real programs (output
 * capture and cap, exit statuses, signals, missing programs, environment,
 * cancellation, lingering children, limits and failure reasons, stdin from a
 * file, the CPU time of the process tree and of a callback), the
 * parents/ID encoding, the verified
 * input cache against a real HTTP server on loopback (and why a source
 * failed it), and base64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/limits.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "worker/cache.h"
#include "worker/callback.h"
#include "worker/fsutil.h"
#include "worker/leases.h"
#include "worker/runner.h"
#include "worker/taskdir.h"

static char *make_tmpdir(void) {
  char tmpl[] = "/tmp/cairn-test-runner-XXXXXX";
  char *d = mkdtemp(tmpl);
  assert_non_null(d);
  return strdup(d);
}

static void remove_dir(char *dir) {
  cairn_error err;
  assert_int_equal(cairn__remove_tree(dir, &err), CAIRN_OK);
  free(dir);
}

/* Runs path with args in a fresh directory; fills res. */
static void run_in_tmp(const char *path, const char *const *args, size_t nargs, size_t cap,
                       const char *const *env, cairn__run_result *res, char **dir_out) {
  cairn_error err = {0};
  char *dir = make_tmpdir();
  cairn__run_spec spec = {.path = path, .args = args, .nargs = nargs, .dir = dir,
                          .env = env, .max_output = cap};
  assert_int_equal(cairn__run(&spec, res, &err), CAIRN_OK);
  if (dir_out)
    *dir_out = dir;
  else
    remove_dir(dir);
}

static void test_echo_output_captured(void **state) {
  (void)state;
  cairn__run_result res;
  const char *args[] = {"hello", "cairn world"};
  run_in_tmp("/bin/echo", args, 2, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_EXITED);
  assert_int_equal(res.exit_status, 0);
  assert_int_equal(res.output.len, strlen("hello cairn world\n"));
  assert_memory_equal(res.output.data, "hello cairn world\n", res.output.len);
  cairn__buf_free(&res.output);
}

static void test_killed_by_signal_is_128_plus_signal(void **state) {
  (void)state;
  cairn__run_result res;
  const char *args[] = {"-c", "echo before; kill -9 $$"};
  run_in_tmp("/bin/sh", args, 2, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_EXITED);
  assert_int_equal(res.exit_status, 137);
  assert_int_equal(res.output.len, 7);
  assert_memory_equal(res.output.data, "before\n", 7);
  cairn__buf_free(&res.output);
}

static void test_false_is_nonzero(void **state) {
  (void)state;
  cairn__run_result res;
  run_in_tmp("/bin/false", NULL, 0, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_EXITED);
  assert_int_equal(res.exit_status, 1);
  assert_int_equal(res.output.len, 0);
  cairn__buf_free(&res.output);
  const char *args[] = {"-c", "exit 42"};
  run_in_tmp("/bin/sh", args, 2, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.exit_status, 42);
  cairn__buf_free(&res.output);
}

static void test_output_over_cap_kills_app(void **state) {
  (void)state;
  cairn__run_result res;
  /* writes forever: only the cap can end it */
  const char *args[] = {"-c", "while :; do echo 0123456789abcdef; done"};
  run_in_tmp("/bin/sh", args, 2, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_OVERFLOW);
  assert_int_equal(res.exit_status, 137);
  assert_int_equal(res.output.len, 1 << 20);
  assert_non_null(strstr(res.note, "output exceeded 1048576 bytes"));
  cairn__buf_free(&res.output);
  /* exactly at the cap is fine */
  const char *exact[] = {"-c", "head -c 1000 /dev/zero"};
  run_in_tmp("/bin/sh", exact, 2, 1000, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_EXITED);
  assert_int_equal(res.exit_status, 0);
  assert_int_equal(res.output.len, 1000);
  cairn__buf_free(&res.output);
  const char *over[] = {"-c", "head -c 1001 /dev/zero"};
  run_in_tmp("/bin/sh", over, 2, 1000, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_OVERFLOW);
  assert_int_not_equal(res.exit_status, 0);
  cairn__buf_free(&res.output);
}

static void test_missing_program_is_app_failure(void **state) {
  (void)state;
  cairn__run_result res;
  const char *args[] = {"x"};
  run_in_tmp("/nonexistent/cairn-app", args, 1, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_NOEXEC);
  assert_int_equal(res.exit_status, 127);
  assert_non_null(strstr(res.note, "cannot execute /nonexistent/cairn-app"));
  assert_non_null(strstr(res.note, "No such file"));
  cairn__buf_free(&res.output);
  /* a directory is not a program either */
  run_in_tmp("/tmp", NULL, 0, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.outcome, CAIRN__RUN_NOEXEC);
  assert_int_equal(res.exit_status, 127);
  cairn__buf_free(&res.output);
}

static void test_environment_cwd_stdin_stderr(void **state) {
  (void)state;
  cairn__run_result res;
  char *dir = NULL;
  const char *env[] = {"CAIRN_JOB=3", "CAIRN_TASK_ID=0,1", "CAIRN_INDEX=13", NULL};
  const char *args[] = {"-c", "echo \"$CAIRN_JOB|$CAIRN_TASK_ID|$CAIRN_INDEX|"
                              "${CAIRN_WORKER_ONLY-unset}\"; pwd; cat; "
                              "echo oops >&2; printf '%s' \"$1\"", "sh", "a b"};
  setenv("CAIRN_INDEX", "999", 1);  /* the task's value, not the worker's */
  setenv("CAIRN_WORKER_ONLY", "leaked", 1); /* nothing of the worker's reaches it */
  run_in_tmp("/bin/sh", args, 4, 1 << 20, env, &res, &dir);
  unsetenv("CAIRN_INDEX");
  unsetenv("CAIRN_WORKER_ONLY");
  char *real = realpath(dir, NULL);
  char expect[600];
  snprintf(expect, sizeof expect, "3|0,1|13|unset\n%s\na b", real);
  assert_int_equal(res.exit_status, 0);
  assert_string_equal(res.output.data, expect);
  cairn__buf errtext;
  char *errpath = cairn__path_join(dir, "stderr");
  cairn_error err;
  assert_int_equal(cairn__read_file(errpath, 1024, &errtext, &err), CAIRN_OK);
  assert_string_equal(errtext.data, "oops\n");
  cairn__buf_free(&errtext);
  cairn__buf_free(&res.output);
  free(errpath);
  free(real);
  remove_dir(dir);
}

static void test_lingering_child_does_not_block(void **state) {
  (void)state;
  cairn__run_result res;
  const char *args[] = {"-c", "sleep 30 & echo started"};
  long long t0 = cairn__now_ms();
  run_in_tmp("/bin/sh", args, 2, 1 << 20, NULL, &res, NULL);
  assert_true(cairn__now_ms() - t0 < 10000);
  assert_int_equal(res.exit_status, 0);
  assert_string_equal(res.output.data, "started\n");
  cairn__buf_free(&res.output);
}

typedef struct lose_later {
  atomic_int *flag;
  long ms;
} lose_later;

static void *set_after(void *arg) {
  lose_later *l = arg;
  usleep((useconds_t)l->ms * 1000);
  atomic_store(l->flag, 1);
  return NULL;
}

static void test_cancel_kills_app(void **state) {
  (void)state;
  cairn__stopper stopper;
  atomic_int lost;
  atomic_init(&lost, 0);
  assert_int_equal(cairn__stopper_init(&stopper), 0);
  cairn__cancel cancel = {&stopper, &lost, NULL};
  char *dir = make_tmpdir();
  const char *args[] = {"30"};
  cairn__run_spec spec = {.path = "/bin/sleep", .args = args, .nargs = 1, .dir = dir,
                          .max_output = 1024, .cancel = &cancel};
  cairn__run_result res;
  cairn_error err;
  pthread_t th;
  lose_later l = {&lost, 200};
  pthread_create(&th, NULL, set_after, &l);
  long long t0 = cairn__now_ms();
  assert_int_equal(cairn__run(&spec, &res, &err), CAIRN_OK);
  pthread_join(th, NULL);
  assert_true(cairn__now_ms() - t0 < 5000);
  assert_int_equal(res.outcome, CAIRN__RUN_CANCELLED);
  cairn__buf_free(&res.output);
  /* the stop pipe ends a run at once too */
  atomic_store(&lost, 0);
  cairn__stopper_stop(&stopper);
  t0 = cairn__now_ms();
  assert_int_equal(cairn__run(&spec, &res, &err), CAIRN_OK);
  assert_true(cairn__now_ms() - t0 < 5000);
  assert_int_equal(res.outcome, CAIRN__RUN_CANCELLED);
  cairn__buf_free(&res.output);
  cairn__stopper_destroy(&stopper);
  remove_dir(dir);
}

static void check_encoding(const char *id, const char *want) {
  char *got = NULL;
  cairn_error err;
  assert_int_equal(cairn__encode_id(id, &got, &err), CAIRN_OK);
  assert_string_equal(got, want);
  free(got);
}

static void test_parent_id_encoding(void **state) {
  (void)state;
  check_encoding("0,1", "0,1");
  check_encoding("cell-3_4.v2+x=y", "cell-3_4.v2+x=y");
  check_encoding("a/b", "a%2Fb");
  check_encoding(".", "%2E");
  check_encoding("..", "%2E%2E");
  check_encoding("...", "...");
  check_encoding(".hidden", ".hidden");
  check_encoding("x y%", "x%20y%25");
  check_encoding("\xc3\xa9", "%C3%A9");
  check_encoding("a\nb", "a%0Ab");
  char *got = NULL;
  cairn_error err;
  assert_int_equal(cairn__encode_id("", &got, &err), CAIRN_EINVAL);
  assert_null(got);
  assert_true(cairn__input_name_ok("genome.fa"));
  assert_false(cairn__input_name_ok("../etc/passwd"));
  assert_false(cairn__input_name_ok(".."));
  assert_false(cairn__input_name_ok(""));
}

/* A loopback HTTP file server that answers every GET with the same bytes. */
typedef struct file_server {
  struct MHD_Daemon *d;
  const char *body;
  size_t len;
  atomic_int requests;
  char base[64];
} file_server;

static enum MHD_Result serve(void *cls, struct MHD_Connection *c, const char *url,
                             const char *method, const char *version, const char *upload,
                             size_t *upload_len, void **con_cls) {
  file_server *fs = cls;
  atomic_fetch_add(&fs->requests, 1);
  struct MHD_Response *r =
    MHD_create_response_from_buffer(fs->len, (void *)fs->body, MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret = MHD_queue_response(c, strcmp(url, "/missing") == 0 ? 404 : 200, r);
  MHD_destroy_response(r);
  return ret;
}

static void file_server_start(file_server *fs, const char *body) {
  fs->body = body;
  fs->len = strlen(body);
  atomic_init(&fs->requests, 0);
  fs->d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, serve, fs,
                           MHD_OPTION_END);
  assert_non_null(fs->d);
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(fs->d, MHD_DAEMON_INFO_BIND_PORT);
  snprintf(fs->base, sizeof fs->base, "http://127.0.0.1:%u", (unsigned)info->port);
}

/* 1 when dir has no entries at all (no temp files either). */
static int dir_is_empty(const char *dir) {
  char cmd[600];
  snprintf(cmd, sizeof cmd, "test -z \"$(ls -A '%s')\"", dir);
  return system(cmd) == 0;
}

static void test_cache_rejects_wrong_sha256(void **state) {
  (void)state;
  file_server fs;
  cairn__cache cache;
  cairn_error err = {0};
  char good[65], other[65], *path = NULL;
  long status = 0;
  int reason = 0;
  const char *content = "the genome of a very small organism\n";
  file_server_start(&fs, content);
  cairn__sha256_hex(content, strlen(content), good);
  cairn__sha256_hex("something else", 14, other);
  char *root = make_tmpdir();
  char *dir = cairn__path_join(root, "cache");
  assert_int_equal(cairn__cache_init(&cache, dir, &err), CAIRN_OK);
  cairn__http *h = cairn__http_create(fs.base);

  /* The server's bytes do not hash to what the task says: nothing is kept,
   * and the source is to blame ("digest"). */
  assert_int_equal(cairn__cache_fetch(&cache, h, other, -1, "/v1/files/x", &path, &status,
                                      &reason, &err),
                   CAIRN_EINVAL);
  assert_null(path);
  assert_non_null(strstr(err.text, "sha256 mismatch"));
  assert_int_equal(reason, CAIRN_FAIL_DIGEST);
  assert_true(dir_is_empty(dir));
  /* Right hash, wrong announced size: rejected as well ("size"). */
  assert_int_equal(cairn__cache_fetch(&cache, h, good, 3, "/v1/files/x", &path, &status, &reason,
                                      &err),
                   CAIRN_ETOOBIG);
  assert_int_equal(reason, CAIRN_FAIL_SIZE);
  assert_true(dir_is_empty(dir));
  /* Fewer bytes than the announced size: "size", whether their hash is
   * right or not. */
  long long more = (long long)strlen(content) + 10;
  assert_int_equal(cairn__cache_fetch(&cache, h, good, more, "/v1/files/x", &path, &status,
                                      &reason, &err),
                   CAIRN_EINVAL);
  assert_int_equal(reason, CAIRN_FAIL_SIZE);
  assert_int_equal(cairn__cache_fetch(&cache, h, other, more, "/v1/files/x", &path, &status,
                                      &reason, &err),
                   CAIRN_EINVAL);
  assert_int_equal(reason, CAIRN_FAIL_SIZE);
  assert_true(dir_is_empty(dir));
  /* 404 is reported as such ("status"). */
  assert_int_equal(cairn__cache_fetch(&cache, h, good, -1, "/missing", &path, &status, &reason,
                                      &err),
                   CAIRN_ENOTFOUND);
  assert_int_equal(status, 404);
  assert_int_equal(reason, CAIRN_FAIL_STATUS);

  /* Right hash: stored read-only under its digest, then reused without a request. */
  long long size = (long long)strlen(content);
  assert_int_equal(cairn__cache_fetch(&cache, h, good, size, "/v1/files/x", &path, &status,
                                      &reason, &err),
                   CAIRN_OK);
  assert_int_equal(reason, -1);
  char *want = cairn__path_join(dir, good);
  assert_string_equal(path, want);
  struct stat st;
  assert_int_equal(stat(path, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0444);
  free(path);
  int before = atomic_load(&fs.requests);
  assert_int_equal(cairn__cache_fetch(&cache, h, good, size, "/v1/files/x", &path, &status, NULL,
                                      &err),
                   CAIRN_OK);
  assert_int_equal(atomic_load(&fs.requests), before);
  free(path);

  /* A cached file whose size does not match is fetched again. */
  chmod(want, 0644);
  FILE *f = fopen(want, "w");
  fputs("short", f);
  fclose(f);
  assert_int_equal(cairn__cache_fetch(&cache, h, good, size, "/v1/files/x", &path, &status, NULL,
                                      &err),
                   CAIRN_OK);
  assert_int_equal(atomic_load(&fs.requests), before + 1);
  assert_int_equal(cairn__file_size(path), size);
  free(path);

  /* No server at all: a transient failure ("unreachable"). */
  cairn__http *dead = cairn__http_create("http://127.0.0.1:1");
  assert_int_equal(cairn__cache_fetch(&cache, dead, other, -1, "/v1/files/x", &path, &status,
                                      &reason, &err),
                   CAIRN_EIO);
  assert_int_equal(status, 0);
  assert_int_equal(reason, CAIRN_FAIL_UNREACHABLE);
  cairn__http_delete(dead);

  free(want);
  cairn__http_delete(h);
  cairn__cache_destroy(&cache);
  MHD_stop_daemon(fs.d);
  free(dir);
  remove_dir(root);
}

static void b64_check(const char *plain, const char *enc) {
  char out[128];
  unsigned char back[128];
  size_t n = 0;
  assert_int_equal(cairn__base64_encoded_len(strlen(plain)), strlen(enc));
  assert_int_equal(cairn__base64_encode(plain, strlen(plain), out), strlen(enc));
  assert_string_equal(out, enc);
  assert_int_equal(cairn__base64_decode(enc, strlen(enc), back, sizeof back, &n), 0);
  assert_int_equal(n, strlen(plain));
  assert_memory_equal(back, plain, n);
}

static void test_base64_round_trip(void **state) {
  (void)state;
  /* RFC 4648 §10 vectors */
  b64_check("", "");
  b64_check("f", "Zg==");
  b64_check("fo", "Zm8=");
  b64_check("foo", "Zm9v");
  b64_check("foob", "Zm9vYg==");
  b64_check("fooba", "Zm9vYmE=");
  b64_check("foobar", "Zm9vYmFy");
  /* every length up to 300 of pseudo-random bytes, including NUL and 0xFF */
  unsigned char data[300], back[300];
  char enc[401];
  uint32_t x = 12345;
  for (size_t i = 0; i < sizeof data; i++) {
    x = x * 1103515245u + 12345u;
    data[i] = (unsigned char)(x >> 16);
  }
  for (size_t n = 0; n <= sizeof data; n++) {
    size_t len = cairn__base64_encode(data, n, enc), got = 0;
    assert_int_equal(len, cairn__base64_encoded_len(n));
    assert_true(cairn__base64_decoded_max(len) >= n);
    assert_int_equal(cairn__base64_decode(enc, len, back, sizeof back, &got), 0);
    assert_int_equal(got, n);
    assert_memory_equal(back, data, n);
  }
  /* strict decoding */
  static const char *bad[] = {"Zg=", "Z===", "Zh==", "Zm9=", "Zg==Zg==", "Zm 9v", "Zm9v\n",
                              "Zm9-", "=Zm9", "Zm=v",
                              /* unpadded, over-padded, URL-safe alphabet */
                              "Zg", "Zm9", "Zg===", "Zm9v====", "Zm9_", "_-8A",
                              /* bytes >= 0x80, which libsodium 1.0.18 reads as '/' */
                              "\x80" "AAA", "Zm9\xff", "\xc3\xa9" "AA", "Zm9vYmF\xc3"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    size_t got = 0;
    assert_int_equal(cairn__base64_decode(bad[i], strlen(bad[i]), back, sizeof back, &got), -1);
  }
  size_t got = 0;
  /* a NUL inside the given length is not skipped */
  assert_int_equal(cairn__base64_decode("Zm\0v", 4, back, sizeof back, &got), -1);
  assert_int_equal(cairn__base64_decode("Zm9vYmFy", 8, back, 5, &got), -1);
  assert_int_equal(cairn__base64_decode("Zm9vYg==", 8, back, 3, &got), -1);
  assert_int_equal(cairn__base64_decode("Zm9vYg==", 8, back, 4, &got), 0);
  assert_int_equal(got, 4);
}

/* Runs /bin/sh -c script under limits in a fresh directory; fills res. */
static void run_limited(const char *script, const int64_t limits[CAIRN_LIMIT_COUNT],
                        const char *stdin_path, cairn__run_result *res) {
  cairn_error err = {0};
  char *dir = make_tmpdir();
  const char *args[] = {"-c", script};
  cairn__run_spec spec = {.path = "/bin/sh", .args = args, .nargs = 2, .dir = dir,
                          .max_output = 4096, .limits = limits, .stdin_path = stdin_path,
                          .cgroup_name = "cairn-test-runner"};
  assert_int_equal(cairn__run(&spec, res, &err), CAIRN_OK);
  remove_dir(dir);
}

/* Each limit stops the whole group with its reason and a note of what was
 * reached; other failures are "signal N" or "exit N"; stdin from a file. */
static void test_limits_and_reasons(void **state) {
  (void)state;
  cairn__run_result res;
  int64_t lim[CAIRN_LIMIT_COUNT] = {0};
  lim[CAIRN_LIMIT_WALL] = 1; /* a child of the shell hangs too: the group goes */
  run_limited("sleep 30 & sleep 30", lim, NULL, &res);
  assert_int_equal(res.outcome, CAIRN__RUN_LIMIT);
  assert_string_equal(res.reason, "wall");
  assert_true(res.seconds >= 1.0 && res.seconds < 5.0);
  assert_non_null(strstr(res.note, "wall limit of 1 s"));
  cairn__buf_free(&res.output);

  memset(lim, 0, sizeof lim);
  lim[CAIRN_LIMIT_CPU] = 1;
  lim[CAIRN_LIMIT_WALL] = 20;
  run_limited("while :; do :; done", lim, NULL, &res);
  assert_string_equal(res.reason, "cpu");
  assert_true(res.cpu_seconds >= 0.5 && res.seconds < 15.0);
  cairn__buf_free(&res.output);

  memset(lim, 0, sizeof lim);
  lim[CAIRN_LIMIT_DISK] = 1;
  lim[CAIRN_LIMIT_WALL] = 20;
  run_limited("head -c 4194304 /dev/zero > junk; sleep 30", lim, NULL, &res);
  assert_string_equal(res.reason, "disk");
  assert_true(res.seconds < 15.0);
  cairn__buf_free(&res.output);

  memset(lim, 0, sizeof lim);
  run_limited("kill -TERM $$", lim, NULL, &res);
  assert_string_equal(res.reason, "signal 15");
  cairn__buf_free(&res.output);
  run_limited("exit 3", lim, NULL, &res);
  assert_string_equal(res.reason, "exit 3");
  cairn__buf_free(&res.output);
  run_limited("exit 0", lim, NULL, &res);
  assert_string_equal(res.reason, "");
  cairn__buf_free(&res.output);

  char *dir = make_tmpdir(), path[512];
  snprintf(path, sizeof path, "%s/in", dir);
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs("from a file\n", f);
  fclose(f);
  run_limited("cat", lim, path, &res);
  assert_int_equal(res.exit_status, 0);
  assert_int_equal(res.output.len, 12);
  assert_memory_equal(res.output.data, "from a file\n", 12);
  cairn__buf_free(&res.output);
  remove_dir(dir);
}

/* The CPU time a run claims counts the descendants the app waited for: a
 * shell that runs two burners one after the other (0.2 s and 0.1 s of CPU
 * each) claims at least their sum, though the shell itself used almost
 * none. */
static void test_cpu_seconds_of_process_tree(void **state) {
  (void)state;
  char bin[4096], script[9000];
  harness_bin(bin, sizeof bin, "cairn-app-limits");
  snprintf(script, sizeof script, "\"%s\" burn 0.2 && \"%s\" burn 0.1", bin, bin);
  const char *args[] = {"-c", script};
  cairn__run_result res;
  run_in_tmp("/bin/sh", args, 2, 1 << 20, NULL, &res, NULL);
  assert_int_equal(res.exit_status, 0);
  assert_true(res.cpu_seconds >= 0.3);
  cairn__buf_free(&res.output);
}

/* Spins until this thread has used 0.1 s of CPU. */
static int spin(const cairn_task *task, cairn_task_output *out, void *ud) {
  (void)task;
  (void)ud;
  struct timespec t0, t;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
  volatile unsigned long x = 0;
  do {
    for (int i = 0; i < 10000; i++)
      x++;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  } while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < 0.1);
  return cairn_task_output_printf(out, "spun\n") == 0 ? 0 : 1;
}

/* A callback app claims the CPU time of the thread it ran on. */
static void test_cpu_seconds_of_callback(void **state) {
  (void)state;
  cairn__task t;
  cairn__taskdir d;
  memset(&t, 0, sizeof t);
  memset(&d, 0, sizeof d);
  cairn__run_result res;
  cairn_error err = {0};
  assert_int_equal(cairn__callback_run(spin, NULL, &t, &d, NULL, 1024, NULL, 0, &res, &err), CAIRN_OK);
  assert_int_equal(res.exit_status, 0);
  assert_true(res.cpu_seconds >= 0.1);
  cairn__buf_free(&res.output);
}

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  cairn__http_global_init();
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_echo_output_captured),
    cmocka_unit_test(test_killed_by_signal_is_128_plus_signal),
    cmocka_unit_test(test_false_is_nonzero),
    cmocka_unit_test(test_output_over_cap_kills_app),
    cmocka_unit_test(test_missing_program_is_app_failure),
    cmocka_unit_test(test_environment_cwd_stdin_stderr),
    cmocka_unit_test(test_lingering_child_does_not_block),
    cmocka_unit_test(test_cancel_kills_app),
    cmocka_unit_test(test_limits_and_reasons),
    cmocka_unit_test(test_parent_id_encoding),
    cmocka_unit_test(test_cache_rejects_wrong_sha256),
    cmocka_unit_test(test_base64_round_trip),
    cmocka_unit_test(test_cpu_seconds_of_process_tree),
    cmocka_unit_test(test_cpu_seconds_of_callback),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
