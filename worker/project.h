/* project.h — one project a worker computes for (docs/worker.md, "Several
 * projects"): its master, its identity there, its state directory and what
 * lives in it (credentials, input cache, signed apps, task directories and
 * their records), its peer server, its leases and the results waiting for
 * its master. A worker of server_url has one, whose directory is DIR
 * itself (the layout of a worker of one project); a worker of projects has
 * one per project, each in DIR/projects/<id>, id derived from its URL.
 * Files of one project are never given to another's tasks or peers: each
 * has its own cache and peer server. Private to worker/.
 *
 * Ownership: the worker owns its array of projects (worker_int.h); each
 * project owns everything below. A project is set up by create() (init)
 * and run() (setup), torn down by delete(); run()'s threads use its parts
 * through their own thread-safe interfaces.
 */
#ifndef CAIRN_PROJECT_H
#define CAIRN_PROJECT_H

#include <stdint.h>

#include "cairn/worker.h"
#include "common/appsig.h"
#include "common/log.h"
#include "worker/appver.h"
#include "worker/auditlog.h"
#include "worker/backoff.h"
#include "worker/cache.h"
#include "worker/credentials.h"
#include "worker/diskcap.h"
#include "worker/leases.h"
#include "worker/outbox.h"
#include "worker/peer.h"
#include "worker/peerstate.h"
#include "worker/resume.h"
#include "worker/session.h"

#define CAIRN__MAX_PROJECTS 16
#define CAIRN__PROJECT_ID_LEN 16  /* hex digits of a project's id */
#define CAIRN__DEFAULT_SHARE 100  /* BOINC's default resource share */
#define CAIRN__MAX_SHARE 1000000u
#define CAIRN__URL_MAX 1024       /* characters of a master's URL */

typedef struct cairn__project {
  size_t k;                 /* its place in the worker's list */
  cairn_worker *owner;      /* borrowed: its worker, for the outbox's callback (tally.c) */
  char *server;             /* the master's base URL, without a trailing '/' */
  char id[CAIRN__PROJECT_ID_LEN + 1];
  unsigned share;           /* resource share; 0: a backup project */
  char *dir;                /* its state directory (set up by run) */
  cairn__logger log;        /* the worker's, labelled with the URL (several projects) */
  char *invitation;         /* sent only with a registration; NULL: none */
  char *account_key;        /* sent only with a registration; NULL: none; never logged */
  uint8_t project_key[32];  /* its signed apps' key */
  int has_project_key;
  char *cred_path, *run_dir, *cache_dir;
  cairn__pace pace;         /* every call to its master waits its turn here (backoff.h) */
  cairn__peerstate peers;   /* peer key, peer URL, holdings, features (its master's) */
  int peers_ok;
  cairn__peer *peer;        /* its peer file server while run() runs, or NULL */
  cairn__cache cache;       /* DIR'/cache */
  cairn__appver appver;     /* DIR'/apps (with its project key) */
  int appver_ok;
  cairn__diskcap diskcap;   /* its part of --max-disk */
  int diskcap_ok;
  cairn__resume resume;     /* DIR'/run's task records */
  int resume_ok;
  cairn__leases leases;     /* the leases of its tasks: entry i while slot i runs one */
  int leases_ok;
  cairn__session session;   /* its identity, DIR'/credentials.json */
  int session_ok;
  cairn__outbox outbox;     /* its results waiting for its master */
  int outbox_ok;
  cairn__auditlog audit;    /* DIR'/audit: its master's audit log as checked here */
  int audit_ok;
  int distrusted;           /* DIR'/audit/inconsistent found at start-up: no work asked */
} cairn__project;

/* The project id of url (without trailing '/'s): the first 16 hex digits
 * of the SHA-256 of the URL with its scheme and host in lower case. */
void cairn__project_id(const char *url, char id[CAIRN__PROJECT_ID_LEN + 1]);

/* Checks cfg (a project of the configuration) and sets p up from it, as
 * project k: labelled in base's log when labelled, peer host
 * peer_address (may be NULL). CAIRN_EINVAL naming the problem, or
 * CAIRN_ENOMEM. p is to be destroyed either way. */
cairn_status cairn__project_init(cairn__project *p, size_t k, const cairn_worker_project *cfg,
                                 const cairn__logger *base, int labelled,
                                 const char *peer_address, cairn_error *err);

/* Makes its state directory (wdir itself when own is 0, else
 * wdir/projects/<id>) with its cache, apps, run directory and audit log
 * (auditlog.h), and its part of --max-disk (max_disk_mib; 0: none). An
 * audit log an earlier run found inconsistent: CAIRN_EFORBIDDEN with one
 * project (own 0); with several, p->distrusted is set and the rest set up. */
cairn_status cairn__project_setup_dir(cairn__project *p, const char *wdir, int own,
                                      unsigned long long max_disk_mib, cairn_error *err);

/* Sets up its leases (slots, prefetch, and the outbox's kept entries), its
 * session (reg copied, stopper borrowed), its outbox and its task records
 * for slots. */
cairn_status cairn__project_setup_run(cairn__project *p, size_t slots, size_t prefetch,
                                      const cairn__registration *reg, cairn__stopper *stopper,
                                      const cairn__resources *offer, cairn_error *err);

/* Frees what p holds (the threads that used it have ended). */
void cairn__project_destroy(cairn__project *p);

#endif
