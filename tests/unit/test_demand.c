/* test_demand.c — GET /v1/demand's counts (server/core/demand.h) on an in-process
 * core: eligible tasks of the jobs with work and their distinct requests
 * (merged across jobs, capped at CAIRN__DEMAND_MAX_REQUESTS), leases out,
 * volunteers present and idle, through allocation, results, a cancel and a
 * reopen of the store. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/core/core.h"
#include "server/core/views.h"
#include "server/core/demand.h"
#include "tests/support/core_fixture.h"

static json_t *demand(cairn__core *c) {
  json_t *d = cairn__core_demand_json(c);
  assert_non_null(d);
  return d;
}

static long long num(json_t *d, const char *a, const char *b) {
  json_t *v = json_object_get(d, a);
  return json_integer_value(b ? json_object_get(v, b) : v);
}

/* Tasks asking for cores/memory in d's requests; -1 when none is listed. */
static long long req_tasks(json_t *d, long long cores, long long mem) {
  size_t i;
  json_t *r;
  json_array_foreach(json_object_get(d, "requests"), i, r) {
    if (num(r, "cores", NULL) == cores && num(r, "memory_mib", NULL) == mem)
      return num(r, "tasks", NULL);
  }
  return -1;
}

static const char job_a[] =
  "{\"name\": \"a\", \"app\": \"cell\", \"tasks\": ["
  "{\"id\": \"r\", \"args\": []},"
  "{\"id\": \"x\", \"args\": [], \"after\": [\"r\"], \"resources\": {\"cores\": 2, \"memory_mib\": 100}},"
  "{\"id\": \"y\", \"args\": [], \"after\": [\"r\"], \"resources\": {\"cores\": 2, \"memory_mib\": 100}},"
  "{\"id\": \"z\", \"args\": [], \"after\": [\"r\"]}]}";
static const char job_b[] =
  "{\"name\": \"b\", \"app\": \"cell\", \"resources\": {\"cores\": 4}, \"tasks\": ["
  "{\"id\": \"p\", \"args\": []}, {\"id\": \"q\", \"args\": []}]}";

static void test_demand_counts(void **state) {
  core_fixture *f = *state;
  cairn__core *c = f->c;
  core_fixture_submit(c, job_a);
  int64_t b = core_fixture_submit(c, job_b);
  json_t *d = demand(c);
  assert_int_equal(num(d, "eligible", NULL), 3);
  assert_int_equal(num(d, "jobs", NULL), 2);
  assert_int_equal(num(d, "leased", NULL), 0);
  assert_int_equal(req_tasks(d, 1, 0), 1);
  assert_int_equal(req_tasks(d, 4, 0), 2);
  assert_int_equal(req_tasks(d, 2, 100), -1); /* not eligible yet */
  assert_int_equal(num(d, "volunteers", "present"), 0);
  json_decref(d);

  /* a volunteer registers: present and idle; it takes r: leased, not idle */
  char token[65], *apps[] = {"cell"};
  int64_t vid = 0;
  cairn_error err = {0};
  assert_int_equal(cairn__core_register(c, "w", "rack", apps, 1, 1, NULL, &vid, token, &err),
                   CAIRN_OK);
  d = demand(c);
  assert_int_equal(num(d, "volunteers", "present"), 1);
  assert_int_equal(num(d, "volunteers", "idle"), 1);
  json_decref(d);
  json_t *w = NULL;
  assert_int_equal(cairn__core_work(c, vid, NULL, NULL, 0, &w, &(int){0}, &err), CAIRN_OK);
  assert_non_null(w);
  int64_t idx = (int64_t)json_integer_value(json_object_get(w, "index"));
  json_decref(w);
  assert_int_equal(cairn__core_auth(c, token, &vid, &err), CAIRN_OK); /* a heartbeat's */
  d = demand(c);
  assert_int_equal(num(d, "eligible", NULL), 2);
  assert_int_equal(num(d, "leased", NULL), 1);
  assert_int_equal(req_tasks(d, 1, 0), -1);
  assert_int_equal(num(d, "volunteers", "present"), 1);
  assert_int_equal(num(d, "volunteers", "idle"), 0);
  json_decref(d);

  /* r's result makes x, y, z eligible */
  assert_int_equal(cairn__core_result(c, vid, idx, 0, NULL, "ok", 2, NULL, NULL, &err), CAIRN_OK);
  d = demand(c);
  assert_int_equal(num(d, "eligible", NULL), 5);
  assert_int_equal(num(d, "leased", NULL), 0);
  assert_int_equal(req_tasks(d, 2, 100), 2);
  assert_int_equal(req_tasks(d, 1, 0), 1);
  assert_int_equal(req_tasks(d, 4, 0), 2);
  json_decref(d);

  /* a cancelled job has no demand */
  json_t *out = NULL;
  assert_int_equal(cairn__core_cancel(c, b, &out, &err), CAIRN_OK);
  json_decref(out);
  d = demand(c);
  assert_int_equal(num(d, "eligible", NULL), 3);
  assert_int_equal(num(d, "jobs", NULL), 1);
  assert_int_equal(req_tasks(d, 4, 0), -1);
  json_decref(d);

  /* after a restart the counts are rebuilt; nobody is present until heard */
  core_fixture_reopen(f);
  d = demand(f->c);
  assert_int_equal(num(d, "eligible", NULL), 3);
  assert_int_equal(req_tasks(d, 2, 100), 2);
  assert_int_equal(req_tasks(d, 1, 0), 1);
  assert_int_equal(num(d, "volunteers", "present"), 0);
  json_decref(d);
}

/* Two jobs of 40 distinct requests each: 64 listed, the rest said truncated. */
static void test_demand_cap(void **state) {
  core_fixture *f = *state;
  for (int k = 0; k < 2; k++) {
    char text[8192];
    int n = snprintf(text, sizeof text, "{\"name\": \"m%d\", \"app\": \"cell\", \"tasks\": [", k);
    for (int i = 0; i < 40; i++)
      n += snprintf(text + n, sizeof text - (size_t)n,
                    "%s{\"id\": \"t%d\", \"args\": [], \"resources\": {\"memory_mib\": %d}}",
                    i ? ", " : "", i, 1 + k * 40 + i);
    snprintf(text + n, sizeof text - (size_t)n, "]}");
    core_fixture_submit(f->c, text);
  }
  json_t *d = demand(f->c);
  assert_int_equal(num(d, "eligible", NULL), 80);
  assert_int_equal(json_array_size(json_object_get(d, "requests")), CAIRN__DEMAND_MAX_REQUESTS);
  assert_true(json_is_true(json_object_get(d, "requests_truncated")));
  json_decref(d);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_demand_counts, core_fixture_setup,
                                    core_fixture_teardown),
    cmocka_unit_test_setup_teardown(test_demand_cap, core_fixture_setup, core_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
