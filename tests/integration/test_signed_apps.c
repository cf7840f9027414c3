/* test_signed_apps.c — signed app versions end to end (docs/apps.md), with
 * a real cairn-server, real cairn-worker processes and the real `cairn`
 * command: the operator makes a key pair (cairn app keygen) and publishes
 * a version (cairn app publish) to a master started with --app-key; a
 * version signed by another key is refused by the master; a worker given
 * only --project-key runs a DAG with it. A worker whose project key is
 * another (the master, or its mirror, hands out what the worker's key did
 * not sign) and a worker given a version one of whose files changed by one
 * byte on the master refuse to run it: their attempt fails with reason
 * app_signature, and the job finishes on an honest worker. A job pinned to
 * a version runs it; a retired version is no longer used. */
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
#include <unistd.h>

#include "common/appsig.h"
#include "common/sha256.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef struct fixture {
  server_fixture sf;
  char cli[4096];
  char key_a[4200], key_b[4200]; /* secret keys; their .pub beside them */
  char pub_a[4300], pub_b[4300];
  char app_dir[4200];            /* the operator's files of the app */
  char platform[CAIRN_APP_MAX_PLATFORM + 1];
} fixture;

static fixture fx;

static void keygen(const char *out) {
  const char *argv[] = {fx.cli, "app", "keygen", "--out", out, NULL};
  char *pk = NULL;
  assert_int_equal(harness_run(argv, &pk), 0);
  uint8_t raw[32];
  assert_int_equal(cairn__app_pubkey_parse(pk, raw, NULL), CAIRN_OK); /* printed: the key */
  free(pk);
  struct stat st;
  assert_int_equal(stat(out, &st), 0);
  assert_int_equal(st.st_mode & 0777, 0600); /* the secret key: the operator's alone */
}

/* Writes the app's two files for version v: greet (prints "ARG:DATA") and
 * data.txt (DATA = text). */
static void write_app(const char *text) {
  char p[4400];
  snprintf(p, sizeof p, "%s/greet", fx.app_dir);
  unlink(p);
  assert_int_equal(harness_write_file(p, "#!/bin/sh\nprintf '%s:%s' \"$1\" "
                                         "\"$(cat \"$(dirname \"$0\")/data.txt\")\"\n"), 0);
  assert_int_equal(chmod(p, 0755), 0);
  snprintf(p, sizeof p, "%s/data.txt", fx.app_dir);
  unlink(p);
  assert_int_equal(harness_write_file(p, text), 0);
}

/* cairn app publish greet VERSION with key; its exit status. */
static int publish(const char *version, const char *key) {
  char exe[4400], data[4400];
  snprintf(exe, sizeof exe, "%s/greet", fx.app_dir);
  snprintf(data, sizeof data, "%s/data.txt", fx.app_dir);
  const char *argv[] = {fx.cli, "app", "publish", "greet", version, exe, data, "--key", key,
                        "--server", fx.sf.srv.url, NULL};
  return harness_run(argv, NULL);
}

static long long submit(const char *job) { return server_fixture_submit(&fx.sf, job); }

/* Waits (120 s at most) until job is no longer running: its state. */
static const char *wait_job(long long jid, double seconds) {
  static char state[16];
  char path[64];
  snprintf(state, sizeof state, "timeout");
  snprintf(path, sizeof path, "/v1/jobs/%lld", jid);
  for (double until = harness_now() + seconds; harness_now() < until; usleep(100000)) {
    json_t *j = NULL;
    assert_int_equal(harness_http(fx.sf.srv.url, "GET", path, ADMIN, NULL, 0, &j, NULL, NULL),
                     200);
    const char *s = json_string_value(json_object_get(j, "state"));
    int running = strcmp(s, "running") == 0;
    snprintf(state, sizeof state, "%s", running ? "timeout" : s);
    json_decref(j);
    if (!running)
      break;
  }
  return state;
}

/* The job's tasks ({"tasks": [...]}). */
static json_t *tasks_of(long long jid) {
  char path[64];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", jid);
  assert_int_equal(harness_http(fx.sf.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

/* The attempts of job jid's first task (GET /v1/jobs/{id}/tasks/{key}). */
static json_t *attempts_of(long long jid) {
  json_t *ts = tasks_of(jid);
  long long key = (long long)json_integer_value(
    json_object_get(json_array_get(json_object_get(ts, "tasks"), 0), "key"));
  json_decref(ts);
  char path[96];
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks/%lld", jid, key);
  assert_int_equal(harness_http(fx.sf.srv.url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

/* Waits (60 s at most) until job jid's first task has an attempt with
 * reason; 1 when it has. */
static int wait_reason(long long jid, const char *reason) {
  for (double until = harness_now() + 60; harness_now() < until; usleep(100000)) {
    json_t *t = attempts_of(jid), *a;
    size_t i;
    int seen = 0;
    json_array_foreach(json_object_get(t, "history"), i, a) {
      const char *r = json_string_value(json_object_get(a, "reason"));
      seen |= r && strcmp(r, reason) == 0;
    }
    json_decref(t);
    if (seen)
      return 1;
  }
  return 0;
}

/* The output of job jid's task id. */
static char *output_of(long long jid, const char *id) {
  json_t *ts = tasks_of(jid), *t;
  size_t i;
  char *out = NULL;
  json_array_foreach(json_object_get(ts, "tasks"), i, t) {
    if (strcmp(json_string_value(json_object_get(t, "id")), id) == 0) {
      const char *o = json_string_value(json_object_get(t, "output"));
      out = strdup(o ? o : "");
    }
  }
  json_decref(ts);
  assert_non_null(out);
  return out;
}

/* 1 when worker name's log holds text. */
static int log_says(const char *name, const char *text) {
  char path[4400], buf[1 << 16];
  snprintf(path, sizeof path, "%s/%s.log", fx.sf.dir, name);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = '\0';
  return strstr(buf, text) != NULL;
}

/* Stops worker pid (SIGTERM) and reaps it. */
static void stop_worker(pid_t pid) {
  kill(pid, SIGTERM);
  assert_true(harness_wait(pid, 30) >= 0);
  server_fixture_reaped(&fx.sf, pid);
}

/* Worker name with project key pub takes job jid's task and refuses its
 * version: the attempt's reason is app_signature and its log says why. */
static void refused_by(const char *name, const char *pub, long long jid, const char *why) {
  const char *args[] = {"--project-key", pub, "--max-tasks", "1", NULL};
  pid_t w = server_fixture_worker(&fx.sf, name, args);
  assert_true(w > 0);
  assert_true(wait_reason(jid, "app_signature"));
  assert_true(harness_wait(w, 30) >= 0);
  server_fixture_reaped(&fx.sf, w);
  assert_true(log_says(name, why));
}

static int setup(void **state) {
  (void)state;
  memset(&fx, 0, sizeof fx);
  harness_bin(fx.cli, sizeof fx.cli, "cairn");
  cairn__app_platform(fx.platform);
  if (server_fixture_open(&fx.sf, NULL, 0))
    return -1;
  snprintf(fx.key_a, sizeof fx.key_a, "%s/project.key", fx.sf.dir);
  snprintf(fx.key_b, sizeof fx.key_b, "%s/other.key", fx.sf.dir);
  snprintf(fx.pub_a, sizeof fx.pub_a, "%s.pub", fx.key_a);
  snprintf(fx.pub_b, sizeof fx.pub_b, "%s.pub", fx.key_b);
  snprintf(fx.app_dir, sizeof fx.app_dir, "%s/app", fx.sf.dir);
  mkdir(fx.app_dir, 0755);
  keygen(fx.key_a);
  keygen(fx.key_b);
  const char *extra[] = {"--app-key", fx.pub_a, NULL};
  return server_fixture_restart(&fx.sf, extra);
}

static int teardown(void **state) {
  (void)state;
  return server_fixture_close(&fx.sf);
}

/* Publish with the project's key, a version by another key refused; a
 * worker with only --project-key runs a DAG with the version it fetched. */
static void test_publish_and_run_dag(void **state) {
  (void)state;
  write_app("one");
  assert_int_equal(publish("1.0", fx.key_a), 0);
  assert_int_equal(publish("1.0", fx.key_a), 0);  /* the same again: nothing new */
  assert_int_not_equal(publish("2.0", fx.key_b), 0); /* refused: another key */
  json_t *l = NULL;
  assert_int_equal(harness_http(fx.sf.srv.url, "GET", "/v1/apps", ADMIN, NULL, 0, &l, NULL, NULL),
                   200);
  assert_int_equal(json_array_size(json_object_get(l, "apps")), 1);
  json_decref(l);

  long long jid = submit("{\"app\": \"greet\", \"tasks\": [{\"id\": \"a\", \"args\": [\"a\"]}, "
                         "{\"id\": \"b\", \"args\": [\"b\"], \"after\": [\"a\"]}, "
                         "{\"id\": \"c\", \"args\": [\"c\"], \"after\": [\"a\"]}, "
                         "{\"id\": \"d\", \"args\": [\"d\"], \"after\": [\"b\", \"c\"]}]}");
  const char *args[] = {"--project-key", fx.pub_a, NULL};
  pid_t w = server_fixture_worker(&fx.sf, "honest", args);
  assert_true(w > 0);
  assert_string_equal(wait_job(jid, 120), "done");
  stop_worker(w);
  const char *ids[] = {"a", "b", "c", "d"};
  for (int i = 0; i < 4; i++) {
    char want[16], *out = output_of(jid, ids[i]);
    snprintf(want, sizeof want, "%s:one", ids[i]);
    assert_string_equal(out, want);
    free(out);
  }
  char m[4600];
  snprintf(m, sizeof m, "%s/honest/apps/greet/1.0/%s/manifest", fx.sf.dir, fx.platform);
  assert_int_equal(access(m, R_OK), 0); /* kept, verified, for the next task */
}

/* A worker whose project key is another refuses the version: app_signature;
 * an honest worker finishes the job. */
static void test_other_key_refused(void **state) {
  (void)state;
  long long jid = submit("{\"app\": \"greet\", \"tasks\": [{\"id\": \"t\", \"args\": [\"t\"]}]}");
  refused_by("fooled", fx.pub_b, jid, "the signature does not verify with the project's key");
  const char *args[] = {"--project-key", fx.pub_a, NULL};
  pid_t h = server_fixture_worker(&fx.sf, "honest2", args);
  assert_true(h > 0);
  assert_string_equal(wait_job(jid, 120), "done");
  stop_worker(h);
  char *out = output_of(jid, "t");
  assert_string_equal(out, "t:one");
  free(out);
}

/* One byte of a version's file changed on the master: the worker refuses it
 * (app_signature, naming the file); an honest worker with its own copy of
 * the app finishes the job. A pinned job runs its version; after the
 * changed version is retired, new tasks run the older one. */
static void test_changed_byte_refused_then_retired(void **state) {
  (void)state;
  write_app("three");
  assert_int_equal(publish("3.0", fx.key_a), 0);
  /* one byte of data.txt of 3.0, in the master's file store */
  char stored[4600], hex[65];
  cairn__sha256_hex("three", 5, hex);
  snprintf(stored, sizeof stored, "%s.files/%s", fx.sf.db, hex);
  chmod(stored, 0644);
  int fd = open(stored, O_WRONLY);
  assert_true(fd >= 0);
  assert_int_equal(pwrite(fd, "T", 1, 0), 1);
  close(fd);

  long long jid = submit("{\"app\": \"greet\", \"tasks\": [{\"id\": \"t\", \"args\": [\"t\"]}]}");
  refused_by("fresh", fx.pub_a, jid, "file \"data.txt\" from the master does not match its SHA-256");
  char exe[4400], app_arg[4500];
  snprintf(exe, sizeof exe, "%s/greet", fx.app_dir);
  snprintf(app_arg, sizeof app_arg, "greet=%s", exe);
  /* a grid user's own program reads its data beside it: shown to its sandbox */
  const char *grid[] = {"--app", app_arg, "--sandbox-bind", fx.app_dir, NULL};
  pid_t g = server_fixture_worker(&fx.sf, "grid", grid);
  assert_true(g > 0);
  assert_string_equal(wait_job(jid, 120), "done");
  stop_worker(g);
  char *out = output_of(jid, "t");
  assert_string_equal(out, "t:three"); /* its own, unchanged copy */
  free(out);

  /* pinned to 1.0 while 3.0 is the newest */
  long long pinned = submit("{\"app\": \"greet\", \"app_version\": \"1.0\", "
                            "\"tasks\": [{\"id\": \"p\", \"args\": [\"p\"]}]}");
  const char *args[] = {"--project-key", fx.pub_a, "--max-tasks", "1", NULL};
  pid_t w2 = server_fixture_worker(&fx.sf, "pinned", args);
  assert_string_equal(wait_job(pinned, 120), "done");
  out = output_of(pinned, "p");
  assert_string_equal(out, "p:one");
  free(out);
  assert_true(harness_wait(w2, 30) >= 0);
  server_fixture_reaped(&fx.sf, w2);

  /* retired: a new job's task runs 1.0 again */
  const char *retire[] = {fx.cli, "app", "retire", "greet", "3.0", "--server", fx.sf.srv.url,
                          NULL};
  assert_int_equal(harness_run(retire, NULL), 0);
  long long after = submit("{\"app\": \"greet\", \"tasks\": [{\"id\": \"r\", \"args\": [\"r\"]}]}");
  const char *args2[] = {"--project-key", fx.pub_a, "--max-tasks", "1", NULL};
  assert_true(server_fixture_worker(&fx.sf, "after", args2) > 0);
  assert_string_equal(wait_job(after, 120), "done");
  out = output_of(after, "r");
  assert_string_equal(out, "r:one");
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_publish_and_run_dag),
    cmocka_unit_test(test_other_key_refused),
    cmocka_unit_test(test_changed_byte_refused_then_retired),
  };
  return cmocka_run_group_tests(tests, setup, teardown);
}
