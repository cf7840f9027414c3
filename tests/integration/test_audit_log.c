/* test_audit_log.c — the audit log every volunteer can check, with real
 * processes: a cairn-server and cairn-workers running jobs.
 *
 * After a job every receipt a worker holds is proved: each file is read
 * back here and checked with common/merkle against the audit key read from
 * the master's DB.audit-key (not the one the worker pinned), each leaf's
 * input hashed from GET /v1/audit/entries, and `cairn audit check` agrees;
 * `cairn audit prove N` proves an index. The public routes refuse bad
 * parameters with 400 naming them, a range of more than 1,000 entries, and
 * sizes never signed.
 *
 * A master whose database is edited while it is stopped — a result entry's
 * body changed (and the tree derived again), or the newest entries
 * removed — and started again is caught by a worker that held an older
 * head, within one heartbeat of the master's next head (the log line, the
 * evidence files), and by `cairn audit prove --receipts` and `cairn audit
 * check`.
 *
 * A master killed with SIGKILL again and again while workers deliver
 * leaves its tree whole: the tree's size is the chain's, every stored node
 * is the hash of the leaves under it (recomputed here from the bodies), and
 * the heads it signs after each restart have the reference root. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <signal.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/base64.h"
#include "common/merkle.h"
#include "common/sth.h"
#include "tests/support/files.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

/* ---- helpers ---- */

static void job_text(char *out, size_t len, const char *name, int n, const char *secs) {
  size_t k = (size_t)snprintf(out, len, "{\"name\": \"%s\", \"app\": \"nap\", \"policy\": "
                              "\"fifo\", \"lease_seconds\": 3, \"tasks\": [", name);
  for (int i = 0; i < n && k < len; i++)
    k += (size_t)snprintf(out + k, len - k, "%s{\"id\": \"t%d\", \"args\": [\"%s\"]}",
                          i ? ", " : "", i, secs);
  snprintf(out + k, len - k, "]}");
}

static long long submit(server_fixture *f, const char *name, int n, const char *secs) {
  char text[16384];
  job_text(text, sizeof text, name, n, secs);
  return server_fixture_submit(f, text);
}

static void wait_done(server_fixture *f, long long job) {
  char path[64];
  snprintf(path, sizeof path, "/v1/jobs/%lld", job);
  for (double until = harness_now() + 120; harness_now() < until; usleep(200000)) {
    json_t *j = server_fixture_get(f, path);
    int done = strcmp(json_string_value(json_object_get(j, "state")), "done") == 0;
    json_decref(j);
    if (done)
      return;
  }
  fail_msg("job %lld did not finish", job);
}

static pid_t worker(server_fixture *f, const char *name) {
  const char *args[] = {"--app", "nap=/bin/sleep", "--slots", "1", "--exit-when-idle", "600",
                        "--log-level", "info", NULL};
  pid_t pid = server_fixture_worker(f, name, args);
  assert_true(pid > 0);
  return pid;
}

/* The master's audit key, from its DB.audit-key (hex seed ‖ public key). */
static void master_key(server_fixture *f, uint8_t pk[32]) {
  char path[4300], hex[129] = {0};
  snprintf(path, sizeof path, "%s.audit-key", f->db);
  FILE *fp = fopen(path, "r");
  assert_non_null(fp);
  assert_int_equal(fread(hex, 1, 128, fp), 128);
  fclose(fp);
  for (int i = 0; i < 32; i++) {
    unsigned v;
    sscanf(hex + 64 + 2 * i, "%2x", &v);
    pk[i] = (uint8_t)v;
  }
}

static void key_b64(const uint8_t pk[32], char out[64]) { cairn__base64_encode(pk, 32, out); }

static int receipt_name(const struct dirent *d) { return strncmp(d->d_name, "receipt-", 8) == 0; }

/* Worker name's receipts: how many, and how many proved. */
static void receipts(server_fixture *f, const char *name, int *all, int *proved) {
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/%s/audit/receipts", f->dir, name);
  struct dirent **names = NULL;
  int n = scandir(dir, &names, receipt_name, alphasort);
  *all = n > 0 ? n : 0;
  *proved = 0;
  for (int i = 0; i < n; i++) {
    char path[4700];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    json_t *o = json_load_file(path, 0, NULL);
    *proved += json_object_get(o, "sth") != NULL;
    json_decref(o);
    free(names[i]);
  }
  free(names);
}

/* Waits until worker name holds a receipt of each result it logged as
 * delivered (want; -1: as many as its log says), all proved (a head is
 * signed every 10 s; a worker proves 16 receipts every 10 s). Their number. */
static int wait_proved(server_fixture *f, const char *name, int want) {
  int all = 0, proved = 0, delivered = 0;
  char log[4400];
  snprintf(log, sizeof log, "%s/%s.log", f->dir, name);
  for (double until = harness_now() + 90; harness_now() < until; usleep(250000)) {
    delivered = want >= 0 ? want : files_count_lines(log, "delivered");
    receipts(f, name, &all, &proved);
    if (all == delivered && proved == delivered)
      return delivered;
  }
  fail_msg("%s: %d receipts, %d proved (want %d)", name, all, proved, delivered);
  return -1;
}

/* Every receipt of worker name, read back and checked here: its head
 * signed by pk, its proof to that head's root, its leaf the master's entry
 * of that index (hashed from GET /v1/audit/entries); all proved, unless
 * some_unproved (then only the proved ones are checked). Their number. */
static int check_receipts(server_fixture *f, const char *name, const uint8_t pk[32],
                          int some_unproved) {
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/%s/audit/receipts", f->dir, name);
  struct dirent **names = NULL;
  int n = scandir(dir, &names, receipt_name, alphasort);
  assert_true(n > 0);
  for (int i = 0; i < n; i++) {
    char path[4700], why[300], q[128];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    json_t *o = json_load_file(path, 0, NULL), *e = NULL;
    cairn__receipt *r = malloc(sizeof *r);
    assert_int_equal(cairn__receipt_parse(o, r, why, sizeof why), 0);
    if (some_unproved && !r->proved) {
      json_decref(o);
      free(r);
      free(names[i]);
      continue;
    }
    assert_true(r->proved);
    assert_true(cairn__sth_verify(&r->sth, pk));
    assert_true(cairn_merkle_verify_inclusion(r->leaf_index, r->sth.tree_size, r->leaf_hash,
                                              r->path, r->npath, r->sth.root));
    snprintf(q, sizeof q, "/v1/audit/entries?start=%llu&end=%llu",
             (unsigned long long)r->leaf_index, (unsigned long long)r->leaf_index);
    assert_int_equal(harness_http(f->srv.url, "GET", q, NULL, NULL, 0, &e, NULL, NULL), 200);
    const char *in = json_string_value(
      json_object_get(json_array_get(json_object_get(e, "entries"), 0), "leaf_input"));
    uint8_t body[4200], h[32];
    size_t len = 0;
    assert_non_null(in);
    assert_int_equal(cairn__base64_decode(in, strlen(in), body, sizeof body, &len), 0);
    cairn_merkle_leaf_hash(body, len, h);
    assert_memory_equal(h, r->leaf_hash, 32);
    assert_int_equal(body[9], 2); /* a result entry */
    json_decref(e);
    json_decref(o);
    free(r);
    free(names[i]);
  }
  free(names);
  return n;
}

/* cairn ARGS (NULL-terminated after a5): exit status; stdout in *out. */
static int cli(char **out, const char *const *args) {
  char bin[4096];
  harness_bin(bin, sizeof bin, "cairn");
  const char *argv[16] = {bin};
  int n = 1;
  for (int i = 0; args[i] && n < 15; i++)
    argv[n++] = args[i];
  argv[n] = NULL;
  int rc = harness_run(argv, out);
  fprintf(stderr, "cairn %s %s: exit %d\n%s", args[0], args[1], rc, *out ? *out : "");
  return rc;
}

static void expect_400(server_fixture *f, const char *path, const char *field) {
  json_t *r = NULL;
  long st = harness_http(f->srv.url, "GET", path, NULL, NULL, 0, &r, NULL, NULL);
  const char *msg = json_string_value(json_object_get(json_object_get(r, "error"), "message"));
  if (st != 400 || !msg || !strstr(msg, field))
    fail_msg("GET %s: HTTP %ld, %s (wanted 400 naming %s)", path, st, msg ? msg : "-", field);
  json_decref(r);
}

/* ---- after a job: receipts, routes ---- */

static void test_receipts_and_routes(void **state) {
  (void)state;
  server_fixture f;
  assert_int_equal(server_fixture_open(&f, NULL, 1), 0);
  long long job = submit(&f, "one", 14, "0.2");
  worker(&f, "w1");
  worker(&f, "w2");
  wait_done(&f, job);
  uint8_t pk[32];
  master_key(&f, pk);
  int total = 0;
  for (int i = 1; i <= 2; i++) {
    char name[8], key[64], sth[4400], dir[4400];
    snprintf(name, sizeof name, "w%d", i);
    int delivered = wait_proved(&f, name, -1);
    total += check_receipts(&f, name, pk, 0);
    key_b64(pk, key);
    snprintf(sth, sizeof sth, "%s/%s/audit/sth.json", f.dir, name);
    snprintf(dir, sizeof dir, "%s/%s/audit/receipts", f.dir, name);
    char *out = NULL, want[64];
    const char *args[] = {"audit", "check", "--key", key, "--sth", sth, "--receipts", dir, NULL};
    assert_int_equal(cli(&out, args), 0);
    snprintf(want, sizeof want, "receipts: %d verified, 0 not proved yet, 0 failed", delivered);
    assert_non_null(strstr(out, want));
    free(out);
  }
  assert_int_equal(total, 14);
  /* cairn audit prove: index 1's allocation and result, the leaves the
   * audit answer names */
  json_t *a = server_fixture_get(&f, "/v1/audit/index/1");
  json_t *al = json_object_get(a, "leaf_index");
  json_t *rl = json_object_get(json_object_get(a, "result"), "leaf_index");
  assert_true(json_is_integer(al) && json_is_integer(rl));
  assert_true(json_integer_value(al) < json_integer_value(rl));
  char *out = NULL, want_a[64], want_r[64];
  snprintf(want_a, sizeof want_a, "allocation: leaf %lld,", (long long)json_integer_value(al));
  snprintf(want_r, sizeof want_r, "result: leaf %lld,", (long long)json_integer_value(rl));
  json_decref(a);
  const char *prove[] = {"audit", "prove", "1", "--server", f.srv.url, "--token", ADMIN, NULL};
  assert_int_equal(cli(&out, prove), 0);
  assert_non_null(strstr(out, want_a));
  assert_non_null(strstr(out, want_r));
  assert_null(strstr(out, "NOT VERIFIED"));
  free(out);
  /* the key the routes give is the master's */
  json_t *k = NULL;
  char b64[64];
  assert_int_equal(harness_http(f.srv.url, "GET", "/v1/audit/key", NULL, NULL, 0, &k, NULL,
                                NULL), 200);
  key_b64(pk, b64);
  assert_string_equal(json_string_value(json_object_get(k, "public_key")), b64);
  json_decref(k);
  /* bad parameters, too many entries, sizes never signed */
  json_t *s = NULL;
  assert_int_equal(harness_http(f.srv.url, "GET", "/v1/audit/sth", NULL, NULL, 0, &s, NULL,
                                NULL), 200);
  long long size = json_integer_value(json_object_get(s, "tree_size"));
  json_decref(s);
  char p[160];
  expect_400(&f, "/v1/audit/entries?start=x&end=1", "\"start\"");
  expect_400(&f, "/v1/audit/entries?start=1", "\"end\" is missing");
  expect_400(&f, "/v1/audit/entries?start=5&end=3", "\"end\" 3 is below \"start\" 5");
  expect_400(&f, "/v1/audit/entries?start=0&end=1000", "at most 1000");
  snprintf(p, sizeof p, "/v1/audit/entries?start=%lld&end=%lld", size, size + 5);
  expect_400(&f, p, "\"start\"");
  expect_400(&f, "/v1/audit/proof?leaf_index=-1&tree_size=3", "\"leaf_index\"");
  expect_400(&f, "/v1/audit/proof?leaf_index=0", "\"tree_size\" is missing");
  snprintf(p, sizeof p, "/v1/audit/proof?leaf_index=0&tree_size=%lld", size + 1);
  expect_400(&f, p, "\"tree_size\": no tree head of size");
  snprintf(p, sizeof p, "/v1/audit/proof?leaf_index=%lld&tree_size=%lld", size, size);
  expect_400(&f, p, "\"leaf_index\"");
  expect_400(&f, "/v1/audit/consistency?first=0&second=3", "\"first\"");
  expect_400(&f, "/v1/audit/consistency?first=3&second=2", "\"first\" 3 must be from 1");
  snprintf(p, sizeof p, "/v1/audit/consistency?first=%lld&second=%lld", size + 1, size + 2);
  expect_400(&f, p, "\"first\": no tree head of size");
  snprintf(p, sizeof p, "/v1/audit/consistency?first=%lld&second=%lld", size, size + 1);
  expect_400(&f, p, "\"second\": no tree head of size");
  json_t *e = NULL;
  assert_int_equal(harness_http(f.srv.url, "GET", "/v1/audit/entries?start=0&end=999", NULL,
                                NULL, 0, &e, NULL, NULL), 200);
  assert_int_equal(json_array_size(json_object_get(e, "entries")), size);
  json_decref(e);
  assert_int_equal(harness_http(f.srv.url, "POST", "/v1/audit/sth", NULL, "{}", 2, NULL, NULL,
                                NULL), 405);
  assert_int_equal(server_fixture_close(&f), 0);
}

/* ---- a master edited while stopped ---- */

/* Worker name's receipt leaves, lowest and highest. */
static void leaf_range(server_fixture *f, const char *name, long long *lo, long long *hi) {
  char dir[4400];
  snprintf(dir, sizeof dir, "%s/%s/audit/receipts", f->dir, name);
  struct dirent **names = NULL;
  int n = scandir(dir, &names, receipt_name, alphasort);
  *lo = -1, *hi = -1;
  for (int i = 0; i < n; i++) {
    long long l = atoll(names[i]->d_name + 8);
    *lo = *lo < 0 || l < *lo ? l : *lo;
    *hi = l > *hi ? l : *hi;
    free(names[i]);
  }
  free(names);
  assert_true(*lo >= 0);
}

/* Flips a bit of the exit status in the body of entry seq (a result's:
 * version, seq, kind, idx, task, vol, exit), as sqlite3 would. */
static void rewrite_exit(const char *db, long long seq) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT body FROM audit_chain WHERE seq = ?1", -1, &q,
                                      NULL), SQLITE_OK);
  sqlite3_bind_int64(q, 1, seq);
  assert_int_equal(sqlite3_step(q), SQLITE_ROW);
  int len = sqlite3_column_bytes(q, 0);
  unsigned char *body = malloc((size_t)len);
  memcpy(body, sqlite3_column_blob(q, 0), (size_t)len);
  sqlite3_finalize(q);
  assert_int_equal(body[9], 2);
  body[41] ^= 1;
  assert_int_equal(sqlite3_prepare_v2(h, "UPDATE audit_chain SET body = ?2 WHERE seq = ?1", -1,
                                      &q, NULL), SQLITE_OK);
  sqlite3_bind_int64(q, 1, seq);
  sqlite3_bind_blob(q, 2, body, len, SQLITE_STATIC);
  assert_int_equal(sqlite3_step(q), SQLITE_DONE);
  sqlite3_finalize(q);
  sqlite3_close(h);
  free(body);
}

/* The real_ms of the first task of job the log of worker name started. */
static long long first_start(server_fixture *f, const char *name, long long job) {
  char path[4400], line[4096], want[64];
  snprintf(path, sizeof path, "%s/%s.log", f->dir, name);
  snprintf(want, sizeof want, "start: job %lld ", job);
  FILE *fp = fopen(path, "r");
  long long ms = 0;
  while (fp && !ms && fgets(line, sizeof line, fp)) {
    const char *r = strstr(line, want) ? strstr(line, "real_ms ") : NULL;
    if (r)
      ms = atoll(r + 8);
  }
  if (fp)
    fclose(fp);
  return ms;
}

/* The edited master, started again and given work: the worker stops within
 * one heartbeat (1 s: lease 3 s) of the master's next head (or of its first
 * task, when the head came first: an idle worker does not beat), says why,
 * and keeps the evidence; the auditor's prove + check fail on the
 * receipts. */
static void caught(server_fixture *f, const char *const *extra, pid_t w, const char *edited) {
  assert_int_equal(server_fixture_restart(f, extra), 0);
  long long two = submit(f, "two", 4, "2");
  int st = harness_wait(w, 60);
  assert_true(st != -1 && st != 0);
  server_fixture_reaped(f, w);
  char log[4400], dir[4400];
  snprintf(log, sizeof log, "%s/w1.log", f->dir);
  assert_true(files_count_lines(log, "audit log inconsistent") >= 1);
  snprintf(dir, sizeof dir, "%s/w1/audit", f->dir);
  DIR *d = opendir(dir);
  struct dirent *de;
  char ev[4700] = "";
  while (d && (de = readdir(d)))
    if (strncmp(de->d_name, "evidence-", 9) == 0)
      snprintf(ev, sizeof ev, "%s/%s", dir, de->d_name);
  if (d)
    closedir(d);
  assert_true(ev[0]);
  char old[4800], new_head[4800];
  snprintf(old, sizeof old, "%s/old-sth.json", ev);
  snprintf(new_head, sizeof new_head, "%s/new-sth.json", ev);
  json_t *o = json_load_file(old, 0, NULL), *n = json_load_file(new_head, 0, NULL);
  assert_non_null(o);
  assert_non_null(n);
  long long found = atoll(strrchr(ev, '-') + 1),
            signed_at = json_integer_value(json_object_get(n, "timestamp")),
            started = first_start(f, "w1", two), t0 = signed_at > started ? signed_at : started;
  assert_true(started > 0);
  fprintf(stderr, "%s: caught %lld ms after the new head was signed, %lld ms after the first "
          "task began\n", edited, found - signed_at, found - started);
  assert_true(found - t0 <= 1000 + 1500); /* one heartbeat, and its answer's way */
  json_decref(o);
  json_decref(n);
  char mark[4500];
  snprintf(mark, sizeof mark, "%s/inconsistent", dir);
  assert_int_equal(access(mark, R_OK), 0);
  /* the auditor: the receipts proved against the master's newest head, then
   * checked offline with the key */
  char in[4500], out_dir[4500], sth[4600], key[64], *out = NULL;
  uint8_t pk[32];
  master_key(f, pk);
  key_b64(pk, key);
  snprintf(in, sizeof in, "%s/receipts", dir);
  snprintf(out_dir, sizeof out_dir, "%s/auditor", f->dir);
  snprintf(sth, sizeof sth, "%s/sth.json", out_dir);
  const char *prove[] = {"audit", "prove", "--receipts", in, "--out", out_dir,
                         "--server", f->srv.url, NULL};
  cli(&out, prove);
  free(out);
  const char *check[] = {"audit", "check", "--key", key, "--sth", sth, "--receipts", out_dir,
                         NULL};
  assert_int_equal(cli(&out, check), 1);
  assert_non_null(strstr(out, "FAILED"));
  free(out);
}

static void test_rewritten_body(void **state) {
  (void)state;
  server_fixture f;
  char port[32];
  snprintf(port, sizeof port, "127.0.0.1:%u", harness_unused_port(0));
  const char *extra[] = {"--listen", port, NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  long long job = submit(&f, "one", 20, "0.1");
  pid_t w = worker(&f, "w1");
  wait_done(&f, job);
  wait_proved(&f, "w1", 20);
  long long lo, hi;
  leaf_range(&f, "w1", &lo, &hi);
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  /* the operator rewrites w1's first result as failed, and the tree with it */
  rewrite_exit(f.db, lo + 1);
  files_sql(f.db, "DELETE FROM audit_tree");
  caught(&f, extra, w, "a result's body rewritten");
  assert_int_equal(server_fixture_close(&f), 0);
}

static void test_removed_entries(void **state) {
  (void)state;
  server_fixture f;
  char port[32], text[128];
  snprintf(port, sizeof port, "127.0.0.1:%u", harness_unused_port(0));
  const char *extra[] = {"--listen", port, NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  long long job = submit(&f, "one", 6, "0.1");
  pid_t w = worker(&f, "w1");
  wait_done(&f, job);
  wait_proved(&f, "w1", 6);
  long long lo, hi;
  leaf_range(&f, "w1", &lo, &hi);
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  /* the operator removes w1's last result's entry and those after it */
  snprintf(text, sizeof text, "DELETE FROM audit_chain WHERE seq > %lld", hi);
  files_sql(f.db, text);
  caught(&f, extra, w, "the newest entries removed");
  assert_int_equal(server_fixture_close(&f), 0);
}

/* ---- kill -9 ---- */

/* The tree in db against the chain's bodies: its size is the chain's, and
 * every stored node is MTH of the leaves under it (levels from 4 up, all of
 * them, nothing more). The number of leaves. */
static long long check_tree(const char *db) {
  long long n = files_sql_int(db, "SELECT COALESCE(MAX(seq), 0) FROM audit_chain");
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM audit_chain"), n);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_tree_size'"),
                   0); /* no size noted: the tree is the chain's */
  uint8_t (*lv)[32] = malloc((size_t)(n ? n : 1) * 32);
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT body FROM audit_chain ORDER BY seq", -1, &q,
                                      NULL), SQLITE_OK);
  for (long long i = 0; sqlite3_step(q) == SQLITE_ROW; i++) {
    uint8_t buf[4200] = {0};
    int len = sqlite3_column_bytes(q, 0);
    memcpy(buf + 1, sqlite3_column_blob(q, 0), (size_t)len);
    crypto_hash_sha256(lv[i], buf, (unsigned long long)len + 1);
  }
  sqlite3_finalize(q);
  long long stored = 0;
  for (int level = 0; (1LL << level) <= n; level++) { /* fold the level below in place */
    if (level > 0)
      for (long long i = 0; i < n >> level; i++) {
        uint8_t buf[65] = {1};
        memcpy(buf + 1, lv[2 * i], 32);
        memcpy(buf + 33, lv[2 * i + 1], 32);
        crypto_hash_sha256(lv[i], buf, sizeof buf);
      }
    if (level < 4)
      continue;
    for (long long i = 0; i < n >> level; i++) {
      assert_int_equal(sqlite3_prepare_v2(h, "SELECT hash FROM audit_tree WHERE level = ?1 AND "
                                             "size = ?2", -1, &q, NULL), SQLITE_OK);
      sqlite3_bind_int(q, 1, level);
      sqlite3_bind_int64(q, 2, (i + 1) << level);
      assert_int_equal(sqlite3_step(q), SQLITE_ROW);
      assert_memory_equal(sqlite3_column_blob(q, 0), lv[i], 32);
      sqlite3_finalize(q);
      stored++;
    }
  }
  sqlite3_close(h);
  free(lv);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM audit_tree"), stored);
  return n;
}

static void test_kill9(void **state) {
  (void)state;
  server_fixture f;
  char port[32];
  snprintf(port, sizeof port, "127.0.0.1:%u", harness_unused_port(0));
  const char *extra[] = {"--listen", port, NULL};
  assert_int_equal(server_fixture_open(&f, extra, 1), 0);
  long long job = submit(&f, "many", 400, "0.02");
  for (int i = 1; i <= 3; i++) {
    char name[8];
    snprintf(name, sizeof name, "w%d", i);
    worker(&f, name);
  }
  unsigned seed = (unsigned)getpid();
  for (int k = 0; k < 4; k++) {
    usleep(700000 + (useconds_t)(rand_r(&seed) % 1000000));
    server_fixture_stop(&f, SIGKILL);
    long long n = check_tree(f.db);
    fprintf(stderr, "kill %d: the tree of %lld leaves is whole\n", k + 1, n);
    assert_int_equal(server_fixture_restart(&f, extra), 0);
  }
  wait_done(&f, job);
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0);
  long long n = check_tree(f.db);
  /* the head signed at the stop: the whole tree, its root the reference's */
  assert_int_equal(files_sql_int(f.db, "SELECT tree_size FROM audit_sth ORDER BY id DESC LIMIT 1"), n);
  assert_int_equal(server_fixture_restart(&f, extra), 0);
  uint8_t pk[32];
  master_key(&f, pk);
  for (int i = 1; i <= 3; i++) { /* whatever each worker was told, its receipts verify (a
                                    * worker proves 16 every 10 s: those it proved by then) */
    char name[8];
    snprintf(name, sizeof name, "w%d", i);
    int all = 0, proved = 0;
    for (double until = harness_now() + 40; harness_now() < until; usleep(250000)) {
      receipts(&f, name, &all, &proved);
      if (proved >= 16 || (all && all == proved))
        break;
    }
    assert_true(proved >= 16 || (all && all == proved));
    check_receipts(&f, name, pk, 1);
  }
  assert_int_equal(server_fixture_close(&f), 0);
}

/* ---- cairn audit verify --db: the tree against the chain ---- */

/* cairn audit verify --db on a copy of f's stopped database edited by
 * edit (NULL: none), its key beside it: exit want, the output holding says. */
static void verify_copy(server_fixture *f, const char *name, const char *edit, int want,
                        const char *says) {
  char db[4400], key[4500], from[4400], *out = NULL;
  snprintf(db, sizeof db, "%s/%s.db", f->dir, name);
  snprintf(key, sizeof key, "%s.audit-key", db);
  snprintf(from, sizeof from, "%s.audit-key", f->db);
  files_copy(f->db, db);
  files_copy(from, key);
  if (edit)
    files_sql(db, edit);
  const char *args[] = {"audit", "verify", "--db", db, "--chain-only", NULL};
  assert_int_equal(cli(&out, args), want);
  assert_non_null(strstr(out, says));
  free(out);
}

static void test_verify_db(void **state) {
  (void)state;
  server_fixture f;
  assert_int_equal(server_fixture_open(&f, NULL, 1), 0);
  long long job = submit(&f, "one", 40, "0");
  worker(&f, "w1");
  wait_done(&f, job);
  assert_int_equal(server_fixture_stop(&f, SIGTERM), 0); /* a head signed at the stop */
  long long leaves = files_sql_int(f.db, "SELECT count(*) FROM audit_chain");
  assert_true(leaves >= 80);
  char says[128];
  snprintf(says, sizeof says, "audit log: a tree of %lld leaves, %lld stored nodes and ", leaves,
           leaves / 16 + leaves / 32 + leaves / 64 + leaves / 128);
  verify_copy(&f, "same", NULL, 0, says);
  verify_copy(&f, "node", "UPDATE audit_tree SET hash = zeroblob(32) WHERE level = 4 AND "
              "size = 32", 1, "(audit_tree): the audit tree's node of level 4 ending at leaf "
              "32 is not the one the chain's entries make");
  verify_copy(&f, "gone", "DELETE FROM audit_tree WHERE level = 5 AND size = 64", 1,
              "node of level 5 ending at leaf 64 is missing");
  verify_copy(&f, "more", "INSERT INTO audit_tree(size, level, hash) VALUES (1 << 40, 4, "
              "zeroblob(32))", 1, "nodes, but a tree of");
  verify_copy(&f, "root", "UPDATE audit_sth SET root = zeroblob(32) WHERE id = (SELECT "
              "max(id) FROM audit_sth)", 1, "does not have the root of the chain's first "
              "entries");
  verify_copy(&f, "sig", "UPDATE audit_sth SET signature = zeroblob(64) WHERE id = (SELECT "
              "max(id) FROM audit_sth)", 1, "is not signed by the audit key");
  verify_copy(&f, "big", "INSERT INTO audit_sth(tree_size, timestamp, root, signature) "
              "SELECT tree_size + 5, timestamp, root, signature FROM audit_sth WHERE id = "
              "(SELECT max(id) FROM audit_sth)", 1, "but the tree has");
  assert_int_equal(server_fixture_close(&f), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_verify_db),
    cmocka_unit_test(test_receipts_and_routes),
    cmocka_unit_test(test_rewritten_body),
    cmocka_unit_test(test_removed_entries),
    cmocka_unit_test(test_kill9),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
