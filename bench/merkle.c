/* merkle.c — the audit log's tree: its size, append rate and proofs.
 *
 *   bench-merkle [--leaves N] [--proofs P]      (defaults 10^7 and 10,000)
 *
 * In a fresh store (a temporary folder), writes an audit chain of N
 * entries with the tree off (the mix a replicated job makes: per task
 * replica an allocation, a result, an outcome change and a credit grant,
 * as bench-chain writes it, without the live rows), then opens it with the
 * tree on: the start-up build appends the N leaves (cairn__tree_load, in
 * transactions of CAIRN_TREE_BUILD_CHUNK), which gives the append rate and
 * the time a database made before the tree takes at its first start. Then
 * 10^5 more entries in transactions of 1,000 as the commit thread writes
 * them, with the tree, then 10^5 without it (reopened with the tree off),
 * three times each, alternating, on the same chain: the tree's cost per
 * entry on the write path (the medians). Then a head is signed at
 * the full size, and P inclusion proofs of random leaves and P consistency
 * proofs from random earlier signed sizes are read through the log's
 * reader (the public routes' path). Ends with
 *   merkle: leaves=N build_s=B build_leaves_per_s=R build_s_per_million=M
 *           tree_bytes_per_leaf=T index_bytes_per_leaf=I chain_bytes_per_entry=C
 *           append_us_tree=A append_us_chain=A0 inclusion_hashes=H inclusion_us=U
 *           consistency_hashes=H2 consistency_us=U2
 * (one line): bytes from SQLite's dbstat (audit_tree; the index
 * audit_chain_by_idx; audit_chain) divided by N; proofs: the mean number of
 * hashes, the median µs of a proof read and verified.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/merkle.h"
#include "server/store/chain.h"
#include "server/store/load.h"
#include "server/store/tree.h"
#include "tests/support/harness.h"

#define DIGEST "4f2d0c7be5d1a3f9a1c2e8b7d6f5e4c3b2a1908f7e6d5c4b3a29180716253443"
#define VOLS 64

/* Entry i of the mix (bench/chain.c's), its body only. */
static void entry(cairn__centry *e, long i) {
  int64_t idx = i / 4 + 1, task = i / 8 + 1, vol = idx % VOLS + 1;
  switch (i % 4) {
  case 0:
    cairn__centry_begin(e, CAIRN_CK_ALLOC, vol, task, idx);
    for (int k = 0; k < 7; k++)
      cairn__centry_i64(e, (int64_t[]){idx, vol, idx, task, 1700000000, 1700000600, 0}[k]);
    break;
  case 1:
    cairn__centry_begin(e, CAIRN_CK_RESULT, vol, task, idx);
    for (int k = 0; k < 5; k++)
      cairn__centry_i64(e, (int64_t[]){idx, task, vol, 0, 1700000010}[k]);
    cairn__centry_str(e, DIGEST);
    cairn__centry_str(e, "pending");
    cairn__centry_str(e, "");
    cairn__centry_f64(e, 1.5);
    cairn__centry_f64(e, 0);
    break;
  case 2:
    cairn__centry_begin(e, CAIRN_CK_OUTCOME, 0, 0, idx);
    cairn__centry_i64(e, idx);
    cairn__centry_str(e, "valid");
    break;
  default:
    cairn__centry_begin(e, CAIRN_CK_CREDIT, vol, 0, idx);
    cairn__centry_i64(e, idx);
    cairn__centry_i64(e, vol);
    for (int k = 0; k < 4; k++)
      cairn__centry_f64(e, 1.5 * (k + 1));
    cairn__centry_i64(e, idx);
  }
}

/* n entries from entry number first, in transactions of 1,000, as the
 * journal writes them. */
static cairn_status append(cairn__store *s, cairn__chain *ch, cairn__centry *e, long first,
                           long n, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  for (long i = first; st == CAIRN_OK && i < first + n; i += 1000) {
    st = cairn__store_begin(s, err);
    for (long k = i; st == CAIRN_OK && k < i + 1000 && k < first + n; k++) {
      entry(e, k);
      st = cairn__chain_append(ch, s, e, err);
    }
    if (st == CAIRN_OK)
      st = cairn__store_commit(s, err);
    cairn__chain_committed(ch);
  }
  return st;
}

static double pages(const char *db, const char *name) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  double v = -1;
  if (sqlite3_open(db, &h) == SQLITE_OK &&
      sqlite3_prepare_v2(h, "SELECT SUM(pgsize) FROM dbstat WHERE name = ?1", -1, &q, NULL) ==
        SQLITE_OK &&
      sqlite3_bind_text(q, 1, name, -1, SQLITE_STATIC) == SQLITE_OK && sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_double(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return v;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, by_value);
  return v[n / 2];
}

/* Opens store and chain at db (tree on or off), loaded. */
static cairn_status open_log(const char *db, const char *key, int tree, cairn__store **s,
                             cairn__chain **ch, cairn_error *err) {
  *s = cairn__store_open(db, 0, err);
  *ch = *s ? cairn__chain_open(key, tree, NULL, err) : NULL;
  return *ch ? cairn__chain_load(*ch, *s, err) : CAIRN_EIO;
}

/* Signs a head of the tree as it is (a checkpoint forced). */
static cairn_status sign(cairn__store *s, cairn__chain *ch, cairn_error *err) {
  cairn_status st = cairn__store_begin(s, err);
  if (st == CAIRN_OK)
    st = cairn__chain_checkpoint(ch, s, 1700000000, 1, err);
  return st == CAIRN_OK ? cairn__store_commit(s, err) : st;
}


int main(int argc, char **argv) {
  long n = 10000000, proofs = 10000;
  for (int i = 1; i + 1 < argc; i += 2)
    if (!strcmp(argv[i], "--leaves"))
      n = atol(argv[i + 1]);
    else if (!strcmp(argv[i], "--proofs"))
      proofs = atol(argv[i + 1]);
    else
      n = 0;
  if (n < 2000 || proofs <= 0 || argc % 2 == 0) {
    fprintf(stderr, "usage: bench-merkle [--leaves N (>= 2000)] [--proofs P]\n");
    return 2;
  }
  char dir[4096], db[4200], key[4300];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  snprintf(key, sizeof key, "%s.audit-key", db);
  cairn_error err = {0};
  cairn__store *s = NULL;
  cairn__chain *ch = NULL;
  cairn__centry *e = malloc(sizeof *e);
  /* the chain, without its tree; one head signed early, for the proofs */
  cairn_status st = open_log(db, key, 0, &s, &ch, &err);
  double t0 = harness_now();
  if (st == CAIRN_OK)
    st = append(s, ch, e, 0, n, &err);
  fprintf(stderr, "bench-merkle: %ld chain entries written in %.1f s\n", n, harness_now() - t0);
  cairn__chain_close(ch);
  cairn__store_close(s);
  /* the build at start-up */
  t0 = harness_now();
  if (st == CAIRN_OK)
    st = open_log(db, key, 1, &s, &ch, &err);
  double build = harness_now() - t0;
  /* the write path on this chain: 10^5 entries with the tree, then
   * (reopened) 10^5 without, then with (the reopening catches the tree
   * up, untimed), three times each: the medians */
  long more = 100000, at = n;
  double on[3], off[3];
  for (int round = 0; st == CAIRN_OK && round < 6; round++) {
    int tree = round % 2 == 0;
    if (round > 0) {
      cairn__chain_close(ch);
      cairn__store_close(s);
      st = open_log(db, key, tree, &s, &ch, &err);
    }
    double t1 = harness_now();
    if (st == CAIRN_OK)
      st = append(s, ch, e, at, more, &err);
    (tree ? on : off)[round / 2] = harness_now() - t1;
    at += more;
  }
  cairn__chain_close(ch);
  cairn__store_close(s);
  ch = NULL;
  s = NULL;
  uint64_t size = (uint64_t)at;
  double with_tree = median(on, 3), chain_only = median(off, 3);
  if (st != CAIRN_OK) {
    fprintf(stderr, "bench-merkle: %s\n", err.text);
    return 1;
  }
  double tree_bytes = pages(db, "audit_tree"), index_bytes = pages(db, "audit_chain_by_idx"),
         chain_bytes = pages(db, "audit_chain");
  /* rows of audit_sth at random earlier sizes (not signed: only their
   * sizes are read, which a consistency proof must start from), then the
   * head of the whole tree, signed */
  sqlite3 *h = NULL;
  sqlite3_open(db, &h);
  sqlite3_exec(h, "BEGIN", NULL, NULL, NULL);
  unsigned seed = 7;
  uint64_t firsts[64];
  for (int i = 0; i < 64; i++) {
    firsts[i] = 1 + (uint64_t)rand_r(&seed) * 4099u % (size - 1);
    char sql[200];
    snprintf(sql, sizeof sql, "INSERT INTO audit_sth(tree_size, timestamp, root, signature) "
             "VALUES (%llu, 0, zeroblob(32), zeroblob(64))", (unsigned long long)firsts[i]);
    sqlite3_exec(h, sql, NULL, NULL, NULL);
  }
  sqlite3_exec(h, "COMMIT", NULL, NULL, NULL);
  sqlite3_close(h);
  st = open_log(db, key, 1, &s, &ch, &err); /* the tree caught up: its last 10^5 leaves */
  if (st == CAIRN_OK)
    st = sign(s, ch, &err);
  cairn__chain_close(ch);
  cairn__store_close(s);
  /* proofs through the reader */
  cairn__tree_reader *r = st == CAIRN_OK ? cairn__tree_reader_open(db, &err) : NULL;
  cairn__sth head;
  if (!r || cairn__tree_newest(r, &head, &err) != CAIRN_OK || head.tree_size != size) {
    fprintf(stderr, "bench-merkle: no head of the whole tree: %s\n", err.text);
    cairn__tree_reader_close(r);
    free(e);
    return 1;
  }
  double *us = malloc((size_t)proofs * sizeof *us), *us2 = malloc((size_t)proofs * sizeof *us2);
  double hashes = 0, hashes2 = 0;
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t np = 0;
  for (long i = 0; i < proofs; i++) {
    uint64_t leaf = ((uint64_t)rand_r(&seed) << 16 ^ (uint64_t)rand_r(&seed)) % size;
    double a = harness_now();
    if (cairn__tree_inclusion(r, leaf, size, path, &np, &err) != CAIRN_OK) {
      fprintf(stderr, "bench-merkle: %s\n", err.text);
      return 1;
    }
    us[i] = (harness_now() - a) * 1e6;
    hashes += (double)np;
    uint64_t first = firsts[i % 64];
    a = harness_now();
    if (cairn__tree_consistency(r, first, size, path, &np, &err) != CAIRN_OK) {
      fprintf(stderr, "bench-merkle: %s\n", err.text);
      return 1;
    }
    us2[i] = (harness_now() - a) * 1e6;
    hashes2 += (double)np;
  }
  cairn__tree_reader_close(r);
  printf("merkle: leaves=%ld build_s=%.2f build_leaves_per_s=%.0f build_s_per_million=%.2f "
         "tree_bytes_per_leaf=%.2f index_bytes_per_leaf=%.2f chain_bytes_per_entry=%.1f "
         "append_us_tree=%.2f append_us_chain=%.2f inclusion_hashes=%.1f inclusion_us=%.0f "
         "consistency_hashes=%.1f consistency_us=%.0f\n", n, build, (double)n / build,
         build * 1e6 / (double)n, tree_bytes / (double)size, index_bytes / (double)size,
         chain_bytes / (double)size, with_tree * 1e6 / (double)more,
         chain_only * 1e6 / (double)more, hashes / (double)proofs, median(us, (int)proofs),
         hashes2 / (double)proofs, median(us2, (int)proofs));
  free(us);
  free(us2);
  free(e);
  harness_rmtree(dir);
  return 0;
}
