/* chain.c — the audit chain's size and verification time.
 *
 *   bench-chain [--entries N]      (default 10^6)
 *
 * Builds a fresh store (a temporary folder) whose audit chain has N entries,
 * the mix a replicated job makes (per task replica: an allocation, a result,
 * an outcome change and a credit grant), written as the master's commit
 * thread does (cairn__chain_append in transactions of 1,000 entries, a
 * signed checkpoint every 10^5), then verifies it as `cairn audit verify
 * --db` does, and ends with
 *   chain: entries=N bytes_per_entry=B build_s=X verify_s=Y verify_entries_per_s=Z
 * bytes_per_entry: the pages of audit_chain (SQLite's dbstat) / N.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/chain.h"
#include "server/store.h"
#include "tests/support/harness.h"

static void entry(cairn__centry *e, long i) {
  int64_t idx = i / 4 + 1, task = i / 8 + 1, vol = i % 64 + 1;
  switch (i % 4) {
  case 0:
    cairn__centry_begin(e, CAIRN_CK_ALLOC, vol, task, idx);
    for (int k = 0; k < 7; k++)
      cairn__centry_i64(e, (int64_t[]){idx, vol, i, task, 1700000000, 1700000600, 0}[k]);
    break;
  case 1:
    cairn__centry_begin(e, CAIRN_CK_RESULT, vol, task, idx);
    for (int k = 0; k < 5; k++)
      cairn__centry_i64(e, (int64_t[]){idx, task, vol, 0, 1700000010}[k]);
    cairn__centry_str(e, "4f2d0c7be5d1a3f9a1c2e8b7d6f5e4c3b2a1908f7e6d5c4b3a29180716253443");
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
      cairn__centry_f64(e, 1.5 * k);
    cairn__centry_i64(e, i / 4);
    break;
  }
}

static double table_bytes(const char *db) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  double v = -1;
  if (sqlite3_open(db, &h) == SQLITE_OK &&
      sqlite3_prepare_v2(h, "SELECT SUM(pgsize) FROM dbstat WHERE name = 'audit_chain'", -1, &q,
                         NULL) == SQLITE_OK &&
      sqlite3_step(q) == SQLITE_ROW)
    v = sqlite3_column_double(q, 0);
  sqlite3_finalize(q);
  sqlite3_close(h);
  return v;
}

int main(int argc, char **argv) {
  long n = 1000000;
  if (argc == 3 && strcmp(argv[1], "--entries") == 0)
    n = atol(argv[2]);
  else if (argc != 1 || n <= 0) {
    fprintf(stderr, "usage: bench-chain [--entries N]\n");
    return 2;
  }
  char dir[4096], db[4200], key[4300];
  harness_tmpdir(dir, sizeof dir);
  snprintf(db, sizeof db, "%s/bench.db", dir);
  snprintf(key, sizeof key, "%s.audit-key", db);
  cairn_error err = {0};
  cairn_store *s = cairn_store_open(db, 0, &err);
  cairn__chain *ch = s ? cairn__chain_open(key, NULL, &err) : NULL;
  cairn__centry *e = malloc(sizeof *e);
  if (!ch || !e) {
    fprintf(stderr, "bench-chain: %s\n", err.text);
    return 1;
  }
  double t0 = harness_now();
  cairn_status st = CAIRN_OK;
  for (long i = 0; st == CAIRN_OK && i < n; i += 1000) {
    st = cairn_store_begin(s, &err);
    for (long k = i; st == CAIRN_OK && k < i + 1000 && k < n; k++) {
      entry(e, k);
      st = cairn__chain_append(ch, s, e, &err);
    }
    if (st == CAIRN_OK)
      st = cairn_store_commit(s, &err);
    cairn__chain_committed(ch);
    if (st == CAIRN_OK && ((i + 1000) % 100000 == 0 || i + 1000 >= n) &&
        cairn__chain_checkpoint_due(ch, 0, 1) && (st = cairn_store_begin(s, &err)) == CAIRN_OK &&
        (st = cairn__chain_checkpoint(ch, s, 1700000000 + i, &err)) == CAIRN_OK)
      st = cairn_store_commit(s, &err);
  }
  double t1 = harness_now();
  cairn__chain_close(ch);
  cairn_store_close(s);
  free(e);
  if (st != CAIRN_OK) {
    fprintf(stderr, "bench-chain: %s\n", err.text);
    return 1;
  }
  cairn__chain_report r;
  double t2 = harness_now();
  st = cairn__chain_verify_db(db, NULL, 0, &r, &err);
  double t3 = harness_now();
  if (st != CAIRN_OK || r.problem[0] || r.checked != n || r.signed_seq != n) {
    fprintf(stderr, "bench-chain: verify: %s %s\n", err.text, r.problem);
    return 1;
  }
  printf("chain: entries=%ld bytes_per_entry=%.1f build_s=%.2f verify_s=%.2f "
         "verify_entries_per_s=%.0f\n", n, table_bytes(db) / (double)n, t1 - t0, t3 - t2,
         (double)n / (t3 - t2));
  harness_rmtree(dir);
  return 0;
}
