/* test_worker_projfile.c — the projects of cairn-worker's --project flags
 * and --config files (worker/projfile.h): URL and URL=SHARE (0 a backup
 * project, the default 100 left to the worker), a file's project lines
 * with their settings, comments, blank lines and CRLF ends, keys and codes
 * read from the first line of their files, and the refusals, each naming
 * the file, the line and the problem and keeping nothing of that file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "tests/support/harness.h"
#include "worker/projfile.h"

static char dir[4096];

static const char *file(const char *name, const char *text) {
  static char path[4][4200];
  static int next;
  char *p = path[next++ % 4];
  snprintf(p, sizeof path[0], "%s/%s", dir, name);
  assert_int_equal(harness_write_file(p, text), 0);
  return p;
}

static void test_flags(void **state) {
  (void)state;
  cairn__projlist l = {0};
  cairn_error err = {0};
  assert_int_equal(cairn__projlist_flag(&l, "http://a.example:1", &err), CAIRN_OK);
  assert_int_equal(cairn__projlist_flag(&l, "http://b.example:2=3", &err), CAIRN_OK);
  assert_int_equal(cairn__projlist_flag(&l, "http://c.example:3=0", &err), CAIRN_OK);
  assert_int_equal(l.n, 3);
  assert_string_equal(l.v[0].server_url, "http://a.example:1");
  assert_int_equal(l.v[0].share, 0); /* the worker's default, 100 */
  assert_int_equal(l.v[0].backup, 0);
  assert_string_equal(l.v[1].server_url, "http://b.example:2");
  assert_int_equal(l.v[1].share, 3);
  assert_int_equal(l.v[2].backup, 1);
  const char *bad[] = {"http://d.example:4=x", "http://d.example:4=", "http://d.example:4=-1",
                       "http://d.example:4=1000001", "http://d.example:4=+2"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    assert_int_equal(cairn__projlist_flag(&l, bad[i], &err), CAIRN_EINVAL);
    assert_non_null(strstr(err.text, "the share must be from 0 to 1000000"));
  }
  assert_int_equal(l.n, 3);
  for (int i = 3; i < CAIRN__MAX_PROJECTS; i++)
    assert_int_equal(cairn__projlist_flag(&l, "http://e.example:5", &err), CAIRN_OK);
  assert_int_equal(cairn__projlist_flag(&l, "http://f.example:6", &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "at most 16 projects"));
  cairn__projlist_free(&l);
}

static void test_file(void **state) {
  (void)state;
  cairn__projlist l = {0};
  cairn_error err = {0};
  const char *key = file("account.key", "0123456789abcdef0123456789abcdef"
                                        "0123456789abcdef0123456789abcdef  \n");
  const char *code = file("invite", "k3J9-code\r\nsecond line\n");
  char text[2048];
  snprintf(text, sizeof text,
           "# my projects\n"
           "\n"
           "project https://one.example:8443 share=300 project-key=pk.txt\r\n"
           "   project\thttp://two.example:8080  account-key-file=%s invitation-file=%s\n"
           "project http://three.example:1 share=0 account-key=%s\n"
           "# the end, without a newline",
           key, code, "ab12");
  assert_int_equal(cairn__projlist_flag(&l, "http://zero.example:9", &err), CAIRN_OK);
  assert_int_equal(cairn__projlist_read(&l, file("ok.conf", text), &err), CAIRN_OK);
  assert_int_equal(l.n, 4);
  assert_string_equal(l.v[1].server_url, "https://one.example:8443");
  assert_int_equal(l.v[1].share, 300);
  assert_string_equal(l.v[1].project_key, "pk.txt"); /* a key or a file: the worker loads it */
  assert_null(l.v[1].account_key);
  assert_string_equal(l.v[2].server_url, "http://two.example:8080");
  assert_int_equal(l.v[2].share, 0);
  assert_string_equal(l.v[2].account_key,
                      "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef");
  assert_string_equal(l.v[2].invitation, "k3J9-code");
  assert_int_equal(l.v[3].backup, 1);
  assert_string_equal(l.v[3].account_key, "ab12"); /* checked by the worker */
  cairn__projlist_free(&l);
}

static void test_file_refusals(void **state) {
  (void)state;
  struct {
    const char *text, *says;
  } bad[] = {
    {"project http://a:1 colour=blue\n", "bad.conf:1: unknown setting \"colour\""},
    {"\n\nserver http://a:1\n", "bad.conf:3: a line starts with \"project\", not \"server\""},
    {"project\n", "bad.conf:1: project without a URL"},
    {"project http://a:1 share=2x\n", "bad.conf:1: share must be from 0 to 1000000"},
    {"project http://a:1 share\n", "bad.conf:1: \"share\" is not key=value"},
    {"project http://a:1 share=\n", "bad.conf:1: \"share=\" is not key=value"},
    {"project http://a:1 account-key-file=/nonexistent/key\n",
     "bad.conf:1: account-key-file /nonexistent/key holds no key on its first line"},
    {"# only this\n\n", "bad.conf: no project line"},
    {"", "bad.conf: no project line"},
    {"project http://a:1\nproject http://b:2\nproject http://c:3 x=1\n",
     "bad.conf:3: unknown setting \"x\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    cairn__projlist l = {0};
    cairn_error err = {0};
    assert_int_equal(cairn__projlist_flag(&l, "http://kept:1", &err), CAIRN_OK);
    assert_int_equal(cairn__projlist_read(&l, file("bad.conf", bad[i].text), &err), CAIRN_EINVAL);
    if (!strstr(err.text, bad[i].says))
      fail_msg("case %zu: \"%s\" lacks \"%s\"", i, err.text, bad[i].says);
    assert_int_equal(l.n, 1); /* nothing of the file kept */
    cairn__projlist_free(&l);
  }
  cairn__projlist l = {0};
  cairn_error err = {0};
  char path[4200];
  snprintf(path, sizeof path, "%s/missing.conf", dir);
  assert_int_equal(cairn__projlist_read(&l, path, &err), CAIRN_EIO);
  assert_non_null(strstr(err.text, "missing.conf"));
  char many[4096] = "";
  for (int i = 0; i <= CAIRN__MAX_PROJECTS; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "project http://h:%d\n", i + 1);
  assert_int_equal(cairn__projlist_read(&l, file("many.conf", many), &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "many.conf:17: at most 16 projects"));
  assert_int_equal(l.n, 0);
  cairn__projlist_free(&l);
}

static void test_first_line(void **state) {
  (void)state;
  char out[CAIRN__CODE_MAX + 2], long_line[400];
  assert_int_equal(cairn__first_line(file("c1", "abc \t\nrest\n"), out, sizeof out), 0);
  assert_string_equal(out, "abc");
  assert_int_equal(cairn__first_line(file("c2", "no newline"), out, sizeof out), 0);
  assert_string_equal(out, "no newline");
  assert_int_equal(cairn__first_line(file("c3", "\nsecond\n"), out, sizeof out), -1);
  assert_int_equal(cairn__first_line(file("c4", ""), out, sizeof out), -1);
  memset(long_line, 'x', 300);
  long_line[300] = '\n';
  long_line[301] = '\0';
  assert_int_equal(cairn__first_line(file("c5", long_line), out, sizeof out), -1);
  assert_int_equal(cairn__first_line("/nonexistent/file", out, sizeof out), -1);
}

int main(void) {
  harness_tmpdir(dir, sizeof dir);
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_flags),
    cmocka_unit_test(test_file),
    cmocka_unit_test(test_file_refusals),
    cmocka_unit_test(test_first_line),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
