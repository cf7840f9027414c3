/* server_fixture.h — a real cairn-server on a fresh database in a fresh
 * temporary folder, as a cmocka group setup/teardown pair, for the tests
 * that speak to one master over HTTP. */
#ifndef CAIRN_TESTS_SERVER_FIXTURE_H
#define CAIRN_TESTS_SERVER_FIXTURE_H

#include "tests/support/harness.h"

typedef struct server_fixture {
  char dir[4096];
  harness_server srv;
  int port;           /* the server's port, for raw sockets */
  char vol[65];       /* a registered volunteer's token, when the test asked */
} server_fixture;

/* *state becomes a server_fixture with a running server. */
int server_fixture_setup(void **state);
/* The same, plus volunteer "w1" of app "sum" registered (token in vol). */
int server_fixture_setup_with_volunteer(void **state);
/* Stops the server with SIGTERM; fails unless it exited 0 (a sanitizer
 * finding makes it exit otherwise). */
int server_fixture_teardown(void **state);

#endif
