/* cmd_life.c — a job's life: cairn cancel, cairn delete, cairn priority
 * (POST /v1/jobs/{id}/cancel, DELETE /v1/jobs/{id}[?purge=1],
 * POST /v1/jobs/{id}/priority). */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/limits.h"
#include "common/termsafe.h"

/* How long cairn delete retries while the job's leases end (409). */
#define DELETE_WAIT_SECONDS 120

static int job_id(const char *s, long long *out) {
  char *end = NULL;
  *out = strtoll(s, &end, 10);
  return *s && !*end && *out > 0 ? 0 : -1;
}

static long long num(json_t *o, const char *k) {
  return (long long)json_integer_value(json_object_get(o, k));
}

/* Parses the common flags, then JOB and, when want_n, an integer N.
 * Returns 0, or 1 after printing usage. */
static int args(int *argc, char **argv, cairn__client_opts *o, const char *usage, int *purge,
                long long *id, long long *n) {
  if (cairn__client_parse(argc, argv, o))
    return 1;
  int npos = 0;
  for (int i = 1; i < *argc; i++) {
    char *end = NULL;
    if (purge && strcmp(argv[i], "--purge") == 0)
      *purge = 1;
    else if (npos == 0 && job_id(argv[i], id) == 0)
      npos++;
    else if (npos == 1 && n && (*n = strtoll(argv[i], &end, 10), *argv[i] && !*end) &&
             *n >= -CAIRN_MAX_PRIORITY && *n <= CAIRN_MAX_PRIORITY)
      npos++;
    else
      return cairn__cli_fail("usage: %s", usage);
  }
  if (npos != (n ? 2 : 1))
    return cairn__cli_fail("usage: %s", usage);
  return 0;
}

int cairn__cmd_cancel(int argc, char **argv) {
  static const char usage[] = "cairn cancel JOB";
  if (cairn__cli_wants_help(argc, argv)) {
    printf("usage: %s\nCancels job JOB: no task of it is allocated any more, and the workers "
           "running its\ntasks kill them at their next heartbeat. Cancelling a cancelled job "
           "changes nothing;\na finished (done or failed) job cannot be cancelled.\n", usage);
    return 0;
  }
  cairn__client_opts o = {0};
  long long id = 0;
  if (args(&argc, argv, &o, usage, NULL, &id, NULL))
    return 1;
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/cancel", id);
  json_t *r = NULL;
  long st = cairn__client_json(h, "POST", path, NULL, &r, 0);
  if (st == 200)
    printf("job %lld %s (%lld leases still out end at their workers' next heartbeat)\n", id,
           json_is_true(json_object_get(r, "already")) ? "was already cancelled" : "cancelled",
           num(r, "leases_out"));
  json_decref(r);
  cairn__http_delete(h);
  return st == 200 ? 0 : 1;
}

int cairn__cmd_delete(int argc, char **argv) {
  static const char usage[] = "cairn delete JOB [--purge]";
  if (cairn__cli_wants_help(argc, argv)) {
    printf("usage: %s\nDeletes job JOB (a running job is cancelled first; the delete waits up "
           "to %d s\nfor its leases to end): its tasks, results, and every stored file no "
           "other job\nuses. The allocation records stay, so that cairn audit still answers "
           "for its\nindices, unless --purge is given.\n", usage, DELETE_WAIT_SECONDS);
    return 0;
  }
  cairn__client_opts o = {0};
  long long id = 0;
  int purge = 0;
  if (args(&argc, argv, &o, usage, &purge, &id, NULL))
    return 1;
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[80];
  snprintf(path, sizeof path, "/v1/jobs/%lld%s", id, purge ? "?purge=1" : "");
  time_t until = time(NULL) + DELETE_WAIT_SECONDS;
  json_t *r = NULL;
  long st;
  /* 409: cancelled, leases still out; they end within a heartbeat period */
  while ((st = cairn__client_json(h, "DELETE", path, NULL, &r, 1)) == 409 && time(NULL) < until) {
    json_decref(r);
    r = NULL;
    sleep(1);
  }
  if (st == 200)
    printf("job %lld deleted%s: %lld tasks (%lld kept for the audit), %lld results (%lld bytes), "
           "%lld allocations, %lld files (%lld bytes)\n", id, purge ? " and purged" : "",
           num(r, "tasks"), num(r, "tasks_kept"), num(r, "results"), num(r, "result_bytes"),
           num(r, "allocations"), num(r, "files"), num(r, "file_bytes"));
  else if (st >= 400) {
    json_t *msg = json_object_get(json_object_get(r, "error"), "message");
    char safe[1024]; /* the master's words, without control characters */
    cairn__termsafe(json_is_string(msg) ? json_string_value(msg) : "no details", safe, sizeof safe);
    cairn__cli_fail("DELETE %s: HTTP %ld: %s", path, st, safe);
  }
  json_decref(r);
  cairn__http_delete(h);
  return st == 200 ? 0 : 1;
}

int cairn__cmd_priority(int argc, char **argv) {
  static const char usage[] = "cairn priority JOB N";
  if (cairn__cli_wants_help(argc, argv)) {
    printf("usage: %s\nSets job JOB's priority to N (an integer from %d to %d; default 0): "
           "among jobs\nwith work, the highest priority is served first, ties in submission "
           "order.\n", usage, -CAIRN_MAX_PRIORITY, CAIRN_MAX_PRIORITY);
    return 0;
  }
  cairn__client_opts o = {0};
  long long id = 0, n = 0;
  if (args(&argc, argv, &o, usage, NULL, &id, &n))
    return 1;
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  char path[64], body[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld/priority", id);
  snprintf(body, sizeof body, "{\"priority\": %lld}", n);
  json_t *r = NULL;
  long st = cairn__client_json(h, "POST", path, body, &r, 0);
  if (st == 200)
    printf("job %lld priority %lld\n", id, num(r, "priority"));
  json_decref(r);
  cairn__http_delete(h);
  return st == 200 ? 0 : 1;
}
