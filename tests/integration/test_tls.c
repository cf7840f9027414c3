/* test_tls.c — cairn-server with --tls-cert/--tls-key serves HTTPS: a worker
 * that trusts the certificate (CAIRN_CA_FILE) runs a job end to end; a
 * client that does not trust it gets no answer; a client offering only TLS
 * 1.0 or 1.1 (openssl s_client, its own floor lowered) gets no handshake,
 * one offering 1.2 or 1.3 does; a client that comes back with the session
 * of its last connection (a GnuTLS client: a TLS 1.3 ticket, a TLS 1.2
 * session ticket) resumes it, and a master started again refuses those
 * (its ticket key lives only in its memory) with a full handshake. */
#include <arpa/inet.h>
#include <gnutls/gnutls.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/editdist.h"
#include "tests/support/server_fixture.h"

/* 1 when openssl s_client completes a handshake with url's host and port
 * using only TLS version flag ("-tls1", "-tls1_1", ...). */
static int handshake(const char *url, const char *flag) {
  char cmd[512], *out = NULL;
  snprintf(cmd, sizeof cmd,
           "/usr/bin/openssl s_client -connect %s %s -cipher DEFAULT@SECLEVEL=0 </dev/null 2>&1",
           url + strlen("https://"), flag);
  const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
  harness_run(argv, &out);
  int ok = out && strstr(out, "Cipher is ") && !strstr(out, "Cipher is (NONE)");
  fprintf(stderr, "openssl s_client %s: %s\n", flag, ok ? "handshake" : "refused");
  free(out);
  return ok;
}

/* One request (GET /healthz) on a new connection to url with the GnuTLS
 * client priorities prio, trusting ca; offers *sess when it holds data
 * and replaces it with the new session's. 1 when the handshake resumed,
 * 0 when it was full, -1 when anything failed. */
static int one_connection(const char *url, const char *ca, const char *prio, gnutls_datum_t *sess) {
  const char *port = strrchr(url, ':') + 1;
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)atoi(port))};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  int fd = socket(AF_INET, SOCK_STREAM, 0), resumed = -1;
  gnutls_certificate_credentials_t cred = NULL;
  gnutls_session_t s = NULL;
  char buf[4096];
  const char req[] = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof sa) ||
      gnutls_certificate_allocate_credentials(&cred) ||
      gnutls_certificate_set_x509_trust_file(cred, ca, GNUTLS_X509_FMT_PEM) != 1 ||
      gnutls_init(&s, GNUTLS_CLIENT) || gnutls_priority_set_direct(s, prio, NULL) ||
      gnutls_credentials_set(s, GNUTLS_CRD_CERTIFICATE, cred))
    goto out;
  gnutls_session_set_verify_cert(s, "127.0.0.1", 0);
  gnutls_transport_set_int(s, fd);
  if (sess->data)
    gnutls_session_set_data(s, sess->data, sess->size);
  int rc;
  do
    rc = gnutls_handshake(s);
  while (rc < 0 && !gnutls_error_is_fatal(rc));
  if (rc < 0 || gnutls_record_send(s, req, sizeof req - 1) != (ssize_t)(sizeof req - 1))
    goto out;
  size_t got = 0;
  ssize_t r;
  /* until the end; GNUTLS_E_AGAIN after a TLS 1.3 ticket, even when blocking */
  while (got < sizeof buf - 1 &&
         ((r = gnutls_record_recv(s, buf + got, sizeof buf - 1 - got)) > 0 ||
          r == GNUTLS_E_AGAIN || r == GNUTLS_E_INTERRUPTED))
    got += r > 0 ? (size_t)r : 0;
  buf[got] = '\0';
  if (strncmp(buf, "HTTP/1.1 200", 12))
    goto out;
  resumed = gnutls_session_is_resumed(s) != 0;
  gnutls_free(sess->data);
  sess->data = NULL;
  sess->size = 0;
  if (gnutls_session_get_data2(s, sess)) /* after the answer: a 1.3 ticket comes after the handshake */
    resumed = -1;
out:
  if (s)
    gnutls_deinit(s);
  if (cred)
    gnutls_certificate_free_credentials(cred);
  if (fd >= 0)
    close(fd);
  fprintf(stderr, "%s: %s\n", prio, resumed < 0 ? "failed" : resumed ? "resumed" : "full handshake");
  return resumed;
}

static void test_https_end_to_end(void **state) {
  (void)state;
  e2e_init();
  char cert[4200], key[4200], app[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir;
  snprintf(cert, sizeof cert, "%s/cert.pem", dir);
  snprintf(key, sizeof key, "%s/key.pem", dir);
  const char *mk[] = {"/usr/bin/openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes",
                      "-keyout", key, "-out", cert, "-days", "2", "-subj", "/CN=127.0.0.1",
                      "-addext", "subjectAltName=IP:127.0.0.1", NULL};
  assert_int_equal(harness_run(mk, NULL), 0);
  const char *extra[] = {"--tls-cert", cert, "--tls-key", key, NULL};
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  assert_int_equal(strncmp(sf.srv.url, "https://", 8), 0);
  /* without the CA the certificate is refused */
  unsetenv("CAIRN_CA_FILE");
  assert_int_equal(harness_http(sf.srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL), 0);
  setenv("CAIRN_CA_FILE", cert, 1);
  assert_int_equal(harness_http(sf.srv.url, "GET", "/healthz", NULL, NULL, 0, NULL, NULL, NULL),
                   200);
  assert_false(handshake(sf.srv.url, "-tls1"));
  assert_false(handshake(sf.srv.url, "-tls1_1"));
  assert_true(handshake(sf.srv.url, "-tls1_2"));
  assert_true(handshake(sf.srv.url, "-tls1_3"));
  /* a returning client resumes its session, with TLS 1.3 and 1.2 */
  const char *prios[] = {"NORMAL:-VERS-ALL:+VERS-TLS1.3", "NORMAL:-VERS-ALL:+VERS-TLS1.2"};
  gnutls_datum_t sess[2] = {{NULL, 0}, {NULL, 0}};
  for (int i = 0; i < 2; i++) {
    assert_int_equal(one_connection(sf.srv.url, cert, prios[i], &sess[i]), 0);
    assert_int_equal(one_connection(sf.srv.url, cert, prios[i], &sess[i]), 1);
    assert_int_equal(one_connection(sf.srv.url, cert, prios[i], &sess[i]), 1);
  }
  /* started again, the master has a new ticket key: a full handshake */
  assert_int_equal(server_fixture_restart(&sf, extra), 0);
  for (int i = 0; i < 2; i++) {
    assert_int_equal(one_connection(sf.srv.url, cert, prios[i], &sess[i]), 0);
    gnutls_free(sess[i].data);
  }
  e2e_make_job(dir, 30, 30, 10);
  long long job = e2e_submit(sf.srv.url, dir);
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  pid_t w = e2e_worker(sf.srv.url, dir, 0, app, "2");
  assert_string_equal(e2e_wait(sf.srv.url, job, 120), "done");
  e2e_check_results(sf.srv.url, job, dir, 10, 9, 1);
  harness_wait(w, 30);
  assert_int_equal(server_fixture_stop(&sf, SIGTERM), 0);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_https_end_to_end)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
