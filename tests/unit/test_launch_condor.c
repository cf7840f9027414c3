/* test_launch_condor.c — the `condor` backend of `cairn launch`
 * (cli/launch_condor.c, docs/launch.md) without an HTCondor pool:
 *   the submit description it writes uses only documented submit commands
 *   (DOCUMENTED below, each checked against the condor_submit manual's
 *   "Submit Description File Commands") or +Attribute lines; the worker's
 *   arguments, with blanks, single and double quotes, come back unchanged
 *   when read by the manual's rules for the new argument syntax; the
 *   invitation travels as an input file and its code is nowhere in the file;
 *   --batch-options lines are appended, and the commands the backend writes
 *   itself are refused; recorded condor_submit -terse, condor_q -af and
 *   condor_history -af output lines are read into the right states.
 * HTCondor is not packaged for this system: submitting, condor_q and
 * condor_rm against a real schedd are not exercised here (the test says so). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/launch.h"
#include "cli/launch_condor.h"
#include "tests/support/harness.h"

/* Submit commands the backend writes or the test's --batch-options use, as
 * the condor_submit manual lists them. */
static const char *const DOCUMENTED[] = {
  "universe", "executable", "transfer_executable", "arguments", "request_cpus",
  "request_memory", "request_disk", "output", "error", "log", "should_transfer_files",
  "when_to_transfer_output", "transfer_input_files", "transfer_output_files", "requirements",
  NULL,
};

/* Reads a new-syntax argument list by the manual's rules: the whole in
 * double quotes, "" is a literal ", blanks separate arguments, single quotes
 * surround blanks, '' inside them is a literal '. Returns the count, or -1
 * when value breaks the rules. */
static int read_args(const char *value, char out[][256], int cap) {
  size_t len = strlen(value);
  if (len < 2 || value[0] != '"' || value[len - 1] != '"')
    return -1;
  char inner[8192];
  size_t k = 0;
  for (size_t i = 1; i + 1 < len; i++) {
    if (value[i] == '"') {
      if (value[i + 1] != '"' || i + 2 >= len)
        return -1; /* a lone double quote inside */
      i++;
    }
    inner[k++] = value[i];
  }
  inner[k] = '\0';
  int n = 0;
  const char *p = inner;
  while (*p) {
    while (*p == ' ' || *p == '\t')
      p++;
    if (!*p)
      break;
    if (n == cap)
      return -1;
    size_t w = 0;
    int quoted = 0;
    for (; *p && (quoted || (*p != ' ' && *p != '\t')); p++) {
      if (*p == '\'') {
        if (quoted && p[1] == '\'') {
          out[n][w++] = '\'';
          p++;
        } else
          quoted = !quoted;
        continue;
      }
      out[n][w++] = *p;
    }
    if (quoted)
      return -1;
    out[n++][w] = '\0';
  }
  return n;
}

static int documented(const char *key) {
  if (key[0] == '+') {
    for (const char *p = key + 1; *p; p++)
      if (!(*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') ||
            (p > key + 1 && *p >= '0' && *p <= '9')))
        return 0;
    return key[1] != '\0';
  }
  for (int i = 0; DOCUMENTED[i]; i++)
    if (strcasecmp(DOCUMENTED[i], key) == 0)
      return 1;
  return 0;
}

/* The value of key in text ("key = value" lines), copied into out; 0 or -1. */
static int value_of(const char *text, const char *key, char *out, size_t size) {
  size_t klen = strlen(key);
  for (const char *line = text; *line; line += strcspn(line, "\n") + (line[strcspn(line, "\n")] != 0)) {
    size_t len = strcspn(line, "\n");
    if (len > klen + 3 && strncmp(line, key, klen) == 0 && strncmp(line + klen, " = ", 3) == 0) {
      snprintf(out, size, "%.*s", (int)(len - klen - 3), line + klen + 3);
      return 0;
    }
  }
  return -1;
}

static void test_quoting_round_trips(void **state) {
  (void)state;
  const char *const args[] = {"plain", "two words", "it's", "say \"hi\"",
                              "mixed 'both' \"kinds\" and\ttab", "", "''", "\"\"", NULL};
  char quoted[4096], back[16][256];
  assert_int_equal(cairn__condor_quote_args(args, quoted, sizeof quoted), 0);
  printf("condor: arguments = %s\n", quoted);
  int n = read_args(quoted, back, 16);
  assert_int_equal(n, 8);
  for (int i = 0; i < n; i++)
    assert_string_equal(back[i], args[i]);
  /* What condor_submit would expand or what ends a line is refused. */
  const char *const dollar[] = {"--app", "x=$(HOME)/x", NULL};
  const char *const newline[] = {"a\nqueue 100", NULL};
  assert_int_equal(cairn__condor_quote_args(dollar, quoted, sizeof quoted), -1);
  assert_int_equal(cairn__condor_quote_args(newline, quoted, sizeof quoted), -1);
  /* Too small an output buffer is an error, not a truncation. */
  assert_int_equal(cairn__condor_quote_args(args, quoted, 16), -1);
}

static void test_submit_description(void **state) {
  (void)state;
  char dir[4096], inv[4200], text[65536], err[256];
  harness_tmpdir(dir, sizeof dir);
  snprintf(inv, sizeof inv, "%s/invitation", dir);
  assert_int_equal(harness_write_file(inv, "SECRET-INVITATION-CODE-42\n"), 0);
  const char *const wargs[] = {"--app", "cell=/opt/my apps/cell's \"bin\"", "--peer-listen",
                               "off", NULL};
  cairn__launch_spec spec = {
    .server = "https://master.example.org:8443",
    .worker_path = "/shared/cairn/bin/cairn-worker",
    .worker_args = wargs,
    .cluster = "pool-a",
    .cores = 4,
    .memory_mib = 2048,
    .slots = 4,
    .idle_exit = 60,
    .invitation_file = inv,
    .batch_options = "requirements = (OpSys == \"LINUX\"); +Group = \"phys\"\n"
                     "  request_disk = 1G ;# a comment\n",
    .work_dir = dir,
  };
  cairn__condor_submit sub = {spec.worker_path, "/shared/launch/condor", "host:1:2", 3};
  assert_int_equal(cairn__condor_submit_text(&spec, &sub, text, sizeof text, err, sizeof err), 0);
  printf("condor: the submit description:\n%s", text);

  /* Every line: a comment, a documented "key = value", or the final queue. */
  int lines = 0, queue_seen = 0;
  char *copy = strdup(text);
  for (char *save = NULL, *line = strtok_r(copy, "\n", &save); line;
       line = strtok_r(NULL, "\n", &save), lines++) {
    assert_false(queue_seen); /* queue comes last */
    if (line[0] == '#')
      continue;
    if (strncmp(line, "queue ", 6) == 0) {
      assert_string_equal(line, "queue 3");
      queue_seen = 1;
      continue;
    }
    char key[64];
    assert_int_equal(sscanf(line, "%63[^ =] =", key), 1);
    if (!documented(key))
      fail_msg("\"%s\" is not a documented submit command", key);
  }
  free(copy);
  assert_true(queue_seen);
  assert_true(lines >= 15);

  char v[8192];
  assert_int_equal(value_of(text, "universe", v, sizeof v), 0);
  assert_string_equal(v, "vanilla");
  assert_int_equal(value_of(text, "executable", v, sizeof v), 0);
  assert_string_equal(v, "/shared/cairn/bin/cairn-worker");
  assert_int_equal(value_of(text, "request_cpus", v, sizeof v), 0);
  assert_string_equal(v, "4");
  assert_int_equal(value_of(text, "request_memory", v, sizeof v), 0);
  assert_string_equal(v, "2048");
  assert_int_equal(value_of(text, "should_transfer_files", v, sizeof v), 0);
  assert_string_equal(v, "YES");
  assert_int_equal(value_of(text, "when_to_transfer_output", v, sizeof v), 0);
  assert_string_equal(v, "ON_EXIT");
  assert_int_equal(value_of(text, "transfer_input_files", v, sizeof v), 0);
  assert_string_equal(v, inv);
  assert_int_equal(value_of(text, "output", v, sizeof v), 0);
  assert_string_equal(v, "/shared/launch/condor/w$(Cluster).$(Process).out");
  assert_int_equal(value_of(text, "+CairnWorker", v, sizeof v), 0);
  assert_string_equal(v, "true");
  assert_int_equal(value_of(text, "+CairnFactory", v, sizeof v), 0);
  assert_string_equal(v, "\"host:1:2\"");
  assert_int_equal(value_of(text, "requirements", v, sizeof v), 0);
  assert_string_equal(v, "(OpSys == \"LINUX\")");
  assert_int_equal(value_of(text, "+Group", v, sizeof v), 0);
  assert_int_equal(value_of(text, "request_disk", v, sizeof v), 0);
  assert_string_equal(v, "1G");
  /* The code itself is never in the file (nor, so, on a command line). */
  assert_null(strstr(text, "SECRET-INVITATION-CODE"));

  /* The arguments, read back by the manual's rules, are the worker's. */
  const char *want[64];
  char buf[256], back[64][256];
  int n = cairn__launch_worker_argv(&spec, NULL, "cairn-worker-state", "invitation", want, 64, buf,
                                   sizeof buf);
  assert_true(n > 10);
  assert_int_equal(value_of(text, "arguments", v, sizeof v), 0);
  assert_int_equal(read_args(v, back, 64), n - 1);
  for (int i = 1; i < n; i++)
    assert_string_equal(back[i - 1], want[i]);

  /* Without an invitation, cores or memory those lines are left out. */
  spec.invitation_file = NULL;
  spec.cores = 0;
  spec.memory_mib = 0;
  spec.batch_options = NULL;
  assert_int_equal(cairn__condor_submit_text(&spec, &sub, text, sizeof text, err, sizeof err), 0);
  assert_null(strstr(text, "transfer_input_files"));
  assert_null(strstr(text, "request_cpus"));
  assert_null(strstr(text, "--invitation-file"));
  /* A too small buffer is an error. */
  assert_int_equal(cairn__condor_submit_text(&spec, &sub, text, 100, err, sizeof err), -1);
  harness_rmtree(dir);
}

static void test_batch_options(void **state) {
  (void)state;
  char err[256];
  assert_int_equal(cairn__condor_check_batch_options(NULL, err, sizeof err), 0);
  assert_int_equal(cairn__condor_check_batch_options(" ; \n# only a comment\n", err, sizeof err), 0);
  assert_int_equal(cairn__condor_check_batch_options("rank = Memory; +Project=\"x\"", err, sizeof err),
                   0);
  const char *bad[] = {"executable = /bin/sh", "requirements = true; Queue = 5", "queue 100",
                       "+CairnFactory = \"other\"", "no equals sign", "= value", "bad key = 1",
                       "Arguments = \"-x\"", NULL};
  for (int i = 0; bad[i]; i++) {
    err[0] = '\0';
    if (cairn__condor_check_batch_options(bad[i], err, sizeof err) != -1)
      fail_msg("--batch-options '%s' was accepted", bad[i]);
    assert_non_null(strstr(err, "--batch-options"));
  }
  /* The backend refuses them before anything runs. */
  char dir[4096];
  harness_tmpdir(dir, sizeof dir);
  const char *const none[] = {NULL};
  cairn__launch_spec spec = {.server = "http://127.0.0.1:1", .worker_path = "/bin/true",
                            .worker_args = none, .slots = 1, .work_dir = dir,
                            .batch_options = "log = /tmp/mine.log"};
  void *st = NULL;
  assert_int_equal(cairn__launch_condor.init(&st, NULL, 0, &spec, err, sizeof err), -1);
  assert_non_null(strstr(err, "writes log itself"));
  spec.batch_options = "requirements = true";
  assert_int_equal(cairn__launch_condor.init(&st, NULL, 0, &spec, err, sizeof err), 0);
  cairn__launch_condor.fini(st);
  harness_rmtree(dir);
}

static void test_terse(void **state) {
  (void)state;
  long c, f, l;
  assert_int_equal(cairn__condor_parse_terse("4711.0 - 4711.4\n", &c, &f, &l), 0);
  assert_int_equal(c, 4711);
  assert_int_equal(f, 0);
  assert_int_equal(l, 4);
  assert_int_equal(cairn__condor_parse_terse("12.0 - 12.0\n", &c, &f, &l), 0);
  assert_int_equal(l, 0);
  assert_int_equal(cairn__condor_parse_terse("", &c, &f, &l), -1);
  assert_int_equal(cairn__condor_parse_terse("ERROR: Failed to connect\n", &c, &f, &l), -1);
  assert_int_equal(cairn__condor_parse_terse("12.0 - 13.2\n", &c, &f, &l), -1);
  assert_int_equal(cairn__condor_parse_terse("12.3 - 12.1\n", &c, &f, &l), -1);
  assert_int_equal(cairn__condor_parse_terse("12.0 - 12.1\n13.0 - 13.0\n", &c, &f, &l), -1);
}

static void test_queue_and_history_lines(void **state) {
  (void)state;
  /* condor_q / condor_history -af ClusterId ProcId JobStatus ExitCode. */
  static const struct {
    const char *line;
    long cluster, proc;
    int status, code, state;
  } rec[] = {
    {"4711 0 1 undefined", 4711, 0, 1, -1, CAIRN_LAUNCH_PENDING},
    {"4711 1 2 undefined", 4711, 1, 2, -1, CAIRN_LAUNCH_RUNNING},
    {"4711 2 4 0", 4711, 2, 4, 0, CAIRN_LAUNCH_DONE},
    {"4711 3 4 1", 4711, 3, 4, 1, CAIRN_LAUNCH_FAILED},
    {"4711 4 3 undefined", 4711, 4, 3, -1, CAIRN_LAUNCH_FAILED},
    {"4712 0 5 undefined", 4712, 0, 5, -1, CAIRN_LAUNCH_FAILED},
    {"4712 1 6 0", 4712, 1, 6, 0, CAIRN_LAUNCH_RUNNING},
    {"4712 2 7 undefined", 4712, 2, 7, -1, CAIRN_LAUNCH_RUNNING},
    {"  4712 3 4 undefined  ", 4712, 3, 4, -1, CAIRN_LAUNCH_FAILED},
  };
  for (size_t i = 0; i < sizeof rec / sizeof rec[0]; i++) {
    long c, p;
    int st, code;
    assert_int_equal(cairn__condor_parse_af(rec[i].line, &c, &p, &st, &code), 0);
    assert_int_equal(c, rec[i].cluster);
    assert_int_equal(p, rec[i].proc);
    assert_int_equal(st, rec[i].status);
    assert_int_equal(code, rec[i].code);
    assert_int_equal(cairn__condor_state(st, code), rec[i].state);
  }
  const char *bad[] = {"", "-- Schedd: submit.example.org", "4711 0", "4711 0 9 0", "x 0 1 0",
                       "4711 0 2 undefined extra", NULL};
  for (int i = 0; bad[i]; i++) {
    long c, p;
    int st, code;
    if (cairn__condor_parse_af(bad[i], &c, &p, &st, &code) == 0)
      fail_msg("'%s' was read as a job", bad[i]);
  }
}

int main(void) {
  if (access("/usr/bin/condor_submit", X_OK) != 0)
    printf("condor: submission, condor_q, condor_history and condor_rm are not exercised: "
           "HTCondor is not installed here (not packaged for this system); the submit "
           "description and recorded command output are checked instead\n");
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_quoting_round_trips),
    cmocka_unit_test(test_submit_description),
    cmocka_unit_test(test_batch_options),
    cmocka_unit_test(test_terse),
    cmocka_unit_test(test_queue_and_history_lines),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
