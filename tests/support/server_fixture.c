/* server_fixture.c — see server_fixture.h. */
#include "tests/support/server_fixture.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int server_fixture_setup(void **state) {
  server_fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  harness_tmpdir(f->dir, sizeof f->dir);
  char db[4200];
  snprintf(db, sizeof db, "%s/cairn.db", f->dir);
  if (harness_server_start(&f->srv, db, NULL)) {
    free(f);
    return -1;
  }
  const char *colon = strrchr(f->srv.url, ':');
  f->port = colon ? atoi(colon + 1) : 0;
  *state = f;
  return 0;
}

int server_fixture_setup_with_volunteer(void **state) {
  if (server_fixture_setup(state))
    return -1;
  server_fixture *f = *state;
  return harness_register(f->srv.url, "w1", "sum", f->vol) > 0 ? 0 : -1;
}

int server_fixture_teardown(void **state) {
  server_fixture *f = *state;
  int st = harness_server_stop(&f->srv, SIGTERM);
  free(f);
  return st == 0 ? 0 : -1;
}
