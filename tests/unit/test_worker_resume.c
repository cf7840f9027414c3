/* test_worker_resume.c — the worker's task records on real files
 * (worker/resume.h): a recorded task kept by the start-up scan with its
 * directory and what its app left there, everything else in DIR/run
 * removed (records of slots the worker no longer has, of apps it no longer
 * runs, whose lease ran out, unreadable ones, stray files); confirm()
 * keeps what the master extended and drops the rest; progress files read
 * strictly, bad values ignored; a callback's progress checked. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "worker/fsutil.h"
#include "worker/resume.h"
#include "worker/task.h"

static char root[64];

static int setup(void **state) {
  (void)state;
  snprintf(root, sizeof root, "/tmp/cairn-test-resume-XXXXXX");
  assert_non_null(mkdtemp(root));
  return 0;
}

static int teardown(void **state) {
  (void)state;
  cairn_error err;
  return cairn__remove_tree(root, &err) == CAIRN_OK ? 0 : -1;
}

static void write_text(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  assert_non_null(f);
  fputs(text, f);
  fclose(f);
}

static int exists(const char *rel) {
  char path[512];
  struct stat st;
  snprintf(path, sizeof path, "%s/%s", root, rel);
  return lstat(path, &st) == 0;
}

/* A record of task index of app for slot, its lease lease_seconds, last
 * renewed age seconds ago; and the slot's directory with a file. */
static void record(size_t slot, long long index, const char *app, int lease_seconds, int age) {
  char path[512], text[1024];
  snprintf(text, sizeof text,
           "{\"version\": 1, \"slot\": %zu, \"lease_seconds\": %d, \"offer\": {\"index\": %lld, "
           "\"lease_seconds\": %d, \"task\": {\"job\": 1, \"id\": \"t%lld\", \"app\": \"%s\", "
           "\"args\": [\"a\"]}}}",
           slot, lease_seconds, index, lease_seconds, index, app);
  snprintf(path, sizeof path, "%s/slot-%zu.task", root, slot);
  write_text(path, text);
  struct timeval tv[2];
  gettimeofday(&tv[0], NULL);
  tv[0].tv_sec -= age;
  tv[1] = tv[0];
  assert_int_equal(utimes(path, tv), 0);
  snprintf(path, sizeof path, "%s/slot-%zu", root, slot);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/slot-%zu/checkpoint", root, slot);
  write_text(path, "7\n");
}

static int runs(void *ud, const char *app) {
  (void)ud;
  return strcmp(app, "gone") != 0;
}

static void test_scan_and_confirm(void **state) {
  (void)state;
  cairn__resume r;
  cairn_error err = {0};
  size_t pending = 0;
  record(0, 11, "sim", 60, 10);   /* kept, then extended by the master */
  record(1, 12, "sim", 60, 100);  /* its lease ran out by its clock */
  record(2, 13, "gone", 60, 0);   /* an app the worker no longer runs */
  record(3, 14, "sim", 60, 0);    /* kept, then refused by the master */
  record(9, 15, "sim", 60, 0);    /* a slot the worker no longer has */
  char path[512];
  snprintf(path, sizeof path, "%s/slot-4.task", root);
  write_text(path, "{not json");
  snprintf(path, sizeof path, "%s/slot-5", root); /* a directory without a record */
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/slot-0.task.tmp-1", root);
  write_text(path, "x");
  assert_int_equal(cairn__resume_init(&r, root, 6, NULL), 0);
  assert_int_equal(cairn__resume_scan(&r, runs, NULL, &pending, &err), CAIRN_OK);
  assert_int_equal(pending, 2);
  assert_true(exists("slot-0.task") && exists("slot-0/checkpoint"));
  assert_true(exists("slot-3.task") && exists("slot-3/checkpoint"));
  static const char *const gone[] = {"slot-1.task", "slot-1", "slot-2.task", "slot-2",
                                     "slot-9.task", "slot-9", "slot-4.task", "slot-5",
                                     "slot-0.task.tmp-1"};
  for (size_t i = 0; i < sizeof gone / sizeof gone[0]; i++)
    if (exists(gone[i]))
      fail_msg("%s was left", gone[i]);
  int64_t idx[8];
  assert_int_equal(cairn__resume_pending(&r, idx, 8), 2);
  assert_int_equal(idx[0], 11);
  assert_int_equal(idx[1], 14);
  long long extended[] = {11, 99};
  cairn__resume_confirm(&r, extended, 2);
  assert_false(exists("slot-3.task") || exists("slot-3"));
  assert_true(exists("slot-0.task") && exists("slot-0/checkpoint"));
  assert_null(cairn__resume_take(&r, 3));
  cairn__task *t = cairn__resume_take(&r, 0);
  assert_non_null(t);
  assert_int_equal(t->index, 11);
  assert_int_equal(t->resumed, 1);
  assert_int_equal(t->lease_seconds, 60);
  assert_string_equal(t->args[0], "a");
  assert_null(cairn__resume_take(&r, 0)); /* taken once */

  /* running again: recorded (the offer as received), its progress file read */
  char dir[128];
  snprintf(dir, sizeof dir, "%s/slot-0", root);
  cairn__resume_record(&r, 0, t, dir, 1);
  assert_true(cairn__resume_recorded(&r, 0));
  cairn__report_progress p[4];
  assert_int_equal(cairn__resume_progress(&r, p, 4), 0); /* nothing said yet */
  snprintf(path, sizeof path, "%s/%s", dir, CAIRN__PROGRESS_NAME);
  write_text(path, "0.42\n");
  assert_int_equal(cairn__resume_progress(&r, p, 4), 1);
  assert_int_equal(p[0].index, 11);
  assert_true(p[0].fraction == 0.42);
  write_text(path, "7\n"); /* ignored: the last good value stays */
  assert_int_equal(cairn__resume_progress(&r, p, 4), 1);
  assert_true(p[0].fraction == 0.42);
  cairn__resume_forget(&r, 0);
  assert_false(exists("slot-0.task"));
  assert_int_equal(cairn__resume_progress(&r, p, 4), 0);
  cairn__task_free(t);

  /* a callback's progress */
  assert_int_equal(cairn__resume_set_progress(&r, 1, 1.5), CAIRN_EINVAL);
  assert_int_equal(cairn__resume_set_progress(&r, 1, NAN), CAIRN_EINVAL);
  assert_int_equal(cairn__resume_set_progress(&r, 99, 0.5), CAIRN_EINVAL);
  assert_int_equal(cairn__resume_set_progress(&r, 1, 0.5), CAIRN_OK);
  assert_int_equal(cairn__resume_progress(&r, p, 4), 0); /* no task recorded in slot 1 */
  cairn__resume_destroy(&r);
}

static void test_progress_parse(void **state) {
  (void)state;
  static const struct {
    const char *text;
    double want;
  } cases[] = {
    {"0.5", 0.5},     {"0.5\n", 0.5},  {" 1 \r\n", 1},   {"0", 0},        {"1.0", 1},
    {".25", 0.25},    {"7", -1},       {"-1", -1},      {"-0", -1},      {"+0.5", -1},
    {"1e-1", -1},     {"0x1p-1", -1},  {"nan", -1},     {"inf", -1},     {"", -1},
    {"\n", -1},       {".", -1},       {"0.5.5", -1},   {"0.5 0.6", -1}, {"garbage", -1},
    {"1.0000001", -1}, {"0,5", -1},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    double got = cairn__progress_parse(cases[i].text, strlen(cases[i].text));
    if (got != cases[i].want)
      fail_msg("\"%s\": %g, wanted %g", cases[i].text, got, cases[i].want);
  }
  assert_true(cairn__progress_parse("0.5\0", 4) < 0); /* a NUL byte */
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_scan_and_confirm, setup, teardown),
    cmocka_unit_test(test_progress_parse),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
