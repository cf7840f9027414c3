/* harness.h — integration-test plumbing: real cairn-server and cairn-worker
 * processes on loopback, fresh temporary folders, HTTP with JSON. Processes
 * started here are killed when the test exits; in a ThreadSanitizer build a
 * report from any of them makes the test exit with status 66. */
#ifndef CAIRN_HARNESS_H
#define CAIRN_HARNESS_H

#include <jansson.h>
#include <sys/types.h>

#define HARNESS_ADMIN_TOKEN "test-admin-token-0123456789abcdef"

typedef struct harness_server {
  pid_t pid;
  char url[256];
  char db[4096];
} harness_server;

/* A fresh temporary folder (mkdtemp under $TMPDIR or /tmp), path in out;
 * removed with everything below it when the test exits with status 0 (kept,
 * and named on stderr, when it fails or CAIRN_TEST_KEEP is set). */
void harness_tmpdir(char *out, size_t len);
/* Path of a built binary: $CAIRN_BIN_DIR/name. */
void harness_bin(char *out, size_t len, const char *name);
/* The folder of the built binaries, absolute ($CAIRN_BIN_DIR, else
 * build/bin): for a worker whose script apps run the built apps, shown to
 * its task sandbox with --sandbox-bind. */
void harness_bin_dir(char *out, size_t len);
/* Starts cairn-server on 127.0.0.1:0 with db (admin token HARNESS_ADMIN_TOKEN),
 * waits for its "listening" line. extra: NULL-terminated extra arguments or NULL.
 * Returns 0 or -1. */
int harness_server_start(harness_server *s, const char *db, const char *const *extra);
/* Sends sig (SIGTERM or SIGKILL) and reaps the server; returns its wait status. */
int harness_server_stop(harness_server *s, int sig);

/* Spawns argv[0] (a path) with argv, stdout/stderr to log (may be NULL = inherit). */
pid_t harness_spawn(const char *const *argv, const char *log);
/* Starts cairn-worker as volunteer name of the master at url, in the
 * folder DIR/name with its log DIR/name.log: "--server url --dir DIR/name
 * --name name", then args (NULL-terminated; NULL: none). Its pid, or -1
 * (said on stderr). */
pid_t harness_worker(const char *url, const char *dir, const char *name, const char *const *args);
/* waitpid with a timeout in seconds; returns the status or -1 on timeout. */
int harness_wait(pid_t pid, double timeout);
/* Stops the n processes of pids that are > 0: SIGTERM, up to timeout
 * seconds each, then SIGKILL; reaps each and sets it to 0. */
void harness_stop_all(pid_t *pids, int n, double timeout);
/* Removes dir and everything below it; 0, or -1 when that failed. */
int harness_rmtree(const char *dir);

/* One HTTP request; body may be NULL. Returns the HTTP status (0 if no answer);
 * *resp gets the parsed JSON body (or NULL). raw/rawlen (optional) get the
 * raw body (caller frees *raw). */
long harness_http(const char *url, const char *method, const char *path, const char *token,
                  const char *body, size_t body_len, json_t **resp, char **raw, size_t *rawlen);
/* Convenience: JSON body from a json_t (not stolen). */
long harness_http_json(const char *url, const char *method, const char *path, const char *token,
                       json_t *body, json_t **resp);
/* Registers a volunteer for app; copies its token (65 bytes) and returns its id. */
long long harness_register(const char *url, const char *name, const char *app, char token[65]);
/* Writes text to path. */
int harness_write_file(const char *path, const char *text);
/* Runs a command (argv) and returns its exit status, capturing stdout into
 * out (malloc'd, may be NULL). */
int harness_run(const char *const *argv, char **out);
/* Seconds since an arbitrary start. */
/* The sum of the values of url's /metrics lines that start with prefix
 * (a name and a space, or a name and '{' to sum over its labels); -1 when
 * /metrics does not answer 200. */
long long harness_metric(const char *url, const char *prefix);
/* Polls (every 20 ms) until harness_metric(url, prefix) is want: 0, or -1
 * after timeout seconds. */
int harness_wait_metric(const char *url, const char *prefix, long long want, double timeout);
double harness_now(void);
/* A loopback TCP port on which nothing listens now, other than avoid (0:
 * any); 0 when no socket could be bound. */
unsigned harness_unused_port(unsigned avoid);
/* Sends POST /v1/work with token and body on a new connection to url's
 * server and does not read the answer (a held request stays open): the
 * socket, or -1 (said on stderr) when it could not be sent. */
int harness_send_work(const char *url, const char *token, const char *body);
/* The status of the answer on fd within timeout seconds (its first read);
 * 0 when none. */
int harness_read_status(int fd, double timeout);

#endif
