/* test_accountability.c — accountable indices, quorum and ban with real
 * processes ([Ros] §4.3.2): every allocation's index is φ(row, t) and the
 * audit names its volunteer; with replication 2 / quorum 2 a lying worker
 * gets no wrong result accepted; with replication 1 its wrong results are
 * accepted until it is banned, after which exactly its tasks and their
 * descendants are recomputed by others and every result is right. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "plan/ataf.h"
#include "tests/support/editdist.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static int setup(void **state) {
  (void)state;
  e2e_init();
  return 0;
}

/* A liar: runs the real app, changes every "1" digit of its output to "7" and
 * adds a line, so that every output it returns is wrong. */
static void write_liar(const char *dir, char *spec, size_t len) {
  char path[4200], text[9000];
  snprintf(path, sizeof path, "%s/liar.sh", dir);
  snprintf(text, sizeof text, "#!/bin/sh\n\"%s\" \"$@\" | tr 1 7\necho forged\n", e2e_bin_app);
  harness_write_file(path, text);
  chmod(path, 0755);
  snprintf(spec, len, "editdist=%s", path);
}

/* Sets key in DIR/job.json. */
static void job_set(const char *dir, const char *key, json_t *value) {
  char path[4200];
  snprintf(path, sizeof path, "%s/job.json", dir);
  json_t *job = json_load_file(path, 0, NULL);
  assert_non_null(job);
  json_object_set_new(job, key, value);
  assert_int_equal(json_dump_file(job, path, JSON_COMPACT), 0);
  json_decref(job);
}

static json_t *get(const char *url, const char *fmt, long long arg) {
  char path[128];
  snprintf(path, sizeof path, fmt, arg);
  json_t *r = NULL;
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL), 200);
  return r;
}

static void test_indices_are_phi_and_audit_names_volunteer(void **state) {
  (void)state;
  char app[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, 100, 100, 10); /* 10 x 10 blocks = 100 tasks */
  long long job = e2e_submit(sf.srv.url, dir);
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  pid_t w[5];
  for (int i = 0; i < 5; i++)
    w[i] = e2e_worker(sf.srv.url, dir, i, app, "3");
  assert_string_equal(e2e_wait(sf.srv.url, job, 180), "done");
  e2e_check_results(sf.srv.url, job, dir, 10, 100, 1);
  for (int i = 0; i < 5; i++)
    harness_wait(w[i], 30);
  json_t *vols = get(sf.srv.url, "/v1/volunteers", 0);
  size_t k, total = 0;
  json_t *v;
  json_array_foreach(json_object_get(vols, "volunteers"), k, v) {
    long long id = (long long)json_integer_value(json_object_get(v, "id"));
    long long row = (long long)json_integer_value(json_object_get(v, "row"));
    json_t *trail = get(sf.srv.url, "/v1/audit/volunteers/%lld", id);
    size_t i;
    json_t *a;
    json_array_foreach(json_object_get(trail, "allocations"), i, a) {
      long long t = (long long)json_integer_value(json_object_get(a, "t"));
      long long idx = (long long)json_integer_value(json_object_get(a, "index"));
      uint64_t want;
      assert_int_equal(t, (long long)i + 1); /* t counts every allocation, from 1 */
      assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHISHARP, (uint64_t)row, (uint64_t)t, &want,
                                        NULL), CAIRN_OK);
      assert_int_equal(idx, (long long)want);
      json_t *who = get(sf.srv.url, "/v1/audit/index/%lld", idx);
      assert_true(json_is_true(json_object_get(who, "allocated")));
      assert_int_equal(json_integer_value(json_object_get(json_object_get(who, "volunteer"), "id")), id);
      assert_int_equal(json_integer_value(json_object_get(who, "row")), row);
      assert_int_equal(json_integer_value(json_object_get(who, "t")), t);
      assert_int_equal(json_integer_value(json_object_get(who, "job")), job);
      json_decref(who);
      total++;
    }
    json_decref(trail);
  }
  assert_true(total >= 100);
  json_decref(vols);
  /* an index nobody was given says so */
  json_t *none = get(sf.srv.url, "/v1/audit/index/%lld", 999999937LL);
  assert_false(json_is_true(json_object_get(none, "allocated")));
  json_decref(none);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_quorum_rejects_a_liar(void **state) {
  (void)state;
  char app[4200], liar[4300];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, 60, 60, 10); /* 36 tasks */
  job_set(dir, "replication", json_integer(2));
  job_set(dir, "quorum", json_integer(2));
  job_set(dir, "max_attempts", json_integer(8));
  long long job = e2e_submit(sf.srv.url, dir);
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  write_liar(dir, liar, sizeof liar);
  pid_t bad = e2e_worker(sf.srv.url, dir, 0, liar, "4");
  pid_t w1 = e2e_worker(sf.srv.url, dir, 1, app, "4");
  pid_t w2 = e2e_worker(sf.srv.url, dir, 2, app, "4");
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  e2e_check_results(sf.srv.url, job, dir, 10, 36, 1); /* no wrong result accepted */
  harness_wait(bad, 30);
  harness_wait(w1, 30);
  harness_wait(w2, 30);
  json_t *vols = get(sf.srv.url, "/v1/volunteers", 0);
  json_t *v0 = NULL, *v;
  size_t k;
  json_array_foreach(json_object_get(vols, "volunteers"), k, v)
    if (strcmp(json_string_value(json_object_get(v, "name")), "w0") == 0)
      v0 = v;
  assert_non_null(v0);
  /* the liar's results lost every vote it took part in */
  assert_int_equal(json_integer_value(json_object_get(v0, "valid")), 0);
  assert_true(json_integer_value(json_object_get(v0, "invalid")) > 0);
  json_decref(vols);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_ban_recomputes_exactly_the_tainted_tasks(void **state) {
  (void)state;
  enum { R = 8, C = 8, N = R * C, BS = 10 };
  char app[4200], liar[4300];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, R * BS, C * BS, BS);
  long long job = e2e_submit(sf.srv.url, dir);
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  write_liar(dir, liar, sizeof liar);
  /* honest work first, then the liar joins for part of the job */
  pid_t h1 = e2e_worker(sf.srv.url, dir, 1, app, "3");
  double until = harness_now() + 60;
  while (harness_now() < until) {
    json_t *j = e2e_job(sf.srv.url, job);
    long done = e2e_count(j, "done");
    json_decref(j);
    if (done >= 10)
      break;
    usleep(20000);
  }
  pid_t bad = e2e_worker(sf.srv.url, dir, 2, liar, "3");
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  harness_wait(h1, 30);
  harness_wait(bad, 30);
  int wrong = e2e_check_results(sf.srv.url, job, dir, BS, N, 0);
  assert_true(wrong > 0); /* replication 1: the liar's results were accepted */

  /* which tasks the liar computed, and what each task's accepted index was */
  json_t *before = get(sf.srv.url, "/v1/jobs/%lld/tasks", job);
  long long idx_before[N];
  int mark[R][C] = {{0}};
  long long liar_id = 2;
  json_t *vols = get(sf.srv.url, "/v1/volunteers", 0);
  size_t k;
  json_t *v;
  json_array_foreach(json_object_get(vols, "volunteers"), k, v)
    if (strcmp(json_string_value(json_object_get(v, "name")), "w2") == 0)
      liar_id = (long long)json_integer_value(json_object_get(v, "id"));
  json_decref(vols);
  int direct = 0;
  json_t *t;
  json_array_foreach(json_object_get(before, "tasks"), k, t) {
    int i, j;
    sscanf(json_string_value(json_object_get(t, "id")), "%d,%d", &i, &j);
    idx_before[i * C + j] = (long long)json_integer_value(json_object_get(t, "index"));
    if (json_integer_value(json_object_get(t, "volunteer")) == liar_id) {
      mark[i][j] = 1;
      direct++;
    }
  }
  json_decref(before);
  assert_true(direct > 0);
  /* descendants in the mesh: everything below and to the right of a liar's block */
  int tainted = 0;
  for (int i = 0; i < R; i++)
    for (int j = 0; j < C; j++)
      if (!mark[i][j] && ((i && mark[i - 1][j]) || (j && mark[i][j - 1]))) {
        mark[i][j] = 2;
        tainted++;
      }

  char liar_s[32], *out = NULL;
  snprintf(liar_s, sizeof liar_s, "%lld", liar_id);
  const char *ban[] = {e2e_bin_cli, "ban", liar_s, "--reason", "wrong results", "--server",
                       sf.srv.url, NULL};
  assert_int_equal(harness_run(ban, &out), 0);
  char want[128];
  snprintf(want, sizeof want, "%d tasks and %d descendants re-queued", direct, tainted);
  if (!strstr(out, want))
    fail_msg("ban said \"%s\", expected \"%s\"", out, want);
  free(out);
  json_t *j = e2e_job(sf.srv.url, job);
  assert_string_equal(json_string_value(json_object_get(j, "state")), "running");
  assert_int_equal(e2e_count(j, "done"), N - direct - tainted);
  json_decref(j);
  /* the banned token is refused from now on */
  pid_t again = e2e_worker(sf.srv.url, dir, 2, liar, "2");
  int st = harness_wait(again, 30);
  assert_true(WIFEXITED(st) && WEXITSTATUS(st) != 0);

  pid_t h3 = e2e_worker(sf.srv.url, dir, 3, app, "3");
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  harness_wait(h3, 30);
  e2e_check_results(sf.srv.url, job, dir, BS, N, 1);
  json_t *after = get(sf.srv.url, "/v1/jobs/%lld/tasks", job);
  json_array_foreach(json_object_get(after, "tasks"), k, t) {
    int i, jj;
    sscanf(json_string_value(json_object_get(t, "id")), "%d,%d", &i, &jj);
    long long idx = (long long)json_integer_value(json_object_get(t, "index"));
    if (mark[i][jj])
      assert_true(idx != idx_before[i * C + jj]); /* recomputed */
    else
      assert_int_equal(idx, idx_before[i * C + jj]); /* honest work kept */
    assert_true(json_integer_value(json_object_get(t, "volunteer")) != liar_id);
  }
  json_decref(after);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

static void test_family_fixed_at_creation(void **state) {
  (void)state;
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *db = sf.db;
  const char *phi3[] = {"--ataf-family", "phi3", NULL};
  assert_int_equal(server_fixture_restart(&sf, phi3), 0);
  char tok[65];
  long long row = harness_register(sf.srv.url, "w", "x", tok);
  const char *job = "{\"app\": \"x\", \"tasks\": [{\"id\": \"a\"}, {\"id\": \"b\"}]}";
  assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/jobs", ADMIN, job, strlen(job), NULL, NULL, NULL), 201);
  for (uint64_t t = 1; t <= 2; t++) {
    json_t *w = NULL;
    assert_int_equal(harness_http(sf.srv.url, "POST", "/v1/work", tok, NULL, 0, &w, NULL, NULL),
                     200);
    uint64_t want;
    assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHI3, (uint64_t)row, t, &want, NULL), CAIRN_OK);
    assert_int_equal(json_integer_value(json_object_get(w, "index")), (json_int_t)want);
    json_decref(w);
  }
  json_t *who = get(sf.srv.url, "/v1/audit/index/%lld", 1);
  assert_string_equal(json_string_value(json_object_get(who, "family")), "phi3");
  json_decref(who);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  /* the family is fixed: another one on the same database is refused */
  char bin[4096], *out = NULL;
  harness_bin(bin, sizeof bin, "cairn-server");
  const char *again[] = {bin, "--db", db, "--listen", "127.0.0.1:0", "--ataf-family", "phisharp",
                         NULL};
  assert_int_equal(harness_run(again, &out), 1);
  free(out);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_indices_are_phi_and_audit_names_volunteer),
    cmocka_unit_test(test_quorum_rejects_a_liar),
    cmocka_unit_test(test_ban_recomputes_exactly_the_tainted_tasks),
    cmocka_unit_test(test_family_fixed_at_creation),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
