/* session.h — the worker's identity shared by its threads, and requests on
 * volunteer routes made with it.
 *
 * open() reuses DIR/credentials.json when it names the same master, else
 * registers and writes it. A registration carries the baseline fields only
 * (name, cluster, apps, slots), plus the offer ("resources") when the
 * master is known to take it (a re-registration): its answer tells the
 * report fields the master takes (its features), and the peer URL and the
 * offer go in the first report after it. A worker that reuses its credentials learns the features from
 * its first heartbeat (peerstate.h). request() sends with the current
 * token; when the master answers 401 (it no longer knows the token) the
 * session registers again, overwrites the credentials and retries once, so
 * every thread moves to the new identity. Each thread brings its own
 * cairn__http (handles are not thread-safe) inside a cairn__conn. Private to
 * worker/.
 */
#ifndef CAIRN_SESSION_H
#define CAIRN_SESSION_H

#include <jansson.h>
#include <pthread.h>

#include "worker/credentials.h"
#include "common/log.h"
#include "worker/peerstate.h"
#include "worker/stopper.h"
#include "worker/transport.h"

typedef struct cairn__session {
  pthread_mutex_t mu;
  char *path;                   /* DIR/credentials.json */
  cairn__registration reg;      /* borrowed from the worker */
  cairn__credentials cred;
  unsigned generation;          /* bumped by every registration */
  cairn__stopper *stopper;      /* borrowed */
  long long give_up_ms;         /* open() stops retrying at this monotonic time; 0: never */
  cairn__peerstate *peers;      /* borrowed, may be NULL; set before open() */
  const cairn__logger *log;      /* borrowed: the worker's (NULL: stderr); set after init */
  cairn__resources offer;        /* reported as "resources" when cores > 0; set after init */
} cairn__session;

/* A thread's connection: its own HTTP handle and the identity it last used. */
typedef struct cairn__conn {
  cairn__http *http;
  unsigned generation;
  long wait_ms;       /* > 0: a work body asks the master to hold it this long
                       * ("wait"), when the master lists the feature */
} cairn__conn;

/* Sets up s; takes nothing over. Returns CAIRN_ENOMEM or CAIRN_OK. */
cairn_status cairn__session_init(cairn__session *s, const char *cred_path,
                                 const cairn__registration *reg, cairn__stopper *stopper,
                                 cairn_error *err);
void cairn__session_destroy(cairn__session *s);

/* Loads or obtains the identity. Retries transient failures (master not up
 * yet) with backoff until it works, the stopper stops or give_up_ms passes.
 * Returns CAIRN_OK; CAIRN_EIO when stopped or given up first; CAIRN_EFORBIDDEN or CAIRN_EINVAL (fatal)
 * with err set. */
cairn_status cairn__session_open(cairn__session *s, cairn__conn *c, cairn_error *err);

/* Like cairn__http_request() on a volunteer route, with the 401 handling
 * above. A failed re-registration is returned as its error (CAIRN_EIO:
 * try later; CAIRN_EFORBIDDEN/CAIRN_EINVAL: fatal). */
cairn_status cairn__session_request(cairn__session *s, cairn__conn *c, const char *method,
                                    const char *path, const char *json_body, size_t max_response,
                                    cairn__http_response *resp, cairn_error *err);

/* POST to path (/v1/work or /v1/heartbeat), as cairn__session_request()
 * does, with a body reporting what the master has not heard from s->peers
 * yet (peerstate.h) in the fields the body takes (CAIRN_WORK_FIELDS or
 * CAIRN_HEARTBEAT_FIELDS) and the master advertised, "resources" (s->offer)
 * when the body and the master take it, and "running" (the
 * indices running[0..nrunning) whose leases a heartbeat renews) when
 * running is not NULL and the master takes it, and "suspended" (the
 * indices suspended[0..nsuspended) of those the worker keeps stopped)
 * when it is not NULL and the master takes it, and "wait" (c->wait_ms) when
 * it is above 0 and the master takes it. The report is confirmed
 * when the master answers 2xx, else its entries wait for the next one. The
 * local IP of the connection is noted as the peer server's host when none
 * was configured. */
cairn_status cairn__session_report(cairn__session *s, cairn__conn *c, const char *path,
                                   unsigned fields, const int64_t *running, size_t nrunning,
                                   const int64_t *suspended, size_t nsuspended,
                                   size_t max_response, cairn__http_response *resp,
                                   cairn_error *err);

/* What a heartbeat says of its own (all borrowed for the call). */
typedef struct cairn__beat {
  const int64_t *running;   /* as cairn__session_report's */
  size_t nrunning;
  const int64_t *suspended;
  size_t nsuspended;
  const cairn__report_progress *progress; /* at most CAIRN_MAX_PROGRESS */
  size_t nprogress;
  int cpid;                 /* 1: "cpid" asked for, or offered when cpid_id is set */
  const char *cpid_id;      /* 32 hex digits, or NULL */
  int64_t cpid_time;
} cairn__beat;

/* POST /v1/heartbeat as cairn__session_report sends it (b's running and
 * suspended), with "progress" (b's) when there is some and the master
 * takes it, and "cpid" (common/protocol.h) when b asks and the master
 * takes it. */
cairn_status cairn__session_heartbeat(cairn__session *s, cairn__conn *c, const cairn__beat *b,
                                      size_t max_response, cairn__http_response *resp,
                                      cairn_error *err);

/* POST /v1/work as cairn__session_report sends it, with "max": max (1 to
 * CAIRN_MAX_BATCH; only to a master that lists "batch"). */
cairn_status cairn__session_work_many(cairn__session *s, cairn__conn *c, unsigned max,
                                      size_t max_response, cairn__http_response *resp,
                                      cairn_error *err);

/* Points c's handle at the current token (e.g. before a download). */
void cairn__session_prepare(cairn__session *s, cairn__conn *c);

/* The volunteer id and row (for logs). */
void cairn__session_identity(cairn__session *s, long long *id, long long *row);

/* 1 when (rc, status) means "try again later": no answer, 429 or 5xx. */
int cairn__transient(cairn_status rc, long status);

#endif
