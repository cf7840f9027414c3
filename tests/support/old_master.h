/* old_master.h — a stand-in for an older Cairn master, over real HTTP on
 * loopback, for the workers' fallback tests: it answers a request whose
 * body carries a distribution field it does not know with 400 "unknown
 * field", anything else with 200 {"extended": []}, and keeps the first 8
 * bodies it was sent. */
#ifndef CAIRN_TESTS_OLD_MASTER_H
#define CAIRN_TESTS_OLD_MASTER_H

#include <pthread.h>

#include "worker/peerstate.h"

/* How much of the report a master knows: "have" (with "served" and
 * "peer_url"), then "fetched", then "failed". */
enum { OLD_KNOWS_NOTHING, OLD_KNOWS_HAVE, OLD_KNOWS_FETCHED, OLD_KNOWS_FAILED };

typedef struct old_master {
  struct MHD_Daemon *d;
  unsigned port;
  int knows;
  pthread_mutex_t mu;
  char *bodies[8];
  int n;
} old_master;

/* Starts m on an ephemeral loopback port. 0, or -1. */
int old_master_start(old_master *m, int knows);
void old_master_stop(old_master *m);
/* One heartbeat report from ps through a worker session to m, retried as
 * the session does until m answers 200. 0 when it did, else -1. */
int old_master_heartbeat(old_master *m, cairn__peerstate *ps);

#endif
