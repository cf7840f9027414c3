/* report_fixture.h — a worker's peer state (worker/peerstate.h) as the
 * report tests drive it: reports begun, read as JSON and ended. */
#ifndef CAIRN_TESTS_REPORT_FIXTURE_H
#define CAIRN_TESTS_REPORT_FIXTURE_H

#include <jansson.h>
#include <stddef.h>

#include "worker/peerstate.h"

/* ps as after hearing a master that takes every report field. */
void report_fixture_init(cairn__peerstate *ps);
/* The body of a heartbeat's report, parsed (caller decrefs); the report
 * stays open in *r. */
json_t *report_fixture_begin(cairn__peerstate *ps, cairn__peer_report *r);
/* Entries of array field ("fetched", "failed", ...) in one heartbeat's
 * report, ended as delivered or not. */
size_t report_fixture_count(cairn__peerstate *ps, const char *field, int delivered);

#endif
