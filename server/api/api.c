/* api.c — most of the route handlers that routes.c's table names, and the
 * helpers they share with admission.c, results.c and the views: parse and
 * check the request, call the core, render JSON. Bad input gets 400 with a
 * message naming the field; nothing changes. */
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/base64.h"
#include "plan/jobspec.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/protocol.h"
#include "common/sha256.h"
#include "server/core/demand.h"
#include "server/core/fit.h"
#include "server/api/api.h"
#include "server/core/outputs.h"
#include "server/dist/chunks.h"

static const int status_slots[CAIRN__STATUS_SLOTS] = {200, 201, 204, 400, 401, 403, 404, 405,
                                                      409, 413, 429, 500, 503, 304, 0,   0};

void cairn__api_count(cairn_master *m, const cairn__route *r, int status) {
  int slot = CAIRN__STATUS_SLOTS - 1;
  for (int i = 0; i < CAIRN__STATUS_SLOTS; i++)
    if (status_slots[i] == status) {
      slot = i;
      break;
    }
  pthread_mutex_lock(&m->stats_lock);
  m->requests[r->label][slot]++;
  pthread_mutex_unlock(&m->stats_lock);
}

void cairn__api_json(cairn__resp *rs, int status, json_t *o) {
  rs->status = status;
  rs->ctype = "application/json";
  rs->body = o ? json_dumps(o, JSON_COMPACT) : NULL;
  rs->len = rs->body ? strlen(rs->body) : 0;
  json_decref(o);
  if (o && !rs->body) {
    rs->status = 503;
    rs->body = NULL;
  }
}

void cairn__api_error(cairn__resp *rs, cairn_status st, const char *text) {
  json_t *o = json_pack("{s:{s:s, s:s}}", "error", "code", cairn__status_code(st), "message",
                        text && *text ? text : cairn_strerror(st));
  cairn__api_json(rs, cairn__status_http(st), o);
}

void cairn__api_retry(cairn__resp *rs, int ms) {
  rs->retry_after = ms >= 1000 ? ms / 1000 : 1;
  rs->retry_after_ms = ms;
}

void cairn__api_fail(cairn__resp *rs, const cairn_error *err) {
  cairn__api_error(rs, err->status, err->text);
}

void cairn__api_failf(cairn__resp *rs, cairn_status st, const char *fmt, ...) {
  char text[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(text, sizeof text, fmt, ap);
  va_end(ap);
  cairn__api_error(rs, st, text);
}

int cairn__api_is_admin(const cairn_master *m, const char *token) {
  if (!token)
    return 0;
  size_t a = strlen(m->admin_token), b = strlen(token);
  unsigned char diff = (unsigned char)(a != b);
  for (size_t i = 0; i < a; i++)
    diff |= (unsigned char)(m->admin_token[i] ^ (i < b ? token[i] : 0));
  return diff == 0;
}

/* Parses a JSON object body allowing only keys (any key when keys is NULL:
 * the caller checks them); empty body = {} when empty_ok. */
json_t *cairn__api_body(const cairn__req *rq, const char *const *keys, int empty_ok,
                        cairn__resp *rs) {
  if (rq->len == 0 && empty_ok)
    return json_object();
  json_error_t je;
  json_t *o = json_loadb(rq->body ? rq->body : "", rq->len, JSON_REJECT_DUPLICATES, &je);
  if (!o) {
    cairn__api_failf(rs, CAIRN_EINVAL, "malformed JSON at line %d column %d: %s", je.line,
                     je.column, je.text);
    return NULL;
  }
  if (!json_is_object(o)) {
    json_decref(o);
    cairn__api_failf(rs, CAIRN_EINVAL, "the body must be a JSON object");
    return NULL;
  }
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    int ok = !keys;
    for (const char *const *a = keys; a && *a; a++)
      ok |= strcmp(*a, k) == 0;
    if (!ok) {
      cairn__api_failf(rs, CAIRN_EINVAL, "unknown field \"%s\"", k);
      json_decref(o);
      return NULL;
    }
  }
  return o;
}

/* Reads an array of app names into apps[] (borrowed strings). */
int cairn__api_apps(json_t *a, const char **apps, unsigned max, int *n, cairn__resp *rs) {
  *n = 0;
  if (!json_is_array(a) || json_array_size(a) > max) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"apps\" must be an array of at most %u app names", max);
    return -1;
  }
  for (size_t i = 0; i < json_array_size(a); i++) {
    json_t *s = json_array_get(a, i);
    if (!json_is_string(s) || json_string_length(s) == 0 ||
        json_string_length(s) > CAIRN_MAX_NAME || json_string_value(s)[0] == '@') {
      cairn__api_failf(rs, CAIRN_EINVAL, "apps[%zu] must be a non-empty name, not starting "
                       "with '@'", i);
      return -1;
    }
    apps[(*n)++] = json_string_value(s);
  }
  return 0;
}

const char *cairn__api_opt_str(json_t *o, const char *key, const char *def, cairn__resp *rs) {
  json_t *v = json_object_get(o, key);
  if (!v)
    return def;
  if (!json_is_string(v) || json_string_length(v) > CAIRN_MAX_NAME) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be a string of at most %u bytes", key,
                     CAIRN_MAX_NAME);
    return NULL;
  }
  return json_string_value(v);
}

/* Reads the report in body o (the fields of takes; also[]: the handler's
 * own keys) into r, borrowing from o; -1 with a 400 in rs naming the field
 * or entry at fault. */
static int report_of(json_t *o, unsigned takes, const char *const *also, cairn__report *r,
                     cairn__resp *rs) {
  cairn_error err = {0};
  if (cairn__report_parse(o, takes, also, r, &err) == CAIRN_OK)
    return 0;
  cairn__api_fail(rs, &err);
  return -1;
}

/* Hands v's checked report r to the core. Failures first: a holding
 * reported in the same body ends the transfer records they are checked
 * against. */
/* The id of the volunteer whose token rq carries; 0 with the error in rs. */
int64_t cairn__api_volunteer(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t v = 0;
  cairn_error err = {0};
  if (cairn__core_auth(m->core, rq->token, &v, &err) != CAIRN_OK) {
    cairn__api_fail(rs, &err);
    return 0;
  }
  return v;
}

/* POST /v1/work's "wait": 0 when absent; -1 with the 400 in rs when it is
 * not an integer from 0 to CAIRN_MAX_WAIT_MS. */
static int work_wait(json_t *o, cairn__resp *rs) {
  json_t *v = json_object_get(o, "wait");
  if (!v)
    return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 ||
      json_integer_value(v) > CAIRN_MAX_WAIT_MS) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"wait\" must be an integer from 0 to %d (milliseconds)",
                     CAIRN_MAX_WAIT_MS);
    return -1;
  }
  return (int)json_integer_value(v);
}

/* Asks http.c to hold a work request that found no task for up to wait
 * ms (waiters.h): woken for the apps it names, else those volunteer v
 * declared (more than CAIRN__WAITERS_APPS: for any). O(apps). */
static void work_hold(cairn_master *m, int64_t v, const char **apps, int napps, int named,
                      int many, int wait, uint64_t gen, cairn__hold *h) {
  int n = napps;
  if (named)
    for (int i = 0; i < napps && i < CAIRN__WAITERS_APPS; i++)
      h->apps[i] = cairn__hash_app(apps[i]);
  else
    n = cairn__core_app_hashes(m->core, v, h->apps, CAIRN__WAITERS_APPS);
  h->napps = n <= CAIRN__WAITERS_APPS ? n : 0;
  h->gen = gen;
  h->ms = wait;
  h->vol = named || many ? 0 : v; /* its own apps, one task: a handoff may serve it */
  h->owner = v;
  h->owner_cap = cairn__core_hold_cap(m->core, v);
}

void cairn__api_work_handed(cairn_master *m, json_t *offer, uint64_t seq, cairn__resp *rs) {
  cairn_error err = {0};
  if (cairn__core_durable(m->core, seq, &err) != CAIRN_OK) {
    json_decref(offer);
    cairn__api_fail(rs, &err);
  } else
    cairn__api_json(rs, 200, offer);
}

/* One task for volunteer v (POST /v1/work without "max"): 200 with it,
 * 204 (with Retry-After when the core names a wait), or 429 with it when v
 * holds its lease bound. */
static void work_one(cairn_master *m, int64_t v, const cairn__report *r, const char **apps,
                     int napps, cairn__resp *rs) {
  json_t *work = NULL;
  int retry_ms = 0;
  cairn_error err = {0};
  if (cairn__core_work(m->core, v, r, (char **)apps, napps, &work, &retry_ms, &err) != CAIRN_OK)
    cairn__api_fail(rs, &err);
  else if (!work)
    rs->status = 204;
  else
    cairn__api_json(rs, 200, work);
  /* a holder appears in its cluster within moments; a quarantined
   * volunteer waits minutes (CAIRN__QUAR_RETRY_MS) */
  if (!work && retry_ms > 0)
    cairn__api_retry(rs, retry_ms);
}

void cairn__api_work(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const own[] = {"apps", "max", "wait", NULL};
  int64_t v = cairn__api_volunteer(m, rq, rs);
  if (!v)
    return;
  json_t *o = cairn__api_body(rq, NULL, 1, rs);
  if (!o)
    return;
  const char *apps[CAIRN_MAX_APPS];
  int napps = 0;
  cairn__report r;
  json_t *a = json_object_get(o, "apps");
  int wait = 0;
  if (report_of(o, CAIRN_WORK_FIELDS, own, &r, rs) ||
      (a && cairn__api_apps(a, apps, CAIRN_MAX_APPS, &napps, rs)) || (wait = work_wait(o, rs)) < 0)
    goto out;
  /* the generation before the look: a wake after it is not lost (waiters.h) */
  uint64_t gen = wait > 0 && rs->hold ? cairn__waiters_gen(m->waiters) : 0;
  const cairn__report *rep = rq->resumed ? NULL : &r; /* applied the first time */
  if (json_object_get(o, "max")) /* several tasks (results.c) */
    cairn__api_work_many(m, v, rep, (char **)apps, a ? napps : 0, json_object_get(o, "max"), rs);
  else
    work_one(m, v, rep, apps, a ? napps : 0, rs);
  /* no task for now, and none soon: http.c holds the request */
  if (rs->status == 204 && !rs->retry_after_ms && wait > 0 && rs->hold)
    work_hold(m, v, apps, napps, a != NULL, json_object_get(o, "max") != NULL, wait, gen,
              rs->hold);
out:
  json_decref(o);
}

/* The id that s spells up to '/' or its end: decimal digits only, no sign,
 * blank or leading zero, from 1 to INT64_MAX; -1 when it is none. */
int64_t cairn__api_id(const char *s, const char **end) {
  int64_t n = 0;
  const char *p = s;
  if (*p < '1' || *p > '9')
    return -1;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (n > (INT64_MAX - (*p - '0')) / 10)
      return -1;
    n = n * 10 + (*p - '0');
  }
  if (*p && *p != '/')
    return -1;
  *end = p;
  return n;
}

/* The id in path right after prefix (see cairn__api_id); -1 if none. */
static int64_t number_after(const char *path, const char *prefix) {
  const char *end = NULL;
  return cairn__api_id(path + strlen(prefix), &end);
}

void cairn__api_heartbeat(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t v = cairn__api_volunteer(m, rq, rs);
  if (!v)
    return;
  json_t *o = cairn__api_body(rq, NULL, 1, rs);
  if (!o)
    return;
  cairn__report r;
  if (report_of(o, CAIRN_HEARTBEAT_FIELDS, NULL, &r, rs)) {
    json_decref(o);
    return;
  }
  json_t *resp = NULL;
  cairn_error err = {0};
  cairn_status st = cairn__core_heartbeat(m->core, v, &r, &resp, &err);
  json_decref(o); /* after the call: r borrows its strings */
  if (st != CAIRN_OK) {
    json_decref(resp);
    cairn__api_fail(rs, &err);
  } else {
    char key[65];
    cairn__core_peer_key(m->core, v, key);
    json_object_set_new(resp, "peer_key", json_string(key));
    json_object_set_new(resp, CAIRN_FEATURES_KEY, cairn__features_json(CAIRN_FEATURES_ALL));
    cairn__api_log_heartbeat(m, resp); /* the newest signed head, "sth" */
    cairn__api_json(rs, 200, resp);
  }
}

/* The admin reads everything; a volunteer, only the inputs and parents'
 * outputs of the tasks it holds leases on (sha256, or else the task key). */
static int reader_ok(cairn_master *m, const cairn__req *rq, const char *sha256, int64_t key,
                     cairn__resp *rs) {
  if (cairn__api_is_admin(m, rq->token))
    return 1;
  int64_t v = cairn__api_volunteer(m, rq, rs);
  if (!v)
    return 0;
  cairn_error err = {0};
  cairn_status st = sha256 ? cairn__core_may_read_file(m->core, v, sha256, &err)
                           : cairn__core_may_read_output(m->core, v, key, &err);
  if (st != CAIRN_OK)
    cairn__api_fail(rs, &err);
  return st == CAIRN_OK;
}

static int is_get(const cairn__req *rq) { return strcmp(rq->method, "GET") == 0; }

void cairn__api_file_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *sha = rq->path + strlen("/v1/files/");
  int64_t size = 0;
  if (cairn__sha256_valid_hex(sha) && !reader_ok(m, rq, sha, 0, rs))
    return;
  if (!cairn__sha256_valid_hex(sha) || !cairn__core_has_file(m->core, sha, &size)) {
    cairn__api_failf(rs, CAIRN_ENOTFOUND, "no file %s", sha);
    return;
  }
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", cairn__core_files_dir(m->core), sha);
  FILE *f = fopen(path, "rb");
  if (!f) {
    cairn__api_failf(rs, CAIRN_EIO, "file %s is recorded but cannot be read", sha);
    return;
  }
  rs->fd = dup(fileno(f));
  fclose(f);
  rs->fd_size = (uint64_t)size;
  /* the rest of a copy broken off elsewhere ("Resumed copies") */
  long long from = is_get(rq) ? cairn__range_start(rq->range, (unsigned long long)size) : -1;
  rs->fd_from = from > 0 ? (uint64_t)from : 0;
  if (is_get(rq))
    cairn__core_served_by_master(m->core, sha, (uint64_t)size - rs->fd_from);
  rs->status = from > 0 ? 206 : 200;
  rs->ctype = "application/octet-stream";
}

/* GET /v1/files/{sha256}/chunks (feature "chunks"): the file's chunk
 * digests (chunks.h), read outside c->lock. */
void cairn__api_file_chunks(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  char sha[65] = "";
  const char *s = rq->path + strlen("/v1/files/");
  if (strcspn(s, "/") == 64)
    memcpy(sha, s, 64);
  int64_t size = 0;
  int kept = 0;
  if (cairn__sha256_valid_hex(sha) && !reader_ok(m, rq, sha, 0, rs))
    return;
  if (!cairn__sha256_valid_hex(sha) || (!cairn__core_has_file(m->core, sha, &size) &&
                                       !(kept = cairn__core_kept_file(m->core, sha, &size)))) {
    cairn__api_failf(rs, CAIRN_ENOTFOUND, "no file %.64s", s);
    return;
  }
  cairn_error err = {0};
  if (cairn__chunks_json(cairn__core_files_dir(m->core), sha, size, kept, &rs->body, &rs->len,
                         &err) != CAIRN_OK) {
    cairn__api_fail(rs, &err);
    return;
  }
  if (kept) /* its receivers may now relay it (keep.c) */
    cairn__core_kept_chunked(m->core, sha);
  rs->status = 200;
  rs->ctype = "application/json";
}

void cairn__api_task_output(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *s = rq->path + strlen("/v1/tasks/"), *end = NULL;
  int64_t key = cairn__api_id(s, &end);
  if (key < 0) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%.*s\" is not a task number", (int)strcspn(s, "/"), s);
    return;
  }
  if (!reader_ok(m, rq, NULL, key, rs))
    return;
  char *out = NULL;
  size_t len = 0;
  cairn_error err = {0};
  if (cairn__core_task_output(m->core, key, &out, &len, &err) != CAIRN_OK) {
    cairn__api_fail(rs, &err);
    return;
  }
  rs->status = 200;
  rs->ctype = "application/octet-stream";
  rs->body = out;
  rs->len = len;
}

/* GET /v1/jobs/{id}/output?task=T&name=N (admin): one output file of a
 * done task's accepted result. */
void cairn__api_job_output(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t job = cairn__api_job_id(rq, rs);
  if (job < 0)
    return;
  if (!rq->arg_task || !rq->arg_name || !*rq->arg_task || !cairn__output_name_ok(rq->arg_name))
    return cairn__api_failf(rs, CAIRN_EINVAL,
                            "give the task id and the output file's name: "
                            "/v1/jobs/%lld/output?task=T&name=N",
                            (long long)job);
  char sha[65];
  int64_t size = 0;
  cairn_error err = {0};
  if (cairn__core_output_file(m->core, job, rq->arg_task, rq->arg_name, sha, &size, &err) !=
      CAIRN_OK)
    return cairn__api_fail(rs, &err);
  if (!cairn__core_has_file(m->core, sha, NULL))
    return cairn__api_failf(rs, CAIRN_ENOTFOUND,
                            "output %.200s of task %.200s is kept on the workers that "
                            "made it (the job's \"keep\" is \"workers\"): the master has no copy",
                            rq->arg_name, rq->arg_task);
  char path[4200];
  snprintf(path, sizeof path, "%s/%s", cairn__core_files_dir(m->core), sha);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return cairn__api_failf(rs, CAIRN_EIO, "file %s is recorded but cannot be read", sha);
  rs->fd = fd;
  rs->fd_size = (uint64_t)size;
  rs->status = 200;
  rs->ctype = "application/octet-stream";
}

/* PUT /v1/results/{n}/files/{sha256}, at its headers (the gate checked
 * the token: a volunteer's): the volunteer must hold lease n and may upload
 * its Content-Length (which this route needs) of output file sha256. */
void cairn__api_output_put(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *s = rq->path + strlen("/v1/results/"), *end = NULL;
  int64_t idx = cairn__api_id(s, &end);
  if (idx < 0 || !cairn__sha256_valid_hex(end + strlen("/files/")))
    return cairn__api_failf(rs, CAIRN_EINVAL,
                            "the URL must be /v1/results/{index}/files/{sha256} (64 lowercase "
                            "hex digits)");
  if (!rq->has_length)
    return cairn__api_failf(rs, CAIRN_EINVAL, "an output file upload needs a Content-Length");
  int64_t v = cairn__api_volunteer(m, rq, rs);
  if (!v)
    return;
  cairn_error err = {0};
  if (cairn__core_output_upload(m->core, v, idx, rq->declared,
                                (int64_t)m->cfg.max_output_file_mib * 1024 * 1024,
                                (int64_t)m->cfg.max_pending_upload_mib * 1024 * 1024, &err) !=
      CAIRN_OK)
    return cairn__api_fail(rs, &err);
  *rs->upload = (cairn__upload){.cap = rq->declared, .vol = v, .idx = idx,
                                .seconds = (double)rq->declared / CAIRN_UPLOAD_MIN_RATE};
  memcpy(rs->upload->want, end + strlen("/files/"), 65);
}

/* PUT /v1/files/{sha256}, at its headers: the admin, and a volunteer that
 * holds the output kept on workers sha256 when the master has no copy and
 * no other holder it can offer (keep.c); else 403 or 409. At most
 * CAIRN_MAX_FILE bytes. */
void cairn__api_file_put(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  const char *sha = rq->path + strlen("/v1/files/");
  if (!cairn__sha256_valid_hex(sha))
    return cairn__api_failf(rs, CAIRN_EINVAL,
                            "the URL must end in the file's sha256 (64 lowercase hex digits)");
  if (rq->declared > CAIRN_MAX_FILE)
    return cairn__api_failf(rs, CAIRN_ETOOBIG, "the file exceeds the upload cap");
  if (!cairn__api_is_admin(m, rq->token)) {
    int64_t v = cairn__api_volunteer(m, rq, rs);
    cairn_error err = {0};
    if (!v)
      return;
    if (cairn__core_kept_upload(m->core, v, sha, &err) != CAIRN_OK)
      return cairn__api_fail(rs, &err);
  }
  *rs->upload = (cairn__upload){.cap = CAIRN_MAX_FILE};
  memcpy(rs->upload->want, sha, 65);
}

int cairn__api_admin(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  if (cairn__api_is_admin(m, rq->token))
    return 1;
  cairn__api_failf(rs, rq->token ? CAIRN_EFORBIDDEN : CAIRN_EAUTH,
                   rq->token ? "this route needs the admin token" : "missing admin token");
  return 0;
}

void cairn__api_jobs_post(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  cairn_error err = {0};
  cairn__jobspec *spec = cairn__jobspec_parse(rq->body ? rq->body : "", rq->len,
                                            CAIRN_JOBSPEC_SERVER, &err);
  if (!spec) {
    cairn__api_fail(rs, &err);
    return;
  }
  uint32_t ntasks = spec->ntasks;
  int64_t id = 0;
  if (cairn__core_submit(m->core, spec, &id, &err) != CAIRN_OK)
    cairn__api_fail(rs, &err);
  else
    cairn__api_json(rs, 201, json_pack("{s:I, s:i}", "id", (json_int_t)id, "tasks", (int)ntasks));
}

void cairn__api_healthz(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int ok = cairn__core_probe_write(m->core, NULL) == CAIRN_OK;
  rs->status = ok ? 200 : 503;
  rs->ctype = "text/plain";
  rs->body = cairn__strdup(ok ? "ok\n" : "store not writable\n");
  rs->len = rs->body ? strlen(rs->body) : 0;
}

/* Appends the held work requests' and job waits' lines (waiters.h) to buf
 * (len bytes); buf as it was when out of memory. */
static char *metrics_held(cairn_master *m, char *buf, size_t *len) {
  uint64_t held = 0, total = 0, jheld = 0, jtotal = 0, anon = 0, evicted = 0;
  cairn__conns_counts(m->conns, &anon, &evicted);
  if (m->waiters) {
    cairn__waiters_counts(m->waiters, &held, &total);
    cairn__waiters_job_counts(m->waiters, &jheld, &jtotal);
  }
  char line[2000];
  int k = snprintf(line, sizeof line, "# HELP cairn_work_held Work requests held for a task now.\n"
                   "# TYPE cairn_work_held gauge\ncairn_work_held %llu\n"
                   "# HELP cairn_work_held_total Work requests held since the start.\n"
                   "# TYPE cairn_work_held_total counter\ncairn_work_held_total %llu\n"
                   "# HELP cairn_job_waits_held Job waits (GET /v1/jobs/{id}?wait=) held now.\n"
                   "# TYPE cairn_job_waits_held gauge\ncairn_job_waits_held %llu\n"
                   "# HELP cairn_job_waits_held_total Job waits held since the start.\n"
                   "# TYPE cairn_job_waits_held_total counter\ncairn_job_waits_held_total %llu\n"
                   "# HELP cairn_slow_requests Requests running or queued on the slow lane now "
                   "(bans, deletions, large submissions).\n"
                   "# TYPE cairn_slow_requests gauge\ncairn_slow_requests %u\n"
                   "# HELP cairn_anonymous_connections Connections open now on which no "
                   "request carried a valid token.\n"
                   "# TYPE cairn_anonymous_connections gauge\ncairn_anonymous_connections %llu\n"
                   "# HELP cairn_anonymous_evicted_total Connections without a token closed "
                   "to make room for new ones, or for headers too slow under pressure.\n"
                   "# TYPE cairn_anonymous_evicted_total counter\n"
                   "cairn_anonymous_evicted_total %llu\n",
                   (unsigned long long)held, (unsigned long long)total,
                   (unsigned long long)jheld, (unsigned long long)jtotal,
                   m->slow ? cairn__slow_busy(m->slow) : 0u, (unsigned long long)anon,
                   (unsigned long long)evicted);
  char *nb = buf && k > 0 ? realloc(buf, *len + (size_t)k + 1) : NULL;
  if (!nb)
    return buf;
  memcpy(nb + *len, line, (size_t)k + 1);
  *len += (size_t)k;
  return nb;
}

void cairn__api_metrics(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  cairn__core_metrics(m->core, &buf, &len, &cap);
  size_t need = 256;
  pthread_mutex_lock(&m->stats_lock);
  for (int r = 0; r < RL_COUNT; r++)
    for (int k = 0; k < CAIRN__STATUS_SLOTS; k++)
      need += m->requests[r][k] ? 96 : 0;
  char *nb = realloc(buf, len + need);
  if (nb) {
    buf = nb;
    len += (size_t)snprintf(buf + len, need, "# HELP cairn_http_requests_total HTTP requests by "
                            "route and status.\n# TYPE cairn_http_requests_total counter\n");
    for (int r = 0; r < RL_COUNT; r++)
      for (int k = 0; k < CAIRN__STATUS_SLOTS; k++)
        if (m->requests[r][k] && len + 96 <= len + need)
          len += (size_t)snprintf(buf + len, 96,
                                  "cairn_http_requests_total{route=\"%s\",status=\"%d\"} %llu\n",
                                  cairn__route_labels[r], status_slots[k] ? status_slots[k] : 999,
                                  (unsigned long long)m->requests[r][k]);
  }
  pthread_mutex_unlock(&m->stats_lock);
  buf = metrics_held(m, buf, &len);
  buf = cairn__stats_metrics(m, buf, &len);
  buf = cairn__statsexport_metrics(m, buf, &len);
  rs->status = 200;
  rs->ctype = "text/plain; version=0.0.4";
  rs->body = buf;
  rs->len = len;
}


void cairn__api_ban(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"reason", NULL};
  int64_t id = number_after(rq->path, "/v1/volunteers/");
  if (id < 0)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%.*s\" is not a volunteer id",
                            (int)strcspn(rq->path + 15, "/"), rq->path + 15);
  json_t *o = cairn__api_body(rq, keys, 1, rs);
  if (!o)
    return;
  const char *reason = cairn__api_opt_str(o, "reason", "", rs);
  if (reason) {
    json_t *report = NULL;
    cairn_error err = {0};
    if (cairn__core_ban(m->core, id, reason, &report, &err) != CAIRN_OK)
      cairn__api_fail(rs, &err);
    else
      cairn__api_json(rs, 200, report);
  }
  json_decref(o);
}

void cairn__api_release(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = number_after(rq->path, "/v1/volunteers/");
  if (id < 0)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%.*s\" is not a volunteer id",
                            (int)strcspn(rq->path + 15, "/"), rq->path + 15);
  cairn_error err = {0};
  if (cairn__core_release(m->core, id, &err) != CAIRN_OK)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, json_pack("{s:I, s:b}", "id", (json_int_t)id, "quarantined", 0));
}

/* GET /v1/audit/index/{n} and /v1/audit/volunteers/{id}: the number after
 * prefix, then find's answer for it (audit.c). */
static void audit_get(cairn_master *m, const cairn__req *rq, const char *prefix,
                      json_t *(*find)(cairn_master *, int64_t, cairn_error *), cairn__resp *rs) {
  const char *end = NULL;
  int64_t n = cairn__api_id(rq->path + strlen(prefix), &end);
  if (n < 0)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" is not a positive integer",
                            rq->path + strlen(prefix));
  cairn_error err = {0};
  json_t *o = find(m, n, &err);
  if (!o)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, o);
}

void cairn__api_audit_index(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  audit_get(m, rq, "/v1/audit/index/", cairn__audit_index, rs);
}

void cairn__api_audit_volunteer(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  audit_get(m, rq, "/v1/audit/volunteers/", cairn__audit_volunteer, rs);
}

int64_t cairn__api_job_id(const cairn__req *rq, cairn__resp *rs) {
  const char *s = rq->path + strlen("/v1/jobs/"), *end = NULL;
  int64_t id = cairn__api_id(s, &end);
  if (id < 0)
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%.*s\" is not a job id", (int)strcspn(s, "/"), s);
  return id;
}

/* The answer of a change to a job's life (life.c): its outcome out, or err. */
static void life_answer(cairn_status st, json_t *out, const cairn_error *err, cairn__resp *rs) {
  if (st != CAIRN_OK)
    return cairn__api_fail(rs, err);
  cairn__api_json(rs, 200, out);
}

/* DELETE /v1/jobs/{id}[?purge=1]: in steps through the journal (life.c). */
void cairn__api_job_delete(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = cairn__api_job_id(rq, rs);
  if (id < 0)
    return;
  const char *p = rq->purge;
  int purge = p && (!strcmp(p, "1") || !strcmp(p, "true"));
  if (p && !purge && strcmp(p, "0") && strcmp(p, "false"))
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"purge\" must be 1, 0, true or false");
  json_t *out = NULL;
  cairn_error err = {0};
  cairn_status st = cairn__core_delete(m->core, id, purge, &out, &err);
  life_answer(st, out, &err, rs);
}

/* POST /v1/jobs/{id}/cancel (an empty body or {}). */
void cairn__api_job_cancel(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const no_keys[] = {NULL};
  int64_t id = cairn__api_job_id(rq, rs);
  json_t *o = id < 0 ? NULL : cairn__api_body(rq, no_keys, 1, rs);
  if (!o)
    return;
  json_t *out = NULL;
  cairn_error err = {0};
  cairn_status st = cairn__core_cancel(m->core, id, &out, &err);
  json_decref(o);
  life_answer(st, out, &err, rs);
}

/* POST /v1/jobs/{id}/priority {"priority": N}. */
void cairn__api_job_priority(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const keys[] = {"priority", NULL};
  int64_t id = cairn__api_job_id(rq, rs);
  json_t *o = id < 0 ? NULL : cairn__api_body(rq, keys, 0, rs);
  if (!o)
    return;
  json_t *v = json_object_get(o, "priority");
  json_int_t n = json_integer_value(v);
  int ok = json_is_integer(v) && n >= -CAIRN_MAX_PRIORITY && n <= CAIRN_MAX_PRIORITY;
  json_decref(o);
  if (!ok)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"priority\" must be an integer from %d to %d",
                            -CAIRN_MAX_PRIORITY, CAIRN_MAX_PRIORITY);
  json_t *out = NULL;
  cairn_error err = {0};
  cairn_status st = cairn__core_priority(m->core, id, (int64_t)n, &out, &err);
  life_answer(st, out, &err, rs);
}

/* Any method a path has no route for: 405. */
void cairn__api_not_allowed(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  char text[512];
  snprintf(text, sizeof text, "method %.32s is not allowed on %.400s", rq->method, rq->path);
  cairn__api_json(
    rs, 405, json_pack("{s:{s:s, s:s}}", "error", "code", "method_not_allowed", "message", text));
}

/* Any path no route has: 404. */
void cairn__api_no_route(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  cairn__api_failf(rs, CAIRN_ENOTFOUND, "no route %s %s", rq->method, rq->path);
}

/* GET /v1/jobs/{id}'s "wait": the milliseconds, 0 to CAIRN_MAX_WAIT_MS
 * (decimal digits only); -1 with the 400 in rs otherwise. */
static int job_wait_ms(const char *s, cairn__resp *rs) {
  long n = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9' && n <= CAIRN_MAX_WAIT_MS; p++)
    n = n * 10 + (*p - '0');
  if (p == s || *p || n > CAIRN_MAX_WAIT_MS) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"wait\" must be an integer from 0 to %d (milliseconds)",
                     CAIRN_MAX_WAIT_MS);
    return -1;
  }
  return (int)n;
}

/* GET /v1/jobs/{id}[?wait=MS] (admin): the job. With a wait and a job
 * still running, asks http.c to hold the request (rs->hold, waiters.h)
 * and renders nothing: the request comes back here when the job changed
 * state or the wait passed (then with rs->hold NULL). The job's
 * generation is read before its state: a change in between is not lost.
 * O(1) under c->lock for the look; the answer as without a wait. */
void cairn__api_job_get(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = cairn__api_job_id(rq, rs);
  if (id < 0)
    return;
  int wait = rq->arg_wait ? job_wait_ms(rq->arg_wait, rs) : 0;
  if (wait < 0)
    return;
  if (wait > 0 && rs->hold) {
    uint64_t gen = cairn__waiters_job_gen(m->waiters, id);
    if (cairn__core_job_state(m->core, id) == JS_RUNNING) {
      *rs->hold = (cairn__hold){.ms = wait, .gen = gen, .job = id};
      return;
    }
  }
  json_t *o = cairn__core_job_json(m->core, id, 1);
  if (!o)
    return cairn__api_failf(rs, CAIRN_ENOTFOUND, "no job %s", rq->path + strlen("/v1/jobs/"));
  cairn__api_json(rs, 200, o);
}

/* Query argument name (text p): digits only, from min to max, into *out;
 * 0, or -1 with the 400 naming it in rs. */
static int query_number(const char *name, const char *p, int64_t min, int64_t max, int64_t *out,
                        cairn__resp *rs) {
  char *end = NULL;
  long long v = *p >= '0' && *p <= '9' && strlen(p) <= 18 ? strtoll(p, &end, 10) : -1;
  if (v < min || v > max || !end || *end) {
    cairn__api_failf(rs, CAIRN_EINVAL, "\"%s\" must be an integer from %lld to %lld", name,
                     (long long)min, (long long)max);
    return -1;
  }
  *out = v;
  return 0;
}

/* GET /v1/jobs/{id}/tasks[?after=KEY][&limit=N]: a page of the job's tasks
 * (cairn__core_tasks_json; its bound). */
void cairn__api_job_tasks(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = cairn__api_job_id(rq, rs);
  if (id < 0)
    return;
  int64_t after = 0, limit = CAIRN_TASKS_PAGE;
  if ((rq->arg_after && query_number("after", rq->arg_after, 1, INT64_MAX / 2, &after, rs)) ||
      (rq->arg_limit && query_number("limit", rq->arg_limit, 1, CAIRN_TASKS_PAGE_MAX, &limit, rs)))
    return;
  cairn_error err = {0};
  json_t *o = cairn__core_tasks_json(m->core, id, after, (size_t)limit, &err);
  if (!o)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, o);
}

/* GET /v1/jobs/{id}/tasks/{key}: one task, its limits and its attempts. */
void cairn__api_job_task(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  int64_t id = cairn__api_job_id(rq, rs);
  if (id < 0)
    return;
  const char *ks = strrchr(rq->path, '/') + 1, *end = NULL; /* the last segment: {key} */
  int64_t key = cairn__api_id(ks, &end);
  if (key < 0 || *end)
    return cairn__api_failf(rs, CAIRN_EINVAL, "\"%.64s\" is not a task key", ks);
  cairn_error err = {0};
  json_t *o = cairn__core_task_json(m->core, id, key, &err);
  if (!o)
    return cairn__api_fail(rs, &err);
  cairn__api_json(rs, 200, o);
}

/* GET /v1/demand (admin): the core's counts and how volunteers register. */
void cairn__api_demand(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  static const char *const reg[] = {[CAIRN__REG_OPEN] = "open", [CAIRN__REG_INVITE] = "invite",
                                    [CAIRN__REG_CLOSED] = "closed"};
  json_t *o = cairn__core_demand_json(m->core);
  if (o)
    json_object_set_new(o, "registration", json_string(reg[m->registration]));
  cairn__api_json(rs, o ? 200 : 503, o);
}

/* GET /v1/volunteers (admin): every volunteer, as the core renders them. */
void cairn__api_volunteers_list(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  rs->ctype = "application/json";
  rs->body = cairn__core_volunteers_text(m->core, &rs->len);
  rs->status = rs->body ? 200 : 503;
}

/* GET /v1/jobs (admin): every job. */
void cairn__api_jobs_list(cairn_master *m, const cairn__req *rq, cairn__resp *rs) {
  cairn__api_json(rs, 200, cairn__core_jobs_json(m->core));
}
