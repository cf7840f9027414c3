/* peerstate.h — what a worker and its master tell each other about relaying
 * broadcast inputs (docs/protocol.md, "Data distribution"): the peer key
 * the master issued, the URL of this worker's peer server and whether the
 * master has heard it, the verified cache files, the bytes served to peers,
 * the measured downloads and the peer sources that failed not reported yet,
 * and which report fields the master takes (its features,
 * common/protocol.h).
 * Shared by the task threads, the heartbeat thread and the peer server's
 * thread: every call is thread-safe. Private to worker/.
 *
 * A report is one request body: report_begin() takes what is pending out of
 * the pending sets, for the fields both the body and the master take;
 * report_end() confirms it (the master answered) or puts it back (it did
 * not). Until the master's features are known (registration or heartbeat
 * answers tell them), reports take nothing and a heartbeat is due soon to
 * learn them; a master that lists none (an older one) takes the baseline,
 * none of these fields, and what is pending waits for one that does.
 */
#ifndef CAIRN_PEERSTATE_H
#define CAIRN_PEERSTATE_H

#include <pthread.h>
#include <stddef.h>

#include "common/grant.h"
#include "common/log.h"
#include "common/protocol.h"

/* Files listed in "have" per report (the master takes more: CAIRN_MAX_HAVE). */
#define CAIRN__HAVE_PER_REPORT 64
_Static_assert(CAIRN__HAVE_PER_REPORT <= CAIRN_MAX_HAVE, "have per report over the cap");
/* Downloads waiting to be reported; beyond it the oldest are dropped (a
 * master that does not take them, or one that cannot be reached). */
#define CAIRN__FETCHED_PENDING 256
/* Failed sources waiting to be reported; beyond it the oldest are dropped. */
#define CAIRN__FAILED_PENDING 256

typedef struct cairn__shalist {
  char (*v)[65];
  unsigned long long *bytes;  /* parallel to v for served counts, else NULL */
  size_t n, cap;
} cairn__shalist;

/* One download of file sha256 from source (as the master named it), to
 * report: a verified one ("fetched": bytes received in ms milliseconds,
 * reason -1) or one that failed ("failed": why, a CAIRN_FAIL_* reason of
 * common/protocol.h; bytes and ms 0). */
typedef struct cairn__fetched {
  char sha256[65];
  char source[CAIRN_MAX_SOURCE_LEN + 1];
  unsigned long long bytes;
  long long ms;
  int reason;
} cairn__fetched;

typedef struct cairn__fetchlist {
  cairn__fetched *v;  /* oldest first */
  size_t n, cap;
} cairn__fetchlist;

/* One report: what it took from the pending sets (owned), and the report
 * itself (wire), whose strings borrow from those. */
typedef struct cairn__peer_report {
  cairn__shalist have;       /* sha256s sent in "have" */
  cairn__shalist served;     /* "served" entries sent */
  cairn__fetchlist fetched;  /* "fetched" entries sent */
  cairn__fetchlist failed;   /* "failed" entries sent */
  char *url;                 /* "peer_url" sent, or NULL */
  cairn__report wire;         /* the fields taken; the caller may add "running" */
} cairn__peer_report;

typedef struct cairn__peerstate {
  pthread_mutex_t mu;
  char key[65];            /* peer key (common/grant.h), "" until the master issues one */
  int key_wanted;          /* a grant failed the key: it may be stale, ask the master */
  char *address;           /* host advertised (configured), or NULL: learned */
  char learned[64];        /* local IP towards the master, "" until known */
  unsigned port;           /* the peer server's port; 0: no server */
  unsigned peer_max;       /* files it sends at once (--peer-max); 0: not said */
  char *heard_url;         /* the peer_url the master last took, or NULL */
  cairn__shalist pending;  /* files held, not reported yet */
  cairn__shalist reported; /* files held and reported */
  cairn__shalist served;   /* bytes served per file, not reported yet */
  cairn__fetchlist fetched; /* downloads not reported yet */
  cairn__fetchlist failed;  /* failed peer sources not reported yet */
  cairn__shalist kept;     /* task outputs kept in the cache (offered to the
                              master when the worker leaves) */
  unsigned long long served_total;
  int features;            /* the master's feature set (CAIRN_FEAT_*), -1: unknown */
  const cairn__logger *log; /* borrowed: the worker's (NULL: stderr); set after init */
} cairn__peerstate;

/* address: the host to advertise (copied), or NULL to learn it from the
 * connection to the master. Returns 0, or -1 on out of memory. */
int cairn__peerstate_init(cairn__peerstate *ps, const char *address);
void cairn__peerstate_destroy(cairn__peerstate *ps);

/* Notes that sha256 is a task's output kept in the cache ("keep":
 * "workers", docs/worker.md). O(outputs kept). */
void cairn__peerstate_kept(cairn__peerstate *ps, const char *sha256);
/* Moves the kept outputs noted so far into *out (caller frees out->v). */
void cairn__peerstate_kept_take(cairn__peerstate *ps, cairn__shalist *out);

/* The peer server listens on port (0: it does not run). */
void cairn__peerstate_set_port(cairn__peerstate *ps, unsigned port);
/* The peer server sends n files at once (1 to CAIRN_MAX_PEER_MAX): every
 * report to a master that lists "peer_max" says it while the server runs. */
void cairn__peerstate_set_peer_max(cairn__peerstate *ps, unsigned n);
/* Notes the local IP address of a connection to the master; when no host
 * was configured it becomes the advertised one (a change makes the URL new
 * to the master). */
void cairn__peerstate_learn_ip(cairn__peerstate *ps, const char *ip);
/* "http://HOST:PORT" (caller frees), or NULL: no server or host unknown. */
char *cairn__peerstate_url(cairn__peerstate *ps);

/* Takes the peer key the master issued (ignored unless 64 lowercase hex).
 * It replaces the one before at once: a new key means the master revoked
 * the grants made with the old one (a ban). */
void cairn__peerstate_set_key(cairn__peerstate *ps, const char *key);
/* Checks a peer's grant for file sha256 (common/grant.h) at time now (Unix
 * seconds); CAIRN_GRANT_WRONG also when no key was issued yet. A grant the
 * key does not verify may mean the key is stale: the next heartbeat comes
 * soon (cairn__peerstate_beat_due) and brings the current one. */
cairn__grant_verdict cairn__peerstate_check_grant(cairn__peerstate *ps, const char *sha256,
                                                 const char *grant, long long now);

/* A verified file now in the cache (reported once). */
void cairn__peerstate_have(cairn__peerstate *ps, const char *sha256);
/* bytes of file sha256 were served to a peer. */
void cairn__peerstate_served(cairn__peerstate *ps, const char *sha256, unsigned long long bytes);
/* A verified download of file sha256: bytes received from source (the
 * string the master gave, copied) in ms milliseconds of monotonic time (ms
 * below 1 counts as 1); reported once. Dropped when source is longer than
 * CAIRN_MAX_SOURCE_LEN or not UTF-8, or sha256 is not a digest. */
void cairn__peerstate_fetched(cairn__peerstate *ps, const char *sha256, const char *source,
                              unsigned long long bytes, long long ms);
/* The download of file sha256 from the peer source (the string the master
 * gave, copied) failed for reason (CAIRN_FAIL_*); reported once. Dropped
 * like a download (source too long or not UTF-8, sha256 not a digest) and
 * when reason is out of range. The caller reports peers only, never the
 * master, and only failures that are the peer's (not a local disk error or
 * a cancel). */
void cairn__peerstate_failed(cairn__peerstate *ps, const char *sha256, const char *source,
                             int reason);
/* Bytes served since start (for logs and tests). */
unsigned long long cairn__peerstate_served_total(cairn__peerstate *ps);

/* The master registered this worker anew (it knows nothing of it): every
 * held file is pending again, and so is the peer URL; key (may be NULL)
 * is the peer key the answer issued, features what it advertised. */
void cairn__peerstate_registered(cairn__peerstate *ps, const char *key, unsigned features);
/* The master advertised features (a heartbeat answer: the set its
 * "features" list names, CAIRN_FEATURES_BASELINE when it has none). */
void cairn__peerstate_set_features(cairn__peerstate *ps, unsigned features);
/* The master's feature set, or -1 while unknown. */
int cairn__peerstate_features(cairn__peerstate *ps);

/* Begins a report for a body that takes fields (CAIRN_WORK_FIELDS or
 * CAIRN_HEARTBEAT_FIELDS): of those the master takes, "have" (at most
 * CAIRN__HAVE_PER_REPORT entries), "served" (at most CAIRN_MAX_SERVED
 * files), "fetched" (at most CAIRN_MAX_FETCHED downloads, oldest first),
 * "failed" (at most CAIRN_MAX_FAILED failed sources, oldest first), and
 * "peer_url" when the master has not heard the current one; nothing while
 * the features are unknown. r->wire holds the fields taken (none empty).
 * Returns 0, or -1 on out of memory (then nothing was taken and r is
 * empty); either way r is to be ended. */
int cairn__peerstate_report_begin(cairn__peerstate *ps, unsigned fields, cairn__peer_report *r);
/* Ends a report: delivered confirms it, else what it took is pending again.
 * Frees what r holds. */
void cairn__peerstate_report_end(cairn__peerstate *ps, cairn__peer_report *r, int delivered);

/* Whether the heartbeat thread should send a heartbeat now, since_ms after
 * the last one, without lease reasons: soon (after REPORT_SOON_MS) while
 * the master's features are unknown, to learn them; of the fields the
 * master takes, new holdings, failed sources or a new URL soon (the master
 * should stop offering a failing peer), served bytes and downloads every
 * IDLE_BEAT_MS (a download usually comes with a new holding, so it goes
 * soon). With a peer server, and when the master takes "running" (the
 * heartbeat then names the leases it extends): after KEY_SOON_MS when a
 * grant failed the peer key (it may be stale), and every KEY_REFRESH_MS
 * while it holds reported files (a ban renews keys). Never when there is nothing the master takes to report: a
 * heartbeat extends every lease the master counts as this volunteer's when
 * it cannot name the running ones, including one whose work answer never
 * arrived, which must be left to expire. */
int cairn__peerstate_beat_due(cairn__peerstate *ps, long long since_ms);

#endif
