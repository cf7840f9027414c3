/* editdist.c — shared steps of the end-to-end tests: the edit-distance DAG
 * job (apps/editdist.c), real workers, waiting, and checking every block
 * against the full table computed here. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/editdist.h"

#define ADMIN HARNESS_ADMIN_TOKEN

char e2e_bin_app[4096], e2e_bin_cli[4096];

void e2e_init(void) {
  harness_bin(e2e_bin_app, sizeof e2e_bin_app, "cairn-app-editdist");
  harness_bin(e2e_bin_cli, sizeof e2e_bin_cli, "cairn");
  setenv("CAIRN_ADMIN_TOKEN", ADMIN, 1);
}

/* Writes strings.txt and job.json (rows x cols blocks of bs) into dir. */
void e2e_make_job(const char *dir, int n, int m, int bs) {
  char path[4200], ns[16], ms[16], bss[16];
  snprintf(ns, sizeof ns, "%d", n);
  snprintf(ms, sizeof ms, "%d", m);
  snprintf(bss, sizeof bss, "%d", bs);
  char *out = NULL;
  const char *mk[] = {e2e_bin_app, "--make-strings", ns, ms, "99", NULL};
  assert_int_equal(harness_run(mk, &out), 0);
  snprintf(path, sizeof path, "%s/strings.txt", dir);
  harness_write_file(path, out);
  free(out);
  const char *mj[] = {e2e_bin_app, "--make-job", path, bss, NULL};
  assert_int_equal(harness_run(mj, &out), 0);
  snprintf(path, sizeof path, "%s/job.json", dir);
  harness_write_file(path, out);
  free(out);
}

long long e2e_submit(const char *url, const char *dir) {
  char path[4200];
  snprintf(path, sizeof path, "%s/job.json", dir);
  const char *argv[] = {e2e_bin_cli, "submit", path, "--server", url, NULL};
  char *out = NULL;
  assert_int_equal(harness_run(argv, &out), 0);
  long long id = atoll(out);
  free(out);
  assert_true(id > 0);
  return id;
}

pid_t e2e_worker(const char *url, const char *dir, int i, const char *app, const char *idle) {
  char name[32];
  snprintf(name, sizeof name, "w%d", i);
  char bin[4096]; /* a liar's script app runs the built app: shown read-only in the sandbox */
  harness_bin_dir(bin, sizeof bin);
  const char *args[] = {"--app", app, "--exit-when-idle", idle, "--sandbox-bind", bin, NULL};
  pid_t p = harness_worker(url, dir, name, args);
  assert_true(p > 0);
  return p;
}

json_t *e2e_job(const char *url, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  json_t *r = NULL;
  if (harness_http(url, "GET", path, ADMIN, NULL, 0, &r, NULL, NULL) != 200) {
    json_decref(r);
    return NULL;
  }
  return r;
}

long e2e_count(json_t *job, const char *state) {
  return (long)json_integer_value(json_object_get(json_object_get(job, "counts"), state));
}

const char *e2e_wait(const char *url, long long job, double timeout) {
  static char state[16];
  double until = harness_now() + timeout;
  snprintf(state, sizeof state, "timeout");
  while (harness_now() < until) {
    json_t *j = e2e_job(url, job);
    const char *s = j ? json_string_value(json_object_get(j, "state")) : NULL;
    if (s && strcmp(s, "running") != 0) {
      snprintf(state, sizeof state, "%s", s);
      json_decref(j);
      break;
    }
    json_decref(j);
    usleep(100000);
  }
  return state;
}

/* Checks every block's output against the full table computed here. */
int e2e_check_results(const char *url, long long job, const char *dir, int bs, int ntasks,
                      int strict) {
  int wrong = 0;
  char path[4200];
  snprintf(path, sizeof path, "%s/strings.txt", dir);
  FILE *f = fopen(path, "r");
  char *a = NULL, *b = NULL;
  size_t ca = 0, cb = 0;
  long na = (long)getline(&a, &ca, f) - 1, nb = (long)getline(&b, &cb, f) - 1;
  fclose(f);
  long *d = malloc((size_t)(na + 1) * (size_t)(nb + 1) * sizeof *d);
#define D(r, c) d[(r) * (nb + 1) + (c)]
  for (long r = 0; r <= na; r++)
    for (long c = 0; c <= nb; c++) {
      if (!r || !c)
        D(r, c) = r + c;
      else {
        long v = D(r - 1, c - 1) + (a[r - 1] != b[c - 1]);
        if (D(r - 1, c) + 1 < v)
          v = D(r - 1, c) + 1;
        if (D(r, c - 1) + 1 < v)
          v = D(r, c - 1) + 1;
        D(r, c) = v;
      }
    }
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  json_t *resp = NULL;
  assert_int_equal(harness_http(url, "GET", path, ADMIN, NULL, 0, &resp, NULL, NULL), 200);
  json_t *tasks = json_object_get(resp, "tasks");
  assert_int_equal(json_array_size(tasks), ntasks);
  size_t k;
  json_t *t;
  json_array_foreach(tasks, k, t) {
    int i = 0, j = 0;
    assert_int_equal(sscanf(json_string_value(json_object_get(t, "id")), "%d,%d", &i, &j), 2);
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    const char *out = json_string_value(json_object_get(t, "output"));
    assert_non_null(out);
    long r1 = (i + 1) * bs < na ? (i + 1) * bs : na, c0 = (long)j * bs;
    long c1 = (j + 1) * bs < nb ? (j + 1) * bs : nb;
    const char *p = strstr(out, "bottom ");
    assert_non_null(p);
    p += 7;
    int bad = 0;
    for (long c = c0; c <= c1; c++) {
      char *end;
      long v = strtol(p, &end, 10);
      if (v != D(r1, c) && strict)
        fail_msg("task %d,%d: D[%ld][%ld] = %ld, expected %ld", i, j, r1, c, v, D(r1, c));
      bad |= v != D(r1, c);
      p = end;
    }
    wrong += bad;
  }
#undef D
  json_decref(resp);
  free(d);
  free(a);
  free(b);
  return wrong;
}

