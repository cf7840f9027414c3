/* test_peer_max.c — a holder started with --peer-max 1 (docs/protocol.md,
 * "Reports and features", "peer_max"): a real cairn-server and four real
 * cairn-workers on loopback, each with --peer-max 1 and its downloads
 * capped at 1 MiB/s, run a task that writes a 4 MiB file kept on its
 * worker and three children that read it at once. The workers say their
 * --peer-max in their reports, so the master names each holder the source
 * of one copy at a time (the other children wait, then copy from a child
 * that holds it): no worker is answered 503, no peer failure is reported,
 * the file is never taken for lost (no recomputation), the master sends
 * none of its bytes, and every child read the right file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/editdist.h"
#include "tests/support/harness.h"
#include "tests/support/server_fixture.h"

#define NWORKERS 4
#define NCHILDREN 3
#define OUT_BYTES (4u * 1024 * 1024)

/* 1 when the log of worker i holds text. */
static int logged(const char *dir, int i, const char *text) {
  char path[4200];
  snprintf(path, sizeof path, "%s/w%d.log", dir, i);
  FILE *f = fopen(path, "r");
  if (!f)
    return 0;
  size_t cap = 8u << 20;
  char *buf = malloc(cap + 1);
  size_t n = buf ? fread(buf, 1, cap, f) : 0;
  fclose(f);
  if (!buf)
    return 0;
  buf[n] = '\0';
  int found = strstr(buf, text) != NULL;
  free(buf);
  return found;
}

static void test_peer_max_one(void **state) {
  (void)state;
  char text[4096], path[4300], zeros[65];
  pid_t w[NWORKERS] = {0};
  e2e_init();
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  unsigned char *z = calloc(1, OUT_BYTES);
  assert_non_null(z);
  cairn__sha256_hex(z, OUT_BYTES, zeros);
  free(z);

  size_t n = (size_t)snprintf(text, sizeof text,
                              "{\"name\": \"pm\", \"app\": \"sum\", \"policy\": \"fifo\", "
                              "\"lease_seconds\": 30, \"max_attempts\": 10, \"tasks\": ["
                              "{\"id\": \"p\", \"outputs\": [\"o.bin\"], \"args\": [\"-c\", "
                              "\"head -c %u /dev/zero > o.bin; echo made\"]}",
                              OUT_BYTES);
  for (int i = 0; i < NCHILDREN; i++)
    n += (size_t)snprintf(text + n, sizeof text - n,
                          ", {\"id\": \"c%d\", \"inputs\": [\"p/o.bin\"], \"after\": [\"p\"], "
                          "\"args\": [\"-c\", \"sha256sum < inputs/p/o.bin\"]}",
                          i);
  snprintf(text + n, sizeof text - n, "]}\n");
  snprintf(path, sizeof path, "%s/job.json", dir);
  assert_int_equal(harness_write_file(path, text), 0);

  for (int i = 0; i < NWORKERS; i++) {
    char name[16];
    snprintf(name, sizeof name, "w%d", i);
    const char *args[] = {"--app", "sum=/bin/sh", "--cluster", "a", "--slots", "1",
                          "--peer-listen", "127.0.0.1:0", "--peer-max", "1",
                          "--download-limit", "1024", "--exit-when-idle", "300",
                          "--stall-timeout", "10", "--log-level", "info", NULL};
    w[i] = harness_worker(sf.srv.url, dir, name, args);
    assert_true(w[i] > 0);
  }
  long long job = e2e_submit(sf.srv.url, dir);
  assert_string_equal(e2e_wait(sf.srv.url, job, 240), "done");

  /* every child read the file p wrote */
  json_t *r = NULL;
  snprintf(path, sizeof path, "/v1/jobs/%lld/tasks", job);
  assert_int_equal(harness_http(sf.srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL,
                                NULL),
                   200);
  json_t *tasks = json_object_get(r, "tasks");
  assert_int_equal(json_array_size(tasks), NCHILDREN + 1);
  for (size_t i = 0; i < json_array_size(tasks); i++) {
    json_t *t = json_array_get(tasks, i);
    const char *id = json_string_value(json_object_get(t, "id"));
    assert_string_equal(json_string_value(json_object_get(t, "state")), "done");
    if (id[0] == 'c')
      assert_memory_equal(json_string_value(json_object_get(t, "output")), zeros, 64);
  }
  json_decref(r);

  /* one copy at a time from each holder: nobody was refused or lost */
  assert_int_equal(harness_metric(sf.srv.url, "cairn_outputs_recomputed_total "), 0);
  assert_int_equal(harness_metric(sf.srv.url, "cairn_peer_failures_total{"), 0);
  assert_int_equal(harness_metric(sf.srv.url, "cairn_file_bytes_served_total{source=\"master\"}"),
                   0);
  for (int i = 0; i < NWORKERS; i++)
    assert_false(logged(dir, i, "is busy (503)"));

  harness_stop_all(w, NWORKERS, 60);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_peer_max_one),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
