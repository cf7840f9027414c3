/* test_audit_chain.c — the tamper-evident audit trail with real processes:
 * a master runs a job (replication 2: allocations, results, outcome changes,
 * credit), is killed with SIGKILL, restarts, bans a volunteer and runs a
 * second job; `cairn audit verify --db` finds the chain whole, without a
 * break at the restart. Copies of the database then have a result edited
 * (its row and its chain entry), a chain row deleted, two rows reordered,
 * a checkpoint signature forged: each is found and located by its seq; the
 * live tables edited, deleted from, inserted into or reordered without the
 * chain: each is found and located by table, row and seq, and job 1's
 * deletion is not taken for tampering. An
 * export verifies without the database, a one-job export too, and a
 * tampered export is found. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tests/support/editdist.h"
#include "tests/support/files.h"
#include "tests/support/server_fixture.h"

#define ADMIN HARNESS_ADMIN_TOKEN

static int setup(void **state) {
  (void)state;
  e2e_init();
  return 0;
}

/* cairn audit ARGS...; its exit status, stdout in *out (caller frees). */
static int audit(char **out, const char *a1, const char *a2, const char *a3, const char *a4,
                 const char *a5) {
  const char *argv[] = {e2e_bin_cli, "audit", a1, a2, a3, a4, a5, NULL};
  int rc = harness_run(argv, out);
  fprintf(stderr, "cairn audit %s %s %s: exit %d\n%s", a1, a2 ? a2 : "", a3 ? a3 : "", rc,
          *out ? *out : "");
  return rc;
}

/* A copy of db (and its key) at copy, then text run on it; verify must
 * fail and name seq (and kind when not NULL). */
static void tampered(const char *db, const char *copy, const char *text, long long seq,
                     const char *kind) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s.audit-key' '%s.audit-key'", db, copy, db,
           copy);
  assert_int_equal(system(cmd), 0);
  files_sql(copy, text);
  char *out = NULL, want[128];
  assert_int_equal(audit(&out, "verify", "--db", copy, NULL, NULL), 1);
  snprintf(want, sizeof want, "FIRST PROBLEM: seq %lld (%s)", seq, kind);
  assert_non_null(strstr(out, want));
  free(out);
}

/* As tampered(), for a live table's row: verify names the table, the row
 * and the entry's seq (0: none, printed "-"). */
static void tampered_live(const char *db, const char *copy, const char *text, long long seq,
                          const char *table, long long row) {
  char cmd[16384];
  snprintf(cmd, sizeof cmd, "cp '%s' '%s' && cp '%s.audit-key' '%s.audit-key'", db, copy, db,
           copy);
  assert_int_equal(system(cmd), 0);
  files_sql(copy, text);
  char *out = NULL, want[160], s[24] = "-";
  if (seq)
    snprintf(s, sizeof s, "%lld", seq);
  assert_int_equal(audit(&out, "verify", "--db", copy, NULL, NULL), 1);
  snprintf(want, sizeof want, "FIRST PROBLEM: seq %s (%s row %lld): ", s, table, row);
  assert_non_null(strstr(out, want));
  free(out);
  /* the chain itself is whole: --chain-only finds nothing */
  const char *argv[] = {e2e_bin_cli, "audit", "verify", "--db", copy, "--chain-only", NULL};
  assert_int_equal(harness_run(argv, &out), 0);
  assert_null(strstr(out, "live rows"));
  free(out);
}

/* Each kind of tampering with the live tables, on copies of db, is found
 * and located: an allocation's volunteer edited, a result deleted, a forged
 * allocation inserted, two results swapped, an outcome edited, a ban
 * undone, credit totals edited. */
static void tamper_live_rows(const char *db, const char *copy) {
  char text[1024];
  long long x = files_sql_int(db, "SELECT MAX(idx) FROM allocations");
  long long xseq = files_sql_int(db, "SELECT seq FROM audit_chain WHERE kind = 'alloc' AND idx = "
                               "(SELECT MAX(idx) FROM allocations)");
  snprintf(text, sizeof text, "UPDATE allocations SET volunteer_id = volunteer_id + 1 "
           "WHERE idx = %lld", x);
  tampered_live(db, copy, text, xseq, "allocations", x);

  long long y = files_sql_int(db, "SELECT MAX(idx) FROM results");
  snprintf(text, sizeof text, "SELECT seq FROM audit_chain WHERE kind = 'result' AND idx = %lld",
           y);
  long long yseq = files_sql_int(db, text);
  snprintf(text, sizeof text, "DELETE FROM results WHERE idx = %lld", y);
  tampered_live(db, copy, text, yseq, "results", y);

  snprintf(text, sizeof text, "INSERT INTO allocations(idx, volunteer_id, t, task_id, round, "
           "issued, lease_expires, state) SELECT 999999999, volunteer_id, 999999, task_id, "
           "round, issued, lease_expires, state FROM allocations WHERE idx = %lld", x);
  tampered_live(db, copy, text, 0, "allocations", 999999999);

  /* two results of different volunteers swap places */
  long long a = files_sql_int(db, "SELECT MIN(idx) FROM results");
  snprintf(text, sizeof text, "SELECT MIN(idx) FROM results WHERE volunteer_id <> (SELECT "
           "volunteer_id FROM results WHERE idx = %lld)", a);
  long long b = files_sql_int(db, text);
  snprintf(text, sizeof text, "SELECT seq FROM audit_chain WHERE kind = 'result' AND idx = %lld",
           a);
  long long aseq = files_sql_int(db, text);
  snprintf(text, sizeof text, "UPDATE results SET idx = -1 WHERE idx = %lld; UPDATE results SET "
           "idx = %lld WHERE idx = %lld; UPDATE results SET idx = %lld WHERE idx = -1", a, a, b,
           b);
  tampered_live(db, copy, text, aseq, "results", a);

  /* an accepted result turned invalid: the entry is its latest outcome */
  long long v = files_sql_int(db, "SELECT MIN(idx) FROM results WHERE outcome = 'valid'");
  snprintf(text, sizeof text, "SELECT MAX(seq) FROM audit_chain WHERE kind IN ('result', "
           "'outcome') AND idx = %lld", v);
  long long vseq = files_sql_int(db, text);
  snprintf(text, sizeof text, "UPDATE results SET outcome = 'invalid' WHERE idx = %lld", v);
  tampered_live(db, copy, text, vseq, "results", v);

  /* a ban undone; credit totals raised */
  long long banned = files_sql_int(db, "SELECT id FROM volunteers WHERE banned = 1");
  long long bseq = files_sql_int(db, "SELECT seq FROM audit_chain WHERE kind = 'ban'");
  tampered_live(db, copy, "UPDATE volunteers SET banned = 0", bseq, "volunteers", banned);
  long long c = files_sql_int(db, "SELECT MIN(id) FROM volunteers WHERE credited > 0");
  snprintf(text, sizeof text, "SELECT MAX(seq) FROM audit_chain WHERE kind = 'credit' AND "
           "vol = %lld", c);
  long long cseq = files_sql_int(db, text);
  snprintf(text, sizeof text, "UPDATE volunteers SET credited = credited + 1 WHERE id = %lld", c);
  tampered_live(db, copy, text, cseq, "volunteers", c);
}

static void run_job(const char *url, const char *dir, long long job, int first_worker) {
  char app[4200];
  snprintf(app, sizeof app, "editdist=%s", e2e_bin_app);
  pid_t w1 = e2e_worker(url, dir, first_worker, app, "3");
  pid_t w2 = e2e_worker(url, dir, first_worker + 1, app, "3");
  assert_string_equal(e2e_wait(url, job, 240), "done");
  harness_wait(w1, 30);
  harness_wait(w2, 30);
}

static void test_chain_verify_tamper_export(void **state) {
  (void)state;
  char copy[4200], file[4200], part[4200];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *dir = sf.dir, *db = sf.db;
  snprintf(copy, sizeof copy, "%s/copy.db", dir);
  snprintf(file, sizeof file, "%s/all.audit", dir);
  snprintf(part, sizeof part, "%s/job1.audit", dir);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  e2e_make_job(dir, 40, 40, 10); /* 16 tasks */
  char cmd[9000];
  snprintf(cmd, sizeof cmd, "%s/job.json", dir);
  json_t *spec = json_load_file(cmd, 0, NULL);
  assert_non_null(spec);
  json_object_set_new(spec, "replication", json_integer(2));
  json_object_set_new(spec, "quorum", json_integer(2));
  assert_int_equal(json_dump_file(spec, cmd, JSON_COMPACT), 0);
  json_decref(spec);
  long long job1 = e2e_submit(sf.srv.url, dir);
  run_job(sf.srv.url, dir, job1, 1);
  long long head1 = files_sql_int(db, "SELECT MAX(seq) FROM audit_chain");
  assert_true(head1 >= 16 * 2 * 2); /* an allocation and a result per replica */
  assert_true(files_sql_int(db, "SELECT COUNT(*) FROM audit_chain WHERE kind = 'outcome'") > 0);

  /* kill -9, restart: the chain goes on from the committed head */
  server_fixture_stop(&sf, SIGKILL);
  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  char token[65], path[64];
  long long vol = harness_register(sf.srv.url, "banned", "editdist", token);
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", vol);
  assert_int_equal(harness_http(sf.srv.url, "POST", path, ADMIN, "{}", 2, NULL, NULL, NULL), 200);
  long long job2 = e2e_submit(sf.srv.url, dir);
  run_job(sf.srv.url, dir, job2, 3);
  /* job 1 deleted: its results go, its entries stay */
  char jobs[32];
  snprintf(jobs, sizeof jobs, "%lld", job1);
  const char *del[] = {e2e_bin_cli, "delete", jobs, "--server", sf.srv.url, NULL};
  assert_int_equal(harness_run(del, NULL), 0);
  server_fixture_stop(&sf, SIGTERM); /* signs the last head */
  long long head = files_sql_int(db, "SELECT MAX(seq) FROM audit_chain");
  assert_true(head > head1);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM audit_chain"), head);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM audit_chain WHERE kind = 'ban'"), 1);
  assert_int_equal(files_sql_int(db, "SELECT MAX(seq) FROM audit_checkpoints"), head);

  char *out = NULL, want[128], key[65] = "";
  assert_int_equal(audit(&out, "verify", "--db", db, NULL, NULL), 0);
  const char *k = strstr(out, "; key ");
  assert_non_null(k);
  assert_int_equal(sscanf(k, "; key %64[0-9a-f]", key), 1); /* the master's, pinned below */
  char live[160], gone[256];
  snprintf(gone, sizeof gone, "SELECT COUNT(*) FROM audit_chain c JOIN tasks t ON t.id = c.task "
           "WHERE c.kind = 'result' AND t.job_id = %lld", job1);
  assert_true(files_sql_int(db, gone) > 0);
  snprintf(live, sizeof live, "live rows checked: %lld allocations, %lld results, %lld "
           "volunteers, %lld teams (and %lld entries whose rows went with deleted jobs)\n",
           files_sql_int(db, "SELECT COUNT(*) FROM allocations"),
           files_sql_int(db, "SELECT COUNT(*) FROM results"),
           files_sql_int(db, "SELECT COUNT(*) FROM volunteers"),
           files_sql_int(db, "SELECT COUNT(*) FROM team_credit"), files_sql_int(db, gone));
  assert_non_null(strstr(out, live));
  snprintf(want, sizeof want, "entries checked: %lld\n", head);
  assert_non_null(strstr(out, want));
  assert_non_null(strstr(out, "\nOK\n"));
  free(out);
  tamper_live_rows(db, copy);

  /* a result edited in its table and in its chain entry (its exit status) */
  long long rseq = files_sql_int(db, "SELECT MIN(seq) FROM audit_chain WHERE kind = 'result'");
  char text[512];
  snprintf(text, sizeof text,
           "UPDATE results SET exit_status = 1 WHERE idx = (SELECT idx FROM audit_chain "
           "WHERE seq = %lld); UPDATE audit_chain SET body = substr(body, 1, 41) || x'01' || "
           "substr(body, 43) WHERE seq = %lld", rseq, rseq);
  tampered(db, copy, text, rseq, "result");
  /* a row deleted; two rows reordered */
  tampered(db, copy, "DELETE FROM audit_chain WHERE seq = 7", 7, "missing");
  tampered(db, copy, "UPDATE audit_chain SET seq = -1 WHERE seq = 9; UPDATE audit_chain SET "
                     "seq = 9 WHERE seq = 10; UPDATE audit_chain SET seq = 10 WHERE seq = -1",
           9, "alloc");
  /* a forged checkpoint signature */
  snprintf(text, sizeof text, "UPDATE audit_checkpoints SET sig = zeroblob(64) WHERE seq = %lld",
           head);
  tampered(db, copy, text, head, "checkpoint");

  /* exports: all, one job; both verify without the database */
  assert_int_equal(audit(&out, "export", "--db", db, "-o", file), 0);
  free(out);
  assert_int_equal(audit(&out, "verify", file, "--pubkey", key, NULL), 0);
  assert_non_null(strstr(out, want));
  free(out);
  char job[32];
  snprintf(job, sizeof job, "%lld", job1);
  const char *argv[] = {e2e_bin_cli, "audit", "export", "--db", db, job, "-o", part, NULL};
  assert_int_equal(harness_run(argv, NULL), 0);
  assert_int_equal(audit(&out, "verify", part, "--pubkey", key, NULL), 0);
  assert_non_null(strstr(out, "of other jobs by their links"));
  assert_non_null(strstr(out, "\nOK\n"));
  free(out);
  /* an export with one entry's content changed */
  snprintf(cmd, sizeof cmd, "sed -i '0,/^entry 5 /s/^\\(entry 5 [a-z_]* ..\\)./\\1f/' '%s'",
           file);
  assert_int_equal(system(cmd), 0);
  assert_int_equal(audit(&out, "verify", file, "--pubkey", key, NULL), 1);
  assert_non_null(strstr(out, "FIRST PROBLEM: seq 5 "));
  free(out);
  (void)job2;
  assert_int_equal(server_fixture_close(&sf), 0);
}

/* --audit-chain off: a ban (a chained record) leaves no entry and no key,
 * and notes the gap; turned on again, the chain starts and verifies, the
 * live check letting the unchained ban pass. */
static void test_chain_off(void **state) {
  (void)state;
  char key[4300];
  server_fixture sf;
  assert_int_equal(server_fixture_open(&sf, NULL, 0), 0);
  const char *db = sf.db;
  snprintf(key, sizeof key, "%s.audit-key", db);
  const char *off[] = {"--audit-chain", "off", NULL};
  assert_int_equal(server_fixture_restart(&sf, off), 0);
  char token[65], path[64];
  long long vol = harness_register(sf.srv.url, "v", "editdist", token);
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", vol);
  assert_int_equal(harness_http(sf.srv.url, "POST", path, ADMIN, "{}", 2, NULL, NULL, NULL), 200);
  server_fixture_stop(&sf, SIGTERM);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM audit_chain"), 0);
  assert_int_equal(access(key, F_OK), -1);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_chain_gap' AND "
                               "value = 'records written with the chain off'"), 1);
  /* without that note, a start finds the records the empty chain does not
   * describe (as on a database from before the chain) and notes them */
  files_sql(db, "DELETE FROM meta WHERE key = 'audit_chain_gap'");
  assert_int_equal(server_fixture_restart(&sf, off), 0);
  server_fixture_stop(&sf, SIGTERM);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM meta WHERE key = 'audit_chain_gap' AND "
                               "value = 'records from before the chain'"), 1);

  assert_int_equal(server_fixture_restart(&sf, NULL), 0);
  vol = harness_register(sf.srv.url, "w", "editdist", token);
  snprintf(path, sizeof path, "/v1/volunteers/%lld/ban", vol);
  assert_int_equal(harness_http(sf.srv.url, "POST", path, ADMIN, "{}", 2, NULL, NULL, NULL), 200);
  server_fixture_stop(&sf, SIGTERM);
  assert_int_equal(files_sql_int(db, "SELECT COUNT(*) FROM audit_chain WHERE kind = 'ban'"), 1);
  assert_int_equal(access(key, R_OK), 0);
  char *out = NULL;
  assert_int_equal(audit(&out, "verify", "--db", db, NULL, NULL), 0);
  assert_non_null(strstr(out, "entries checked: 1\n"));
  /* the volunteer banned while the chain was off has no entry: the gap
   * lets it pass */
  assert_non_null(strstr(out, "chain gap (meta audit_chain_gap: records from before the chain): "
                              "1 rows without entries allowed\n"));
  assert_non_null(strstr(out, "\nOK\n"));
  free(out);
  assert_int_equal(server_fixture_close(&sf), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_chain_verify_tamper_export),
    cmocka_unit_test(test_chain_off),
  };
  return cmocka_run_group_tests(tests, setup, NULL);
}
