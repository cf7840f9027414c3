/* test_sandbox.c — a hostile task cannot get out of the worker's sandbox
 * (worker/sandbox.h, docs/security.md "The task sandbox").
 *
 * A real master and real cairn-worker processes, run as an unprivileged
 * user (65534, through setpriv) with their own $HOME, run cairn-app-hostile
 * as a task. From inside its task the app tries to
 *   1. read the worker's DIR/credentials.json,
 *   2. read a secret file in the worker's $HOME,
 *   3. create a file next to credentials.json,
 *   4. connect to the master's TCP port on 127.0.0.1,
 *   5. see a process of the worker's user in /proc and send it SIGTERM,
 *   6. gain root through a setuid-root copy of cairn-app-euid (bound into
 *      the sandbox with --sandbox-bind),
 * and prints what it got. In the sandbox (the default) every attempt fails,
 * and nothing changed on the host (no file planted, the process alive);
 * the same task on a worker started with --no-sandbox succeeds at each, so
 * the test shows the sandbox, not the machine. Then the network: a job
 * asking "network": true connects to the master from a worker started
 * with --allow-network, and not from one without it; a job not asking has
 * no network even there. GET /v1/volunteers shows each worker's "sandbox".
 *
 * The worker folders and $HOME are under /var/tmp, not /tmp: the sandbox
 * has a /tmp of its own, and the attempts must aim at the host's paths.
 * Needs root (to run the workers as another user, to make the setuid
 * helper), setpriv and a working bubblewrap; without them it says why and
 * exits 77 (skipped). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define WAIT_S 60.0
#define NOBODY 65534
#define SETPRIV "/usr/bin/setpriv"
#define BWRAP "/usr/bin/bwrap"

static const char *const attempts[] = {"read_credentials", "read_home", "write_outside",
                                       "connect_master", "list_processes", "signal_process",
                                       "setuid"};
#define NATTEMPTS (sizeof attempts / sizeof *attempts)

typedef struct fixture {
  server_fixture s;
  char base[64];      /* /var/tmp/cairn-sandbox-XXXXXX: workers' folders, home, suid/ */
  char home[128], secret[160], suid_dir[128], suid[160];
} fixture;

static void chown_nobody(const char *path) {
  assert_int_equal(chown(path, NOBODY, NOBODY), 0);
}

/* Copies cairn-app-euid to f->suid, owned by root, mode 4755. */
static void make_suid(fixture *f) {
  char src[4096];
  harness_bin(src, sizeof src, "cairn-app-euid");
  const char *cp[] = {"/bin/cp", src, f->suid, NULL};
  assert_int_equal(harness_run(cp, NULL), 0);
  assert_int_equal(chown(f->suid, 0, 0), 0);
  assert_int_equal(chmod(f->suid, 04755), 0);
}

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f || server_fixture_open(&f->s, NULL, 1))
    return -1;
  snprintf(f->base, sizeof f->base, "/var/tmp/cairn-sandbox-XXXXXX");
  if (!mkdtemp(f->base) || chmod(f->base, 0755) != 0)
    return -1;
  snprintf(f->home, sizeof f->home, "%s/home", f->base);
  snprintf(f->secret, sizeof f->secret, "%s/secret", f->home);
  snprintf(f->suid_dir, sizeof f->suid_dir, "%s/suid", f->base);
  snprintf(f->suid, sizeof f->suid, "%s/euid", f->suid_dir);
  if (mkdir(f->home, 0700) != 0 || mkdir(f->suid_dir, 0755) != 0 ||
      harness_write_file(f->secret, "the volunteer's own secret\n") != 0)
    return -1;
  chmod(f->secret, 0600);
  chown_nobody(f->home);
  chown_nobody(f->secret);
  make_suid(f);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  int rc = server_fixture_close(&f->s);
  if (harness_rmtree(f->base) != 0)
    rc = -1;
  free(f);
  return rc;
}

/* Starts worker name as user 65534 with $HOME f->home, its folder
 * f->base/name owned by that user, with args; its pid. */
static pid_t start_worker(fixture *f, const char *name, const char *const *args) {
  char bin[4096], app[4200], wdir[256], log[4400];
  harness_bin(bin, sizeof bin, "cairn-worker");
  harness_bin(app, sizeof app, "cairn-app-hostile");
  char appflag[4300];
  snprintf(appflag, sizeof appflag, "hostile=%s", app);
  snprintf(wdir, sizeof wdir, "%s/%s", f->base, name);
  snprintf(log, sizeof log, "%s/%s.log", f->s.dir, name);
  assert_int_equal(mkdir(wdir, 0700), 0);
  chown_nobody(wdir);
  const char *argv[40] = {SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                          bin, "--server", f->s.srv.url, "--dir", wdir, "--name", name,
                          "--app", appflag, "--slots", "1", "--peer-listen", "off",
                          "--log-level", "info"};
  int n = 20;
  for (int i = 0; args && args[i] && n < 39; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
  setenv("HOME", f->home, 1);
  pid_t pid = harness_spawn(argv, log);
  if (old_home)
    setenv("HOME", old_home, 1);
  else
    unsetenv("HOME");
  free(old_home);
  assert_true(pid > 0);
  return server_fixture_track(&f->s, pid);
}

static void stop_worker(fixture *f, pid_t pid) {
  kill(pid, SIGTERM);
  int ws = harness_wait(pid, 20);
  server_fixture_reaped(&f->s, pid);
  assert_true(WIFEXITED(ws) && WEXITSTATUS(ws) == 0);
}

/* Submits job (JSON) and waits until its one task "t" has ended; returns
 * its output (malloc'd). */
static char *run_task(fixture *f, const char *job) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->s.srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), &r,
                                NULL, NULL), 201);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", id);
  for (double t0 = harness_now(); harness_now() - t0 < WAIT_S; usleep(100 * 1000)) {
    json_t *t = NULL;
    assert_int_equal(harness_http(f->s.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
    t = json_array_get(json_object_get(r, "tasks"), 0);
    const char *state = json_string_value(json_object_get(t, "state"));
    if (state && (strcmp(state, "done") == 0 || strcmp(state, "failed") == 0)) {
      const char *out = json_string_value(json_object_get(t, "output"));
      char *copy = strdup(out ? out : "");
      if (strcmp(state, "done") != 0)
        fail_msg("job %lld: task %s: %s", id, state, copy);
      json_decref(r);
      return copy;
    }
    json_decref(r);
  }
  fail_msg("job %lld not finished within %.0f s", id, WAIT_S);
  return NULL;
}

/* 1 when out says "name: ok", 0 for "name: denied"; fails otherwise. */
static int got(const char *out, const char *name) {
  char ok[64], denied[64];
  snprintf(ok, sizeof ok, "%s: ok", name);
  snprintf(denied, sizeof denied, "%s: denied", name);
  if (strstr(out, ok))
    return 1;
  if (!strstr(out, denied))
    fail_msg("no line for %s in:\n%s", name, out);
  return 0;
}

/* A process of user 65534 that waits to be signalled. */
static pid_t start_sleeper(void) {
  pid_t pid = fork();
  assert_true(pid >= 0);
  if (pid == 0) {
    if (setgid(NOBODY) != 0 || setuid(NOBODY) != 0)
      _exit(1);
    for (;;)
      pause();
  }
  return pid;
}

static char *probe(fixture *f, const char *name, pid_t sleeper, char *outside, size_t cap) {
  char cred[300], job[2048];
  snprintf(cred, sizeof cred, "%s/%s/credentials.json", f->base, name);
  snprintf(outside, cap, "%s/%s/planted", f->base, name);
  snprintf(job, sizeof job,
           "{\"app\": \"hostile\", \"max_attempts\": 1, \"tasks\": [{\"id\": \"t\", \"args\": "
           "[\"probe\", \"%s\", \"%s\", \"%s\", \"%d\", \"%ld\", \"%s\"]}]}",
           cred, f->secret, outside, f->s.port, (long)sleeper, f->suid);
  char *out = run_task(f, job);
  printf("%s:\n%s", name, out);
  return out;
}

/* The "sandbox" GET /v1/volunteers shows for volunteer name. */
static void assert_volunteer_sandbox(fixture *f, const char *name, const char *want) {
  json_t *r = NULL, *v;
  size_t i;
  int seen = 0;
  assert_int_equal(harness_http(f->s.srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  json_array_foreach(json_object_get(r, "volunteers"), i, v) {
    if (strcmp(json_string_value(json_object_get(v, "name")), name) != 0)
      continue;
    seen = 1;
    const char *s = json_string_value(json_object_get(v, "sandbox"));
    printf("volunteer %s: sandbox %s\n", name, s ? s : "(null)");
    assert_non_null(s);
    assert_string_equal(s, want);
  }
  json_decref(r);
  assert_true(seen);
}

static void test_hostile_task(void **state) {
  fixture *f = *state;
  char outside[300];
  /* in the sandbox: the helper's folder is bound, read-only, as a volunteer would */
  const char *sandboxed[] = {"--sandbox-bind", f->suid_dir, NULL};
  pid_t w = start_worker(f, "w-sandbox", sandboxed);
  pid_t sleeper = start_sleeper();
  char *out = probe(f, "w-sandbox", sleeper, outside, sizeof outside);
  for (size_t i = 0; i < NATTEMPTS; i++)
    if (got(out, attempts[i]))
      fail_msg("in the sandbox the task could %s", attempts[i]);
  assert_true(strstr(out, "(euid 65534 uid 65534)") != NULL ||
              strstr(out, "setuid: denied") != NULL);
  assert_int_equal(access(outside, F_OK), -1);             /* nothing planted on the host */
  assert_int_equal(waitpid(sleeper, NULL, WNOHANG), 0);    /* the process lives */
  assert_volunteer_sandbox(f, "w-sandbox", "bwrap");
  free(out);
  stop_worker(f, w);

  /* the same task, unsandboxed: every attempt works, so the machine allows them */
  const char *open[] = {"--no-sandbox", NULL};
  w = start_worker(f, "w-open", open);
  out = probe(f, "w-open", sleeper, outside, sizeof outside);
  for (size_t i = 0; i < NATTEMPTS; i++)
    if (!got(out, attempts[i]))
      fail_msg("without the sandbox the task could not %s: the test proves nothing here",
               attempts[i]);
  assert_int_equal(access(outside, F_OK), 0);
  int st = harness_wait(sleeper, 5);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGTERM);
  assert_volunteer_sandbox(f, "w-open", "none");
  free(out);
  stop_worker(f, w);
}

static int connects(fixture *f, int ask) {
  char job[256];
  snprintf(job, sizeof job,
           "{\"app\": \"hostile\", \"max_attempts\": 1, %s\"tasks\": [{\"id\": \"t\", "
           "\"args\": [\"connect\", \"%d\"]}]}", ask ? "\"network\": true, " : "", f->s.port);
  char *out = run_task(f, job);
  int ok = got(out, "connect_master");
  printf("  job %s \"network\": %s", ask ? "with" : "without", out);
  free(out);
  return ok;
}

static void test_network(void **state) {
  fixture *f = *state;
  const char *allow[] = {"--allow-network", NULL};
  pid_t w = start_worker(f, "w-net", allow);
  printf("worker with --allow-network:\n");
  assert_true(connects(f, 1));
  assert_false(connects(f, 0));
  stop_worker(f, w);
  w = start_worker(f, "w-nonet", NULL);
  printf("worker without --allow-network:\n");
  assert_false(connects(f, 1));
  assert_false(connects(f, 0));
  stop_worker(f, w);
}

/* Why this machine cannot run the test, or NULL. */
static const char *cannot_run(void) {
  static char why[256];
  struct statvfs vfs;
  if (geteuid() != 0)
    return "needs root: the workers run as user 65534 and the setuid helper is owned by root";
  if (access(SETPRIV, X_OK) != 0)
    return SETPRIV " is missing (util-linux)";
  if (access(BWRAP, X_OK) != 0)
    return BWRAP " is missing: apt install bubblewrap";
  if (statvfs("/var/tmp", &vfs) != 0 || (vfs.f_flag & ST_NOSUID))
    return "/var/tmp is mounted nosuid: the unsandboxed setuid attempt could not succeed";
  const char *argv[] = {SETPRIV, "--reuid=65534", "--regid=65534", "--clear-groups", "--",
                        BWRAP, "--unshare-pid", "--unshare-net", "--ro-bind", "/", "/",
                        "/bin/true", NULL};
  int st = harness_run(argv, NULL);
  if (st != 0) {
    snprintf(why, sizeof why, "bwrap cannot make namespaces as an unprivileged user here "
             "(status %d; user namespaces disabled? see its message above)", st);
    return why;
  }
  return NULL;
}

int main(void) {
  const char *why = cannot_run();
  if (why) {
    printf("test_sandbox: skipped: %s\n", why);
    return 77;
  }
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_hostile_task, setup, teardown),
    cmocka_unit_test_setup_teardown(test_network, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
