/* test_audit_key_pinning.c — an audit export names its own public key, so
 * whoever writes an export can sign it with a key of their own. Two real
 * masters each chain a ban and sign it (the genuine one, and a forger's on
 * another database, hence another key); their exports are checked with the
 * real `cairn audit verify FILE`:
 *   - without --pubkey or --trust-embedded-key, the forged export is not
 *     "OK": it prints KEY NOT PINNED with the key it carries and exits 2;
 *   - with the genuine master's key (--pubkey) the forged export fails
 *     (exit 1, a checkpoint problem) and the genuine one is OK;
 *   - with --trust-embedded-key it is OK, with a line saying the key was
 *     not pinned and showing the key;
 *   - --trust-embedded-key with --pubkey, or with --db, is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tests/support/harness.h"

#define ADMIN HARNESS_ADMIN_TOKEN

typedef struct master_export {
  char db[4200], file[4300];
  char key[65]; /* the master's public key, as `cairn audit verify --db` prints it */
} master_export;

static char g_dir[4096], g_cli[4096];
static master_export g_real, g_forged;

/* cairn ARGS... (NULL-terminated, at most 8); exit status, stdout in *out. */
static int cli(char **out, const char *a1, const char *a2, const char *a3, const char *a4,
               const char *a5, const char *a6) {
  const char *argv[] = {g_cli, a1, a2, a3, a4, a5, a6, NULL};
  *out = NULL;
  int rc = harness_run(argv, out);
  fprintf(stderr, "cairn %s %s %s %s %s: exit %d\n%s", a1, a2 ? a2 : "", a3 ? a3 : "",
          a4 ? a4 : "", a5 ? a5 : "", rc, *out ? *out : "");
  return rc;
}

/* A master on DIR/NAME.db bans one volunteer (a chained record), stops
 * (signing its head) and its chain is exported to DIR/NAME.export. */
static void make_export(const char *name, master_export *e) {
  snprintf(e->db, sizeof e->db, "%s/%s.db", g_dir, name);
  snprintf(e->file, sizeof e->file, "%s/%s.export", g_dir, name);
  harness_server srv;
  assert_int_equal(harness_server_start(&srv, e->db, NULL), 0);
  char token[65], path[64];
  long long vol = harness_register(srv.url, "v", "sum", token);
  assert_true(vol > 0);
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", vol);
  assert_int_equal(harness_http(srv.url, "POST", path, ADMIN, "{}", 2, NULL, NULL, NULL), 200);
  assert_int_equal(harness_server_stop(&srv, SIGTERM), 0);
  char *out = NULL;
  assert_int_equal(cli(&out, "audit", "verify", "--db", e->db, NULL, NULL), 0);
  const char *k = strstr(out, "; key ");
  assert_non_null(k);
  assert_int_equal(sscanf(k, "; key %64[0-9a-f]", e->key), 1);
  free(out);
  assert_int_equal(cli(&out, "audit", "export", "--db", e->db, "-o", e->file), 0);
  free(out);
}

static int setup(void **state) {
  (void)state;
  harness_tmpdir(g_dir, sizeof g_dir);
  harness_bin(g_cli, sizeof g_cli, "cairn");
  return 0;
}

static void test_exports_from_two_masters(void **state) {
  (void)state;
  make_export("real", &g_real);
  make_export("forged", &g_forged);
  assert_int_equal(strlen(g_real.key), 64);
  assert_string_not_equal(g_real.key, g_forged.key); /* each database made its own key */
}

/* Neither --pubkey nor --trust-embedded-key: never a plain OK. */
static void test_unpinned_is_not_ok(void **state) {
  (void)state;
  char *out = NULL;
  assert_int_equal(cli(&out, "audit", "verify", g_forged.file, NULL, NULL, NULL), 2);
  assert_null(strstr(out, "\nOK"));
  assert_non_null(strstr(out, "KEY NOT PINNED"));
  assert_non_null(strstr(out, g_forged.key)); /* the key the export carries, to compare */
  free(out);
  /* the genuine export too: nothing says who signed it */
  assert_int_equal(cli(&out, "audit", "verify", g_real.file, NULL, NULL, NULL), 2);
  assert_null(strstr(out, "\nOK"));
  free(out);
}

/* The genuine master's key pinned: the forgery fails, the genuine export
 * passes. */
static void test_pinned_key(void **state) {
  (void)state;
  char *out = NULL;
  assert_int_equal(cli(&out, "audit", "verify", g_forged.file, "--pubkey", g_real.key, NULL), 1);
  assert_non_null(strstr(out, "FIRST PROBLEM"));
  assert_non_null(strstr(out, "(checkpoint)"));
  free(out);
  assert_int_equal(cli(&out, "audit", "verify", g_real.file, "--pubkey", g_real.key, NULL), 0);
  assert_non_null(strstr(out, "\nOK\n"));
  assert_null(strstr(out, "not pinned"));
  assert_null(strstr(out, "NOT PINNED"));
  free(out);
}

/* --trust-embedded-key: OK, saying that the key was not pinned and which
 * it was. */
static void test_trust_embedded_key(void **state) {
  (void)state;
  char *out = NULL, want[160];
  assert_int_equal(cli(&out, "audit", "verify", g_forged.file, "--trust-embedded-key", NULL,
                       NULL), 0);
  assert_non_null(strstr(out, "\nOK\n"));
  snprintf(want, sizeof want, "key not pinned: trusted the export's own key %s", g_forged.key);
  assert_non_null(strstr(out, want));
  free(out);
  assert_int_equal(cli(&out, "audit", "verify", g_forged.file, "--trust-embedded-key",
                       "--pubkey", g_real.key), 1);
  free(out);
  assert_int_equal(cli(&out, "audit", "verify", "--db", g_real.db, "--trust-embedded-key",
                       NULL), 1);
  free(out);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_exports_from_two_masters),
    cmocka_unit_test(test_unpinned_is_not_ok),
    cmocka_unit_test(test_pinned_key),
    cmocka_unit_test(test_trust_embedded_key),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
