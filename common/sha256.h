/* sha256.h — SHA-256 (FIPS 180-4), incremental, for content-addressed files;
 * HMAC-SHA256 for peer grants (common/grant.h). Thin wrappers over
 * libsodium's crypto_hash_sha256 and crypto_auth_hmacsha256 (common/sha256.c
 * calls sodium_init() once per process before the first use). */
#ifndef CAIRN_SHA256_H
#define CAIRN_SHA256_H

#include <sodium/crypto_hash_sha256.h>
#include <stddef.h>
#include <stdint.h>

typedef struct cairn__sha256 {
  crypto_hash_sha256_state st;
} cairn__sha256;

void cairn__sha256_init(cairn__sha256 *c);
void cairn__sha256_update(cairn__sha256 *c, const void *data, size_t n);
/* Writes the 32-byte digest into out. */
void cairn__sha256_final(cairn__sha256 *c, uint8_t out[32]);
/* Writes 64 lowercase hex digits and a NUL into hex[65]. */
void cairn__sha256_final_hex(cairn__sha256 *c, char hex[65]);
/* One-shot digest of a buffer. */
void cairn__sha256_hex(const void *data, size_t n, char hex[65]);
/* HMAC-SHA256 (RFC 2104) of msg under key (any length), into out. */
void cairn__hmac_sha256(const void *key, size_t klen, const void *msg, size_t mlen,
                       uint8_t out[32]);
/* 1 if s is exactly 64 lowercase hex digits. */
int cairn__sha256_valid_hex(const char *s);

/* Calls sodium_init() once per process, whichever thread comes first
 * (pthread_once): 0, or -1 if libsodium could not start. The wrappers of
 * sha256.h and base64.h call it themselves. */
int cairn__sodium_once(void);

#endif
