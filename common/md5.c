/* md5.c — MD5 after RFC 1321 §3: the message padded to 448 bits mod 512
 * with a 1 bit and zeros (§3.1), its length in bits appended as 64 bits,
 * low byte first (§3.2), the buffer A, B, C, D set to the words of §3.3,
 * each 16-word block processed in four rounds of 16 operations with the
 * functions F, G, H, I and the table T[i] = floor(2^32 · |sin i|) of §3.4,
 * the digest A, B, C, D low byte first (§3.5). Tested against the test
 * suite of the RFC's appendix A.5 (tests/unit/test_md5.c).
 *
 * Cost: O(n) for n bytes, 64 bytes of state beside the 16 of the buffer. */
#include "common/md5.h"

#include <string.h>

/* T[i - 1] of RFC 1321 §3.4, i = 1 .. 64. */
static const uint32_t T[64] = {
  0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613, 0xfd469501,
  0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193, 0xa679438e, 0x49b40821,
  0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d, 0x02441453, 0xd8a1e681, 0xe7d3fbc8,
  0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed, 0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a,
  0xfffa3942, 0x8771f681, 0x6d9d6122, 0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70,
  0x289b7ec6, 0xeaa127fa, 0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665,
  0xf4292244, 0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
  0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb, 0xeb86d391};

/* The left rotations s of each round's four operations (§3.4). */
static const uint8_t S[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23}, {6, 10, 15, 21}};

static uint32_t rotl(uint32_t x, unsigned s) { return (x << s) | (x >> (32 - s)); }

/* One block of 64 bytes into the state (§3.4). */
static void block(uint32_t st[4], const uint8_t p[64]) {
  uint32_t X[16];
  for (int j = 0; j < 16; j++) /* the words, low byte first */
    X[j] = (uint32_t)p[4 * j] | (uint32_t)p[4 * j + 1] << 8 | (uint32_t)p[4 * j + 2] << 16 |
           (uint32_t)p[4 * j + 3] << 24;
  uint32_t a = st[0], b = st[1], c = st[2], d = st[3];
  for (unsigned i = 0; i < 64; i++) {
    unsigned round = i / 16, k;
    uint32_t f;
    if (round == 0) {
      f = (b & c) | (~b & d); /* F */
      k = i;
    } else if (round == 1) {
      f = (b & d) | (c & ~d); /* G */
      k = (5 * i + 1) % 16;
    } else if (round == 2) {
      f = b ^ c ^ d;          /* H */
      k = (3 * i + 5) % 16;
    } else {
      f = c ^ (b | ~d);       /* I */
      k = (7 * i) % 16;
    }
    /* a = b + ((a + f(b,c,d) + X[k] + T[i]) <<< s), then the words turn */
    uint32_t t = d;
    d = c;
    c = b;
    b = b + rotl(a + f + X[k] + T[i], S[round][i % 4]);
    a = t;
  }
  st[0] += a;
  st[1] += b;
  st[2] += c;
  st[3] += d;
}

void cairn__md5_init(cairn__md5 *c) {
  c->s[0] = 0x67452301; /* word A: 01 23 45 67, low byte first (§3.3) */
  c->s[1] = 0xefcdab89;
  c->s[2] = 0x98badcfe;
  c->s[3] = 0x10325476;
  c->bytes = 0;
}

void cairn__md5_update(cairn__md5 *c, const void *data, size_t n) {
  const uint8_t *p = data;
  size_t have = (size_t)(c->bytes % 64);
  c->bytes += n;
  if (have) { /* fill the block begun */
    size_t take = n < 64 - have ? n : 64 - have;
    memcpy(c->block + have, p, take);
    p += take;
    n -= take;
    if (have + take < 64)
      return;
    block(c->s, c->block);
  }
  for (; n >= 64; p += 64, n -= 64)
    block(c->s, p);
  if (n)
    memcpy(c->block, p, n);
}

void cairn__md5_final(cairn__md5 *c, uint8_t out[16]) {
  uint64_t bits = c->bytes * 8;
  size_t have = (size_t)(c->bytes % 64);
  /* one 1 bit, then zeros up to 56 bytes mod 64 (§3.1), then the length */
  uint8_t pad[72] = {0x80};
  size_t npad = (have < 56 ? 56 : 120) - have;
  for (int i = 0; i < 8; i++)
    pad[npad + (size_t)i] = (uint8_t)(bits >> (8 * i));
  cairn__md5_update(c, pad, npad + 8);
  for (int w = 0; w < 4; w++)
    for (int i = 0; i < 4; i++)
      out[4 * w + i] = (uint8_t)(c->s[w] >> (8 * i));
}

void cairn__md5_final_hex(cairn__md5 *c, char hex[33]) {
  static const char digits[] = "0123456789abcdef";
  uint8_t raw[16];
  cairn__md5_final(c, raw);
  for (int i = 0; i < 16; i++) {
    hex[2 * i] = digits[raw[i] >> 4];
    hex[2 * i + 1] = digits[raw[i] & 15];
  }
  hex[32] = '\0';
}

void cairn__md5_hex(const void *data, size_t n, char hex[33]) {
  cairn__md5 c;
  cairn__md5_init(&c);
  cairn__md5_update(&c, data, n);
  cairn__md5_final_hex(&c, hex);
}
