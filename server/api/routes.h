/* routes.h — the master's routes: one static const table (routes.c) with
 * one entry a route, its method, path pattern, who may call it, body cap,
 * lane and handler. Three places read a request's entry and none tests a
 * route otherwise: the dispatch (cairn__api_handle, routes.c), the checks
 * at its headers (cairn__api_gate, server/http/gate.c) and the HTTP
 * layer's lanes (server/http/http.c). Private to server/. */
#ifndef CAIRN_ROUTES_H
#define CAIRN_ROUTES_H

#include <stddef.h>

struct cairn_master;
struct cairn__req;
struct cairn__resp;

/* The label of a path's requests in /metrics
 * (cairn_http_requests_total{route="..."}), shared by its methods. */
typedef enum {
  RL_UNKNOWN, RL_HEALTHZ, RL_METRICS, RL_WEB, RL_VOLUNTEERS, RL_WORK, RL_RESULTS, RL_HEARTBEAT,
  RL_FILES, RL_TASK_OUTPUT, RL_JOBS, RL_JOB, RL_JOB_TASKS, RL_BAN, RL_RELEASE, RL_AUDIT_INDEX,
  RL_AUDIT_VOL, RL_INVITATIONS, RL_INVITATION, RL_JOB_TASK, RL_JOB_CANCEL, RL_JOB_PRIORITY,
  RL_RESULT_FILE, RL_JOB_OUTPUT, RL_STATS, RL_RESULTS_BATCH, RL_DEMAND, RL_JOB_DAG, RL_JOB_STATES,
  RL_VOLUNTEER, RL_JOB_DIST, RL_FILE_CHUNKS, RL_APPS, RL_APP, RL_APP_VERSION, RL_ACCOUNTS,
  RL_ACCOUNT, RL_SESSION, RL_TEAMS, RL_TEAM, RL_PUBLIC_HOME, RL_PUBLIC_TOP, RL_PUBLIC_ACCOUNT,
  RL_PROJECT, RL_STATS_EXPORT, RL_STATS_FILES, RL_AUDIT_KEY, RL_AUDIT_STH, RL_AUDIT_ENTRIES,
  RL_AUDIT_PROOF, RL_AUDIT_CONSISTENCY, RL_COUNT
} cairn__route_label;
extern const char *const cairn__route_labels[RL_COUNT];

/* Who may call a route: checked at its headers, before its body is read
 * (gate.c); a failed check also spends one of the client address's
 * anonymous tokens. */
typedef enum {
  WHO_ANYONE,    /* no token needed */
  WHO_VOLUNTEER, /* a registered volunteer's token (and its rate, cfg.volunteer_per_minute) */
  WHO_READER,    /* the admin's token, or a volunteer's (and its rate): the handler checks
                    what that volunteer may read or change */
  WHO_ADMIN      /* the admin's token; the dispatch checks it again */
} cairn__who;

/* Where a request runs (http.c). */
typedef enum {
  LANE_INLINE,  /* on its HTTP thread, once its body is in */
  LANE_HELD,    /* inline, and the handler may ask to hold it (rs->hold, waiters.h): a work
                   request that got no task, a job wait on a running job */
  LANE_SLOW,    /* on the slow lane's thread (slow.h) when its body has slow_from bytes or
                   more; inline when shorter */
  LANE_STREAMED /* its body streamed to the file store: the handler runs at the headers,
                   without a body, and fills rs->upload (api.h) to accept it */
} cairn__lane;

/* An entry's flags. */
enum {
  RF_FAILED_OK = 1,   /* the dispatch runs it on a failed master too (/metrics, the
                         dashboard; an upload, which fails at its commit) */
  RF_PAGE = 2,        /* the dashboard's: its answers get the dashboard's
                         Content-Security-Policy (http.c) */
  RF_SPEND = 4,       /* spends one of its client address's anonymous tokens at the headers
                         (cfg.anonymous_per_minute): a registration */
  RF_SPEND_ANON = 8,  /* the same, unless it carries the admin token: a read of the
                         standings, of a statistics file */
  RF_PROJECT = 16     /* the project's public pages (/project/): their answers get the
                         pages' Content-Security-Policy (http.c) */
};

typedef void cairn__handler(struct cairn_master *m, const struct cairn__req *rq,
                            struct cairn__resp *rs);

typedef struct cairn__route {
  const char *method;       /* "GET", "POST", ...; NULL: every method that the entries
                               before it with the same pattern do not name */
  const char *pattern;      /* the path: literal characters, "{name}" for one segment of
                               at least one character other than '/', a final "*" for any
                               rest; the first entry that matches a request is its route */
  cairn__route_label label; /* its requests' counter in /metrics */
  cairn__who who;
  size_t max_body;          /* the body cap (413 above it, from the headers when a
                               Content-Length says so); a streamed route: the most one
                               upload may send (the handler sets its own cap, at most this) */
  cairn__lane lane;
  cairn__handler *handler;  /* run by cairn__api_handle */
  unsigned flags;           /* RF_* */
  size_t slow_from;         /* LANE_SLOW: the body length from which it runs there (0: any) */
} cairn__route;

/* The entry of a request: the first whose pattern matches path and whose
 * method is method's or NULL. Never NULL: the table ends with catch-alls
 * (any other /v1/ path: 404; any other path: the dashboard). O(entries ×
 * length of path), no allocation. */
const cairn__route *cairn__api_route(const char *method, const char *path);

/* The table and its number of entries, for its tests. */
const cairn__route *cairn__route_table(size_t *n);

#endif
