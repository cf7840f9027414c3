/* test_multiproject.c — one cairn-worker computing for two projects
 * (docs/worker.md, "Several projects"), with real processes on loopback:
 * two cairn-server masters on databases of their own, each with endless
 * equal CPU-bound tasks (a /bin/sh loop calibrated to burn about 0.5 s of
 * CPU), and one worker of 2 slots run with --project URL1=3 --project
 * URL2=1.
 *   shares     over 60 s, the CPU time the masters credit the worker with
 *              (their results' cpu_seconds) is 2.5 to 3.5 times as much
 *              for the first project as for the second; the worker's own
 *              report says the same of its usage;
 *   kill       the first master is killed (SIGKILL): from the worker's log
 *              (each task's start and end, with the monotonic clock, naming
 *              its project), the second project comes to run on both slots
 *              and the first on none, each slot going to the second within
 *              5 s (the longest a slot waits between two requests for work)
 *              of the end of the first project's task it ran (running tasks
 *              are not stopped: on a loaded machine they take longer); the
 *              results of its tasks that ended meanwhile wait for it;
 *   back       the first master is started again on the same database and
 *              port: those results are delivered, the first project
 *              catches up on what it missed, and over the whole run
 *              (before the kill, while it was away and 60 s after its
 *              return) its CPU time is again 2.5 to 3.5 times the second's.
 * Every figure is printed. About 2.5 minutes (ctest label "long").
 * A second test checks the state directory of each project
 * (DIR/projects/<id>, its own credentials) and the refusals of bad
 * project flags and configuration files (exit 2, naming the problem). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define WINDOW_S 60.0
#define TASKS 1500
#define MAX_SWITCH_MS 5000 /* the longest a slot waits between two requests for work */

static long long mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Iterations of the shell loop that burn about 0.5 s of CPU here. */
static long calibrate(void) {
  const long probe = 100000;
  char script[128];
  snprintf(script, sizeof script, "i=0; while [ $i -lt %ld ]; do i=$((i+1)); done", probe);
  struct rusage before, after;
  getrusage(RUSAGE_CHILDREN, &before);
  const char *argv[] = {"/bin/sh", "-c", script, NULL};
  assert_int_equal(harness_run(argv, NULL), 0);
  getrusage(RUSAGE_CHILDREN, &after);
  double cpu = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) +
               (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) / 1e6 +
               (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) +
               (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec) / 1e6;
  long iters = cpu > 0.001 ? (long)((double)probe * 0.5 / cpu) : probe * 5;
  if (iters < 20000)
    iters = 20000;
  if (iters > 20000000)
    iters = 20000000;
  printf("calibration: %ld iterations took %.3f s of CPU: %ld for 0.5 s\n", probe, cpu, iters);
  return iters;
}

/* Submits TASKS equal tasks of app sh burning iters iterations each. */
static void submit_burn(server_fixture *f, long iters) {
  size_t cap = TASKS * 128 + 256, n = 0;
  char *job = malloc(cap);
  assert_non_null(job);
  n += (size_t)snprintf(job + n, cap - n, "{\"name\": \"burn\", \"app\": \"sh\", \"tasks\": [");
  for (int i = 0; i < TASKS; i++)
    n += (size_t)snprintf(job + n, cap - n,
                          "%s{\"id\": \"b%d\", \"args\": [\"-c\", \"i=0; while [ $i -lt %ld ]; "
                          "do i=$((i+1)); done; echo $i\"]}", i ? ", " : "", i, iters);
  snprintf(job + n, cap - n, "]}");
  server_fixture_submit(f, job);
  free(job);
}

/* The CPU seconds f's master credits its volunteers with (results'
 * cpu_seconds, GET /v1/volunteers). */
static double credited_cpu(server_fixture *f) {
  json_t *r = server_fixture_get(f, "/v1/volunteers");
  json_t *list = json_object_get(r, "volunteers"), *v;
  size_t i;
  double sum = 0;
  json_array_foreach(list, i, v) sum += json_number_value(json_object_get(v, "cpu_seconds"));
  json_decref(r);
  return sum;
}

/* From the worker's log (each task's "[URL] task N start: ... mono_ms T"
 * and "... end: ..." lines, replayed in order): the monotonic ms (>=
 * after) at which project b first runs on both slots and project a on
 * none, or -1; *gap_ms the longest a slot freed by a task of a after
 * `after` waited for a task of b (the worker's own delay: a running task
 * is never stopped, however long it takes). */
static long long both_slots_at(const char *log, const char *a, const char *b, long long after,
                               long long *gap_ms) {
  FILE *fp = fopen(log, "r");
  char line[1024], ta[300], tb[300];
  int ra = 0, rb = 0;
  long long at = -1, freed[8];
  size_t nfreed = 0;
  snprintf(ta, sizeof ta, "[%s] task ", a);
  snprintf(tb, sizeof tb, "[%s] task ", b);
  *gap_ms = 0;
  while (fp && at < 0 && fgets(line, sizeof line, fp)) {
    const char *ms = strstr(line, "mono_ms ");
    int start = strstr(line, " start: job ") != NULL, end = strstr(line, " end: job ") != NULL;
    if (!ms || !(start || end))
      continue;
    long long t = atoll(ms + 8);
    if (strstr(line, ta)) {
      ra += start ? 1 : -1;
      if (end && t >= after && nfreed < 8)
        freed[nfreed++] = t;
    } else if (strstr(line, tb)) {
      rb += start ? 1 : -1;
      if (start && nfreed > 0) { /* the oldest slot freed by a goes to b */
        if (t - freed[0] > *gap_ms)
          *gap_ms = t - freed[0];
        memmove(freed, freed + 1, --nfreed * sizeof freed[0]);
      }
    }
    if (t >= after && ra == 0 && rb == 2)
      at = t;
  }
  if (fp)
    fclose(fp);
  return at;
}

/* The last "usage U s" the worker reported for project url (its log), or
 * -1. */
static double reported_usage(const char *log, const char *url) {
  FILE *fp = fopen(log, "r");
  char line[1024], tag[300];
  double u = -1;
  snprintf(tag, sizeof tag, "[%s] project share ", url);
  while (fp && fgets(line, sizeof line, fp)) {
    const char *p = strstr(line, tag), *q = p ? strstr(p, "usage ") : NULL;
    if (q)
      u = atof(q + 6);
  }
  if (fp)
    fclose(fp);
  return u;
}

static int log_has(const char *log, const char *what) {
  FILE *fp = fopen(log, "r");
  char line[2048];
  int found = 0;
  while (fp && !found && fgets(line, sizeof line, fp))
    found = strstr(line, what) != NULL;
  if (fp)
    fclose(fp);
  return found;
}

static void test_shares_kill_and_return(void **state) {
  (void)state;
  server_fixture f1, f2;
  assert_int_equal(server_fixture_open(&f1, NULL, 1), 0);
  assert_int_equal(server_fixture_open(&f2, NULL, 1), 0);
  long iters = calibrate();
  submit_burn(&f1, iters);
  submit_burn(&f2, iters);

  char bin[4096], dir[4200], log[4300], p1[300], p2[300], url1[256];
  snprintf(url1, sizeof url1, "%s", f1.srv.url);
  harness_bin(bin, sizeof bin, "cairn-worker");
  snprintf(dir, sizeof dir, "%s/w", f1.dir);
  snprintf(log, sizeof log, "%s/w.log", f1.dir);
  snprintf(p1, sizeof p1, "%s=3", f1.srv.url);
  snprintf(p2, sizeof p2, "%s=1", f2.srv.url);
  const char *argv[] = {bin, "--project", p1, "--project", p2, "--app", "sh=/bin/sh",
                        "--slots", "2", "--dir", dir, "--name", "w", "--peer-listen", "off",
                        "--log-level", "info", NULL};
  pid_t w = server_fixture_track(&f1, harness_spawn(argv, log));
  assert_true(w > 0);

  /* warm up: both masters have credited some work */
  double until = harness_now() + 30;
  while ((credited_cpu(&f1) <= 0 || credited_cpu(&f2) <= 0) && harness_now() < until)
    usleep(200000);
  assert_true(credited_cpu(&f1) > 0 && credited_cpu(&f2) > 0);

  /* shares: 60 s */
  double a0 = credited_cpu(&f1), b0 = credited_cpu(&f2);
  usleep((useconds_t)(WINDOW_S * 1e6));
  double a1 = credited_cpu(&f1), b1 = credited_cpu(&f2);
  double ratio1 = (a1 - a0) / (b1 - b0);
  printf("shares 3:1 over %.0f s: %.1f s and %.1f s of CPU credited, ratio %.2f\n", WINDOW_S,
         a1 - a0, b1 - b0, ratio1);
  assert_true(b1 - b0 > 0);
  assert_true(ratio1 >= 2.5 && ratio1 <= 3.5);

  /* kill: the second project takes every slot */
  long long kill_ms = mono_ms();
  assert_true(server_fixture_stop(&f1, SIGKILL) != -1);
  long long at = -1, gap = 0;
  until = harness_now() + 60;
  while ((at = both_slots_at(log, url1, f2.srv.url, kill_ms, &gap)) < 0 && harness_now() < until)
    usleep(100000);
  printf("first master killed: the second project ran on both slots %lld ms later; a slot "
         "its running task freed went to it within %lld ms\n", at >= 0 ? at - kill_ms : -1, gap);
  assert_true(at >= 0 && gap <= MAX_SWITCH_MS);
  while (harness_now() < (double)kill_ms / 1000 + 8) /* away for 8 s */
    usleep(100000);

  /* back on the same port: it catches up */
  char listen[64];
  snprintf(listen, sizeof listen, "127.0.0.1:%d", f1.port);
  const char *again[] = {"--listen", listen, NULL};
  assert_int_equal(server_fixture_restart(&f1, again), 0);
  assert_string_equal(f1.srv.url, url1);
  double away_s = (double)(mono_ms() - kill_ms) / 1000;
  double a2 = credited_cpu(&f1), b2 = credited_cpu(&f2);
  usleep((useconds_t)(WINDOW_S * 1e6));
  double a3 = credited_cpu(&f1), b3 = credited_cpu(&f2);
  double ratio2 = (a3 - a2) / (b3 - b2 > 0 ? b3 - b2 : 1e-9);
  double whole = (a3 - a0) / (b3 - b0);
  printf("while away (%.1f s): the second project got %.1f s of CPU credited, the first %.1f s (its "
         "results wait in the outbox)\n", away_s, b2 - b1, a2 - a1);
  printf("back for %.0f s: %.1f s and %.1f s, ratio %.2f (it catches up)\n", WINDOW_S, a3 - a2,
         b3 - b2, ratio2);
  printf("whole run (before, away, back): %.1f s and %.1f s, ratio %.2f\n", a3 - a0, b3 - b0,
         whole);
  double u1 = reported_usage(log, url1), u2 = reported_usage(log, f2.srv.url);
  printf("the worker's last report: usage %.1f s and %.1f s, ratio %.2f\n", u1, u2,
         u2 > 0 ? u1 / u2 : -1);
  assert_true(ratio2 >= 2.5);
  assert_true(whole >= 2.5 && whole <= 3.5);
  assert_true(log_has(log, "waits for its master"));
  assert_true(log_has(log, "after its master came back"));
  assert_true(log_has(log, "answers again"));

  kill(w, SIGTERM);
  int st = harness_wait(w, 30);
  server_fixture_reaped(&f1, w);
  assert_true(st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
  char tag[300];
  snprintf(tag, sizeof tag, "cairn-worker: project %s share 3: ", url1);
  assert_true(log_has(log, tag));
  snprintf(tag, sizeof tag, "cairn-worker: project %s share 1: ", f2.srv.url);
  assert_true(log_has(log, tag));
  assert_int_equal(server_fixture_close(&f2), 0);
  assert_int_equal(server_fixture_close(&f1), 0);
}

/* Runs cairn-worker with args (after the binary) and its log; its exit
 * status (-1 when it did not end within 30 s). */
static int run_worker(const char *const *args, const char *log) {
  char bin[4096];
  const char *argv[40] = {bin};
  harness_bin(bin, sizeof bin, "cairn-worker");
  int n = 1;
  for (int i = 0; args[i] && n < 39; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  pid_t pid = harness_spawn(argv, log);
  int st = harness_wait(pid, 30);
  return st != -1 && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void test_state_dirs_and_refusals(void **state) {
  (void)state;
  server_fixture f1, f2;
  assert_int_equal(server_fixture_open(&f1, NULL, 1), 0);
  assert_int_equal(server_fixture_open(&f2, NULL, 1), 0);
  char dir[4200], log[4300], conf[4300], text[1024];
  snprintf(dir, sizeof dir, "%s/w", f1.dir);
  snprintf(log, sizeof log, "%s/w.log", f1.dir);
  snprintf(conf, sizeof conf, "%s/projects.conf", f1.dir);
  /* a configuration file: the second project, with a comment; the first by a flag */
  snprintf(text, sizeof text, "# my projects\n\nproject %s/ share=1\n", f2.srv.url);
  assert_int_equal(harness_write_file(conf, text), 0);
  const char *args[] = {"--project", f1.srv.url, "--config", conf, "--app", "sh=/bin/sh",
                        "--dir", dir, "--peer-listen", "off", "--exit-when-idle", "2",
                        "--log-level", "info", NULL};
  assert_int_equal(run_worker(args, log), 0);
  /* each in DIR/projects/<the first 16 hex digits of the SHA-256 of its URL> */
  const char *urls[] = {f1.srv.url, f2.srv.url};
  for (int k = 0; k < 2; k++) {
    char hex[65], path[4400];
    cairn__sha256_hex(urls[k], strlen(urls[k]), hex);
    hex[16] = '\0';
    snprintf(path, sizeof path, "%s/projects/%s/credentials.json", dir, hex);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    snprintf(path, sizeof path, "%s/projects/%s/cache", dir, hex);
    assert_int_equal(stat(path, &st), 0);
  }
  struct stat st;
  char top[4400];
  snprintf(top, sizeof top, "%s/credentials.json", dir); /* not the one-project layout */
  assert_int_equal(stat(top, &st), -1);
  assert_true(log_has(log, "resource share 100")); /* the flag's default */
  assert_true(log_has(log, "resource share 1"));
  /* refusals: exit 2 naming the problem */
  struct {
    const char *conf;  /* a configuration file's text, or NULL */
    const char *flag1, *flag2;
    const char *says;
  } bad[] = {
    {NULL, "--project", "http://127.0.0.1:1=x", "the share must be from 0 to 1000000"},
    {NULL, "--project", "http://127.0.0.1:1=1000001", "the share must be"},
    {NULL, "--server", "http://127.0.0.1:1", "not both"},
    {NULL, "--project-key", "AAAA", "give each project its project key"},
    {"project http://127.0.0.1:1 colour=blue\n", NULL, NULL, ":1: unknown setting \"colour\""},
    {"\nserver http://127.0.0.1:1\n", NULL, NULL, ":2: a line starts with \"project\""},
    {"project http://127.0.0.1:1 share=-1\n", NULL, NULL, ":1: share must be from 0"},
    {"# nothing\n", NULL, NULL, "no project line"},
    {"project ftp://127.0.0.1:1\n", NULL, NULL, "must start with http:// or https://"},
    {"project http://127.0.0.1:1\nproject http://127.0.0.1:1/\n", NULL, NULL, "listed twice"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char blog[4300];
    snprintf(blog, sizeof blog, "%s/bad%zu.log", f1.dir, i);
    const char *a[16] = {"--app", "sh=/bin/sh", "--dir", dir};
    int n = 4;
    if (bad[i].conf) {
      assert_int_equal(harness_write_file(conf, bad[i].conf), 0);
      a[n++] = "--config";
      a[n++] = conf;
    } else {
      a[n++] = "--project";
      a[n++] = "http://127.0.0.1:2=2";
      a[n++] = bad[i].flag1;
      a[n++] = bad[i].flag2;
    }
    a[n] = NULL;
    int rc = run_worker(a, blog);
    if (rc != 2 || !log_has(blog, bad[i].says))
      fail_msg("case %zu: exit %d, wanted 2 and \"%s\" in %s", i, rc, bad[i].says, blog);
  }
  assert_int_equal(server_fixture_close(&f2), 0);
  assert_int_equal(server_fixture_close(&f1), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_state_dirs_and_refusals),
    cmocka_unit_test(test_shares_kill_and_return),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
