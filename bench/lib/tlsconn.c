/* tlsconn.c — non-blocking GnuTLS client sessions for bench-volunteers
 * (tlsconn.h). */
#include "bench/lib/tlsconn.h"

#include <gnutls/gnutls.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct tlsconn_ctx {
  gnutls_certificate_credentials_t cred;
  gnutls_priority_t prio;
  char name[256];
};

struct tlsconn {
  gnutls_session_t s;
};

tlsconn_ctx *tlsconn_ctx_new(const char *ca_file, const char *server_name) {
  tlsconn_ctx *x = calloc(1, sizeof *x);
  if (!x)
    return NULL;
  snprintf(x->name, sizeof x->name, "%s", server_name);
  int rc = gnutls_certificate_allocate_credentials(&x->cred);
  if (rc == GNUTLS_E_SUCCESS) {
    rc = gnutls_certificate_set_x509_trust_file(x->cred, ca_file, GNUTLS_X509_FMT_PEM);
    rc = rc > 0 ? GNUTLS_E_SUCCESS : rc == 0 ? GNUTLS_E_FILE_ERROR : rc;
  }
  if (rc == GNUTLS_E_SUCCESS)
    rc = gnutls_priority_init(&x->prio, "NORMAL", NULL);
  if (rc != GNUTLS_E_SUCCESS) {
    fprintf(stderr, "tlsconn: cannot trust %s: %s\n", ca_file, gnutls_strerror(rc));
    tlsconn_ctx_free(x);
    return NULL;
  }
  return x;
}

void tlsconn_ctx_free(tlsconn_ctx *x) {
  if (!x)
    return;
  if (x->prio)
    gnutls_priority_deinit(x->prio);
  if (x->cred)
    gnutls_certificate_free_credentials(x->cred);
  free(x);
}

tlsconn *tlsconn_open(tlsconn_ctx *x, int fd, const tlsconn_ticket *ticket) {
  tlsconn *t = calloc(1, sizeof *t);
  if (!t)
    return NULL;
  if (gnutls_init(&t->s, GNUTLS_CLIENT | GNUTLS_NONBLOCK | GNUTLS_NO_SIGNAL) != GNUTLS_E_SUCCESS) {
    free(t);
    return NULL;
  }
  if (gnutls_priority_set(t->s, x->prio) != GNUTLS_E_SUCCESS ||
      gnutls_credentials_set(t->s, GNUTLS_CRD_CERTIFICATE, x->cred) != GNUTLS_E_SUCCESS) {
    tlsconn_free(t);
    return NULL;
  }
  gnutls_session_set_verify_cert(t->s, x->name, 0);
  gnutls_transport_set_int(t->s, fd);
  if (ticket && ticket->data) /* a ticket the server no longer takes: a full handshake */
    gnutls_session_set_data(t->s, ticket->data, ticket->size);
  return t;
}

/* A GnuTLS result as tlsconn's: which way to wait, or an error. */
static int want(tlsconn *t, int rc) {
  if (rc == GNUTLS_E_AGAIN || rc == GNUTLS_E_INTERRUPTED)
    return gnutls_record_get_direction(t->s) ? TLSCONN_WANT_WRITE : TLSCONN_WANT_READ;
  return TLSCONN_ERROR;
}

int tlsconn_handshake(tlsconn *t) {
  int rc = gnutls_handshake(t->s);
  if (rc == GNUTLS_E_SUCCESS)
    return TLSCONN_DONE;
  if (gnutls_error_is_fatal(rc) && rc != GNUTLS_E_AGAIN)
    return TLSCONN_ERROR;
  return want(t, rc);
}

int tlsconn_resumed(const tlsconn *t) { return gnutls_session_is_resumed(t->s) != 0; }

ssize_t tlsconn_send(tlsconn *t, const void *buf, size_t len) {
  ssize_t n = gnutls_record_send(t->s, buf, len);
  return n >= 0 ? n : want(t, (int)n);
}

ssize_t tlsconn_recv(tlsconn *t, void *buf, size_t len) {
  /* GNUTLS_E_AGAIN also follows a TLS 1.3 ticket (two by default), whose
   * record may have come with the answer's: read on until the socket has
   * nothing more */
  ssize_t n = GNUTLS_E_AGAIN;
  for (int i = 0; i < 4 && n == GNUTLS_E_AGAIN; i++)
    n = gnutls_record_recv(t->s, buf, len);
  if (n >= 0)
    return n;
  if (n == GNUTLS_E_PREMATURE_TERMINATION) /* closed without close_notify: the end too */
    return 0;
  return want(t, (int)n);
}

size_t tlsconn_pending(tlsconn *t) { return gnutls_record_check_pending(t->s); }

int tlsconn_save(tlsconn *t, tlsconn_ticket *ticket) {
  gnutls_datum_t d = {NULL, 0};
  if (gnutls_session_get_data2(t->s, &d) != GNUTLS_E_SUCCESS || !d.data || !d.size) {
    gnutls_free(d.data);
    return -1;
  }
  tlsconn_ticket_free(ticket);
  ticket->data = d.data;
  ticket->size = d.size;
  return 0;
}

void tlsconn_ticket_free(tlsconn_ticket *ticket) {
  gnutls_free(ticket->data);
  ticket->data = NULL;
  ticket->size = 0;
}

void tlsconn_free(tlsconn *t) {
  if (!t)
    return;
  gnutls_deinit(t->s);
  free(t);
}
