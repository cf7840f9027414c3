/* cairn/master.h — embed a Cairn master (the HTTP server over SQLite).
 *
 *   cairn_error err;
 *   cairn_master_config cfg;
 *   cairn_master_config_init(&cfg);
 *   cfg.db_path = "app.db"; cfg.listen = "127.0.0.1:0";
 *   cairn_master *m = cairn_master_create(&cfg, &err);
 *   cairn_master_start(m, &err);                    // serves in its own threads
 *   long long job; cairn_master_submit(m, json, strlen(json), &job, &err);
 *   cairn_job_state st; cairn_master_wait(m, job, -1, &st, &err);
 *   char *res; cairn_master_results_json(m, job, &res, &err);  // caller frees res
 *   cairn_master_delete(m);                         // stops and closes
 *
 * Functions that can fail return a cairn_status and fill the caller's
 * cairn_error (when not NULL); see cairn/cairn.h.
 *
 * Threads. cairn_master_start() starts the HTTP server's pool of cfg.threads
 * threads (libmicrohttpd), one commit thread that writes the journal to
 * SQLite (group commit) and one lease checker; cairn_master_delete() ends
 * them all. The log callback may be called from any of them, and from the
 * caller's thread during a call. Calls:
 *   - cairn_master_stop(): any thread, and signal handlers;
 *   - cairn_master_submit(), cairn_master_wait(), cairn_master_results_json(),
 *     cairn_master_url(), cairn_master_admin_token(), cairn_master_failed():
 *     any thread, concurrently, between start (create, for submit) and delete;
 *   - cairn_master_create(), _start(), _run() and _delete(): the thread that
 *     owns the handle; _run() from one thread at a time.
 *
 * Failure. If the store refuses a write (full disk, I/O error, a corrupted
 * file), the master enters a failed state: every request that would change
 * state is answered 503 with {"error": {"code": "failed", ...}}, nothing more is
 * acknowledged, cairn_master_run() returns CAIRN_EFAILED, and calls that
 * change state return CAIRN_EFAILED. What was acknowledged before is durable;
 * a new master on the same database recovers it. The library never exits
 * the process.
 */
#ifndef CAIRN_MASTER_H
#define CAIRN_MASTER_H

#include <stddef.h>

#include "cairn/cairn.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct cairn_master cairn_master;

typedef struct cairn_master_config {
  const char *db_path;          /* SQLite file; default "cairn.db" */
  const char *listen;           /* "HOST:PORT"; port 0 picks a free port; default 127.0.0.1:8080 */
  const char *web_dir;          /* dashboard files served at /; NULL for none */
  const char *admin_token;      /* NULL: $CAIRN_ADMIN_TOKEN, else admin_token_file, else
                                   DB.admin-token created with a random token (mode 0600) */
  const char *admin_token_file;
  const char *tls_cert;         /* PEM certificate (chain) file: serve HTTPS; NULL: HTTP */
  const char *tls_key;          /* PEM private key file, with tls_cert */
  int threads;                  /* HTTP worker threads; default 16 */
  int durable;                  /* 1 (default): fsync each group commit (synchronous=FULL);
                                   0: survive a process crash but not a power loss */
  double lease_check_seconds;   /* how often expired leases are reclaimed; default 0.5 */
  cairn_log_level log_level;    /* CAIRN_LOG_DEFAULT: warn */
  cairn_log_fn log_fn;          /* this master's log lines; NULL: standard error */
  void *log_userdata;           /* passed to log_fn */
  const char *ataf_family;      /* accountable indices of a new database: phi1, phi3 or
                                   phisharp (default); fixed once the database exists */
  const char *broadcast_plan;   /* planner of broadcast inputs: ECEF-LA (default), ECEF,
                                   ECEF-LAt, ECEF-LAT, FEF, BottomUp, flat, lcf,
                                   bounded-degree, or online (no plan) */
  const char *multicast_plan;   /* planner of the copies of outputs kept on workers: WR,
                                   WRP, CDMD, or online (default: no plan) */
  int store_and_forward;        /* 1: name only workers holding a whole verified copy of a
                                   broadcast file as its sources; 0 (default): also workers
                                   still receiving it that relay while receiving
                                   (cut-through, docs/protocol.md) */
  /* Limits against hostile clients (docs/security.md); 0 takes the default. */
  size_t max_body_memory;       /* bytes of request bodies held at once, all requests
                                   together (an upload is streamed to disk and does not
                                   count); past it a request gets 503 with Retry-After;
                                   default 256 MiB */
  int per_ip_connections;       /* connections one client address may hold open; more are
                                   closed at once; default 64; < 0: no limit */
  int anonymous_connections;    /* connections without a token (no request on them carried
                                   the admin's or a volunteer's valid token yet), all
                                   addresses together; one more accepted closes the oldest
                                   of them that is between requests; default 3072, 3/4 of
                                   the 4096 in all (1 to 4096) */
  int idle_timeout_seconds;     /* a connection with nothing sent or received for this
                                   long is closed; default 15 */
  int request_seconds;          /* a request without the admin token must be complete
                                   (headers and body) this long after its request line,
                                   else its connection is closed; default 30 */
  int anonymous_per_minute;     /* registrations and failed authentications one client
                                   address may make a minute (a burst of as many, then
                                   that rate); past it 429 with Retry-After; default 60;
                                   < 0: no limit */
  int volunteer_per_minute;     /* requests one registered volunteer may make a minute on
                                   the volunteer routes (a burst of ten seconds' worth,
                                   then that rate); past it 429 with Retry-After; admin
                                   requests are not counted; default 120000; < 0: no limit */
  const char *registration;     /* who may register a volunteer: "open" (default, anyone),
                                   "invite" (with a code from POST /v1/invitations) or
                                   "closed" (nobody) */
  /* The ceiling of the limits a job file may ask for (docs/jobs.md); 0 (the
   * default): none. A job asking above one is refused with an error naming
   * the limit; a task that leaves one unset runs under the ceiling. */
  long long max_wall_seconds, max_cpu_seconds, max_memory_mib, max_disk_mib, max_output_mib;
  int wall_grace_seconds;       /* a task's lease ends this long after its wall limit,
                                   whatever its heartbeats; default 30 */
  double keep_finished_days;    /* > 0: a job done, failed or cancelled this long ago (days,
                                   fractions allowed) is deleted (as DELETE /v1/jobs/{id},
                                   without purge) by the lease checker; 0 (default): kept */
  int max_output_file_mib;      /* the largest output file a worker may upload, in MiB,
                                   whatever a job declares; default 1024 */
  int max_pending_upload_mib;   /* the output bytes one volunteer's live leases may have
                                   announced that no result claimed yet, in MiB (429 past
                                   it); 0 (default): 4 times max_output_file_mib */
  int max_held_work;            /* work requests held at once while they wait for a task
                                   ("wait", docs/protocol.md); past it one is answered 204
                                   at once; default 4096 (1 to 4096) */
  int max_job_waits;            /* job waits held at once (GET /v1/jobs/{id}?wait=,
                                   docs/protocol.md); past it one is answered at once;
                                   default 1024 (1 to 1024) */
  /* Quarantine (docs/accountability.md): a volunteer whose share of invalid
   * results (errors) over its last 20, once it has 10, exceeds this
   * fraction gets no new task until released. 0: the default (0.5 invalid,
   * 0.8 errors); negative: that test is off. */
  double quarantine_invalid, quarantine_errors;
  /* Adaptive replication (docs/accountability.md): a volunteer with this
   * many valid replicated results in a row is trusted (0: the default,
   * 10), and a trusted volunteer's task of a job with "adaptive": true
   * is still replicated with this probability (0: the default, 0.1;
   * negative: never). */
  int trust_threshold;
  double spot_check;
  /* A ban handles at most this many of the volunteer's results per hold of
   * the core's lock (docs/accountability.md, "Banning a volunteer"; 0: the
   * default, 256; at most 65,536). */
  int ban_slice;
  /* The tamper-evident audit trail (docs/accountability.md): 0 (default) or
   * 1: on, with its signing key in DB.audit-key (created, mode 0600); -1: off
   * (nothing is chained; an existing chain is left as it is). */
  int audit_chain;
  /* Signed app versions (docs/apps.md): the project's Ed25519 public key,
   * its base64 text (as `cairn app keygen` prints) or the path of a file
   * holding it; the master refuses a version whose signature it does not
   * verify. NULL: no app can be published. */
  const char *app_key;
  /* The audit log over the audit trail (docs/accountability.md, "A log
   * every volunteer can check"): 0 (default) or 1: on, with the audit
   * trail (a Merkle tree over its entries, signed tree heads, the public
   * routes /v1/audit/key, sth, entries, proof, consistency, receipts in
   * result answers); -1: off (the trail alone; the tree catches up from the
   * trail's entries when it is on again). Off too when audit_chain is. */
  int audit_tree;
  /* The project's public pages (docs/project.md, "Public pages"): its name
   * (1 to 256 bytes of UTF-8 text; NULL: "Cairn") and description (UTF-8
   * text, lines allowed, at most 16 KiB; NULL: none), shown by GET
   * /v1/public/home, which also lists the jobs when public_jobs is 1 (0,
   * the default: not). */
  const char *project_name;
  const char *project_description;
  int public_jobs;
  /* BOINC-format XML statistics for statistics sites (docs/project.md,
   * "Statistics exports"): the folder of tables.xml, user.gz, team.gz and
   * host.gz (NULL: DB.stats, made when missing), served at /stats/; how
   * often they are made again, in hours (0: the default, 24; negative:
   * only when the admin asks, POST /v1/stats/export). */
  const char *stats_dir;
  double stats_export_hours;
} cairn_master_config;

/* Sets every field of cfg to its default (as cairn_worker_config_init does
 * for a worker): then set what differs. */
void cairn_master_config_init(cairn_master_config *cfg);

/* Opens the store and rebuilds the state; does not listen yet. NULL (and
 * err filled) on bad configuration, an unusable database or out of memory. */
cairn_master *cairn_master_create(const cairn_master_config *cfg, cairn_error *err);
/* Starts the HTTP server and the lease checker; returns at once. */
cairn_status cairn_master_start(cairn_master *m, cairn_error *err);
/* Blocks until cairn_master_stop() is called (from any thread or a signal
 * handler) or the master fails. CAIRN_OK after a stop; CAIRN_EFAILED, with
 * the store's error in err, when the master has failed. */
cairn_status cairn_master_run(cairn_master *m, cairn_error *err);
/* Asks the master to stop: async-signal-safe and thread-safe. */
void cairn_master_stop(cairn_master *m);
/* Stops serving (in-flight requests finish), closes the store, frees m. NULL is fine. */
void cairn_master_delete(cairn_master *m);
/* CAIRN_OK while the master works; CAIRN_EFAILED (with the store's error in
 * err) once it has failed. */
cairn_status cairn_master_failed(cairn_master *m, cairn_error *err);

/* "http://HOST:PORT" once started (owned by m). */
const char *cairn_master_url(const cairn_master *m);
/* The admin token in force (owned by m). */
const char *cairn_master_admin_token(const cairn_master *m);

/* Submits a job file (docs/jobs.md). A "files" entry may name a local "path"
 * (imported into the master's file store) or the sha256 of an uploaded file.
 * CAIRN_EINVAL names what is wrong with the job. */
cairn_status cairn_master_submit(cairn_master *m, const char *job_json, size_t len,
                                 long long *job_id, cairn_error *err);

typedef enum cairn_job_state {
  CAIRN_JOB_RUNNING,
  CAIRN_JOB_DONE,    /* every task executed */
  CAIRN_JOB_FAILED,  /* a task failed max_attempts times */
  CAIRN_JOB_CANCELLED /* an operator cancelled it (POST /v1/jobs/{id}/cancel) */
} cairn_job_state;

/* Waits until a job has ended or timeout_seconds pass (< 0: forever).
 * CAIRN_OK with *state CAIRN_JOB_DONE, CAIRN_JOB_FAILED or CAIRN_JOB_CANCELLED; CAIRN_ETIMEOUT
 * (*state CAIRN_JOB_RUNNING); CAIRN_ENOTFOUND for an unknown job;
 * CAIRN_EFAILED when the master has failed. */
cairn_status cairn_master_wait(cairn_master *m, long long job_id, double timeout_seconds,
                               cairn_job_state *state, cairn_error *err);
/* The job's tasks with their results, as the pages of GET /v1/jobs/{id}/tasks
 * return them, all in one {"tasks": [...]} (read a page at a time: the
 * master's lock is never held for the whole job). CAIRN_OK with *json
 * malloc'd JSON text the caller frees; otherwise *json is NULL and the
 * status is CAIRN_ENOTFOUND for an unknown job (err names it), CAIRN_ENOMEM
 * or CAIRN_EIO (the store could not be read). */
cairn_status cairn_master_results_json(cairn_master *m, long long job_id, char **json,
                                       cairn_error *err);

#ifdef __cplusplus
}
#endif
#endif
