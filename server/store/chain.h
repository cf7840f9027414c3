/* chain.h — the tamper-evident audit trail (private to server/ and the CLI).
 *
 * Every allocation, result, outcome change, ban, quarantine (and release),
 * trust reset and credit grant the journal commits is appended to a hash
 * chain (table audit_chain, schema/0014_audit_chain.sql) in the same
 * transaction. Entry seq (1, 2, 3, ... without gaps) has:
 *   body = the canonical content below,
 *   prev = hash of entry seq - 1 (32 zero bytes for seq 1),
 *   hash = SHA-256(prev || SHA-256(body)).
 * The master signs a checkpoint of the head (seq, hash, time) with an
 * Ed25519 key kept in DB.audit-key (mode 0600, created at first start):
 * every CAIRN_CHAIN_CHECKPOINT_SECONDS when the head moved, and at close.
 *
 * Canonical content (docs/accountability.md): byte 0x01 (the version),
 * seq as 8 bytes big-endian, the kind as one byte, then the kind's fields
 * in a fixed order, each an integer (8 bytes, big-endian two's complement),
 * a real (IEEE 754 binary64, 8 bytes big-endian) or a string (4-byte
 * big-endian length, then its bytes, at most CAIRN_CHAIN_STR_MAX: longer
 * ones are chained by their first CAIRN_CHAIN_STR_MAX bytes).
 *
 * Ownership: a cairn__chain belongs to the journal's commit thread once
 * given to it (cairn__journal_set_chain); the head it publishes is read
 * under its own mutex. Verification (cairn__chain_verify_*) opens its own
 * read-only view and holds no lock of a running master.
 */
#ifndef CAIRN_CHAIN_H
#define CAIRN_CHAIN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "common/error.h"
#include "common/log.h"

#define CAIRN_CHAIN_CHECKPOINT_SECONDS 10
#define CAIRN_CHAIN_STR_MAX 1024
#define CAIRN_CHAIN_BODY_MAX 4096

typedef enum {
  CAIRN_CK_ALLOC = 1,   /* idx, vol, t, task, issued, expires, round */
  CAIRN_CK_RESULT,      /* idx, task, vol, exit, received, digest$, outcome$, reason$,
                           claim~, credit~   ($: string, ~: real) */
  CAIRN_CK_OUTCOME,     /* idx, outcome$ */
  CAIRN_CK_BAN,         /* vol, reason$ */
  CAIRN_CK_QUARANTINE,  /* vol, on (1 entered, 0 released) */
  CAIRN_CK_TRUST_RESET, /* vol */
  CAIRN_CK_CREDIT,      /* idx, vol, claim~, result_credit~, credit~, cpu_seconds~, credited */
  CAIRN_CK_TEAM_CREDIT, /* idx, credit~, cpu_seconds~, results, team$ (the team's totals after
                         * result idx's credit was counted for it or taken from it; the
                         * team last, so that its bytes end the body) */
  CAIRN_CK_COUNT
} cairn__chain_kind;

/* The kind's name ("alloc", "result", ...), or "?" */
const char *cairn__chain_kind_name(int kind);

/* An entry being built (or read back). vol, task, idx: 0 when not about one. */
typedef struct cairn__centry {
  int64_t seq;
  int kind;
  int64_t vol, task, idx;
  unsigned char body[CAIRN_CHAIN_BODY_MAX];
  size_t len;
  uint8_t prev[32], hash[32];
} cairn__centry;

/* Starts e's body: version, seq 0 (set by the chain), kind. */
void cairn__centry_begin(cairn__centry *e, int kind, int64_t vol, int64_t task, int64_t idx);
void cairn__centry_i64(cairn__centry *e, int64_t v);
void cairn__centry_f64(cairn__centry *e, double v);
void cairn__centry_str(cairn__centry *e, const char *s); /* NULL: "" */

/* SHA-256(prev || SHA-256(body)). */
void cairn__chain_hash(const uint8_t prev[32], const uint8_t chash[32], uint8_t out[32]);

typedef struct cairn__chain cairn__chain;
struct cairn__store;

/* Loads the signing key from key_path, creating it (mode 0600) if missing;
 * tree: the audit log's Merkle tree over the entries too (tree.h), its
 * heads signed with the same key. NULL with err set. */
cairn__chain *cairn__chain_open(const char *key_path, int tree, const cairn__logger *log,
                                cairn_error *err);
void cairn__chain_close(cairn__chain *ch);
/* The audit key's public half. */
void cairn__chain_public_key(const cairn__chain *ch, uint8_t pk[32]);
/* The chain's tree (tree.h), NULL when off. */
struct cairn__tree *cairn__chain_tree(cairn__chain *ch);

/* Commit thread: reads the committed head and the last signed one from the
 * store, once (the journal does it when the chain is set), so that a head
 * left unsigned by a kill -9 is signed after a restart even when nothing
 * more is appended; brings the tree to the chain (tree.h: loaded, or built
 * from the entries, which takes O(n) once for a chain without its tree). */
cairn_status cairn__chain_load(cairn__chain *ch, struct cairn__store *s, cairn_error *err);
/* Commit thread, inside its open transaction (with a tree, after
 * cairn__chain_load, outside any): gives e the next seq, links
 * and hashes it and writes it. The head moves only in memory until
 * cairn__chain_committed(); on a failed transaction the journal fails for
 * good, so no rollback of the head is needed. O(1). */
cairn_status cairn__chain_append(cairn__chain *ch, struct cairn__store *s, cairn__centry *e,
                                 cairn_error *err);
/* The transaction holding the appended entries committed. */
void cairn__chain_committed(cairn__chain *ch);
/* Commit thread: 1 when a checkpoint is due at now (force: at close, when
 * the head moved since the last one), or a signed tree head (tree.h). */
int cairn__chain_checkpoint_due(cairn__chain *ch, int64_t now, int force);
/* Commit thread, inside a transaction: signs and writes the head, and the
 * tree's head, each when due as cairn__chain_checkpoint_due says. */
cairn_status cairn__chain_checkpoint(cairn__chain *ch, struct cairn__store *s, int64_t now,
                                     int force, cairn_error *err);

/* ---- verification (the CLI; no running master's lock is taken) ---- */

typedef struct cairn__chain_report {
  int64_t checked;            /* entries whose hash was recomputed */
  int64_t linked;             /* skipped entries of a partial export checked by link */
  int64_t head_seq;           /* the last entry walked */
  uint8_t head[32];
  int64_t checkpoints;        /* signatures checked */
  int64_t signed_seq;         /* the highest head a valid checkpoint signs */
  uint8_t pubkey[32];
  int have_pubkey;
  int64_t bad_seq;            /* 0: no problem (or a live row no entry describes) */
  char bad_kind[16];          /* the entry's kind, or the live table */
  int64_t bad_row;            /* a live table's row (its idx or id), when bad_kind is one */
  char problem[256];          /* "" when the chain verified */
  /* the live tables against the chain (cairn__chain_live_check) */
  int live;                   /* they were checked */
  int64_t live_allocs, live_results, live_vols, live_teams; /* rows compared with their entries */
  int64_t live_gone;          /* entries whose rows went with a deleted job */
  int64_t live_unchained;     /* rows no entry describes, allowed by a gap */
  char gap[128];              /* meta audit_chain_gap ("" when the chain has none) */
  /* the audit log's tree against the chain (cairn__tree_check, tree.h) */
  int tree;                   /* it was checked */
  int64_t tree_size, tree_nodes, tree_heads; /* leaves, stored nodes and signed heads checked */
} cairn__chain_report;

/* Walks the chain of database db_path (read-only, in chunks of 4096
 * entries) and its checkpoints; then, with live and when the chain
 * verified, checks the live tables against it (cairn__chain_live_check),
 * and the audit log's tree against the chain (cairn__tree_check, tree.h),
 * all in one read transaction (one snapshot beside a running master).
 * pubkey: the key checkpoints must be signed by (NULL: DB.audit-key's if
 * readable, else each checkpoint's own). CAIRN_OK when walked (r->problem
 * says whether it verified); an error when the database cannot be read. */
cairn_status cairn__chain_verify_db(const char *db_path, const uint8_t *pubkey, int live,
                                    cairn__chain_report *r, cairn_error *err);

/* The live tables against a verified chain (chain_live.c), inside the
 * caller's read transaction on db: every row of allocations, results and
 * volunteers must be what the chain's entries about it say (an allocation
 * as allocated; a result as received, with its latest outcome and credit;
 * a volunteer's ban, quarantine flag and credit totals), and every entry's
 * row must exist unless its task's job was deleted. Rows no entry
 * describes pass only when meta audit_chain_gap is set (the chain was off,
 * or started on a database that had records). The first mismatch goes to
 * r (bad_kind: the table, bad_row, bad_seq: the entry, 0 when none).
 * O(E log E + R) for E entries and R rows: SQLite sorts the entries
 * (external merge sort: its page cache, then temporary files), the rest
 * streams; the memory taken here is one row's fold. */
struct sqlite3;
cairn_status cairn__chain_live_check(struct sqlite3 *db, cairn__chain_report *r,
                                     cairn_error *err);

/* Meta audit_chain_gap: notes, on the store's writer outside any
 * transaction (at open), that the database has chained kinds of records
 * (allocations, banned, quarantined or credited volunteers) but an empty
 * chain: records from before the chain. */
cairn_status cairn__store_chain_note_gap(struct cairn__store *s, cairn_error *err);
/* Writes an export (docs/accountability.md) of database db_path to out:
 * every entry, or with job > 0 the entries of that job in full and the
 * others as links. */
cairn_status cairn__chain_export(const char *db_path, int64_t job, FILE *out, cairn_error *err);
/* Verifies an export file; pubkey as for cairn__chain_verify_db (NULL: the
 * file's own key). */
cairn_status cairn__chain_verify_file(FILE *in, const uint8_t *pubkey, cairn__chain_report *r,
                                      cairn_error *err);

/* Hex helpers: 2n digits into out (n bytes); -1 on a bad digit or length. */
int cairn__chain_unhex(const char *hex, uint8_t *out, size_t n);
void cairn__chain_hex(const uint8_t *in, size_t n, char *out);


/* ---- the walk shared by the database and export verifiers (chain.c) ---- */

typedef struct cairn__cp {
  int64_t seq, time;
  uint8_t hash[32];
} cairn__cp;

typedef struct cairn__chain_walk {
  cairn__chain_report *r;
  uint8_t last[32];           /* hash of the entry before next */
  int64_t next;               /* the seq expected */
  cairn__cp *cps;             /* valid checkpoints, sorted by seq once walking */
  size_t ncp, cap, cpi;
  int sorted;
} cairn__chain_walk;

void cairn__chain_walk_init(cairn__chain_walk *w, cairn__chain_report *r, const uint8_t *pubkey);
/* Checks one checkpoint's signature and keeps it for the walk; all before
 * the first entry. 0, or -1 on a problem (recorded in the report). */
int cairn__chain_walk_checkpoint(cairn__chain_walk *w, int64_t seq, const uint8_t hash[32],
                                 int64_t time, const uint8_t pubkey[32], const uint8_t sig[64]);
/* The next entry in full (kind: its stored name) or, for a partial export,
 * by its link (chash: SHA-256 of its body). 0, or -1 on the first problem. */
int cairn__chain_walk_entry(cairn__chain_walk *w, int64_t seq, const char *kind,
                            const uint8_t *body, size_t len, const uint8_t prev[32],
                            const uint8_t hash[32]);
int cairn__chain_walk_link(cairn__chain_walk *w, int64_t seq, const uint8_t prev[32],
                           const uint8_t chash[32], const uint8_t hash[32]);
/* After the last entry: checkpoints past the end are a problem. Frees w. */
int cairn__chain_walk_end(cairn__chain_walk *w);

#endif
