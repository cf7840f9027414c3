/* test_md5.c — MD5 (common/md5.c) against the test suite of RFC 1321,
 * appendix A.5 (docs/references.md [RFC1321]): its seven messages and
 * their digests; the same digests fed in every split of each message in
 * two, and byte by byte; one million 'a' fed in pieces of 997 bytes
 * (7707d6ae4e027c70eea2a935c2296f21, the digest coreutils' md5sum gives);
 * the messages of 55, 56, 63 and 64 bytes, where the padding takes one
 * block or two, against md5sum's digests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <cmocka.h>

#include "common/md5.h"

/* RFC 1321, A.5 "Test suite". */
static const char *const suite[][2] = {
  {"", "d41d8cd98f00b204e9800998ecf8427e"},
  {"a", "0cc175b9c0f1b6a831c399e269772661"},
  {"abc", "900150983cd24fb0d6963f7d28e17f72"},
  {"message digest", "f96b697d7cb7938d525a2f31aaf161d0"},
  {"abcdefghijklmnopqrstuvwxyz", "c3fcd3d76192e4007dfb496cca67e13b"},
  {"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
   "d174ab98d277d9f5a5611c2c9f419d9f"},
  {"12345678901234567890123456789012345678901234567890123456789012345678901234567890",
   "57edf4a22be3c955ac49da2e2107b67a"},
};
#define NSUITE (sizeof suite / sizeof suite[0])

static void test_rfc1321_suite(void **state) {
  (void)state;
  char hex[33];
  for (size_t i = 0; i < NSUITE; i++) {
    cairn__md5_hex(suite[i][0], strlen(suite[i][0]), hex);
    if (strcmp(hex, suite[i][1]))
      fail_msg("MD5 (\"%s\") = %s, RFC 1321 says %s", suite[i][0], hex, suite[i][1]);
  }
}

static void test_split_and_bytewise(void **state) {
  (void)state;
  char hex[33];
  for (size_t i = 0; i < NSUITE; i++) {
    const char *m = suite[i][0];
    size_t n = strlen(m);
    for (size_t cut = 0; cut <= n; cut++) {
      cairn__md5 c;
      cairn__md5_init(&c);
      cairn__md5_update(&c, m, cut);
      cairn__md5_update(&c, m + cut, n - cut);
      cairn__md5_final_hex(&c, hex);
      assert_string_equal(hex, suite[i][1]);
    }
    cairn__md5 c;
    cairn__md5_init(&c);
    for (size_t k = 0; k < n; k++)
      cairn__md5_update(&c, m + k, 1);
    cairn__md5_final_hex(&c, hex);
    assert_string_equal(hex, suite[i][1]);
  }
}

static void test_million_a(void **state) {
  (void)state;
  char a[997], hex[33];
  memset(a, 'a', sizeof a);
  cairn__md5 c;
  cairn__md5_init(&c);
  size_t left = 1000000;
  while (left) {
    size_t k = left < sizeof a ? left : sizeof a;
    cairn__md5_update(&c, a, k);
    left -= k;
  }
  cairn__md5_final_hex(&c, hex);
  assert_string_equal(hex, "7707d6ae4e027c70eea2a935c2296f21");
}

/* The padding's edges: 55 bytes pad in one block, 56 to 64 in two. */
static void test_padding_edges(void **state) {
  (void)state;
  static const struct {
    size_t n;
    const char *md5;
  } edges[] = {{55, "04364420e25c512fd958a70738aa8f72"},
               {56, "668a72d5ba17f08e62dabcafad6db14b"},
               {63, "7dc2ca208106a2f703567bdff99d8981"},
               {64, "c1bb4f81d892b2d57947682aeb252456"}};
  char x[64], hex[33];
  memset(x, 'x', sizeof x);
  for (size_t i = 0; i < sizeof edges / sizeof edges[0]; i++) {
    cairn__md5_hex(x, edges[i].n, hex);
    if (strcmp(hex, edges[i].md5))
      fail_msg("%zu bytes of 'x': %s, md5sum says %s", edges[i].n, hex, edges[i].md5);
  }
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_rfc1321_suite),
    cmocka_unit_test(test_split_and_bytewise),
    cmocka_unit_test(test_million_a),
    cmocka_unit_test(test_padding_edges),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
