/* conns.h — the connections without a token, all addresses together
 * (docs/security.md, Limits: "connections without a token, in all").
 * Private to server/.
 *
 * libmicrohttpd caps connections in all (CAIRN_MAX_CONNECTIONS) and per
 * address (cfg.per_ip_connections); at its cap it stops accepting, so
 * clients trickling headers from many addresses could hold every
 * connection and lock out volunteers and the operator. This table counts
 * each connection from its accept (http.c, MHD_CONNECTION_NOTIFY_STARTED)
 * as anonymous until a request on it carries a valid token (the admin's,
 * or a registered volunteer's, checked by the gate at the request's first
 * callback); from then on it is authenticated until it closes and no
 * longer counted here. The anonymous connections are bounded by `cap`
 * (cfg.anonymous_connections, default CAIRN_DEFAULT_ANON_CONNS, 3/4 of
 * CAIRN_MAX_CONNECTIONS), below the cap in all, so that an accept always
 * finds room while tokened connections fill less than the rest:
 *
 *   eviction   a connection accepted while `cap` anonymous ones are open
 *              closes the oldest anonymous one that is between requests
 *              (its request's headers not in: idle, or trickling them),
 *              else the oldest anonymous one with a request in progress
 *              (shutdown(2) of its socket: libmicrohttpd sees it closed
 *              and cleans it up on its own thread). A new client, a
 *              volunteer's or the operator's first connection among them,
 *              is the newest: it is closed only if `cap` more connections
 *              are accepted before its headers are in.
 *   pressure   while more than cap/2 are open, an accept also closes
 *              anonymous connections that have been between requests for
 *              more than CAIRN_ANON_HEADER_SECONDS (the oldest first, at
 *              most CAIRN__CONNS_SWEEP an accept): headers trickled a byte
 *              at a time no longer hold a connection for the idle timeout
 *              after each byte.
 *
 * Two FIFO lists (between requests; in a request), doubly linked: every
 * operation is O(1) (a sweep at most CAIRN__CONNS_SWEEP steps), under one
 * mutex that is a leaf (no libmicrohttpd call is made with it held;
 * shutdown(2) is a system call). One entry (malloc'd, 32 bytes) per open
 * connection. An entry's socket is open while the entry is in a list:
 * libmicrohttpd closes a socket only after MHD_CONNECTION_NOTIFY_CLOSED,
 * which unlinks it under the mutex first. */
#ifndef CAIRN_CONNS_H
#define CAIRN_CONNS_H

#include <stdint.h>

#include "common/error.h"

/* Connections closed for being between requests too long, at most this many
 * an accept. */
#define CAIRN__CONNS_SWEEP 4u

typedef struct cairn__conns cairn__conns;
typedef struct cairn__conn_ent cairn__conn_ent;

/* A table for at most cap anonymous connections (cap >= 1); the pressure
 * sweep closes those between requests for more than header_seconds while
 * more than cap/2 are open. NULL (err set) when out of memory. */
cairn__conns *cairn__conns_create(unsigned cap, double header_seconds, cairn_error *err);
void cairn__conns_destroy(cairn__conns *t);

/* A connection accepted on socket fd, anonymous and between requests;
 * makes room as above. NULL when out of memory (the caller closes it). */
cairn__conn_ent *cairn__conns_open(cairn__conns *t, int fd);
/* Its request's headers are in; authenticated: the request carries a valid
 * token (the connection leaves the table's count for good). */
void cairn__conns_request(cairn__conns *t, cairn__conn_ent *e, int authenticated);
/* Its request ended (answered or cut): between requests again. */
void cairn__conns_done(cairn__conns *t, cairn__conn_ent *e);
/* It closed: e is freed. */
void cairn__conns_close(cairn__conns *t, cairn__conn_ent *e);

/* The anonymous connections open now, and those closed to make room (or by
 * the pressure sweep) since the start. */
void cairn__conns_counts(cairn__conns *t, uint64_t *anonymous, uint64_t *evicted);

#endif
