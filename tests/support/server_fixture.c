/* server_fixture.c — see server_fixture.h. */
#include "tests/support/server_fixture.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static void set_port(server_fixture *f) {
  const char *colon = strrchr(f->srv.url, ':');
  f->port = colon ? atoi(colon + 1) : 0;
}

int server_fixture_open(server_fixture *f, const char *const *extra, int start) {
  memset(f, 0, sizeof *f);
  harness_tmpdir(f->dir, sizeof f->dir);
  snprintf(f->db, sizeof f->db, "%s/cairn.db", f->dir);
  return start ? server_fixture_restart(f, extra) : 0;
}

int server_fixture_close(server_fixture *f) {
  harness_stop_all(f->workers, f->nworkers, 20);
  f->nworkers = 0;
  int st = f->srv.pid > 0 ? server_fixture_stop(f, SIGTERM) : 0;
  if (st != 0)
    fprintf(stderr, "server_fixture: the master stopped with status %d\n", st);
  const char *keep = getenv("CAIRN_TEST_KEEP");
  int rc = keep && *keep ? 0 : harness_rmtree(f->dir); /* else kept and named at exit */
  return st == 0 && rc == 0 ? 0 : -1;
}

int server_fixture_stop(server_fixture *f, int sig) {
  return f->srv.pid > 0 ? harness_server_stop(&f->srv, sig) : -1;
}

int server_fixture_restart(server_fixture *f, const char *const *extra) {
  if (harness_server_start(&f->srv, f->db, extra)) {
    f->srv.pid = 0; /* it did not start, or was reaped */
    return -1;
  }
  set_port(f);
  return 0;
}

pid_t server_fixture_track(server_fixture *f, pid_t pid) {
  if (pid > 0 && f->nworkers < SERVER_FIXTURE_WORKERS)
    f->workers[f->nworkers++] = pid;
  return pid;
}

void server_fixture_reaped(server_fixture *f, pid_t pid) {
  for (int i = 0; i < f->nworkers; i++)
    if (f->workers[i] == pid)
      f->workers[i] = 0;
}

pid_t server_fixture_worker(server_fixture *f, const char *name, const char *const *args) {
  return server_fixture_track(f, harness_worker(f->srv.url, f->dir, name, args));
}

static int make(void **state, const char *const *extra, int start) {
  server_fixture *f = malloc(sizeof *f);
  if (!f)
    return -1;
  if (server_fixture_open(f, extra, start)) {
    free(f);
    return -1;
  }
  *state = f;
  return 0;
}

int server_fixture_start(void **state, const char *const *extra) { return make(state, extra, 1); }

int server_fixture_setup_stopped(void **state) { return make(state, NULL, 0); }

int server_fixture_setup(void **state) { return server_fixture_start(state, NULL); }

int server_fixture_setup_with_volunteer(void **state) {
  if (server_fixture_setup(state))
    return -1;
  server_fixture *f = *state;
  return harness_register(f->srv.url, "w1", "sum", f->vol) > 0 ? 0 : -1;
}

int server_fixture_teardown(void **state) {
  server_fixture *f = *state;
  int rc = server_fixture_close(f);
  free(f);
  return rc;
}

long long server_fixture_submit(server_fixture *f, const char *job) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "POST", "/v1/jobs", HARNESS_ADMIN_TOKEN, job, strlen(job),
                         &r, NULL, NULL);
  if (st != 201)
    fail_msg("submit: HTTP %ld", st);
  long long id = (long long)json_integer_value(json_object_get(r, "id"));
  json_decref(r);
  return id;
}

json_t *server_fixture_get(server_fixture *f, const char *path) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "GET", path, HARNESS_ADMIN_TOKEN, NULL, 0, &r, NULL, NULL);
  if (st != 200)
    fail_msg("GET %s: HTTP %ld", path, st);
  return r;
}
