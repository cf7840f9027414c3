/* test_autosize.c — tasks that size themselves: the policy's pure functions
 * (common/autosize.h: a result's "usage", a category's peaks, the margin,
 * the cores, the request, the growth after a kill), and the master's core
 * (server/core/size.c) on a real SQLite file: an automatic category's first
 * task asks for the asking worker's whole offer (and is not taken ahead of
 * a free slot by a batch), later ones for the largest
 * measured peak plus the margin (so several fit a worker), a task killed for
 * memory under "retry_larger" comes back at twice its limit without using
 * up max_attempts until it cannot grow, and the peaks and growth outlive a
 * restart. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/autosize.h"
#include "server/core/fit.h"
#include "tests/support/core_fixture.h"

static void expect_usage_error(const char *text, const char *needle) {
  json_t *v = json_loads(text, JSON_DECODE_ANY, NULL);
  cairn__usage u;
  cairn_error err = {0};
  if (cairn__usage_parse(v, &u, &err) == CAIRN_OK)
    fail_msg("accepted: %s", text);
  if (!strstr(err.text, needle))
    fail_msg("message \"%s\" lacks \"%s\"", err.text, needle);
  json_decref(v);
}

static void test_usage(void **state) {
  (void)state;
  json_t *v = json_pack("{s:I, s:I, s:f}", "memory_bytes", (json_int_t)209715200, "disk_bytes",
                        (json_int_t)4096, "wall_seconds", 1.5);
  cairn__usage u;
  cairn_error err = {0};
  assert_int_equal(cairn__usage_parse(v, &u, &err), CAIRN_OK);
  assert_int_equal(u.memory_bytes, 209715200);
  assert_int_equal(u.disk_bytes, 4096);
  assert_true(u.wall_seconds == 1.5);
  json_t *back = cairn__usage_json(&u);
  assert_true(json_equal(back, v));
  json_decref(back);
  json_decref(v);
  /* a field left out is not measured; an empty object measured nothing */
  v = json_pack("{s:I}", "disk_bytes", (json_int_t)0);
  assert_int_equal(cairn__usage_parse(v, &u, &err), CAIRN_OK);
  assert_true(u.memory_bytes < 0 && u.disk_bytes == 0 && u.wall_seconds < 0);
  assert_true(cairn__usage_any(&u));
  json_decref(v);
  v = json_object();
  assert_int_equal(cairn__usage_parse(v, &u, &err), CAIRN_OK);
  assert_false(cairn__usage_any(&u));
  json_decref(v);
  expect_usage_error("[1]", "\"usage\" must be an object");
  expect_usage_error("{\"memory_bytes\": -1}", "usage.memory_bytes must be an integer from 0");
  expect_usage_error("{\"disk_bytes\": 1.5}", "usage.disk_bytes must be an integer");
  expect_usage_error("{\"memory_bytes\": 1125899906842625}", "to 1125899906842624");
  expect_usage_error("{\"wall_seconds\": \"1\"}", "usage.wall_seconds must be a number");
  expect_usage_error("{\"wall_seconds\": 2592001}", "from 0 to 2592000");
  expect_usage_error("{\"rss\": 1}", "usage: unknown field \"rss\"");
}

static void test_policy(void **state) {
  (void)state;
  /* the margin: +25 %, at least +64 MiB, rounded up */
  assert_int_equal(cairn__autosize_amount(0), 64);
  assert_int_equal(cairn__autosize_amount(100), 164);
  assert_int_equal(cairn__autosize_amount(200), 264);
  assert_int_equal(cairn__autosize_amount(256), 320);
  assert_int_equal(cairn__autosize_amount(257), 322);
  assert_int_equal(cairn__autosize_amount(1000), 1250);
  /* cores: one unless the CPU time over the wall time says more */
  assert_int_equal(cairn__autosize_cores(0), 1);
  assert_int_equal(cairn__autosize_cores(1.0), 1);
  assert_int_equal(cairn__autosize_cores(1.25), 1);
  assert_int_equal(cairn__autosize_cores(1.3), 2);
  assert_int_equal(cairn__autosize_cores(3.9), 4);
  assert_int_equal(cairn__autosize_cores(NAN), 1);
  assert_int_equal(cairn__autosize_cores(1e9), CAIRN_MAX_CORES);

  /* peaks: the largest of the successful runs noted, in MiB rounded up */
  cairn__peak p = {0};
  assert_false(p.measured);
  assert_true(cairn__peak_note(&p, &(cairn__usage){150ll << 20, 3ll << 20, 2.0}, 1.0));
  assert_true(cairn__peak_note(&p, &(cairn__usage){(200ll << 20) + 1, -1, 2.0}, 0.5));
  assert_false(cairn__peak_note(&p, &(cairn__usage){100ll << 20, 1ll << 20, 4.0}, 1.0));
  assert_false(cairn__peak_note(&p, &CAIRN_USAGE_NONE, 9.0));
  assert_true(p.measured);
  assert_int_equal(p.memory_mib, 201);
  assert_int_equal(p.disk_mib, 3);
  assert_true(p.cpu_ratio == 0.5);
  assert_true(cairn__peak_note(&p, &(cairn__usage){-1, -1, 2.0}, 5.0)); /* 2.5 cores */
  assert_true(p.cpu_ratio == 2.5);

  /* the request: the whole offer until measured, then the peaks + margin */
  cairn__resources whole = {8, 2048, 50000}, largest = {8, 4096, 60000};
  cairn__peak none = {0};
  cairn__resources r = cairn__autosize_request(&none, &whole, &largest);
  assert_true(cairn__resources_equal(&r, &whole));
  r = cairn__autosize_request(&p, &whole, &largest);
  assert_true(cairn__resources_equal(&r, &(cairn__resources){3, 265, 67}));
  /* each field at most the largest offer's */
  cairn__peak huge = {.memory_mib = 5000, .disk_mib = 10, .cpu_ratio = 30, .measured = 1};
  r = cairn__autosize_request(&huge, &whole, &largest);
  assert_true(cairn__resources_equal(&r, &(cairn__resources){8, 4096, 74}));
  r = cairn__autosize_request(&huge, &whole, NULL); /* no offer seen: no cap */
  assert_true(cairn__resources_equal(&r, &(cairn__resources){30, 6250, 74}));
  /* 200 MiB tasks on a 2 GiB offer: 7 fit where the first guess fitted 1 */
  cairn__peak two = {.memory_mib = 200, .cpu_ratio = 0.1, .measured = 1};
  r = cairn__autosize_request(&two, &whole, &largest);
  assert_int_equal(whole.memory_mib / r.memory_mib, 7);

  /* growth: twice the amount, at most the cap; nothing when at the cap */
  assert_int_equal(cairn__autosize_grow(128, 2048), 256);
  assert_int_equal(cairn__autosize_grow(256, 2048), 512);
  assert_int_equal(cairn__autosize_grow(1500, 2048), 2048);
  assert_int_equal(cairn__autosize_grow(2048, 2048), 0);
  assert_int_equal(cairn__autosize_grow(3000, 2048), 0);
  assert_int_equal(cairn__autosize_grow(0, 2048), 0);
  assert_int_equal(cairn__autosize_grow(700, -1), 1400);
  assert_int_equal(cairn__autosize_grow(CAIRN_MAX_RES_MIB, -1), 0);

  assert_true(cairn__category_valid("sim-1 (large)"));
  assert_false(cairn__category_valid(""));
  assert_false(cairn__category_valid("a\tb"));
  char longer[CAIRN_MAX_CATEGORY_LEN + 2];
  memset(longer, 'x', sizeof longer - 1);
  longer[sizeof longer - 1] = '\0';
  assert_false(cairn__category_valid(longer));
  longer[CAIRN_MAX_CATEGORY_LEN] = '\0';
  assert_true(cairn__category_valid(longer));
}

/* ---- the core ---- */

static int64_t reg(cairn__core *c, const char *name, const cairn__resources *offer) {
  char token[65], *apps[] = {"hog"};
  int64_t id = 0;
  cairn_error err = {0};
  if (cairn__core_register(c, name, "rack", apps, 1, 8, NULL, &id, token, &err) != CAIRN_OK ||
      cairn__core_set_offer(c, id, offer, &err) != CAIRN_OK)
    fail_msg("register %s: %s", name, err.text);
  return id;
}

/* v asks for work: the task's id ("" when none), its index, its request
 * and its memory limit (0: none). */
static const char *ask(cairn__core *c, int64_t v, int64_t *idx, cairn__resources *req,
                       int64_t *mem) {
  static char got[64];
  json_t *w = NULL;
  cairn_error err = {0};
  if (cairn__core_work(c, v, NULL, NULL, 0, &w, &(int){0}, &err) != CAIRN_OK)
    fail_msg("work: %s", err.text);
  got[0] = '\0';
  if (w) {
    json_t *t = json_object_get(w, "task");
    snprintf(got, sizeof got, "%s", json_string_value(json_object_get(t, "id")));
    *idx = (int64_t)json_integer_value(json_object_get(w, "index"));
    assert_int_equal(cairn__resources_parse(json_object_get(t, CAIRN_RESOURCES_KEY), req, req,
                                            "offer", &err), CAIRN_OK);
    *mem = json_integer_value(json_object_get(json_object_get(t, "limits"), "memory_mib"));
    json_decref(w);
  }
  return got;
}

/* v's result for idx: exit status 0 with usage u (NULL: none), or a kill
 * for reason. */
static void result(cairn__core *c, int64_t v, int64_t idx, const cairn__usage *u,
                   const char *reason) {
  cairn__result_extra x = {0};
  cairn_error err = {0};
  if (u) {
    x.usage = *u;
    x.has_usage = 1;
    x.cpu_seconds = 0.1;
    x.has_cpu = 1;
  }
  if (cairn__core_result(c, v, idx, reason ? 137 : 0, reason, reason ? "" : "ok",
                         reason ? 0 : 2, &x, NULL, &err) != CAIRN_OK)
    fail_msg("result: %s", err.text);
}

static json_t *category(cairn__core *c, int64_t job, size_t i) {
  json_t *o = cairn__core_job_json(c, job, 1);
  json_t *k = json_incref(json_array_get(json_object_get(o, "categories"), i));
  json_decref(o);
  assert_non_null(k);
  return k;
}

static void test_core_sizing(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t job = core_fixture_submit(c, "{\"app\": \"hog\", \"policy\": \"fifo\", \"resources\": "
                                       "\"auto\", \"category\": \"sim\", \"tasks\": ["
                                       "{\"id\": \"t0\"}, {\"id\": \"t1\"}, {\"id\": \"t2\"}, "
                                       "{\"id\": \"t3\"}, {\"id\": \"t4\"}, {\"id\": \"t5\"}]}");
  int64_t a = reg(c, "a", &(cairn__resources){8, 2048, 1000});
  cairn__resources req;
  int64_t idx[6], mem = 0;
  /* the first task of the category: the worker's whole offer, its limits;
   * a batch takes no more ahead of a free slot */
  json_t *tasks = NULL;
  cairn_error err = {0};
  assert_int_equal(cairn__core_work_many(c, a, NULL, NULL, 0, 4, &tasks, &(int){0}, &err),
                   CAIRN_OK);
  assert_int_equal(json_array_size(tasks), 1);
  json_t *t0 = json_object_get(json_array_get(tasks, 0), "task");
  assert_string_equal(json_string_value(json_object_get(t0, "id")), "t0");
  idx[0] = json_integer_value(json_object_get(json_array_get(tasks, 0), "index"));
  assert_int_equal(cairn__resources_parse(json_object_get(t0, CAIRN_RESOURCES_KEY), &req, &req,
                                          "offer", &err), CAIRN_OK);
  mem = json_integer_value(json_object_get(json_object_get(t0, "limits"), "memory_mib"));
  json_decref(tasks);
  assert_true(cairn__resources_equal(&req, &(cairn__resources){8, 2048, 1000}));
  assert_int_equal(mem, 2048);
  assert_string_equal(ask(c, a, &idx[1], &req, &mem), ""); /* nothing left of it */
  json_t *k = category(c, job, 0);
  assert_string_equal(json_string_value(json_object_get(k, "category")), "sim");
  assert_false(json_is_true(json_object_get(k, "measured")));
  assert_string_equal(json_string_value(json_object_get(k, "size")), "whole");
  json_decref(k);

  /* its result measured 200 MiB: the rest ask 264 MiB and one core */
  result(c, a, idx[0], &(cairn__usage){200ll << 20, 1ll << 20, 2.0}, NULL);
  for (int i = 1; i <= 5; i++) {
    char want[8];
    snprintf(want, sizeof want, "t%d", i);
    assert_string_equal(ask(c, a, &idx[i], &req, &mem), want);
    assert_true(cairn__resources_equal(&req, &(cairn__resources){1, 264, 65}));
    assert_int_equal(mem, 264);
  }
  k = category(c, job, 0);
  assert_int_equal(json_integer_value(json_object_get(k, "memory_mib")), 200);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(k, "size"), "memory_mib")),
                   264);
  json_decref(k);
  /* a larger peak raises the size of the tasks allocated after it */
  result(c, a, idx[1], &(cairn__usage){400ll << 20, 1ll << 20, 2.0}, NULL);
  k = category(c, job, 0);
  assert_int_equal(json_integer_value(json_object_get(json_object_get(k, "size"), "memory_mib")),
                   500);
  json_decref(k);

  /* the peaks outlive a restart */
  core_fixture_reopen(f);
  c = f->c;
  k = category(c, job, 0);
  assert_int_equal(json_integer_value(json_object_get(k, "memory_mib")), 400);
  json_decref(k);
}

static void test_core_retry_larger(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  int64_t job = core_fixture_submit(c, "{\"app\": \"hog\", \"max_attempts\": 1, \"tasks\": ["
                                       "{\"id\": \"grow\", \"retry_larger\": true, "
                                       "\"limits\": {\"memory_mib\": 128}},"
                                       "{\"id\": \"fixed\", \"limits\": {\"memory_mib\": 128}}]}");
  int64_t a = reg(c, "a", &(cairn__resources){8, 1000, 1000});
  cairn__resources req;
  int64_t i1, i2, mem = 0;
  const char *first = ask(c, a, &i1, &req, &mem);
  assert_string_equal(first, "grow");
  assert_int_equal(mem, 128);
  assert_string_equal(ask(c, a, &i2, &req, &mem), "fixed");
  /* the fixed task fails for good: max_attempts 1 */
  result(c, a, i2, NULL, "memory");
  assert_int_equal(core_fixture_task(c, job, 1).state, TS_FAILED);
  /* the other comes back at 256, then 512, then 1000 (the largest offer),
   * its attempts not counted while it grows */
  static const int64_t sizes[] = {256, 512, 1000};
  for (int r = 0; r < 3; r++) {
    result(c, a, i1, NULL, "memory");
    cairn__task_info ti = core_fixture_task(c, job, 0);
    assert_int_equal(ti.state, TS_ELIGIBLE);
    assert_int_equal(ti.attempts, 0);
    if (r == 1) { /* the growth outlives a restart */
      core_fixture_reopen(f);
      c = f->c;
    }
    assert_string_equal(ask(c, a, &i1, &req, &mem), "grow");
    assert_int_equal(mem, sizes[r]);
    assert_int_equal(req.memory_mib, sizes[r]);
  }
  /* at the largest offer it cannot grow: the kill counts */
  result(c, a, i1, NULL, "memory");
  assert_int_equal(core_fixture_task(c, job, 0).state, TS_FAILED);
  json_t *t = cairn__core_task_json(c, job, core_fixture_task(c, job, 0).key, &(cairn_error){0});
  json_t *h = json_object_get(t, "history");
  assert_int_equal(json_array_size(h), 4);
  assert_int_equal(json_integer_value(json_object_get(
                     json_object_get(json_array_get(h, 0), "retry"), "memory_mib")), 256);
  assert_int_equal(json_integer_value(json_object_get(
                     json_object_get(json_array_get(h, 2), "sized"), "memory_mib")), 512);
  assert_null(json_object_get(json_array_get(h, 3), "retry"));
  assert_int_equal(json_integer_value(json_object_get(json_object_get(t, "grown"), "memory_mib")),
                   1000);
  assert_true(json_is_true(json_object_get(t, "retry_larger")));
  json_decref(t);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_usage),
    cmocka_unit_test(test_policy),
    cmocka_unit_test_setup_teardown(test_core_sizing, core_fixture_setup, core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_core_retry_larger, core_fixture_setup,
                                    core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
