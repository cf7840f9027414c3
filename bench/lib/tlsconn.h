/* tlsconn.h — the TLS client side of bench-volunteers: one GnuTLS client
 * session per non-blocking socket, driven by the caller's epoll loop, and
 * the session data (a TLS 1.3 ticket) that lets a later connection resume
 * instead of paying a full handshake.
 *
 * Every call returns at once: TLSCONN_WANT_READ / TLSCONN_WANT_WRITE say
 * which readiness of the socket to wait for before calling again with the
 * same arguments. Ownership: a tlsconn_ctx is shared by every connection
 * and outlives them; a tlsconn owns its GnuTLS session, not its socket;
 * a tlsconn_ticket is the caller's, freed with tlsconn_ticket_free. */
#ifndef CAIRN_BENCH_TLSCONN_H
#define CAIRN_BENCH_TLSCONN_H

#include <stddef.h>
#include <sys/types.h>

enum { TLSCONN_DONE = 0, TLSCONN_WANT_READ = -1, TLSCONN_WANT_WRITE = -2, TLSCONN_ERROR = -3 };

typedef struct tlsconn_ctx tlsconn_ctx;
typedef struct tlsconn tlsconn;
typedef struct tlsconn_ticket {
  unsigned char *data; /* NULL: none yet */
  unsigned size;
} tlsconn_ticket;

/* Trusts only the certificates in ca_file; the server's name (an IP
 * address or a host name) is checked against its certificate. NULL with a
 * message on stderr when ca_file cannot be read. */
tlsconn_ctx *tlsconn_ctx_new(const char *ca_file, const char *server_name);
void tlsconn_ctx_free(tlsconn_ctx *x);

/* A client session on the connected (or connecting) socket fd, offering
 * ticket to resume when it holds one. NULL when out of memory. */
tlsconn *tlsconn_open(tlsconn_ctx *x, int fd, const tlsconn_ticket *ticket);

/* One step of the handshake: TLSCONN_DONE, a WANT, or TLSCONN_ERROR. */
int tlsconn_handshake(tlsconn *t);

/* 1 when the finished handshake resumed a session, 0 when it was full. */
int tlsconn_resumed(const tlsconn *t);

/* Bytes written (> 0), a WANT, or TLSCONN_ERROR. */
ssize_t tlsconn_send(tlsconn *t, const void *buf, size_t len);

/* Bytes read (> 0), 0 at the end of the connection (the peer's
 * close_notify, or its socket closed without one), a WANT or TLSCONN_ERROR. */
ssize_t tlsconn_recv(tlsconn *t, void *buf, size_t len);

/* Decrypted bytes held that the socket will not signal. */
size_t tlsconn_pending(tlsconn *t);

/* Replaces *ticket with what resumes this session (after the first answer
 * was read: a TLS 1.3 ticket comes after the handshake). 0, or -1 with
 * *ticket unchanged. */
int tlsconn_save(tlsconn *t, tlsconn_ticket *ticket);
void tlsconn_ticket_free(tlsconn_ticket *ticket);

/* Frees the session (no close_notify: the caller closes the socket). */
void tlsconn_free(tlsconn *t);

#endif
