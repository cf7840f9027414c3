/* test_routes.c — the route table (server/api/routes.h), read directly:
 * every entry well formed (a handler, a body cap, a pattern the matcher
 * reads, a known method, lane and label); every entry reachable, so no
 * two entries match the same method and path, and no two fixed patterns
 * overlap; every path answers every method (its last entry takes the
 * others: 405, after the admin's token only when all its routes need
 * it); one label a path; the conditional lanes as documented; and the
 * matcher on the paths the old hand-written matcher told apart, "/v1/results/"
 * among them (404 now: it dereferenced NULL). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "server/api/api.h"
#include "server/conn/slow.h"

static const char *const methods[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", NULL};

static const cairn__route *table(size_t *n) {
  const cairn__route *t = cairn__route_table(n);
  assert_non_null(t);
  assert_true(*n > 0);
  return t;
}

static int known_method(const char *m) {
  for (const char *const *k = methods; *k; k++)
    if (!strcmp(*k, m))
      return 1;
  return 0;
}

/* A pattern the matcher reads: '/' first, "{name}" segments with a name
 * and nothing else in their segment, '*' only as the last character. */
static int pattern_ok(const char *p) {
  if (p[0] != '/')
    return 0;
  for (const char *s = p; *s; s++) {
    if (*s == '*' && s[1])
      return 0;
    if (*s == '{') {
      const char *e = strchr(s, '}');
      if (!e || e == s + 1 || s[-1] != '/' || (e[1] && e[1] != '/') ||
          strcspn(s + 1, "{/") < (size_t)(e - s - 1))
        return 0;
      s = e;
    }
  }
  return 1;
}

static void test_entries_well_formed(void **state) {
  (void)state;
  size_t n;
  const cairn__route *t = table(&n);
  for (size_t i = 0; i < n; i++) {
    const cairn__route *r = &t[i];
    assert_non_null(r->pattern);
    assert_true(pattern_ok(r->pattern));
    assert_true(!r->method || known_method(r->method));
    assert_non_null(r->handler);
    assert_true(r->max_body > 0); /* every request may send a body, up to its cap */
    assert_true(r->label < RL_COUNT);
    assert_true(r->who <= WHO_ADMIN);
    assert_true(r->lane <= LANE_STREAMED);
    assert_true((r->flags & ~(unsigned)(RF_FAILED_OK | RF_PAGE | RF_SPEND | RF_SPEND_ANON |
                                        RF_PROJECT)) == 0);
    if (r->lane != LANE_SLOW)
      assert_int_equal(r->slow_from, 0);
    if (r->lane == LANE_STREAMED) /* an upload: PUT, by a token its handler checks */
      assert_true(r->method && !strcmp(r->method, "PUT") && r->who != WHO_ANYONE);
    if (r->lane != LANE_INLINE) /* a lane is a route's, never a 405's */
      assert_non_null(r->method);
  }
  for (int l = 0; l < RL_COUNT; l++)
    assert_non_null(cairn__route_labels[l]);
}

/* A path the pattern matches: "7" for each {name}, "x" for a final '*'. */
static void sample(const char *pat, char *out, size_t cap) {
  size_t k = 0;
  for (const char *p = pat; *p && k + 2 < cap; p++) {
    if (*p == '{') {
      out[k++] = '7';
      p = strchr(p, '}');
    } else
      out[k++] = *p == '*' ? 'x' : *p;
  }
  out[k] = '\0';
}

/* Every entry is the route of its own sample path and method (for a
 * method-NULL entry, one no route names): no entry before it takes them. */
static void test_every_entry_reachable(void **state) {
  (void)state;
  size_t n;
  const cairn__route *t = table(&n);
  for (size_t i = 0; i < n; i++) {
    char path[256];
    sample(t[i].pattern, path, sizeof path);
    const char *method = t[i].method ? t[i].method : "OPTIONS";
    const cairn__route *got = cairn__api_route(method, path);
    if (got != &t[i])
      fail_msg("%s %s goes to entry %td (%s %s), not %zu", method, path, got - t,
               got->method ? got->method : "*", got->pattern, i);
  }
}

/* Two fixed patterns (no '*') overlap when they have as many segments and
 * each pair of segments is equal or one of them is a {name}. */
static int overlap(const char *a, const char *b) {
  while (*a && *b) {
    size_t la = strcspn(a, "/"), lb = strcspn(b, "/");
    if (!(a[0] == '{' || b[0] == '{' || (la == lb && !strncmp(a, b, la))))
      return 0;
    a += la;
    b += lb;
    if (*a != *b)
      return 0;
    if (*a) {
      a++;
      b++;
    }
  }
  return !*a && !*b;
}

static void test_no_two_entries_match_one_request(void **state) {
  (void)state;
  size_t n;
  const cairn__route *t = table(&n);
  for (size_t i = 0; i < n; i++)
    for (size_t j = i + 1; j < n; j++) {
      const cairn__route *a = &t[i], *b = &t[j];
      if (strchr(a->pattern, '*') || strchr(b->pattern, '*'))
        continue; /* the catch-alls come last, on purpose */
      int same_path = !strcmp(a->pattern, b->pattern);
      if (same_path) /* one method each; NULL (the others) only last */
        assert_true(a->method && (!b->method || strcmp(a->method, b->method)));
      else if (overlap(a->pattern, b->pattern))
        fail_msg("patterns %s and %s match the same paths", a->pattern, b->pattern);
    }
}

/* A path's entries are consecutive and share its label; the last one has
 * method NULL and answers 405, after the admin's token exactly when every
 * route of the path needs it; and no other path has its label. */
static void test_every_path_answers_every_method(void **state) {
  (void)state;
  size_t n;
  const cairn__route *t = table(&n);
  for (size_t i = 0; i < n;) {
    size_t j = i;
    int all_admin = 1;
    while (j < n && !strcmp(t[j].pattern, t[i].pattern)) {
      assert_int_equal(t[j].label, t[i].label);
      if (t[j].method)
        all_admin &= t[j].who == WHO_ADMIN;
      j++;
    }
    const cairn__route *others = &t[j - 1];
    assert_null(others->method);
    if (strchr(t[i].pattern, '*') == NULL) {
      assert_true(j - i >= 2);
      assert_ptr_equal(others->handler, cairn__api_not_allowed);
      assert_int_equal(others->who, all_admin ? WHO_ADMIN : WHO_ANYONE);
      assert_int_equal(others->max_body, CAIRN_MAX_BODY_SMALL);
    }
    for (size_t k = j; k < n; k++) {
      assert_true(strcmp(t[k].pattern, t[i].pattern) != 0); /* consecutive */
      assert_true(t[k].label != t[i].label);                /* one label a path */
    }
    i = j;
  }
}

static const cairn__route *route(const char *method, const char *path) {
  const cairn__route *r = cairn__api_route(method, path);
  assert_non_null(r);
  return r;
}

/* The lanes that depend on more than the route, as the entries say them. */
static void test_conditional_lanes(void **state) {
  (void)state;
  const cairn__route *r = route("POST", "/v1/jobs");
  assert_int_equal(r->lane, LANE_SLOW); /* a body over 256 KiB only */
  assert_int_equal(r->slow_from, CAIRN__SLOW_BODY + 1);
  r = route("DELETE", "/v1/jobs/3");
  assert_int_equal(r->lane, LANE_SLOW);
  assert_int_equal(r->slow_from, 0);
  assert_int_equal(route("POST", "/v1/volunteers/3/ban")->lane, LANE_SLOW);
  assert_int_equal(route("GET", "/v1/volunteers/3/ban")->lane, LANE_INLINE); /* a 405 */
  assert_int_equal(route("POST", "/v1/work")->lane, LANE_HELD); /* when it gets no task */
  assert_int_equal(route("GET", "/v1/jobs/3")->lane, LANE_HELD);  /* with ?wait= */
  assert_int_equal(route("PUT", "/v1/files/ab")->lane, LANE_STREAMED);
  assert_int_equal(route("PUT", "/v1/results/2/files/ab")->lane, LANE_STREAMED);
  size_t n, held = 0, streamed = 0, slow = 0;
  const cairn__route *t = table(&n);
  for (size_t i = 0; i < n; i++) {
    held += t[i].lane == LANE_HELD;
    streamed += t[i].lane == LANE_STREAMED;
    slow += t[i].lane == LANE_SLOW;
  }
  assert_int_equal(held, 2);
  assert_int_equal(streamed, 2);
  assert_int_equal(slow, 3);
}

/* The matcher on paths the old matcher told apart, each with the pattern
 * and method of the entry it must find (NULL: the path's other methods). */
static void test_matcher_examples(void **state) {
  (void)state;
  static const struct {
    const char *method, *path, *pattern, *entry_method;
  } cases[] = {
    {"GET", "/healthz", "/healthz", "GET"},
    {"POST", "/healthz", "/healthz", NULL},
    {"GET", "/healthz/", "/*", "GET"},
    {"GET", "/", "/*", "GET"},
    {"GET", "/v1", "/*", "GET"},
    {"POST", "/index.html", "/*", NULL},
    {"GET", "/v1/", "/v1/*", NULL},
    {"GET", "/v1/nope", "/v1/*", NULL},
    {"GET", "/v1/results/", "/v1/*", NULL},
    {"PUT", "/v1/results/", "/v1/*", NULL},
    {"PUT", "/v1/results/1/files/", "/v1/*", NULL},
    {"PUT", "/v1/results/x", "/v1/results/{n}", "PUT"},
    {"PUT", "/v1/results/x/files/y", "/v1/results/{n}/files/{sha256}", "PUT"},
    {"POST", "/v1/results", "/v1/results", "POST"},
    {"GET", "/v1/volunteers", "/v1/volunteers", "GET"},
    {"DELETE", "/v1/volunteers", "/v1/volunteers", NULL},
    {"PATCH", "/v1/volunteers/abc", "/v1/volunteers/{id}", "PATCH"},
    {"POST", "/v1/volunteers//ban", "/v1/*", NULL},
    {"POST", "/v1/volunteers/1/x", "/v1/*", NULL},
    {"GET", "/v1/invitations/x/y", "/v1/*", NULL},
    {"GET", "/v1/audit/index/", "/v1/*", NULL},
    {"HEAD", "/v1/files/abc", "/v1/files/{sha256}", "HEAD"},
    {"GET", "/v1/files/", "/v1/*", NULL},
    {"GET", "/v1/files/abc/chunks", "/v1/files/{sha256}/chunks", "GET"},
    {"GET", "/v1/tasks/1", "/v1/*", NULL},
    {"GET", "/v1/tasks/x/output", "/v1/tasks/{key}/output", "GET"},
    {"GET", "/v1/jobs/", "/v1/*", NULL},
    {"GET", "/v1/jobs//tasks", "/v1/*", NULL},
    {"GET", "/v1/jobs/1/tasks/", "/v1/*", NULL},
    {"GET", "/v1/jobs/1/nope", "/v1/*", NULL},
    {"GET", "/v1/jobs/x", "/v1/jobs/{id}", "GET"},
    {"PUT", "/v1/jobs/1", "/v1/jobs/{id}", NULL},
    {"GET", "/v1/jobs/1/tasks/2", "/v1/jobs/{id}/tasks/{key}", "GET"},
    {"GET", "/v1/jobs/1/distribution", "/v1/jobs/{id}/distribution", "GET"},
    {"GET", "/stats/user.gz", "/stats/{file}", "GET"},
    {"HEAD", "/stats/tables.xml", "/stats/{file}", "HEAD"},
    {"POST", "/stats/host.gz", "/stats/{file}", NULL},
    {"GET", "/stats/", "/*", "GET"},
    {"GET", "/stats/a/b", "/*", "GET"},
    {"POST", "/v1/stats/export", "/v1/stats/export", "POST"},
    {"DELETE", "/v1/stats/export", "/v1/stats/export", NULL},
    {"GET", "/v1/stats/nope", "/v1/*", NULL},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    const cairn__route *r = route(cases[i].method, cases[i].path);
    const char *em = cases[i].entry_method;
    if (strcmp(r->pattern, cases[i].pattern) || (em ? !r->method || strcmp(r->method, em)
                                                    : r->method != NULL))
      fail_msg("%s %s: entry %s %s, wanted %s %s", cases[i].method, cases[i].path,
               r->method ? r->method : "*", r->pattern, em ? em : "*", cases[i].pattern);
  }
  /* who may call, and what a registration and a read of the standings spend */
  assert_int_equal(route("GET", "/v1/jobs/1/dag")->who, WHO_ADMIN);
  assert_int_equal(route("PUT", "/v1/jobs")->who, WHO_ADMIN); /* 405 after the token */
  assert_int_equal(route("GET", "/v1/work")->who, WHO_ANYONE); /* 405 without one */
  assert_true(route("POST", "/v1/volunteers")->flags & RF_SPEND);
  assert_true(route("GET", "/v1/stats")->flags & RF_SPEND_ANON);
  assert_true(route("GET", "/metrics")->flags & RF_FAILED_OK);
  assert_true(route("POST", "/x")->flags & RF_PAGE);
  assert_false(route("POST", "/x")->flags & RF_FAILED_OK);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_entries_well_formed),
    cmocka_unit_test(test_every_entry_reachable),
    cmocka_unit_test(test_no_two_entries_match_one_request),
    cmocka_unit_test(test_every_path_answers_every_method),
    cmocka_unit_test(test_conditional_lanes),
    cmocka_unit_test(test_matcher_examples),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
