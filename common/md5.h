/* md5.h — MD5 (RFC 1321), incremental, for the cross-project ids of the
 * XML statistics (docs/references.md [RFC1321], [BOINC-stats]): BOINC
 * publishes an account's cpid and a host's host_cpid as MD5 digests, so
 * statistics sites can match them across projects. libsodium has no MD5.
 * Not for security: MD5 is broken for collisions; here it only hides a
 * secret id and an e-mail behind a digest, as BOINC does.
 *
 * Pure functions over a plain struct: no allocation, no I/O, any thread. */
#ifndef CAIRN_MD5_H
#define CAIRN_MD5_H

#include <stddef.h>
#include <stdint.h>

typedef struct cairn__md5 {
  uint32_t s[4];      /* the state words A, B, C, D */
  uint64_t bytes;     /* the message's length so far */
  uint8_t block[64];  /* the bytes of the current block, bytes % 64 of them */
} cairn__md5;

void cairn__md5_init(cairn__md5 *c);
void cairn__md5_update(cairn__md5 *c, const void *data, size_t n);
/* Writes the 16-byte digest into out; c must be initialised again after. */
void cairn__md5_final(cairn__md5 *c, uint8_t out[16]);
/* Writes 32 lowercase hex digits and a NUL into hex[33]. */
void cairn__md5_final_hex(cairn__md5 *c, char hex[33]);
/* One-shot digest of a buffer, as lowercase hex. */
void cairn__md5_hex(const void *data, size_t n, char hex[33]);

#endif
