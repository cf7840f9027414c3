/* auditlog.h — the worker's side of the master's audit log (docs/worker.md,
 * "Receipts and the audit log"; common/sth.h): the master's audit key,
 * pinned at the first start (DIR/audit/key.json, GET /v1/audit/key); the
 * newest signed tree head seen and checked (DIR/audit/sth.json); the
 * receipts of accepted results, each proved once a head covers it: one
 * line of DIR/audit/pending.jsonl until then (an append, no more I/O on a
 * task thread), then DIR/audit/receipts/receipt-LEAF.json with its head and
 * proof (the newest CAIRN__AUDIT_RECEIPTS kept).
 *
 * Every newer head (heartbeat answers carry the current one) must verify
 * with the pinned key and be consistent with the one kept (RFC 9162
 * §2.1.4: a consistency proof, GET /v1/audit/consistency); every receipt's
 * leaf must be its result's entry (GET /v1/audit/entries) and in the head
 * (GET /v1/audit/proof). A failure — a bad signature, a proof that does not
 * verify, a tree that shrank, a key that changed, a receipt for another
 * entry — is kept as evidence (DIR/audit/evidence-MS/: both heads, the
 * proof, what failed), logged as "audit log inconsistent: ...", and the
 * worker stops taking work from that master: cairn__auditlog_tick says so,
 * and DIR/audit/inconsistent stops it at its next start too.
 *
 * Threads: receipts come from the task threads, heads and ticks from the
 * heartbeat thread; the state is under the module's own mutex, never held
 * across a request. Memory: O(CAIRN__AUDIT_RECEIPTS) (the leaves kept and
 * those waiting for a proof). Private to worker/. */
#ifndef CAIRN_WORKER_AUDITLOG_H
#define CAIRN_WORKER_AUDITLOG_H

#include <jansson.h>
#include <pthread.h>
#include <stdint.h>

#include "common/error.h"
#include "common/log.h"
#include "common/sth.h"
#include "worker/transport.h"

#define CAIRN__AUDIT_RECEIPTS 10000 /* receipt files kept, the newest */
#define CAIRN__AUDIT_PROOFS 16      /* receipts proved every CAIRN__AUDIT_PROOF_MS at most */
#define CAIRN__AUDIT_PROOF_MS 10000 /* (two requests each: the master's load stays small) */
#define CAIRN__AUDIT_TICK_MS 500    /* a tick stops proving receipts after this long */
#define CAIRN__AUDIT_ASK_MS 10000   /* receipts no head covers: the newest asked this often */

typedef struct cairn__audit_wait { /* a receipt waiting for a head that covers it */
  uint64_t leaf;
  int64_t index;
  uint8_t hash[32];
} cairn__audit_wait;

typedef struct cairn__auditlog {
  pthread_mutex_t mu;
  const cairn__logger *log;
  char *dir, *receipts;         /* DIR/audit, DIR/audit/receipts */
  int has_key;                  /* pinned */
  uint8_t pk[32];
  int has_sth;                  /* the newest head checked */
  cairn__sth sth;
  int has_heard;                /* a newer head heard, not checked yet */
  cairn__sth heard;
  int pending_fd;               /* DIR/audit/pending.jsonl, appended to (-1: none) */
  size_t pending_lines;         /* lines in it */
  uint64_t *kept;               /* leaves of the receipt files, oldest first (a ring) */
  size_t kept_first, kept_n;
  cairn__audit_wait *wait;      /* receipts to prove, oldest first (a ring) */
  size_t wait_first, wait_n;
  uint64_t wait_top;            /* the largest leaf that ever waited */
  int inconsistent;             /* found: no more work from this master */
  int64_t asked_ms;             /* when GET /v1/audit/sth was last asked (ms since 1970) */
  int budget;                   /* receipts it may still prove until budget_ms + PROOF_MS */
  int64_t budget_ms;
} cairn__auditlog;

/* Sets a up over DIR/audit (made), reading what an earlier run kept.
 * CAIRN_EFORBIDDEN when an earlier run found the log inconsistent (its
 * message says where the evidence is), CAIRN_ENOMEM, CAIRN_EIO. */
cairn_status cairn__auditlog_init(cairn__auditlog *a, const char *dir, const cairn__logger *log,
                                  cairn_error *err);
void cairn__auditlog_destroy(cairn__auditlog *a);

/* At start-up, once registered: pins the master's key (GET /v1/audit/key)
 * when none is, or checks it is the pinned one. A master without a log
 * (404) pins nothing. CAIRN_EFORBIDDEN when the key changed (evidence kept). */
cairn_status cairn__auditlog_pin(cairn__auditlog *a, cairn__http *h, cairn_error *err);

/* The answer to an accepted result of index (its body, or a batch entry's
 * "receipt" member): its receipt is written and waits for a head. */
void cairn__auditlog_answer(cairn__auditlog *a, int64_t index, const char *body, size_t len);
void cairn__auditlog_receipt(cairn__auditlog *a, int64_t index, json_t *receipt);
/* A heartbeat's answer's "sth" (NULL: none): when newer, it is checked at
 * the next tick. */
void cairn__auditlog_heard(cairn__auditlog *a, json_t *sth);
/* Heartbeat thread, after a beat and between beats: asks for the newest
 * head (GET /v1/audit/sth, every CAIRN__AUDIT_ASK_MS at most) while the
 * head held covers not every receipt kept; checks the head heard (with a
 * consistency proof), then proves receipts it covers, at most
 * CAIRN__AUDIT_PROOFS every CAIRN__AUDIT_PROOF_MS (a worker returning
 * results faster proves them later, its oldest first; past
 * CAIRN__AUDIT_RECEIPTS waiting, the oldest stay unproved) and for at most
 * CAIRN__AUDIT_TICK_MS a tick (O(1) when there is nothing to do). CAIRN_OK (a master that did not answer is asked again at
 * the next tick), or CAIRN_EFORBIDDEN with err when the log is inconsistent
 * (logged, evidence kept: stop taking work from this master). */
cairn_status cairn__auditlog_tick(cairn__auditlog *a, cairn__http *h, cairn_error *err);

#endif
