/* server_fixture.h — a real cairn-server on a fresh database in a fresh
 * temporary folder, for the tests that speak to one master over HTTP: as
 * cmocka setup/teardown pairs, or opened and closed by a test itself (a
 * master with arguments of the test's own, one a test function). The
 * master may be stopped and started again on the same database, and the
 * workers a test starts against it are stopped with it. */
#ifndef CAIRN_TESTS_SERVER_FIXTURE_H
#define CAIRN_TESTS_SERVER_FIXTURE_H

#include <sys/types.h>

#include "tests/support/harness.h"

#define SERVER_FIXTURE_WORKERS 32

typedef struct server_fixture {
  char dir[4096];
  char db[4200];      /* DIR/cairn.db; a test may name another file before
                       * (re)starting the master (a file system of its own) */
  harness_server srv; /* srv.pid 0: stopped */
  int port;           /* the server's port, for raw sockets */
  char vol[65];       /* a registered volunteer's token, when the test asked */
  /* processes the test started against the master (server_fixture_worker
   * or by hand), stopped by the close before the master; 0: none or reaped */
  pid_t workers[SERVER_FIXTURE_WORKERS];
  int nworkers;
} server_fixture;

/* Fills f (zeroed first): a fresh folder (harness_tmpdir) and a master on
 * DIR/cairn.db with the arguments extra (NULL-terminated; NULL: none),
 * unless start is 0 (server_fixture_restart starts it). 0, or -1 when the
 * master did not start. */
int server_fixture_open(server_fixture *f, const char *const *extra, int start);
/* Stops f's workers (SIGTERM, then SIGKILL after 20 s) and its master
 * (SIGTERM) and removes its folder (unless CAIRN_TEST_KEEP is set: then it
 * is named at exit). 0, or -1 when the master, if it ran, did not exit with
 * status 0 (a sanitizer finding makes it exit otherwise) or the folder
 * could not be removed. */
int server_fixture_close(server_fixture *f);

/* Stops f's master with sig (SIGTERM, SIGKILL) and reaps it: its wait
 * status, -1 when none ran. */
int server_fixture_stop(server_fixture *f, int sig);
/* Starts a master again on f's database (after server_fixture_stop, or
 * the first one of a fixture opened with start 0), with extra (NULL:
 * none); srv.url and port are its own. 0, or -1. */
int server_fixture_restart(server_fixture *f, const char *const *extra);

/* Starts worker name against f's master (harness_worker: its folder and log
 * in f's folder) with args, and counts it among f's workers; its pid, or -1
 * (none counted). */
pid_t server_fixture_worker(server_fixture *f, const char *name, const char *const *args);
/* Submits job (a job file's JSON) to f's master with the admin token: its
 * id; the test fails (cmocka) unless the answer is 201. */
long long server_fixture_submit(server_fixture *f, const char *job);
/* GET path of f's master with the admin token: the answer's JSON (caller
 * frees); the test fails (cmocka) unless the answer is 200. */
json_t *server_fixture_get(server_fixture *f, const char *path);
/* Counts pid (a process the test started, > 0) among f's workers; pid. */
pid_t server_fixture_track(server_fixture *f, pid_t pid);
/* pid, one of f's workers, was stopped and reaped by the test: the close
 * leaves it alone. */
void server_fixture_reaped(server_fixture *f, pid_t pid);

/* cmocka fixtures. *state becomes a server_fixture (malloc'd) with a
 * running master: with extra arguments (server_fixture_start), none
 * (_setup), or none and volunteer "w1" of app "sum" registered (token in
 * vol); or with its folder only, the test starting the master
 * (_setup_stopped, then server_fixture_restart). The teardown closes it
 * and frees it; it fails as the close does. */
int server_fixture_start(void **state, const char *const *extra);
int server_fixture_setup(void **state);
int server_fixture_setup_with_volunteer(void **state);
int server_fixture_setup_stopped(void **state);
int server_fixture_teardown(void **state);

#endif
