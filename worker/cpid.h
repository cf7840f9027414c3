/* cpid.h — the cross-project ids a worker's masters tell it (docs/project.md,
 * "Cross-project ids"; docs/worker.md, "Several projects"): for each
 * project, the MD5 of its account's e-mail, the account's cross-project id
 * and when that id was made, as its heartbeat answers give them ("cpid",
 * common/protocol.h); and what each master is offered: of the projects of
 * the same e-mail, the oldest id (by time, then the smaller id), as BOINC's
 * client offers each scheduler the oldest cross-project id of its projects
 * of one e-mail [BOINC-stats]. A master takes an offer older than its own,
 * so the masters a person's worker reaches end up with one id, and their
 * statistics exports with one cpid. In memory only: learned again from the
 * first heartbeats after a start. Private to worker/.
 *
 * Thread-safe: a leaf mutex, O(projects) a call (at most CAIRN__CPID_MAX). */
#ifndef CAIRN_WORKER_CPID_H
#define CAIRN_WORKER_CPID_H

#include <jansson.h>
#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#define CAIRN__CPID_MAX 16          /* projects */
#define CAIRN__CPID_ASK_MS 600000   /* a master is asked again this often (its id may
                                       have been changed by the person's other hosts) */

typedef struct cairn__cpid_entry {
  long long heard_ms;   /* when its master last answered (0: not since the start) */
  int known;            /* its master said (its volunteer is attached to an account) */
  char email_hash[33];  /* 32 lowercase hex digits */
  char id[33];
  int64_t time;         /* Unix seconds */
} cairn__cpid_entry;

typedef struct cairn__cpids {
  pthread_mutex_t mu;
  size_t n;
  cairn__cpid_entry e[CAIRN__CPID_MAX];
} cairn__cpids;

/* n projects (at most CAIRN__CPID_MAX), none known. */
void cairn__cpids_init(cairn__cpids *t, size_t n);
void cairn__cpids_destroy(cairn__cpids *t);

/* Project k's heartbeat answer's "cpid" {"email_hash", "id", "time"}
 * noted; an answer without one (NULL) (a volunteer attached to no
 * account, a master without the feature) or with a malformed one forgets
 * what k's master said before. */
void cairn__cpids_heard(cairn__cpids *t, size_t k, const json_t *cpid, long long now_ms);

/* 1 when project k's heartbeat is due for the ids' sake (even with no
 * lease to renew): its master was not heard since the start or for
 * CAIRN__CPID_ASK_MS, or there is an offer to make it. */
int cairn__cpids_due(cairn__cpids *t, size_t k, long long now_ms);

/* What project k's next heartbeat offers: 1 with id and *time the oldest
 * id of the projects known with k's e-mail when it is older than k's own;
 * 0 when there is none to offer (k's is the oldest, or k's is not known:
 * the heartbeat only asks). */
int cairn__cpids_offer(cairn__cpids *t, size_t k, char id[33], int64_t *time);

#endif
