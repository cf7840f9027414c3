/* core_fixture.c — see core_fixture.h. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/jobspec.h"
#include "common/log.h"
#include "tests/support/core_fixture.h"

cairn_core *core_fixture_open(core_fixture *f) {
  cairn_error err = {0};
  cairn_logger quiet;
  cairn_logger_init(&quiet, CAIRN_LOG_ERROR, NULL, NULL);
  cairn_core *c = cairn__core_open(f->db, 0, NULL, &quiet, -1, &err);
  if (!c)
    fail_msg("cannot open the core on %s: %s", f->db, err.text);
  return c;
}

void core_fixture_reopen(core_fixture *f) {
  cairn__core_close(f->c);
  f->c = core_fixture_open(f);
}

int core_fixture_setup(void **state) {
  core_fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/cairn-core-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(f->dir)) {
    free(f);
    return -1;
  }
  snprintf(f->db, sizeof f->db, "%s/cairn.db", f->dir);
  *state = f;
  f->c = core_fixture_open(f);
  return 0;
}

int core_fixture_teardown(void **state) {
  core_fixture *f = *state;
  cairn__core_close(f->c);
  char p[400];
  static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    snprintf(p, sizeof p, "%s%s", f->db, suffix[i]);
    unlink(p);
  }
  snprintf(p, sizeof p, "%s.files", f->db);
  rmdir(p);
  int rc = rmdir(f->dir);
  free(f);
  return rc;
}

int64_t core_fixture_submit(cairn_core *c, const char *text) {
  cairn_error err = {0};
  cairn_jobspec *spec = cairn_jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_SERVER, &err);
  if (!spec)
    fail_msg("job rejected: %s", err.text);
  int64_t id = 0;
  if (cairn__core_submit(c, spec, &id, &err) != CAIRN_OK)
    fail_msg("submit: %s", err.text);
  return id;
}
