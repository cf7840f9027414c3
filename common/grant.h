/* grant.h — peer download grants (docs/protocol.md, "Peer grants").
 *
 * A worker's peer server sends a cached file only to a request carrying a
 * grant the master issued for that file and that downloader. The master
 * writes it into the source URL it hands out, as the query parameter
 * CAIRN_GRANT_PARAM:
 *
 *     http://HOLDER/v1/files/SHA256?grant=D.E.MAC
 *
 * D is the downloading volunteer's id, E the expiry (Unix seconds, the
 * master's clock), MAC the lowercase hex HMAC-SHA256 (RFC 2104) over
 * "SHA256.D.E" keyed with the holder's peer key (its 64 characters as
 * bytes). Each holder has its own peer key,
 *
 *     key = hex HMAC-SHA256(secret, "cairn-peer-key.H.G")
 *
 * from the master's secret, the holder's id H and a generation G that moves
 * on every ban; the master hands it to that holder alone (registration and
 * heartbeat answers), and the holder never sends it. So a grant opens one
 * file to one downloader for a while; a banned volunteer gets no new ones,
 * and the ones it has stop working at each holder as soon as the holder
 * hears its next key.
 *
 * Pure functions over strings; constant-time comparison of MACs.
 */
#ifndef CAIRN_GRANT_H
#define CAIRN_GRANT_H

#include <stdint.h>

#define CAIRN_GRANT_PARAM "grant"
/* How long a grant stays good after the master issues it. */
#define CAIRN_GRANT_SECONDS 900
/* How far a holder's clock may run ahead of the master's: a grant is
 * refused once the holder's clock passes E + CAIRN_GRANT_SKEW_SECONDS. */
#define CAIRN_GRANT_SKEW_SECONDS 300
/* Longest grant text ("D.E.MAC", NUL excluded). */
#define CAIRN_GRANT_MAX 110

typedef enum cairn__grant_verdict {
  CAIRN_GRANT_OK,
  CAIRN_GRANT_MALFORMED, /* not "D.E.MAC" with decimal D >= 1, E >= 0 and 64 hex */
  CAIRN_GRANT_EXPIRED,   /* well formed, past E + CAIRN_GRANT_SKEW_SECONDS */
  CAIRN_GRANT_WRONG      /* the MAC is not the holder's for this file and downloader */
} cairn__grant_verdict;

/* The master's secret from seed (any text: the master uses its admin token,
 * so the secret survives restarts without being stored): hex
 * HMAC-SHA256(seed, "cairn-peer-secret"). */
void cairn__grant_secret(const char *seed, char secret[65]);
/* Holder's peer key for generation gen. */
void cairn__grant_key(const char secret[65], int64_t holder, uint64_t gen, char key[65]);
/* Writes the grant for file sha256 (64 hex), downloader and expiry into out.
 * Returns 0, or -1 when sha256 is not a digest or downloader < 1. */
int cairn__grant_make(const char key[65], const char *sha256, int64_t downloader, int64_t expires,
                     char out[CAIRN_GRANT_MAX + 1]);
/* Checks grant for file sha256 against the holder's key at time now; on
 * CAIRN_GRANT_OK, *downloader (may be NULL) is the volunteer it names. */
cairn__grant_verdict cairn__grant_check(const char key[65], const char *sha256, const char *grant,
                                      int64_t now, int64_t *downloader);

#endif
