/* routes.c — the route table (routes.h), its matcher (cairn__api_route,
 * called by server/http/http.c at a request's first callback) and the
 * dispatch that runs a request's handler (cairn__api_handle: http.c, the
 * slow lane through it, the fuzz target). */
#include <string.h>

#include "common/appsig.h"
#include "common/limits.h"
#include "common/outputs.h"
#include "server/api/api.h"
#include "server/conn/slow.h"

const char *const cairn__route_labels[RL_COUNT] = {
  [RL_UNKNOWN] = "unknown", [RL_HEALTHZ] = "/healthz", [RL_METRICS] = "/metrics", [RL_WEB] = "/",
  [RL_VOLUNTEERS] = "/v1/volunteers", [RL_WORK] = "/v1/work", [RL_RESULTS] = "/v1/results",
  [RL_HEARTBEAT] = "/v1/heartbeat", [RL_FILES] = "/v1/files",
  [RL_TASK_OUTPUT] = "/v1/tasks/output", [RL_JOBS] = "/v1/jobs", [RL_JOB] = "/v1/jobs/{id}",
  [RL_JOB_TASKS] = "/v1/jobs/{id}/tasks", [RL_BAN] = "/v1/volunteers/{id}/ban",
  [RL_RELEASE] = "/v1/volunteers/{id}/release", [RL_AUDIT_INDEX] = "/v1/audit/index/{n}",
  [RL_AUDIT_VOL] = "/v1/audit/volunteers/{id}", [RL_INVITATIONS] = "/v1/invitations",
  [RL_INVITATION] = "/v1/invitations/{id}", [RL_JOB_TASK] = "/v1/jobs/{id}/tasks/{key}",
  [RL_JOB_CANCEL] = "/v1/jobs/{id}/cancel", [RL_JOB_PRIORITY] = "/v1/jobs/{id}/priority",
  [RL_RESULT_FILE] = "/v1/results/{n}/files", [RL_JOB_OUTPUT] = "/v1/jobs/{id}/output",
  [RL_STATS] = "/v1/stats", [RL_RESULTS_BATCH] = "/v1/results (batch)",
  [RL_DEMAND] = "/v1/demand", [RL_JOB_DAG] = "/v1/jobs/{id}/dag",
  [RL_JOB_STATES] = "/v1/jobs/{id}/states", [RL_VOLUNTEER] = "/v1/volunteers/{id}",
  [RL_JOB_DIST] = "/v1/jobs/{id}/distribution", [RL_FILE_CHUNKS] = "/v1/files/{sha256}/chunks",
  [RL_APPS] = "/v1/apps", [RL_APP] = "/v1/apps/{name}/{version}/{platform}",
  [RL_APP_VERSION] = "/v1/apps/{name}/{version}", [RL_ACCOUNTS] = "/v1/accounts",
  [RL_ACCOUNT] = "/v1/accounts/{id}", [RL_SESSION] = "/v1/session", [RL_TEAMS] = "/v1/teams",
  [RL_TEAM] = "/v1/teams/{id}", [RL_PUBLIC_HOME] = "/v1/public/home",
  [RL_PUBLIC_TOP] = "/v1/public/top/{kind}", [RL_PUBLIC_ACCOUNT] = "/v1/public/accounts/{id}",
  [RL_PROJECT] = "/project/", [RL_STATS_EXPORT] = "/v1/stats/export",
  [RL_STATS_FILES] = "/stats/{file}", [RL_AUDIT_KEY] = "/v1/audit/key",
  [RL_AUDIT_STH] = "/v1/audit/sth", [RL_AUDIT_ENTRIES] = "/v1/audit/entries",
  [RL_AUDIT_PROOF] = "/v1/audit/proof", [RL_AUDIT_CONSISTENCY] = "/v1/audit/consistency"};

/* Body caps (common/limits.h); a streamed output file is bounded by
 * cfg.max_output_file_mib, at most CAIRN_MAX_OUTPUT_MIB. */
#define SMALL CAIRN_MAX_BODY_SMALL
#define OUTPUT_MAX ((size_t)CAIRN_MAX_OUTPUT_MIB * 1024 * 1024)

/* A path's other methods: 405, after the admin's token when who is
 * WHO_ADMIN (when all of the path's routes need it). */
#define OTHERS(pattern, label, who)                                                        \
  {NULL, pattern, label, who, SMALL, LANE_INLINE, cairn__api_not_allowed, 0, 0}

/* Every path answers every method: after a path's routes comes an entry
 * with method NULL for its other methods. Each pattern's entries are
 * consecutive; the first entry that matches a request is its route. */
static const cairn__route table[] = {
  /* method, pattern, label, who, body cap, lane,
   * handler, flags, slow_from */
  /* /healthz, /metrics */
  {"GET", "/healthz", RL_HEALTHZ, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_healthz, 0, 0},
  OTHERS("/healthz", RL_HEALTHZ, WHO_ANYONE),
  {"GET", "/metrics", RL_METRICS, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_metrics, RF_FAILED_OK, 0},
  {NULL, "/metrics", RL_METRICS, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_not_allowed, RF_FAILED_OK, 0},

  /* volunteers */
  {"POST", "/v1/volunteers", RL_VOLUNTEERS, WHO_ANYONE, CAIRN_MAX_BODY_REGISTER, LANE_INLINE,
   cairn__admission_register, RF_SPEND, 0},
  {"GET", "/v1/volunteers", RL_VOLUNTEERS, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_volunteers_list, 0, 0},
  OTHERS("/v1/volunteers", RL_VOLUNTEERS, WHO_ANYONE),
  {"PATCH", "/v1/volunteers/{id}", RL_VOLUNTEER, WHO_READER, SMALL, LANE_INLINE,
   cairn__admission_team, 0, 0},
  OTHERS("/v1/volunteers/{id}", RL_VOLUNTEER, WHO_ANYONE),
  {"POST", "/v1/volunteers/{id}/ban", RL_BAN, WHO_ADMIN, SMALL, LANE_SLOW, cairn__api_ban, 0, 0},
  OTHERS("/v1/volunteers/{id}/ban", RL_BAN, WHO_ADMIN),
  {"POST", "/v1/volunteers/{id}/release", RL_RELEASE, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_release, 0, 0},
  OTHERS("/v1/volunteers/{id}/release", RL_RELEASE, WHO_ADMIN),

  /* accounts (accounts.c): a sign-up and each log-in (POST /v1/accounts/login, the
   * one POST of the {id} pattern: its handler answers 404 to any other) spend an
   * anonymous token; an account's reading and change (people.c: joining or leaving
   * a team) check its key or its session themselves */
  {"POST", "/v1/accounts", RL_ACCOUNTS, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_account_create, RF_SPEND, 0},
  OTHERS("/v1/accounts", RL_ACCOUNTS, WHO_ANYONE),
  {"GET", "/v1/accounts/{id}", RL_ACCOUNT, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_account_get, 0, 0},
  {"POST", "/v1/accounts/{id}", RL_ACCOUNT, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_account_login, RF_SPEND, 0},
  {"PATCH", "/v1/accounts/{id}", RL_ACCOUNT, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_account_patch, 0, 0},
  OTHERS("/v1/accounts/{id}", RL_ACCOUNT, WHO_ANYONE),

  /* the pages' log-in sessions and teams of accounts (people.c): a log-in spends an
   * anonymous token; the others check the account key or the session themselves */
  {"POST", "/v1/session", RL_SESSION, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_session_post,
   RF_SPEND, 0},
  {"GET", "/v1/session", RL_SESSION, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_session_get, 0,
   0},
  {"DELETE", "/v1/session", RL_SESSION, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_session_delete, 0, 0},
  OTHERS("/v1/session", RL_SESSION, WHO_ANYONE),
  {"POST", "/v1/teams", RL_TEAMS, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_teams_post, 0, 0},
  OTHERS("/v1/teams", RL_TEAMS, WHO_ANYONE),
  {"GET", "/v1/teams/{id}", RL_TEAM, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_team_get, 0, 0},
  {"PATCH", "/v1/teams/{id}", RL_TEAM, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_team_patch, 0,
   0},
  OTHERS("/v1/teams/{id}", RL_TEAM, WHO_ANYONE),

  /* the public pages' data (public.c): home and leaderboards from a rendering; an
   * account's page reads the store, and spends an anonymous token */
  {"GET", "/v1/public/home", RL_PUBLIC_HOME, WHO_ANYONE, SMALL, LANE_INLINE, cairn__public_home,
   0, 0},
  OTHERS("/v1/public/home", RL_PUBLIC_HOME, WHO_ANYONE),
  {"GET", "/v1/public/top/{kind}", RL_PUBLIC_TOP, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__public_top, 0, 0},
  OTHERS("/v1/public/top/{kind}", RL_PUBLIC_TOP, WHO_ANYONE),
  {"GET", "/v1/public/accounts/{id}", RL_PUBLIC_ACCOUNT, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__public_account, RF_SPEND_ANON, 0},
  OTHERS("/v1/public/accounts/{id}", RL_PUBLIC_ACCOUNT, WHO_ANYONE),

  /* invitations, audit, demand, standings */
  {"POST", "/v1/invitations", RL_INVITATIONS, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__admission_invite, 0, 0},
  {"GET", "/v1/invitations", RL_INVITATIONS, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__admission_invitations, 0, 0},
  OTHERS("/v1/invitations", RL_INVITATIONS, WHO_ADMIN),
  {"DELETE", "/v1/invitations/{id}", RL_INVITATION, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__admission_revoke, 0, 0},
  OTHERS("/v1/invitations/{id}", RL_INVITATION, WHO_ADMIN),
  {"GET", "/v1/audit/index/{n}", RL_AUDIT_INDEX, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_audit_index, 0, 0},
  OTHERS("/v1/audit/index/{n}", RL_AUDIT_INDEX, WHO_ADMIN),
  {"GET", "/v1/audit/volunteers/{id}", RL_AUDIT_VOL, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_audit_volunteer, 0, 0},
  OTHERS("/v1/audit/volunteers/{id}", RL_AUDIT_VOL, WHO_ADMIN),
  /* the audit log (auditlog.c): anyone reads it, O(log n) reads an answer */
  {"GET", "/v1/audit/key", RL_AUDIT_KEY, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_log_key, 0, 0},
  OTHERS("/v1/audit/key", RL_AUDIT_KEY, WHO_ANYONE),
  {"GET", "/v1/audit/sth", RL_AUDIT_STH, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_log_sth, 0, 0},
  OTHERS("/v1/audit/sth", RL_AUDIT_STH, WHO_ANYONE),
  {"GET", "/v1/audit/entries", RL_AUDIT_ENTRIES, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_log_entries, 0, 0},
  OTHERS("/v1/audit/entries", RL_AUDIT_ENTRIES, WHO_ANYONE),
  {"GET", "/v1/audit/proof", RL_AUDIT_PROOF, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_log_proof, 0, 0},
  OTHERS("/v1/audit/proof", RL_AUDIT_PROOF, WHO_ANYONE),
  {"GET", "/v1/audit/consistency", RL_AUDIT_CONSISTENCY, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__api_log_consistency, 0, 0},
  OTHERS("/v1/audit/consistency", RL_AUDIT_CONSISTENCY, WHO_ANYONE),
  {"GET", "/v1/demand", RL_DEMAND, WHO_ADMIN, SMALL, LANE_INLINE, cairn__api_demand, 0, 0},
  OTHERS("/v1/demand", RL_DEMAND, WHO_ADMIN),
  {"GET", "/v1/stats", RL_STATS, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__stats_get, RF_SPEND_ANON, 0},
  OTHERS("/v1/stats", RL_STATS, WHO_ANYONE),
  /* the XML statistics (statsexport.c): an export asked for, its state; the
   * files, to anyone (a read spends an anonymous token, as the standings'),
   * served by a failed master too: they are the last export's */
  {"POST", "/v1/stats/export", RL_STATS_EXPORT, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__statsexport_post, 0, 0},
  {"GET", "/v1/stats/export", RL_STATS_EXPORT, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__statsexport_status, 0, 0},
  OTHERS("/v1/stats/export", RL_STATS_EXPORT, WHO_ADMIN),
  {"GET", "/stats/{file}", RL_STATS_FILES, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__statsfiles_get, RF_FAILED_OK | RF_SPEND_ANON, 0},
  {"HEAD", "/stats/{file}", RL_STATS_FILES, WHO_ANYONE, SMALL, LANE_INLINE,
   cairn__statsfiles_get, RF_FAILED_OK | RF_SPEND_ANON, 0},
  OTHERS("/stats/{file}", RL_STATS_FILES, WHO_ANYONE),

  /* a volunteer's work, reports and results; POST /v1/work is held when it
   * asked to wait and got no task */
  {"POST", "/v1/work", RL_WORK, WHO_VOLUNTEER, CAIRN_MAX_BODY_REPORT, LANE_HELD,
   cairn__api_work, 0, 0},
  OTHERS("/v1/work", RL_WORK, WHO_ANYONE),
  {"POST", "/v1/heartbeat", RL_HEARTBEAT, WHO_VOLUNTEER, CAIRN_MAX_BODY_REPORT, LANE_INLINE,
   cairn__api_heartbeat, 0, 0},
  OTHERS("/v1/heartbeat", RL_HEARTBEAT, WHO_ANYONE),
  {"POST", "/v1/results", RL_RESULTS_BATCH, WHO_VOLUNTEER, CAIRN_MAX_BODY_RESULTS, LANE_INLINE,
   cairn__api_results, 0, 0},
  OTHERS("/v1/results", RL_RESULTS_BATCH, WHO_ANYONE),
  {"PUT", "/v1/results/{n}", RL_RESULTS, WHO_VOLUNTEER, CAIRN_MAX_BODY_RESULT, LANE_INLINE,
   cairn__api_result, 0, 0},
  OTHERS("/v1/results/{n}", RL_RESULTS, WHO_ANYONE),
  {"PUT", "/v1/results/{n}/files/{sha256}", RL_RESULT_FILE, WHO_VOLUNTEER, OUTPUT_MAX,
   LANE_STREAMED, cairn__api_output_put, RF_FAILED_OK, 0},
  OTHERS("/v1/results/{n}/files/{sha256}", RL_RESULT_FILE, WHO_ANYONE),

  /* files and outputs */
  {"GET", "/v1/files/{sha256}", RL_FILES, WHO_READER, SMALL, LANE_INLINE,
   cairn__api_file_get, 0, 0},
  {"HEAD", "/v1/files/{sha256}", RL_FILES, WHO_READER, SMALL, LANE_INLINE,
   cairn__api_file_get, 0, 0},
  {"PUT", "/v1/files/{sha256}", RL_FILES, WHO_READER, CAIRN_MAX_FILE, LANE_STREAMED,
   cairn__api_file_put, RF_FAILED_OK, 0},
  OTHERS("/v1/files/{sha256}", RL_FILES, WHO_ANYONE),
  {"GET", "/v1/files/{sha256}/chunks", RL_FILE_CHUNKS, WHO_READER, SMALL, LANE_INLINE,
   cairn__api_file_chunks, 0, 0},
  OTHERS("/v1/files/{sha256}/chunks", RL_FILE_CHUNKS, WHO_ANYONE),
  {"GET", "/v1/tasks/{key}/output", RL_TASK_OUTPUT, WHO_READER, SMALL, LANE_INLINE,
   cairn__api_task_output, 0, 0},
  OTHERS("/v1/tasks/{key}/output", RL_TASK_OUTPUT, WHO_ANYONE),

  /* jobs: a submission of more than CAIRN__SLOW_BODY bytes and a deletion
   * run on the slow lane; a job wait (GET with ?wait=) is held while its
   * job runs */
  {"POST", "/v1/jobs", RL_JOBS, WHO_ADMIN, CAIRN_MAX_BODY, LANE_SLOW,
   cairn__api_jobs_post, 0, CAIRN__SLOW_BODY + 1},
  {"GET", "/v1/jobs", RL_JOBS, WHO_ADMIN, SMALL, LANE_INLINE, cairn__api_jobs_list, 0, 0},
  OTHERS("/v1/jobs", RL_JOBS, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}", RL_JOB, WHO_ADMIN, SMALL, LANE_HELD, cairn__api_job_get, 0, 0},
  {"DELETE", "/v1/jobs/{id}", RL_JOB, WHO_ADMIN, SMALL, LANE_SLOW, cairn__api_job_delete, 0, 0},
  OTHERS("/v1/jobs/{id}", RL_JOB, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}/tasks", RL_JOB_TASKS, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_job_tasks, 0, 0},
  OTHERS("/v1/jobs/{id}/tasks", RL_JOB_TASKS, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}/tasks/{key}", RL_JOB_TASK, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_job_task, 0, 0},
  OTHERS("/v1/jobs/{id}/tasks/{key}", RL_JOB_TASK, WHO_ADMIN),
  {"POST", "/v1/jobs/{id}/cancel", RL_JOB_CANCEL, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_job_cancel, 0, 0},
  OTHERS("/v1/jobs/{id}/cancel", RL_JOB_CANCEL, WHO_ADMIN),
  {"POST", "/v1/jobs/{id}/priority", RL_JOB_PRIORITY, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_job_priority, 0, 0},
  OTHERS("/v1/jobs/{id}/priority", RL_JOB_PRIORITY, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}/output", RL_JOB_OUTPUT, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_job_output, 0, 0},
  OTHERS("/v1/jobs/{id}/output", RL_JOB_OUTPUT, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}/dag", RL_JOB_DAG, WHO_ADMIN, SMALL, LANE_INLINE, cairn__dagview_get, 0, 0},
  OTHERS("/v1/jobs/{id}/dag", RL_JOB_DAG, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}/states", RL_JOB_STATES, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__states_get, 0, 0},
  OTHERS("/v1/jobs/{id}/states", RL_JOB_STATES, WHO_ADMIN),
  {"GET", "/v1/jobs/{id}/distribution", RL_JOB_DIST, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__distview_get, 0, 0},
  OTHERS("/v1/jobs/{id}/distribution", RL_JOB_DIST, WHO_ADMIN),

  /* signed app versions (apps.c) */
  {"POST", "/v1/apps", RL_APPS, WHO_ADMIN, CAIRN_APP_MAX_MANIFEST + 4096, LANE_INLINE,
   cairn__api_app_publish, 0, 0},
  {"GET", "/v1/apps", RL_APPS, WHO_READER, SMALL, LANE_INLINE, cairn__api_apps_list, 0, 0},
  OTHERS("/v1/apps", RL_APPS, WHO_ANYONE),
  {"PATCH", "/v1/apps/{name}/{version}", RL_APP_VERSION, WHO_ADMIN, SMALL, LANE_INLINE,
   cairn__api_app_retire, 0, 0},
  OTHERS("/v1/apps/{name}/{version}", RL_APP_VERSION, WHO_ADMIN),
  {"GET", "/v1/apps/{name}/{version}/{platform}", RL_APP, WHO_READER, SMALL, LANE_INLINE,
   cairn__api_app_get, 0, 0},
  OTHERS("/v1/apps/{name}/{version}/{platform}", RL_APP, WHO_ANYONE),

  /* the rest: any other /v1/ path is no route; a path under /project/, a file of
   * the project's public pages, any other path, a file of the dashboard (both
   * served by a failed master too) */
  {NULL, "/v1/*", RL_UNKNOWN, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_no_route, 0, 0},
  {"GET", "/project/*", RL_PROJECT, WHO_ANYONE, SMALL, LANE_INLINE, cairn__web_get,
   RF_FAILED_OK | RF_PROJECT, 0},
  {"HEAD", "/project/*", RL_PROJECT, WHO_ANYONE, SMALL, LANE_INLINE, cairn__web_get,
   RF_FAILED_OK | RF_PROJECT, 0},
  {NULL, "/project/*", RL_PROJECT, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_no_route,
   RF_PROJECT, 0},
  {"GET", "/*", RL_WEB, WHO_ANYONE, SMALL, LANE_INLINE, cairn__web_get, RF_FAILED_OK | RF_PAGE, 0},
  {"HEAD", "/*", RL_WEB, WHO_ANYONE, SMALL, LANE_INLINE, cairn__web_get, RF_FAILED_OK | RF_PAGE, 0},
  {NULL, "/*", RL_WEB, WHO_ANYONE, SMALL, LANE_INLINE, cairn__api_no_route, RF_PAGE, 0},
};
#define NROUTES (sizeof table / sizeof table[0])

const cairn__route *cairn__route_table(size_t *n) {
  *n = NROUTES;
  return table;
}

/* 1 when path matches pattern (routes.h): its literal characters as they
 * are, "{name}" one segment of one character or more without '/', a final
 * '*' any rest. O(length of path). */
static int matches(const char *pat, const char *path) {
  while (*pat) {
    if (*pat == '*')
      return 1;
    if (*pat == '{') {
      size_t n = strcspn(path, "/");
      if (n == 0)
        return 0;
      path += n;
      pat = strchr(pat, '}') + 1;
    } else if (*pat++ != *path++)
      return 0;
  }
  return *path == '\0';
}

const cairn__route *cairn__api_route(const char *method, const char *path) {
  const char *tried = NULL; /* the pattern of the entries before: matched or not */
  int matched = 0;
  for (size_t i = 0; i < NROUTES; i++) {
    if (table[i].pattern != tried) {
      tried = table[i].pattern;
      matched = matches(tried, path);
    }
    if (matched && (!table[i].method || strcmp(table[i].method, method) == 0))
      return &table[i];
  }
  return &table[NROUTES - 1]; /* not reached: the last entry matches every path and method */
}

void cairn__api_handle(cairn_master *m, const cairn__route *r, const cairn__req *rq,
                       cairn__resp *rs) {
  rs->fd = -1;
  cairn_error failure;
  if (!(r->flags & RF_FAILED_OK) && cairn__core_health(m->core, &failure) != CAIRN_OK)
    return cairn__api_fail(rs, &failure); /* a failed master answers 503 */
  if (r->who == WHO_ADMIN && !cairn__api_admin(m, rq, rs))
    return;
  if (r->lane == LANE_STREAMED && !rs->upload) /* not from http.c: no body can stream */
    return cairn__api_not_allowed(m, rq, rs);
  r->handler(m, rq, rs);
}
