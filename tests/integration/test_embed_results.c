/* test_embed_results.c — cairn_master_results_json() of an embedded master:
 * a finished job's tasks with their outputs (CAIRN_OK, JSON the caller
 * frees), and an unknown job refused with CAIRN_ENOTFOUND and a message
 * naming it (*json NULL; a NULL cairn_error accepted). Real master on
 * loopback, a real worker thread with a callback app. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/master.h"
#include "cairn/worker.h"
#include "tests/support/harness.h"

/* Writes its arguments, joined by '+'. */
static int join_app(const cairn_task *task, cairn_task_output *out, void *ud) {
  for (size_t i = 0; i < task->nargs; i++)
    if (cairn_task_output_printf(out, "%s%s", i ? "+" : "", task->args[i]) < 0)
      return 1;
  return 0;
}

static void *run(void *w) {
  cairn_error err;
  cairn_worker_run(w, &err);
  return NULL;
}

static void test_results_json(void **state) {
  (void)state;
  char dir[4096], db[4200], wdir[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/m.db", dir);
  snprintf(wdir, sizeof wdir, "%s/w", dir);

  cairn_error err;
  cairn_master_config mc;
  cairn_master_config_init(&mc);
  mc.db_path = db;
  mc.listen = "127.0.0.1:0";
  mc.admin_token = HARNESS_ADMIN_TOKEN;
  cairn_master *m = cairn_master_create(&mc, &err);
  assert_non_null(m);
  assert_int_equal(cairn_master_start(m, &err), CAIRN_OK);

  /* an unknown job, before any exists and after one does */
  char *json = (char *)"untouched";
  memset(&err, 0, sizeof err);
  assert_int_equal(cairn_master_results_json(m, 4242, &json, &err), CAIRN_ENOTFOUND);
  assert_null(json);
  assert_int_equal(err.status, CAIRN_ENOTFOUND);
  assert_non_null(strstr(err.text, "4242"));

  static const char job[] = "{\"app\": \"join\", \"tasks\": ["
                            "{\"id\": \"a\", \"args\": [\"x\", \"y\"]},"
                            "{\"id\": \"b\", \"args\": [\"z\"], \"after\": [\"a\"]}]}";
  long long id = 0;
  assert_int_equal(cairn_master_submit(m, job, strlen(job), &id, &err), CAIRN_OK);

  cairn_worker_config wc;
  cairn_worker_config_init(&wc);
  wc.server_url = cairn_master_url(m);
  wc.dir = wdir;
  wc.peer_listen = "off";
  cairn_worker *w = cairn_worker_create(&wc, &err);
  assert_non_null(w);
  assert_int_equal(cairn_worker_add_callback_app(w, "join", join_app, NULL, &err), CAIRN_OK);
  pthread_t t;
  assert_int_equal(pthread_create(&t, NULL, run, w), 0);
  cairn_job_state js = CAIRN_JOB_RUNNING;
  assert_int_equal(cairn_master_wait(m, id, 60, &js, &err), CAIRN_OK);
  assert_int_equal(js, CAIRN_JOB_DONE);
  cairn_worker_stop(w);
  pthread_join(t, NULL);
  cairn_worker_delete(w);

  /* the finished job: both tasks, in job-file order, with their outputs */
  json = NULL;
  assert_int_equal(cairn_master_results_json(m, id, &json, &err), CAIRN_OK);
  assert_non_null(json);
  json_t *r = json_loads(json, 0, NULL);
  free(json);
  assert_non_null(r);
  json_t *tasks = json_object_get(r, "tasks");
  assert_int_equal(json_array_size(tasks), 2);
  assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "id")), "a");
  assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 0), "output")),
                      "x+y");
  assert_string_equal(json_string_value(json_object_get(json_array_get(tasks, 1), "output")), "z");
  assert_int_equal(json_integer_value(json_object_get(json_array_get(tasks, 1), "exit_status")),
                   0);
  json_decref(r);

  /* unknown ids around it, one with no cairn_error */
  long long unknown[] = {id + 1, 0, -1};
  for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
    char want[32];
    snprintf(want, sizeof want, "%lld", unknown[i]);
    json = (char *)"untouched";
    memset(&err, 0, sizeof err);
    assert_int_equal(cairn_master_results_json(m, unknown[i], &json, &err), CAIRN_ENOTFOUND);
    assert_null(json);
    assert_non_null(strstr(err.text, want));
  }
  json = (char *)"untouched";
  assert_int_equal(cairn_master_results_json(m, id + 7, &json, NULL), CAIRN_ENOTFOUND);
  assert_null(json);

  cairn_master_delete(m);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_results_json),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
