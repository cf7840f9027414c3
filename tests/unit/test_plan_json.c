/* test_plan_json.c — instance and plan JSON for every model (strict errors,
 * round trip through the checker) and the `cairn plan` command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cmocka.h>

#include "plan/plan.h"

static const char *const samples[][2] = {
  {"{\"model\":\"1/C\",\"C\":3,\"clusters\":[{\"size\":5},{\"size\":4},{\"size\":1}],\"source\":1}", "lcf"},
  {"{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":5,\"members\":2},{\"size\":4,\"members\":0},{\"size\":3,"
   "\"members\":3}]}",
   "lcf"},
  {"{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":5,\"degree\":2},{\"size\":4,\"degree\":1},{\"size\":3}]}",
   "bounded-degree"},
  {"{\"model\":\"1/C\",\"C\":2,\"B\":1,\"clusters\":[{\"size\":5},{\"size\":4},{\"size\":3},{\"size\":2}],"
   "\"members\":[1,2,0,2]}",
   "bounded-matching"},
  {"{\"model\":\"postal\",\"C\":4,\"clusters\":[{\"size\":6},{\"size\":3},{\"size\":3}]}", "interleaved-lcf"},
  {"{\"model\":\"grid\",\"root\":1,\"T\":[5,7.5,0],\"L\":[[null,1,2],[1,null,3],[2,3,null]],"
   "\"g\":[[0,10,10],[10,0,10.25],[10,10,0]]}",
   "ECEF-LAT"},
  {"{\"model\":\"hnow\",\"nodes\":[{\"S\":[80,0.001],\"R\":100},{\"S\":90,\"R\":[95,0.002]},{\"S\":85,\"R\":99}],"
   "\"X\":[[0,0.008,0.008],[0.008,0,0.008],[0.008,0.008,0]],"
   "\"messages\":[{\"source\":0,\"length\":1000,\"dests\":[1,2]},{\"source\":2,\"length\":10,\"dests\":[0]}]}",
   "WRP"},
  {"{\"model\":\"cdmd\",\"processors\":3,\"messages\":[{\"name\":\"A\",\"length\":4,\"holder\":0,\"needed_by\":[1,2]},"
   "{\"name\":\"B\",\"length\":2,\"holder\":1,\"needed_by\":[0]}]}",
   "LH-LS"},
};

/* Writes s and reads the text back into *back against in: what the writer
 * writes, the reader reads. */
static void read_back(const cairn__plan_schedule *s, const cairn__plan_instance *in, cairn__plan_schedule *back) {
  cairn_error err = {0};
  char *json = cairn__plan_schedule_to_json(s, in);
  assert_non_null(json);
  if (cairn__plan_schedule_parse(json, strlen(json), in, back, &err) != CAIRN_OK)
    fail_msg("cannot read back what was written: %s\n%s", err.text, json);
  free(json);
}

static void test_round_trip(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof samples / sizeof *samples; i++) {
    cairn__plan_instance in;
    cairn_error err = {0};
    if (cairn__plan_instance_parse(samples[i][0], strlen(samples[i][0]), &in, &err) != CAIRN_OK)
      fail_msg("sample %zu: %s", i, err.text);
    cairn__plan_schedule s, back;
    if (cairn__plan_run(&in, samples[i][1], &s, &err) != CAIRN_OK)
      fail_msg("sample %zu: %s", i, err.text);
    double mk = 0, mk2 = 0;
    assert_int_equal(cairn__plan_check(&in, &s, &mk, &err), CAIRN_OK);
    read_back(&s, &in, &back);
    if (cairn__plan_check(&in, &back, &mk2, &err) != CAIRN_OK)
      fail_msg("sample %zu read back: %s", i, err.text);
    assert_true(mk == mk2);
    assert_int_equal(back.n, s.n);
    assert_string_equal(back.algorithm, s.algorithm);
    char *svg = cairn__plan_schedule_svg(&s, &in, 100);
    assert_non_null(svg);
    assert_non_null(strstr(svg, "<svg"));
    assert_null(cairn__plan_schedule_svg(&s, &in, 1)); /* too many rows */
    free(svg);
    cairn__plan_schedule_free(&s);
    cairn__plan_schedule_free(&back);
    cairn__plan_instance_free(&in);
  }
}

static void expect_error(const char *json, const char *needle) {
  cairn__plan_instance in;
  cairn_error err = {0};
  assert_int_equal(cairn__plan_instance_parse(json, strlen(json), &in, &err), CAIRN_EINVAL);
  if (!strstr(err.text, needle))
    fail_msg("error \"%s\" does not mention \"%s\"", err.text, needle);
  assert_null(strchr(err.text, '\n'));
}

static void test_errors(void **state) {
  (void)state;
  expect_error("{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":2}],\"colour\":1}", "\"colour\"");
  expect_error("{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":2,\"sise\":3}]}", "clusters[0]");
  expect_error("{\"model\":\"1/C\",\"clusters\":[{\"size\":2}]}", "\"C\"");
  expect_error("{\"model\":\"1/C\",\"C\":0,\"clusters\":[{\"size\":2}]}", "C must be");
  expect_error("{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":2}],\"source\":3}", "source");
  expect_error("{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":2}],\"members\":[3]}", "members[0]");
  expect_error("{\"model\":\"mesh\"}", "unknown model");
  expect_error("[1,2]", "object");
  expect_error("{\"model\":", "not valid JSON");
  expect_error("{\"model\":\"grid\",\"T\":[1,2],\"L\":[[0,1]],\"g\":[[0,1],[1,0]]}", "L must be a 2 x 2");
  expect_error("{\"model\":\"grid\",\"T\":[1,2],\"L\":[[0,1],[1,0]],\"g\":[[0,-1],[1,0]]}", "g[0][1]");
  expect_error("{\"model\":\"hnow\",\"nodes\":[{\"S\":1,\"R\":1}],\"X\":[[0]],\"messages\":[{\"source\":0,"
               "\"length\":1,\"dests\":[0]}]}",
               "dests");
  expect_error("{\"model\":\"hnow\",\"nodes\":[{\"S\":[1,2,3],\"R\":1}],\"X\":[[0]],\"messages\":[]}", "nodes[0].S");
  expect_error("{\"model\":\"cdmd\",\"processors\":2,\"messages\":[{\"length\":1,\"holder\":0,\"needed_by\":[]}]}",
               "needed_by");
  expect_error("{\"model\":\"cdmd\",\"processors\":2,\"messages\":[{\"length\":1.5,\"holder\":0,\"needed_by\":[1]}]}",
               "length");
}

/* A plan's algorithm is printed as is by the writer: a name with a quote,
 * a backslash or a control character, or longer than the field, is
 * refused naming it, and a plain one is read back as written. */
static void test_algorithm_name(void **state) {
  (void)state;
  const char *inst = "{\"model\":\"1/C\",\"C\":2,\"clusters\":[{\"size\":2}],\"source\":0}";
  static const char *const bad[] = {"lc\\\\f", "a\\\"b", "tab\\there", "a\\u0001",
                                    "0123456789012345678901234567890123"};
  cairn__plan_instance in;
  cairn_error err = {0};
  assert_int_equal(cairn__plan_instance_parse(inst, strlen(inst), &in, &err), CAIRN_OK);
  char plan[256];
  cairn__plan_schedule s;
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(plan, sizeof plan, "{\"algorithm\":\"%s\",\"transfers\":[]}", bad[i]);
    memset(&err, 0, sizeof err);
    assert_int_equal(cairn__plan_schedule_parse(plan, strlen(plan), &in, &s, &err), CAIRN_EINVAL);
    if (!strstr(err.text, "algorithm"))
      fail_msg("plan %s: error \"%s\" does not name the algorithm", plan, err.text);
  }
  snprintf(plan, sizeof plan, "{\"algorithm\":\"my planner/2 (x+y)\",\"transfers\":[]}");
  if (cairn__plan_schedule_parse(plan, strlen(plan), &in, &s, &err) != CAIRN_OK)
    fail_msg("plain name refused: %s", err.text);
  cairn__plan_schedule back;
  read_back(&s, &in, &back);
  assert_string_equal(back.algorithm, "my planner/2 (x+y)");
  cairn__plan_schedule_free(&s);
  cairn__plan_schedule_free(&back);
  cairn__plan_instance_free(&in);
}

/* A plan names the instance's model or none: a plan of another model would
 * be written with the other model's nodes and could not be read back, so it
 * is refused naming both models. */
static void test_model_mismatch(void **state) {
  (void)state;
  const char *inst = "{\"model\":\"1/C\",\"C\":3,\"clusters\":[{\"size\":2},{\"size\":2}],\"source\":0}";
  const char *plan = "{\"model\":\"cdmd\",\"transfers\":[{\"message\":0,\"from\":[0,0],\"to\":[[1,0]],"
                     "\"start\":0,\"end\":1}]}";
  cairn__plan_instance in;
  cairn__plan_schedule s;
  cairn_error err = {0};
  assert_int_equal(cairn__plan_instance_parse(inst, strlen(inst), &in, &err), CAIRN_OK);
  assert_int_equal(cairn__plan_schedule_parse(plan, strlen(plan), &in, &s, &err), CAIRN_EINVAL);
  if (!strstr(err.text, "\"cdmd\"") || !strstr(err.text, "\"1/C\""))
    fail_msg("error \"%s\" does not name both models", err.text);
  cairn__plan_schedule_free(&s);
  plan = "{\"model\":\"1/C\",\"transfers\":[{\"message\":0,\"from\":[0,0],\"to\":[1,0],\"start\":0,\"end\":1}]}";
  if (cairn__plan_schedule_parse(plan, strlen(plan), &in, &s, &err) != CAIRN_OK)
    fail_msg("the instance's own model refused: %s", err.text);
  cairn__plan_schedule back;
  read_back(&s, &in, &back);
  cairn__plan_schedule_free(&s);
  cairn__plan_schedule_free(&back);
  cairn__plan_instance_free(&in);
}

static int run(const char *cmd) {
  int rc = system(cmd);
  return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static char *read_all(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  char *buf = calloc(1, 1 << 20);
  size_t n = fread(buf, 1, (1 << 20) - 1, f);
  buf[n] = '\0';
  fclose(f);
  return buf;
}

static void test_cli(void **state) {
  (void)state;
  const char *bin = getenv("CAIRN_BIN_DIR");
  if (!bin)
    bin = "build/bin";
  char dir[64];
  snprintf(dir, sizeof dir, "/tmp/cairn-plan-test-%ld", (long)getpid());
  assert_int_equal(mkdir(dir, 0700), 0);
  char path[512], cmd[2048];
  snprintf(path, sizeof path, "%s/in.json", dir);
  FILE *f = fopen(path, "w");
  fputs(samples[0][0], f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s/cairn plan lcf %s --svg %s/p.svg --out %s/p.json 2>%s/err", bin, path, dir, dir, dir);
  assert_int_equal(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/cairn plan check %s %s/p.json >%s/out 2>%s/err", bin, path, dir, dir, dir);
  assert_int_equal(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/out", dir);
  char *out = read_all(cmd);
  assert_non_null(out);
  assert_non_null(strstr(out, "feasible"));
  free(out);
  snprintf(cmd, sizeof cmd, "%s/p.svg", dir);
  out = read_all(cmd);
  assert_non_null(out);
  assert_non_null(strstr(out, "</svg>"));
  free(out);
  /* unknown algorithm: non-zero, one line naming it */
  snprintf(cmd, sizeof cmd, "%s/cairn plan nope %s >/dev/null 2>%s/err", bin, path, dir);
  assert_int_not_equal(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/err", dir);
  out = read_all(cmd);
  assert_non_null(strstr(out, "unknown algorithm \"nope\""));
  assert_int_equal(strchr(out, '\n') - out, (long)strlen(out) - 1);
  free(out);
  /* malformed instance */
  f = fopen(path, "w");
  fputs("{\"model\":\"1/C\",\"C\":2,\"clusters\":[],\"x\":1}", f);
  fclose(f);
  snprintf(cmd, sizeof cmd, "%s/cairn plan lcf %s >/dev/null 2>%s/err", bin, path, dir);
  assert_int_not_equal(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "%s/cairn plan --help >/dev/null", bin);
  assert_int_equal(run(cmd), 0);
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  assert_int_equal(run(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_round_trip),
    cmocka_unit_test(test_errors),
    cmocka_unit_test(test_algorithm_name),
    cmocka_unit_test(test_model_mismatch),
    cmocka_unit_test(test_cli),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
