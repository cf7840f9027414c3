/* test_audit_tree.c — the audit log's storage (server/store/tree.h) on real
 * SQLite files, driven as the journal's commit thread drives it: entries
 * appended with their leaves in the entries' transactions, heads signed at
 * a checkpoint. Every root, head and proof the log gives is checked against
 * a reference computed here from the chain's bodies by RFC 9162's recursive
 * MTH (not by common/merkle.c's append or proofs), and each head's
 * signature against the audit key. Then the tree's start-up: a database
 * whose chain has no tree (made before 0028, or written with the tree off)
 * gets it, in several transactions past CAIRN_TREE_BUILD_CHUNK leaves; a
 * tree with its nodes deleted, or larger than its chain, is built again;
 * a chain with a hole is refused, naming the missing entry; and the reader
 * refuses sizes never signed, naming them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sodium.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/merkle.h"
#include "common/sth.h"
#include "server/store/chain.h"
#include "server/store/store.h"
#include "server/store/tree.h"
#include "tests/support/files.h"
#include "tests/support/harness.h"

static int count_cb(void *ud, uint64_t leaf, const void *body, size_t len) {
  (void)leaf, (void)body, (void)len;
  ++*(int *)ud;
  return 0;
}

typedef struct fx {
  char dir[256], db[300], key[320];
  cairn__store *s;
  cairn__chain *ch;
  cairn__centry e;
} fx;

static int setup(void **state) {
  fx *f = calloc(1, sizeof *f);
  harness_tmpdir(f->dir, sizeof f->dir);
  snprintf(f->db, sizeof f->db, "%s/t.db", f->dir);
  snprintf(f->key, sizeof f->key, "%s.audit-key", f->db);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fx *f = *state;
  cairn__chain_close(f->ch);
  cairn__store_close(f->s);
  harness_rmtree(f->dir);
  free(f);
  return 0;
}

/* Opens the store and the chain (tree: with the tree), loaded as the
 * journal loads it; the load's status. */
static cairn_status open_log(fx *f, int tree, cairn_error *err) {
  cairn__chain_close(f->ch);
  cairn__store_close(f->s);
  f->ch = NULL;
  f->s = cairn__store_open(f->db, 0, err);
  assert_non_null(f->s);
  f->ch = cairn__chain_open(f->key, tree, NULL, err);
  assert_non_null(f->ch);
  return cairn__chain_load(f->ch, f->s, err);
}

/* n more entries (quarantine notes of varying volunteers), in transactions
 * of up to 7, then a checkpoint (force: at close). */
static void append(fx *f, int n, int force) {
  cairn_error err = {0};
  for (int i = 0; i < n; i += 7) {
    assert_int_equal(cairn__store_begin(f->s, &err), CAIRN_OK);
    for (int k = i; k < n && k < i + 7; k++) {
      cairn__centry_begin(&f->e, CAIRN_CK_QUARANTINE, k % 13 + 1, 0, 0);
      cairn__centry_i64(&f->e, k % 13 + 1);
      cairn__centry_i64(&f->e, k & 1);
      assert_int_equal(cairn__chain_append(f->ch, f->s, &f->e, &err), CAIRN_OK);
    }
    assert_int_equal(cairn__store_commit(f->s, &err), CAIRN_OK);
    cairn__chain_committed(f->ch);
  }
  if (cairn__chain_checkpoint_due(f->ch, 0, force)) {
    assert_int_equal(cairn__store_begin(f->s, &err), CAIRN_OK);
    assert_int_equal(cairn__chain_checkpoint(f->ch, f->s, 0, force, &err), CAIRN_OK);
    assert_int_equal(cairn__store_commit(f->s, &err), CAIRN_OK);
  }
}

/* ---- the reference: the leaves from the database, MTH by recursion ---- */

static uint8_t (*leaves)[32];
static uint64_t nleaves;

static void read_leaves(const char *db) {
  sqlite3 *h = NULL;
  sqlite3_stmt *q = NULL;
  assert_int_equal(sqlite3_open(db, &h), SQLITE_OK);
  assert_int_equal(sqlite3_prepare_v2(h, "SELECT seq, body FROM audit_chain ORDER BY seq", -1, &q,
                                      NULL), SQLITE_OK);
  free(leaves);
  leaves = NULL;
  nleaves = 0;
  size_t cap = 0;
  while (sqlite3_step(q) == SQLITE_ROW) {
    assert_int_equal(sqlite3_column_int64(q, 0), (int64_t)nleaves + 1);
    if (nleaves == cap) {
      cap = cap ? 2 * cap : 1024;
      leaves = realloc(leaves, cap * 32);
    }
    uint8_t zero = 0;
    crypto_hash_sha256_state c;
    crypto_hash_sha256_init(&c);
    crypto_hash_sha256_update(&c, &zero, 1);
    crypto_hash_sha256_update(&c, sqlite3_column_blob(q, 1), (size_t)sqlite3_column_bytes(q, 1));
    crypto_hash_sha256_final(&c, leaves[nleaves++]);
  }
  sqlite3_finalize(q);
  sqlite3_close(h);
}

static void ref_mth(uint64_t a, uint64_t b, uint8_t out[32]) {
  if (b - a == 1) {
    memcpy(out, leaves[a], 32);
    return;
  }
  uint64_t k = 1;
  while (k * 2 < b - a)
    k *= 2;
  uint8_t buf[65] = {1};
  ref_mth(a, a + k, buf + 1);
  ref_mth(a + k, b, buf + 33);
  crypto_hash_sha256(out, buf, sizeof buf);
}

/* The audit key's public half, from DB.audit-key. */
static void public_key(const char *key, uint8_t pk[32]) {
  FILE *fp = fopen(key, "r");
  char hex[129] = {0};
  assert_non_null(fp);
  assert_int_equal(fread(hex, 1, 128, fp), 128);
  fclose(fp);
  uint8_t sk[64];
  assert_int_equal(cairn__chain_unhex(hex, sk, 64), 0);
  memcpy(pk, sk + 32, 32);
}

/* The reader's newest head: signed by the audit key, of size want, with the
 * reference root of the chain's first want leaves. */
static cairn__sth check_newest(fx *f, uint64_t want) {
  cairn_error err = {0};
  cairn__tree_reader *r = cairn__tree_reader_open(f->db, &err);
  assert_non_null(r);
  cairn__sth h;
  uint8_t pk[32], root[32];
  assert_int_equal(cairn__tree_newest(r, &h, &err), CAIRN_OK);
  public_key(f->key, pk);
  read_leaves(f->db);
  assert_int_equal(h.tree_size, want);
  assert_true(cairn__sth_verify(&h, pk));
  ref_mth(0, want, root);
  assert_memory_equal(h.root, root, 32);
  h.timestamp++;
  assert_false(cairn__sth_verify(&h, pk));
  h.timestamp--;
  cairn__tree_reader_close(r);
  return h;
}

/* Every leaf's inclusion proof in head h verifies (a sample past 300). */
static void check_proofs(fx *f, const cairn__sth *h) {
  cairn_error err = {0};
  cairn__tree_reader *r = cairn__tree_reader_open(f->db, &err);
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t n = 0;
  uint64_t step = h->tree_size > 300 ? h->tree_size / 97 : 1;
  for (uint64_t i = 0; i < h->tree_size; i += step) {
    assert_int_equal(cairn__tree_inclusion(r, i, h->tree_size, path, &n, &err), CAIRN_OK);
    assert_true(cairn_merkle_verify_inclusion(i, h->tree_size, leaves[i], path, n, h->root));
  }
  cairn__tree_reader_close(r);
}

static void test_heads_and_proofs(void **state) {
  fx *f = *state;
  cairn_error err = {0};
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK);
  append(f, 5, 0); /* the first head is signed at once */
  cairn__sth h5 = check_newest(f, 5);
  append(f, 3, 0); /* not 10 s later: no new head */
  check_newest(f, 5);
  append(f, 92, 1); /* at close: signed whatever the time */
  cairn__sth h100 = check_newest(f, 100);
  check_proofs(f, &h100);
  check_proofs(f, &h5);
  /* consistency of the two heads; sizes never signed are refused by name */
  cairn__tree_reader *r = cairn__tree_reader_open(f->db, &err);
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t n = 0;
  assert_int_equal(cairn__tree_consistency(r, 5, 100, path, &n, &err), CAIRN_OK);
  assert_true(cairn_merkle_verify_consistency(5, 100, h5.root, h100.root, path, n));
  assert_int_equal(cairn__tree_consistency(r, 6, 100, path, &n, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "\"first\": no tree head of size 6 was ever signed"));
  assert_int_equal(cairn__tree_consistency(r, 5, 99, path, &n, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "\"second\": no tree head of size 99"));
  assert_int_equal(cairn__tree_inclusion(r, 3, 8, path, &n, &err), CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "\"tree_size\": no tree head of size 8"));
  assert_int_equal(cairn__tree_inclusion(r, 100, 100, path, &n, &err), CAIRN_EINVAL);
  /* entries stop at the newest head; one past it is refused */
  uint64_t last = 0;
  int count = 0;
  assert_int_equal(cairn__tree_entries(r, 90, 200, count_cb, &count, &last, &err), CAIRN_OK);
  assert_int_equal(last, 99);
  assert_int_equal(count, 10);
  assert_int_equal(cairn__tree_entries(r, 100, 100, count_cb, &count, &last, &err),
                   CAIRN_EINVAL);
  assert_non_null(strstr(err.text, "\"start\": leaf 100 is past the newest signed tree head"));
  cairn__tree_reader_close(r);
  /* nodes stored: only levels >= CAIRN_TREE_LOW, about one per 2^(LOW - 1) leaves */
  char sql[200];
  snprintf(sql, sizeof sql, "SELECT COUNT(*) FROM audit_tree WHERE level < %d", CAIRN_TREE_LOW);
  assert_int_equal(files_sql_int(f->db, sql), 0);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM audit_tree"),
                   100 / 16 + 100 / 32 + 100 / 64);
}

/* A chain written without its tree, then with it: the tree is built (here
 * in two transactions of CAIRN_TREE_BUILD_CHUNK leaves and a third), and
 * equals the one kept from the start. Deleting the tree's nodes, or making
 * it larger than its chain, builds it again. */
static void test_build_at_start(void **state) {
  fx *f = *state;
  cairn_error err = {0};
  uint64_t n = 2 * CAIRN_TREE_BUILD_CHUNK + 1234;
  assert_int_equal(open_log(f, 0, &err), CAIRN_OK);
  append(f, (int)n, 1);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM audit_sth"), 0);
  double t0 = harness_now();
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK); /* the build */
  fprintf(stderr, "built %llu leaves in %.2f s\n", (unsigned long long)n, harness_now() - t0);
  assert_int_equal(cairn__tree_size(cairn__chain_tree(f->ch)), n);
  append(f, 0, 1); /* the head of the built tree */
  cairn__sth h = check_newest(f, n);
  check_proofs(f, &h);
  long long nodes = files_sql_int(f->db, "SELECT COUNT(*) FROM audit_tree");
  /* its nodes deleted: built again, the same */
  files_sql(f->db, "DELETE FROM audit_tree");
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM audit_tree"), nodes);
  append(f, 0, 1);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM audit_sth"), 1); /* same head */
  /* larger than its chain (entries removed at the end): built again over
   * what the chain holds, a smaller tree and a new head */
  files_sql(f->db, "DELETE FROM audit_chain WHERE seq > 1000");
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK);
  append(f, 0, 1);
  check_newest(f, 1000);
  append(f, 10, 1);
  check_newest(f, 1010);
}

/* A chain with a hole cannot have a tree: the load says which entry is
 * missing. A kill -9 in a build (its size behind the chain) resumes. */
static void test_hole_and_resume(void **state) {
  fx *f = *state;
  cairn_error err = {0};
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK);
  append(f, 300, 1);
  /* a build killed at leaf 40: its size noted, its nodes beyond still there */
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_tree_size'"), 0);
  files_sql(f->db, "INSERT INTO meta(key, value) VALUES ('audit_tree_size', '40')");
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK); /* resumed from leaf 40 */
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_tree_size'"), 0);
  append(f, 1, 1);
  cairn__sth h = check_newest(f, 301);
  check_proofs(f, &h);
  files_sql(f->db, "DELETE FROM audit_chain WHERE seq = 77; DELETE FROM audit_tree; "
                     "DELETE FROM meta WHERE key = 'audit_tree_size'");
  assert_int_equal(open_log(f, 1, &err), CAIRN_EIO);
  assert_non_null(strstr(err.text, "the audit chain has no entry 77"));
}

/* On, off, on: the chain written with the tree off is noted where the tree
 * stopped and caught up from there; no size is noted while the tree keeps
 * up. */
static void test_off_and_on(void **state) {
  fx *f = *state;
  cairn_error err = {0};
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK);
  append(f, 100, 1);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_tree_size'"), 0);
  assert_int_equal(open_log(f, 0, &err), CAIRN_OK);
  assert_int_equal(files_sql_int(f->db, "SELECT CAST(value AS INTEGER) FROM meta WHERE key = "
                                  "'audit_tree_size'"), 100);
  append(f, 57, 1);
  assert_int_equal(open_log(f, 1, &err), CAIRN_OK);
  assert_int_equal(cairn__tree_size(cairn__chain_tree(f->ch)), 157);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_tree_size'"), 0);
  append(f, 3, 1);
  cairn__sth h = check_newest(f, 160);
  check_proofs(f, &h);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_heads_and_proofs, setup, teardown),
    cmocka_unit_test_setup_teardown(test_build_at_start, setup, teardown),
    cmocka_unit_test_setup_teardown(test_hole_and_resume, setup, teardown),
    cmocka_unit_test_setup_teardown(test_off_and_on, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
