/* cairn/master.h — embed a Cairn master (the HTTP server over SQLite).
 *
 *   cairn_master_config cfg;
 *   cairn_master_config_init(&cfg);
 *   cfg.db_path = "app.db"; cfg.listen = "127.0.0.1:0";
 *   cairn_master *m = cairn_master_create(&cfg, err, sizeof err);
 *   cairn_master_start(m, err, sizeof err);        // serves in its own threads
 *   long long job; cairn_master_submit(m, json, strlen(json), &job, err, sizeof err);
 *   cairn_master_wait(m, job, -1);                  // 0 done, 1 failed
 *   char *res = cairn_master_results_json(m, job);  // caller frees
 *   cairn_master_delete(m);                         // stops and closes
 *
 * Functions that can fail return 0 on success and non-zero on failure, with
 * one line of text in errbuf (when errbuf is not NULL).
 */
#ifndef CAIRN_MASTER_H
#define CAIRN_MASTER_H

#include <stddef.h>

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
  const char *log_level;        /* error|warn|info|debug; default warn */
  const char *ataf_family;      /* accountable indices of a new database: phi1, phi3 or
                                   phisharp (default); fixed once the database exists */
  const char *broadcast_plan;   /* planner of broadcast inputs: ECEF-LA (default), ECEF,
                                   ECEF-LAt, ECEF-LAT, FEF, BottomUp, flat, lcf,
                                   bounded-degree, or online (no plan) */
} cairn_master_config;

void cairn_master_config_init(cairn_master_config *cfg);

/* Opens the store and rebuilds the state; does not listen yet. */
cairn_master *cairn_master_create(const cairn_master_config *cfg, char *errbuf, size_t errlen);
/* Starts the HTTP server and the lease checker; returns at once. */
int cairn_master_start(cairn_master *m, char *errbuf, size_t errlen);
/* Blocks until cairn_master_stop is called (from any thread or a signal
 * handler), then stops serving. Returns 0. */
int cairn_master_run(cairn_master *m);
/* Asks the master to stop: async-signal-safe and thread-safe. */
void cairn_master_stop(cairn_master *m);
/* Stops serving (in-flight requests finish), closes the store, frees m. NULL is fine. */
void cairn_master_delete(cairn_master *m);

/* "http://HOST:PORT" once started (owned by m). */
const char *cairn_master_url(const cairn_master *m);
/* The admin token in force (owned by m). */
const char *cairn_master_admin_token(const cairn_master *m);

/* Submits a job file (docs/jobs.md). A "files" entry may name a local "path"
 * (imported into the master's file store) or the sha256 of an uploaded file. */
int cairn_master_submit(cairn_master *m, const char *job_json, size_t len, long long *job_id,
                        char *errbuf, size_t errlen);
/* Waits for a job: 0 done, 1 failed, 2 timeout (timeout_seconds < 0: forever), -1 unknown job. */
int cairn_master_wait(cairn_master *m, long long job_id, double timeout_seconds);
/* The job's tasks with their results, as GET /v1/jobs/{id}/tasks returns them;
 * malloc'd JSON text the caller frees, or NULL for an unknown job. */
char *cairn_master_results_json(cairn_master *m, long long job_id);

#ifdef __cplusplus
}
#endif
#endif
