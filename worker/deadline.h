/* deadline.h — a request-header deadline for a server's connections: a
 * connection that has not sent a complete request header within
 * deadline_ms of its start (or of the end of its previous request) is shut
 * down (shutdown(2) on a duplicate of its socket), so that the server sees
 * it end and closes it. A slow or idle client holds a connection no longer
 * than that, whatever it trickles. One watcher thread checks every
 * DEADLINE_TICK_MS. Used by the peer server (peer.c), independent of
 * libmicrohttpd. Thread-safe. Private to worker/.
 */
#ifndef CAIRN_DEADLINE_H
#define CAIRN_DEADLINE_H

typedef struct cairn__deadline cairn__deadline;
typedef struct cairn__deadline_conn cairn__deadline_conn;

/* Starts the watcher thread. NULL on failure (memory, thread). */
cairn__deadline *cairn__deadline_start(unsigned deadline_ms);

/* Watches the connected socket fd (duplicated here; the caller keeps fd),
 * its header due deadline_ms from now. NULL on failure (the connection is
 * then not watched). */
cairn__deadline_conn *cairn__deadline_add(cairn__deadline *d, int fd);
/* The connection's request header arrived: no deadline until _wait(). */
void cairn__deadline_got_header(cairn__deadline *d, cairn__deadline_conn *c);
/* The connection waits for its next request header, due deadline_ms from now. */
void cairn__deadline_wait(cairn__deadline *d, cairn__deadline_conn *c);
/* Stops watching the connection and frees it. Accepts NULL c. */
void cairn__deadline_remove(cairn__deadline *d, cairn__deadline_conn *c);

/* Stops the watcher thread and frees d with the connections still watched.
 * Accepts NULL. */
void cairn__deadline_stop(cairn__deadline *d);

#endif
