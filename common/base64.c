/* base64.c — strict RFC 4648 base64 through libsodium (sodium_bin2base64,
 * sodium_base642bin, variant ORIGINAL: the standard alphabet with padding);
 * results' outputs and stderr tails that are not UTF-8 travel this way
 * (worker/result.c encodes, server/api/results.c decodes, server/core/jobs.c encodes
 * the results it serves). */
#include "common/base64.h"

#include <sodium.h>
#include <stdint.h>

#include "common/sha256.h"

size_t cairn__base64_encoded_len(size_t n) {
  size_t groups = n / 3 + (n % 3 != 0);
  if (groups > SIZE_MAX / 4)
    return SIZE_MAX;
  return groups * 4;
}

size_t cairn__base64_encode(const void *src, size_t n, char *dst) {
  size_t len = cairn__base64_encoded_len(n);
  (void)cairn__sodium_once();
  /* dst holds len + 1 bytes (the contract above): sodium_base64_ENCODED_LEN */
  sodium_bin2base64(dst, len + 1, n ? src : (const void *)"", n, sodium_base64_VARIANT_ORIGINAL);
  return len;
}

size_t cairn__base64_decoded_max(size_t n) { return n / 4 * 3; }

int cairn__base64_decode(const char *src, size_t n, void *dst, size_t dstcap, size_t *outlen) {
  /* libsodium rejects whitespace (no ignore set), the URL-safe alphabet,
   * missing, short, extra or misplaced padding, non-zero bits after the last
   * byte and anything after the padding (no end pointer); but it reads a
   * byte >= 0x80 as '/' (libsodium 1.0.18), so those are refused here. The
   * length must be a multiple of 4, as padding makes it. */
  if (n % 4 != 0)
    return -1;
  for (size_t i = 0; i < n; i++)
    if ((unsigned char)src[i] >= 0x80)
      return -1;
  size_t len = 0;
  (void)cairn__sodium_once();
  if (sodium_base642bin(dst, dstcap, n ? src : "", n, NULL, &len, NULL,
                        sodium_base64_VARIANT_ORIGINAL) != 0)
    return -1;
  *outlen = len;
  return 0;
}
