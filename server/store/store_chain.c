/* store_chain.c — the audit chain's SQL (chain.h): the commit thread's
 * writes on the store's writer connection, and the verifier and exporter,
 * which open the database read-only themselves (a running master's WAL lets
 * them read beside it; they never take its locks). */
#include "server/store/chain.h"
#include "server/store/tree.h"
#include "server/store/store_int.h"

#include "common/sha256.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* entries read per statement run: bounded memory (an export also holds its
 * read lock one chunk at a time; verify holds one read transaction
 * throughout, for one snapshot of the chain and the live tables) */
#define CHUNK 4096

/* ---- the commit thread's writes (inside its transaction) ---- */

cairn_status cairn__store_chain_head(cairn__store *s, int64_t *seq, uint8_t hash[32],
                                     int64_t *signed_seq, cairn_error *err) {
  sqlite3_stmt *q = Q(S_CHAIN_HEAD);
  *seq = 0;
  memset(hash, 0, 32);
  int rc = sqlite3_step(q);
  if (rc == SQLITE_ROW) {
    *seq = I64(0);
    if (sqlite3_column_bytes(q, 1) == 32)
      memcpy(hash, sqlite3_column_blob(q, 1), 32);
  }
  sqlite3_reset(q);
  if (rc != SQLITE_ROW && rc != SQLITE_DONE)
    return db_err(s, s->w, err, "reading the audit chain's head");
  q = Q(S_CHAIN_SIGNED);
  rc = sqlite3_step(q);
  *signed_seq = rc == SQLITE_ROW ? I64(0) : 0;
  sqlite3_reset(q);
  return rc == SQLITE_ROW ? CAIRN_OK : db_err(s, s->w, err, "reading the audit checkpoints");
}

cairn_status cairn__store_chain_put(cairn__store *s, const cairn__centry *e, cairn_error *err) {
  sqlite3_stmt *q = Q(S_CHAIN_PUT);
  sqlite3_bind_int64(q, 1, e->seq);
  sqlite3_bind_text(q, 2, cairn__chain_kind_name(e->kind), -1, SQLITE_STATIC);
  sqlite3_bind_int64(q, 3, e->vol);
  sqlite3_bind_int64(q, 4, e->task);
  sqlite3_bind_int64(q, 5, e->idx);
  sqlite3_bind_blob(q, 6, e->body, (int)e->len, SQLITE_STATIC);
  sqlite3_bind_blob(q, 7, e->prev, 32, SQLITE_STATIC);
  sqlite3_bind_blob(q, 8, e->hash, 32, SQLITE_STATIC);
  return run(s, S_CHAIN_PUT, err);
}

cairn_status cairn__store_checkpoint_put(cairn__store *s, int64_t seq, const uint8_t hash[32],
                                         int64_t time, const uint8_t pk[32],
                                         const uint8_t sig[64], cairn_error *err) {
  sqlite3_stmt *q = Q(S_CHECKPOINT_PUT);
  sqlite3_bind_int64(q, 1, seq);
  sqlite3_bind_blob(q, 2, hash, 32, SQLITE_STATIC);
  sqlite3_bind_int64(q, 3, time);
  sqlite3_bind_blob(q, 4, pk, 32, SQLITE_STATIC);
  sqlite3_bind_blob(q, 5, sig, 64, SQLITE_STATIC);
  return run(s, S_CHECKPOINT_PUT, err);
}

cairn_status cairn__store_chain_note_gap(cairn__store *s, cairn_error *err) {
  static const char sql[] =
    "INSERT OR IGNORE INTO meta(key, value) SELECT 'audit_chain_gap', 'records from before the "
    "chain' WHERE NOT EXISTS (SELECT 1 FROM audit_chain) AND (EXISTS (SELECT 1 FROM allocations) "
    "OR EXISTS (SELECT 1 FROM volunteers WHERE banned <> 0 OR quarantined <> 0 OR credited <> 0))";
  char *msg = NULL;
  if (sqlite3_exec(s->w, sql, NULL, NULL, &msg) == SQLITE_OK)
    return CAIRN_OK;
  cairn__error_set(err, CAIRN_EIO, "store: noting the audit chain's gap: %s", msg ? msg : "?");
  sqlite3_free(msg);
  return CAIRN_EIO;
}

/* ---- read-only walks ---- */

static cairn_status ro_open(const char *path, sqlite3 **db, cairn_error *err) {
  if (sqlite3_open_v2(path, db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
    cairn__error_set(err, CAIRN_EIO, "cannot open %s: %s", path, sqlite3_errmsg(*db));
    sqlite3_close(*db);
    return CAIRN_EIO;
  }
  sqlite3_busy_timeout(*db, 10000);
  return CAIRN_OK;
}

static const uint8_t *blob(sqlite3_stmt *q, int col, int n) {
  static const uint8_t zero[64];
  return sqlite3_column_bytes(q, col) == n ? sqlite3_column_blob(q, col) : zero;
}

/* Each checkpoint goes to the walk (w) or to out as a line. */
static cairn_status checkpoints(sqlite3 *db, cairn__chain_walk *w, FILE *out, cairn_error *err) {
  sqlite3_stmt *q = NULL;
  if (sqlite3_prepare_v2(db, "SELECT seq, hash, time, pubkey, sig FROM audit_checkpoints "
                             "ORDER BY id", -1, &q, NULL) != SQLITE_OK)
    return cairn__error_set(err, CAIRN_EIO, "no audit chain in this database: %s",
                           sqlite3_errmsg(db));
  int rc;
  while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
    const uint8_t *hash = blob(q, 1, 32), *pk = blob(q, 3, 32), *sig = blob(q, 4, 64);
    if (w)
      cairn__chain_walk_checkpoint(w, sqlite3_column_int64(q, 0), hash,
                                   sqlite3_column_int64(q, 2), pk, sig);
    if (out) {
      char h[65], p[65], sg[129];
      cairn__chain_hex(hash, 32, h);
      cairn__chain_hex(pk, 32, p);
      cairn__chain_hex(sig, 64, sg);
      fprintf(out, "checkpoint %lld %s %lld %s %s\n", (long long)sqlite3_column_int64(q, 0), h,
              (long long)sqlite3_column_int64(q, 2), sg, p);
    }
  }
  sqlite3_finalize(q);
  return rc == SQLITE_DONE ? CAIRN_OK
                           : cairn__error_set(err, CAIRN_EIO, "reading checkpoints: %s",
                                             sqlite3_errmsg(db));
}

/* Reads the public key beside db_path (DB.audit-key); 0 or -1. */
static int key_beside(const char *db_path, uint8_t pk[32]);

/* Walks entries in chunks of CHUNK; with job > 0 (export) the entries not of
 * that job go out as links. w: verify; out: export. */
static cairn_status entries(sqlite3 *db, int64_t job, cairn__chain_walk *w, FILE *out,
                            cairn_error *err) {
  sqlite3_stmt *q = NULL;
  const char *sql =
    "SELECT seq, kind, body, prev, hash, ?3 = 0 OR task IN (SELECT id FROM tasks WHERE "
    "job_id = ?3) OR idx IN (SELECT a.idx FROM allocations a JOIN tasks t ON a.task_id = t.id "
    "WHERE t.job_id = ?3) FROM audit_chain WHERE seq > ?1 ORDER BY seq LIMIT ?2";
  if (sqlite3_prepare_v2(db, sql, -1, &q, NULL) != SQLITE_OK)
    return cairn__error_set(err, CAIRN_EIO, "no audit chain in this database: %s",
                           sqlite3_errmsg(db));
  int64_t after = INT64_MIN, n;
  int rc = SQLITE_DONE;
  do {
    n = 0;
    sqlite3_bind_int64(q, 1, after);
    sqlite3_bind_int64(q, 2, CHUNK);
    sqlite3_bind_int64(q, 3, job);
    while ((rc = sqlite3_step(q)) == SQLITE_ROW) {
      int64_t seq = sqlite3_column_int64(q, 0);
      const char *kind = (const char *)sqlite3_column_text(q, 1);
      const uint8_t *body = sqlite3_column_blob(q, 2);
      size_t len = (size_t)sqlite3_column_bytes(q, 2);
      const uint8_t *prev = blob(q, 3, 32), *hash = blob(q, 4, 32);
      after = seq;
      n++;
      if (w && cairn__chain_walk_entry(w, seq, kind ? kind : "?", body, len, prev, hash)) {
        n = 0; /* the first problem ends the walk */
        break;
      }
      if (!out)
        continue;
      char p[65], h[65], *b = malloc(2 * len + 65); /* the body, or a 32-byte hash */
      if (!b) {
        rc = SQLITE_NOMEM;
        break;
      }
      cairn__chain_hex(prev, 32, p);
      cairn__chain_hex(hash, 32, h);
      if (sqlite3_column_int(q, 5)) {
        cairn__chain_hex(body ? body : (const uint8_t *)"", len, b);
        fprintf(out, "entry %lld %s %s %s %s\n", (long long)seq, kind ? kind : "?", b, p, h);
      } else {
        uint8_t ch[32];
        cairn__sha256 c;
        cairn__sha256_init(&c);
        cairn__sha256_update(&c, body ? body : (const uint8_t *)"", len);
        cairn__sha256_final(&c, ch);
        cairn__chain_hex(ch, 32, b);
        fprintf(out, "link %lld %s %s %s\n", (long long)seq, p, b, h);
      }
      free(b);
    }
    sqlite3_reset(q);
  } while (n == CHUNK && (rc == SQLITE_DONE || rc == SQLITE_ROW));
  sqlite3_finalize(q);
  if (rc != SQLITE_DONE && rc != SQLITE_ROW)
    return cairn__error_set(err, CAIRN_EIO, "reading the audit chain: %s", sqlite3_errmsg(db));
  return CAIRN_OK;
}

static int key_beside(const char *db_path, uint8_t pk[32]) {
  char path[4096], hex[160] = {0};
  snprintf(path, sizeof path, "%s.audit-key", db_path);
  FILE *f = fopen(path, "r");
  if (!f)
    return -1;
  size_t n = fread(hex, 1, 128, f);
  fclose(f);
  uint8_t sk[64];
  if (n != 128 || cairn__chain_unhex(hex, sk, 64))
    return -1;
  memcpy(pk, sk + 32, 32); /* an Ed25519 secret key is its seed, then its public key */
  memset(sk, 0, sizeof sk);
  return 0;
}

cairn_status cairn__chain_verify_db(const char *db_path, const uint8_t *pubkey, int live,
                                    cairn__chain_report *r, cairn_error *err) {
  uint8_t pk[32];
  if (!pubkey && key_beside(db_path, pk) == 0)
    pubkey = pk;
  sqlite3 *db = NULL;
  if (ro_open(db_path, &db, err) != CAIRN_OK)
    return CAIRN_EIO;
  /* one snapshot for the walk and the live check; the live check's sorts
   * spill to temporary files, not memory */
  if (sqlite3_exec(db, "PRAGMA temp_store = FILE; BEGIN", NULL, NULL, NULL) != SQLITE_OK) {
    cairn__error_set(err, CAIRN_EIO, "cannot read %s: %s", db_path, sqlite3_errmsg(db));
    sqlite3_close(db);
    return CAIRN_EIO;
  }
  cairn__chain_walk w;
  cairn__chain_walk_init(&w, r, pubkey);
  cairn_status st = checkpoints(db, &w, NULL, err);
  if (st == CAIRN_OK)
    st = entries(db, 0, &w, NULL, err);
  cairn__chain_walk_end(&w);
  if (st == CAIRN_OK && !r->problem[0])
    st = cairn__tree_check(db, pubkey, r, err);
  if (st == CAIRN_OK && live && !r->problem[0])
    st = cairn__chain_live_check(db, r, err);
  sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(db);
  return st;
}

cairn_status cairn__chain_export(const char *db_path, int64_t job, FILE *out, cairn_error *err) {
  uint8_t pk[32];
  sqlite3 *db = NULL;
  if (ro_open(db_path, &db, err) != CAIRN_OK)
    return CAIRN_EIO;
  fprintf(out, "cairn-audit-export 1\n");
  if (key_beside(db_path, pk) == 0) {
    char h[65];
    cairn__chain_hex(pk, 32, h);
    fprintf(out, "pubkey %s\n", h);
  }
  if (job > 0)
    fprintf(out, "job %lld\n", (long long)job);
  cairn_status st = checkpoints(db, NULL, out, err);
  if (st == CAIRN_OK)
    st = entries(db, job, NULL, out, err);
  if (st == CAIRN_OK)
    fprintf(out, "end\n");
  sqlite3_close(db);
  if (st == CAIRN_OK && (fflush(out) || ferror(out)))
    st = cairn__error_set(err, CAIRN_EIO, "cannot write the export");
  return st;
}

/* ---- an export file (no database) ---- */

/* One line of an export into the walk; -1 on a malformed line. */
static int file_line(cairn__chain_walk *w, char *line, uint8_t *body, int *ended,
                     int have_key) {
  char *tok[8] = {0};
  int n = 0;
  for (char *save = NULL, *t = strtok_r(line, " \n", &save); t && n < 8;
       t = strtok_r(NULL, " \n", &save))
    tok[n++] = t;
  uint8_t a[32], b[32], c[32], sig[64];
  if (n == 0 || strcmp(tok[0], "job") == 0 || strcmp(tok[0], "cairn-audit-export") == 0)
    return 0;
  if (strcmp(tok[0], "pubkey") == 0 && n == 2) {
    if (cairn__chain_unhex(tok[1], a, 32))
      return -1;
    if (!have_key) {
      memcpy(w->r->pubkey, a, 32);
      w->r->have_pubkey = 1;
    }
    return 0;
  }
  if (strcmp(tok[0], "end") == 0)
    return *ended = 1, 0;
  if (strcmp(tok[0], "checkpoint") == 0 && n == 6)
    return cairn__chain_unhex(tok[2], a, 32) || cairn__chain_unhex(tok[4], sig, 64) ||
               cairn__chain_unhex(tok[5], b, 32)
             ? -1
             : (cairn__chain_walk_checkpoint(w, atoll(tok[1]), a, atoll(tok[3]), b, sig), 0);
  if (strcmp(tok[0], "link") == 0 && n == 5)
    return cairn__chain_unhex(tok[2], a, 32) || cairn__chain_unhex(tok[3], b, 32) ||
               cairn__chain_unhex(tok[4], c, 32)
             ? -1
             : (cairn__chain_walk_link(w, atoll(tok[1]), a, b, c), 0);
  if (strcmp(tok[0], "entry") == 0 && n == 6) {
    size_t len = strlen(tok[3]) / 2;
    if (len > CAIRN_CHAIN_BODY_MAX || cairn__chain_unhex(tok[3], body, len) ||
        cairn__chain_unhex(tok[4], a, 32) || cairn__chain_unhex(tok[5], b, 32))
      return -1;
    cairn__chain_walk_entry(w, atoll(tok[1]), tok[2], body, len, a, b);
    return 0;
  }
  return -1;
}

cairn_status cairn__chain_verify_file(FILE *in, const uint8_t *pubkey, cairn__chain_report *r,
                                      cairn_error *err) {
  cairn__chain_walk w;
  cairn__chain_walk_init(&w, r, pubkey);
  size_t cap = 2 * CAIRN_CHAIN_BODY_MAX + 512;
  char *line = malloc(cap);
  uint8_t *body = malloc(CAIRN_CHAIN_BODY_MAX);
  int ended = 0, bad = 0;
  long long lineno = 0;
  while (line && body && !bad && !ended && fgets(line, (int)cap, in)) {
    lineno++;
    if (lineno == 1 && strncmp(line, "cairn-audit-export 1", 20) != 0)
      bad = 1;
    else
      bad = file_line(&w, line, body, &ended, pubkey != NULL);
  }
  cairn_status st = CAIRN_OK;
  if (!line || !body)
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  else if (bad)
    st = cairn__error_set(err, CAIRN_EINVAL, "line %lld is not an export line", lineno);
  else if (!ended && !r->problem[0])
    st = cairn__error_set(err, CAIRN_EINVAL, "the export is cut short (no end line)");
  cairn__chain_walk_end(&w);
  free(line);
  free(body);
  return st;
}
