/* base64.h — standard base64 (RFC 4648 §4, with padding) for result outputs
 * that are not valid UTF-8. The decoder is strict: it rejects whitespace,
 * missing or misplaced padding, and non-zero bits after the last byte, so
 * every byte string has exactly one accepted encoding (quorum compares bytes).
 * Thin wrappers over libsodium's base64 (common/base64.c).
 */
#ifndef CAIRN_BASE64_H
#define CAIRN_BASE64_H

#include <stddef.h>

/* Characters needed to encode n bytes (without the NUL); SIZE_MAX if n is so
 * large that the length overflows. */
size_t cairn__base64_encoded_len(size_t n);

/* Encodes n bytes of src into dst, which must hold
 * cairn__base64_encoded_len(n) + 1 bytes; writes a NUL and returns the length. */
size_t cairn__base64_encode(const void *src, size_t n, char *dst);

/* Upper bound on the bytes that decoding n characters yields. */
size_t cairn__base64_decoded_max(size_t n);

/* Decodes n characters of src into dst (dstcap bytes). Returns 0 and sets
 * *outlen, or -1 when src is not canonical base64 or dst is too small; on
 * failure dst holds unspecified bytes. */
__attribute__((warn_unused_result))
int cairn__base64_decode(const char *src, size_t n, void *dst, size_t dstcap, size_t *outlen);

#endif
