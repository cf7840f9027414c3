/* test_jobspec.c — the job file parser: every rejection names its problem
 * (field, task or file, and why), and accepted jobs carry the defaults, the
 * dag built from "after", and the files and inputs by index. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "plan/jobspec.h"

#define SHA_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define SHA_B "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

/* Parses text and insists on a rejection with status st whose message holds
 * every non-NULL needle. */
static void expect_reject_st(const char *text, cairn__jobspec_mode mode, cairn_status st,
                             const char *n1, const char *n2) {
  cairn_error err = {0};
  cairn__jobspec *j = cairn__jobspec_parse(text, strlen(text), mode, &err);
  if (j) {
    cairn__jobspec_free(j);
    fail_msg("accepted: %s", text);
  }
  if (err.status != st)
    fail_msg("status %d (%s) for %s", (int)err.status, err.text, text);
  if (n1 && !strstr(err.text, n1))
    fail_msg("message \"%s\" lacks \"%s\" (job %s)", err.text, n1, text);
  if (n2 && !strstr(err.text, n2))
    fail_msg("message \"%s\" lacks \"%s\" (job %s)", err.text, n2, text);
}

static void expect_reject(const char *text, const char *n1, const char *n2) {
  expect_reject_st(text, CAIRN_JOBSPEC_SERVER, CAIRN_EINVAL, n1, n2);
}

static cairn__jobspec *accept_job(const char *text, cairn__jobspec_mode mode) {
  cairn_error err = {0};
  cairn__jobspec *j = cairn__jobspec_parse(text, strlen(text), mode, &err);
  if (!j)
    fail_msg("rejected (%s): %s", err.text, text);
  return j;
}

static void test_malformed_json_names_line_and_column(void **state) {
  (void)state;
  expect_reject("{\"app\": \"x\",\n  \"tasks\": [}", "malformed JSON", "line 2");
  expect_reject("{\"app\": \"x\",\n  \"tasks\": [}", "column", NULL);
  expect_reject("", "malformed JSON", NULL);
  /* duplicate keys are not silently merged */
  expect_reject("{\"app\": \"x\", \"app\": \"y\", \"tasks\": [{\"id\": \"a\"}]}", "malformed JSON",
                "app");
  /* a NUL inside a string is refused before it can truncate anything */
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"args\": [\"a\\u0000b\"]}]}", "NUL",
                NULL);
}

static void test_top_level_shape(void **state) {
  (void)state;
  expect_reject("[1, 2]", "must be a JSON object", NULL);
  expect_reject("[]", "must be a JSON object", NULL);
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}], \"colour\": 1}", "unknown field",
                "\"colour\"");
  expect_reject("{\"tasks\": [{\"id\": \"a\"}]}", "missing \"app\"", NULL);
  expect_reject("{\"app\": \"\", \"tasks\": [{\"id\": \"a\"}]}", "\"app\"", "non-empty");
  expect_reject("{\"app\": 3, \"tasks\": [{\"id\": \"a\"}]}", "\"app\"", "string");
  expect_reject("{\"app\": \"x\"}", "\"tasks\" must be a non-empty array", NULL);
  expect_reject("{\"app\": \"x\", \"tasks\": []}", "\"tasks\" must be a non-empty array", NULL);
  expect_reject("{\"app\": \"x\", \"tasks\": {\"id\": \"a\"}}", "\"tasks\" must be a non-empty array",
                NULL);
  expect_reject("{\"app\": \"x\", \"tasks\": [7]}", "tasks[0]", "must be an object");
}

static void test_task_fields(void **state) {
  (void)state;
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\", \"deps\": []}]}",
                "task \"b\"", "unknown field \"deps\"");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"args\": []}]}", "tasks[1]",
                "missing \"id\"");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"\"}]}", "tasks[0]", "non-empty");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": 5}]}", "tasks[0]", "\"id\"");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\"}, {\"id\": \"a\"}]}",
                "task \"a\"", "duplicate id");
}

static void test_dependencies(void **state) {
  (void)state;
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\", \"after\": [\"z\"]}]}",
                "task \"b\"", "unknown parent \"z\"");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\", \"after\": [1]}]}",
                "task \"b\"", "unknown parent");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\", \"after\": \"a\"}]}",
                "task \"b\"", "\"after\" must be an array");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\", "
                "\"after\": [\"a\", \"a\"]}]}",
                "task \"b\"", "parent \"a\" is listed twice");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"after\": [\"a\"]}]}", "task \"a\"",
                "cycle");
}

/* A cycle b -> c -> d -> b hangs below a source and feeds a sink: the message
 * must name a task on the cycle, not the source or the sink. */
static void test_longer_cycle_names_a_task_on_it(void **state) {
  (void)state;
  const char *text = "{\"app\": \"x\", \"tasks\": ["
                     "{\"id\": \"sink\", \"after\": [\"d\"]},"
                     "{\"id\": \"src\"},"
                     "{\"id\": \"b\", \"after\": [\"src\", \"d\"]},"
                     "{\"id\": \"c\", \"after\": [\"b\"]},"
                     "{\"id\": \"d\", \"after\": [\"c\"]}]}";
  cairn_error err = {0};
  cairn__jobspec *j = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
  assert_null(j);
  assert_int_equal(err.status, CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "cycle"));
  int on_cycle = strstr(err.text, "task \"b\"") || strstr(err.text, "task \"c\"") ||
                 strstr(err.text, "task \"d\"");
  if (!on_cycle)
    fail_msg("message names no task of the cycle: %s", err.text);
}

static void test_files_and_inputs(void **state) {
  (void)state;
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"" SHA_A "\"}], "
                "\"tasks\": [{\"id\": \"a\", \"inputs\": [\"h\"]}]}",
                "task \"a\"", "input h is not in \"files\"");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"" SHA_A "\"}], "
                "\"tasks\": [{\"id\": \"a\", \"inputs\": [\"g\", \"g\"]}]}",
                "task \"a\"", "input g is listed twice");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"" SHA_A "\"},"
                "{\"name\": \"g\", \"sha256\": \"" SHA_B "\"}], \"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "listed twice");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"" SHA_A "\", "
                "\"mode\": 1}], \"tasks\": [{\"id\": \"a\"}]}",
                "files[0]", "unknown field \"mode\"");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"ABCDEF\"}], "
                "\"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "64 lowercase hex");
  /* uppercase hex is not the canonical digest */
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": "
                "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA\"}], "
                "\"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "sha256");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\"}], \"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "missing \"sha256\"");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"path\": \"/tmp/g\"}], "
                "\"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "missing \"sha256\"");
  expect_reject_st("{\"app\": \"x\", \"files\": [{\"name\": \"g\"}], \"tasks\": [{\"id\": \"a\"}]}",
                   CAIRN_JOBSPEC_CLIENT, CAIRN_EINVAL, "files[0]", "missing \"path\"");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"" SHA_A "\", "
                "\"size\": -1}], \"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "\"size\"");
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"g\", \"sha256\": \"" SHA_A "\", "
                "\"broadcast\": 1}], \"tasks\": [{\"id\": \"a\"}]}",
                "file \"g\"", "\"broadcast\"");
  expect_reject("{\"app\": \"x\", \"files\": {}, \"tasks\": [{\"id\": \"a\"}]}",
                "\"files\" must be an array", NULL);
  expect_reject("{\"app\": \"x\", \"files\": [{\"sha256\": \"" SHA_A "\"}], "
                "\"tasks\": [{\"id\": \"a\"}]}",
                "files[0]", "missing \"name\"");
}

/* A file name becomes inputs/NAME in the worker's task directory: it must
 * name one entry of that directory. */
static void test_unsafe_file_names(void **state) {
  (void)state;
  static const char *const bad[] = {"../etc/passwd", "a/b", "/abs", "dir/", ".", ".."};
  char text[512];
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text,
             "{\"app\": \"x\", \"files\": [{\"name\": \"%s\", \"sha256\": \"" SHA_A "\"}], "
             "\"tasks\": [{\"id\": \"a\"}]}", bad[i]);
    char quoted[64];
    snprintf(quoted, sizeof quoted, "file \"%s\"", bad[i]);
    expect_reject(text, quoted, "name");
    expect_reject_st(text, CAIRN_JOBSPEC_CLIENT, CAIRN_EINVAL, quoted, "name");
  }
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"\", \"sha256\": \"" SHA_A "\"}], "
                "\"tasks\": [{\"id\": \"a\"}]}",
                "files[0]", "\"name\"");
  /* dots inside a name are fine */
  cairn__jobspec *j = accept_job("{\"app\": \"x\", \"files\": [{\"name\": \"...\", \"sha256\": \""
                                SHA_A "\"}, {\"name\": \".hidden\", \"sha256\": \"" SHA_B "\"}, "
                                "{\"name\": \"a..b\", \"sha256\": \"" SHA_B "\"}], "
                                "\"tasks\": [{\"id\": \"a\"}]}",
                                CAIRN_JOBSPEC_SERVER);
  assert_int_equal(j->nfiles, 3);
  assert_string_equal(j->files[0].name, "...");
  cairn__jobspec_free(j);
}

static void test_numeric_ranges(void **state) {
  (void)state;
  char text[256];
  static const struct {
    const char *key;
    long long value;
  } bad[] = {
    {"replication", 0}, {"replication", CAIRN_MAX_REPLICATION + 1}, {"quorum", 0},
    {"quorum", CAIRN_MAX_REPLICATION + 1}, {"lease_seconds", 0},
    {"lease_seconds", (long long)CAIRN_MAX_LEASE_SECONDS + 1}, {"max_attempts", 0},
    {"max_attempts", CAIRN_MAX_ATTEMPTS_LIMIT + 1}, {"replication", -3},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    snprintf(text, sizeof text, "{\"app\": \"x\", \"%s\": %lld, \"tasks\": [{\"id\": \"a\"}]}",
             bad[i].key, bad[i].value);
    char quoted[32];
    snprintf(quoted, sizeof quoted, "\"%s\"", bad[i].key);
    expect_reject(text, quoted, "must be an integer from");
  }
  expect_reject("{\"app\": \"x\", \"lease_seconds\": \"60\", \"tasks\": [{\"id\": \"a\"}]}",
                "\"lease_seconds\"", "integer");
  expect_reject("{\"app\": \"x\", \"replication\": 2.5, \"tasks\": [{\"id\": \"a\"}]}",
                "\"replication\"", "integer");
  expect_reject("{\"app\": \"x\", \"replication\": 2, \"quorum\": 3, \"tasks\": [{\"id\": \"a\"}]}",
                "quorum (3) exceeds replication (2)", NULL);
  expect_reject("{\"app\": \"x\", \"quorum\": 2, \"tasks\": [{\"id\": \"a\"}]}",
                "quorum (2) exceeds replication (1)", NULL);
  /* the limits themselves are accepted */
  snprintf(text, sizeof text,
           "{\"app\": \"x\", \"replication\": %d, \"quorum\": %d, \"lease_seconds\": %d, "
           "\"max_attempts\": %d, \"tasks\": [{\"id\": \"a\"}]}",
           CAIRN_MAX_REPLICATION, CAIRN_MAX_REPLICATION, CAIRN_MAX_LEASE_SECONDS,
           CAIRN_MAX_ATTEMPTS_LIMIT);
  cairn__jobspec *j = accept_job(text, CAIRN_JOBSPEC_SERVER);
  assert_int_equal(j->replication, CAIRN_MAX_REPLICATION);
  assert_int_equal(j->quorum, CAIRN_MAX_REPLICATION);
  assert_int_equal(j->lease_seconds, CAIRN_MAX_LEASE_SECONDS);
  assert_int_equal(j->max_attempts, CAIRN_MAX_ATTEMPTS_LIMIT);
  cairn__jobspec_free(j);
}

static void test_args(void **state) {
  (void)state;
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"args\": [\"1\", 2]}]}", "task \"a\"",
                "args[1] must be a string");
  expect_reject("{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"args\": \"1 2\"}]}", "task \"a\"",
                "\"args\" must be an array");
  /* one argument over the limit */
  size_t cap = 64 + (CAIRN_MAX_ARGS + 1) * 5;
  char *text = malloc(cap);
  assert_non_null(text);
  size_t n = (size_t)snprintf(text, cap, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"args\": [");
  for (unsigned i = 0; i <= CAIRN_MAX_ARGS; i++)
    n += (size_t)snprintf(text + n, cap - n, "%s\"a\"", i ? "," : "");
  snprintf(text + n, cap - n, "]}]}");
  expect_reject(text, "task \"a\"", "at most 256 strings");
  /* exactly the limit is fine */
  char *last = strrchr(text, ',');
  memmove(last, last + 4, strlen(last + 4) + 1);
  cairn__jobspec *j = accept_job(text, CAIRN_JOBSPEC_SERVER);
  assert_int_equal(j->tasks[0].nargs, CAIRN_MAX_ARGS);
  cairn__jobspec_free(j);
  free(text);
  /* one argument over the length limit */
  char *big = malloc(CAIRN_MAX_ARG_LEN + 128);
  assert_non_null(big);
  n = (size_t)sprintf(big, "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\", \"args\": [\"");
  memset(big + n, 'z', CAIRN_MAX_ARG_LEN + 1);
  strcpy(big + n + CAIRN_MAX_ARG_LEN + 1, "\"]}]}");
  expect_reject(big, "task \"a\"", "args[0]");
  free(big);
}

static void test_defaults(void **state) {
  (void)state;
  cairn__jobspec *j = accept_job("{\"app\": \"cell\", \"tasks\": [{\"id\": \"only\"}]}",
                                CAIRN_JOBSPEC_SERVER);
  assert_string_equal(j->app, "cell");
  assert_string_equal(j->policy, "ic");
  assert_non_null(j->name);
  assert_int_equal(j->replication, 1);
  assert_int_equal(j->quorum, 1);
  assert_int_equal(j->lease_seconds, 300);
  assert_int_equal(j->max_attempts, 5);
  assert_int_equal(j->nfiles, 0);
  assert_int_equal(j->ntasks, 1);
  assert_string_equal(j->tasks[0].id, "only");
  assert_int_equal(j->tasks[0].nargs, 0);
  assert_int_equal(j->tasks[0].ninputs, 0);
  assert_int_equal(j->dag->n, 1);
  assert_int_equal(j->dag->m, 0);
  cairn__jobspec_free(j);
}

/* "resources": one core and nothing else by default, a job-wide default,
 * per-task overrides (a missing key keeps the job's), classes shared by
 * equal requests, and every bad value named. */
static void test_resources(void **state) {
  (void)state;
  cairn__jobspec *j = accept_job("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\"}]}",
                                CAIRN_JOBSPEC_SERVER);
  assert_true(cairn__resources_equal(&j->resources, &CAIRN_RESOURCES_DEFAULT));
  assert_int_equal(j->nrclasses, 1);
  assert_int_equal(j->tasks[0].rclass, 0);
  assert_true(cairn__resources_equal(&j->rclasses[0], &(cairn__resources){1, 0, 0}));
  cairn__jobspec_free(j);

  j = accept_job("{\"app\": \"a\", \"resources\": {\"memory_mib\": 512}, \"tasks\": ["
                 "{\"id\": \"x\"}, {\"id\": \"big\", \"resources\": {\"cores\": 4}},"
                 "{\"id\": \"y\"}, {\"id\": \"disk\", \"resources\": {\"cores\": 2, "
                 "\"memory_mib\": 0, \"disk_mib\": 1024}}]}", CAIRN_JOBSPEC_SERVER);
  assert_true(cairn__resources_equal(&j->resources, &(cairn__resources){1, 512, 0}));
  assert_int_equal(j->nrclasses, 3);
  assert_int_equal(j->tasks[0].rclass, j->tasks[2].rclass);
  assert_true(cairn__resources_equal(&j->rclasses[j->tasks[0].rclass],
                                    &(cairn__resources){1, 512, 0}));
  assert_true(cairn__resources_equal(&j->rclasses[j->tasks[1].rclass],
                                    &(cairn__resources){4, 512, 0}));
  assert_true(cairn__resources_equal(&j->rclasses[j->tasks[3].rclass],
                                    &(cairn__resources){2, 0, 1024}));
  cairn__jobspec_free(j);

  expect_reject("{\"app\": \"a\", \"resources\": {\"cores\": 0}, \"tasks\": [{\"id\": \"x\"}]}",
                "job: resources", "\"cores\" must be an integer from 1 to 4096");
  expect_reject("{\"app\": \"a\", \"resources\": [1], \"tasks\": [{\"id\": \"x\"}]}",
                "job: \"resources\" must be \"auto\" or an object", NULL);
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"resources\": {\"gpus\": 1}}]}",
                "task \"x\": resources: unknown field \"gpus\"", NULL);
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"resources\": "
                "{\"memory_mib\": -1}}]}", "task \"x\"", "\"memory_mib\" must be an integer from 0");
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"resources\": "
                "{\"disk_mib\": 1.5}}]}", "task \"x\"", "\"disk_mib\" must be an integer");
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"resources\": "
                "{\"cores\": 4097}}]}", "task \"x\"", "from 1 to 4096");
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"resources\": "
                "{\"disk_mib\": 1073741825}}]}", "task \"x\"", "from 0 to 1073741824");

  /* at most CAIRN_MAX_RESOURCE_CLASSES distinct requests in one job */
  char text[16384];
  size_t n = (size_t)snprintf(text, sizeof text, "{\"app\": \"a\", \"tasks\": [");
  for (int i = 0; i <= CAIRN_MAX_RESOURCE_CLASSES; i++)
    n += (size_t)snprintf(text + n, sizeof text - n,
                          "%s{\"id\": \"t%d\", \"resources\": {\"memory_mib\": %d}}",
                          i ? "," : "", i, i);
  snprintf(text + n, sizeof text - n, "]}");
  expect_reject(text, "task \"t64\"", "at most 64 distinct resource requests");
}

/* Tasks that size themselves: "resources": "auto" job-wide or per task (an
 * object on a task of an automatic job makes it fixed), "retry_larger",
 * "category" labels (the job's own is ""), and every bad value named. */
static void test_sizing(void **state) {
  (void)state;
  cairn__jobspec *j = accept_job(
    "{\"app\": \"a\", \"resources\": \"auto\", \"category\": \"sim\", \"tasks\": ["
    "{\"id\": \"x\"}, {\"id\": \"y\", \"resources\": {\"cores\": 2}, \"category\": \"io\"},"
    "{\"id\": \"z\", \"retry_larger\": true, \"category\": \"io\"}]}", CAIRN_JOBSPEC_SERVER);
  assert_int_equal(j->ncategories, 3);
  assert_string_equal(j->categories[0], "");
  assert_string_equal(j->categories[j->tasks[0].category], "sim");
  assert_string_equal(j->categories[j->tasks[1].category], "io");
  assert_int_equal(j->tasks[1].category, j->tasks[2].category);
  assert_int_equal(j->tasks[0].sizing, CAIRN_SIZE_AUTO);
  assert_int_equal(j->tasks[1].sizing, 0);
  assert_int_equal(j->tasks[2].sizing, CAIRN_SIZE_AUTO | CAIRN_SIZE_RETRY_LARGER);
  /* an automatic task's class is the least request: one core */
  assert_true(cairn__resources_equal(&j->rclasses[j->tasks[0].rclass], &CAIRN_RESOURCES_DEFAULT));
  assert_true(cairn__resources_equal(&j->rclasses[j->tasks[1].rclass],
                                    &(cairn__resources){2, 0, 0}));
  cairn__jobspec_free(j);

  j = accept_job("{\"app\": \"a\", \"retry_larger\": true, \"tasks\": [{\"id\": \"x\"}, "
                 "{\"id\": \"y\", \"retry_larger\": false, \"resources\": \"auto\"}]}",
                 CAIRN_JOBSPEC_SERVER);
  assert_int_equal(j->ncategories, 1);
  assert_int_equal(j->tasks[0].sizing, CAIRN_SIZE_RETRY_LARGER);
  assert_int_equal(j->tasks[0].category, 0);
  assert_int_equal(j->tasks[1].sizing, CAIRN_SIZE_AUTO);
  cairn__jobspec_free(j);

  expect_reject("{\"app\": \"a\", \"resources\": \"big\", \"tasks\": [{\"id\": \"x\"}]}",
                "job: \"resources\" must be \"auto\" or an object", NULL);
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"resources\": 3}]}",
                "task \"x\": \"resources\" must be \"auto\"", NULL);
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"retry_larger\": 1}]}",
                "task \"x\": \"retry_larger\" must be true or false", NULL);
  expect_reject("{\"app\": \"a\", \"category\": \"\", \"tasks\": [{\"id\": \"x\"}]}",
                "job: \"category\" must be 1 to 64 printable ASCII", NULL);
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"category\": \"a\\nb\"}]}",
                "task \"x\": \"category\"", NULL);
  expect_reject("{\"app\": \"a\", \"tasks\": [{\"id\": \"x\", \"category\": 7}]}",
                "task \"x\": \"category\"", NULL);
  char text[16384];
  size_t n = (size_t)snprintf(text, sizeof text, "{\"app\": \"a\", \"tasks\": [");
  for (int i = 0; i < CAIRN_MAX_CATEGORIES; i++)
    n += (size_t)snprintf(text + n, sizeof text - n, "%s{\"id\": \"t%d\", \"category\": \"c%d\"}",
                          i ? "," : "", i, i);
  snprintf(text + n, sizeof text - n, "]}");
  expect_reject(text, "task \"t63\"", "at most 63 categories");
}

static int has_edge(const cairn__dag *d, uint32_t parent, uint32_t child) {
  int as_parent = 0, as_child = 0;
  for (uint32_t k = d->par_off[child]; k < d->par_off[child + 1]; k++)
    as_parent |= d->par[k] == parent;
  for (uint32_t k = d->ch_off[parent]; k < d->ch_off[parent + 1]; k++)
    as_child |= d->ch[k] == child;
  assert_int_equal(as_parent, as_child);
  return as_parent;
}

static void test_accepted_job(void **state) {
  (void)state;
  const char *text =
    "{\"name\": \"demo\", \"app\": \"sum\", \"policy\": \"fifo\", \"replication\": 3, "
    "\"quorum\": 2, \"lease_seconds\": 60, \"max_attempts\": 7,"
    " \"files\": [{\"name\": \"genome.fa\", \"sha256\": \"" SHA_A "\", \"size\": 12},"
    "            {\"name\": \"ref\", \"sha256\": \"" SHA_B "\", \"broadcast\": true}],"
    " \"tasks\": [{\"id\": \"d\", \"after\": [\"b\", \"c\"], \"inputs\": [\"ref\", \"genome.fa\"]},"
    "            {\"id\": \"a\", \"args\": [\"-n\", \"3\"]},"
    "            {\"id\": \"b\", \"after\": [\"a\"], \"inputs\": [\"ref\"]},"
    "            {\"id\": \"c\", \"after\": [\"a\"]}]}";
  cairn__jobspec *j = accept_job(text, CAIRN_JOBSPEC_SERVER);
  assert_string_equal(j->name, "demo");
  assert_string_equal(j->policy, "fifo");
  assert_int_equal(j->replication, 3);
  assert_int_equal(j->quorum, 2);
  assert_int_equal(j->lease_seconds, 60);
  assert_int_equal(j->max_attempts, 7);
  assert_int_equal(j->nfiles, 2);
  assert_string_equal(j->files[0].name, "genome.fa");
  assert_string_equal(j->files[0].sha256, SHA_A);
  assert_int_equal(j->files[0].size, 12);
  assert_false(j->files[0].broadcast);
  assert_null(j->files[0].path);
  assert_int_equal(j->files[1].size, -1);
  assert_true(j->files[1].broadcast);
  assert_int_equal(cairn__jobspec_file_index(j, "ref"), 1);
  assert_int_equal(cairn__jobspec_file_index(j, "genome.fa"), 0);
  assert_int_equal(cairn__jobspec_file_index(j, "nope"), -1);
  /* tasks keep job-file order */
  assert_int_equal(j->ntasks, 4);
  assert_string_equal(j->tasks[0].id, "d");
  assert_string_equal(j->tasks[1].id, "a");
  assert_int_equal(j->tasks[1].nargs, 2);
  assert_string_equal(j->tasks[1].args[0], "-n");
  assert_string_equal(j->tasks[1].args[1], "3");
  assert_int_equal(j->tasks[0].ninputs, 2);
  assert_int_equal(j->tasks[0].inputs[0], 1);
  assert_int_equal(j->tasks[0].inputs[1], 0);
  assert_int_equal(j->tasks[2].ninputs, 1);
  assert_int_equal(j->tasks[2].inputs[0], 1);
  assert_int_equal(j->tasks[3].ninputs, 0);
  /* the dag is exactly "after": a -> b, a -> c, b -> d, c -> d */
  const cairn__dag *d = j->dag;
  assert_int_equal(d->n, 4);
  assert_int_equal(d->m, 4);
  assert_int_equal(cairn__dag_nparents(d, 0), 2);
  assert_int_equal(cairn__dag_nparents(d, 1), 0);
  assert_int_equal(cairn__dag_nparents(d, 2), 1);
  assert_int_equal(cairn__dag_nparents(d, 3), 1);
  assert_int_equal(cairn__dag_nchildren(d, 1), 2);
  assert_int_equal(cairn__dag_nchildren(d, 0), 0);
  assert_true(has_edge(d, 1, 2));
  assert_true(has_edge(d, 1, 3));
  assert_true(has_edge(d, 2, 0));
  assert_true(has_edge(d, 3, 0));
  assert_false(has_edge(d, 1, 0));
  cairn__jobspec_free(j);
}

static void test_client_mode_files(void **state) {
  (void)state;
  cairn__jobspec *j = accept_job(
    "{\"app\": \"x\", \"files\": [{\"name\": \"in\", \"path\": \"data/in.txt\"},"
    "{\"name\": \"up\", \"sha256\": \"" SHA_B "\"}], \"tasks\": [{\"id\": \"a\", \"inputs\": [\"in\"]}]}",
    CAIRN_JOBSPEC_CLIENT);
  assert_string_equal(j->files[0].path, "data/in.txt");
  assert_null(j->files[0].sha256);
  assert_null(j->files[1].path);
  assert_string_equal(j->files[1].sha256, SHA_B);
  cairn__jobspec_free(j);
  /* the same file without sha256 is not good enough for the server */
  expect_reject("{\"app\": \"x\", \"files\": [{\"name\": \"in\", \"path\": \"data/in.txt\"}], "
                "\"tasks\": [{\"id\": \"a\"}]}",
                "file \"in\"", "sha256");
}

/* ---- limits, env, stdin ---- */

#define LJOB(top, task) \
  "{\"app\": \"x\", \"files\": [{\"name\": \"in\", \"sha256\": \"" SHA_A "\"}]" top \
  ", \"tasks\": [{\"id\": \"a\", \"inputs\": [\"in\"]" task "}, {\"id\": \"b\"}]}"

static void test_limits_defaults_and_override(void **state) {
  (void)state;
  cairn__jobspec *j = accept_job(LJOB(", \"limits\": {\"wall_seconds\": 60, \"memory_mib\": 256}"
                                     ", \"env\": {\"MODE\": \"fast\", \"LEVEL\": \"1\"}",
                                     ", \"limits\": {\"wall_seconds\": 5, \"disk_mib\": 10}"
                                     ", \"env\": {\"LEVEL\": \"2\"}, \"stdin\": \"in\""),
                                CAIRN_JOBSPEC_SERVER);
  const cairn__task_run *a = &j->tasks[0].run, *b = &j->tasks[1].run;
  assert_int_equal(a->limits[CAIRN_LIMIT_WALL], 5);        /* the task's own */
  assert_int_equal(a->limits[CAIRN_LIMIT_MEMORY], 256);    /* the job's default */
  assert_int_equal(a->limits[CAIRN_LIMIT_DISK], 10);
  assert_int_equal(a->limits[CAIRN_LIMIT_CPU], 0);         /* unset */
  assert_int_equal(a->nenv, 2);
  for (uint32_t i = 0; i < a->nenv; i++)
    assert_string_equal(a->env_values[i], strcmp(a->env_names[i], "LEVEL") == 0 ? "2" : "fast");
  assert_string_equal(a->stdin_name, "in");
  assert_int_equal(b->limits[CAIRN_LIMIT_WALL], 60);
  assert_int_equal(b->limits[CAIRN_LIMIT_DISK], 0);
  assert_int_equal(b->nenv, 2);
  assert_null(b->stdin_name);
  /* the work offer's form carries what is set, nothing else */
  json_t *o = cairn__task_run_json(a);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "limits"), "disk_mib")), 10);
  assert_null(json_object_get(json_object_get(o, "limits"), "cpu_seconds"));
  assert_string_equal(json_string_value(json_object_get(json_object_get(o, "env"), "LEVEL")), "2");
  assert_string_equal(json_string_value(json_object_get(o, "stdin")), "in");
  json_decref(o);
  cairn__jobspec_free(j);
  /* nothing set: an empty run */
  j = accept_job(LJOB("", ""), CAIRN_JOBSPEC_SERVER);
  assert_true(cairn__task_run_empty(&j->tasks[0].run));
  cairn__jobspec_free(j);
}

/* "network": the job's, a task's own on top (false wins over the job's
 * true); only true reaches the work offer; any other value is refused. */
static void test_network(void **state) {
  (void)state;
  cairn__jobspec *j = accept_job(LJOB(", \"network\": true", ", \"network\": false"),
                                 CAIRN_JOBSPEC_SERVER);
  const cairn__task_run *a = &j->tasks[0].run, *b = &j->tasks[1].run;
  assert_true(a->network < 0); /* the task's false */
  assert_true(b->network > 0); /* the job's true */
  assert_true(cairn__task_run_empty(a));
  assert_false(cairn__task_run_empty(b));
  json_t *o = cairn__task_run_json(b);
  assert_true(json_is_true(json_object_get(o, "network")));
  json_decref(o);
  o = cairn__task_run_json(a);
  assert_null(json_object_get(o, "network"));
  json_decref(o);
  cairn__jobspec_free(j);
  expect_reject(LJOB(", \"network\": \"yes\"", ""), "job", "\"network\" must be true or false");
  expect_reject(LJOB("", ", \"network\": 1"), "task \"a\"", "\"network\" must be true or false");
}

static void test_limits_rejections(void **state) {
  (void)state;
  expect_reject(LJOB(", \"limits\": {\"wall\": 5}", ""), "job", "unknown field \"wall\"");
  expect_reject(LJOB("", ", \"limits\": {\"gpu_seconds\": 5}"), "task \"a\"", "gpu_seconds");
  expect_reject(LJOB("", ", \"limits\": {\"cpu_seconds\": 0}"), "limits.cpu_seconds", "from 1");
  expect_reject(LJOB("", ", \"limits\": {\"cpu_seconds\": \"5\"}"), "limits.cpu_seconds", NULL);
  expect_reject(LJOB("", ", \"limits\": {\"memory_mib\": 4294967296}"), "limits.memory_mib", NULL);
  expect_reject(LJOB("", ", \"limits\": [1]"), "\"limits\" must be an object", NULL);
  expect_reject(LJOB("", ", \"limit\": {}"), "task \"a\"", "unknown field \"limit\"");
  /* environment names and values */
  expect_reject(LJOB("", ", \"env\": {\"1X\": \"v\"}"), "bad variable name \"1X\"", NULL);
  expect_reject(LJOB("", ", \"env\": {\"A-B\": \"v\"}"), "bad variable name", NULL);
  expect_reject(LJOB("", ", \"env\": {\"\": \"v\"}"), "bad variable name", NULL);
  expect_reject(LJOB(", \"env\": {\"CAIRN_TASK_ID\": \"v\"}", ""), "job", "CAIRN_");
  expect_reject(LJOB("", ", \"env\": {\"X\": 1}"), "env.X must be a string", NULL);
  expect_reject(LJOB("", ", \"env\": {\"X\": \"a\\u0000b\"}"), "NUL", NULL);
  expect_reject(LJOB("", ", \"env\": [\"X=1\"]"), "\"env\" must be an object", NULL);
  /* names that make the loader, a shell or an interpreter run code, and
   * those the worker sets itself: refused, naming the variable and where */
  expect_reject(LJOB(", \"env\": {\"LD_PRELOAD\": \"inputs/in\"}", ""), "job: env: LD_PRELOAD",
                "may not be set");
  expect_reject(LJOB("", ", \"env\": {\"BASH_ENV\": \"inputs/in\"}"), "task \"a\"", "BASH_ENV");
  static const char *const denied[] = {
    "LD_LIBRARY_PATH", "LD_AUDIT", "DYLD_INSERT_LIBRARIES", "GCONV_PATH", "GLIBC_TUNABLES",
    "MALLOC_TRACE", "LOCPATH", "HOSTALIASES", "RESOLV_HOST_CONF", "TZDIR", "ENV", "PS4",
    "SHELLOPTS", "IFS", "BASH_FUNC_f", "PYTHONPATH", "PYTHONSTARTUP", "PERL5OPT", "RUBYOPT",
    "NODE_OPTIONS", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "CLASSPATH", "LUA_INIT",
    "GIT_SSH_COMMAND", "OPENSSL_CONF", "XDG_CONFIG_HOME", "PATH", "HOME", "TMPDIR"};
  for (size_t i = 0; i < sizeof denied / sizeof *denied; i++)
    if (!cairn__env_name_denied(denied[i]))
      fail_msg("%s is not denied", denied[i]);
  static const char *const allowed[] = {"MODE", "SEED", "OMP_NUM_THREADS", "LANG", "LC_ALL",
                                        "TZ", "LDFLAGS", "ld_preload", "PATHS", "HOMER"};
  for (size_t i = 0; i < sizeof allowed / sizeof *allowed; i++)
    if (cairn__env_name_denied(allowed[i]))
      fail_msg("%s is denied", allowed[i]);
  /* caps on count and size */
  char many[CAIRN_MAX_ENV * 16 + 64], *p = many;
  p += sprintf(p, ", \"env\": {");
  for (unsigned i = 0; i <= CAIRN_MAX_ENV; i++)
    p += sprintf(p, "%s\"V%u\": \"x\"", i ? ", " : "", i);
  sprintf(p, "}");
  char *text = malloc(strlen(many) + 512);
  sprintf(text, LJOB("", "%s"), many);
  expect_reject(text, "more than", "variables");
  free(text);
  char *big = malloc(CAIRN_MAX_ENV_BYTES + 512);
  sprintf(big, LJOB("", ", \"env\": {\"X\": \"%*s\"}"), (int)CAIRN_MAX_ENV_BYTES, "y");
  expect_reject(big, "\"env\" exceeds", NULL);
  free(big);
  /* stdin must be one of the task's inputs */
  expect_reject(LJOB("", ", \"stdin\": \"nope\""), "task \"a\"", "not one of its inputs");
  expect_reject(LJOB(", \"stdin\": \"in\"", ""), "task \"b\"", "not one of its inputs");
  expect_reject(LJOB(", \"stdin\": \"other\"", ""), "job", "not in \"files\"");
  expect_reject(LJOB("", ", \"stdin\": 3"), "\"stdin\" must name", NULL);
}

static void test_limits_ceiling(void **state) {
  (void)state;
  static const char *const flags[CAIRN_LIMIT_COUNT] = {"--max-wall-seconds", "--max-cpu-seconds",
                                                       "--max-memory-mib", "--max-disk-mib",
                                                       "--max-output-mib"};
  int64_t ceiling[CAIRN_LIMIT_COUNT] = {100, 0, 512, 0, 0};
  cairn_error err = {0};
  cairn__jobspec *j = accept_job(LJOB(", \"limits\": {\"wall_seconds\": 60}",
                                     ", \"limits\": {\"memory_mib\": 1024}"),
                                CAIRN_JOBSPEC_SERVER);
  assert_int_equal(cairn__jobspec_ceiling(j, ceiling, flags, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "task \"a\": limits.memory_mib 1024 exceeds the server's "
                                   "ceiling of 512 (--max-memory-mib)"));
  cairn__jobspec_free(j);
  j = accept_job(LJOB(", \"limits\": {\"wall_seconds\": 600}", ""), CAIRN_JOBSPEC_SERVER);
  assert_int_equal(cairn__jobspec_ceiling(j, ceiling, flags, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "job: limits.wall_seconds 600"));
  assert_non_null(strstr(err.text, "--max-wall-seconds"));
  cairn__jobspec_free(j);
  /* within the ceiling: kept; unset: the ceiling */
  j = accept_job(LJOB(", \"limits\": {\"wall_seconds\": 60}", ""), CAIRN_JOBSPEC_SERVER);
  assert_int_equal(cairn__jobspec_ceiling(j, ceiling, flags, &err), CAIRN_OK);
  assert_int_equal(j->tasks[0].run.limits[CAIRN_LIMIT_WALL], 60);
  assert_int_equal(j->tasks[0].run.limits[CAIRN_LIMIT_MEMORY], 512);
  assert_int_equal(j->tasks[1].run.limits[CAIRN_LIMIT_CPU], 0);
  cairn__jobspec_free(j);
}

static void test_reasons(void **state) {
  (void)state;
  const char *good[] = {"wall", "cpu", "memory", "disk", "output", "signal 9", "signal 64",
                        "exit 1", "exit 255"};
  const char *bad[] = {"", "Wall", "signal 0", "signal 65", "exit 0", "exit 256", "exit 01",
                       "exit -1", "exit 1 ", "signal", "exit", "timeout"};
  for (size_t i = 0; i < sizeof good / sizeof *good; i++)
    assert_true(cairn__reason_valid(good[i]));
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
    if (cairn__reason_valid(bad[i]))
      fail_msg("accepted reason \"%s\"", bad[i]);
  char buf[CAIRN_REASON_MAX];
  cairn__reason_of_exit(3, buf);
  assert_string_equal(buf, "exit 3");
  cairn__reason_of_exit(0, buf);
  assert_string_equal(buf, "");
  /* the output budget: the task's, never above the route's cap */
  cairn__task_run r;
  memset(&r, 0, sizeof r);
  assert_int_equal(cairn__task_output_budget(&r, 1u << 20), 1u << 20);
  r.limits[CAIRN_LIMIT_OUTPUT] = 2;
  assert_int_equal(cairn__task_output_budget(&r, 1u << 20), 1u << 20);
  assert_int_equal(cairn__task_output_budget(&r, 8u << 20), 2u << 20);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_malformed_json_names_line_and_column),
    cmocka_unit_test(test_top_level_shape),
    cmocka_unit_test(test_task_fields),
    cmocka_unit_test(test_dependencies),
    cmocka_unit_test(test_longer_cycle_names_a_task_on_it),
    cmocka_unit_test(test_files_and_inputs),
    cmocka_unit_test(test_unsafe_file_names),
    cmocka_unit_test(test_numeric_ranges),
    cmocka_unit_test(test_args),
    cmocka_unit_test(test_defaults),
    cmocka_unit_test(test_resources),
    cmocka_unit_test(test_sizing),
    cmocka_unit_test(test_accepted_job),
    cmocka_unit_test(test_client_mode_files),
    cmocka_unit_test(test_limits_defaults_and_override),
    cmocka_unit_test(test_limits_rejections),
    cmocka_unit_test(test_network),
    cmocka_unit_test(test_limits_ceiling),
    cmocka_unit_test(test_reasons),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
