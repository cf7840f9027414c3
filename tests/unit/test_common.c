/* test_common.c — SHA-256 and HMAC-SHA256 vectors, peer grants, capped buffers, dag construction/cycles, ATAF phi#. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/buf.h"
#include "common/grant.h"
#include "common/sha256.h"
#include "plan/ataf.h"
#include "plan/dag.h"
#include "plan/policy.h"

static void test_sha256_vectors(void **state) {
  (void)state;
  char hex[65];
  cairn__sha256_hex("", 0, hex);
  assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  cairn__sha256_hex("abc", 3, hex);
  assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  const char *m = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
  cairn__sha256_hex(m, strlen(m), hex);
  assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  /* incremental in odd pieces equals one shot: one million 'a' */
  cairn__sha256 c;
  cairn__sha256_init(&c);
  char a[997];
  memset(a, 'a', sizeof a);
  size_t left = 1000000;
  while (left) {
    size_t k = left < sizeof a ? left : sizeof a;
    cairn__sha256_update(&c, a, k);
    left -= k;
  }
  cairn__sha256_final_hex(&c, hex);
  assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  assert_true(cairn__sha256_valid_hex(hex));
  hex[3] = 'G';
  assert_false(cairn__sha256_valid_hex(hex));
}

static void hmac_hex(const void *k, size_t kl, const char *m, char hex[65]) {
  uint8_t raw[32];
  cairn__hmac_sha256(k, kl, m, strlen(m), raw);
  for (int i = 0; i < 32; i++)
    sprintf(hex + 2 * i, "%02x", raw[i]);
}

/* RFC 4231, test cases 1, 2 and 6 (a key longer than a block). */
static void test_hmac_vectors(void **state) {
  (void)state;
  char hex[65];
  uint8_t k1[20], k6[131];
  memset(k1, 0x0b, sizeof k1);
  memset(k6, 0xaa, sizeof k6);
  hmac_hex(k1, sizeof k1, "Hi There", hex);
  assert_string_equal(hex, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
  hmac_hex("Jefe", 4, "what do ya want for nothing?", hex);
  assert_string_equal(hex, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
  hmac_hex(k6, sizeof k6, "Test Using Larger Than Block-Size Key - Hash Key First", hex);
  assert_string_equal(hex, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* A grant opens one file to one downloader, under one holder's key, until
 * it expires; anything else is refused with the reason. */
static void test_grants(void **state) {
  (void)state;
  char secret[65], other[65], key[65], key2[65], key_next[65], g[CAIRN_GRANT_MAX + 1];
  const char *sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const char *sha2 = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
  cairn__grant_secret("admin-token-of-this-master", secret);
  cairn__grant_secret("admin-token-of-another-master", other);
  assert_true(cairn__sha256_valid_hex(secret));
  assert_string_not_equal(secret, other);
  cairn__grant_key(secret, 7, 0, key);
  cairn__grant_key(secret, 8, 0, key2);
  cairn__grant_key(secret, 7, 1, key_next);
  assert_string_not_equal(key, key2);
  assert_string_not_equal(key, key_next);
  assert_int_equal(cairn__grant_make(key, sha, 42, 1000, g), 0);
  int64_t who = 0;
  assert_int_equal(cairn__grant_check(key, sha, g, 1000, &who), CAIRN_GRANT_OK);
  assert_int_equal(who, 42);
  assert_int_equal(cairn__grant_check(key, sha, g, 1000 + CAIRN_GRANT_SKEW_SECONDS, NULL),
                   CAIRN_GRANT_OK);
  assert_int_equal(cairn__grant_check(key, sha, g, 1001 + CAIRN_GRANT_SKEW_SECONDS, NULL),
                   CAIRN_GRANT_EXPIRED);
  assert_int_equal(cairn__grant_check(key, sha2, g, 1000, NULL), CAIRN_GRANT_WRONG);
  assert_int_equal(cairn__grant_check(key2, sha, g, 1000, NULL), CAIRN_GRANT_WRONG);
  assert_int_equal(cairn__grant_check(key_next, sha, g, 1000, NULL), CAIRN_GRANT_WRONG);
  /* another downloader or a later expiry with the same MAC */
  char forged[CAIRN_GRANT_MAX + 1];
  snprintf(forged, sizeof forged, "43%s", g + 2);
  assert_int_equal(cairn__grant_check(key, sha, forged, 1000, NULL), CAIRN_GRANT_WRONG);
  snprintf(forged, sizeof forged, "42.9000%s", strchr(g + 3, '.'));
  assert_int_equal(cairn__grant_check(key, sha, forged, 1000, NULL), CAIRN_GRANT_WRONG);
  /* malformed */
  const char *bad[] = {"", "42", "42.1000", "42.1000.", "+42.1000.x", "042.1000.x", "0.1000.x",
                       "42.-1.x", "1234567890123456789.1.x", " 42.1000.x"};
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    char b[CAIRN_GRANT_MAX + 70];
    snprintf(b, sizeof b, "%s", bad[i]);
    char *x = strstr(b, ".x");
    if (x)
      snprintf(x + 1, 65, "%s", g + strlen(g) - 64);
    assert_int_equal(cairn__grant_check(key, sha, b, 1000, NULL), CAIRN_GRANT_MALFORMED);
  }
  char upper[CAIRN_GRANT_MAX + 1];
  snprintf(upper, sizeof upper, "%s", g);
  for (char *p = strrchr(upper, '.'); *p; p++)
    if (*p >= 'a' && *p <= 'f')
      *p = (char)(*p - 32);
  assert_int_equal(cairn__grant_check(key, sha, upper, 1000, NULL), CAIRN_GRANT_MALFORMED);
  assert_int_equal(cairn__grant_check(key, sha, NULL, 1000, NULL), CAIRN_GRANT_MALFORMED);
  assert_int_equal(cairn__grant_make(key, "nope", 42, 1000, g), -1);
  assert_int_equal(cairn__grant_make(key, sha, 0, 1000, g), -1);
}

static void test_buf_cap(void **state) {
  (void)state;
  cairn__buf b;
  cairn__buf_init(&b, 10);
  assert_int_equal(cairn__buf_append(&b, "hello", 5), 0);
  assert_int_equal(cairn__buf_append(&b, "world", 5), 0);
  assert_int_equal(cairn__buf_append(&b, "!", 1), -1);
  assert_int_equal(b.len, 10);
  assert_string_equal(b.data, "helloworld");
  cairn__buf_free(&b);
}

static void test_dag_cycle(void **state) {
  (void)state;
  cairn_error err = {0};
  cairn__edge e[] = {{0, 1}, {1, 2}, {2, 3}, {3, 1}, {0, 4}};
  cairn__dag *d = cairn__dag_build(5, e, 5, &err);
  assert_non_null(d);
  uint32_t order[5], bad = 99;
  assert_int_equal(cairn__dag_topo_order(d, order, &bad), -1);
  assert_true(bad >= 1 && bad <= 3);
  cairn__dag_free(d);
  cairn__edge ok[] = {{0, 1}, {0, 2}, {1, 3}, {2, 3}};
  d = cairn__dag_build(4, ok, 4, &err);
  assert_int_equal(cairn__dag_topo_order(d, order, &bad), 0);
  assert_int_equal(order[0], 0);
  assert_int_equal(order[3], 3);
  assert_int_equal(cairn__dag_nparents(d, 3), 2);
  assert_int_equal(cairn__dag_nchildren(d, 0), 2);
  cairn__dag_free(d);
  cairn__edge dup[] = {{0, 1}, {0, 1}};
  assert_null(cairn__dag_build(2, dup, 2, &err));
  assert_int_equal(err.status, CAIRN_EINVAL);
  cairn__edge out[] = {{0, 7}};
  assert_null(cairn__dag_build(2, out, 1, &err));
}

static void test_phisharp_roundtrip(void **state) {
  (void)state;
  cairn_error err;
  uint64_t n, x, t;
  /* group 0: odd numbers; group 1: rows 2,3 on 2*(odd) residues 1,3 mod 4 */
  assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHISHARP, 1, 1, &n, &err), CAIRN_OK);
  assert_int_equal(n, 1);
  cairn__ataf_index(CAIRN_ATAF_PHISHARP, 1, 3, &n, &err);
  assert_int_equal(n, 5);
  cairn__ataf_index(CAIRN_ATAF_PHISHARP, 2, 1, &n, &err);
  assert_int_equal(n, 2);
  cairn__ataf_index(CAIRN_ATAF_PHISHARP, 3, 2, &n, &err);
  assert_int_equal(n, 14);
  for (x = 1; x <= 300; x++)
    for (t = 1; t <= 300; t++) {
      uint64_t rx, rt;
      assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHISHARP, x, t, &n, &err), CAIRN_OK);
      assert_int_equal(cairn__ataf_invert(CAIRN_ATAF_PHISHARP, n, &rx, &rt, &err), CAIRN_OK);
      assert_int_equal(rx, x);
      assert_int_equal(rt, t);
    }
  assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHISHARP, 1, UINT64_MAX / 2, &n, &err),
                   CAIRN_EOVERFLOW);
  assert_int_equal(cairn__ataf_index(CAIRN_ATAF_PHISHARP, 0, 1, &n, &err), CAIRN_EINVAL);
}

static void test_fifo_policy(void **state) {
  (void)state;
  cairn__edge e[] = {{0, 1}};
  cairn__dag *d = cairn__dag_build(3, e, 1, NULL);
  const cairn__policy_ops *p = cairn__policy_find("fifo");
  assert_non_null(p);
  void *s = p->create(d, 0);
  uint32_t v;
  assert_int_equal(p->pick(s, &v), -1);
  p->ready(s, 2);
  p->ready(s, 0);
  assert_int_equal(p->pick(s, &v), 0);
  assert_int_equal(v, 2);
  p->ready(s, 2); /* back after a lost lease: goes last */
  assert_int_equal(p->pick(s, &v), 0);
  assert_int_equal(v, 0);
  assert_int_equal(p->pick(s, &v), 0);
  assert_int_equal(v, 2);
  p->destroy(s);
  cairn__dag_free(d);
  assert_null(cairn__policy_find("nope"));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_sha256_vectors),
    cmocka_unit_test(test_hmac_vectors),
    cmocka_unit_test(test_grants),
    cmocka_unit_test(test_buf_cap),
    cmocka_unit_test(test_dag_cycle),
    cmocka_unit_test(test_phisharp_roundtrip),
    cmocka_unit_test(test_fifo_policy),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
