/* old_master.h — a stand-in master over real HTTP on loopback, for the
 * workers' tests of what they send a master that takes fewer report fields
 * (common/protocol.h) than they know: by default one without the feature
 * list (the earliest master, whose heartbeat took an empty body), which
 * answers a body that carries any report field (or "team", "cpu_seconds")
 * with 400 "unknown field";
 * or one that lists some features, which answers 400 to a field it does
 * not list. Anything else gets 200 {"extended": []}, with the list when it
 * has one. It keeps the first 8 bodies it was sent. */
#ifndef CAIRN_TESTS_OLD_MASTER_H
#define CAIRN_TESTS_OLD_MASTER_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "worker/peerstate.h"

typedef struct old_master {
  struct MHD_Daemon *d;
  unsigned port;
  int features;  /* the feature set it lists, -1: no list */
  pthread_mutex_t mu;
  char *bodies[8];
  int n;
  cairn__resources offer; /* the worker's offer old_master_heartbeat() reports
                          * (when the master takes it); zero after start: none */
} old_master;

/* Starts m on an ephemeral loopback port, listing features (a set of
 * CAIRN_FEAT_*), or no list when features is -1. 0, or -1. */
int old_master_start(old_master *m, int features);
void old_master_stop(old_master *m);
/* One heartbeat as the worker's heartbeat thread sends it: a report from
 * ps, with running[0..nrunning) as the leases it runs, through a worker
 * session to m; ps takes the features of the answer, as the heartbeat
 * thread does. 0 when m answered 200, else -1. */
int old_master_heartbeat(old_master *m, cairn__peerstate *ps, const int64_t *running,
                         size_t nrunning);

#endif
