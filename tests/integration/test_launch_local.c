/* test_launch_local.c — `cairn launch local` (docs/launch.md) against a real
 * cairn-server, with real cairn-worker processes it starts:
 *   a 200-task DAG (one root, 199 children sleeping 0.3 s) completes on the
 *   launched workers; the pool grows past one and never past --max 4 (the
 *   factory's cairn-worker children counted from /proc every 100 ms); the
 *   master is killed and restarted on the same port mid-run and the job
 *   still completes; a worker SIGKILLed while work waits is replaced (a
 *   fifth worker appears before the DAG is done); after the work the pool goes back to --min 0 (idle
 *   exit); a second job then gets workers again (the factory resumed); a
 *   SIGTERM to the factory while they run leaves no worker process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define MAX_SEEN 256

typedef struct fixture {
  server_fixture s;
  char log[4200];
  pid_t factory;
  pid_t seen[MAX_SEEN]; /* every worker pid seen */
  int nseen, most;
} fixture;

/* The factory's cairn-worker children alive now (recorded in f->seen). */
static int count_workers(fixture *f) {
  DIR *d = opendir("/proc");
  int n = 0;
  for (struct dirent *e; d && (e = readdir(d));) {
    char path[300], buf[512];
    if (e->d_name[0] < '0' || e->d_name[0] > '9')
      continue;
    snprintf(path, sizeof path, "/proc/%s/stat", e->d_name);
    FILE *fp = fopen(path, "r");
    if (!fp)
      continue;
    size_t k = fread(buf, 1, sizeof buf - 1, fp);
    fclose(fp);
    buf[k] = '\0';
    char *close_paren = strrchr(buf, ')');
    int ppid = 0;
    char st;
    if (!close_paren || sscanf(close_paren + 2, "%c %d", &st, &ppid) != 2 ||
        ppid != f->factory || st == 'Z' || !strstr(buf, "(cairn-worker)"))
      continue;
    n++;
    pid_t pid = (pid_t)atoi(e->d_name);
    int known = 0;
    for (int i = 0; i < f->nseen; i++)
      known |= f->seen[i] == pid;
    if (!known && f->nseen < MAX_SEEN)
      f->seen[f->nseen++] = pid;
  }
  if (d)
    closedir(d);
  if (n > f->most)
    f->most = n;
  return n;
}

/* A job of n tasks (a root, n-1 children of it) of app sleep, each sleeping s. */
static void write_job(const char *path, const char *name, int n, const char *s) {
  FILE *fp = fopen(path, "w");
  assert_non_null(fp);
  /* short leases: the task of the worker the test kills is given again soon */
  fprintf(fp, "{\"name\": \"%s\", \"app\": \"sleep\", \"lease_seconds\": 6, \"tasks\": [",
          name);
  for (int i = 0; i < n; i++)
    fprintf(fp, "%s{\"id\": \"t%d\", \"args\": [\"%s\"]%s}", i ? ", " : "", i, s,
            i ? ", \"after\": [\"t0\"]" : "");
  fputs("]}\n", fp);
  fclose(fp);
}

static long long submit(fixture *f, const char *job) {
  char bin[4096], *out = NULL;
  harness_bin(bin, sizeof bin, "cairn");
  const char *argv[] = {bin, "submit", job, "--server", f->s.srv.url, NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  long long id = atoll(out);
  free(out);
  return id;
}

/* The job's state and tasks done. */
static const char *job_state(fixture *f, long long id, long long *done) {
  static char state[32];
  char path[64];
  json_t *o = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld", id);
  state[0] = '\0';
  if (harness_http(f->s.srv.url, "GET", path, ADMIN, NULL, 0, &o, NULL, NULL) == 200) {
    snprintf(state, sizeof state, "%s", json_string_value(json_object_get(o, "state")));
    *done = json_integer_value(json_object_get(json_object_get(o, "counts"), "done"));
  }
  json_decref(o);
  return state;
}

static void start_factory(fixture *f) {
  char bin[4096], tok[4200], wd[4200];
  harness_bin(bin, sizeof bin, "cairn");
  snprintf(tok, sizeof tok, "%s/admin-token", f->s.dir);
  snprintf(wd, sizeof wd, "%s/launch", f->s.dir);
  snprintf(f->log, sizeof f->log, "%s/launch.log", f->s.dir);
  assert_int_equal(harness_write_file(tok, ADMIN "\n"), 0);
  const char *argv[] = {bin, "launch", "local", "--server", f->s.srv.url, "--admin-token-file", tok,
                        "--min", "0", "--max", "4", "--idle-exit", "3", "--poll", "0.5",
                        "--work-dir", wd, "--worker-options",
                        "--app sleep=/bin/sleep --peer-listen off", NULL};
  unsetenv("CAIRN_ADMIN_TOKEN"); /* the token comes from the file */
  f->factory = harness_spawn(argv, f->log);
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  assert_true(f->factory > 0);
}

static void restart_master(fixture *f) {
  char listen[64];
  const char *port = strrchr(f->s.srv.url, ':') + 1;
  snprintf(listen, sizeof listen, "127.0.0.1:%s", port);
  server_fixture_stop(&f->s, SIGKILL);
  usleep(1500 * 1000); /* the factory's demand reads fail meanwhile */
  const char *extra[] = {"--listen", listen, NULL};
  assert_int_equal(server_fixture_restart(&f->s, extra), 0);
}

static void test_launch_local(void **state) {
  (void)state;
  fixture *f = calloc(1, sizeof *f);
  assert_non_null(f);
  assert_int_equal(server_fixture_open(&f->s, NULL, 1), 0);
  char job[4300], job2[4300];
  snprintf(job, sizeof job, "%s/dag.json", f->s.dir);
  snprintf(job2, sizeof job2, "%s/more.json", f->s.dir);
  write_job(job, "dag200", 200, "0.3");
  write_job(job2, "more", 40, "1");
  long long id = submit(f, job), done = 0;
  start_factory(f);

  /* the DAG completes on launched workers, across a master restart and a
   * worker killed while work waits */
  int restarted = 0, killed = 0;
  double until = harness_now() + 180;
  const char *st = "";
  while (harness_now() < until) {
    count_workers(f);
    st = job_state(f, id, &done);
    if (!strcmp(st, "done"))
      break;
    if (!killed && done >= 20 && count_workers(f) == 4) {
      kill(f->seen[0], SIGKILL);
      killed = 1;
    }
    if (!restarted && done >= 60) {
      restart_master(f);
      restarted = 1;
    }
    usleep(100 * 1000);
  }
  printf("dag200: %s, %lld done, at most %d workers, %d started\n", st, done, f->most, f->nseen);
  assert_string_equal(st, "done");
  assert_true(restarted);
  assert_true(killed);
  assert_true(f->nseen >= 5); /* the killed one was replaced */
  assert_true(f->most >= 2);
  assert_true(f->most <= 4);

  /* back to --min 0 once idle */
  until = harness_now() + 60;
  while (harness_now() < until && count_workers(f) > 0)
    usleep(100 * 1000);
  assert_int_equal(count_workers(f), 0);

  /* more work: the factory starts workers again; SIGTERM stops them all */
  int seen_before = f->nseen;
  long long id2 = submit(f, job2);
  until = harness_now() + 60;
  while (harness_now() < until && count_workers(f) < 2)
    usleep(100 * 1000);
  assert_true(count_workers(f) >= 2);
  (void)id2;
  kill(f->factory, SIGTERM);
  int status = harness_wait(f->factory, 30);
  assert_true(status >= 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  for (int i = 0; i < f->nseen; i++)
    assert_true(kill(f->seen[i], 0) != 0);
  char *out = NULL;
  const char *cat[] = {"/bin/cat", f->log, NULL};
  harness_run(cat, &out);
  printf("%s", out ? out : "");
  assert_non_null(out && strstr(out, "stopped "));
  assert_non_null(strstr(out, "the master answers again"));
  free(out);
  printf("second job: %d workers started; %d worker processes seen in all, none left\n",
         f->nseen - seen_before, f->nseen);
  server_fixture_stop(&f->s, SIGTERM);
  assert_int_equal(server_fixture_close(&f->s), 0);
  free(f);
}

/* Bad options get one clear line and exit 1, starting nothing. */
static void test_launch_bad_options(void **state) {
  (void)state;
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn");
  static const struct {
    const char *args[6];
    const char *says;
  } cases[] = {
    {{"nosuch", NULL}, "unknown backend \"nosuch\""},
    {{"local", "--max", "0", NULL}, "--max wants an integer from 1"},
    {{"local", "--min", "5", "--max", "2", NULL}, "--min 5 is more than --max 2"},
    {{"local", "--speed", "3", NULL}, "unknown option \"--speed\""},
    {{"local", "--idle-exit", "soon", NULL}, "--idle-exit wants a number"},
    {{"local", "--hosts", "a,b", NULL}, "unknown option \"--hosts\" for cairn launch local"},
    {{"ssh", NULL}, "no hosts"},
    {{"local", "--max", NULL}, "--max needs a value"},
  };
  char dir[4096], wd[4200];
  harness_tmpdir(dir, sizeof dir);
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
  snprintf(wd, sizeof wd, "%s/wd", dir);
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const char *argv[16] = {bin, "launch", cases[i].args[0], "--server", "http://127.0.0.1:9",
                            "--work-dir", wd};
    int n = 7;
    for (int k = 1; cases[i].args[k]; k++)
      argv[n++] = cases[i].args[k];
    argv[n] = NULL;
    char log[4300], *out = NULL;
    snprintf(log, sizeof log, "%s/out%zu", dir, i);
    pid_t pid = harness_spawn(argv, log);
    int st = harness_wait(pid, 30);
    const char *cat[] = {"/bin/cat", log, NULL};
    harness_run(cat, &out);
    printf("%s", out ? out : "");
    assert_true(st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1);
    assert_non_null(out && strstr(out, cases[i].says));
    free(out);
  }
  assert_int_equal(harness_rmtree(dir), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_launch_bad_options),
    cmocka_unit_test(test_launch_local),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
