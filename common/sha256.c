/* sha256.c — SHA-256 as specified in FIPS 180-4 §6.2. */
#include "common/sha256.h"

#include <string.h>

static const uint32_t K[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1,
  0x923f82a4, 0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3,
  0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786,
  0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147,
  0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13,
  0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
  0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a,
  0x5b9cca4f, 0x682e6ff3, 0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208,
  0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, unsigned n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t *p) {
  uint32_t w[64];
  for (int i = 0; i < 16; i++)
    w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 |
           (uint32_t)p[4 * i + 2] << 8 | (uint32_t)p[4 * i + 3];
  for (int i = 16; i < 64; i++) {
    uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3];
  uint32_t e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; i++) {
    uint32_t S1 = rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25);
    uint32_t ch = (e & f) ^ (~e & g);
    uint32_t t1 = hh + S1 + ch + K[i] + w[i];
    uint32_t S0 = rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22);
    uint32_t mj = (a & b) ^ (a & c) ^ (b & c);
    uint32_t t2 = S0 + mj;
    hh = g; g = f; f = e; e = d + t1;
    d = c; c = b; b = a; a = t1 + t2;
  }
  h[0] += a; h[1] += b; h[2] += c; h[3] += d;
  h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void cairn__sha256_init(cairn__sha256 *c) {
  static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  memcpy(c->h, iv, sizeof iv);
  c->total = 0;
  c->fill = 0;
}

void cairn__sha256_update(cairn__sha256 *c, const void *data, size_t n) {
  const uint8_t *p = data;
  c->total += n;
  if (c->fill) {
    size_t k = 64 - c->fill < n ? 64 - c->fill : n;
    memcpy(c->block + c->fill, p, k);
    c->fill += k;
    p += k;
    n -= k;
    if (c->fill < 64)
      return;
    compress(c->h, c->block);
    c->fill = 0;
  }
  while (n >= 64) {
    compress(c->h, p);
    p += 64;
    n -= 64;
  }
  memcpy(c->block, p, n);
  c->fill = n;
}

void cairn__sha256_final(cairn__sha256 *c, uint8_t out[32]) {
  uint64_t bits = c->total * 8;
  uint8_t pad[72] = {0x80};
  size_t padlen = (c->fill < 56) ? 56 - c->fill : 120 - c->fill;
  uint8_t len[8];
  for (int i = 0; i < 8; i++)
    len[i] = (uint8_t)(bits >> (56 - 8 * i));
  cairn__sha256_update(c, pad, padlen);
  cairn__sha256_update(c, len, 8);
  for (int i = 0; i < 8; i++)
    for (int j = 0; j < 4; j++)
      out[4 * i + j] = (uint8_t)(c->h[i] >> (24 - 8 * j));
}

void cairn__sha256_final_hex(cairn__sha256 *c, char hex[65]) {
  static const char digits[] = "0123456789abcdef";
  uint8_t raw[32];
  cairn__sha256_final(c, raw);
  for (int i = 0; i < 32; i++) {
    hex[2 * i] = digits[raw[i] >> 4];
    hex[2 * i + 1] = digits[raw[i] & 15];
  }
  hex[64] = '\0';
}

void cairn__sha256_hex(const void *data, size_t n, char hex[65]) {
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, data, n);
  cairn__sha256_final_hex(&c, hex);
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
  uint8_t k[64] = {0}, pad[64], inner[32];
  cairn__sha256 c;
  if (klen > sizeof k) { /* RFC 2104: a key longer than a block is hashed first */
    cairn__sha256_init(&c);
    cairn__sha256_update(&c, key, klen);
    cairn__sha256_final(&c, k);
  } else if (klen) {
    memcpy(k, key, klen);
  }
  for (int i = 0; i < 64; i++)
    pad[i] = k[i] ^ 0x36;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, pad, sizeof pad);
  cairn__sha256_update(&c, msg, mlen);
  cairn__sha256_final(&c, inner);
  for (int i = 0; i < 64; i++)
    pad[i] = k[i] ^ 0x5c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, pad, sizeof pad);
  cairn__sha256_update(&c, inner, sizeof inner);
  cairn__sha256_final(&c, out);
}
