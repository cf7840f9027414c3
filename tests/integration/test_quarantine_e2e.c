/* test_quarantine_e2e.c — quarantine with real processes: among honest workers
 * under replication 2 / quorum 2, a worker whose app returns wrong output
 * is quarantined once more than half of its last results (at least ten)
 * are invalid; the job still completes, right, on the others; /metrics,
 * GET /v1/volunteers and `cairn volunteers` show it; a kill -9 and restart
 * keep it; `cairn release` ends it, and nothing was recomputed. */
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

#include "tests/support/editdist.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static int setup(void **state) {
  (void)state;
  e2e_init();
  return 0;
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

/* Volunteer w0 of GET /v1/volunteers (a new reference). */
static json_t *liar_of(const char *url) {
  json_t *r = NULL, *v, *found = NULL;
  size_t k;
  assert_int_equal(harness_http(url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL, NULL),
                   200);
  json_array_foreach(json_object_get(r, "volunteers"), k, v)
    if (strcmp(json_string_value(json_object_get(v, "name")), "w0") == 0)
      found = json_incref(v);
  json_decref(r);
  assert_non_null(found);
  return found;
}

/* The value of metric name (a line "name VALUE") in /metrics. */
static long long metric(const char *url, const char *name) {
  char *raw = NULL, key[128];
  size_t len = 0;
  assert_int_equal(harness_http(url, "GET", "/metrics", NULL, NULL, 0, NULL, &raw, &len), 200);
  snprintf(key, sizeof key, "\n%s ", name);
  const char *p = raw ? strstr(raw, key) : NULL;
  long long v = p ? atoll(p + strlen(key)) : -1;
  free(raw);
  return v;
}

static void test_liar_quarantined_restart_release(void **state) {
  (void)state;
  char app[4200], path[4300], liar[4400];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir, *db = sf.db;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, 60, 60, 10); /* 36 tasks */
  job_set(dir, "replication", json_integer(2));
  job_set(dir, "quorum", json_integer(2));
  job_set(dir, "max_attempts", json_integer(8));
  long long job = e2e_submit(sf.srv.url, dir);
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  /* the liar: the real app with every "1" of its output changed to "7" */
  snprintf(path, sizeof path, "%s/liar.sh", dir);
  char text[9000];
  snprintf(text, sizeof text, "#!/bin/sh\n\"%s\" \"$@\" | tr 1 7\necho forged\n", e2e_bin_app);
  harness_write_file(path, text);
  chmod(path, 0755);
  snprintf(liar, sizeof liar, "editdist=%s", path);
  pid_t bad = e2e_worker(sf.srv.url, dir, 0, liar, "4");
  pid_t w1 = e2e_worker(sf.srv.url, dir, 1, app, "4");
  pid_t w2 = e2e_worker(sf.srv.url, dir, 2, app, "4");
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");
  e2e_check_results(sf.srv.url, job, dir, 10, 36, 1); /* right, on the honest ones */
  harness_wait(bad, 30);
  harness_wait(w1, 30);
  harness_wait(w2, 30);
  json_t *v0 = liar_of(sf.srv.url);
  long long id = (long long)json_integer_value(json_object_get(v0, "id"));
  long long invalid = (long long)json_integer_value(json_object_get(v0, "invalid"));
  fprintf(stderr, "liar: %lld invalid, %lld valid, quarantined %d\n", invalid,
          (long long)json_integer_value(json_object_get(v0, "valid")),
          json_is_true(json_object_get(v0, "quarantined")));
  assert_true(json_is_true(json_object_get(v0, "quarantined")));
  assert_false(json_is_true(json_object_get(v0, "banned")));
  assert_true(invalid >= 10);
  json_decref(v0);
  assert_int_equal(metric(sf.srv.url, "cairn_volunteers_quarantined"), 1);
  assert_int_equal(metric(sf.srv.url, "cairn_quarantines_total"), 1);
  json_t *tasks_before = NULL;
  char tpath[64];
  snprintf(tpath, sizeof tpath, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(sf.srv.url, "GET", tpath, ADMIN, NULL, 0, &tasks_before, NULL,
                                NULL), 200);

  /* kill -9 and restart: still quarantined */
  int st = server_fixture_stop(&sf, SIGKILL);
  assert_true(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  v0 = liar_of(sf.srv.url);
  assert_true(json_is_true(json_object_get(v0, "quarantined")));
  json_decref(v0);
  assert_int_equal(metric(sf.srv.url, "cairn_volunteers_quarantined"), 1);

  char *out = NULL;
  const char *list[] = {e2e_bin_cli, "volunteers", "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(list, &out), 0);
  const char *line = strstr(out, " w0 ");
  assert_non_null(line);
  while (line > out && line[-1] != '\n')
    line--;
  char name[64], cluster[64], banned[8], quarantined[8];
  long long vid, row, allocs, valid, inval;
  assert_int_equal(sscanf(line, "%lld %63s %63s %lld %lld %lld %lld %7s %7s", &vid, name,
                          cluster, &row, &allocs, &valid, &inval, banned, quarantined), 9);
  assert_string_equal(quarantined, "yes"); /* QUARANTINED column */
  assert_non_null(strstr(out, "QUARANTINED"));
  free(out);

  /* the audit shows the quarantine beside the volunteer's allocations */
  char ids[32], apath[64];
  snprintf(ids, sizeof ids, "%lld", id);
  snprintf(apath, sizeof apath, "/v1/audit/volunteers/%lld", id);
  json_t *trail = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", apath, ADMIN, NULL, 0, &trail, NULL, NULL), 200);
  json_t *tv = json_object_get(trail, "volunteer");
  assert_true(json_is_true(json_object_get(tv, "quarantined")));
  assert_true(json_is_integer(json_object_get(tv, "trust")));
  assert_true(json_is_false(json_object_get(tv, "trusted")));
  json_decref(trail);
  const char *aud[] = {e2e_bin_cli, "audit", "volunteer", ids, "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(aud, &out), 0);
  assert_non_null(strstr(out, ", quarantined\n"));
  free(out);

  const char *release[] = {e2e_bin_cli, "release", ids, "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(release, &out), 0);
  assert_non_null(strstr(out, "released"));
  free(out);
  v0 = liar_of(sf.srv.url);
  assert_false(json_is_true(json_object_get(v0, "quarantined")));
  json_decref(v0);
  assert_int_equal(harness_http(sf.srv.url, "GET", apath, ADMIN, NULL, 0, &trail, NULL, NULL), 200);
  assert_true(json_is_false(json_object_get(json_object_get(trail, "volunteer"), "quarantined")));
  json_decref(trail);
  assert_int_equal(metric(sf.srv.url, "cairn_volunteers_quarantined"), 0);
  assert_int_equal(harness_run(release, &out), 1); /* not quarantined any more: 409 */
  free(out);

  /* nothing recomputed: the same accepted index for every task */
  json_t *tasks_after = NULL;
  assert_int_equal(harness_http(sf.srv.url, "GET", tpath, ADMIN, NULL, 0, &tasks_after, NULL, NULL),
                   200);
  json_t *a = json_object_get(tasks_before, "tasks"), *b = json_object_get(tasks_after, "tasks");
  assert_int_equal(json_array_size(a), 36);
  assert_int_equal(json_array_size(b), 36);
  for (size_t i = 0; i < 36; i++)
    assert_int_equal(json_integer_value(json_object_get(json_array_get(a, i), "index")),
                     json_integer_value(json_object_get(json_array_get(b, i), "index")));
  json_decref(tasks_before);
  json_decref(tasks_after);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  /* the quarantine, the kill -9 and the release left the live tables what
   * the audit chain says */
  const char *verify[] = {e2e_bin_cli, "audit", "verify", "--db", db, NULL};
  int vrc = harness_run(verify, &out);
  fprintf(stderr, "cairn audit verify --db: exit %d\n%s", vrc, out ? out : "");
  assert_int_equal(vrc, 0);
  assert_non_null(strstr(out, "live rows checked: "));
  assert_non_null(strstr(out, "\nOK\n"));
  free(out);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_liar_quarantined_restart_release),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
