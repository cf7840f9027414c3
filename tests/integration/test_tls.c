/* test_tls.c — cairn-server with --tls-cert/--tls-key serves HTTPS: a worker
 * that trusts the certificate (CAIRN_CA_FILE) runs a job end to end; a
 * client that does not trust it gets no answer; a client offering only TLS
 * 1.0 or 1.1 (openssl s_client, its own floor lowered) gets no handshake,
 * one offering 1.2 or 1.3 does. */
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
