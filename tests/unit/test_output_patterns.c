/* test_output_patterns.c — common/outputs: output paths, patterns (parse, JSON
 * round trip, matching, caps), the result digest; and the job file's
 * "outputs" and parents' files as inputs (plan/jobspec). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/outputs.h"
#include "common/sha256.h"
#include "plan/jobspec.h"

static void test_names(void **state) {
  (void)state;
  static const char *const good[] = {"a", "a.txt", "out/part-1.bin", ".hidden", "a/.b", "..a",
                                     "a..", "x/y/z"};
  static const char *const bad[] = {"", "/abs", "../x", "a/../b", "a/..", ".", "./a", "a/./b",
                                    "a//b", "a/", "tab\there", "del\x7f"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    assert_true(cairn__output_name_ok(good[i]));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (cairn__output_name_ok(bad[i]))
      fail_msg("\"%s\" taken as an output path", bad[i]);
  char longname[CAIRN_MAX_OUTPUT_NAME + 2];
  memset(longname, 'a', sizeof longname - 1);
  longname[sizeof longname - 1] = '\0';
  assert_false(cairn__output_name_ok(longname));
  longname[CAIRN_MAX_OUTPUT_NAME] = '\0';
  assert_true(cairn__output_name_ok(longname));
}

static cairn_status parse(const char *json, cairn__output_patterns *p, cairn_error *err) {
  json_t *a = json_loads(json, 0, NULL);
  assert_non_null(a);
  cairn_status st = cairn__outputs_parse(a, "t", p, err);
  json_decref(a);
  return st;
}

static void test_patterns(void **state) {
  (void)state;
  cairn__output_patterns p = {0};
  cairn_error err = {0};
  assert_int_equal(parse("[\"a.txt\", {\"name\": \"out/*.bin\", \"max_mib\": 3}, \"[ab]?.log\"]",
                         &p, &err), CAIRN_OK);
  assert_int_equal(p.n, 3);
  assert_false(p.v[0].glob);
  assert_true(p.v[1].glob);
  assert_int_equal(p.v[0].max_mib, CAIRN_DEFAULT_OUTPUT_MIB);
  assert_int_equal(p.v[1].max_mib, 3);
  assert_int_equal(cairn__outputs_match(&p, "a.txt"), 0);
  assert_int_equal(cairn__outputs_match(&p, "out/x.bin"), 1);
  assert_int_equal(cairn__outputs_match(&p, "out/sub/x.bin"), -1); /* '*' stops at '/' */
  assert_int_equal(cairn__outputs_match(&p, "out/.x.bin"), -1);    /* nor a leading '.' */
  assert_int_equal(cairn__outputs_match(&p, "b1.log"), 2);
  assert_int_equal(cairn__outputs_match(&p, "c1.log"), -1);
  assert_int_equal(cairn__outputs_match(&p, "A.txt"), -1);
  assert_int_equal(cairn__outputs_max_bytes(&p), (int64_t)CAIRN_DEFAULT_OUTPUT_MIB << 20);
  /* JSON round trip */
  json_t *j = cairn__outputs_json(&p);
  cairn__output_patterns q = {0};
  assert_int_equal(cairn__outputs_parse(j, "t", &q, &err), CAIRN_OK);
  json_decref(j);
  assert_int_equal(q.n, 3);
  for (uint32_t i = 0; i < 3; i++) {
    assert_string_equal(q.v[i].name, p.v[i].name);
    assert_int_equal(q.v[i].max_mib, p.v[i].max_mib);
    assert_int_equal(q.v[i].glob, p.v[i].glob);
  }
  cairn__output_specs_free(&q);
  cairn__output_specs_free(&p);
  static const char *const bad[] = {
    "{}", "[1]", "[\"../a\"]", "[\"a[b\"]", "[\"a\\\\*\"]", "[\"x\", \"x\"]",
    "[{\"name\": \"x\", \"max_mib\": 0}]", "[{\"name\": \"x\", \"max_mib\": 2000000}]",
    "[{\"name\": \"x\", \"max\": 1}]", "[{\"max_mib\": 1}]", "[\"a/\"]",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    memset(&err, 0, sizeof err);
    if (parse(bad[i], &p, &err) != CAIRN_EINVAL)
      fail_msg("%s accepted", bad[i]);
    assert_true(strlen(err.text) > 0);
    assert_int_equal(p.n, 0);
  }
  char many[4096] = "[";
  for (unsigned i = 0; i <= CAIRN_MAX_OUTPUT_PATTERNS; i++)
    snprintf(many + strlen(many), sizeof many - strlen(many), "%s\"f%u\"", i ? "," : "", i);
  strcat(many, "]");
  assert_int_equal(parse(many, &p, &err), CAIRN_EINVAL);
}

static void test_digest(void **state) {
  (void)state;
  char out[65], d0[65], d1[65], d2[65];
  cairn__sha256_hex("result", 6, out);
  cairn__digest_result_files(out, NULL, 0, d0);
  assert_string_equal(d0, out); /* no files: the output's digest, as before */
  cairn__output_file f[2] = {{.name = "b", .size = 1}, {.name = "a", .size = 2}};
  cairn__sha256_hex("B", 1, f[0].sha256);
  cairn__sha256_hex("A", 1, f[1].sha256);
  cairn__digest_result_files(out, f, 2, d1);
  assert_string_equal(f[0].name, "a"); /* sorted in place */
  /* the rule written out: sha256(D || "a\0" SHA(A) "\n" || "b\0" SHA(B) "\n") */
  char text[64 + 2 * (2 + 64 + 1)];
  size_t n = 0;
  memcpy(text, out, 64);
  n = 64;
  for (int i = 0; i < 2; i++) {
    text[n++] = f[i].name[0];
    text[n++] = '\0';
    memcpy(text + n, f[i].sha256, 64);
    n += 64;
    text[n++] = '\n';
  }
  char want[65];
  cairn__sha256_hex(text, n, want);
  assert_string_equal(d1, want);
  cairn__sha256_hex("C", 1, f[1].sha256); /* one file differs: another digest */
  cairn__digest_result_files(out, f, 2, d2);
  assert_string_not_equal(d1, d2);
}

static cairn__jobspec *job(const char *text, cairn_error *err) {
  return cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, err);
}

static void test_jobspec(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__jobspec *j = job("{\"app\": \"a\", \"outputs\": [\"*.out\"], \"tasks\": ["
                         "{\"id\": \"p/q\", \"outputs\": [\"x\", \"d/*.bin\"]},"
                         "{\"id\": \"p\", \"outputs\": []},"
                         "{\"id\": \"c\", \"inputs\": [\"p/q/x\", \"p/q/d/1.bin\"], "
                         "\"after\": [\"p\", \"p/q\"]}]}", &err);
  if (!j)
    fail_msg("%s", err.text);
  assert_int_equal(j->tasks[0].outputs.n, 2);
  assert_int_equal(j->tasks[1].outputs.n, 0);
  assert_int_equal(j->tasks[2].outputs.n, 1); /* the job's default */
  assert_string_equal(j->tasks[2].outputs.v[0].name, "*.out");
  assert_int_equal(j->tasks[2].npins, 2);
  assert_int_equal(j->tasks[2].pins[0].parent, 0); /* the longest parent id "p/q" */
  assert_string_equal(j->tasks[2].pins[0].file, "x");
  assert_string_equal(j->tasks[2].pins[1].file, "d/1.bin");
  assert_int_equal(j->tasks[2].ninputs, 0);
  cairn__jobspec_free(j);
  static const char *const bad[] = {
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"t\", \"outputs\": [\"/x\"]}]}",
    "{\"app\": \"a\", \"outputs\": [\"a\", \"a\"], \"tasks\": [{\"id\": \"t\"}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"p\", \"outputs\": [\"x\"]}, {\"id\": \"c\", "
    "\"inputs\": [\"p/y\"], \"after\": [\"p\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"p\", \"outputs\": [\"x\"]}, {\"id\": \"c\", "
    "\"inputs\": [\"p/x\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"p\", \"outputs\": [\"x\"]}, {\"id\": \"c\", "
    "\"inputs\": [\"p/x\", \"p/x\"], \"after\": [\"p\"]}]}",
    "{\"app\": \"a\", \"tasks\": [{\"id\": \"p\", \"outputs\": [\"*\"]}, {\"id\": \"c\", "
    "\"inputs\": [\"p/../x\"], \"after\": [\"p\"]}]}",
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    memset(&err, 0, sizeof err);
    j = job(bad[i], &err);
    if (j)
      fail_msg("job %zu accepted", i);
    fprintf(stderr, "refused: %s\n", err.text);
    assert_int_equal(err.status, CAIRN_EINVAL);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_names),
    cmocka_unit_test(test_patterns),
    cmocka_unit_test(test_digest),
    cmocka_unit_test(test_jobspec),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
