/* test_merkle.c — common/merkle.h against the Merkle tree of RFC 9162 §2.1:
 * the roots, inclusion proofs and consistency proofs of the eight-leaf test
 * tree that Certificate Transparency's implementations test with (RFC 6962's
 * reference code and its successors), and, for every tree size up to 64 and
 * a tree of 3,000 leaves, roots and every proof compared with a reference
 * computed here by the RFC's recursive definitions (MTH, PATH, SUBPROOF),
 * not by the code under test; every proof verifies, and every altered proof,
 * root, index or size is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/merkle.h"

#define MAXN 3000u

/* ---- the reference: RFC 9162 §2.1's definitions, recursively, over leaf
 * hashes; no code of merkle.c but the two hash functions of §2.1.1 ---- */

static uint8_t leaves[MAXN][32]; /* leaf hashes */

static uint64_t ref_split(uint64_t n) {
  uint64_t k = 1;
  while (k * 2 < n)
    k *= 2;
  return k;
}

static void ref_mth(uint64_t a, uint64_t b, uint8_t out[32]) { /* MTH(D[a:b]) */
  if (b - a == 1) {
    memcpy(out, leaves[a], 32);
    return;
  }
  uint64_t k = ref_split(b - a);
  uint8_t l[32], r[32], buf[65] = {1};
  ref_mth(a, a + k, l);
  ref_mth(a + k, b, r);
  memcpy(buf + 1, l, 32);
  memcpy(buf + 33, r, 32);
  crypto_hash_sha256(out, buf, sizeof buf);
}

/* PATH(m, D[a:b]) appended to out[*n] */
static void ref_path(uint64_t m, uint64_t a, uint64_t b, cairn_merkle_hash *out, size_t *n) {
  if (b - a <= 1)
    return;
  uint64_t k = ref_split(b - a);
  if (m < k) {
    ref_path(m, a, a + k, out, n);
    ref_mth(a + k, b, out[(*n)++]);
  } else {
    ref_path(m - k, a + k, b, out, n);
    ref_mth(a, a + k, out[(*n)++]);
  }
}

/* SUBPROOF(m, D[a:b], whole) appended to out[*n] */
static void ref_sub(uint64_t m, uint64_t a, uint64_t b, int whole, cairn_merkle_hash *out,
                    size_t *n) {
  if (m == b - a) {
    if (!whole)
      ref_mth(a, b, out[(*n)++]);
    return;
  }
  uint64_t k = ref_split(b - a);
  if (m <= k) {
    ref_sub(m, a, a + k, whole, out, n);
    ref_mth(a + k, b, out[(*n)++]);
  } else {
    ref_sub(m - k, a + k, b, 0, out, n);
    ref_mth(a, a + k, out[(*n)++]);
  }
}

/* ---- the stored tree: nodes by (level, index), written by append ---- */

typedef struct store {
  uint8_t (*node[13])[32]; /* node[level][index]; 2^12 > MAXN */
  size_t puts, gets;
  int fail_at;             /* the put or get that fails (0: none) */
} store;

static int put(void *ctx, unsigned level, uint64_t index, const uint8_t *h) {
  store *s = ctx;
  if (++s->puts == (size_t)s->fail_at)
    return -1;
  assert_true(level < 13 && index < (MAXN >> level) + 2);
  memcpy(s->node[level][index], h, 32);
  return 0;
}

static int get(void *ctx, unsigned level, uint64_t index, uint8_t *out) {
  store *s = ctx;
  s->gets++;
  if (level >= 13 || index > (MAXN >> level) + 1)
    return -1;
  memcpy(out, s->node[level][index], 32);
  return 0;
}

static store *store_new(void) {
  store *s = calloc(1, sizeof *s);
  for (unsigned l = 0; l < 13; l++)
    s->node[l] = calloc((MAXN >> l) + 2, 32);
  return s;
}

static void store_free(store *s) {
  for (unsigned l = 0; l < 13; l++)
    free(s->node[l]);
  free(s);
}

static void hex(const char *h, uint8_t out[32]) {
  size_t n = 0;
  assert_int_equal(sodium_hex2bin(out, 32, h, 64, NULL, &n, NULL), 0);
  assert_int_equal(n, 32);
}

/* The eight leaf inputs of CT's test tree. */
static void ct_leaves(void) {
  static const uint8_t l3[] = {0x20, 0x21}, l4[] = {0x30, 0x31}, l5[] = {0x40, 0x41, 0x42, 0x43};
  uint8_t l6[8], l7[16], b0 = 0x00, b1 = 0x10;
  for (int i = 0; i < 8; i++)
    l6[i] = (uint8_t)(0x50 + i);
  for (int i = 0; i < 16; i++)
    l7[i] = (uint8_t)(0x60 + i);
  cairn_merkle_leaf_hash("", 0, leaves[0]);
  cairn_merkle_leaf_hash(&b0, 1, leaves[1]);
  cairn_merkle_leaf_hash(&b1, 1, leaves[2]);
  cairn_merkle_leaf_hash(l3, sizeof l3, leaves[3]);
  cairn_merkle_leaf_hash(l4, sizeof l4, leaves[4]);
  cairn_merkle_leaf_hash(l5, sizeof l5, leaves[5]);
  cairn_merkle_leaf_hash(l6, sizeof l6, leaves[6]);
  cairn_merkle_leaf_hash(l7, sizeof l7, leaves[7]);
}

/* A tree of the CT leaves followed by n - 8 leaves "leaf i". */
static store *build(uint64_t n, cairn_merkle_edge *e) {
  ct_leaves();
  for (uint64_t i = 8; i < n; i++) {
    char in[32];
    int len = snprintf(in, sizeof in, "leaf %llu", (unsigned long long)i);
    cairn_merkle_leaf_hash(in, (size_t)len, leaves[i]);
  }
  store *s = store_new();
  memset(e, 0, sizeof *e);
  for (uint64_t i = 0; i < n; i++)
    assert_int_equal(cairn_merkle_append(e, leaves[i], put, s), 0);
  return s;
}

static const char *ct_roots[8] = {
  "6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
  "fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125",
  "aeb6bcfe274b70a14fb067a5e5578264db0fa9b51af5e0ba159158f329e06e77",
  "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7",
  "4e3bbb1f7b478dcfe71fb631631519a3bca12c9aefca1612bfce4c13a86264d4",
  "76e67dadbcdf1e10e1b74ddc608abd2f98dfb16fbce75277b5232a127f2087ef",
  "ddb89be403809e325750d3d263cd78929c2942b7942a34b77e122c9594a74c8c",
  "5dc9da79a70659a9ad559cb701ded9a2ab9d823aad2f4960cfe370eff4604328"};

typedef struct ct_proof {
  uint64_t a, b; /* inclusion: leaf index, size; consistency: first, second */
  size_t n;
  const char *h[3];
} ct_proof;

static const ct_proof ct_inclusion[] = {
  {0, 8, 3, {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
  {5, 8, 3, {"bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
  {2, 3, 1, {"fac54203e7cc696cf0dfcb42c92a1d9dbaf70ad9e621f4bd8d98662f00e3c125"}},
  {1, 5, 3, {"6e340b9cffb37a989ca544e6bb780a2c78901d3fb33738768511a30617afa01d",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
  {0, 1, 0, {NULL}},
};

static const ct_proof ct_consistency[] = {
  {1, 8, 3, {"96a296d224f285c67bee93c30f8a309157f0daa35dc5b87e410b78630a09cfc7",
             "5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "6b47aaf29ee3c2af9af889bc1fb9254dabd31177f16232dd6aab035ca39bf6e4"}},
  {6, 8, 3, {"0ebc5d3437fbe2db158b9f126a1d118e308181031d0a949f8dededebc558ef6a",
             "ca854ea128ed050b41b35ffc1b87b8eb2bde461e9e3b5596ece6b9d5975a0ae0",
             "d37ee418976dd95753c1c73862b9398fa2a2cf9b4ff0fdfe8b30cd95209614b7"}},
  {2, 5, 2, {"5f083f0a1a33ca076a95279832580db3e0ef4584bdff1f54c8a360f50de3031e",
             "bc1a0643b12e4d2d7c77918f44e0f4f79a838b6cf9ec5b5c283e1f4d88599e6b"}},
  {1, 1, 0, {NULL}},
};

static void test_ct_vectors(void **state) {
  (void)state;
  cairn_merkle_edge e;
  store *s = build(8, &e);
  uint8_t want[32], got[32];
  for (uint64_t n = 1; n <= 8; n++) {
    hex(ct_roots[n - 1], want);
    assert_int_equal(cairn_merkle_root(n, get, s, got), 0);
    assert_memory_equal(got, want, 32);
  }
  cairn_merkle_edge_root(&e, got);
  assert_memory_equal(got, want, 32);
  cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF];
  size_t n = 0;
  for (size_t i = 0; i < sizeof ct_inclusion / sizeof *ct_inclusion; i++) {
    const ct_proof *p = &ct_inclusion[i];
    assert_int_equal(cairn_merkle_inclusion_proof(p->a, p->b, get, s, path, &n), 0);
    assert_int_equal(n, p->n);
    for (size_t k = 0; k < n; k++) {
      hex(p->h[k], want);
      assert_memory_equal(path[k], want, 32);
    }
    hex(ct_roots[p->b - 1], want);
    assert_true(cairn_merkle_verify_inclusion(p->a, p->b, leaves[p->a], path, n, want));
  }
  for (size_t i = 0; i < sizeof ct_consistency / sizeof *ct_consistency; i++) {
    const ct_proof *p = &ct_consistency[i];
    assert_int_equal(cairn_merkle_consistency_proof(p->a, p->b, get, s, path, &n), 0);
    assert_int_equal(n, p->n);
    for (size_t k = 0; k < n; k++) {
      hex(p->h[k], want);
      assert_memory_equal(path[k], want, 32);
    }
    uint8_t r1[32];
    hex(ct_roots[p->a - 1], r1);
    hex(ct_roots[p->b - 1], want);
    assert_true(cairn_merkle_verify_consistency(p->a, p->b, r1, want, path, n));
  }
  cairn_merkle_empty_root(got); /* RFC 9162 §2.1.1: SHA-256 of nothing */
  hex("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855", want);
  assert_memory_equal(got, want, 32);
  store_free(s);
}

/* Proof p of n hashes for leaf m of size is refused once the root, the
 * leaf, the index or a hash of it is changed, or a hash is cut off or
 * added. (The tree size itself is bound by the signed tree head: a proof may
 * verify against the same root under another claimed size.) */
static void refuse_altered_inclusion(uint64_t m, uint64_t size, cairn_merkle_hash *p, size_t n,
                                     const uint8_t root[32]) {
  uint8_t bad[32];
  memcpy(bad, root, 32);
  bad[7] ^= 1;
  assert_false(cairn_merkle_verify_inclusion(m, size, leaves[m], p, n, bad));
  if ((m ^ 1) < size) /* another leaf, or the same leaf at another index */
    assert_false(cairn_merkle_verify_inclusion(m, size, leaves[m ^ 1], p, n, root));
  if ((m ^ 1) < size && n)
    assert_false(cairn_merkle_verify_inclusion(m ^ 1, size, leaves[m], p, n, root));
  assert_false(cairn_merkle_verify_inclusion(size, size, leaves[m], p, n, root));
  if (n) {
    assert_false(cairn_merkle_verify_inclusion(m, size, leaves[m], p, n - 1, root));
    p[n / 2][31] ^= 0x80;
    assert_false(cairn_merkle_verify_inclusion(m, size, leaves[m], p, n, root));
    p[n / 2][31] ^= 0x80;
  }
  memcpy(p[n], root, 32);
  assert_false(cairn_merkle_verify_inclusion(m, size, leaves[m], p, n + 1, root));
}

static void refuse_altered_consistency(uint64_t a, uint64_t b, cairn_merkle_hash *p, size_t n,
                                       const uint8_t ra[32], const uint8_t rb[32]) {
  uint8_t bad[32];
  memcpy(bad, ra, 32);
  bad[0] ^= 1;
  assert_false(cairn_merkle_verify_consistency(a, b, bad, rb, p, n));
  assert_false(cairn_merkle_verify_consistency(a, b, ra, bad, p, n));
  if (a == b)
    return;
  assert_false(cairn_merkle_verify_consistency(b, a, rb, ra, p, n));
  assert_false(cairn_merkle_verify_consistency(a, b, ra, rb, p, n - 1));
  p[n - 1][3] ^= 0x10;
  assert_false(cairn_merkle_verify_consistency(a, b, ra, rb, p, n));
  p[n - 1][3] ^= 0x10;
}

/* Every root, inclusion proof and consistency proof of sizes 1..max,
 * against the reference. */
static void check_all(uint64_t max, uint64_t step) {
  cairn_merkle_edge e;
  store *s = build(max, &e);
  static cairn_merkle_hash got[CAIRN_MERKLE_MAX_PROOF + 1], want[CAIRN_MERKLE_MAX_PROOF + 1];
  for (uint64_t size = 1; size <= max; size += (size < 64 ? 1 : step)) {
    uint8_t root[32], r[32];
    ref_mth(0, size, root);
    assert_int_equal(cairn_merkle_root(size, get, s, r), 0);
    assert_memory_equal(r, root, 32);
    cairn_merkle_edge le;
    assert_int_equal(cairn_merkle_edge_load(&le, size, get, s), 0);
    cairn_merkle_edge_root(&le, r);
    assert_memory_equal(r, root, 32);
    for (uint64_t m = 0; m < size; m += (size <= 64 ? 1 : 97)) {
      size_t n = 0, wn = 0;
      ref_path(m, 0, size, want, &wn);
      assert_int_equal(cairn_merkle_inclusion_proof(m, size, get, s, got, &n), 0);
      assert_int_equal(n, wn);
      assert_memory_equal(got, want, n * 32);
      assert_true(cairn_merkle_verify_inclusion(m, size, leaves[m], got, n, root));
      refuse_altered_inclusion(m, size, got, n, root);
    }
    for (uint64_t a = 1; a <= size; a += (size <= 64 ? 1 : 89)) {
      size_t n = 0, wn = 0;
      ref_sub(a, 0, size, 1, want, &wn);
      assert_int_equal(cairn_merkle_consistency_proof(a, size, get, s, got, &n), 0);
      assert_int_equal(n, wn);
      assert_memory_equal(got, want, n * 32);
      uint8_t ra[32];
      ref_mth(0, a, ra);
      assert_true(cairn_merkle_verify_consistency(a, size, ra, root, got, n));
      refuse_altered_consistency(a, size, got, n, ra, root);
    }
  }
  store_free(s);
}

static void test_every_size_to_64(void **state) {
  (void)state;
  check_all(64, 1);
}

static void test_thousands(void **state) {
  (void)state;
  check_all(MAXN, 331);
}

/* Appends read nothing and write O(log n): 2n - popcount(n) nodes for n
 * leaves; proofs read O(log n) nodes; a failed put leaves the edge as it was. */
static void test_costs_and_failures(void **state) {
  (void)state;
  cairn_merkle_edge e;
  store *s = build(MAXN, &e);
  assert_int_equal(s->gets, 0);
  assert_int_equal(s->puts, 2 * MAXN - (size_t)__builtin_popcountll(MAXN));
  cairn_merkle_hash p[CAIRN_MERKLE_MAX_PROOF];
  size_t n;
  s->gets = 0;
  assert_int_equal(cairn_merkle_inclusion_proof(1234, MAXN, get, s, p, &n), 0);
  assert_true(s->gets <= 2 * 12 + 2);
  s->gets = 0;
  assert_int_equal(cairn_merkle_consistency_proof(1001, MAXN, get, s, p, &n), 0);
  assert_true(s->gets <= 2 * 12 + 2);
  s->fail_at = (int)s->puts + 3; /* the second put of the second append */
  uint8_t leaf[32] = {0};
  assert_int_equal(cairn_merkle_append(&e, leaf, put, s), 0); /* leaf 3000: one put */
  cairn_merkle_edge before = e;
  assert_int_equal(cairn_merkle_append(&e, leaf, put, s), -1); /* 3001 completes a pair */
  assert_memory_equal(&e, &before, sizeof e);
  /* bad arguments */
  assert_int_equal(cairn_merkle_inclusion_proof(MAXN, MAXN, get, s, p, &n), -1);
  assert_int_equal(cairn_merkle_consistency_proof(0, 5, get, s, p, &n), -1);
  assert_int_equal(cairn_merkle_consistency_proof(6, 5, get, s, p, &n), -1);
  uint8_t r[32];
  assert_int_equal(cairn_merkle_subtree(3, 7, get, s, r), -1); /* not a subtree */
  assert_int_equal(cairn_merkle_root(MAXN + 4096, get, s, r), -1); /* a read fails */
  store_free(s);
}

int main(void) {
  if (sodium_init() < 0)
    return 1;
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_ct_vectors),
    cmocka_unit_test(test_every_size_to_64),
    cmocka_unit_test(test_thousands),
    cmocka_unit_test(test_costs_and_failures),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
