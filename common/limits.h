/* limits.h — limits shared by master, worker and CLI: job files, outputs,
 * uploads, work offers. The worker's report to its master (its caps, the
 * reasons of a failed source, the features) is common/protocol.h, included
 * here for the files that need both. */
#ifndef CAIRN_LIMITS_H
#define CAIRN_LIMITS_H

#include "common/outputs.h"
#include "common/protocol.h"

#define CAIRN_API_PREFIX "/v1"

/* Request bodies (JSON) accepted by the master: a job file (admin only). */
#define CAIRN_MAX_BODY            (64u * 1024u * 1024u)
/* A task's standard output (its result); larger output is refused (413). */
#define CAIRN_MAX_OUTPUT          (1u * 1024u * 1024u)

/* ---- the master's cap on each route's request body (413 above) ---- */
/* POST /v1/volunteers: a name, a cluster label, a peer_url and the apps at
 * their caps, plus 1 KiB of keys and slack (about 18 KiB). */
#define CAIRN_MAX_BODY_REGISTER \
  (CAIRN_MAX_APPS * (CAIRN_MAX_NAME + 3u) + 2u * (CAIRN_MAX_NAME + 16u) + CAIRN_MAX_PEER_URL + 1024u)
/* POST /v1/work and POST /v1/heartbeat: the largest report within the caps
 * of common/protocol.h (compact JSON, strings counted at their length, as a
 * Cairn worker writes them) with the apps of a work body, plus 4 KiB. Per
 * entry: the value, quotes and separators, its keys, numbers of at most
 * CAIRN_JSON_NUM_LEN characters, "resources" with its three numbers,
 * "progress" with a key and a number an entry (about 235 KiB in all). */
#define CAIRN_JSON_NUM_LEN        20u
#define CAIRN_MAX_BODY_REPORT                                                     \
  (CAIRN_MAX_HAVE * (CAIRN_SHA256_HEX + 3u) +                                     \
   CAIRN_MAX_SERVED * (CAIRN_SHA256_HEX + 4u + CAIRN_JSON_NUM_LEN) +              \
   2u * CAIRN_MAX_RUNNING * (CAIRN_JSON_NUM_LEN + 1u) +                           \
   CAIRN_MAX_PROGRESS * (2u * CAIRN_JSON_NUM_LEN + 4u) +                          \
   CAIRN_MAX_FETCHED * (CAIRN_SHA256_HEX + CAIRN_MAX_SOURCE_LEN + 2u * CAIRN_JSON_NUM_LEN + 64u) + \
   CAIRN_MAX_FAILED * (CAIRN_SHA256_HEX + CAIRN_MAX_SOURCE_LEN + 64u) +           \
   CAIRN_MAX_PEER_URL + 16u + 3u * (CAIRN_JSON_NUM_LEN + 16u) + 16u +            \
   CAIRN_MAX_APPS * (CAIRN_MAX_NAME + 3u) + 4096u)
/* PUT /v1/results/{n}: the output and the stderr tail at their caps either
 * as base64 or as a JSON string (a Cairn worker sends valid UTF-8 as is,
 * and JSON escapes a control character in 6 bytes), the output files at
 * their cap (names escaped the same way, a digest, a size and keys), the
 * kept files' chunk digests at their cap (67 bytes each, and a key a
 * file), plus 4 KiB for the other keys (about 9 MiB). */
#define CAIRN_MAX_BODY_RESULT                                                     \
  (6u * CAIRN_MAX_OUTPUT + 6u * CAIRN_STDERR_TAIL +                               \
   CAIRN_MAX_OUTPUT_FILES * (6u * CAIRN_MAX_OUTPUT_NAME + CAIRN_SHA256_HEX + 80u) + \
   CAIRN_MAX_RESULT_CHUNKS * 67u + 4096u)
/* POST /v1/results (feature "batch"): at most CAIRN_MAX_BATCH results
 * (common/protocol.h) and this many bytes in all, twice one result's cap
 * (about 16 MiB); a worker sends a larger result alone by PUT. */
#define CAIRN_MAX_BODY_RESULTS    (2u * CAIRN_MAX_BODY_RESULT)
/* Every other route (a ban's reason, or a body that is not read). */
#define CAIRN_MAX_BODY_SMALL      4096u
/* Bytes of a chunked body over its cap that are read and thrown away so
 * that the client gets its 413 (more: the 413 is sent and the connection
 * closed while the client still sends). */
#define CAIRN_MAX_BODY_DISCARD    (1u * 1024u * 1024u)

/* ---- defaults of the master's connection limits (cairn_master_config) ---- */
#define CAIRN_DEFAULT_BODY_MEMORY      (256u * 1024u * 1024u) /* bodies in flight */
#define CAIRN_DEFAULT_PER_IP_CONNS     64u
/* Registrations and failed authentications one address may make a minute. */
#define CAIRN_DEFAULT_ANON_PER_MINUTE  60
/* Client addresses the limiter tracks at once (a power of two). */
#define CAIRN_RATELIMIT_SLOTS          16384u
/* Requests one registered volunteer may make a minute, all volunteer routes
 * together (work, heartbeat, results, file and output downloads), after a
 * burst of ten seconds' worth. A worker finishing r tasks a second sends
 * r × (1 + d) requests a second, d the downloads from the master per task
 * (inputs not yet cached, parents' outputs; the result asks for the next
 * task), plus a heartbeat every few seconds: 1,024 slots (the most a
 * worker runs) of tasks of two seconds or more with a download each stay
 * within the 2,000 a second, as do tasks of a second without one. */
#define CAIRN_DEFAULT_VOLUNTEER_PER_MINUTE 120000
/* Volunteers the limiter tracks at once (a power of two). */
#define CAIRN_VOLUNTEER_RATE_SLOTS     16384u
/* Invitations the master keeps at once (used up and expired ones count
 * until revoked); uses of one, its lifetime, its note. */
#define CAIRN_MAX_INVITATIONS          1024u
#define CAIRN_MAX_INVITATION_USES      1000000
#define CAIRN_MAX_INVITATION_SECONDS   (10 * 366 * 86400)
#define CAIRN_DEFAULT_INVITATION_SECONDS (7 * 86400)
#define CAIRN_MAX_INVITATION_NOTE      256u
/* An invitation code: 64 hex characters (32 random bytes); the first
 * CAIRN_INVITATION_PREFIX of them are shown in lists. */
#define CAIRN_INVITATION_LEN           64u
#define CAIRN_INVITATION_PREFIX        8u
#define CAIRN_DEFAULT_IDLE_SECONDS     15u
#define CAIRN_DEFAULT_REQUEST_SECONDS  30u
/* Connections the master serves at once (all addresses). */
#define CAIRN_MAX_CONNECTIONS          4096u
/* Of those, connections without a token (accepted, no request on them
 * authenticated by the admin's or a volunteer's token yet), all addresses
 * together (cfg.anonymous_connections): 3/4, so that the last 1,024 are
 * for volunteers and the operator. One more accepted closes the oldest
 * anonymous one between requests (server/conn/conns.h). */
#define CAIRN_DEFAULT_ANON_CONNS       (CAIRN_MAX_CONNECTIONS / 4u * 3u)
/* While more than half of those are open, an anonymous connection whose
 * request headers are not in after this long (seconds) is closed. */
#define CAIRN_ANON_HEADER_SECONDS      5.0
/* An output file upload (PUT /v1/results/{n}/files/{sha}) may take its
 * length at this rate (bytes per second) beyond the request deadline. */
#define CAIRN_UPLOAD_MIN_RATE     (64.0 * 1024.0)
/* An uploaded input file. */
#define CAIRN_MAX_FILE            (4ull * 1024u * 1024u * 1024u)
/* Tasks in one job. */
#define CAIRN_MAX_TASKS           (2000000u)
/* Length of a task id, job name, app name, volunteer name or cluster label. */
#define CAIRN_MAX_NAME            256u
/* Arguments of one task, inputs of one task, parents of one task. */
#define CAIRN_MAX_ARGS            256u
#define CAIRN_MAX_ARG_LEN         4096u
#define CAIRN_MAX_PARENTS         4096u
/* Sources named for one input of a work offer (peers, then the master). */
#define CAIRN_MAX_SOURCES         64u

#define CAIRN_DEFAULT_LEASE_SECONDS  300
#define CAIRN_DEFAULT_MAX_ATTEMPTS   5
#define CAIRN_MAX_LEASE_SECONDS      (30 * 24 * 3600)
/* A job's priority (job file "priority", cairn priority): within ±this. */
#define CAIRN_MAX_PRIORITY           1000000000
#define CAIRN_MAX_ATTEMPTS_LIMIT     1000
#define CAIRN_MAX_REPLICATION        16

/* Hex SHA-256 digest length (without NUL). */
#define CAIRN_SHA256_HEX          64

#endif
