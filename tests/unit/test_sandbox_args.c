/* test_sandbox_args.c — the bwrap command line of a task (worker/sandbox.h)
 * for given settings: namespaces, no capabilities, system directories bound
 * read-only or made again as symlinks, the /etc files, /proc, /dev and a
 * private /tmp before the binds, the volunteer's binds read-only or
 * read-write, the run's read-only binds, the program bound unless under a
 * system directory, the task directory read-write and the working directory,
 * the root read-only, the network only when asked and allowed, the arguments
 * after "--" after the reaper shell; the probe's reasons. Then the runner
 * (worker/runner.h) through a real bwrap, when it works here (else those
 * tests are skipped, saying why): CPU time of the program counted, a missing
 * program reported as NOEXEC, a death by signal named as such, the wall
 * limit killing the sandbox. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "worker/runner.h"
#include "worker/sandbox.h"

static cairn__sandbox host_like(void) {
  cairn__sandbox sb = {.bwrap = "/usr/bin/bwrap", .nsys = 3};
  snprintf(sb.sys[0].path, sizeof sb.sys[0].path, "/usr");
  snprintf(sb.sys[1].path, sizeof sb.sys[1].path, "/bin");
  snprintf(sb.sys[1].link, sizeof sb.sys[1].link, "usr/bin");
  snprintf(sb.sys[2].path, sizeof sb.sys[2].path, "/lib64");
  return sb;
}

static size_t count(const char **v) {
  size_t n = 0;
  while (v[n])
    n++;
  return n;
}

/* Index of the first (a, b[, c]) triple in v at or after from, or -1. */
static long find(const char **v, const char *a, const char *b, const char *c) {
  for (size_t i = 0; v[i]; i++)
    if (strcmp(v[i], a) == 0 && (!b || (v[i + 1] && strcmp(v[i + 1], b) == 0)) &&
        (!c || (v[i + 1] && v[i + 2] && strcmp(v[i + 2], c) == 0)))
      return (long)i;
  return -1;
}

static void test_flags_and_binds(void **state) {
  (void)state;
  cairn__sandbox sb = host_like();
  cairn__sandbox_bind binds[] = {{"/data/ref", 0}, {"/tmp/scratch", 1}};
  sb.binds = binds;
  sb.nbinds = 2;
  const char *ro[] = {"/srv/apps/x"};
  const char *args[] = {"in.txt", "--fast"};
  cairn__sandbox_task t = {"/w/run/slot-0", "/opt/app/prog", ro, 1, args, 2, 0};
  const char **v = cairn__sandbox_argv(&sb, &t);
  assert_non_null(v);
  assert_string_equal(v[0], "/usr/bin/bwrap");
  static const char *const flags[] = {"--die-with-parent", "--unshare-ipc", "--unshare-pid",
                                      "--as-pid-1", "--unshare-uts", "--unshare-cgroup-try",
                                      "--unshare-net"};
  long dashes = find(v, "--", NULL, NULL);
  assert_true(dashes > 0);
  for (size_t i = 0; i < sizeof flags / sizeof *flags; i++) {
    long at = find(v, flags[i], NULL, NULL);
    assert_true(at > 0 && at < dashes);
  }
  assert_true(find(v, "--cap-drop", "ALL", NULL) > 0);
  assert_true(find(v, "--ro-bind", "/usr", "/usr") > 0);
  assert_true(find(v, "--symlink", "usr/bin", "/bin") > 0);
  assert_true(find(v, "--ro-bind", "/lib64", "/lib64") > 0);
  assert_true(find(v, "--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache") > 0);
  assert_true(find(v, "--ro-bind-try", "/etc/passwd", "/etc/passwd") > 0);
  assert_int_equal(find(v, "--ro-bind-try", "/etc/shadow", NULL), -1);
  assert_int_equal(find(v, "--ro-bind", "/etc", NULL), -1);
  assert_true(find(v, "--proc", "/proc", NULL) > 0);
  long dev = find(v, "--dev", "/dev", NULL);
  assert_true(dev > 0);
  assert_true(find(v, "--dev-bind", "/dev/null", "/dev/tty") > dev); /* no terminal */
  long tmp = find(v, "--tmpfs", "/tmp", NULL);
  assert_true(tmp > 0);
  long scratch = find(v, "--bind", "/tmp/scratch", "/tmp/scratch");
  assert_true(scratch > tmp); /* a bind under /tmp after the tmpfs */
  assert_true(find(v, "--ro-bind", "/data/ref", "/data/ref") > tmp);
  assert_true(find(v, "--ro-bind", "/srv/apps/x", "/srv/apps/x") > 0);
  assert_true(find(v, "--ro-bind", "/opt/app/prog", "/opt/app/prog") > 0);
  long dir = find(v, "--bind", "/w/run/slot-0", "/w/run/slot-0");
  assert_true(dir > tmp && dir < dashes);
  long rootro = find(v, "--remount-ro", "/", NULL); /* after every mount point is made */
  assert_true(rootro > dir && rootro < dashes);
  assert_true(find(v, "--chdir", "/w/run/slot-0", NULL) > dir);
  /* nothing of the worker's DIR but the task directory, no host root */
  assert_int_equal(find(v, "--bind", "/w", NULL), -1);
  assert_int_equal(find(v, "--ro-bind", "/", NULL), -1);
  assert_int_equal(find(v, "--new-session", NULL, NULL), -1); /* the runner's group */
  /* the reaper shell as PID 1, then the program and its arguments */
  assert_string_equal(v[dashes + 1], CAIRN__SANDBOX_REAPER);
  assert_string_equal(v[dashes + 2], "-c");
  assert_string_equal(v[dashes + 3], CAIRN__SANDBOX_REAPER_SCRIPT);
  assert_string_equal(v[dashes + 4], "/opt/app/prog");
  assert_string_equal(v[dashes + 5], "in.txt");
  assert_string_equal(v[dashes + 6], "--fast");
  assert_int_equal(count(v), (size_t)dashes + 7);
  free(v);
}

static void test_network_only_when_asked_and_allowed(void **state) {
  (void)state;
  cairn__sandbox sb = host_like();
  cairn__sandbox_task t = {.dir = "/w/run/slot-1", .program = "/usr/bin/true", .network = 1};
  const char **v = cairn__sandbox_argv(&sb, &t); /* asked, not allowed */
  assert_true(find(v, "--unshare-net", NULL, NULL) > 0);
  free(v);
  sb.allow_network = 1;
  t.network = 0; /* allowed, not asked */
  v = cairn__sandbox_argv(&sb, &t);
  assert_true(find(v, "--unshare-net", NULL, NULL) > 0);
  free(v);
  t.network = 1; /* both */
  v = cairn__sandbox_argv(&sb, &t);
  assert_int_equal(find(v, "--unshare-net", NULL, NULL), -1);
  assert_true(find(v, "--unshare-pid", NULL, NULL) > 0);
  /* a program under /usr needs no bind of its own */
  assert_int_equal(find(v, "--ro-bind", "/usr/bin/true", NULL), -1);
  free(v);
}

static void test_bounds(void **state) {
  (void)state;
  cairn__sandbox sb = host_like();
  const char *ro[CAIRN__SANDBOX_MAX_RO + 1];
  for (size_t i = 0; i <= CAIRN__SANDBOX_MAX_RO; i++)
    ro[i] = "/srv/x";
  cairn__sandbox_task t = {"/w/run/slot-0", "/opt/p", ro, CAIRN__SANDBOX_MAX_RO + 1, NULL, 0, 0};
  assert_null(cairn__sandbox_argv(&sb, &t));
  t.nro = CAIRN__SANDBOX_MAX_RO;
  const char **v = cairn__sandbox_argv(&sb, &t);
  assert_non_null(v);
  free(v);
}

/* The start-up probe says why the sandbox does not work: bwrap missing,
 * or bwrap failing (its own message, else its status). */
static void test_probe_failures(void **state) {
  (void)state;
  cairn__sandbox sb = host_like();
  char why[400];
  sb.bwrap = "/nonexistent/bwrap";
  assert_int_equal(cairn__sandbox_probe(&sb, "/tmp", why, sizeof why), -1);
  printf("missing bwrap: %s\n", why);
  assert_non_null(strstr(why, "cannot run /nonexistent/bwrap: No such file or directory"));
  sb.bwrap = "/usr/bin/false";
  assert_int_equal(cairn__sandbox_probe(&sb, "/tmp", why, sizeof why), -1);
  printf("failing bwrap: %s\n", why);
  assert_non_null(strstr(why, "/usr/bin/false failed"));
  sb.bwrap = "/usr/bin/ls"; /* fails on bwrap's options, with a message of its own */
  assert_int_equal(cairn__sandbox_probe(&sb, "/tmp", why, sizeof why), -1);
  printf("bwrap with a message: %s\n", why);
  assert_non_null(strstr(why, "ls: "));
}

/* ---- the runner through a real bwrap ---- */

typedef struct rig {
  cairn__sandbox sb;
  char dir[64];
} rig;

static int rig_setup(void **state) {
  rig *r = calloc(1, sizeof *r);
  snprintf(r->dir, sizeof r->dir, "/tmp/cairn-sandbox-XXXXXX");
  if (!r || !mkdtemp(r->dir))
    return -1;
  cairn__sandbox_host(&r->sb);
  *state = r;
  return 0;
}

static int rig_teardown(void **state) {
  rig *r = *state;
  char path[128];
  snprintf(path, sizeof path, "%s/stderr", r->dir);
  unlink(path);
  rmdir(r->dir);
  free(r);
  return 0;
}

static void need_bwrap(rig *r) {
  char why[400];
  if (cairn__sandbox_probe(&r->sb, r->dir, why, sizeof why) != 0) {
    printf("skipped: the sandbox does not work here: %s\n", why);
    skip();
  }
}

static void run(rig *r, const char *path, const char *const *args, size_t nargs,
                const int64_t *limits, cairn__run_result *res) {
  cairn__run_spec spec = {.path = path, .args = args, .nargs = nargs, .dir = r->dir,
                          .max_output = 4096, .limits = limits, .sandbox = &r->sb};
  cairn_error err = {0};
  assert_int_equal(cairn__run(&spec, res, &err), CAIRN_OK);
}

static void test_run_counts_cpu_and_names_signals(void **state) {
  rig *r = *state;
  need_bwrap(r);
  cairn__run_result res;
  const char *burn[] = {"-c", "i=0; while [ $i -lt 300000 ]; do i=$((i+1)); done; echo $$"};
  run(r, "/usr/bin/sh", burn, 2, NULL, &res);
  printf("burn: exit %d, %.3f s CPU, output %.*s", res.exit_status, res.cpu_seconds,
         (int)res.output.len, res.output.data);
  assert_int_equal(res.exit_status, 0);
  assert_true(res.cpu_seconds > 0.05);               /* the program's time, through bwrap */
  assert_memory_equal(res.output.data, "2\n", 2);    /* PID 2 of its own namespace */
  cairn__buf_free(&res.output);
  const char *die[] = {"-c", "kill -9 $$"};
  run(r, "/usr/bin/sh", die, 2, NULL, &res);
  printf("kill -9: exit %d reason %s\n", res.exit_status, res.reason);
  assert_int_equal(res.exit_status, 137);
  assert_string_equal(res.reason, "signal 9");
  cairn__buf_free(&res.output);
}

static void test_run_noexec_and_wall(void **state) {
  rig *r = *state;
  need_bwrap(r);
  cairn__run_result res;
  run(r, "/nonexistent/prog", NULL, 0, NULL, &res);
  printf("missing: outcome %d note %s\n", res.outcome, res.note);
  assert_int_equal(res.outcome, CAIRN__RUN_NOEXEC);
  assert_int_equal(res.exit_status, 127);
  assert_non_null(strstr(res.note, "/nonexistent/prog"));
  cairn__buf_free(&res.output);
  int64_t limits[CAIRN_LIMIT_COUNT] = {[CAIRN_LIMIT_WALL] = 1};
  const char *hang[] = {"-c", "sleep 30 & sleep 30"};
  run(r, "/usr/bin/sh", hang, 2, limits, &res);
  printf("hang: outcome %d reason %s in %.2f s\n", res.outcome, res.reason, res.seconds);
  assert_int_equal(res.outcome, CAIRN__RUN_LIMIT);
  assert_string_equal(res.reason, "wall");
  assert_true(res.seconds < 5);
  cairn__buf_free(&res.output);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_flags_and_binds),
    cmocka_unit_test(test_network_only_when_asked_and_allowed),
    cmocka_unit_test(test_bounds),
    cmocka_unit_test(test_probe_failures),
    cmocka_unit_test_setup_teardown(test_run_counts_cpu_and_names_signals, rig_setup,
                                    rig_teardown),
    cmocka_unit_test_setup_teardown(test_run_noexec_and_wall, rig_setup, rig_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
