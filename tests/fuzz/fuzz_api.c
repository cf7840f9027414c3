/* fuzz_api.c — libFuzzer target: the body parsers of the volunteer and
 * admin routes, through the route handler called in-process
 * (cairn__api_handle, server/api/api.c) over a real master and core on a real
 * SQLite store in a temporary directory made once per process.
 *
 * Byte 0 picks the route and method (routes[]), byte 1 the number in its
 * path (a lease index the fuzzer was given, a volunteer or a job id); the
 * rest is the body. Every answer must be a status from 200 to 599, and a
 * 4xx one must carry a JSON error body. The master is deleted and made again
 * on a fresh store every RESET_EVERY inputs, so the state stays bounded. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "cairn/master.h"
#include "server/api/api.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define RESET_EVERY 2000
#define ADMIN "fuzz-admin-token-0123456789abcdef"

typedef enum { ANON, VOL, ADM } who;
static const struct {
  const char *method, *path; /* path: a printf format with one %lld, or none */
  who auth;
} routes[] = {
  {"POST", "/v1/volunteers", ANON},
  {"POST", "/v1/work", VOL},
  {"PUT", "/v1/results/%lld", VOL},
  {"POST", "/v1/results", VOL},
  {"POST", "/v1/heartbeat", VOL},
  {"POST", "/v1/jobs", ADM},
  {"POST", "/v1/volunteers/%lld/ban", ADM},
  {"POST", "/v1/volunteers/%lld/release", ADM},
  {"POST", "/v1/invitations", ADM},
  {"POST", "/v1/jobs/%lld/cancel", ADM},
  {"POST", "/v1/jobs/%lld/priority", ADM},
  {"POST", "/v1/work", VOL}, /* twice: the route most bodies reach */
};
#define NROUTES (sizeof routes / sizeof routes[0])

static const char JOB[] =
  "{\"name\": \"fuzz\", \"app\": \"sum\", \"replication\": 2, \"quorum\": 1, \"tasks\": ["
  "{\"id\": \"a\", \"args\": [\"1\"]}, {\"id\": \"b\", \"after\": [\"a\"]},"
  "{\"id\": \"c\"}, {\"id\": \"d\"}]}";

static char dir[128];
static char db[160];
static cairn_master *m;
static char token[65];        /* a registered volunteer's */
static long long leases[4];   /* the last indices POST /v1/work gave it */
static unsigned nleases, served;

static void handle(const char *method, const char *path, const char *tok, const char *body,
                   size_t len, cairn__resp *rs) {
  cairn__req rq = {.method = method, .path = path, .token = tok, .client_ip = "127.0.0.1",
                   .body = body, .len = len};
  memset(rs, 0, sizeof *rs);
  cairn__api_handle(m, cairn__api_route(method, path), &rq, rs);
}

/* Remembers the index of an offer (or of each offer of a batch). */
static void learn(const cairn__resp *rs) {
  json_t *o = rs->status == 200 ? json_loadb(rs->body, rs->len, 0, NULL) : NULL;
  json_t *tasks = json_object_get(o, "tasks");
  if (json_is_integer(json_object_get(o, "index")))
    leases[nleases++ % 4] = json_integer_value(json_object_get(o, "index"));
  for (size_t i = 0; i < json_array_size(tasks); i++)
    leases[nleases++ % 4] = json_integer_value(json_object_get(json_array_get(tasks, i), "index"));
  json_decref(o);
}

/* Removes the store's files. */
static void remove_store(void) {
  char path[200];
  const char *const sfx[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof sfx / sizeof *sfx; i++) {
    snprintf(path, sizeof path, "%s%s", db, sfx[i]);
    unlink(path);
  }
}

/* At exit (libFuzzer's -max_total_time ends with exit()). */
static void cleanup(void) {
  cairn_master_delete(m);
  m = NULL;
  remove_store();
  char files[200];
  snprintf(files, sizeof files, "%s.files", db); /* the master's upload folder (empty) */
  rmdir(files);
  rmdir(dir);
}

/* A master on a fresh store with one job and one volunteer (token). */
static void open_master(void) {
  cairn_master_config cfg;
  cairn_error err = {0};
  remove_store();
  cairn_master_config_init(&cfg);
  cfg.db_path = db;
  cfg.listen = "127.0.0.1:0";
  cfg.admin_token = ADMIN;
  cfg.durable = 0;
  cfg.log_level = CAIRN_LOG_ERROR;
  cfg.anonymous_per_minute = -1;
  cfg.volunteer_per_minute = -1;
  m = cairn_master_create(&cfg, &err);
  long long job = 0;
  if (!m || cairn_master_submit(m, JOB, strlen(JOB), &job, &err) != CAIRN_OK) {
    fprintf(stderr, "fuzz_api: cannot make a master: %s\n", err.text);
    abort();
  }
  cairn__resp rs;
  static const char reg[] = "{\"apps\": [\"sum\"], \"name\": \"fuzz\", \"slots\": 4}";
  handle("POST", "/v1/volunteers", NULL, reg, sizeof reg - 1, &rs);
  json_t *o = json_loadb(rs.body ? rs.body : "", rs.len, 0, NULL);
  const char *t = json_string_value(json_object_get(o, "token"));
  if (!t || strlen(t) >= sizeof token)
    abort();
  strcpy(token, t);
  json_decref(o);
  free(rs.body);
  nleases = 0;
}

/* The store goes in memory-backed /dev/shm when there is one (each request
 * waits for its commit), else in $TMPDIR or /tmp. */
int LLVMFuzzerInitialize(int *argc, char ***argv) {
  const char *tmp = getenv("TMPDIR");
  if (access("/dev/shm", W_OK) == 0)
    tmp = "/dev/shm";
  snprintf(dir, sizeof dir, "%s/cairn-fuzz-api-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir))
    abort();
  snprintf(db, sizeof db, "%s/fuzz.db", dir);
  open_master();
  atexit(cleanup);
  return 0;
}

static void check(const cairn__resp *rs) {
  if (rs->status < 200 || rs->status > 599)
    abort();
  if (rs->status >= 400 && rs->status < 500) { /* a 4xx names its problem */
    json_t *o = json_loadb(rs->body ? rs->body : "", rs->len, 0, NULL);
    if (!json_string_value(json_object_get(json_object_get(o, "error"), "message")))
      abort();
    json_decref(o);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 2)
    return 0;
  if (++served % RESET_EVERY == 0) {
    cairn_master_delete(m);
    open_master();
  }
  unsigned r = data[0] % NROUTES;
  long long n = data[1] < 4 && nleases ? leases[data[1]] : data[1] % 8;
  char path[128];
  snprintf(path, sizeof path, routes[r].path, n);
  const char *tok = routes[r].auth == VOL ? token : routes[r].auth == ADM ? ADMIN : NULL;
  /* the body is copied: a route may read it as a NUL-ended string */
  size_t len = size - 2;
  char *body = malloc(len + 1);
  if (!body)
    return 0;
  memcpy(body, data + 2, len);
  body[len] = '\0';
  cairn__resp rs;
  handle(routes[r].method, path, tok, body, len, &rs);
  check(&rs);
  if (routes[r].auth == VOL)
    learn(&rs);
  if (rs.fd >= 0)
    close(rs.fd);
  free(rs.body);
  free(body);
  return 0;
}
