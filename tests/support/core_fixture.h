/* core_fixture.h — a master core (server/core.h) on a real SQLite file in a
 * fresh temporary directory, as a cmocka setup/teardown pair for the tests
 * that drive the core in-process. */
#ifndef CAIRN_TESTS_CORE_FIXTURE_H
#define CAIRN_TESTS_CORE_FIXTURE_H

#include "server/core.h"

typedef struct core_fixture {
  char dir[256];
  char db[300];
  cairn_core *c;
} core_fixture;

/* Opens a core on f->db (durable off); fails the test when it cannot. */
cairn_core *core_fixture_open(core_fixture *f);
/* Closes f->c and opens it again on the same database. */
void core_fixture_reopen(core_fixture *f);
/* Submits the job file text (server mode) to c; its id, or fails the test
 * naming the refusal. */
int64_t core_fixture_submit(cairn_core *c, const char *text);
/* cmocka group fixtures: *state becomes a core_fixture with an open core. */
int core_fixture_setup(void **state);
int core_fixture_teardown(void **state);

#endif
