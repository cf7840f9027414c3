/* chain.c — the audit chain's size and verification time.
 *
 *   bench-chain [--entries N]      (default 10^6)
 *
 * Builds a fresh store (a temporary folder) whose audit chain has N entries,
 * the mix a replicated job makes (per task replica: an allocation, a result,
 * an outcome change and a credit grant, over 64 volunteers), written as the
 * master's commit thread does (the live rows, then cairn__chain_append, in
 * transactions of 1,000 entries, a signed checkpoint every 10^5), then
 * runs `cairn audit verify --db` on it ($CAIRN_BIN_DIR/cairn, default
 * build/bin/cairn; bench/chain.sh sets it) three times each with --chain-only
 * and with the live tables' check, alternating, and ends with
 *   chain: entries=N bytes_per_entry=B build_s=X verify_s=Y verify_entries_per_s=Z
 *          verify_cpu_s=C verify_live_s=L verify_live_cpu_s=CL verify_rss_kib=R
 *          verify_live_rss_kib=RL
 * (one line): the medians of the three (wall seconds; cpu: user + system
 * seconds of the cairn process, less sensitive to a shared machine's load;
 * rss: its peak resident size). bytes_per_entry: the pages of audit_chain (SQLite's dbstat) / N.
 */
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "server/store/chain.h"
#include "server/store/load.h"
#include "tests/support/harness.h"

#define DIGEST "4f2d0c7be5d1a3f9a1c2e8b7d6f5e4c3b2a1908f7e6d5c4b3a29180716253443"
#define VOLS 64

/* Entry i and the live rows it describes, written as the journal does. */
static cairn_status entry(cairn__store *s, cairn__centry *e, long i, cairn_error *err) {
  int64_t idx = i / 4 + 1, task = i / 8 + 1, vol = idx % VOLS + 1;
  switch (i % 4) {
  case 0:
    cairn__centry_begin(e, CAIRN_CK_ALLOC, vol, task, idx);
    for (int k = 0; k < 7; k++)
      cairn__centry_i64(e, (int64_t[]){idx, vol, idx, task, 1700000000, 1700000600, 0}[k]);
    return cairn__store_alloc_insert(s, idx, vol, idx, task, 1700000000, 1700000600, 0, err);
  case 1: {
    cairn__centry_begin(e, CAIRN_CK_RESULT, vol, task, idx);
    for (int k = 0; k < 5; k++)
      cairn__centry_i64(e, (int64_t[]){idx, task, vol, 0, 1700000010}[k]);
    cairn__centry_str(e, DIGEST);
    cairn__centry_str(e, "pending");
    cairn__centry_str(e, "");
    cairn__centry_f64(e, 1.5);
    cairn__centry_f64(e, 0);
    cairn__store_credit_row c = {.idx = idx, .claim = 1.5};
    cairn_status st = cairn__store_result_insert(s, idx, task, vol, 0, "", 0, DIGEST, 1700000010,
                                                "pending", NULL, "", 0, err);
    return st == CAIRN_OK ? cairn__store_credit(s, &c, err) : st;
  }
  case 2:
    cairn__centry_begin(e, CAIRN_CK_OUTCOME, 0, 0, idx);
    cairn__centry_i64(e, idx);
    cairn__centry_str(e, "valid");
    return cairn__store_result_outcome(s, idx, "valid", err);
  default: {
    cairn__store_credit_row c = {idx, vol, 0, 1.5, 1.5 * idx, 1.5 * idx, idx, 0, 0};
    cairn__centry_begin(e, CAIRN_CK_CREDIT, vol, 0, idx);
    cairn__centry_i64(e, idx);
    cairn__centry_i64(e, vol);
    for (int k = 0; k < 4; k++)
      cairn__centry_f64(e, (double[]){c.claim, c.result_credit, c.credit, c.cpu_seconds}[k]);
    cairn__centry_i64(e, c.credited);
    return cairn__store_credit(s, &c, err);
  }
  }
}

/* The job and its n / 8 tasks the allocations name (their foreign keys),
 * on a connection of its own before the store writes. 0 or -1. */
static int tasks(const char *db, long n) {
  sqlite3 *h = NULL;
  char sql[1024];
  snprintf(sql, sizeof sql,
           "INSERT INTO jobs(id, name, app, policy, replication, quorum, lease_seconds, "
           "max_attempts, state, created) VALUES (1, 'bench', 'noop', 'fifo', 2, 2, 600, 3, "
           "'running', 1700000000); WITH RECURSIVE k(id) AS (SELECT 1 UNION ALL SELECT id + 1 "
           "FROM k WHERE id < %ld) INSERT INTO tasks(id, job_id, seq, name, args, inputs, state) "
           "SELECT id, 1, id, 't' || id, '[]', '[]', 'done' FROM k", n / 8 + 1);
  int rc = sqlite3_open(db, &h) == SQLITE_OK ? sqlite3_exec(h, sql, NULL, NULL, NULL) : -1;
  if (rc != SQLITE_OK)
    fprintf(stderr, "bench-chain: tasks: %s\n", sqlite3_errmsg(h));
  sqlite3_close(h);
  return rc == SQLITE_OK ? 0 : -1;
}

static cairn_status volunteers(cairn__store *s, cairn_error *err) {
  cairn_status st = cairn__store_begin(s, err);
  for (int v = 1; st == CAIRN_OK && v <= VOLS; v++) {
    char name[32], token[65];
    snprintf(name, sizeof name, "v%d", v);
    snprintf(token, sizeof token, "%064d", v);
    st = cairn__store_volunteer_insert(s, v, name, "bench", "[\"noop\"]", 1, token, 1700000000,
                                      err);
  }
  return st == CAIRN_OK ? cairn__store_commit(s, err) : st;
}

/* Runs `cairn audit verify --db db` (live 0: with --chain-only), its
 * output discarded; its seconds, peak RSS (KiB) and CPU seconds (user +
 * system), or -1 seconds when it did not verify. */
static double verify_child(const char *cli, const char *db, int live, long *rss_kib,
                           double *cpu) {
  double t0 = harness_now();
  pid_t pid = fork();
  if (pid == 0) {
    if (!freopen("/dev/null", "w", stdout))
      _exit(127);
    execl(cli, cli, "audit", "verify", "--db", db, live ? NULL : "--chain-only", (char *)NULL);
    _exit(127);
  }
  int status = 0;
  struct rusage ru;
  if (pid < 0 || wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    fprintf(stderr, "bench-chain: %s audit verify --db %s failed\n", cli, db);
    return -1;
  }
  *rss_kib = ru.ru_maxrss;
  *cpu = (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
  return harness_now() - t0;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
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
  cairn__store *s = cairn__store_open(db, 0, &err);
  cairn__chain *ch = s && tasks(db, n) == 0 ? cairn__chain_open(key, 0, NULL, &err) : NULL;
  cairn__centry *e = malloc(sizeof *e);
  if (!ch || !e) {
    fprintf(stderr, "bench-chain: %s\n", err.text);
    return 1;
  }
  double t0 = harness_now();
  cairn_status st = volunteers(s, &err);
  for (long i = 0; st == CAIRN_OK && i < n; i += 1000) {
    st = cairn__store_begin(s, &err);
    for (long k = i; st == CAIRN_OK && k < i + 1000 && k < n; k++) {
      st = entry(s, e, k, &err);
      if (st == CAIRN_OK)
        st = cairn__chain_append(ch, s, e, &err);
    }
    if (st == CAIRN_OK)
      st = cairn__store_commit(s, &err);
    cairn__chain_committed(ch);
    if (st == CAIRN_OK && ((i + 1000) % 100000 == 0 || i + 1000 >= n) &&
        cairn__chain_checkpoint_due(ch, 0, 1) && (st = cairn__store_begin(s, &err)) == CAIRN_OK &&
        (st = cairn__chain_checkpoint(ch, s, 1700000000 + i, 1, &err)) == CAIRN_OK)
      st = cairn__store_commit(s, &err);
  }
  double t1 = harness_now();
  cairn__chain_close(ch);
  cairn__store_close(s);
  free(e);
  if (st != CAIRN_OK) {
    fprintf(stderr, "bench-chain: %s\n", err.text);
    return 1;
  }
  char cli[4096];
  harness_bin(cli, sizeof cli, "cairn");
  double secs[2][3], rss[2][3], cpu[2][3];
  for (int run = 0; run < 3; run++)
    for (int live = 0; live < 2; live++) {
      long kib = 0;
      secs[live][run] = verify_child(cli, db, live, &kib, &cpu[live][run]);
      rss[live][run] = (double)kib;
      if (secs[live][run] < 0)
        return 1;
      fprintf(stderr, "bench-chain: run %d, %s: %.2f s, CPU %.2f s, %ld KiB\n", run + 1,
              live ? "with the live check" : "chain only", secs[live][run], cpu[live][run], kib);
    }
  for (int live = 0; live < 2; live++) {
    qsort(secs[live], 3, sizeof(double), by_value);
    qsort(rss[live], 3, sizeof(double), by_value);
    qsort(cpu[live], 3, sizeof(double), by_value);
  }
  printf("chain: entries=%ld bytes_per_entry=%.1f build_s=%.2f verify_s=%.2f "
         "verify_entries_per_s=%.0f verify_cpu_s=%.2f verify_live_s=%.2f verify_live_cpu_s=%.2f "
         "verify_rss_kib=%.0f verify_live_rss_kib=%.0f\n", n, table_bytes(db) / (double)n,
         t1 - t0, secs[0][1], (double)n / secs[0][1], cpu[0][1], secs[1][1], cpu[1][1],
         rss[0][1], rss[1][1]);
  harness_rmtree(dir);
  return 0;
}
