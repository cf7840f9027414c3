/* api.h — the master handle (struct cairn_master, made by server/master.c) and the API's handlers, shared by server/api/ and the HTTP transport above it (private). */
#ifndef CAIRN_MASTER_PRIV_H
#define CAIRN_MASTER_PRIV_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "cairn/master.h"
#include "common/log.h"
#include "server/conn/conns.h"
#include "server/core/core.h"
#include "server/core/views.h"
#include "server/api/invitations.h"
#include "server/api/routes.h"
#include "server/conn/ratelimit.h"
#include "server/conn/slow.h"
#include "server/conn/waiters.h"

#define CAIRN__STATUS_SLOTS 16

/* Who may register a volunteer (cfg.registration). */
enum { CAIRN__REG_OPEN, CAIRN__REG_INVITE, CAIRN__REG_CLOSED };

struct cairn_master {
  cairn_master_config cfg;
  cairn__logger log;          /* from cfg; the core keeps a copy */
  char *db_path, *listen, *web_dir;
  char *project_name, *project_description; /* the public pages' (cfg's, copied) */
  char app_key_b64[48]; /* the project's public key (--app-key) in base64, "" when none:
                         * shown on the public pages for the join command */
  char admin_token[129];
  char url[300];
  cairn__core *core;
  void *daemon;              /* struct MHD_Daemon */
  void *tls_tickets;         /* the TLS session-ticket key (gnutls_datum_t, http.c):
                                made when HTTPS starts, wiped when it stops */
  pthread_t reaper;
  int reaper_running;
  atomic_int stop_requested; /* set by cairn_master_stop(), from any thread or a signal */
  cairn__ratelimit *anon;    /* per client address: registrations, failed
                                authentications; NULL: no limit */
  int registration;          /* CAIRN__REG_*: who may POST /v1/volunteers */
  cairn__invites *invites;   /* invitation codes (invitations.c) */
  cairn__ratelimit *vrate;   /* per volunteer id: requests on the volunteer routes
                                (cfg.volunteer_per_minute); NULL: no limit */
  atomic_int inflight;       /* HTTP requests begun and not completed (http.c) */
  atomic_int pwhash_busy;    /* password hashes running (api/accounts.c), at most
                                CAIRN__PWHASH_AT_ONCE */
  atomic_size_t body_bytes;  /* request body bytes held or promised (http.c; cap:
                                cfg.max_body_memory) */
  cairn__waiters *waiters;   /* held work requests (waiters.h): made by http.c when it
                                starts, freed by cairn_master_delete after the core */
  cairn__slow *slow;         /* the slow lane (slow.h): made when HTTP starts, stopped
                                before the daemon stops (http.c), freed by
                                cairn_master_delete */
  cairn__conns *conns;       /* the connections without a token (conns.h, at most
                                cfg.anonymous_connections): made when HTTP starts,
                                freed by cairn_master_delete */
  int stop_pipe[2];
  pthread_mutex_t stats_lock;
  uint64_t requests[RL_COUNT][CAIRN__STATUS_SLOTS]; /* by route label and status */
  /* GET /v1/stats (stats.c) and the public pages (ranks.c): the rendered
   * standings and leaderboards and their builder threads (renderer.h);
   * made by cairn__stats_start, NULL before and after */
  struct cairn__renderer *standings, *ranks;
  /* The XML statistics exports (statsexport.c): the exporter thread and
   * its state; made by cairn__statsexport_start, NULL before and after */
  struct cairn__statsexport *statsexport;
  /* The audit log (auditlog.c, server/store/tree.h): the reader of its
   * public routes and that of the master's own answers (receipts, the
   * heartbeat's head, an index's leaves), so that anonymous reads never
   * hold up a result's answer; NULL when the log is off. The audit key's
   * public half. */
  struct cairn__tree_reader *audit, *audit_own;
  struct cairn__tree *audit_tree; /* the writer's table of recent receipts (tree.h) */
  uint8_t audit_pk[32];
};

typedef struct cairn__req {
  const char *method;
  const char *path;
  const char *token;         /* bearer token, or NULL */
  const char *client_ip;     /* the peer's IPv4 address as text, or "" */
  const char *body;
  size_t len;
  const char *purge;         /* the "purge" query argument (DELETE /v1/jobs/{id}), or NULL */
  const char *arg_task, *arg_name; /* query arguments "task" and "name", or NULL */
  const char *arg_limit;     /* the "limit" query argument (GET /v1/stats, GET
                                /v1/jobs/{id}/tasks), or NULL */
  const char *arg_after;     /* the "after" query argument (GET /v1/jobs/{id}/tasks), or NULL */
  const char *arg_wait;      /* the "wait" query argument (GET /v1/jobs/{id}), or NULL */
  const char *arg_page;      /* the "page" query argument (GET /v1/stats), or NULL */
  /* the audit log's query arguments (auditlog.c), or NULL: "start", "end"
   * (/v1/audit/entries), "leaf_index", "tree_size" (/v1/audit/proof),
   * "first", "second" (/v1/audit/consistency) */
  const char *arg_start, *arg_end, *arg_leaf_index, *arg_tree_size, *arg_first, *arg_second;
  const char *if_none_match; /* the If-None-Match header (GET /v1/stats, /stats/...), or NULL */
  int64_t if_modified_since; /* the If-Modified-Since header as Unix s (GET /stats/...); 0:
                                 none or not a date */
  const char *range;         /* the Range header (GET /v1/files/{sha256}), or NULL */
  const char *session;       /* the cookie cairn_session (a page's log-in: people.c), or NULL */
  const char *csrf;          /* the X-CSRF-Token header, or NULL */
  const char *arg_by;        /* the "by" query argument (GET /v1/public/top/{kind}), or NULL */
  int resumed;               /* POST /v1/work asked again after a hold: its report
                                was applied the first time */
  unsigned long long declared; /* a streamed upload: its Content-Length, when has_length */
  int has_length;
} cairn__req;

/* The body a streamed route's handler accepts (rs->upload), at the
 * headers: http.c writes it to a file of the file store, hashing it, and
 * at its end checks its digest and commits it (cairn__files_commit, or
 * cairn__files_commit_output for an output file). */
typedef struct cairn__upload {
  char want[65];    /* the sha256 the URL names: the digest the body must have */
  uint64_t cap;     /* the bytes it may send */
  int64_t vol, idx; /* vol > 0: an output file under volunteer vol's lease idx, of exactly
                       cap bytes (its Content-Length); 0: an input file */
  double seconds;   /* added to its deadline: its length at CAIRN_UPLOAD_MIN_RATE */
} cairn__upload;

/* POST /v1/work with "wait" and no task now, or GET /v1/jobs/{id}?wait=
 * of a running job (api.c fills it, http.c holds the request, waiters.h):
 * the wait in ms (0: answer at once), the apps it is woken for (hashes;
 * napps 0: any), the wake generation it saw; job > 0: a job wait on that
 * job (gen: the job's, cairn__waiters_job_gen; no body is rendered). */
typedef struct cairn__hold {
  int ms;
  int napps;
  uint64_t apps[CAIRN__WAITERS_APPS];
  uint64_t gen;
  int64_t job;
  int64_t vol;  /* > 0: a one-task request the core may hand a task to (waiters.h) */
  int64_t owner;      /* a work request: its volunteer */
  unsigned owner_cap; /* its requests held at once, at most (cairn__core_hold_cap) */
} cairn__hold;

typedef struct cairn__resp {
  int status;
  char *body;                /* malloc'd */
  size_t len;
  const char *ctype;
  int fd;                    /* >= 0: send this file (size fd_size) instead of body */
  int retry_after;           /* > 0: a Retry-After header, in seconds */
  int retry_after_ms;        /* > 0: also Cairn-Retry-After-Ms (finer, for Cairn workers) */
  uint64_t fd_size;
  uint64_t fd_from;          /* status 206: the file is sent from this byte (Content-Range) */
  cairn__hold *hold;         /* POST /v1/work or GET /v1/jobs/{id} where the request may
                                be held, else NULL */
  char etag[20];             /* non-empty: an ETag header (http.c, conditional GETs; set by
                                the handler: http.c does not hash the body) */
  int max_age;               /* > 0: Cache-Control: public, max-age=max_age (seconds) */
  int64_t last_modified;     /* > 0: a Last-Modified header (Unix s; GET /stats/...) */
  cairn__upload *upload;     /* a streamed route (LANE_STREAMED, at its headers): the
                                handler fills it and leaves status 0 to accept the body */
  char cookie[160];          /* non-empty: a Set-Cookie header (the session's: people.c) */
  int no_store;              /* Cache-Control: no-store (an answer naming a session's
                                secrets) */
} cairn__resp;

/* What a request may do before its body is read, from its headers alone. */
typedef struct cairn__gate {
  size_t max_body;           /* the route's body cap (413 above); uploads are streamed */
  int trusted;               /* it carries the admin token: no request deadline */
  int authenticated;         /* it carries a valid token, the admin's or a registered
                                volunteer's (checked here): its connection no longer
                                counts as anonymous (conns.h) */
} cairn__gate;

/* At a request's first callback, from its route's entry (routes.h): fills
 * g; 1 when the body may be read, 0 with the 401 or 403 in rs when the route
 * needs a token it lacks, or the 429 when client_ip ("" when unknown) has
 * made too many registrations or failed authentications
 * (cfg.anonymous_per_minute) or the volunteer too many requests. */
int cairn__api_gate(cairn_master *m, const cairn__route *r, const char *token,
                    const char *client_ip, cairn__gate *g, cairn__resp *rs);
/* Runs request rq on its route r (routes.c): a failed master's 503 unless
 * RF_FAILED_OK, the admin's token for WHO_ADMIN, then the route's handler;
 * fills rs (rs->fd = -1 unless a file is sent). */
void cairn__api_handle(cairn_master *m, const cairn__route *r, const cairn__req *rq,
                       cairn__resp *rs);
/* Sets rs to the JSON error body for st with message text. */
void cairn__api_error(cairn__resp *rs, cairn_status st, const char *text);
/* The same for err's status and text. */
void cairn__api_fail(cairn__resp *rs, const cairn_error *err);
/* Asks the client to come back in ms (> 0): Retry-After in whole seconds
 * (at least 1) and Cairn-Retry-After-Ms. */
void cairn__api_retry(cairn__resp *rs, int ms);
/* Helpers of the route handlers (api.c), for admission.c: rs gets status
 * and o rendered (taking o; NULL: no body); an error with a printf-style
 * message; a JSON object body allowing only keys (NULL: any; empty = {}
 * when empty_ok), NULL with the 400 in rs; an array of at most max app
 * names (borrowed) or -1 with the 400; an optional string field (def when
 * absent, NULL with the 400); the id s spells up to '/' or its end, -1 when
 * none; one of client address ip's anonymous tokens (1, or 0 with a 429). */
void cairn__api_json(cairn__resp *rs, int status, json_t *o);
void cairn__api_failf(cairn__resp *rs, cairn_status st, const char *fmt, ...)
  __attribute__((format(printf, 3, 4)));
json_t *cairn__api_body(const cairn__req *rq, const char *const *keys, int empty_ok,
                        cairn__resp *rs);
int cairn__api_apps(json_t *a, const char **apps, unsigned max, int *n, cairn__resp *rs);
const char *cairn__api_opt_str(json_t *o, const char *key, const char *def, cairn__resp *rs);
int64_t cairn__api_id(const char *s, const char **end);
/* rates.c: takes one of volunteer v's request tokens
 * (cfg.volunteer_per_minute): 1, or 0 with a 429 in rs. O(1). */
int cairn__api_volunteer_rate_ok(cairn_master *m, int64_t v, cairn__resp *rs);
int cairn__api_anonymous_ok(cairn_master *m, const char *ip, cairn__resp *rs);
/* 1 when rq carries the admin token, else 0 with the 401 or 403 in rs;
 * the id of the volunteer whose token rq carries, else 0 with the error in
 * rs; the id of the job a /v1/jobs/{id}... path names, else -1 with the
 * 400 in rs. */
int cairn__api_admin(cairn_master *m, const cairn__req *rq, cairn__resp *rs);
int64_t cairn__api_volunteer(cairn_master *m, const cairn__req *rq, cairn__resp *rs);
int64_t cairn__api_job_id(const cairn__req *rq, cairn__resp *rs);
int cairn__api_is_admin(const cairn_master *m, const char *token);
/* Counts a response of status on route r (/metrics). */
void cairn__api_count(cairn_master *m, const cairn__route *r, int status);

/* The route handlers: routes.c's table names each, cairn__api_handle runs
 * them (a WHO_ADMIN route's once the admin's token is checked).
 * api.c: /healthz, /metrics, GET /v1/volunteers, POST /v1/work,
 * POST /v1/heartbeat, the files (GET, HEAD and PUT of /v1/files/{sha256}
 * and GET of its chunks, PUT /v1/results/{n}/files/{sha256}), a task's
 * output, the jobs, a job's life (DELETE, cancel, priority), its tasks and
 * outputs, the ban and release of a volunteer, the audit, GET /v1/demand;
 * 405 for a method a path has not, 404 for a path no route has. */
cairn__handler cairn__api_healthz, cairn__api_metrics, cairn__api_volunteers_list,
  cairn__api_work, cairn__api_heartbeat, cairn__api_file_get, cairn__api_file_put,
  cairn__api_file_chunks, cairn__api_output_put, cairn__api_task_output, cairn__api_jobs_post,
  cairn__api_jobs_list, cairn__api_job_get, cairn__api_job_delete, cairn__api_job_cancel,
  cairn__api_job_priority, cairn__api_job_tasks, cairn__api_job_task, cairn__api_job_output,
  cairn__api_ban, cairn__api_release, cairn__api_audit_index, cairn__api_audit_volunteer,
  cairn__api_demand, cairn__api_not_allowed, cairn__api_no_route;
/* web.c: the dashboard's files under cfg's web folder (GET and HEAD of any
 * path outside /v1/); 404 when none is served or the file is not there. */
cairn__handler cairn__web_get;
/* results.c: PUT /v1/results/{n}; POST /v1/results (a batch of results). */
cairn__handler cairn__api_result, cairn__api_results;
/* admission.c: POST /v1/volunteers (under cfg.registration); PATCH
 * /v1/volunteers/{id} {"team": NAME | null}: the admin, or the volunteer
 * itself with its own token, changes its team (checked as at registration;
 * O(1) under c->lock, cairn__core_set_team); the invitations: POST (make
 * one), GET (list them), DELETE /v1/invitations/{id} (revoke one). */
cairn__handler cairn__admission_register, cairn__admission_team, cairn__admission_invite,
  cairn__admission_invitations, cairn__admission_revoke;
/* admission.c: whether a registration (of a volunteer or an account) with
 * body o may go on under cfg.registration: 1 (with the invitation it
 * spends in *invite, 0 for none), or 0 with the 403 (or 400) in rs; a code
 * refused also spends one of the address's anonymous tokens. */
int cairn__admission_admitted(cairn_master *m, const cairn__req *rq, json_t *o, int64_t *invite,
                              cairn__resp *rs);
/* accounts.c (docs/protocol.md, "Accounts"): POST /v1/accounts (under
 * cfg.registration), POST /v1/accounts/login, GET /v1/accounts/{id} (the
 * admin, or the account with its account key as the bearer token). The
 * password hashes run outside every lock, at most CAIRN__PWHASH_AT_ONCE at
 * once (m->pwhash_busy); a request finding them all busy gets a 503 with
 * Retry-After. */
#define CAIRN__PWHASH_AT_ONCE 2
cairn__handler cairn__api_account_create, cairn__api_account_login, cairn__api_account_get;
/* accounts.c: rq's body {"email", "password"} checked: 1 with *o (the
 * caller's to decref), *email, *password and its length, or 0 with the 400
 * in rs. The account email and password open, checked outside every lock
 * on one of the password-hashing slots: its id, or 0 with the answer in rs
 * (the same 401 "wrong e-mail or password" for a wrong e-mail and a wrong
 * password, as long; 503 when the slots are busy). */
int cairn__api_credentials(const cairn__req *rq, json_t **o, const char **email,
                           const char **password, size_t *plen, cairn__resp *rs);
int64_t cairn__api_password_check(cairn_master *m, const char *email, const char *password,
                                  size_t plen, cairn__resp *rs);
/* people.c (docs/protocol.md, "Sessions", "Teams of accounts"): the
 * account rq acts for: the account key as its bearer token, or its session
 * cookie (with, but for GET and HEAD, X-CSRF-Token equal to the session's
 * CSRF token: else 403). want > 0: it must be that account (403 naming
 * the other). Its id, or 0 with the 401 or 403 in rs (a wrong key also
 * spends one of the address's anonymous tokens). O(1) under c->lock. */
int64_t cairn__api_account_caller(cairn_master *m, const cairn__req *rq, int64_t want,
                                  cairn__resp *rs);
/* people.c: POST, GET, DELETE /v1/session (a log-in of the pages: the
 * cookie cairn_session, Secure when the master serves TLS); POST
 * /v1/teams, GET and PATCH /v1/teams/{id}; PATCH /v1/accounts/{id}
 * {"team"} (join or leave). */
cairn__handler cairn__api_session_post, cairn__api_session_get, cairn__api_session_delete,
  cairn__api_teams_post, cairn__api_team_get, cairn__api_team_patch, cairn__api_account_patch;
/* public.c (docs/protocol.md, "Public pages"): GET /v1/public/home,
 * /v1/public/top/{kind} (from the rendering of ranks.c), and
 * /v1/public/accounts/{id} (never the e-mail). */
cairn__handler cairn__public_home, cairn__public_top, cairn__public_account;
/* apps.c: signed app versions (docs/apps.md): POST /v1/apps (publish),
 * GET /v1/apps (list), GET /v1/apps/{name}/{version}/{platform} (a signed
 * manifest), PATCH /v1/apps/{name}/{version} {"retired": true}. */
cairn__handler cairn__api_app_publish, cairn__api_apps_list, cairn__api_app_get,
  cairn__api_app_retire;

/* results.c: POST /v1/work with "max" (cairn__api_work has read the report
 * r and apps). */
void cairn__api_work_many(cairn_master *m, int64_t v, const cairn__report *r, char **apps,
                          int napps, json_t *max, cairn__resp *rs);
/* api.c: the 200 of a work request the core handed offer to (a json_t,
 * taken) once journal record seq is durable; the error if it cannot be. */
void cairn__api_work_handed(cairn_master *m, json_t *offer, uint64_t seq, cairn__resp *rs);

/* stats.c: GET /v1/stats (public, no token): credit standings, served
 * from a rendering (the JSON text of the top CAIRN__STATS_MAX volunteers
 * and teams and the totals) that one builder thread reads from the store
 * (never under c->lock) and renders at most once every
 * CAIRN__STATS_REFRESH_SECONDS while it is read. A request copies a slice
 * of it: ?limit= entries of each list (default CAIRN__STATS_DEFAULT, at
 * most CAIRN__STATS_MAX) from ?page= (default 1): O(its body), no JSON
 * built, no store read. A request finding the rendering older than
 * CAIRN__STATS_COLD_SECONDS (no reads for that long) waits for the build
 * it asked for, at most CAIRN__STATS_WAIT_SECONDS. */
#define CAIRN__STATS_DEFAULT 100
#define CAIRN__STATS_MAX 1000
#define CAIRN__STATS_REFRESH_SECONDS 2.0
#define CAIRN__STATS_COLD_SECONDS (2 * CAIRN__STATS_REFRESH_SECONDS)
#define CAIRN__STATS_WAIT_SECONDS 5.0
/* Starts the builders of the standings and of the public pages' ranks
 * (ranks.h) (cairn_master_start, before HTTP); stops them and frees the
 * renderings (cairn_master_delete, after HTTP: no request runs); a no-op
 * when they were not started. */
cairn_status cairn__stats_start(cairn_master *m, cairn_error *err);
void cairn__stats_stop(cairn_master *m);
/* Appends the builder's /metrics lines (cairn_stats_renders_total,
 * cairn_stats_render_cpu_seconds_total) to buf (len bytes); buf as it was
 * when out of memory. */
char *cairn__stats_metrics(cairn_master *m, char *buf, size_t *len);
cairn__handler cairn__stats_get;

/* statsexport.c: BOINC-format XML statistics (docs/protocol.md,
 * "Statistics files"): the exporter thread, made at cairn_master_start
 * (before HTTP) and stopped at cairn_master_delete (after HTTP; an export
 * under way is cancelled at its next row); POST /v1/stats/export (admin:
 * asks for an export, 202), GET /v1/stats/export (admin: its state), GET
 * and HEAD /stats/{file} (anyone: tables.xml, user.gz, team.gz, host.gz
 * as the last export wrote them, sent from the file). Every request O(1);
 * exports run on the exporter's thread only, every
 * cfg.stats_export_hours (default CAIRN__STATS_EXPORT_HOURS) and when
 * asked. */
#define CAIRN__STATS_EXPORT_HOURS 24.0
cairn_status cairn__statsexport_start(cairn_master *m, cairn_error *err);
void cairn__statsexport_stop(cairn_master *m);
/* Appends the exporter's /metrics lines to buf, as cairn__stats_metrics. */
char *cairn__statsexport_metrics(cairn_master *m, char *buf, size_t *len);
cairn__handler cairn__statsexport_post, cairn__statsexport_status, cairn__statsfiles_get;

/* dagview.c: GET /v1/jobs/{id}/dag (admin; the dispatch checked the token):
 * the job's dag and E(t) of its policy and fifo, read from the store file
 * (never under c->lock), 413 beyond 20,000 tasks or 400,000 edges. */
cairn__handler cairn__dagview_get;

/* distview.c: GET /v1/jobs/{id}/distribution (admin; the dispatch checked
 * the token): each broadcast file's plan in force, the copies that
 * travelled, bytes by source, the measured link rates; read from the store
 * file (never under c->lock), at most CAIRN__DIST_VIEW_MAX transfers and
 * senders per file. */
#define CAIRN__DIST_VIEW_MAX 2000
cairn__handler cairn__distview_get;

/* states.c: GET /v1/jobs/{id}/states (admin; the dispatch checked the
 * token): one letter per task (w, e, r, d, f) in job-file order, copied
 * 4,096 tasks per hold of c->lock. */
cairn__handler cairn__states_get;

/* auditlog.c: the audit log's public routes (docs/protocol.md, "Audit
 * log"): GET /v1/audit/key, /v1/audit/sth, /v1/audit/entries?start=&end=,
 * /v1/audit/proof?leaf_index=&tree_size=, /v1/audit/consistency?first=&
 * second=; 404 when the master keeps no log. Never under c->lock. */
cairn__handler cairn__api_log_key, cairn__api_log_sth, cairn__api_log_entries,
  cairn__api_log_proof, cairn__api_log_consistency;
/* The receipt {"leaf_index", "leaf_hash"} of index idx's result entry, or
 * NULL (no log, no entry); the newest signed head as answer's "sth"; the
 * leaves of idx's allocation and result entries ("leaf_index" of o and of
 * o's "result"). O(log n) reads each, outside c->lock. */
json_t *cairn__api_log_receipt(cairn_master *m, int64_t idx);
void cairn__api_log_heartbeat(cairn_master *m, json_t *answer);
void cairn__api_log_leaves(cairn_master *m, int64_t idx, json_t *o);

/* audit.c: GET /v1/audit/index/{n} and /v1/audit/volunteers/{id} bodies. */
json_t *cairn__audit_index(cairn_master *m, int64_t n, cairn_error *err);
json_t *cairn__audit_volunteer(cairn_master *m, int64_t id, cairn_error *err);

/* Imports a local file into the file store: copies it to files_dir/sha256
 * (fsync'd) and records it. Fills sha256 and size. */
cairn_status cairn__files_import(cairn__core *c, const char *path, char sha256[65], int64_t *size,
                                 cairn_error *err);
/* Finishes an upload written to tmp_path: checks its digest against want,
 * fsyncs, renames into place and records it; removes tmp_path on failure. */
cairn_status cairn__files_commit(cairn__core *c, const char *tmp_path, const char *want,
                                 const char *got, int64_t size, int *existed, cairn_error *err);
/* The same for an output file uploaded under lease idx of volunteer vol:
 * not recorded, but held for the lease until a result of it names the file
 * or it ends (uploads.h). */
cairn_status cairn__files_commit_output(cairn__core *c, const char *tmp_path, const char *want,
                                        const char *got, int64_t size, int64_t vol, int64_t idx,
                                        int *existed, cairn_error *err);

#endif
