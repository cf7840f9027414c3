/* test_checkpoint.c — long tasks survive their worker's death and report
 * their progress (docs/worker.md, "Checkpoints and progress"), with a real
 * cairn-server and real cairn-worker processes running cairn-app-ckpt
 * (30 s of work, a checkpoint a second in its task directory, going on
 * from it when CAIRN_RESUMED=1) and /bin/sh.
 *
 * A worker killed with SIGKILL half way through and started again on the
 * same folder finishes the task on the same volunteer, with the same
 * index, in less than 1.3 times the task's own work (the app's count); a
 * task whose lease ran out while its worker was down is dropped without
 * running (by the record's clock, or because the master says so) and the
 * worker gets it again from the start under a new index; an app's progress
 * reaches GET /v1/jobs/{id}/tasks/{key}, the task list and cairn status,
 * its bad values ignored; malformed "progress" in a heartbeat is refused
 * with 400 and changes nothing; a callback app (a worker in this process)
 * reports its progress through cairn_task_progress() and, its worker
 * stopped and started again, is called again with task->resumed in the
 * directory it left. Prints the work ratio. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <math.h>
#include <pthread.h>

#include "cairn/worker.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN
#define WORK 30 /* seconds of work of the long task */
#define SHORT 8 /* seconds of work of a task whose lease runs out */

typedef server_fixture fixture;

static pid_t start_worker(fixture *f, const char *name) {
  char app[4200], appbin[4096];
  harness_bin(appbin, sizeof appbin, "cairn-app-ckpt");
  snprintf(app, sizeof app, "ckpt=%s", appbin);
  const char *args[] = {"--app", app, "--app", "sh=/bin/sh", "--slots", "1", "--log-level",
                        "info", NULL};
  pid_t pid = server_fixture_worker(f, name, args);
  assert_true(pid > 0);
  return pid;
}

static void kill9(fixture *f, pid_t pid) {
  assert_int_equal(kill(pid, SIGKILL), 0);
  assert_int_equal(waitpid(pid, NULL, 0), pid);
  server_fixture_reaped(f, pid);
}

/* The job's only task's entry of GET /v1/jobs/{job}/tasks (caller decrefs). */
static json_t *entry(fixture *f, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  json_t *r = server_fixture_get(f, path), *t = json_array_get(json_object_get(r, "tasks"), 0);
  assert_non_null(t);
  json_incref(t);
  json_decref(r);
  return t;
}

/* GET /v1/jobs/{job}/tasks/{key} of the job's only task (caller decrefs). */
static json_t *detail(fixture *f, long long job) {
  json_t *t = entry(f, job);
  char path[96];
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", job,
           (long long)json_integer_value(json_object_get(t, "key")));
  json_decref(t);
  return server_fixture_get(f, path);
}

/* The attempt of d's history still leased (index and volunteer), 0 if none. */
static long long leased(json_t *d, long long *vol) {
  json_t *h;
  size_t i;
  json_array_foreach(json_object_get(d, "history"), i, h) {
    if (strcmp(json_string_value(json_object_get(h, "lease")), "leased") == 0) {
      if (vol)
        *vol = (long long)json_integer_value(json_object_get(h, "volunteer"));
      return (long long)json_integer_value(json_object_get(h, "index"));
    }
  }
  return 0;
}

static const char *wait_state(fixture *f, long long job, const char *want, double timeout) {
  static char state[32];
  for (double until = harness_now() + timeout;; usleep(100 * 1000)) {
    json_t *t = entry(f, job);
    snprintf(state, sizeof state, "%s", json_string_value(json_object_get(t, "state")));
    json_decref(t);
    if (strcmp(state, want) == 0 || harness_now() > until)
      return state;
  }
}

/* Seconds done in the checkpoint of worker name's slot 0 (-1: none yet). */
static long ckpt_done(fixture *f, const char *name) {
  char path[4400];
  long done = -1, performed, runs;
  snprintf(path, sizeof path, "%s/%s/run/slot-0/ckpt", f->dir, name);
  FILE *fp = fopen(path, "r");
  if (fp && fscanf(fp, "%ld %ld %ld", &done, &performed, &runs) != 3)
    done = -1;
  if (fp)
    fclose(fp);
  return done;
}

static void wait_ckpt(fixture *f, const char *name, long done, double timeout) {
  for (double until = harness_now() + timeout; ckpt_done(f, name) < done; usleep(100 * 1000))
    if (harness_now() > until)
      fail_msg("worker %s: the app's checkpoint did not reach %ld s", name, done);
}

/* 1 when worker name's log holds text. */
static int log_has(fixture *f, const char *name, const char *text) {
  char path[4400], *buf = NULL;
  size_t cap = 0;
  snprintf(path, sizeof path, "%s/%s.log", f->dir, name);
  FILE *fp = fopen(path, "r");
  int found = 0;
  while (fp && !found && getline(&buf, &cap, fp) > 0)
    found = strstr(buf, text) != NULL;
  free(buf);
  if (fp)
    fclose(fp);
  return found;
}

/* The output of the job's done task, checked: "done WORK performed P runs R
 * resumed X"; returns P, sets *runs and *resumed. */
static long result_of(fixture *f, long long job, long work, long long *index, long long *vol,
                      long *runs, int *resumed) {
  json_t *t = entry(f, job);
  long done = -1, performed = -1;
  const char *out = json_string_value(json_object_get(t, "output"));
  assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
  assert_non_null(out);
  fprintf(stderr, "  result: %s", out);
  assert_int_equal(sscanf(out, "done %ld performed %ld runs %ld resumed %d", &done, &performed,
                          runs, resumed), 4);
  assert_int_equal(done, work);
  assert_null(json_object_get(t, "progress")); /* no lease out: no progress */
  *index = (long long)json_integer_value(json_object_get(t, "index"));
  *vol = (long long)json_integer_value(json_object_get(t, "volunteer"));
  json_decref(t);
  return performed;
}

static char job_text[512];

static const char *ckpt_job(int lease_seconds, int work) {
  snprintf(job_text, sizeof job_text, "{\"name\": \"ckpt\", \"app\": \"ckpt\", \"policy\": "
           "\"fifo\", \"lease_seconds\": %d, \"max_attempts\": 5, \"tasks\": [{\"id\": \"long\", "
           "\"args\": [\"%d\"]}]}", lease_seconds, work);
  return job_text;
}

/* Killed half way, started again: the same volunteer and index finish it,
 * with little more work than the task's own. */
static void test_resumed_after_kill(void **state) {
  fixture *f = *state;
  /* a lease of 12 s (heartbeats every 4 s) outlives the restart, but not
   * the 15 s left after it: the heartbeats keep the resumed task's lease */
  long long job = server_fixture_submit(f, ckpt_job(12, WORK));
  pid_t w = start_worker(f, "w1");
  assert_string_equal(wait_state(f, job, "running", 30), "running");
  json_t *d = detail(f, job);
  long long vol0 = 0, index0 = leased(d, &vol0);
  json_decref(d);
  assert_true(index0 > 0);
  /* the app's progress arrives with the heartbeats */
  double seen = -1;
  for (double until = harness_now() + 25; seen < 0 && harness_now() < until; usleep(200 * 1000)) {
    d = detail(f, job);
    json_t *p = json_object_get(d, "progress");
    seen = json_is_number(p) ? json_number_value(p) : -1;
    json_decref(d);
  }
  fprintf(stderr, "  progress shown while it runs: %.4f\n", seen);
  assert_true(seen > 0 && seen < 1);
  wait_ckpt(f, "w1", WORK / 2, 40);
  kill9(f, w);
  long at_kill = ckpt_done(f, "w1");
  char rec[4400];
  struct stat st;
  snprintf(rec, sizeof rec, "%s/w1/run/slot-0.task", f->dir);
  assert_int_equal(stat(rec, &st), 0); /* the record outlived the worker */
  fprintf(stderr, "  worker killed at %ld s of %d; started again\n", at_kill, WORK);
  double t_restart = harness_now();
  w = start_worker(f, "w1");
  assert_string_equal(wait_state(f, job, "done", 90), "done");
  double after = harness_now() - t_restart;
  long long index = 0, vol = 0;
  long runs = 0;
  int resumed = 0;
  long performed = result_of(f, job, WORK, &index, &vol, &runs, &resumed);
  fprintf(stderr, "  work performed %ld s for a %d s task: ratio %.3f (index %lld, volunteer "
          "%lld; before the kill: index %lld, volunteer %lld)\n", performed, WORK,
          (double)performed / WORK, index, vol, index0, vol0);
  fprintf(stderr, "  from the restart to the result: %.1f s (%ld s of work were left)\n", after,
          WORK - at_kill);
  assert_true(performed * 10 < WORK * 13);
  assert_int_equal(runs, 2);
  assert_int_equal(resumed, 1);
  assert_int_equal(index, index0);
  assert_int_equal(vol, vol0);
  d = detail(f, job);
  assert_int_equal(json_array_size(json_object_get(d, "history")), 1); /* one allocation */
  json_decref(d);
  assert_true(log_has(f, "w1", "still leases it to this volunteer: resumed"));
  assert_int_not_equal(stat(rec, &st), 0); /* its record went with the task */
}

/* Killed, and its lease runs out before it is started again: by the
 * record's clock the task is dropped without asking; when the record says
 * otherwise, the master says no. Either way the worker gets the task
 * again under a new index and runs it from the start. */
static void expired(fixture *f, const char *name, int fresh_record) {
  long long job = server_fixture_submit(f, ckpt_job(3, SHORT));
  pid_t w = start_worker(f, name);
  wait_ckpt(f, name, 2, 30);
  json_t *d = detail(f, job);
  long long index0 = leased(d, NULL);
  json_decref(d);
  assert_true(index0 > 0);
  kill9(f, w);
  /* the master lets the lease expire */
  for (double until = harness_now() + 20;; usleep(200 * 1000)) {
    d = detail(f, job);
    long long still = leased(d, NULL);
    json_decref(d);
    if (!still)
      break;
    if (harness_now() > until)
      fail_msg("lease %lld did not expire", index0);
  }
  char rec[4400];
  snprintf(rec, sizeof rec, "%s/%s/run/slot-0.task", f->dir, name);
  if (fresh_record) /* its clock says the lease may still hold: the master decides */
    assert_int_equal(utimensat(AT_FDCWD, rec, NULL, 0), 0);
  else
    sleep(2); /* past the record's lease time too */
  w = start_worker(f, name);
  assert_string_equal(wait_state(f, job, "done", 90), "done");
  long long index = 0, vol = 0;
  long runs = 0;
  int resumed = 0;
  long performed = result_of(f, job, SHORT, &index, &vol, &runs, &resumed);
  assert_int_equal(runs, 1); /* the old directory and checkpoint were not used */
  assert_int_equal(resumed, 0);
  assert_int_equal(performed, SHORT);
  assert_true(index != index0);
  assert_true(log_has(f, name, fresh_record
                                 ? "the master no longer leases it to this volunteer: dropped "
                                   "without running"
                                 : "its lease ran out while the worker was away: dropped "
                                   "without running"));
  assert_false(log_has(f, name, "resumed in its directory"));
}

static void test_expired_by_record(void **state) { expired(*state, "w2", 0); }
static void test_expired_by_master(void **state) { expired(*state, "w3", 1); }

/* An app writes 0.5 to $CAIRN_PROGRESS_FILE, then garbage, 7, -1: 0.5 is
 * shown and stays. */
static void test_progress_shown(void **state) {
  fixture *f = *state;
  long long job = server_fixture_submit(
    f, "{\"name\": \"progress\", \"app\": \"sh\", \"lease_seconds\": 3, \"tasks\": [{\"id\": "
       "\"p\", \"args\": [\"-c\", \"printf 0.5 > \\\"$CAIRN_PROGRESS_FILE\\\"; sleep 5; "
       "echo garbage > \\\"$CAIRN_PROGRESS_FILE\\\"; sleep 2; echo 7 > "
       "\\\"$CAIRN_PROGRESS_FILE\\\"; sleep 2; echo -1 > \\\"$CAIRN_PROGRESS_FILE\\\"; sleep 2; "
       "head -c 100000 /dev/zero > \\\"$CAIRN_PROGRESS_FILE\\\"; sleep 2; echo ok\"]}]}");
  pid_t w = start_worker(f, "w4");
  (void)w;
  double first = -1, t0 = harness_now();
  int samples = 0;
  for (;;) {
    json_t *t = entry(f, job), *p = json_object_get(t, "progress");
    int done = strcmp(json_string_value(json_object_get(t, "state")), "done") == 0;
    if (json_is_number(p)) {
      if (first < 0) {
        first = harness_now() - t0;
        json_t *d = detail(f, job);
        assert_true(json_number_value(json_object_get(d, "progress")) == 0.5);
        json_t *h = json_array_get(json_object_get(d, "history"), 0);
        assert_true(json_number_value(json_object_get(h, "progress")) == 0.5);
        json_decref(d);
        /* cairn status JOB TASK says it */
        char cairn[4096], jobarg[32], *out = NULL;
        harness_bin(cairn, sizeof cairn, "cairn");
        snprintf(jobarg, sizeof jobarg, "%lld", job);
        setenv("CAIRN_SERVER", f->srv.url, 1);
        setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
        const char *argv[] = {cairn, "status", jobarg, "p", NULL};
        assert_int_equal(harness_run(argv, &out), 0);
        assert_non_null(strstr(out, "progress: 50.0% done"));
        free(out);
      }
      if (json_number_value(p) != 0.5)
        fail_msg("progress %g shown, only 0.5 was valid", json_number_value(p));
      samples++;
    }
    json_decref(t);
    if (done)
      break;
    if (harness_now() - t0 > 60)
      fail_msg("the task did not end");
    usleep(200 * 1000);
  }
  fprintf(stderr, "  progress 0.5 shown %.1f s after submission, kept through garbage, 7, -1 "
          "and an oversized file (%d samples)\n", first, samples);
  assert_true(first > 0);
  json_t *t = entry(f, job);
  assert_string_equal(json_string_value(json_object_get(t, "output")), "ok\n");
  assert_null(json_object_get(t, "progress"));
  json_decref(t);
  /* its progress file was not uploaded, nor left behind */
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/w4/run/slot-0/.cairn-progress", f->dir);
  struct stat st;
  assert_int_not_equal(stat(dir, &st), 0);
}

static long beat(fixture *f, const char *token, const char *body, json_t **resp) {
  return harness_http(f->srv.url, "POST", "/v1/heartbeat", token, body, strlen(body), resp, NULL,
                      NULL);
}

/* Malformed "progress" gets 400 naming it and changes nothing; an index
 * that is not one of the volunteer's leases is ignored. */
static void test_heartbeat_progress_checked(void **state) {
  fixture *f = *state;
  char tok[65], other[65], body[256];
  harness_register(f->srv.url, "hb", "hbapp", tok);
  harness_register(f->srv.url, "hb2", "hbapp", other);
  long long job = server_fixture_submit(f, "{\"name\": \"hb\", \"app\": \"hbapp\", \"tasks\": [{\"id\": \"a\"}]}");
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", tok, "{}", 2, &r, NULL, NULL), 200);
  long long idx = (long long)json_integer_value(json_object_get(r, "index"));
  json_decref(r);
  assert_true(idx > 0);
  snprintf(body, sizeof body, "{\"running\": [%lld], \"progress\": {\"%lld\": 0.25}}", idx, idx);
  assert_int_equal(beat(f, tok, body, NULL), 200);
  static const char *const bad[][2] = {
    {"{\"progress\": {\"%lld\": \"0.5\"}}", "must be a number from 0 to 1"},
    {"{\"progress\": {\"%lld\": 7}}", "must be a number from 0 to 1"},
    {"{\"progress\": {\"%lld\": -1}}", "must be a number from 0 to 1"},
    {"{\"progress\": {\"%lld\": null}}", "must be a number from 0 to 1"},
    {"{\"progress\": {\"0%lld\": 0.5}}", "the key is not an allocation index"},
    {"{\"progress\": [%lld]}", "must map at most 1024 allocation indices"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    snprintf(body, sizeof body, bad[i][0], idx);
    r = NULL;
    assert_int_equal(beat(f, tok, body, &r), 400);
    const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    if (!msg || !strstr(msg, bad[i][1]))
      fail_msg("%s: got \"%s\"", body, msg ? msg : "(none)");
    json_decref(r);
  }
  /* too many entries */
  size_t cap = 32 + 1025 * 16, k = 0;
  char *many = malloc(cap);
  assert_non_null(many);
  k += (size_t)snprintf(many + k, cap - k, "{\"progress\": {");
  for (int i = 1; i <= 1025; i++)
    k += (size_t)snprintf(many + k, cap - k, "%s\"%d\": 0.5", i > 1 ? "," : "", i);
  snprintf(many + k, cap - k, "}}");
  assert_int_equal(beat(f, tok, many, NULL), 400);
  free(many);
  /* a work body takes no "progress" */
  snprintf(body, sizeof body, "{\"progress\": {\"%lld\": 0.5}}", idx);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", tok, body, strlen(body), NULL,
                                NULL, NULL),
                   400);
  /* another volunteer's index and one never allocated: ignored */
  assert_int_equal(beat(f, other, body, NULL), 200);
  assert_int_equal(beat(f, tok, "{\"progress\": {\"987654321\": 0.9}}", NULL), 200);
  json_t *d = detail(f, job);
  assert_true(json_number_value(json_object_get(d, "progress")) == 0.25);
  json_decref(d);
  /* the last good report wins */
  snprintf(body, sizeof body, "{\"progress\": {\"%lld\": 1}}", idx);
  assert_int_equal(beat(f, tok, body, NULL), 200);
  json_t *t = entry(f, job);
  assert_true(json_number_value(json_object_get(t, "progress")) == 1.0);
  json_decref(t);
}

/* ---- a callback app, through the API ---- */
#define STEPS 40 /* of 100 ms */

static int cb_bad_progress; /* cairn_task_progress refused bad values */

/* Counts STEPS steps of 100 ms, saving the count in its directory after
 * each (temporary file, rename) and reporting its progress; resumed, it
 * goes on from the saved count. Prints "steps S resumed R from K". */
static int counter(const cairn_task *task, cairn_task_output *out, void *ud) {
  char path[4200], tmp[4300];
  long n = 0, from = 0;
  (void)ud;
  snprintf(path, sizeof path, "%s/state", task->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *fp = task->resumed ? fopen(path, "r") : NULL;
  if (fp) {
    if (fscanf(fp, "%ld", &n) != 1)
      n = 0;
    fclose(fp);
  }
  from = n;
  cb_bad_progress = cairn_task_progress(out, 1.5) == -1 && cairn_task_progress(out, -0.1) == -1 &&
                    cairn_task_progress(out, NAN) == -1;
  while (n < STEPS) {
    if (cairn_task_cancelled(out))
      return 1;
    usleep(100 * 1000);
    n++;
    fp = fopen(tmp, "w");
    if (!fp || fprintf(fp, "%ld\n", n) < 0 || fclose(fp) != 0 || rename(tmp, path) != 0)
      return 2;
    if (cairn_task_progress(out, (double)n / STEPS) != 0)
      return 3;
  }
  return cairn_task_output_printf(out, "steps %ld resumed %d from %ld\n", n, task->resumed,
                                  from) < 0;
}

static void *run_worker(void *w) {
  cairn_error err;
  cairn_worker_run(w, &err);
  return NULL;
}

static cairn_worker *cb_worker(fixture *f, const char *dir, pthread_t *t) {
  cairn_error err;
  cairn_worker_config wc;
  cairn_worker_config_init(&wc);
  wc.server_url = f->srv.url;
  wc.dir = dir;
  wc.peer_listen = "off";
  wc.slots = 1;
  cairn_worker *w = cairn_worker_create(&wc, &err);
  assert_non_null(w);
  assert_int_equal(cairn_worker_add_callback_app(w, "counter", counter, NULL, &err), CAIRN_OK);
  assert_int_equal(pthread_create(t, NULL, run_worker, w), 0);
  return w;
}

static long saved_steps(const char *dir) {
  char path[4300];
  long n = -1;
  snprintf(path, sizeof path, "%s/run/slot-0/state", dir);
  FILE *fp = fopen(path, "r");
  if (fp && fscanf(fp, "%ld", &n) != 1)
    n = -1;
  if (fp)
    fclose(fp);
  return n;
}

/* A callback's progress is shown; a worker stopped while it runs keeps its
 * directory, and the next one on the same folder calls it again with
 * task->resumed set, under the same index. */
static void test_callback_resumed(void **state) {
  fixture *f = *state;
  char dir[4200];
  snprintf(dir, sizeof dir, "%s/cb", f->dir);
  long long job = server_fixture_submit(f, "{\"name\": \"cb\", \"app\": \"counter\", \"lease_seconds\": 3, "
                            "\"tasks\": [{\"id\": \"c\"}]}");
  pthread_t t;
  cairn_worker *w = cb_worker(f, dir, &t);
  double shown = -1;
  for (double until = harness_now() + 20; shown < 0; usleep(100 * 1000)) {
    json_t *d = detail(f, job), *p = json_object_get(d, "progress");
    shown = json_is_number(p) ? json_number_value(p) : -1;
    json_decref(d);
    if (harness_now() > until)
      fail_msg("no progress shown");
  }
  assert_true(shown > 0 && shown <= 1);
  assert_true(cb_bad_progress);
  for (double until = harness_now() + 20; saved_steps(dir) < 10; usleep(50 * 1000))
    if (harness_now() > until)
      fail_msg("the callback did not count to 10");
  json_t *d = detail(f, job);
  long long index0 = leased(d, NULL);
  json_decref(d);
  cairn_worker_stop(w);
  pthread_join(t, NULL);
  cairn_worker_delete(w);
  long at_stop = saved_steps(dir);
  fprintf(stderr, "  callback: progress %.3f shown; worker stopped at step %ld of %d\n", shown,
          at_stop, STEPS);
  assert_true(at_stop >= 10 && at_stop < STEPS);
  w = cb_worker(f, dir, &t);
  assert_string_equal(wait_state(f, job, "done", 30), "done");
  cairn_worker_stop(w);
  pthread_join(t, NULL);
  cairn_worker_delete(w);
  json_t *e = entry(f, job);
  char want[96];
  snprintf(want, sizeof want, "steps %d resumed 1 from %ld\n", STEPS, at_stop);
  fprintf(stderr, "  callback result: %s", json_string_value(json_object_get(e, "output")));
  assert_string_equal(json_string_value(json_object_get(e, "output")), want);
  assert_int_equal(json_integer_value(json_object_get(e, "index")), index0);
  json_decref(e);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_resumed_after_kill, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_expired_by_record, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_expired_by_master, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_progress_shown, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_heartbeat_progress_checked, server_fixture_setup,
                                    server_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_callback_resumed, server_fixture_setup,
                                    server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
