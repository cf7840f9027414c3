/* test_validator.c — the numeric comparator (tolerances, text, token
 * counts, exponents, nan/inf) and the "validator" field of a job file
 * (exact, numeric, command), and the output files' key kept for a restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "plan/jobspec.h"
#include "common/limits.h"
#include "common/sha256.h"
#include "plan/validator.h"
#include "server/trust/validate.h"

static int agree(const char *a, const char *b, double rel, double abs_tol) {
  int ab = cairn__numeric_agree(a, strlen(a), b, strlen(b), rel, abs_tol);
  int ba = cairn__numeric_agree(b, strlen(b), a, strlen(a), rel, abs_tol);
  assert_int_equal(ab, ba); /* symmetric */
  return ab;
}

static void test_tolerances(void **state) {
  (void)state;
  assert_true(agree("x = 1.0000000001\n", "x = 1.0000000002\n", 1e-9, 0));
  assert_false(agree("x = 1.0000000001\n", "x = 1.0000000002\n", 0, 0));
  assert_false(agree("x = 1.001\n", "x = 1.002\n", 1e-9, 0));
  assert_true(agree("x = 1.001\n", "x = 1.002\n", 1e-3, 0)); /* 0.001 <= 1e-3 * 1.002 */
  assert_true(agree("0.0 1e-13", "1e-13 0", 0, 1e-12)); /* near zero: abs */
  assert_false(agree("0.0", "1e-11", 1e-3, 1e-12));
  assert_true(agree("3 4 5", "3 4 5", 0, 0)); /* zero tolerance: equal numbers */
  assert_true(agree("1.50", "1.5", 0, 0));   /* numbers compare by value */
  assert_true(agree("-2.0", "-2.00000001", 1e-6, 0));
  assert_false(agree("-2.0", "2.0", 1e-6, 0));
  assert_true(agree("", "", 0, 0));
}

static void test_text(void **state) {
  (void)state;
  assert_false(agree("energy 1.0\n", "Energy 1.0\n", 1, 1));
  assert_false(agree("a 1\n", "a  1\n", 1, 1)); /* whitespace is text, exact */
  assert_true(agree("a-b 1", "a-b 1", 0, 0));
  assert_false(agree("run7 ok", "run8 ok", 1e-9, 0)); /* digits in words are numbers */
  assert_true(agree("1.2.3", "1.2.3", 0, 0));
}

static void test_counts(void **state) {
  (void)state;
  assert_false(agree("1 2 3", "1 2", 1, 1));
  assert_false(agree("1 2", "1 2 ", 1, 1));
  assert_false(agree("1", "", 1, 1));
  assert_false(agree("x 1", "1 x", 1, 1)); /* kinds differ at the same place */
}

static void test_exponents(void **state) {
  (void)state;
  assert_true(agree("6.02214076e23", "6.0221407600001E+23", 1e-12, 0));
  assert_true(agree("1e-3", "0.001", 0, 0));
  assert_true(agree("1.5e", "1.5e", 0, 0));   /* 'e' with no digits is text */
  assert_false(agree("1.5e", "1.5 e", 0, 0));
  assert_true(agree("1e999", "2e999", 0, 0)); /* both overflow to +inf: equal */
  assert_false(agree("1e999", "-1e999", 1, 1));
  assert_false(agree("1e999", "1e308", 1, 0));
}

static void test_nan_inf_words(void **state) {
  (void)state;
  /* nan and inf are words: equal spellings agree, nothing else does */
  assert_true(agree("nan 1", "nan 1", 0, 0));
  assert_false(agree("nan", "NaN", 1, 1));
  assert_false(agree("nan", "0", 1, 1e300));
  assert_true(agree("-inf", "-inf", 0, 0));
  assert_false(agree("inf", "1e308", 1, 1));
}

static void test_long_numbers(void **state) {
  (void)state;
  char a[200], b[200];
  memset(a, '1', 150);
  a[150] = '\0';
  memcpy(b, a, 151);
  b[149] = '2'; /* beyond CAIRN_VALIDATOR_MAX_NUMBER bytes: compared as text */
  assert_false(agree(a, b, 1, 1));
  assert_true(agree(a, a, 0, 0));
}

static void parse_ok(const char *text, cairn__validator_kind kind, double rel, double abs_tol) {
  json_error_t je;
  json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
  cairn__validator out;
  cairn_error err = {0};
  assert_int_equal(cairn__validator_parse(v, "job: validator", &out, &err), CAIRN_OK);
  assert_int_equal(out.kind, kind);
  assert_true(out.rel == rel && out.abs == abs_tol);
  json_t *back = cairn__validator_json(&out);
  cairn__validator again;
  assert_int_equal(cairn__validator_parse(back, "x", &again, &err), CAIRN_OK);
  assert_true(again.kind == out.kind && again.rel == out.rel && again.abs == out.abs);
  json_decref(back);
  json_decref(v);
}

static void parse_bad(const char *text, const char *needle) {
  json_error_t je;
  json_t *v = json_loads(text, JSON_DECODE_ANY, &je);
  assert_non_null(v);
  cairn__validator out;
  cairn_error err = {0};
  assert_int_equal(cairn__validator_parse(v, "job: validator", &out, &err), CAIRN_EINVAL);
  if (!strstr(err.text, needle))
    fail_msg("message \"%s\" lacks \"%s\"", err.text, needle);
  json_decref(v);
}

static void test_parse(void **state) {
  (void)state;
  parse_ok("\"exact\"", CAIRN_VALIDATOR_EXACT, 0, 0);
  parse_ok("{\"numeric\": {\"rel\": 1e-9, \"abs\": 1e-12}}", CAIRN_VALIDATOR_NUMERIC, 1e-9, 1e-12);
  parse_ok("{\"numeric\": {\"rel\": 0.5}}", CAIRN_VALIDATOR_NUMERIC, 0.5, 0);
  parse_ok("{\"numeric\": {}}", CAIRN_VALIDATOR_NUMERIC, 0, 0);
  parse_bad("\"fuzzy\"", "must be \"exact\", {\"numeric\"");
  parse_bad("{\"numeric\": {\"rel\": -1}}", "\"rel\" must be between 0");
  parse_bad("{\"numeric\": {\"abs\": \"1\"}}", "\"abs\" must be a number");
  parse_bad("{\"numeric\": {\"tol\": 1}}", "unknown key \"tol\"");
  parse_bad("{\"numeric\": 1}", "must be an object");
  parse_bad("{\"numeric\": {}, \"exact\": 1}", "must be \"exact\", {\"numeric\"");
  parse_bad("{\"command\": []}", "array of 1 to 16");
  parse_bad("{\"command\": [\"true\"]}", "absolute path");
  parse_bad("{\"command\": [\"/bin/x\", 3]}", "command[1] must be a string");
  json_t *cmd = json_loads("{\"command\": [\"/usr/bin/cmp\", \"-s\"]}", 0, NULL);
  cairn__validator cv;
  cairn_error cerr = {0};
  assert_int_equal(cairn__validator_parse(cmd, "v", &cv, &cerr), CAIRN_OK);
  assert_int_equal(cv.kind, CAIRN_VALIDATOR_COMMAND);
  assert_int_equal(cv.argc, 2);
  assert_string_equal(cv.argv[1], "-s");
  assert_null(cv.argv[2]);
  json_t *back = cairn__validator_json(&cv);
  assert_true(json_equal(back, cmd));
  json_decref(back);
  json_decref(cmd);
  cairn__validator_free(&cv);

  const char *job = "{\"app\": \"a\", \"validator\": {\"numeric\": {\"rel\": 1e-6}}, "
                    "\"tasks\": [{\"id\": \"t\"}]}";
  cairn_error err = {0};
  cairn__jobspec *j = cairn__jobspec_parse(job, strlen(job), CAIRN_JOBSPEC_SERVER, &err);
  assert_non_null(j);
  assert_int_equal(j->validator.kind, CAIRN_VALIDATOR_NUMERIC);
  assert_true(j->validator.rel == 1e-6);
  cairn__jobspec_free(j);
  const char *bad = "{\"app\": \"a\", \"validator\": 3, \"tasks\": [{\"id\": \"t\"}]}";
  assert_null(cairn__jobspec_parse(bad, strlen(bad), CAIRN_JOBSPEC_SERVER, &err));
  assert_non_null(strstr(err.text, "job: validator"));
}

/* The output files' key a master computes from a result equals the one it
 * recomputes at a restart from the stored text, which parses back. */
static void test_files_key(void **state) {
  (void)state;
  cairn__output_file f[2];
  memset(f, 0, sizeof f);
  snprintf(f[0].name, sizeof f[0].name, "a/x:1");
  snprintf(f[1].name, sizeof f[1].name, "b.txt");
  memset(f[0].sha256, 'a', 64);
  memset(f[1].sha256, 'b', 64);
  char key[65], again[65], text[512];
  cairn__valid_files_key(f, 2, key);
  snprintf(text, sizeof text, "5:a/x:1%s5:b.txt%s", f[0].sha256, f[1].sha256);
  cairn__sha256_hex(text, strlen(text), again);
  assert_string_equal(key, again);
  cairn__valid_files_key(NULL, 0, key);
  cairn__sha256_hex("", 0, again);
  assert_string_equal(key, again);
  cairn__output_file *back;
  uint32_t n;
  assert_int_equal(cairn__valid_files_parse(text, &back, &n), 0);
  assert_int_equal(n, 2);
  assert_string_equal(back[0].name, "a/x:1");
  assert_string_equal(back[1].sha256, f[1].sha256);
  free(back);
  assert_int_equal(cairn__valid_files_parse("9:short", &back, &n), -1);
  assert_null(back);
  assert_int_equal(cairn__valid_files_parse("", &back, &n), 0);
  assert_int_equal(n, 0);
}

/* The work a numeric comparison does under the master's lock: two outputs
 * of 1 MiB (CAIRN_MAX_OUTPUT) of numbers, timed. */
static void test_one_mib_figure(void **state) {
  (void)state;
  size_t n = CAIRN_MAX_OUTPUT;
  char *a = malloc(n), *b = malloc(n);
  assert_non_null(a);
  assert_non_null(b);
  for (size_t i = 0; i < n; i += 16) {
    memcpy(a + i, "1.23456789012e5 ", 16);
    memcpy(b + i, "1.23456789013e5 ", 16);
  }
  struct timespec t0, t1;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  int ok = cairn__numeric_agree(a, n, b, n, 1e-9, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  fprintf(stderr, "numeric: two 1 MiB outputs (%zu numbers each, every one differing) "
          "compared in %.1f ms\n", n / 16, ms);
  assert_true(ok);
  memcpy(b, a, n);
  clock_gettime(CLOCK_MONOTONIC, &t0);
  ok = cairn__numeric_agree(a, n, b, n, 1e-9, 0);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
  fprintf(stderr, "numeric: the same, byte-identical, in %.1f ms\n", ms);
  assert_true(ok);
  b[n - 2] = '9'; /* the last number's exponent: e9 */
  assert_false(cairn__numeric_agree(a, n, b, n, 1e-9, 0));
  free(a);
  free(b);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_tolerances), cmocka_unit_test(test_text),
    cmocka_unit_test(test_counts),     cmocka_unit_test(test_exponents),
    cmocka_unit_test(test_nan_inf_words), cmocka_unit_test(test_long_numbers),
    cmocka_unit_test(test_parse),         cmocka_unit_test(test_files_key),
    cmocka_unit_test(test_one_mib_figure),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
