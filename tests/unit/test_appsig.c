/* test_appsig.c — common/appsig.h: Ed25519 signing and verifying against
 * the test vectors of RFC 8032 §7.1 (TEST 1 and TEST 2), keys made by
 * keygen, and the manifest's parser on good and bad manifests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/appsig.h"
#include "common/base64.h"

typedef struct vector {
  const char *seed, *pk, *msg, *sig; /* hex */
} vector;

/* RFC 8032, section 7.1: TEST 1 (empty message) and TEST 2 (one byte). */
static const vector rfc8032[] = {
  {"9d61b19deffd5a60ba844af492ec2cc44449c5697b326919703bac031cae7f60",
   "d75a980182b10ab7d54bfed3c964073a0ee172f3daa62325af021a68f707511a", "",
   "e5564300c360ac729086e2cc806e828a84877f1eb8e5d974d873e06522490155"
   "5fb8821590a33bacc61e39701cf9b46bd25bf5f0595bbe24655141438e7a100b"},
  {"4ccd089b28ff96da9db6c346ec114e0f5b8a319f35aba624da8cf6ed4fb8a6fb",
   "3d4017c3e843895a92b70aa74d1b7ebc9c982ccf2ec4968cc0cd55f12af4660c", "72",
   "92a009a9f0d4cab8720e820b5f642540a2b27b5416503f8fb3762223ebdb69da"
   "085ac1e43e15996e458f3613d0f11d8c387b2eaeb4302aeeb00d291612bb0c00"},
};

static size_t unhex(const char *hex, uint8_t *out, size_t cap) {
  size_t n = 0;
  assert_int_equal(sodium_hex2bin(out, cap, hex, strlen(hex), NULL, &n, NULL), 0);
  return n;
}

static void b64(const uint8_t *raw, size_t n, char *out) { cairn__base64_encode(raw, n, out); }

static void test_rfc8032_vectors(void **state) {
  (void)state;
  for (size_t i = 0; i < sizeof rfc8032 / sizeof *rfc8032; i++) {
    const vector *v = &rfc8032[i];
    uint8_t sk[64], pk[32], msg[8], sig[64];
    char sk_b64[CAIRN_APP_SECKEY_B64 + 1], pk_b64[CAIRN_APP_PUBKEY_B64 + 1];
    char sig_b64[CAIRN_APP_SIG_B64 + 1], want_b64[CAIRN_APP_SIG_B64 + 1];
    unhex(v->seed, sk, 32);
    assert_int_equal(unhex(v->pk, pk, 32), 32);
    memcpy(sk + 32, pk, 32); /* libsodium's secret key: seed, then public key */
    size_t mlen = unhex(v->msg, msg, sizeof msg);
    assert_int_equal(unhex(v->sig, sig, 64), 64);
    b64(sk, 64, sk_b64);
    b64(pk, 32, pk_b64);
    b64(sig, 64, want_b64);
    /* signing gives the RFC's signature (Ed25519 is deterministic) */
    assert_int_equal(cairn__app_sign(sk_b64, msg, mlen, sig_b64, NULL), CAIRN_OK);
    assert_string_equal(sig_b64, want_b64);
    /* it verifies with the RFC's public key, given as base64 text */
    uint8_t parsed[32];
    assert_int_equal(cairn__app_pubkey_parse(pk_b64, parsed, NULL), CAIRN_OK);
    assert_memory_equal(parsed, pk, 32);
    assert_int_equal(cairn__app_verify(parsed, msg, mlen, want_b64, NULL), CAIRN_OK);
    /* one bit of the message or of the signature changed: refused */
    uint8_t other[9] = {0};
    memcpy(other, msg, mlen);
    other[0] ^= 1;
    cairn_error err = {0};
    assert_int_equal(cairn__app_verify(parsed, other, mlen ? mlen : 1, want_b64, &err),
                     CAIRN_EFORBIDDEN);
    assert_non_null(strstr(err.text, "does not verify"));
    sig[5] ^= 0x10;
    b64(sig, 64, want_b64);
    assert_int_equal(cairn__app_verify(parsed, msg, mlen, want_b64, NULL), CAIRN_EFORBIDDEN);
  }
}

static void test_keygen_sign_verify(void **state) {
  (void)state;
  char sk[CAIRN_APP_SECKEY_B64 + 1], pk[CAIRN_APP_PUBKEY_B64 + 1], sk2[CAIRN_APP_SECKEY_B64 + 1],
    pk2[CAIRN_APP_PUBKEY_B64 + 1], sig[CAIRN_APP_SIG_B64 + 1];
  assert_int_equal(cairn__app_keygen(sk, pk, NULL), CAIRN_OK);
  assert_int_equal(cairn__app_keygen(sk2, pk2, NULL), CAIRN_OK);
  assert_int_equal(strlen(pk), CAIRN_APP_PUBKEY_B64);
  assert_int_equal(strlen(sk), CAIRN_APP_SECKEY_B64);
  assert_string_not_equal(pk, pk2);
  uint8_t k[32], k2[32];
  assert_int_equal(cairn__app_pubkey_parse(pk, k, NULL), CAIRN_OK);
  assert_int_equal(cairn__app_pubkey_parse(pk2, k2, NULL), CAIRN_OK);
  const char msg[] = "{\"name\":\"x\"}";
  assert_int_equal(cairn__app_sign(sk, msg, strlen(msg), sig, NULL), CAIRN_OK);
  assert_int_equal(cairn__app_verify(k, msg, strlen(msg), sig, NULL), CAIRN_OK);
  assert_int_equal(cairn__app_verify(k2, msg, strlen(msg), sig, NULL), CAIRN_EFORBIDDEN);
  /* not keys, not signatures */
  cairn_error err = {0};
  assert_int_equal(cairn__app_pubkey_parse("abc", k, &err), CAIRN_EINVAL);
  assert_int_equal(cairn__app_pubkey_parse(sk, k, NULL), CAIRN_EINVAL); /* 64 bytes, not 32 */
  assert_int_equal(cairn__app_sign(pk, msg, 1, sig, NULL), CAIRN_EINVAL);
  assert_int_equal(cairn__app_verify(k, msg, 1, "AAAA", NULL), CAIRN_EINVAL);
  assert_int_equal(cairn__app_verify(k, msg, 1, "not base64 at all!", NULL), CAIRN_EINVAL);
  /* surrounding whitespace (a key file's newline) is allowed */
  char line[64];
  snprintf(line, sizeof line, "  %s\n", pk);
  assert_int_equal(cairn__app_pubkey_parse(line, k2, NULL), CAIRN_OK);
  assert_memory_equal(k, k2, 32);
}

#define SHA_A "a6dc1cda8eadba845d544b2eb1bb8d30f49416644e8658449e14266bbc808dad"
#define SHA_B "6667b2d1aab6a00caa5aee5af8ad9f14b5b2c2f3b0c1e6f7b1a9c2d3e4f50617"

static void test_manifest_round_trip(void **state) {
  (void)state;
  const char text[] = "{\"name\":\"blast\",\"version\":\"2.1\",\"platform\":\"linux-x86_64\","
                      "\"files\":[{\"name\":\"blast\",\"size\":26,\"sha256\":\"" SHA_A
                      "\",\"exec\":true},{\"name\":\"db.dat\",\"size\":5,\"sha256\":\"" SHA_B
                      "\",\"exec\":false}]}";
  cairn__app_manifest *m = malloc(sizeof *m);
  assert_non_null(m);
  assert_int_equal(cairn__app_manifest_parse(text, strlen(text), m, NULL), CAIRN_OK);
  assert_string_equal(m->name, "blast");
  assert_string_equal(m->version, "2.1");
  assert_string_equal(m->platform, "linux-x86_64");
  assert_int_equal(m->nfiles, 2);
  assert_true(m->files[0].exec);
  assert_false(m->files[1].exec);
  assert_int_equal(m->files[1].size, 5);
  char *again = cairn__app_manifest_text(m);
  assert_string_equal(again, text); /* what publish signs: keys in the documented order */
  free(again);
  free(m);
}

static void test_bad_manifests(void **state) {
  (void)state;
  static const struct {
    const char *text, *says;
  } bad[] = {
    {"not json", "malformed JSON"},
    {"[]", "must be an object"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"linux-x86_64\",\"files\":[],\"extra\":1}",
     "must be an object of"},
    {"{\"name\":\"../x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[]}", "name must be"},
    {"{\"name\":\"x\",\"version\":\"1 0\",\"platform\":\"p\",\"files\":[]}", "version must be"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"Linux\",\"files\":[]}", "platform must be"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[]}", "1 to 64 files"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[{\"name\":\"a\",\"size\":1,"
     "\"sha256\":\"" SHA_A "\",\"exec\":false}]}",
     "files[0].exec must be true"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[{\"name\":\"a\",\"size\":1,"
     "\"sha256\":\"" SHA_A "\",\"exec\":true},{\"name\":\"b\",\"size\":1,\"sha256\":\"" SHA_B
     "\",\"exec\":true}]}",
     "files[1].exec must be false"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[{\"name\":\"a\",\"size\":1,"
     "\"sha256\":\"" SHA_A "\",\"exec\":true},{\"name\":\"a\",\"size\":1,\"sha256\":\"" SHA_B
     "\",\"exec\":false}]}",
     "appears twice"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[{\"name\":\"a/b\",\"size\":1,"
     "\"sha256\":\"" SHA_A "\",\"exec\":true}]}",
     "files[0].name"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[{\"name\":\"a\",\"size\":-1,"
     "\"sha256\":\"" SHA_A "\",\"exec\":true}]}",
     "files[0].size"},
    {"{\"name\":\"x\",\"version\":\"1\",\"platform\":\"p\",\"files\":[{\"name\":\"a\",\"size\":1,"
     "\"sha256\":\"ABC\",\"exec\":true}]}",
     "files[0].sha256"},
    {"{\"name\":\"x\",\"name\":\"y\",\"version\":\"1\",\"platform\":\"p\",\"files\":[]}",
     "malformed JSON"},
  };
  cairn__app_manifest *m = malloc(sizeof *m);
  assert_non_null(m);
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    cairn_error err = {0};
    assert_int_equal(cairn__app_manifest_parse(bad[i].text, strlen(bad[i].text), m, &err),
                     CAIRN_EINVAL);
    if (!strstr(err.text, bad[i].says))
      fail_msg("manifest %zu: \"%s\" does not say \"%s\"", i, err.text, bad[i].says);
  }
  free(m);
}

static void test_names(void **state) {
  (void)state;
  assert_true(cairn__app_name_ok("blast-2.1_x+y"));
  assert_false(cairn__app_name_ok(".."));
  assert_false(cairn__app_name_ok("-rf"));
  assert_false(cairn__app_name_ok("@linux"));
  assert_false(cairn__app_name_ok(""));
  assert_true(cairn__app_platform_ok("linux-x86_64"));
  assert_false(cairn__app_platform_ok("linux x86"));
  char p[CAIRN_APP_MAX_PLATFORM + 1];
  cairn__app_platform(p);
  assert_true(cairn__app_platform_ok(p));
  assert_non_null(strchr(p, '-'));
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rfc8032_vectors),     cmocka_unit_test(test_keygen_sign_verify),
    cmocka_unit_test(test_manifest_round_trip), cmocka_unit_test(test_bad_manifests),
    cmocka_unit_test(test_names),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
