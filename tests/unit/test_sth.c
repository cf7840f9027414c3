/* test_sth.c — common/sth.h: a signed tree head's 60 signed bytes, laid out
 * here by hand from the format ("cairn-sth-v1", size and timestamp as 8
 * bytes big-endian, the root), signed with RFC 8032's first Ed25519 test
 * key (whose own test vector is checked first); the JSON of heads, proofs
 * and receipts read back, every malformed member refused by name; a
 * receipt verified, and refused once its head, path, leaf or index is
 * altered. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sodium.h>
#include <stdio.h>
#include <string.h>

#include "common/sth.h"

static void unhex(const char *h, uint8_t *out, size_t n) {
  for (size_t i = 0; i < n; i++) {
    unsigned v;
    sscanf(h + 2 * i, "%2x", &v);
    out[i] = (uint8_t)v;
  }
}

/* RFC 8032 §7.1, TEST 1: the empty message. */
static const char *const seed_hex =
  "9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60";
static const char *const pk_hex =
  "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a";
static const char *const sig_hex =
  "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e065224901555fb8821590a33bacc61e39701cf9b4"
  "6bd25bf5f0595bbe24655141438e7a100b";

static void keys(uint8_t sk[64], uint8_t pk[32]) {
  uint8_t seed[32], want[32];
  unhex(seed_hex, seed, 32);
  unhex(pk_hex, want, 32);
  assert_int_equal(crypto_sign_seed_keypair(pk, sk, seed), 0);
  assert_memory_equal(pk, want, 32);
}

static void test_rfc8032(void **state) {
  (void)state;
  uint8_t sk[64], pk[32], sig[64], want[64];
  keys(sk, pk);
  unhex(sig_hex, want, 64);
  crypto_sign_detached(sig, NULL, (const unsigned char *)"", 0, sk);
  assert_memory_equal(sig, want, 64);
}

static cairn__sth head(void) {
  cairn__sth h = {.tree_size = 0x0102030405060708ULL, .timestamp = 1795945146008LL};
  for (int i = 0; i < 32; i++)
    h.root[i] = (uint8_t)(0xa0 + i);
  return h;
}

static void test_message_and_signature(void **state) {
  (void)state;
  uint8_t sk[64], pk[32], msg[CAIRN_STH_MSG], want[60], sig[64];
  keys(sk, pk);
  cairn__sth h = head();
  cairn__sth_message(&h, msg);
  memcpy(want, "cairn-sth-v1", 12);
  const uint8_t size[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  const uint8_t ts[8] = {0x00, 0x00, 0x01, 0xa2, 0x26, 0xac, 0x26, 0x98}; /* 1795945146008 */
  memcpy(want + 12, size, 8);
  memcpy(want + 20, ts, 8);
  memcpy(want + 28, h.root, 32);
  assert_memory_equal(msg, want, 60);
  cairn__sth_sign(&h, sk);
  crypto_sign_detached(sig, NULL, want, sizeof want, sk);
  assert_memory_equal(h.sig, sig, 64);
  assert_true(cairn__sth_verify(&h, pk));
  cairn__sth bad = h;
  bad.tree_size--;
  assert_false(cairn__sth_verify(&bad, pk));
  bad = h;
  bad.root[31] ^= 1;
  assert_false(cairn__sth_verify(&bad, pk));
  bad = h;
  bad.sig[0] ^= 1;
  assert_false(cairn__sth_verify(&bad, pk));
  pk[0] ^= 1;
  assert_false(cairn__sth_verify(&h, pk));
}

static void test_json(void **state) {
  (void)state;
  uint8_t sk[64], pk[32];
  keys(sk, pk);
  cairn__sth h = head(), back;
  h.tree_size = 42;
  cairn__sth_sign(&h, sk);
  json_t *o = cairn__sth_json(&h);
  char why[200];
  assert_int_equal(cairn__sth_parse(o, &back, why, sizeof why), 0);
  assert_true(cairn__sth_same(&h, &back));
  assert_int_equal(json_integer_value(json_object_get(o, "tree_size")), 42);
  assert_int_equal(json_string_length(json_object_get(o, "root_hash")), 44);
  assert_int_equal(json_string_length(json_object_get(o, "signature")), 88);
  static const struct {
    const char *key, *value, *named;
  } bad[] = {
    {"tree_size", "-1", "\"tree_size\""},           {"tree_size", "\"3\"", "\"tree_size\""},
    {"timestamp", "1.5", "\"timestamp\""},          {"root_hash", "\"AAAA\"", "\"root_hash\""},
    {"root_hash", "7", "\"root_hash\""},            {"signature", "\"!!\"", "\"signature\""},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    json_t *c = json_deep_copy(o);
    json_object_set_new(c, bad[i].key, json_loads(bad[i].value, JSON_DECODE_ANY, NULL));
    assert_int_equal(cairn__sth_parse(c, &back, why, sizeof why), -1);
    assert_non_null(strstr(why, bad[i].named));
    json_decref(c);
  }
  json_decref(o);
  cairn_merkle_hash p[3], q[CAIRN_MERKLE_MAX_PROOF];
  size_t n = 0;
  memset(p, 7, sizeof p);
  json_t *a = cairn__proof_json(p, 3);
  assert_int_equal(cairn__proof_parse(a, q, &n), 0);
  assert_int_equal(n, 3);
  assert_memory_equal(p, q, sizeof p);
  json_array_append_new(a, json_string("AAAA"));
  assert_int_equal(cairn__proof_parse(a, q, &n), -1);
  json_decref(a);
}

/* A tree of two leaves, a receipt of leaf 1 proved in it. */
static void test_receipt(void **state) {
  (void)state;
  uint8_t sk[64], pk[32];
  keys(sk, pk);
  cairn__receipt r = {.index = 7, .leaf_index = 1, .proved = 1, .npath = 1};
  uint8_t l0[32], buf[65] = {1};
  cairn_merkle_leaf_hash("a", 1, l0);
  cairn_merkle_leaf_hash("b", 1, r.leaf_hash);
  memcpy(buf + 1, l0, 32);
  memcpy(buf + 33, r.leaf_hash, 32);
  crypto_hash_sha256(r.sth.root, buf, sizeof buf); /* MTH of the two leaves */
  memcpy(r.path[0], l0, 32);
  r.sth.tree_size = 2;
  r.sth.timestamp = 1000;
  cairn__sth_sign(&r.sth, sk);
  char why[300];
  assert_true(cairn__receipt_verify(&r, pk, why, sizeof why));
  json_t *o = cairn__receipt_json(&r);
  cairn__receipt back;
  assert_int_equal(cairn__receipt_parse(o, &back, why, sizeof why), 0);
  assert_int_equal(back.index, 7);
  assert_true(cairn__receipt_verify(&back, pk, why, sizeof why));
  json_decref(o);
  cairn__receipt x = r;
  x.leaf_index = 0;
  assert_false(cairn__receipt_verify(&x, pk, why, sizeof why));
  assert_non_null(strstr(why, "does not lead to the root"));
  x = r;
  x.sth.timestamp++;
  assert_false(cairn__receipt_verify(&x, pk, why, sizeof why));
  assert_non_null(strstr(why, "signature"));
  x = r;
  x.path[0][0] ^= 1;
  assert_false(cairn__receipt_verify(&x, pk, why, sizeof why));
  x = r;
  x.proved = 0;
  assert_false(cairn__receipt_verify(&x, pk, why, sizeof why));
  assert_non_null(strstr(why, "no inclusion proof yet"));
  /* the wire's receipt: two members; a file's: a version, head and path together */
  json_t *w = json_loads("{\"leaf_index\": 3, \"leaf_hash\": "
                         "\"AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\"}", 0, NULL);
  assert_int_equal(cairn__receipt_parse(w, &back, why, sizeof why), 0);
  assert_false(back.proved);
  json_object_set_new(w, "cairn_receipt", json_integer(2));
  assert_int_equal(cairn__receipt_parse(w, &back, why, sizeof why), -1);
  assert_non_null(strstr(why, "\"cairn_receipt\""));
  json_object_set_new(w, "cairn_receipt", json_integer(1));
  json_object_set_new(w, "audit_path", json_array());
  assert_int_equal(cairn__receipt_parse(w, &back, why, sizeof why), -1);
  assert_non_null(strstr(why, "go together"));
  json_object_del(w, "audit_path");
  json_object_set_new(w, "leaf_index", json_integer(-4));
  assert_int_equal(cairn__receipt_parse(w, &back, why, sizeof why), -1);
  assert_non_null(strstr(why, "\"leaf_index\""));
  json_decref(w);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rfc8032),
    cmocka_unit_test(test_message_and_signature),
    cmocka_unit_test(test_json),
    cmocka_unit_test(test_receipt),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
