/* chain_live.c — the audit chain against the live tables it describes
 * (chain.h, cairn__chain_live_check): after the walk has shown the chain to
 * be what the master wrote, each row of `allocations`, `results` and
 * `volunteers` must be what the chain's last word on it says, and each
 * entry's row must still be there unless a deleted job took it.
 *
 * Three passes, each a merge of two streams in the order of the row's id:
 * the chain's entries of the kinds that describe that table, sorted by the
 * id their body names (the body is what the hashes cover; the row's own
 * vol/task/idx columns are not trusted) and then by seq, and the table in
 * its primary key's order. The entries of one row are folded as they go
 * by (the result as received, then its outcome changes and credit grants;
 * a volunteer's bans, quarantines and credit totals), so the memory taken
 * here is one row's fold: O(1). SQLite sorts the entries with its external
 * merge sort (in its page cache, then temporary files: PRAGMA temp_store =
 * FILE, set by the caller), so the whole check is O(E log E + R) time for
 * E entries and R rows, in bounded memory. The caller holds one read
 * transaction over the walk and the passes: the chain and the tables are
 * one snapshot, beside a running master. */
#include "server/store/chain.h"

#include <sqlite3.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct live {
  sqlite3 *db;
  cairn__chain_report *r;
  sqlite3_stmt *gone; /* 1 when task ?1's rows may be gone (chain_live_gone) */
  int gap;            /* meta audit_chain_gap is set: rows without entries pass */
} live;

/* Records the first problem of the live check; -1. */
static int mismatch(live *L, const char *table, int64_t row, int64_t seq, const char *fmt, ...) {
  cairn__chain_report *r = L->r;
  if (!r->problem[0]) {
    r->bad_seq = seq;
    r->bad_row = row;
    snprintf(r->bad_kind, sizeof r->bad_kind, "%s", table);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->problem, sizeof r->problem, fmt, ap);
    va_end(ap);
  }
  return -1;
}

/* ---- reading a body (chain.h's field orders) ---- */

typedef struct rd {
  const uint8_t *p;
  size_t len, off;
  int bad;
} rd;

static void rd_init(rd *d, const void *body, int len) {
  d->p = body;
  d->len = len > 0 ? (size_t)len : 0;
  d->off = 10; /* version, seq, kind */
  d->bad = d->len < 10;
}

static uint64_t rd_u64(rd *d) {
  if (d->bad || d->off + 8 > d->len) {
    d->bad = 1;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | d->p[d->off++];
  return v;
}

static int64_t rd_i64(rd *d) { return (int64_t)rd_u64(d); }

static double rd_f64(rd *d) {
  uint64_t bits = rd_u64(d);
  double v;
  memcpy(&v, &bits, sizeof v);
  return v;
}

/* A string into out (at most CAIRN_CHAIN_STR_MAX bytes and a NUL). */
static void rd_str(rd *d, char out[CAIRN_CHAIN_STR_MAX + 1]) {
  out[0] = '\0';
  if (d->bad || d->off + 4 > d->len) {
    d->bad = 1;
    return;
  }
  size_t n = 0;
  for (int i = 0; i < 4; i++)
    n = n << 8 | d->p[d->off++];
  if (n > CAIRN_CHAIN_STR_MAX || d->off + n > d->len) {
    d->bad = 1;
    return;
  }
  memcpy(out, d->p + d->off, n);
  out[n] = '\0';
  d->off += n;
}

/* A live string as the chain keeps it: its first CAIRN_CHAIN_STR_MAX bytes. */
static int same_str(const char *chained, const unsigned char *col) {
  const char *s = col ? (const char *)col : "";
  size_t n = strlen(s);
  if (n > CAIRN_CHAIN_STR_MAX)
    n = CAIRN_CHAIN_STR_MAX;
  return strlen(chained) == n && memcmp(chained, s, n) == 0;
}

/* ---- the two streams ---- */

typedef struct cursor {
  sqlite3_stmt *q;
  int have;     /* a row is current */
  uint64_t key; /* its id (the chain's: column 0 as 8 big-endian bytes) */
  int rc;
} cursor;

static void next(cursor *c, int chain) {
  c->rc = sqlite3_step(c->q);
  c->have = c->rc == SQLITE_ROW;
  if (!c->have)
    return;
  if (!chain) {
    c->key = (uint64_t)sqlite3_column_int64(c->q, 0);
    return;
  }
  rd d = {sqlite3_column_blob(c->q, 0), (size_t)sqlite3_column_bytes(c->q, 0), 0, 0};
  c->key = rd_u64(&d); /* a short key (cannot be: the walk checked the body) reads as 0 */
}

static cairn_status open_cursor(live *L, cursor *c, const char *sql, int chain,
                                cairn_error *err) {
  memset(c, 0, sizeof *c);
  if (sqlite3_prepare_v2(L->db, sql, -1, &c->q, NULL) != SQLITE_OK)
    return cairn__error_set(err, CAIRN_EIO, "audit live check: %s", sqlite3_errmsg(L->db));
  next(c, chain);
  return CAIRN_OK;
}

static cairn_status close_cursors(live *L, cursor *a, cursor *b, cairn_error *err) {
  int bad = (a->rc != SQLITE_ROW && a->rc != SQLITE_DONE) ||
            (b->rc != SQLITE_ROW && b->rc != SQLITE_DONE);
  sqlite3_finalize(a->q);
  sqlite3_finalize(b->q);
  return bad ? cairn__error_set(err, CAIRN_EIO, "audit live check: %s", sqlite3_errmsg(L->db))
             : CAIRN_OK;
}

/* 1 when entry seq's row (table) is gone with its job: task's row is gone,
 * or its job is being deleted or was (`cairn delete` removes results, and
 * with --purge allocations and then tasks); else a problem. */
static int gone_ok(live *L, const char *table, uint64_t row, int64_t seq, int64_t task) {
  sqlite3_reset(L->gone);
  sqlite3_bind_int64(L->gone, 1, task);
  int ok = sqlite3_step(L->gone) == SQLITE_ROW && sqlite3_column_int(L->gone, 0);
  sqlite3_reset(L->gone);
  if (ok) {
    L->r->live_gone++;
    return 1;
  }
  mismatch(L, table, (int64_t)row, seq, "the row is missing, but entry %lld describes it and its "
           "task %lld was not deleted", (long long)seq, (long long)task);
  return 0;
}

/* A row without any entry: allowed only when the chain has a gap. */
static int unchained(live *L, const char *table, uint64_t row, const char *what) {
  if (L->gap) {
    L->r->live_unchained++;
    return 1;
  }
  mismatch(L, table, (int64_t)row, 0, "%s, but no chain entry describes it", what);
  return 0;
}

/* ---- allocations: one `alloc` entry each ---- */

static cairn_status pass_allocs(live *L, cairn_error *err) {
  cursor c, t;
  cairn_status st = open_cursor(L, &c, "SELECT substr(body, 11, 8) AS k, seq, body FROM "
                                "audit_chain WHERE kind = 'alloc' ORDER BY k, seq", 1, err);
  if (st == CAIRN_OK)
    st = open_cursor(L, &t, "SELECT idx, volunteer_id, t, task_id, issued, round FROM "
                     "allocations WHERE idx > 0 ORDER BY idx", 0, err);
  else
    return st;
  if (st != CAIRN_OK) {
    sqlite3_finalize(c.q);
    return st;
  }
  int ok = 1;
  while (ok && (c.have || t.have)) {
    int64_t seq = c.have ? sqlite3_column_int64(c.q, 1) : 0;
    if (c.have && (!t.have || c.key < t.key)) {
      rd d;
      rd_init(&d, sqlite3_column_blob(c.q, 2), sqlite3_column_bytes(c.q, 2));
      int64_t f[7];
      for (int i = 0; i < 7; i++)
        f[i] = rd_i64(&d);
      ok = gone_ok(L, "allocations", c.key, seq, f[3]);
      next(&c, 1);
    } else if (!c.have || t.key < c.key) {
      ok = unchained(L, "allocations", t.key, "the row exists");
      next(&t, 0);
    } else {
      rd d;
      rd_init(&d, sqlite3_column_blob(c.q, 2), sqlite3_column_bytes(c.q, 2));
      int64_t f[7]; /* idx, vol, t, task, issued, expires, round */
      for (int i = 0; i < 7; i++)
        f[i] = rd_i64(&d);
      static const char *const names[] = {"volunteer_id", "t", "task_id", "issued", "round"};
      const int at[] = {1, 2, 3, 4, 6};
      for (int i = 0; i < 5 && ok; i++) {
        int64_t v = sqlite3_column_int64(t.q, i + 1);
        if (v != f[at[i]])
          ok = !mismatch(L, "allocations", (int64_t)t.key, seq, "its %s is %lld, but entry "
                         "%lld says %lld", names[i], (long long)v, (long long)seq,
                         (long long)f[at[i]]);
      }
      L->r->live_allocs++;
      next(&c, 1);
      if (ok && c.have && c.key == t.key)
        ok = !mismatch(L, "allocations", (int64_t)t.key, sqlite3_column_int64(c.q, 1),
                       "a second alloc entry names it");
      next(&t, 0);
    }
  }
  return close_cursors(L, &c, &t, err);
}

/* ---- results: a `result` entry, then its `outcome` and `credit` entries ---- */

typedef struct rfold {
  int64_t result_seq, outcome_seq, credit_seq;
  int64_t task, vol, exit_status, received;
  double claim, credit;
  char digest[CAIRN_CHAIN_STR_MAX + 1], outcome[CAIRN_CHAIN_STR_MAX + 1];
  char reason[CAIRN_CHAIN_STR_MAX + 1];
} rfold;

/* Folds the entries of row c.key into *f, leaving c on the next row's. */
static void fold_result(cursor *c, rfold *f) {
  uint64_t key = c->key;
  memset(f, 0, sizeof *f);
  f->claim = -1;
  for (; c->have && c->key == key; next(c, 1)) {
    int64_t seq = sqlite3_column_int64(c->q, 1);
    const char *kind = (const char *)sqlite3_column_text(c->q, 2);
    rd d;
    rd_init(&d, sqlite3_column_blob(c->q, 3), sqlite3_column_bytes(c->q, 3));
    rd_i64(&d); /* idx: the key */
    if (kind && strcmp(kind, "result") == 0) {
      f->result_seq = f->outcome_seq = f->credit_seq = seq;
      f->task = rd_i64(&d);
      f->vol = rd_i64(&d);
      f->exit_status = rd_i64(&d);
      f->received = rd_i64(&d);
      rd_str(&d, f->digest);
      rd_str(&d, f->outcome);
      rd_str(&d, f->reason);
      f->claim = rd_f64(&d);
      f->credit = rd_f64(&d);
    } else if (kind && strcmp(kind, "outcome") == 0) {
      f->outcome_seq = seq;
      rd_str(&d, f->outcome);
    } else { /* credit: idx, vol, claim, result credit, ... */
      f->credit_seq = seq;
      rd_i64(&d);
      double claim = rd_f64(&d);
      if (claim >= 0)
        f->claim = claim;
      f->credit = rd_f64(&d);
    }
  }
}

/* Compares results row t with fold f; 1 when they agree. */
static int same_result(live *L, sqlite3_stmt *t, uint64_t idx, const rfold *f) {
  if (!f->result_seq)
    return !mismatch(L, "results", (int64_t)idx, f->outcome_seq,
                     "entry %lld changes it, but no result entry describes it",
                     (long long)f->outcome_seq);
  static const char *const inames[] = {"task_id", "volunteer_id", "exit_status", "received"};
  const int64_t iv[] = {f->task, f->vol, f->exit_status, f->received};
  for (int i = 0; i < 4; i++)
    if (sqlite3_column_int64(t, i + 1) != iv[i])
      return !mismatch(L, "results", (int64_t)idx, f->result_seq,
                       "its %s is %lld, but entry %lld says %lld", inames[i],
                       (long long)sqlite3_column_int64(t, i + 1), (long long)f->result_seq,
                       (long long)iv[i]);
  if (!same_str(f->digest, sqlite3_column_text(t, 5)))
    return !mismatch(L, "results", (int64_t)idx, f->result_seq,
                     "its digest is not the one entry %lld received", (long long)f->result_seq);
  if (!same_str(f->reason, sqlite3_column_text(t, 7)))
    return !mismatch(L, "results", (int64_t)idx, f->result_seq,
                     "its reason is not the one entry %lld received", (long long)f->result_seq);
  if (!same_str(f->outcome, sqlite3_column_text(t, 6)))
    return !mismatch(L, "results", (int64_t)idx, f->outcome_seq,
                     "its outcome is %s, but entry %lld says %s", sqlite3_column_text(t, 6),
                     (long long)f->outcome_seq, f->outcome);
  int has_claim = sqlite3_column_type(t, 8) != SQLITE_NULL;
  if (has_claim != (f->claim >= 0) || (has_claim && sqlite3_column_double(t, 8) != f->claim))
    return !mismatch(L, "results", (int64_t)idx, f->credit_seq,
                     "its cpu_seconds is not the claim entry %lld records",
                     (long long)f->credit_seq);
  if (sqlite3_column_double(t, 9) != f->credit)
    return !mismatch(L, "results", (int64_t)idx, f->credit_seq,
                     "its credit is %g, but entry %lld says %g", sqlite3_column_double(t, 9),
                     (long long)f->credit_seq, f->credit);
  return 1;
}

static cairn_status pass_results(live *L, rfold *f, cairn_error *err) {
  cursor c, t;
  cairn_status st = open_cursor(L, &c, "SELECT substr(body, 11, 8) AS k, seq, kind, body FROM "
                                "audit_chain WHERE kind IN ('result', 'outcome', 'credit') AND "
                                "substr(body, 11, 8) <> zeroblob(8) ORDER BY k, seq", 1, err);
  if (st != CAIRN_OK)
    return st;
  st = open_cursor(L, &t, "SELECT idx, task_id, volunteer_id, exit_status, received, digest, "
                   "outcome, COALESCE(reason, ''), cpu_seconds, credit FROM results "
                   "WHERE idx > 0 ORDER BY idx", 0, err);
  if (st != CAIRN_OK) {
    sqlite3_finalize(c.q);
    return st;
  }
  int ok = 1;
  while (ok && (c.have || t.have)) {
    if (c.have && (!t.have || c.key < t.key)) {
      uint64_t key = c.key;
      fold_result(&c, f);
      ok = f->result_seq ? gone_ok(L, "results", key, f->result_seq, f->task)
                         : 1; /* an outcome or grant of a result the chain never had */
    } else if (!c.have || t.key < c.key) {
      ok = unchained(L, "results", t.key, "the row exists");
      next(&t, 0);
    } else {
      fold_result(&c, f);
      ok = same_result(L, t.q, t.key, f);
      L->r->live_results++;
      next(&t, 0);
    }
  }
  return close_cursors(L, &c, &t, err);
}

/* ---- volunteers: bans, quarantines, credit totals ---- */

typedef struct vfold {
  int64_t ban_seq, quar_seq, credit_seq, entries;
  int quarantined;
  double credit, cpu_seconds;
  int64_t credited;
  char reason[CAIRN_CHAIN_STR_MAX + 1];
} vfold;

static void fold_volunteer(cursor *c, vfold *f) {
  uint64_t key = c->key;
  memset(f, 0, sizeof *f);
  for (; c->have && c->key == key; next(c, 1)) {
    int64_t seq = sqlite3_column_int64(c->q, 1);
    const char *kind = (const char *)sqlite3_column_text(c->q, 2);
    rd d;
    rd_init(&d, sqlite3_column_blob(c->q, 3), sqlite3_column_bytes(c->q, 3));
    f->entries++;
    if (kind && strcmp(kind, "ban") == 0) {
      rd_i64(&d);
      f->ban_seq = seq;
      rd_str(&d, f->reason);
    } else if (kind && strcmp(kind, "quarantine") == 0) {
      rd_i64(&d);
      f->quar_seq = seq;
      f->quarantined = rd_i64(&d) != 0;
    } else { /* credit: idx, vol, claim, result credit, credit, cpu seconds, credited */
      for (int i = 0; i < 4; i++)
        rd_i64(&d);
      f->credit_seq = seq;
      f->credit = rd_f64(&d);
      f->cpu_seconds = rd_f64(&d);
      f->credited = rd_i64(&d);
    }
  }
}

static int same_volunteer(live *L, sqlite3_stmt *t, uint64_t id, const vfold *f) {
  int banned = sqlite3_column_int(t, 1) != 0, quarantined = sqlite3_column_int(t, 3) != 0;
  double credit = sqlite3_column_double(t, 4), cpu = sqlite3_column_double(t, 5);
  int64_t credited = sqlite3_column_int64(t, 6);
  if (!f->entries) {
    if (!banned && !quarantined && credit == 0 && cpu == 0 && credited == 0)
      return 1;
    return unchained(L, "volunteers", id, banned ? "it is banned" : quarantined
                     ? "it is quarantined" : "it has credit");
  }
  if (banned != (f->ban_seq != 0))
    return banned ? unchained(L, "volunteers", id, "it is banned")
                  : !mismatch(L, "volunteers", (int64_t)id, f->ban_seq,
                              "it is not banned, but entry %lld bans it", (long long)f->ban_seq);
  if (banned && !same_str(f->reason, sqlite3_column_text(t, 2)))
    return !mismatch(L, "volunteers", (int64_t)id, f->ban_seq,
                     "its ban reason is not the one entry %lld gives", (long long)f->ban_seq);
  if (quarantined != f->quarantined)
    return f->quar_seq ? !mismatch(L, "volunteers", (int64_t)id, f->quar_seq, "its quarantine "
                                   "flag is %d, but entry %lld sets it to %d", quarantined,
                                   (long long)f->quar_seq, f->quarantined)
                       : unchained(L, "volunteers", id, "it is quarantined");
  if (credit != f->credit || cpu != f->cpu_seconds || credited != f->credited)
    return f->credit_seq ? !mismatch(L, "volunteers", (int64_t)id, f->credit_seq,
                                     "its credit totals (%g, %g s, %lld results) are not entry "
                                     "%lld's (%g, %g s, %lld)", credit, cpu, (long long)credited,
                                     (long long)f->credit_seq, f->credit, f->cpu_seconds,
                                     (long long)f->credited)
                         : unchained(L, "volunteers", id, "it has credit");
  return 1;
}

static cairn_status pass_volunteers(live *L, vfold *f, cairn_error *err) {
  cursor c, t;
  cairn_status st = open_cursor(L, &c, "SELECT CASE kind WHEN 'credit' THEN substr(body, 19, 8) "
                                "ELSE substr(body, 11, 8) END AS k, seq, kind, body FROM "
                                "audit_chain WHERE kind IN ('ban', 'quarantine', 'credit') AND "
                                "k <> zeroblob(8) ORDER BY k, seq", 1, err);
  if (st != CAIRN_OK)
    return st;
  st = open_cursor(L, &t, "SELECT id, banned, COALESCE(ban_reason, ''), quarantined, credit, "
                   "cpu_seconds, credited FROM volunteers WHERE id > 0 ORDER BY id", 0, err);
  if (st != CAIRN_OK) {
    sqlite3_finalize(c.q);
    return st;
  }
  int ok = 1;
  while (ok && (c.have || t.have)) {
    if (c.have && (!t.have || c.key < t.key)) {
      uint64_t key = c.key;
      int64_t seq = sqlite3_column_int64(c.q, 1);
      fold_volunteer(&c, f);
      ok = !mismatch(L, "volunteers", (int64_t)key, seq, "the row is missing, but entry %lld "
                     "describes it", (long long)seq);
    } else if (!c.have || t.key < c.key) {
      memset(f, 0, sizeof *f);
      ok = same_volunteer(L, t.q, t.key, f);
      L->r->live_vols++;
      next(&t, 0);
    } else {
      fold_volunteer(&c, f);
      ok = same_volunteer(L, t.q, t.key, f);
      L->r->live_vols++;
      next(&t, 0);
    }
  }
  return close_cursors(L, &c, &t, err);
}

/* ---- the team ledger: each team's last `team_credit` entry ---- */

/* The name c is on (the bytes that end a team_credit body) against a
 * team_credit row's b: -1, 0, 1 as the two order (bytes, then length). */
static int key_cmp(cursor *c, const void *b, int nb) {
  const void *a = sqlite3_column_blob(c->q, 0);
  int na = sqlite3_column_bytes(c->q, 0);
  int k = na && nb ? memcmp(a, b, (size_t)(na < nb ? na : nb)) : 0;
  return k ? k : (na > nb) - (na < nb);
}

/* Each team_credit row must hold the totals of the last entry naming it;
 * a row without entries must hold nothing (or pass while the ledger was
 * seeded from before it: meta team_ledger_gap); an entry's team must have
 * its row (teams are never deleted). Entries sorted by name then seq:
 * O(E log E + T), one entry's fold in memory. */
static cairn_status pass_teams(live *L, cairn_error *err) {
  cursor c, t;
  cairn_status st = open_cursor(L, &c, "SELECT substr(body, 47) AS k, seq, body FROM audit_chain "
                                "WHERE kind = 'team_credit' ORDER BY k, seq", 0, err);
  if (st != CAIRN_OK)
    return st;
  st = open_cursor(L, &t, "SELECT CAST(team AS BLOB) AS k, credit, cpu_seconds, results, EXISTS "
                   "(SELECT 1 FROM meta WHERE key = 'team_ledger_gap') FROM team_credit ORDER BY k",
                   0, err);
  if (st != CAIRN_OK) {
    sqlite3_finalize(c.q);
    return st;
  }
  int ok = 1;
  while (ok && (c.have || t.have)) {
    const void *tk = t.have ? sqlite3_column_blob(t.q, 0) : NULL;
    int ntk = t.have ? sqlite3_column_bytes(t.q, 0) : 0;
    int cmp = !c.have ? 1 : !t.have ? -1 : key_cmp(&c, tk, ntk);
    if (cmp < 0) {
      int64_t seq = sqlite3_column_int64(c.q, 1);
      ok = !mismatch(L, "team_credit", 0, seq, "team \"%.*s\" has no row, but entry %lld "
                     "describes it", sqlite3_column_bytes(c.q, 0),
                     (const char *)sqlite3_column_blob(c.q, 0), (long long)seq);
      continue;
    }
    int64_t seq = 0, results = 0;
    double credit = 0, cpu = 0;
    for (; cmp == 0 && c.have && key_cmp(&c, tk, ntk) == 0; next(&c, 0)) { /* the last counts */
      rd d;
      rd_init(&d, sqlite3_column_blob(c.q, 2), sqlite3_column_bytes(c.q, 2));
      rd_i64(&d); /* idx */
      seq = sqlite3_column_int64(c.q, 1);
      credit = rd_f64(&d);
      cpu = rd_f64(&d);
      results = rd_i64(&d);
    }
    double tc = sqlite3_column_double(t.q, 1), tcpu = sqlite3_column_double(t.q, 2);
    int64_t tres = sqlite3_column_int64(t.q, 3);
    if (seq && (tc != credit || tcpu != cpu || tres != results))
      ok = !mismatch(L, "team_credit", 0, seq, "team \"%.*s\" has credit totals (%g, %g s, %lld "
                     "results) that are not entry %lld's (%g, %g s, %lld)", ntk,
                     (const char *)tk, tc, tcpu, (long long)tres, (long long)seq, credit, cpu,
                     (long long)results);
    else if (!seq && (tc != 0 || tcpu != 0 || tres != 0) && !sqlite3_column_int(t.q, 4))
      ok = unchained(L, "team_credit", 0, "a team has credit");
    L->r->live_teams++;
    next(&t, 0);
  }
  return close_cursors(L, &c, &t, err);
}

/* ---- the check ---- */

/* Rows with an id below 1 sort apart from the chain's keys: none may exist. */
static int no_low_ids(live *L) {
  static const char *const q[][2] = {
    {"allocations", "SELECT MIN(idx) FROM allocations WHERE idx <= 0"},
    {"results", "SELECT MIN(idx) FROM results WHERE idx <= 0"},
    {"volunteers", "SELECT MIN(id) FROM volunteers WHERE id <= 0"},
  };
  for (size_t i = 0; i < sizeof q / sizeof *q; i++) {
    sqlite3_stmt *s = NULL;
    int bad = sqlite3_prepare_v2(L->db, q[i][1], -1, &s, NULL) == SQLITE_OK &&
              sqlite3_step(s) == SQLITE_ROW && sqlite3_column_type(s, 0) != SQLITE_NULL;
    int64_t id = bad ? sqlite3_column_int64(s, 0) : 0;
    sqlite3_finalize(s);
    if (bad)
      return mismatch(L, q[i][0], id, 0, "the row exists, but no chain entry describes it");
  }
  return 0;
}

/* 1 when the database has the team ledger (0018_team_ledger.sql). */
static int has_teams(live *L) {
  sqlite3_stmt *s = NULL;
  int yes = sqlite3_prepare_v2(L->db, "SELECT 1 FROM sqlite_master WHERE name = 'team_credit'",
                               -1, &s, NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW;
  sqlite3_finalize(s);
  return yes;
}

static void read_gap(live *L) {
  sqlite3_stmt *s = NULL;
  if (sqlite3_prepare_v2(L->db, "SELECT value FROM meta WHERE key = 'audit_chain_gap'", -1, &s,
                         NULL) == SQLITE_OK && sqlite3_step(s) == SQLITE_ROW) {
    const unsigned char *v = sqlite3_column_text(s, 0);
    snprintf(L->r->gap, sizeof L->r->gap, "%s", v && *v ? (const char *)v : "yes");
    L->gap = 1;
  }
  sqlite3_finalize(s);
}

cairn_status cairn__chain_live_check(sqlite3 *db, cairn__chain_report *r, cairn_error *err) {
  union fold { /* one row's fold at a time (3 KiB) */
    rfold res;
    vfold vol;
  } *fold = malloc(sizeof *fold);
  live L = {.db = db, .r = r};
  if (!fold)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  if (sqlite3_prepare_v2(db, "SELECT NOT EXISTS (SELECT 1 FROM tasks t JOIN jobs j ON j.id = "
                         "t.job_id WHERE t.id = ?1 AND (j.ended IS NULL OR j.ended NOT IN "
                         "('deleting', 'purging', 'deleted')))", -1, &L.gone, NULL) != SQLITE_OK) {
    free(fold);
    return cairn__error_set(err, CAIRN_EIO, "audit live check: %s", sqlite3_errmsg(db));
  }
  read_gap(&L);
  r->live = 1;
  cairn_status st = CAIRN_OK;
  if (no_low_ids(&L) == 0) {
    st = pass_allocs(&L, err);
    if (st == CAIRN_OK && !r->problem[0])
      st = pass_results(&L, &fold->res, err);
    if (st == CAIRN_OK && !r->problem[0])
      st = pass_volunteers(&L, &fold->vol, err);
    if (st == CAIRN_OK && !r->problem[0] && has_teams(&L))
      st = pass_teams(&L, err);
  }
  sqlite3_finalize(L.gone);
  free(fold);
  return st;
}
