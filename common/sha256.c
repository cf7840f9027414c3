/* sha256.c — SHA-256 and HMAC-SHA256 through libsodium (crypto_hash_sha256,
 * crypto_auth_hmacsha256); called by the master, the worker, the CLI and the
 * apps wherever a file, an output, a grant or an audit entry is hashed. */
#include "common/sha256.h"

#include <pthread.h>
#include <sodium.h>

static pthread_once_t sodium_once = PTHREAD_ONCE_INIT;
static int sodium_status; /* sodium_init()'s: 0, 1 (already started) or -1 */

static void sodium_start(void) { sodium_status = sodium_init(); }

/* sodium_init() selects implementations for other primitives and seeds the
 * random generator; SHA-256, HMAC and base64 depend on neither, so the
 * wrappers below work even if it failed (it fails only when it cannot take
 * its own lock) and ignore what this returns. */
int cairn__sodium_once(void) {
  pthread_once(&sodium_once, sodium_start);
  return sodium_status < 0 ? -1 : 0;
}

void cairn__sha256_init(cairn__sha256 *c) {
  (void)cairn__sodium_once();
  crypto_hash_sha256_init(&c->st);
}

void cairn__sha256_update(cairn__sha256 *c, const void *data, size_t n) {
  if (n)
    crypto_hash_sha256_update(&c->st, data, (unsigned long long)n);
}

void cairn__sha256_final(cairn__sha256 *c, uint8_t out[32]) {
  crypto_hash_sha256_final(&c->st, out);
}

void cairn__sha256_final_hex(cairn__sha256 *c, char hex[65]) {
  uint8_t raw[crypto_hash_sha256_BYTES];
  cairn__sha256_final(c, raw);
  sodium_bin2hex(hex, 65, raw, sizeof raw);
}

void cairn__sha256_hex(const void *data, size_t n, char hex[65]) {
  uint8_t raw[crypto_hash_sha256_BYTES];
  (void)cairn__sodium_once();
  crypto_hash_sha256(raw, n ? data : (const void *)"", (unsigned long long)n);
  sodium_bin2hex(hex, 65, raw, sizeof raw);
}

int cairn__sha256_valid_hex(const char *s) {
  if (!s)
    return 0;
  for (int i = 0; i < 64; i++)
    if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
      return 0;
  return s[64] == '\0';
}

void cairn__hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                       uint8_t out[32]) {
  /* a key longer than a block is hashed first (RFC 2104), as libsodium does */
  crypto_auth_hmacsha256_state st;
  (void)cairn__sodium_once();
  crypto_auth_hmacsha256_init(&st, klen ? key : (const void *)"", klen);
  if (mlen)
    crypto_auth_hmacsha256_update(&st, msg, (unsigned long long)mlen);
  crypto_auth_hmacsha256_final(&st, out);
  sodium_memzero(&st, sizeof st);
}
