/* protocol.h — the report a worker sends its master (docs/protocol.md,
 * "Reports and features"): the optional fields of a POST /v1/work or POST
 * /v1/heartbeat body, their caps, the features a master advertises, and the
 * report as a plain struct with the master's parser and the worker's
 * serializer. This is the one home of these constants; both sides use it.
 *
 * Each optional field is a feature. A master lists the fields it takes in
 * "features" in its registration and heartbeat answers; a worker sends only
 * those. A master without the list takes none of them: the earliest masters
 * took an empty heartbeat body and a work body with "apps" alone.
 *
 * The functions are pure (no I/O, no globals) and bounded: a report holds at
 * most the caps below, in fixed arrays. */
#ifndef CAIRN_PROTOCOL_H
#define CAIRN_PROTOCOL_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "common/error.h"
#include "common/resources.h"

/* ---- caps of one report ---- */
#define CAIRN_MAX_HAVE            256u  /* "have": files held */
#define CAIRN_MAX_SERVED          256u  /* "served": files served to peers */
#define CAIRN_MAX_RUNNING         1024u /* "running": leases the worker runs */
#define CAIRN_MAX_FETCHED         64u   /* "fetched": measured downloads */
#define CAIRN_MAX_FAILED          64u   /* "failed": peer sources that failed */
/* Length of the source a "fetched" or "failed" entry names. */
#define CAIRN_MAX_SOURCE_LEN      511u
/* Length of "peer_url" (in a report or a registration). */
#define CAIRN_MAX_PEER_URL        256u
/* Apps a volunteer names (registration, work body), and its task slots. */
#define CAIRN_MAX_APPS            64u
#define CAIRN_MAX_SLOTS           4096u
/* Numbers in a report: "bytes" of one download or served file at most
 * 2^50 (1 PiB), "ms" of one download from 1 to a week. */
#define CAIRN_MAX_REPORT_BYTES    (1ll << 50)
#define CAIRN_MAX_REPORT_MS       (7ll * 24 * 3600 * 1000)


/* Why a peer source failed ("failed" entries): CAIRN_FAIL_* is the index of
 * its name in CAIRN_FAIL_REASON_NAMES (the names on the wire). */
enum {
  CAIRN_FAIL_UNREACHABLE, /* no connection, or the transfer broke */
  CAIRN_FAIL_STALLED,     /* nothing arrived for the stall timeout */
  CAIRN_FAIL_STATUS,      /* an HTTP status other than 200 */
  CAIRN_FAIL_SIZE,        /* the wrong number of bytes */
  CAIRN_FAIL_DIGEST,      /* bytes whose SHA-256 is not the file's */
  CAIRN_FAIL_REASONS
};
#define CAIRN_FAIL_REASON_NAMES {"unreachable", "stalled", "status", "size", "digest"}

/* ---- features ---- */
/* The optional fields, as bits of a feature set: bit i is the field named
 * CAIRN_FEATURE_NAMES[i] (the names on the wire, in a "features" list).
 * Bits 0 to 5 and "resources" (7) are the report's fields; "next",
 * "reason" and "outputs" are the result body's (PUT /v1/results/{n}: ask
 * for the next task in the same answer; why the run failed,
 * common/taskrun.h; its "stderr" tail and output files). */
enum {
  CAIRN_FEAT_HAVE = 1u << 0,
  CAIRN_FEAT_SERVED = 1u << 1,
  CAIRN_FEAT_PEER_URL = 1u << 2,
  CAIRN_FEAT_RUNNING = 1u << 3,
  CAIRN_FEAT_FETCHED = 1u << 4,
  CAIRN_FEAT_FAILED = 1u << 5,
  CAIRN_FEAT_NEXT = 1u << 6,
  CAIRN_FEAT_RESOURCES = 1u << 7, /* "resources": what the worker offers (resources.h) */
  CAIRN_FEAT_REASON = 1u << 8,
  CAIRN_FEAT_OUTPUTS = 1u << 9, /* a result's "stderr" and "outputs" (output files) */
  CAIRN_FEAT_SUSPENDED = 1u << 10, /* heartbeat: the running leases the worker keeps stopped */
  CAIRN_FEAT_WAIT = 1u << 11, /* work body: hold the request up to "wait" ms for a task */
  CAIRN_FEAT_BATCH = 1u << 12, /* "max" in a work body, POST /v1/results (several at once) */
  /* "cpu": a result's "cpu_seconds" (the CPU time the worker measured, its
   * claim for credit) and a registration's "team" */
  CAIRN_FEAT_CPU = 1u << 13,
  /* "keep": a work offer's "keep": "workers" (the worker keeps the task's
   * output files in its verified cache and serves them to peers instead of
   * uploading them) and a result that names such files without uploading
   * them (docs/protocol.md, "Outputs stay on workers") */
  CAIRN_FEAT_KEEP = 1u << 14,
  /* "chunks": the master serves each file's chunk digests (GET
   * /v1/files/{sha256}/chunks) and may name a worker still receiving a file
   * as its source; a worker's report says "chunks": true when its file
   * server relays a file while receiving it (docs/protocol.md, "Cut-through
   * relays") */
  CAIRN_FEAT_CHUNKS = 1u << 15,
  /* "peer_max": a worker's report says how many files its file server sends
   * at once (--peer-max; more get 503), and the master names it as a source
   * of at most that many copies at once (docs/protocol.md, "Reports and
   * features") */
  CAIRN_FEAT_PEER_MAX = 1u << 16,
  /* "kept_chunks": a result's entry of an output kept on the worker may
   * carry "chunks", the file's chunk digests (cairn__chunks_parse); the
   * master serves the accepted result's list (GET /v1/files/{sha256}/chunks)
   * so that copies between peers are checked chunk by chunk, resume and
   * cut through (docs/protocol.md, "Cut-through relays") */
  CAIRN_FEAT_KEPT_CHUNKS = 1u << 17,
  /* "progress" (heartbeat only): the fraction done of running tasks, as
   * their apps last reported it (docs/worker.md, "Checkpoints and
   * progress"): {"INDEX": FRACTION, ...}, FRACTION from 0 to 1 */
  CAIRN_FEAT_PROGRESS = 1u << 18,
  /* "usage": a result's "usage", what the worker measured of the run (its
   * peak resident memory, the peak disk of its task directory, its wall
   * time: common/autosize.h, cairn__usage_parse), for the tasks that size
   * themselves (docs/jobs.md, "Automatic sizes") */
  CAIRN_FEAT_USAGE = 1u << 19,
  /* "cpid" (heartbeat only): the cross-project id of the volunteer's
   * account (docs/project.md, "Cross-project ids"): {} asks for it, {"id":
   * 32 hex digits, "time": Unix seconds} offers the oldest one the worker
   * knows of the same e-mail; the answer's "cpid" is the account's
   * {"email_hash", "id", "time"} (BOINC's client and scheduler, [BOINC-stats]) */
  CAIRN_FEAT_CPID = 1u << 20,
};
#define CAIRN_REPORT_FIELD_COUNT 12
#define CAIRN_FEATURE_COUNT 21
#define CAIRN_FEATURE_NAMES                                                                  \
  {"have", "served", "peer_url", "running", "fetched", "failed", "next", "resources", "reason", \
   "outputs", "suspended", "wait", "batch", "cpu", "keep", "chunks", "peer_max", "kept_chunks", \
   "progress", "usage", "cpid"}
/* "peer_max": 1 to CAIRN_MAX_PEER_MAX files sent at once; a worker that
 * does not say it (an older one) is taken to send CAIRN_DEFAULT_PEER_MAX,
 * the worker's default --peer-max. */
#define CAIRN_MAX_PEER_MAX 1024u
#define CAIRN_DEFAULT_PEER_MAX 4u
/* The key of the list in a registration or heartbeat answer. */
#define CAIRN_FEATURES_KEY "features"
/* Every field this protocol defines: what a current master takes. */
#define CAIRN_FEATURES_ALL ((1u << CAIRN_FEATURE_COUNT) - 1)
/* What a master without a feature list takes. */
#define CAIRN_FEATURES_BASELINE 0u
/* The result body's fields. */
#define CAIRN_RESULT_FIELDS                                                              \
  (CAIRN_FEAT_NEXT | CAIRN_FEAT_REASON | CAIRN_FEAT_OUTPUTS | CAIRN_FEAT_CPU | CAIRN_FEAT_KEEP | \
   CAIRN_FEAT_KEPT_CHUNKS | CAIRN_FEAT_USAGE)
/* "wait" (a POST /v1/work body's own field, like "apps", not part of the
 * report): the milliseconds, 0 to CAIRN_MAX_WAIT_MS, the master may hold
 * the request when it has no task for the volunteer (docs/protocol.md). */
#define CAIRN_MAX_WAIT_MS 60000
/* The report's fields (every feature but the result body's, "wait" and
 * "batch", which name a work body's own fields and routes), and those each
 * body may carry ("served" and "running" are heartbeat's). */
#define CAIRN_REPORT_FIELDS \
  (CAIRN_FEATURES_ALL & ~(unsigned)(CAIRN_RESULT_FIELDS | CAIRN_FEAT_WAIT | CAIRN_FEAT_BATCH))
#define CAIRN_WORK_FIELDS \
  (CAIRN_FEAT_HAVE | CAIRN_FEAT_PEER_URL | CAIRN_FEAT_FETCHED | CAIRN_FEAT_FAILED | \
   CAIRN_FEAT_RESOURCES | CAIRN_FEAT_CHUNKS | CAIRN_FEAT_PEER_MAX)
/* "progress" (heartbeat only): at most CAIRN_MAX_RUNNING entries, as many
 * as "running" may name. */
#define CAIRN_MAX_PROGRESS        CAIRN_MAX_RUNNING
/* "suspended" (heartbeat only): indices, like "running", of the leases whose
 * apps the worker keeps stopped (docs/worker.md, "Volunteers in control");
 * the master takes it and extends those leases as any other. */
#define CAIRN_HEARTBEAT_FIELDS CAIRN_REPORT_FIELDS

/* GET /v1/jobs/{id}/tasks pages (docs/protocol.md): tasks a page holds
 * when "limit" is absent, and the most it may ask for. */
#define CAIRN_TASKS_PAGE          1000
#define CAIRN_TASKS_PAGE_MAX      10000
/* ---- cut-through relays (feature "chunks", docs/protocol.md) ---- */
/* A file's chunks: CAIRN_CHUNK_SIZE bytes each, the last one shorter (a
 * file of 0 bytes has none); at most CAIRN_MAX_CHUNKS of them (a file of
 * CAIRN_MAX_FILE bytes). GET /v1/files/{sha256}/chunks answers
 * {"sha256", "size", "chunk_size", "chunks": [SHA-256 of each chunk]}. */
#define CAIRN_CHUNK_SIZE          (1u << 20)
#define CAIRN_MAX_CHUNKS          4096u
/* The query parameter ("relay=1") the master adds to a peer source still
 * receiving the file; its receiver then waits up to CAIRN_RELAY_STALL_MS
 * for bytes (the relay's own download may pause) instead of its stall
 * timeout, when that is shorter. */
#define CAIRN_RELAY_PARAM         "relay"
#define CAIRN_RELAY_STALL_MS      30000
/* The largest answer of that route: 67 bytes a digest, plus the rest. */
#define CAIRN_MAX_CHUNKS_BODY     (CAIRN_MAX_CHUNKS * 67u + 512u)
/* Kept outputs' digests one result may carry ("kept_chunks"), all its
 * files together: a worker lists them for its first files up to this,
 * the others are checked whole. */
#define CAIRN_MAX_RESULT_CHUNKS   (4u * CAIRN_MAX_CHUNKS)
/* Reads "chunks" (feature "kept_chunks") of a file of size bytes: an array
 * of exactly ceil(size / CAIRN_CHUNK_SIZE) strings of 64 lowercase hex, at
 * most CAIRN_MAX_CHUNKS, into *out (malloc'd, 32 bytes a chunk, NULL for
 * none; the caller frees) and *n. Anything else is CAIRN_EINVAL (too many:
 * CAIRN_ETOOBIG) with err naming where (e.g. "outputs[2].chunks[7]"), and
 * *out is NULL. */
cairn_status cairn__chunks_parse(const json_t *arr, long long size, const char *where,
                                unsigned char **out, size_t *n, cairn_error *err);
/* The chunk digests of the file at path, of size bytes, as a new JSON array
 * of hex strings (the form cairn__chunks_parse reads); NULL when it cannot
 * be read, its size differs, it has more than CAIRN_MAX_CHUNKS chunks or
 * out of memory. Reads the file once. */
json_t *cairn__chunks_of_file(const char *path, long long size);

/* ---- resumed copies (docs/protocol.md, "Resumed copies") ---- */
/* A copy broken off after checked chunks goes on at the next source from
 * its last checked chunk: the worker sends "Range: bytes=N-" (N a multiple
 * of CAIRN_CHUNK_SIZE), the master's GET /v1/files/{sha256} and a worker's
 * file server answer 206 with "Content-Range: bytes N-(SIZE-1)/SIZE" and
 * the bytes from N. The first byte such a Range header asks for: N when
 * header is exactly "bytes=N-" with N below size, else -1 (absent, another
 * form, several ranges, N at or past size): the whole file is then sent
 * with 200, as RFC 9110 lets a server ignore a Range. */
long long cairn__range_start(const char *header, unsigned long long size);

/* ---- batches (feature "batch", docs/protocol.md "Batches") ---- */
/* Tasks one POST /v1/work may take ("max": 1 to this), results one POST
 * /v1/results may carry, and tasks its "next" may ask for. */
#define CAIRN_MAX_BATCH           64u
/* Leases a volunteer may hold beyond what its offer leaves free: tasks a
 * batch takes ahead of a free slot (a worker's prefetch) stay under this. */
#define CAIRN_MAX_PREFETCH        16u

/* The feature set a "features" list names (names this side does not know
 * are ignored: a newer master may take more); CAIRN_FEATURES_BASELINE when
 * list is NULL (a master without the list) or not an array. */
unsigned cairn__features_parse(const json_t *list);
/* A new JSON array naming the features of set, in bit order; NULL when out
 * of memory. */
json_t *cairn__features_json(unsigned set);

/* ---- credit (feature "cpu") ---- */
/* The key of a result's claim, and its cap: one task's CPU seconds, at
 * most a week. */
#define CAIRN_CPU_KEY "cpu_seconds"
#define CAIRN_MAX_CPU_SECONDS (7.0 * 24 * 3600)
/* A registration's team: 1 to CAIRN_MAX_TEAM printable ASCII bytes (0x20
 * to 0x7e, no quotes or backslashes). */
#define CAIRN_TEAM_KEY "team"
#define CAIRN_MAX_TEAM 64u

/* Reads a result body's "cpu_seconds" (the one reader of it, for every
 * path that takes result bodies): absent, *has = 0; else a finite number
 * from 0 to CAIRN_MAX_CPU_SECONDS in *cpu and *has = 1. Anything else is
 * CAIRN_EINVAL with err naming the field. */
cairn_status cairn__result_cpu_parse(const json_t *body, double *cpu, int *has,
                                    cairn_error *err);
/* 1 when team is a valid team name (see CAIRN_MAX_TEAM). */
int cairn__team_valid(const char *team);

/* ---- the report ---- */
/* Strings are borrowed, never owned: after cairn__report_parse() they point
 * into the parsed body (valid while it lives, unchanged); a worker points
 * them at its own buffers while it serializes. */
typedef struct cairn__report_served {
  const char *sha256;
  uint64_t bytes;
} cairn__report_served;

typedef struct cairn__report_fetched {
  const char *sha256, *source; /* source as the work answer named it */
  int64_t bytes, ms;
} cairn__report_fetched;

typedef struct cairn__report_failed {
  const char *sha256, *source; /* source: a peer's http(s) URL */
  int reason;                  /* CAIRN_FAIL_* */
} cairn__report_failed;

typedef struct cairn__report_progress {
  int64_t index;   /* an allocation index (> 0) */
  double fraction; /* 0 to 1 */
} cairn__report_progress;

typedef struct cairn__report {
  unsigned fields; /* the fields present (CAIRN_FEAT_*); "running" present and
                    * empty differs from absent (then every lease is extended) */
  const char *have[CAIRN_MAX_HAVE];
  size_t nhave;
  cairn__report_served served[CAIRN_MAX_SERVED];
  size_t nserved;
  cairn__report_fetched fetched[CAIRN_MAX_FETCHED];
  size_t nfetched;
  cairn__report_failed failed[CAIRN_MAX_FAILED];
  size_t nfailed;
  int64_t running[CAIRN_MAX_RUNNING];
  size_t nrunning;
  int64_t suspended[CAIRN_MAX_RUNNING];
  size_t nsuspended;
  cairn__report_progress progress[CAIRN_MAX_PROGRESS]; /* "progress", in body order */
  size_t nprogress;
  const char *peer_url; /* present: "" or http(s)://HOST:PORT; absent: NULL */
  int chunks;           /* "chunks": true (its file server relays while receiving) */
  unsigned peer_max;    /* "peer_max": files its file server sends at once */
  cairn__resources resources; /* "resources": the worker's offer, when present */
  char cpid[33];        /* "cpid": the id offered (32 lowercase hex digits; "": asked only) */
  int64_t cpid_time;    /* and its time (Unix seconds, 0 to CAIRN_MAX_CPID_TIME) */
} cairn__report;
#define CAIRN_MAX_CPID_TIME 253402300799LL /* 9999-12-31T23:59:59Z */

/* Numbers are range-checked: "bytes" (of "fetched" and "served") from 0 to
 * CAIRN_MAX_REPORT_BYTES, "ms" from 1 to CAIRN_MAX_REPORT_MS, "running"
 * and "suspended" indices above 0, "progress" keys allocation indices
 * (decimal, no sign or leading zero, above 0) and values numbers from 0 to
 * 1, "resources" as cairn__resources_parse() reads them
 * (missing keys: one core, no memory, no disk); out of range is
 * CAIRN_EINVAL naming the entry.
 * Reads body (a JSON object, not modified) into *r: the fields of takes
 * (CAIRN_WORK_FIELDS or CAIRN_HEARTBEAT_FIELDS) when present; the keys of
 * also[] (NULL-terminated, may be NULL) are the caller's and skipped. Any
 * other key, a field over its cap or a malformed entry: CAIRN_EINVAL with
 * err naming it (e.g. `have[3] is not a sha256 digest`, `unknown field
 * "x"`), and *r is not to be used. */
cairn_status cairn__report_parse(json_t *body, unsigned takes, const char *const *also,
                                cairn__report *r, cairn_error *err);

/* Checks a "peer_url" value: a string of at most CAIRN_MAX_PEER_URL bytes,
 * "" or http://HOST:PORT or https://HOST:PORT: no path (no slash after the
 * scheme), query, fragment, credentials, spaces, quotes or control
 * characters. Sets *url (borrowed from v) and returns CAIRN_OK, else
 * CAIRN_EINVAL with err naming the field. */
cairn_status cairn__report_peer_url(const json_t *v, const char **url, cairn_error *err);

/* r as a new JSON object holding exactly the fields of r->fields; NULL when
 * out of memory or an entry cannot be written (a reason out of range, a
 * string that is not UTF-8). */
json_t *cairn__report_json(const cairn__report *r);

#endif
