/* client.h — what the admin subcommands share: server URL and admin token
 * from flags or the environment, and JSON requests to the master. */
#ifndef CAIRN_CLI_CLIENT_H
#define CAIRN_CLI_CLIENT_H

#include <jansson.h>
#include <stdio.h>

#include "worker/transport.h"

typedef struct cairn__client_opts {
  const char *server;     /* --server or $CAIRN_SERVER */
  const char *token;      /* --token, $CAIRN_ADMIN_TOKEN, or --token-file's content */
  char token_buf[256];
} cairn__client_opts;

/* Consumes --server/--token/--token-file from argv (compacting it) and fills
 * the rest from the environment. Returns 0, or 1 after printing an error. */
int cairn__client_parse(int *argc, char **argv, cairn__client_opts *o);
/* A handle for o->server carrying the admin token; NULL after printing an error. */
cairn__http *cairn__client_connect(const cairn__client_opts *o);
/* Sends a request and parses the JSON answer into *out (may be NULL for 204).
 * Returns the HTTP status, or -1 after printing a transport error. On a
 * status >= 400 prints "cairn: MESSAGE" from the error body. A 429 with
 * Retry-After (the master changed nothing: busy, or a rate limit) is
 * asked again after that many seconds (1 to 30), while the waits so far
 * add up to less than CAIRN_CLI_RETRY_SECONDS (a ban of a volunteer with
 * many results may hold the slow lane that long), each retry told on
 * stderr. */
#define CAIRN_CLI_RETRY_SECONDS 60
long cairn__client_json(cairn__http *h, const char *method, const char *path, const char *body,
                       json_t **out, int quiet_errors);

/* The SHA-256 (hex) and size of the file at path; -1 when it cannot be read. */
int cairn__client_hash_file(const char *path, char hex[65], long long *size);
/* Uploads the file at path to the master's file store (PUT
 * /v1/files/{sha256}); its digest in hex and its size. what names it in
 * the error printed on failure (-1). */
int cairn__client_upload(cairn__http *h, const char *path, const char *what, char hex[65],
                         long long *size);

/* Every task of job: GET /v1/jobs/{job}/tasks page after page
 * (CAIRN_TASKS_PAGE_MAX tasks a request, "after" the last page's "next")
 * gathered into one {"tasks": [...]}. NULL after printing an error. */
json_t *cairn__client_job_tasks(cairn__http *h, long long job);

/* The value of option name (removed from argv with it), or NULL. */
const char *cairn__cli_take_opt(int *argc, char **argv, const char *name);
/* The first line of f (without its end) into out (cap bytes): 0, or -1
 * when there is none or it is longer. */
int cairn__cli_first_line(FILE *f, char *out, size_t cap);
/* An account's key from --account-key KEY or --account-key-file PATH (both
 * removed from argv), into *key (buf holds a file's); *key NULL when
 * neither. 0, or 1 after printing why. */
int cairn__cli_account_key(int *argc, char **argv, char *buf, size_t cap, const char **key);

/* cairn status JOB TASK (cmd_task.c): task TASK (its id in the job file) of
 * job, its limits and attempts. Returns the exit status. */
int cairn__task_status(cairn__http *h, long long job, const char *task);

#endif
