/* peer.h — the worker's peer file server (docs/protocol.md, "Data
 * distribution"): GET and HEAD /v1/files/{sha256} answered from the
 * verified cache only, to requests carrying a grant the master issued for
 * that file (common/grant.h, checked with the peer key), with at most
 * max_transfers files being sent at once. libmicrohttpd with a thread per
 * connection, at most PER_ADDRESS_LIMIT connections from one address, a
 * request-header deadline (deadline.h) and an idle timeout; this module is
 * the worker's only user of microhttpd.h. A file is sent only when its
 * bytes were hashed and found right since it last changed (verify.h); one
 * found wrong is removed from the cache.
 *
 * Answers: 404 for a route other than /v1/files/ or a name that is not 64
 * lowercase hex digits; 401 without a "grant" query parameter; 403 with a
 * malformed, expired or wrong one (any, before the master issued a key);
 * 200 with the file (sent with sendfile; or relayed as it arrives, see
 * cairn__peer_start_shared()); 404 for a file not in the cache;
 * 405 for other methods; 400 for a request with a body (never read); 503 with "Retry-After: 1" when max_transfers files
 * are already being sent. Bytes of completed transfers are counted per file
 * in the peer state, for the next heartbeat's "served". Private to worker/.
 */
#ifndef CAIRN_PEER_H
#define CAIRN_PEER_H

#include "common/error.h"
#include "common/log.h"
#include "worker/peerstate.h"
#include "worker/relay.h"
#include "worker/verify.h"

typedef struct cairn__peer cairn__peer;

/* Parses "HOST:PORT" ("0.0.0.0:0", "127.0.0.1:9000", "[::]:0"). Returns 0,
 * or -1 when it is not a numeric IPv4/IPv6 address and a port. */
int cairn__peer_parse_listen(const char *spec);

/* Starts serving cache_dir on listen ("HOST:PORT", see above), checking
 * grants with and counting served bytes into ps (borrowed; must outlive the
 * server), logging through log (borrowed; NULL: stderr). max_transfers >= 1.
 * Returns NULL with err set when the address is malformed or cannot be
 * bound. */
cairn__peer *cairn__peer_start(const char *listen, const char *cache_dir, unsigned max_transfers,
                               cairn__peerstate *ps, const cairn__logger *log, cairn_error *err);

/* cairn__peer_start() keeps a table of its own and hashes the files it
 * finds in cache_dir when it starts. Like it, cairn__peer_start_shared()
 * checks files against verified (borrowed: the
 * cache's table, which must outlive the server) instead of a table of its
 * own (and hashes nothing at start: cairn__cache_each() did), so that a
 * file the cache stored is served without a second hash. With relay
 * (borrowed: the cache's registry, or NULL) a GET for a file the worker is
 * still receiving is answered as its chunks are checked (cut-through), and
 * one for a file neither cached nor arriving waits up to 10 s for its
 * download to deliver a checked chunk before its 404. */
cairn__peer *cairn__peer_start_shared(const char *listen, const char *cache_dir,
                                      unsigned max_transfers, cairn__peerstate *ps,
                                      cairn__verify *verified, cairn__relay *relay,
                                      const cairn__logger *log, cairn_error *err);

/* The port the server listens on. */
unsigned cairn__peer_port(const cairn__peer *p);

/* Transfers in progress now. */
unsigned cairn__peer_active(cairn__peer *p);
/* Transfers completed that began while this worker was still receiving
 * their file. */
unsigned long long cairn__peer_relayed(cairn__peer *p);

/* Stops the server (closing every connection) and frees it. Accepts NULL. */
void cairn__peer_stop(cairn__peer *p);

#endif
