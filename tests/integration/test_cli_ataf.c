/* test_cli_ataf.c — runs the real `cairn ataf` binary ($CAIRN_BIN_DIR/cairn)
 * and checks its stdout, stderr and exit status. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct run_result {
  int status;
  char out[4096];
  char errtext[4096];
} run_result;

/* Drains both pipes until they close (poll, so neither can fill up). */
static void drain(int fo, int fe, run_result *r) {
  size_t no = 0, ne = 0;
  struct pollfd p[2] = {{fo, POLLIN, 0}, {fe, POLLIN, 0}};
  int open_fds = 2;
  while (open_fds > 0) {
    assert_true(poll(p, 2, 10000) > 0);
    for (int k = 0; k < 2; k++) {
      if (p[k].fd < 0 || p[k].revents == 0)
        continue;
      char *buf = k == 0 ? r->out : r->errtext;
      size_t *len = k == 0 ? &no : &ne;
      ssize_t got = read(p[k].fd, buf + *len, sizeof r->out - 1 - *len);
      if (got <= 0) {
        close(p[k].fd);
        p[k].fd = -1;
        open_fds--;
      } else {
        *len += (size_t)got;
      }
    }
  }
  r->out[no] = '\0';
  r->errtext[ne] = '\0';
}

static void run_cairn(run_result *r, const char *a1, const char *a2, const char *a3,
                      const char *a4) {
  const char *dir = getenv("CAIRN_BIN_DIR");
  assert_non_null(dir);
  char path[4096];
  snprintf(path, sizeof path, "%s/cairn", dir);
  char *argv[] = {path, "ataf", (char *)a1, (char *)a2, (char *)a3, (char *)a4, NULL};
  int po[2], pe[2];
  assert_int_equal(pipe(po), 0);
  assert_int_equal(pipe(pe), 0);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, po[1], 1);
  posix_spawn_file_actions_adddup2(&fa, pe[1], 2);
  posix_spawn_file_actions_addclose(&fa, po[0]);
  posix_spawn_file_actions_addclose(&fa, pe[0]);
  pid_t pid;
  assert_int_equal(posix_spawn(&pid, path, &fa, NULL, argv, environ), 0);
  posix_spawn_file_actions_destroy(&fa);
  close(po[1]);
  close(pe[1]);
  drain(po[0], pe[0], r);
  int ws;
  assert_int_equal(waitpid(pid, &ws, 0), pid);
  assert_true(WIFEXITED(ws));
  r->status = WEXITSTATUS(ws);
}

static void expect_ok(const char *a1, const char *a2, const char *a3, const char *want) {
  run_result r;
  run_cairn(&r, a1, a2, a3, NULL);
  assert_int_equal(r.status, 0);
  assert_string_equal(r.out, want);
  assert_string_equal(r.errtext, "");
}

/* Exit 1, nothing on stdout, exactly one line on stderr containing want. */
static void expect_fail(const char *a1, const char *a2, const char *a3, const char *a4,
                        const char *want) {
  run_result r;
  run_cairn(&r, a1, a2, a3, a4);
  assert_int_equal(r.status, 1);
  assert_string_equal(r.out, "");
  assert_non_null(strstr(r.errtext, "cairn: "));
  assert_non_null(strstr(r.errtext, want));
  char *nl = strchr(r.errtext, '\n');
  assert_non_null(nl);
  assert_int_equal(nl[1], '\0');
}

static void test_cli_forward(void **state) {
  (void)state;
  expect_ok("phi1", "14", "2", "24576\n");
  expect_ok("phi3", "29", "5", "4224\n");
  expect_ok("phisharp", "28", "3", "1424\n");
  expect_ok("phisharp", "5368709119", "1", "9223372032559808512\n");
  expect_ok("phi1", "1", "4611686018427387904", "9223372036854775807\n");
}

static void test_cli_invert(void **state) {
  (void)state;
  expect_ok("phi3", "--invert", "2176", "29 3\n");
  expect_ok("phisharp", "--invert", "2480", "29 5\n");
  expect_ok("phi1", "--invert", "9223372036854775807", "1 4611686018427387904\n");
  expect_ok("phisharp", "--invert", "4611686018427387904", "4611686018427387904 1\n");
}

static void test_cli_errors(void **state) {
  (void)state;
  expect_fail("phisharp", "5368709120", "1", NULL, "exceeds the 63-bit index range");
  expect_fail("phi1", "64", "1", NULL, "exceeds the 63-bit index range");
  expect_fail("phi2", "1", "1", NULL, "unknown family \"phi2\"");
  expect_fail("phi1", "0", "1", NULL, "start at 1");
  expect_fail("phi1", "1", "-3", NULL, "allocation \"-3\"");
  expect_fail("phi3", "1x", "1", NULL, "row \"1x\"");
  expect_fail("phi3", "18446744073709551616", "1", NULL, "row \"18446744073709551616\"");
  expect_fail("phisharp", "--invert", "0", NULL, "outside 1..2^63-1");
  expect_fail("phisharp", "--invert", "9223372036854775808", NULL, "outside 1..2^63-1");
  expect_fail("phisharp", "1", "2", "3", "expected FAMILY X Y");
  expect_fail("phisharp", "1", NULL, NULL, "expected FAMILY X Y");
}

static void test_cli_help(void **state) {
  (void)state;
  run_result r;
  run_cairn(&r, "--help", NULL, NULL, NULL);
  assert_int_equal(r.status, 0);
  assert_non_null(strstr(r.out, "usage: cairn ataf FAMILY X Y"));
  assert_non_null(strstr(r.out, "phi1 | phi3 | phisharp"));
  assert_string_equal(r.errtext, "");
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_cli_forward),
    cmocka_unit_test(test_cli_invert),
    cmocka_unit_test(test_cli_errors),
    cmocka_unit_test(test_cli_help),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
