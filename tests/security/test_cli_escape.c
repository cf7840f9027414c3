/* test_cli_escape.c — no terminal control character from a master reaches
 * the operator's terminal through the cairn command. A hostile master on
 * 127.0.0.1 (the real one refuses such names at registration) answers with
 * a volunteer whose name and cluster hold ESC sequences, a job, a task id
 * and an output holding more, and an error message too; the real `cairn
 * volunteers`, `cairn status`, `cairn results` print them escaped as \xNN.
 * The escaping helper (common/termsafe.h) is checked on its own too. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <microhttpd.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/termsafe.h"
#include "tests/support/harness.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static void test_helper(void **state) {
  (void)state;
  char out[64], small[12];
  assert_string_equal(cairn__termsafe("a\x1b[2Jb", out, sizeof out), "a\\x1b[2Jb");
  assert_string_equal(cairn__termsafe("\x7f\\\t", out, sizeof out), "\\x7f\\\\\\x09");
  /* C1 controls, encoded (U+009B) or raw; valid UTF-8 above them stays. */
  assert_string_equal(cairn__termsafe("\xc2\x9b|\x9b|\xc3\xa9", out, sizeof out),
                      "\\xc2\\x9b|\\x9b|\xc3\xa9");
  assert_string_equal(cairn__termsafe(NULL, out, sizeof out), "");
  assert_string_equal(cairn__termsafe("0123456789abcdef", small, sizeof small), "01234567...");
  assert_string_equal(cairn__termsafe("\x1b\x1b\x1b", small, sizeof small), "\\x1b\\x1b...");
}

/* 1 when text holds a control byte other than the newlines and tabs that
 * separate lines and fields. */
static int has_control(const char *text) {
  const unsigned char *p = (const unsigned char *)text;
  for (size_t i = 0; p[i]; i++)
    if ((p[i] < 0x20 && p[i] != '\n' && p[i] != '\t') || p[i] == 0x7f ||
        (p[i] >= 0x80 && p[i] <= 0x9f && (i == 0 || p[i - 1] == 0xc2)))
      return 1;
  return 0;
}

/* A hostile master: every string it returns carries ESC sequences. */
#define J_EVIL "\\u001b]0;owned\\u0007\\u001b[2J\\u001b[31m\\r\\u009b1m"
static enum MHD_Result hostile(void *cls, struct MHD_Connection *c, const char *url,
                               const char *method, const char *version, const char *upload,
                               size_t *upload_size, void **ctx) {
  const char *body = "{\"error\": {\"code\": \"x\", \"message\": \"denied" J_EVIL "\"}}";
  unsigned status = 200;
  if (strcmp(url, "/v1/volunteers") == 0)
    body = "{\"volunteers\": [{\"id\": 1, \"name\": \"vol" J_EVIL "\", \"cluster\": \"c" J_EVIL
           "\", \"row\": 1, \"allocations\": 0, \"valid\": 0, \"invalid\": 0}]}";
  else if (strcmp(url, "/v1/jobs") == 0)
    body = "{\"jobs\": [{\"id\": 1, \"name\": \"job" J_EVIL "\", \"state\": \"s" J_EVIL
           "\", \"tasks\": 1, \"counts\": {}}]}";
  else if (strcmp(url, "/v1/jobs/1/tasks") == 0)
    body = "{\"tasks\": [{\"id\": \"t" J_EVIL "\", \"state\": \"done\", \"volunteer\": 1,"
           " \"index\": 1, \"exit_status\": 0, \"output\": \"out" J_EVIL "\\n\"}]}";
  else
    status = 400;
  struct MHD_Response *r =
    MHD_create_response_from_buffer(strlen(body), (void *)body, MHD_RESPMEM_PERSISTENT);
  enum MHD_Result ret = MHD_queue_response(c, status, r);
  MHD_destroy_response(r);
  return ret;
}

/* Runs `cairn cmd [arg] --server url --token ADMIN`; returns its stdout
 * (and its stderr, where errors go), its exit status in *rc. */
static char *cairn(const char *url, const char *cmd, const char *arg, int *rc) {
  char bin[4096], *out = NULL;
  harness_bin(bin, sizeof bin, "cairn");
  const char *argv[] = {"/bin/sh", "-c", "\"$0\" \"$@\" 2>&1", bin, cmd, "--server", url,
                        "--token", ADMIN, arg, NULL};
  *rc = harness_run(argv, &out);
  assert_non_null(out);
  return out;
}

static void test_master_strings_escaped(void **state) {
  (void)state;
  struct sockaddr_in a = {.sin_family = AF_INET};
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct MHD_Daemon *d = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD, 0, NULL, NULL, hostile,
                                          NULL, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&a,
                                          MHD_OPTION_END);
  assert_non_null(d);
  char url[64];
  snprintf(url, sizeof url, "http://127.0.0.1:%u",
           MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT)->port);
  const char *cmds[][2] = {{"volunteers", NULL}, {"status", NULL}, {"results", "1"},
                           {"status", "7"}};
  for (size_t i = 0; i < 4; i++) {
    int rc = 0;
    char *out = cairn(url, cmds[i][0], cmds[i][1], &rc);
    printf("`cairn %s%s%s` (exit %d) printed %s:\n%s", cmds[i][0], cmds[i][1] ? " " : "",
           cmds[i][1] ? cmds[i][1] : "", rc, has_control(out) ? "CONTROL BYTES" : "no control byte",
           out);
    assert_false(has_control(out));
    assert_non_null(strstr(out, "\\x1b]0;owned\\x07"));
    free(out);
  }
  MHD_stop_daemon(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_helper),
    cmocka_unit_test(test_master_strings_escaped),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
