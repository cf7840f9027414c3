/* grant.c — peer download grants (grant.h). */
#include "common/grant.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "common/sha256.h"

static void hex32(const uint8_t raw[32], char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[raw[i] >> 4];
    hex[2 * i + 1] = digits[raw[i] & 15];
  }
  hex[64] = '\0';
}

static void hmac_hex(const char *key, size_t klen, const char *msg, size_t mlen, char hex[65]) {
  uint8_t raw[32];
  cairn__hmac_sha256(key, klen, msg, mlen, raw);
  hex32(raw, hex);
}

void cairn__grant_secret(const char *seed, char secret[65]) {
  static const char label[] = "cairn-peer-secret";
  hmac_hex(seed, strlen(seed), label, sizeof label - 1, secret);
}

void cairn__grant_key(const char secret[65], int64_t holder, uint64_t gen, char key[65]) {
  char msg[96];
  int n = snprintf(msg, sizeof msg, "cairn-peer-key.%" PRId64 ".%" PRIu64, holder, gen);
  hmac_hex(secret, 64, msg, (size_t)n, key);
}

/* The MAC of a grant, into mac. */
static void grant_mac(const char key[65], const char *sha256, int64_t downloader,
                      int64_t expires, char mac[65]) {
  char msg[128];
  int n = snprintf(msg, sizeof msg, "%.64s.%" PRId64 ".%" PRId64, sha256, downloader, expires);
  hmac_hex(key, 64, msg, (size_t)n, mac);
}

int cairn__grant_make(const char key[65], const char *sha256, int64_t downloader, int64_t expires,
                     char out[CAIRN_GRANT_MAX + 1]) {
  char mac[65];
  if (!cairn__sha256_valid_hex(sha256) || downloader < 1 || expires < 0)
    return -1;
  grant_mac(key, sha256, downloader, expires, mac);
  snprintf(out, CAIRN_GRANT_MAX + 1, "%" PRId64 ".%" PRId64 ".%s", downloader, expires, mac);
  return 0;
}

/* Reads a decimal without sign or leading zero (at most 18 digits, so it
 * fits an int64_t) up to stop; returns the end, or NULL. */
static const char *decimal(const char *s, char stop, int64_t *v) {
  int64_t x = 0;
  const char *p = s;
  for (; *p >= '0' && *p <= '9'; p++) {
    if (p - s >= 18)
      return NULL;
    x = x * 10 + (*p - '0');
  }
  if (p == s || *p != stop || (*s == '0' && p - s > 1))
    return NULL;
  *v = x;
  return p + 1;
}

cairn__grant_verdict cairn__grant_check(const char key[65], const char *sha256, const char *grant,
                                      int64_t now, int64_t *downloader) {
  int64_t d = 0, e = 0;
  const char *p;
  if (!grant || !cairn__sha256_valid_hex(sha256) || !(p = decimal(grant, '.', &d)) || d < 1 ||
      !(p = decimal(p, '.', &e)) || !cairn__sha256_valid_hex(p))
    return CAIRN_GRANT_MALFORMED;
  if (now > e + CAIRN_GRANT_SKEW_SECONDS)
    return CAIRN_GRANT_EXPIRED;
  char mac[65];
  grant_mac(key, sha256, d, e, mac);
  unsigned char diff = 0;
  for (int i = 0; i < 64; i++)
    diff |= (unsigned char)(mac[i] ^ p[i]);
  if (diff)
    return CAIRN_GRANT_WRONG;
  if (downloader)
    *downloader = d;
  return CAIRN_GRANT_OK;
}
