/* test_lease_hoarding.c — a volunteer cannot hoard a job's tasks: against a
 * real master, a volunteer that registers without "resources" and one that
 * states 4,096 slots and cores each hold at most their lease bound
 * (min(slots, cores offered, 4 + results not found invalid) + 16 ahead,
 * docs/security.md "Leases"); the request past it is 429 naming the bound,
 * an honest volunteer still gets work, and one heartbeat renews no more
 * than the bound. Leases let lapse cost their volunteer its trust and,
 * period after period, a quarantine. Before the bound, one volunteer took
 * all 500 tasks of a job in one burst. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static long long submit(server_fixture *f, int n, int lease_seconds, int replication) {
  json_t *tasks = json_array();
  for (int i = 0; i < n; i++) {
    char id[32];
    snprintf(id, sizeof id, "t%d", i);
    json_array_append_new(tasks, json_pack("{s:s, s:[s]}", "id", id, "args", "a"));
  }
  json_t *job = json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:o}", "app", "hoard", "policy",
                          "fifo", "lease_seconds", lease_seconds, "max_attempts", 1000,
                          "replication", replication, "quorum", replication, "tasks", tasks);
  json_t *r = NULL;
  assert_int_equal(harness_http_json(f->srv.url, "POST", "/v1/jobs", ADMIN, job, &r), 201);
  json_decref(job);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

/* Registers a volunteer of app "hoard" with body (a JSON object text). */
static void enrol(server_fixture *f, const char *body, char tok[65]) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/volunteers", NULL, body, strlen(body),
                                &r, NULL, NULL), 201);
  snprintf(tok, 65, "%s", json_string_value(json_object_get(r, "token")));
  json_decref(r);
}

/* Takes tasks 64 a request until the master stops giving them; returns how
 * many, the last status in *last and its message in msg; idx[] gets the
 * indices (up to cap). */
static int hoard(server_fixture *f, const char *tok, long *last, char msg[512], long long *idx,
                 int cap) {
  int n = 0;
  for (int round = 0; round < 100; round++) {
    json_t *r = NULL;
    *last = harness_http(f->srv.url, "POST", "/v1/work", tok, "{\"max\": 64}", 11, &r, NULL, NULL);
    json_t *tasks = json_object_get(r, "tasks");
    const char *m = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
    snprintf(msg, 512, "%s", m ? m : "");
    for (size_t i = 0; *last == 200 && i < json_array_size(tasks); i++, n++)
      if (idx && n < cap)
        idx[n] = (long long)json_integer_value(json_object_get(json_array_get(tasks, i), "index"));
    json_decref(r);
    if (*last != 200)
      break;
  }
  return n;
}

static void result(server_fixture *f, const char *tok, long long idx, const char *out) {
  char path[64], body[128];
  snprintf(path, sizeof path, "/v1/results/%lld", idx);
  snprintf(body, sizeof body, "{\"exit_status\": 0, \"output\": \"%s\"}", out);
  assert_int_equal(harness_http(f->srv.url, "PUT", path, tok, body, strlen(body), NULL, NULL,
                                NULL), 200);
}

/* The volunteer whose token is tok's field name, from GET /v1/volunteers. */
static long long vol_field(server_fixture *f, const char *name, const char *field) {
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "GET", "/v1/volunteers", ADMIN, NULL, 0, &r, NULL,
                                NULL), 200);
  json_t *vs = json_is_array(r) ? r : json_object_get(r, "volunteers"), *v;
  size_t i;
  long long out = -1;
  json_array_foreach(vs, i, v) {
    if (strcmp(json_string_value(json_object_get(v, "name")), name) == 0) {
      json_t *x = json_object_get(v, field);
      out = json_is_boolean(x) ? json_is_true(x) : (long long)json_integer_value(x);
    }
  }
  json_decref(r);
  return out;
}

static void test_no_resources(void **state) {
  server_fixture *f = *state;
  submit(f, 500, 600, 1);
  char tok[65], honest[65], msg[512];
  enrol(f, "{\"name\": \"hoarder\", \"apps\": [\"hoard\"], \"slots\": 1}", tok);
  long last = 0;
  double t0 = harness_now();
  int n = hoard(f, tok, &last, msg, NULL, 0);
  fprintf(stderr, "slots 1, no resources: %d leases in %.2f s, then %ld: %s\n", n,
          harness_now() - t0, last, msg);
  assert_int_equal(n, 1 + 16);
  assert_int_equal(last, 429);
  assert_non_null(strstr(msg, "holds 17 leases, its bound"));
  /* one task at a time is refused the same way */
  json_t *r = NULL;
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", tok, "{}", 2, &r, NULL, NULL),
                   429);
  json_decref(r);
  /* one heartbeat renews what it holds, no more */
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/heartbeat", tok, "{}", 2, &r, NULL,
                                NULL), 200);
  assert_int_equal(json_array_size(json_object_get(r, "extended")), 17);
  json_decref(r);
  /* an honest volunteer still gets work */
  harness_register(f->srv.url, "honest", "hoard", honest);
  assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", honest, "{}", 2, &r, NULL, NULL),
                   200);
  json_decref(r);
}

static void test_declared_cores(void **state) {
  server_fixture *f = *state;
  submit(f, 500, 600, 1);
  char big[65], small[65], msg[512];
  long long idx[64];
  long last = 0;
  /* 4,096 slots and cores claimed: a new volunteer holds 4 + 16 */
  enrol(f, "{\"name\": \"big\", \"apps\": [\"hoard\"], \"slots\": 4096, \"resources\": "
           "{\"cores\": 4096, \"memory_mib\": 0, \"disk_mib\": 0}}", big);
  int n = hoard(f, big, &last, msg, idx, 64);
  fprintf(stderr, "slots and cores 4096: %d leases, then %ld: %s\n", n, last, msg);
  assert_int_equal(n, 4 + 16);
  assert_int_equal(last, 429);
  /* each result it returns lets it hold one more */
  for (int i = 0; i < 10; i++)
    result(f, big, idx[i], "ok");
  n = hoard(f, big, &last, msg, NULL, 0);
  assert_int_equal(n, 10 + 10); /* the 10 returned, and 10 more */
  assert_int_equal(last, 429);
  /* 8 slots but 2 cores offered: 2 run, 16 ahead */
  enrol(f, "{\"name\": \"small\", \"apps\": [\"hoard\"], \"slots\": 8, \"resources\": "
           "{\"cores\": 2, \"memory_mib\": 0, \"disk_mib\": 0}}", small);
  n = hoard(f, small, &last, msg, NULL, 0);
  assert_int_equal(n, 2 + 16);
  assert_int_equal(last, 429);
}

/* Leases let lapse reset trust at once and, one error a lease period, put
 * the volunteer in quarantine (its errors over 80% of its last 20 outcomes). */
static void test_lapses_cost(void **state) {
  server_fixture *f = *state;
  char a[65], b[65], msg[512];
  long long idx[64];
  long last = 0;
  enrol(f, "{\"name\": \"lapser\", \"apps\": [\"hoard\"], \"slots\": 1}", a);
  enrol(f, "{\"name\": \"peer\", \"apps\": [\"hoard\"], \"slots\": 1}", b);
  /* trust from valid replicated results: both return the same output */
  submit(f, 3, 600, 2);
  for (int i = 0; i < 3; i++) {
    long long ia[1], ib[1];
    json_t *r = NULL;
    assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", a, "{}", 2, &r, NULL, NULL),
                     200);
    ia[0] = (long long)json_integer_value(json_object_get(r, "index"));
    json_decref(r);
    assert_int_equal(harness_http(f->srv.url, "POST", "/v1/work", b, "{}", 2, &r, NULL, NULL),
                     200);
    ib[0] = (long long)json_integer_value(json_object_get(r, "index"));
    json_decref(r);
    result(f, a, ia[0], "same");
    result(f, b, ib[0], "same");
  }
  assert_int_equal(vol_field(f, "lapser", "trust"), 3);
  /* a job of 1-second leases: take, never return, let them lapse */
  submit(f, 500, 1, 1);
  int periods = 0;
  double until = harness_now() + 120;
  while (!vol_field(f, "lapser", "quarantined") && harness_now() < until) {
    int n = hoard(f, a, &last, msg, idx, 64);
    if (n == 0 && last == 204)
      break; /* quarantined: no work */
    assert_true(n <= 4 + 3 + 16);
    periods++;
    usleep(2300 * 1000); /* past the lease and the master's next expiry pass */
    if (periods == 1)
      assert_int_equal(vol_field(f, "lapser", "trust"), 0);
  }
  fprintf(stderr, "quarantined after %d periods of lapsed leases\n", periods);
  assert_int_equal(vol_field(f, "lapser", "quarantined"), 1);
  assert_true(periods >= 10 && periods <= 14); /* > 80% of the window: 13 with its 3 valid */
  /* the honest peer is untouched */
  assert_int_equal(vol_field(f, "peer", "quarantined"), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_no_resources, server_fixture_setup,
                                      server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_declared_cores, server_fixture_setup,
                                      server_fixture_teardown),
      cmocka_unit_test_setup_teardown(test_lapses_cost, server_fixture_setup,
                                      server_fixture_teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
