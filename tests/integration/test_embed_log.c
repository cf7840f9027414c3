/* test_embed_log.c — a master and two workers embedded in one process log
 * apart: each handle's lines reach its own callback, at its own level, and
 * no handle's settings change another's. Real master on loopback, real
 * worker threads. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cairn/master.h"
#include "cairn/worker.h"
#include "tests/support/harness.h"

typedef struct sink {
  pthread_mutex_t mu;
  char text[1 << 16];
  size_t len;
  int worse; /* lines above the handle's level */
  cairn_log_level level;
} sink;

static void collect(cairn_log_level level, const char *line, void *ud) {
  sink *s = ud;
  pthread_mutex_lock(&s->mu);
  if (level > s->level)
    s->worse++;
  int n = snprintf(s->text + s->len, sizeof s->text - s->len, "%s\n", line);
  if (n > 0 && s->len + (size_t)n < sizeof s->text)
    s->len += (size_t)n;
  pthread_mutex_unlock(&s->mu);
}

static int has(sink *s, const char *what) {
  pthread_mutex_lock(&s->mu);
  int found = strstr(s->text, what) != NULL;
  pthread_mutex_unlock(&s->mu);
  return found;
}

static int noop(const cairn_task *task, cairn_task_output *out, void *ud) { return 0; }

static void *run(void *w) {
  cairn_error err;
  cairn_worker_run(w, &err);
  return NULL;
}

static cairn_worker *start_worker(const char *url, const char *dir, const char *name,
                                  cairn_log_level level, sink *s, pthread_t *t) {
  cairn_error err;
  cairn_worker_config cfg = {.server_url = url, .dir = dir, .name = name,
                             .peer_listen = "off", .log_level = level,
                             .log_fn = collect, .log_userdata = s};
  cairn_worker *w = cairn_worker_create(&cfg, &err);
  assert_non_null(w);
  assert_int_equal(cairn_worker_add_callback_app(w, "noop", noop, NULL, &err), CAIRN_OK);
  assert_int_equal(pthread_create(t, NULL, run, w), 0);
  return w;
}

static void test_handles_log_apart(void **state) {
  (void)state;
  static sink ms = {.mu = PTHREAD_MUTEX_INITIALIZER, .level = CAIRN_LOG_WARN};
  static sink w1s = {.mu = PTHREAD_MUTEX_INITIALIZER, .level = CAIRN_LOG_INFO};
  static sink w2s = {.mu = PTHREAD_MUTEX_INITIALIZER, .level = CAIRN_LOG_ERROR};
  char dir[4096], db[4200], d1[4200], d2[4200];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/m.db", dir);
  snprintf(d1, sizeof d1, "%s/w1", dir);
  snprintf(d2, sizeof d2, "%s/w2", dir);

  cairn_error err;
  cairn_master_config mc;
  cairn_master_config_init(&mc);
  mc.db_path = db;
  mc.listen = "127.0.0.1:0";
  mc.admin_token = HARNESS_ADMIN_TOKEN;
  mc.log_level = CAIRN_LOG_WARN;
  mc.log_fn = collect;
  mc.log_userdata = &ms;
  cairn_master *m = cairn_master_create(&mc, &err);
  assert_non_null(m);
  assert_int_equal(cairn_master_start(m, &err), CAIRN_OK);

  pthread_t t1, t2;
  cairn_worker *w1 = start_worker(cairn_master_url(m), d1, "one", CAIRN_LOG_INFO, &w1s, &t1);
  cairn_worker *w2 = start_worker(cairn_master_url(m), d2, "two", CAIRN_LOG_ERROR, &w2s, &t2);
  for (double until = harness_now() + 30; harness_now() < until && !has(&w1s, "polling");)
    usleep(20 * 1000);
  assert_true(has(&w1s, "polling"));

  /* ban worker one (its id is in its own log): the master warns, in its
   * own log only */
  pthread_mutex_lock(&w1s.mu);
  const char *at = strstr(w1s.text, "as volunteer ");
  long long id = at ? atoll(at + strlen("as volunteer ")) : 0;
  pthread_mutex_unlock(&w1s.mu);
  assert_true(id > 0);
  char path[64], banned[64];
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", id);
  snprintf(banned, sizeof banned, "volunteer %lld banned", id);
  json_t *r = NULL;
  assert_int_equal(
    harness_http(cairn_master_url(m), "POST", path, HARNESS_ADMIN_TOKEN, "{}", 2, &r, NULL, NULL),
    200);
  json_decref(r);
  for (double until = harness_now() + 30; harness_now() < until && !has(&w1s, "banned");)
    usleep(20 * 1000);
  assert_true(has(&ms, banned));
  assert_true(has(&w1s, "banned")); /* its next request is refused: a fatal error */

  cairn_worker_stop(w1);
  cairn_worker_stop(w2);
  pthread_join(t1, NULL);
  pthread_join(t2, NULL);
  cairn_worker_delete(w1);
  cairn_worker_delete(w2);
  cairn_master_delete(m);

  assert_false(has(&ms, "polling"));   /* the workers' info lines stay theirs */
  assert_false(has(&w1s, "re-queued")); /* the master's ban line */
  assert_false(has(&w2s, "polling"));  /* worker two logs errors only */
  assert_false(has(&w2s, "banned"));
  assert_int_equal(ms.worse + w1s.worse + w2s.worse, 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_handles_log_apart),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
