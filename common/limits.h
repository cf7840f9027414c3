/* limits.h — limits shared by master, worker and CLI: job files, outputs,
 * uploads, work offers. The worker's report to its master (its caps, the
 * reasons of a failed source, the features) is common/protocol.h, included
 * here for the files that need both. */
#ifndef CAIRN_LIMITS_H
#define CAIRN_LIMITS_H

#include "common/protocol.h"

#define CAIRN_API_PREFIX "/v1"

/* Request bodies (JSON) accepted by the master; a job file counts here. */
#define CAIRN_MAX_BODY            (64u * 1024u * 1024u)
/* A task's standard output (its result); larger output is refused (413). */
#define CAIRN_MAX_OUTPUT          (1u * 1024u * 1024u)
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
#define CAIRN_MAX_ATTEMPTS_LIMIT     1000
#define CAIRN_MAX_REPLICATION        16

/* Hex SHA-256 digest length (without NUL). */
#define CAIRN_SHA256_HEX          64

#endif
