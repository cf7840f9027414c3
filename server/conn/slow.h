/* slow.h — the slow lane: one thread that runs the requests whose handler
 * may take seconds (a ban in slices: core.h, "cairn__core_ban"; a job's
 * submission of more than CAIRN__SLOW_BODY bytes; a job's deletion), so
 * that they never hold an HTTP pool thread (private to server/).
 *
 * Why: libmicrohttpd's pool thread owns every connection it accepted; a
 * handler that runs for seconds stalls them all, health checks included.
 * So http.c suspends such a request's connection, queues it here, and this
 * thread runs it and resumes the connection, whose answer http.c then
 * sends.
 *
 * Owns: its queue (at most CAIRN__SLOW_CAP requests, run in order) and its
 * thread. A request's work and connection stay the caller's: the lane only
 * calls run(arg) and then resume(conn), once each, in that order.
 *
 * Stop: cairn__slow_stop lets the running request finish, calls cancel(arg)
 * then resume(conn) for each queued one (its answer says the master is
 * stopping), and joins the thread; it is called before the HTTP daemon
 * stops, which must find no connection suspended. Every function is
 * thread-safe.
 */
#ifndef CAIRN_SLOW_H
#define CAIRN_SLOW_H

#include "common/error.h"

/* Requests queued or running at most; a request past it gets 429. */
#define CAIRN__SLOW_CAP 4u
/* A job's submission with a larger body runs on the lane (http.c). */
#define CAIRN__SLOW_BODY (256u * 1024u)

typedef struct cairn__slow cairn__slow;

/* Starts the lane's thread. resume(conn) resumes a suspended connection. */
cairn__slow *cairn__slow_create(void (*resume)(void *conn), cairn_error *err);

/* Queues run(arg), then resume(conn), to be called on the lane's thread;
 * cancel(arg) instead of run(arg) if the lane stops first. 0, or -1 (the
 * lane is full or stopping: nothing was queued, the caller answers). */
int cairn__slow_submit(cairn__slow *s, void (*run)(void *arg), void (*cancel)(void *arg),
                       void *arg, void *conn);

/* The number of requests queued or running now. */
unsigned cairn__slow_busy(cairn__slow *s);

/* Stops the lane (see above); later submissions are refused. The lane
 * stays readable (cairn__slow_busy) until destroyed. NULL is fine. */
void cairn__slow_stop(cairn__slow *s);
/* Stops it if need be, then frees it. NULL is fine. */
void cairn__slow_destroy(cairn__slow *s);

#endif
