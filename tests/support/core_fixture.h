/* core_fixture.h — a master core (server/core/core.h) on a real SQLite file in a
 * fresh temporary directory, as a cmocka setup/teardown pair for the tests
 * that drive the core in-process. */
#ifndef CAIRN_TESTS_CORE_FIXTURE_H
#define CAIRN_TESTS_CORE_FIXTURE_H

#include "server/core/core.h"
#include "server/core/views.h"

typedef struct core_fixture {
  char dir[256];
  char db[300];
  cairn__core *c;
} core_fixture;

/* Opens a core on f->db (durable off); fails the test when it cannot. */
cairn__core *core_fixture_open(core_fixture *f);
/* Closes f->c and opens it again on the same database. */
void core_fixture_reopen(core_fixture *f);
/* Submits the job file text (server mode) to c; its id, or fails the test
 * naming the refusal. */
int64_t core_fixture_submit(cairn__core *c, const char *text);
/* Driving the core as requests would (each fails the test naming the
 * refusal): registers a volunteer of cluster "rack" with slots slots and
 * team (NULL: none), without a file server; its id. */
int64_t core_fixture_register(cairn__core *c, const char *name, const char *team, int slots);
/* v asks for work and gets a task; its accountable index. */
int64_t core_fixture_take(cairn__core *c, int64_t v);
/* v's result for idx: output out, CPU seconds claimed cpu (< 0: none). */
void core_fixture_result(cairn__core *c, int64_t v, int64_t idx, const char *out, double cpu);
/* File sha (size bytes, recorded only) and a job of app "big" with ntasks
 * tasks reading it as a broadcast input ("big.bin", policy fifo); its id. */
int64_t core_fixture_broadcast_job(cairn__core *c, const char *sha, int64_t size, int ntasks);
/* v's heartbeat (it runs nothing) with report r, then says it holds sha. */
void core_fixture_heartbeat(cairn__core *c, int64_t v, cairn__report *r);
void core_fixture_have(cairn__core *c, int64_t v, const char *sha);

/* Reading what the core's transitions left, through its views (each fails
 * the test when there is no such thing): what it says of volunteer v
 * (cairn__core_volunteer); of task pos of job (cairn__core_task_info,
 * without its results). */
cairn__vol_info core_fixture_vol(cairn__core *c, int64_t v);
cairn__task_info core_fixture_task(cairn__core *c, int64_t job, uint32_t pos);
/* Volunteer v's record (cairn__vol_find_locked, the lock taken for the
 * look-up), for the tests that hand it to a module's function. */
mvol *core_fixture_mvol(cairn__core *c, int64_t v);

/* cmocka group fixtures: *state becomes a core_fixture with an open core. */
int core_fixture_setup(void **state);
int core_fixture_teardown(void **state);

#endif
