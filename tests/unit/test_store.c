/* test_store.c — the SQLite store on real files in a fresh folder: schema
 * migrations recorded once, a database of the first schema upgraded in place,
 * WAL mode, rows written in a transaction and read
 * back through the loaders after a reopen, rollback, the reader connection
 * (outputs, job results, audit trail), and constraint violations reported
 * as CAIRN_EIO with the transaction still recoverable. The schema table and
 * the file header are also read with sqlite3 directly, as an independent
 * check of what is on disk. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "server/store/load.h"
#include "tests/support/files.h"

#define SHA_F "f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1f1"
#define SHA_G "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define HASH1 "1111111111111111111111111111111111111111111111111111111111111111"
#define HASH2 "2222222222222222222222222222222222222222222222222222222222222222"
#define DG_A "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
#define DG_B "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"

typedef struct fixture {
  char dir[256];
  char db[300];
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  if (!f)
    return -1;
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/cairn-store-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(f->dir)) {
    free(f);
    return -1;
  }
  snprintf(f->db, sizeof f->db, "%s/cairn.db", f->dir);
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  char p[400];
  static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
  for (size_t i = 0; i < sizeof suffix / sizeof *suffix; i++) {
    snprintf(p, sizeof p, "%s%s", f->db, suffix[i]);
    unlink(p);
  }
  int rc = rmdir(f->dir);
  free(f);
  return rc;
}

static cairn__store *open_store(const fixture *f) {
  cairn_error err = {0};
  cairn__store *s = cairn__store_open(f->db, 1, &err);
  if (!s)
    fail_msg("cannot open %s: %s", f->db, err.text);
  return s;
}

#define OK(call)                                                                   \
  do {                                                                             \
    cairn_error e_ = {0};                                                          \
    cairn_status st_ = (call);                                                     \
    if (st_ != CAIRN_OK)                                                           \
      fail_msg("%s: status %d: %s", #call, (int)st_, e_.text);                     \
  } while (0)
#define E (&e_)

/* The text of schema/NAME in the source tree (caller frees). */
static char *schema_file(const char *name) {
  const char *src = getenv("CAIRN_SOURCE_DIR");
  char path[4096];
  snprintf(path, sizeof path, "%s/schema/%s", src && *src ? src : ".", name);
  FILE *fp = fopen(path, "rb");
  if (!fp)
    fail_msg("cannot read %s", path);
  char *text = calloc(1, 1 << 16);
  assert_non_null(text);
  size_t n = fread(text, 1, (1 << 16) - 1, fp);
  fclose(fp);
  assert_true(n > 0 && n < (1 << 16) - 1);
  return text;
}

extern const struct {
  const char *name;
  const char *sql;
} cairn__migrations[];

/* The embedded migrations: how many, and the largest version. */
static int migrations_count(void) {
  int n = 0;
  while (cairn__migrations[n].name)
    n++;
  return n;
}
static int latest_version(void) {
  int v = 0;
  for (int n = 0; cairn__migrations[n].name; n++)
    if (atoi(cairn__migrations[n].name) > v)
      v = atoi(cairn__migrations[n].name);
  return v;
}

static void test_fresh_file_gets_schema_once(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  assert_int_equal(cairn__store_schema_version(s), latest_version());
  OK(cairn__store_begin(s, E));
  OK(cairn__store_meta_set(s, "ataf_family", "phisharp", E));
  OK(cairn__store_commit(s, E));
  cairn__store_close(s);

  s = open_store(f);
  assert_int_equal(cairn__store_schema_version(s), latest_version());
  char v[32];
  assert_int_equal(cairn__store_meta_get(s, "ataf_family", v, sizeof v), 0);
  assert_string_equal(v, "phisharp");
  assert_int_equal(cairn__store_meta_get(s, "nothing", v, sizeof v), -1);
  cairn__store_close(s);
  s = open_store(f);
  assert_int_equal(cairn__store_schema_version(s), latest_version());
  cairn__store_close(s);

  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations"), migrations_count());
  assert_int_equal(files_sql_int(f->db, "SELECT MAX(version) FROM schema_migrations"), latest_version());
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations "
                                  "WHERE version = 1 AND name = '0001_init.sql' AND applied > 0"),
                   1);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations WHERE version = 2 "
                                  "AND name = '0002_file_holders.sql' AND applied > 0"),
                   1);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations WHERE version = 3 "
                                  "AND name = '0003_link_rates.sql' AND applied > 0"),
                   1);
}

static void test_wal_mode(void **state) {
  fixture *f = *state;
  char wal[400];
  snprintf(wal, sizeof wal, "%s-wal", f->db);
  cairn__store *s = open_store(f);
  OK(cairn__store_begin(s, E));
  OK(cairn__store_meta_set(s, "k", "v", E));
  OK(cairn__store_commit(s, E));
  struct stat st;
  assert_int_equal(stat(wal, &st), 0);
  assert_true(st.st_size > 0);
  cairn__store_close(s);
  /* bytes 18 and 19 of the header are 2 for a WAL-mode database */
  unsigned char hdr[20];
  FILE *fp = fopen(f->db, "rb");
  assert_non_null(fp);
  assert_int_equal(fread(hdr, 1, sizeof hdr, fp), sizeof hdr);
  fclose(fp);
  assert_int_equal(hdr[18], 2);
  assert_int_equal(hdr[19], 2);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM meta WHERE key = 'k'"), 1);
}

/* Two volunteers, one file, a job of three tasks a <- b, a <- c (c also
 * after b), allocations of two rounds and results. */
static void write_sample(cairn__store *s) {
  OK(cairn__store_begin(s, E));
  OK(cairn__store_volunteer_insert(s, 1, "w1", "rack-a", "[\"sum\"]", 2, HASH1, 1000, E));
  OK(cairn__store_volunteer_insert(s, 2, "w2", "rack-b", "[\"sum\",\"cell\"]", 1, HASH2, 1001, E));
  OK(cairn__store_file_insert(s, SHA_F, 1234, 1002, E));
  OK(cairn__store_file_insert(s, SHA_G, 5, 1002, E));
  OK(cairn__store_file_insert(s, SHA_F, 1234, 1003, E)); /* again: ignored */
  OK(cairn__store_job_insert(s, 1, "demo", "sum", "fifo", 2, 1, 60, 4, 1004, 0, E));
  OK(cairn__store_job_file_insert(s, 1, 0, "genome.fa", SHA_F, 0, E));
  OK(cairn__store_job_file_insert(s, 1, 1, "ref", SHA_G, 1, E));
  OK(cairn__store_task_insert(s, 10, 1, 0, "a", "[\"1\"]", "[0]", "eligible",
                             "{\"limits\":{\"wall_seconds\":5}}", E));
  OK(cairn__store_task_insert(s, 11, 1, 1, "b", "[]", "[]", "waiting", NULL, E));
  OK(cairn__store_task_insert(s, 12, 1, 2, "c", "[\"x\",\"y\"]", "[1,0]", "waiting", NULL, E));
  OK(cairn__store_task_parent_insert(s, 11, 10, 0, E));
  OK(cairn__store_task_parent_insert(s, 12, 11, 0, E));
  OK(cairn__store_task_parent_insert(s, 12, 10, 1, E));
  /* task a: round 0 allocation 1 (volunteer 1, t=1), then round 1 allocations */
  OK(cairn__store_alloc_insert(s, 1, 1, 1, 10, 2000, 2060, 0, E));
  OK(cairn__store_result_insert(s, 1, 10, 1, 0, "old", 3, DG_B, 2010, "tainted", NULL, NULL, 0, E));
  OK(cairn__store_alloc_update(s, 1, 2060, "returned", E));
  OK(cairn__store_alloc_insert(s, 2, 2, 1, 10, 2100, 2160, 1, E));
  OK(cairn__store_alloc_insert(s, 3, 1, 2, 10, 2101, 2161, 1, E));
  static const char out[] = {'4', '2', 0, '\n'};
  OK(cairn__store_result_insert(s, 2, 10, 2, 0, out, sizeof out, DG_A, 2150, "pending", NULL, NULL, 0, E));
  OK(cairn__store_alloc_update(s, 2, 2160, "returned", E));
  OK(cairn__store_result_outcome(s, 2, "valid", E));
  OK(cairn__store_alloc_update(s, 3, 2300, "leased", E));
  OK(cairn__store_task_update(s, 10, "done", 2, 2, 1, E));
  OK(cairn__store_task_update(s, 11, "eligible", 0, 0, 0, E));
  /* task b: a failed attempt by volunteer 1 (t=3), expired later */
  OK(cairn__store_alloc_insert(s, 5, 1, 3, 11, 2200, 2260, 0, E));
  OK(cairn__store_result_insert(s, 5, 11, 1, 3, "", 0, DG_B, 2210, "error", "exit 3", NULL, 0, E));
  OK(cairn__store_alloc_update(s, 5, 2260, "returned", E));
  OK(cairn__store_job_update(s, 1, "failed", 2300, E));
  OK(cairn__store_commit(s, E));
}

typedef struct rows {
  int n;
  char text[16][160];
  int64_t num[16][8];
} rows;

static int vol_cb(void *ud, const cairn__store_volunteer_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s|%s|%s|%s", r->name, r->cluster, r->apps_json,
           r->token_hash);
  int64_t v[] = {r->id, r->slots, r->banned, r->allocations, r->created};
  memcpy(w->num[w->n++], v, sizeof v);
  return 0;
}

static int job_cb(void *ud, const cairn__store_job_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s|%s|%s|%s", r->name, r->app, r->policy, r->state);
  int64_t v[] = {r->id,           r->replication, r->quorum,  r->lease_seconds,
                 r->max_attempts, r->created,     r->finished};
  memcpy(w->num[w->n++], v, sizeof v);
  return 0;
}

static int jf_cb(void *ud, const cairn__store_job_file_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s|%s", r->name, r->sha256);
  int64_t v[] = {r->job, r->seq, r->broadcast, r->size};
  memcpy(w->num[w->n++], v, sizeof v);
  return 0;
}

static int task_cb(void *ud, const cairn__store_task_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s|%s|%s|%s|%s", r->name, r->args_json,
           r->inputs_json, r->state, r->run_json ? r->run_json : "-");
  int64_t v[] = {r->key, r->job, r->seq, r->attempts, r->accepted, r->round};
  memcpy(w->num[w->n++], v, sizeof v);
  return 0;
}

static int edge_cb(void *ud, const cairn__store_edge_row *r) {
  rows *w = ud;
  int64_t v[] = {r->task, r->parent, r->pos};
  memcpy(w->num[w->n++], v, sizeof v);
  return 0;
}

static int alloc_cb(void *ud, const cairn__store_alloc_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s|%s|%s", r->state, r->digest, r->outcome);
  int64_t v[] = {r->idx, r->volunteer, r->t, r->task, r->issued, r->expires, r->exit_status};
  memcpy(w->num[w->n++], v, sizeof v);
  return 0;
}

static int file_cb(void *ud, const cairn__store_file_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s", r->sha256);
  w->num[w->n++][0] = r->size;
  return 0;
}

static int outcome_cb(void *ud, const cairn__store_outcome_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%lld:%s=%lld", (long long)r->volunteer, r->outcome,
           (long long)r->count);
  w->n++;
  return 0;
}

static int has_text(const rows *w, const char *s) {
  for (int i = 0; i < w->n; i++)
    if (strcmp(w->text[i], s) == 0)
      return 1;
  return 0;
}

/* A database written by a master that knew only 0001 — made here with
 * sqlite3 from schema/0001_init.sql and the schema_migrations row the
 * runner records — is upgraded in place when the store opens it: 0002 is
 * applied once, and what the old master wrote is read back unchanged. */
static void test_upgrade_from_0001(void **state) {
  fixture *f = *state;
  char *init = schema_file("0001_init.sql");
  files_sql(f->db, init);
  free(init);
  files_sql(f->db,
           "CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, "
           "applied INTEGER NOT NULL);"
           "INSERT INTO schema_migrations VALUES (1, '0001_init.sql', 1700000000);"
           "INSERT INTO meta VALUES ('ataf_family', 'phi3');"
           "INSERT INTO volunteers (id, name, cluster, apps, slots, token_hash, peer_url, "
           "created, banned) VALUES (1, 'old', 'rack-a', '[\"sum\"]', 2, '" HASH1 "', "
           "'http://127.0.0.1:7001', 1000, 0);"
           "INSERT INTO files VALUES ('" SHA_F "', 1234, 1002);"
           "INSERT INTO jobs (id, name, app, policy, replication, quorum, lease_seconds, "
           "max_attempts, state, created) VALUES (1, 'demo', 'sum', 'fifo', 1, 1, 60, 3, "
           "'running', 1004);"
           "INSERT INTO job_files VALUES (1, 0, 'genome.fa', '" SHA_F "', 1);");
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM sqlite_master "
                                  "WHERE name = 'file_holders'"), 0);

  cairn__store *s = open_store(f);
  assert_int_equal(cairn__store_schema_version(s), latest_version());
  char v[32];
  assert_int_equal(cairn__store_meta_get(s, "ataf_family", v, sizeof v), 0);
  assert_string_equal(v, "phi3");
  rows w = {0};
  OK(cairn__store_load_volunteers(s, vol_cb, &w, E));
  assert_int_equal(w.n, 1);
  assert_string_equal(w.text[0], "old|rack-a|[\"sum\"]|" HASH1);
  memset(&w, 0, sizeof w);
  OK(cairn__store_load_files(s, file_cb, &w, E));
  assert_int_equal(w.n, 1);
  assert_string_equal(w.text[0], SHA_F);
  assert_int_equal(w.num[0][0], 1234);
  memset(&w, 0, sizeof w);
  OK(cairn__store_load_job_files(s, jf_cb, &w, E));
  assert_int_equal(w.n, 1);
  assert_string_equal(w.text[0], "genome.fa|" SHA_F);
  /* the new table takes holdings of the old volunteer and file */
  OK(cairn__store_begin(s, E));
  OK(cairn__store_holder_insert(s, SHA_F, 1, 2000, E));
  OK(cairn__store_commit(s, E));
  cairn__store_close(s);

  /* the upgrade is recorded next to the old row, and not run again */
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations"), migrations_count());
  assert_int_equal(files_sql_int(f->db, "SELECT applied FROM schema_migrations WHERE version = 1"),
                   1700000000);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations WHERE version = 2 "
                                  "AND name = '0002_file_holders.sql'"), 1);
  assert_int_equal(files_sql_int(f->db, "SELECT since FROM file_holders WHERE volunteer_id = 1"), 2000);
  assert_int_equal(files_sql_int(f->db, "SELECT peer_url = 'http://127.0.0.1:7001' FROM volunteers"),
                   1);
  s = open_store(f);
  assert_int_equal(cairn__store_schema_version(s), latest_version());
  cairn__store_close(s);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM schema_migrations"), migrations_count());
}

/* A database from before the team ledger (0018_team_ledger.sql undone):
 * its upgrade starts each team's ledger from its members' sums of then
 * (banned ones left out), gives each valid credited result its
 * volunteer's team, and notes team_ledger_gap for the audit check. */
static void test_upgrade_to_team_ledger(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  cairn__store_close(s);
  files_sql(f->db,
           "DROP TABLE team_credit; ALTER TABLE results DROP COLUMN team;"
           "DELETE FROM schema_migrations WHERE version = 18;"
           "INSERT INTO volunteers (id, name, cluster, apps, slots, token_hash, created, banned, "
           "team, credit, cpu_seconds, credited) VALUES "
           "(1, 'a', 'r', '[]', 1, '" HASH1 "', 1, 0, 'red', 2.5, 3, 2),"
           "(2, 'b', 'r', '[]', 1, 'h2', 1, 0, 'red', 1, 1, 1),"
           "(3, 'c', 'r', '[]', 1, 'h3', 1, 1, 'red', 7, 7, 7),"
           "(4, 'd', 'r', '[]', 1, 'h4', 1, 0, NULL, 4, 4, 4);"
           "INSERT INTO results (idx, task_id, volunteer_id, exit_status, output, digest, "
           "received, outcome, credit) VALUES (10, 1, 1, 0, '', 'x', 1, 'valid', 2.5),"
           "(11, 1, 2, 0, '', 'x', 1, 'invalid', 0), (12, 1, 4, 0, '', 'x', 1, 'valid', 4);");
  s = open_store(f);
  assert_int_equal(cairn__store_schema_version(s), latest_version());
  cairn__store_close(s);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM team_credit"), 1);
  assert_int_equal(files_sql_int(f->db, "SELECT credit * 10 FROM team_credit WHERE team = 'red'"), 35);
  assert_int_equal(files_sql_int(f->db, "SELECT cpu_seconds FROM team_credit WHERE team = 'red'"), 4);
  assert_int_equal(files_sql_int(f->db, "SELECT results FROM team_credit WHERE team = 'red'"), 3);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM results WHERE team = 'red'"), 1);
  assert_int_equal(files_sql_int(f->db, "SELECT idx FROM results WHERE team = 'red'"), 10);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM meta WHERE key = 'team_ledger_gap'"), 1);
}

static void test_rows_survive_reopen(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  write_sample(s);
  cairn__store_close(s);
  s = open_store(f);

  rows w = {0};
  OK(cairn__store_load_volunteers(s, vol_cb, &w, E));
  assert_int_equal(w.n, 2);
  assert_string_equal(w.text[0], "w1|rack-a|[\"sum\"]|" HASH1);
  assert_string_equal(w.text[1], "w2|rack-b|[\"sum\",\"cell\"]|" HASH2);
  int64_t v1[] = {1, 2, 0, 3, 1000}, v2[] = {2, 1, 0, 1, 1001}; /* allocations = latest t */
  assert_memory_equal(w.num[0], v1, sizeof v1);
  assert_memory_equal(w.num[1], v2, sizeof v2);

  memset(&w, 0, sizeof w);
  OK(cairn__store_load_jobs(s, job_cb, &w, E));
  assert_int_equal(w.n, 1);
  assert_string_equal(w.text[0], "demo|sum|fifo|failed");
  int64_t j1[] = {1, 2, 1, 60, 4, 1004, 2300};
  assert_memory_equal(w.num[0], j1, sizeof j1);

  memset(&w, 0, sizeof w);
  OK(cairn__store_load_job_files(s, jf_cb, &w, E));
  assert_int_equal(w.n, 2);
  assert_string_equal(w.text[0], "genome.fa|" SHA_F);
  assert_string_equal(w.text[1], "ref|" SHA_G);
  int64_t f0[] = {1, 0, 0, 1234}, f1[] = {1, 1, 1, 5};
  assert_memory_equal(w.num[0], f0, sizeof f0);
  assert_memory_equal(w.num[1], f1, sizeof f1);

  memset(&w, 0, sizeof w);
  OK(cairn__store_load_tasks(s, task_cb, &w, E));
  assert_int_equal(w.n, 3);
  assert_string_equal(w.text[0], "a|[\"1\"]|[0]|done|{\"limits\":{\"wall_seconds\":5}}");
  assert_string_equal(w.text[1], "b|[]|[]|eligible|-");
  assert_string_equal(w.text[2], "c|[\"x\",\"y\"]|[1,0]|waiting|-");
  int64_t t0[] = {10, 1, 0, 2, 2, 1}, t1[] = {11, 1, 1, 0, 0, 0}, t2[] = {12, 1, 2, 0, 0, 0};
  assert_memory_equal(w.num[0], t0, sizeof t0);
  assert_memory_equal(w.num[1], t1, sizeof t1);
  assert_memory_equal(w.num[2], t2, sizeof t2);

  memset(&w, 0, sizeof w);
  OK(cairn__store_load_parents(s, edge_cb, &w, E));
  assert_int_equal(w.n, 3);
  int64_t e0[] = {11, 10, 0}, e1[] = {12, 11, 0}, e2[] = {12, 10, 1};
  assert_memory_equal(w.num[0], e0, sizeof e0);
  assert_memory_equal(w.num[1], e1, sizeof e1);
  assert_memory_equal(w.num[2], e2, sizeof e2);

  /* only allocations of each task's current round: index 1 (round 0 of a) is gone */
  memset(&w, 0, sizeof w);
  OK(cairn__store_load_allocs(s, alloc_cb, &w, E));
  assert_int_equal(w.n, 3);
  assert_string_equal(w.text[0], "returned|" DG_A "|valid");
  assert_string_equal(w.text[1], "leased||");
  assert_string_equal(w.text[2], "returned|" DG_B "|error");
  int64_t a0[] = {2, 2, 1, 10, 2100, 2160, 0}, a1[] = {3, 1, 2, 10, 2101, 2300, 0},
          a2[] = {5, 1, 3, 11, 2200, 2260, 3};
  assert_memory_equal(w.num[0], a0, sizeof a0);
  assert_memory_equal(w.num[1], a1, sizeof a1);
  assert_memory_equal(w.num[2], a2, sizeof a2);

  memset(&w, 0, sizeof w);
  OK(cairn__store_load_files(s, file_cb, &w, E));
  assert_int_equal(w.n, 2);
  assert_true(has_text(&w, SHA_F));
  assert_true(has_text(&w, SHA_G));

  memset(&w, 0, sizeof w);
  OK(cairn__store_load_outcomes(s, outcome_cb, &w, E));
  assert_int_equal(w.n, 3);
  assert_true(has_text(&w, "1:tainted=1"));
  assert_true(has_text(&w, "1:error=1"));
  assert_true(has_text(&w, "2:valid=1"));
  cairn__store_close(s);
}

static int holder_cb(void *ud, const cairn__store_holder_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[0], "%s", r->sha256);
  w->num[w->n][0] = r->volunteer;
  w->num[w->n++][1] = r->since;
  return 0;
}

/* Holdings: written once (a second report keeps the first since), read
 * back after a reopen by file then since, forgotten per volunteer, and
 * refused for a file the store does not have. */
static void test_holders_recorded_once_and_forgotten(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  write_sample(s);
  OK(cairn__store_begin(s, E));
  OK(cairn__store_holder_insert(s, SHA_F, 2, 3001, E));
  OK(cairn__store_holder_insert(s, SHA_F, 1, 3000, E));
  OK(cairn__store_holder_insert(s, SHA_G, 1, 3002, E));
  OK(cairn__store_holder_insert(s, SHA_F, 1, 3999, E)); /* again: ignored */
  OK(cairn__store_commit(s, E));
  cairn__store_close(s);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM file_holders"), 3);
  assert_int_equal(files_sql_int(f->db, "SELECT since FROM file_holders WHERE sha256 = '" SHA_F
                                  "' AND volunteer_id = 1"), 3000);

  s = open_store(f);
  rows w = {0};
  OK(cairn__store_load_holders(s, holder_cb, &w, E));
  assert_int_equal(w.n, 3);
  assert_string_equal(w.text[0], SHA_G);
  assert_string_equal(w.text[1], SHA_F);
  assert_string_equal(w.text[2], SHA_F);
  int64_t h0[] = {1, 3002}, h1[] = {1, 3000}, h2[] = {2, 3001};
  assert_memory_equal(w.num[0], h0, sizeof h0);
  assert_memory_equal(w.num[1], h1, sizeof h1);
  assert_memory_equal(w.num[2], h2, sizeof h2);

  cairn_error err = {0};
  OK(cairn__store_begin(s, E));
  assert_int_equal(cairn__store_holder_insert(s, DG_A, 1, 3003, &err), CAIRN_EIO);
  assert_non_null(strstr(err.text, "FOREIGN KEY"));
  cairn__store_rollback(s);

  OK(cairn__store_begin(s, E));
  OK(cairn__store_holders_forget(s, 1, E));
  OK(cairn__store_commit(s, E));
  memset(&w, 0, sizeof w);
  OK(cairn__store_load_holders(s, holder_cb, &w, E));
  assert_int_equal(w.n, 1);
  assert_string_equal(w.text[0], SHA_F);
  assert_memory_equal(w.num[0], h2, sizeof h2);
  cairn__store_close(s);
  assert_int_equal(files_sql_int(f->db, "SELECT COUNT(*) FROM file_holders WHERE volunteer_id = 1"), 0);
}

static int stop_cb(void *ud, const cairn__store_volunteer_row *r) {
  (void)r;
  ++*(int *)ud;
  return 1;
}

static void test_loader_stops_when_asked(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  write_sample(s);
  int calls = 0;
  cairn_error err = {0};
  assert_int_equal(cairn__store_load_volunteers(s, stop_cb, &calls, &err), CAIRN_EINTERNAL);
  assert_int_equal(calls, 1);
  assert_non_null(strstr(err.text, "stopped"));
  /* the statement was reset: a second load sees every row */
  rows w = {0};
  OK(cairn__store_load_volunteers(s, vol_cb, &w, E));
  assert_int_equal(w.n, 2);
  cairn__store_close(s);
}

static void test_rollback_leaves_nothing(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  OK(cairn__store_begin(s, E));
  OK(cairn__store_volunteer_insert(s, 1, "w1", "", "[\"sum\"]", 1, HASH1, 1, E));
  OK(cairn__store_job_insert(s, 1, "j", "sum", "fifo", 1, 1, 60, 3, 2, 0, E));
  OK(cairn__store_task_insert(s, 1, 1, 0, "a", "[]", "[]", "eligible", NULL, E));
  OK(cairn__store_meta_set(s, "k", "v", E));
  cairn__store_rollback(s);
  cairn__store_rollback(s); /* outside a transaction: nothing happens */
  rows w = {0};
  OK(cairn__store_load_volunteers(s, vol_cb, &w, E));
  OK(cairn__store_load_jobs(s, job_cb, &w, E));
  OK(cairn__store_load_tasks(s, task_cb, &w, E));
  assert_int_equal(w.n, 0);
  char v[8];
  assert_int_equal(cairn__store_meta_get(s, "k", v, sizeof v), -1);
  cairn__store_close(s);
  s = open_store(f);
  OK(cairn__store_load_volunteers(s, vol_cb, &w, E));
  assert_int_equal(w.n, 0);
  /* the same rows commit fine afterwards */
  OK(cairn__store_begin(s, E));
  OK(cairn__store_volunteer_insert(s, 1, "w1", "", "[\"sum\"]", 1, HASH1, 1, E));
  OK(cairn__store_commit(s, E));
  OK(cairn__store_load_volunteers(s, vol_cb, &w, E));
  assert_int_equal(w.n, 1);
  cairn__store_close(s);
}

typedef struct results {
  int n;
  uint32_t seq[8];
  int64_t idx[8], vol[8];
  int exit_status[8];
  char out[8][16];
  size_t len[8];
} results;

static int result_cb(void *ud, const cairn__store_result_row *r) {
  results *w = ud;
  assert_true(r->len <= sizeof w->out[0]);
  w->seq[w->n] = r->seq;
  w->idx[w->n] = r->idx;
  w->vol[w->n] = r->volunteer;
  w->exit_status[w->n] = r->exit_status;
  memcpy(w->out[w->n], r->output, r->len);
  w->len[w->n++] = r->len;
  return 0;
}

static void test_reader_sees_committed_rows(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  OK(cairn__store_begin(s, E));
  OK(cairn__store_volunteer_insert(s, 1, "w1", "", "[\"sum\"]", 1, HASH1, 1, E));
  OK(cairn__store_job_insert(s, 1, "j", "sum", "fifo", 1, 1, 60, 3, 2, 0, E));
  OK(cairn__store_task_insert(s, 7, 1, 0, "a", "[]", "[]", "eligible", NULL, E));
  OK(cairn__store_task_insert(s, 8, 1, 1, "b", "[]", "[]", "eligible", NULL, E));
  OK(cairn__store_task_insert(s, 9, 1, 2, "c", "[]", "[]", "eligible", NULL, E));
  OK(cairn__store_alloc_insert(s, 1, 1, 1, 8, 10, 70, 0, E));
  OK(cairn__store_alloc_insert(s, 3, 1, 2, 7, 11, 71, 0, E));
  static const char bin[] = {'o', 'k', 0, (char)0xff};
  OK(cairn__store_result_insert(s, 1, 8, 1, 0, bin, sizeof bin, DG_A, 20, "valid", NULL, NULL, 0, E));
  OK(cairn__store_result_insert(s, 3, 7, 1, 0, "hello", 5, DG_B, 21, "valid", NULL, NULL, 0, E));
  OK(cairn__store_task_update(s, 8, "done", 1, 1, 0, E));
  OK(cairn__store_task_update(s, 7, "done", 1, 3, 0, E));

  /* not committed yet: the reader does not see it */
  char *out = NULL;
  size_t len = 0;
  cairn_error err = {0};
  assert_int_equal(cairn__store_task_output(s, 8, &out, &len, &err), CAIRN_ENOTFOUND);
  assert_non_null(strstr(err.text, "task 8"));
  results r = {0};
  OK(cairn__store_job_results(s, 1, 0, INT64_MAX, result_cb, &r, E));
  assert_int_equal(r.n, 0);

  OK(cairn__store_commit(s, E));
  OK(cairn__store_task_output(s, 8, &out, &len, E));
  assert_int_equal(len, sizeof bin);
  assert_memory_equal(out, bin, sizeof bin);
  assert_int_equal(out[len], '\0');
  free(out);
  OK(cairn__store_task_output(s, 7, &out, &len, E));
  assert_int_equal(len, 5);
  assert_string_equal(out, "hello");
  free(out);
  /* no accepted result, or no such task */
  assert_int_equal(cairn__store_task_output(s, 9, &out, &len, &err), CAIRN_ENOTFOUND);
  assert_int_equal(cairn__store_task_output(s, 99, &out, &len, &err), CAIRN_ENOTFOUND);

  OK(cairn__store_job_results(s, 1, 0, INT64_MAX, result_cb, &r, E));
  assert_int_equal(r.n, 2);
  assert_int_equal(r.seq[0], 0);
  assert_int_equal(r.idx[0], 3);
  assert_int_equal(r.len[0], 5);
  assert_memory_equal(r.out[0], "hello", 5);
  assert_int_equal(r.seq[1], 1);
  assert_int_equal(r.idx[1], 1);
  assert_int_equal(r.vol[1], 1);
  assert_int_equal(r.exit_status[1], 0);
  assert_int_equal(r.len[1], sizeof bin);
  assert_memory_equal(r.out[1], bin, sizeof bin);
  /* a page: the tasks with seq in [1, 2) only */
  memset(&r, 0, sizeof r);
  OK(cairn__store_job_results(s, 1, 1, 2, result_cb, &r, E));
  assert_int_equal(r.n, 1);
  assert_int_equal(r.seq[0], 1);
  memset(&r, 0, sizeof r);
  OK(cairn__store_job_results(s, 2, 0, INT64_MAX, result_cb, &r, E));
  assert_int_equal(r.n, 0);
  cairn__store_close(s);
}

typedef struct audit {
  int n;
  int64_t idx[8], vol[8], t[8], job[8], key[8], round[8], received[8];
  char task[8][16], lease[8][16], digest[8][80], outcome[8][16];
  int has_result[8], exit_status[8];
} audit;

static int audit_cb(void *ud, const cairn__store_audit_row *r) {
  audit *a = ud;
  int i = a->n++;
  a->idx[i] = r->idx;
  a->vol[i] = r->volunteer;
  a->t[i] = r->t;
  a->job[i] = r->job;
  a->key[i] = r->task_key;
  a->round[i] = r->round;
  a->received[i] = r->received;
  snprintf(a->task[i], sizeof a->task[i], "%s", r->task);
  snprintf(a->lease[i], sizeof a->lease[i], "%s", r->lease_state);
  snprintf(a->digest[i], sizeof a->digest[i], "%s", r->digest ? r->digest : "(null)");
  snprintf(a->outcome[i], sizeof a->outcome[i], "%s", r->outcome ? r->outcome : "(null)");
  a->has_result[i] = r->has_result;
  a->exit_status[i] = r->exit_status;
  return 0;
}

static void test_audit_by_index_and_volunteer(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  write_sample(s);
  audit a = {0};
  OK(cairn__store_audit(s, 0, 2, audit_cb, &a, E));
  assert_int_equal(a.n, 1);
  assert_int_equal(a.vol[0], 2);
  assert_int_equal(a.t[0], 1);
  assert_int_equal(a.job[0], 1);
  assert_int_equal(a.key[0], 10);
  assert_string_equal(a.task[0], "a");
  assert_string_equal(a.lease[0], "returned");
  assert_int_equal(a.round[0], 1);
  assert_true(a.has_result[0]);
  assert_string_equal(a.digest[0], DG_A);
  assert_string_equal(a.outcome[0], "valid");
  assert_int_equal(a.received[0], 2150);

  /* a lease still out has no result */
  memset(&a, 0, sizeof a);
  OK(cairn__store_audit(s, 0, 3, audit_cb, &a, E));
  assert_int_equal(a.n, 1);
  assert_false(a.has_result[0]);
  assert_string_equal(a.digest[0], "(null)");
  assert_string_equal(a.outcome[0], "(null)");
  assert_string_equal(a.lease[0], "leased");

  memset(&a, 0, sizeof a);
  OK(cairn__store_audit(s, 0, 4, audit_cb, &a, E));
  assert_int_equal(a.n, 0);

  /* volunteer 1: t = 1, 2, 3 in order, whatever the index order, every round */
  memset(&a, 0, sizeof a);
  OK(cairn__store_audit(s, 1, 1, audit_cb, &a, E));
  assert_int_equal(a.n, 3);
  for (int i = 0; i < 3; i++) {
    assert_int_equal(a.vol[i], 1);
    assert_int_equal(a.t[i], i + 1);
  }
  assert_int_equal(a.idx[0], 1);
  assert_string_equal(a.outcome[0], "tainted");
  assert_int_equal(a.round[0], 0);
  assert_int_equal(a.idx[1], 3);
  assert_false(a.has_result[1]);
  assert_int_equal(a.idx[2], 5);
  assert_string_equal(a.task[2], "b");
  assert_int_equal(a.exit_status[2], 3);
  assert_string_equal(a.outcome[2], "error");

  memset(&a, 0, sizeof a);
  OK(cairn__store_audit(s, 1, 3, audit_cb, &a, E));
  assert_int_equal(a.n, 0);
  cairn__store_close(s);
}

static void test_constraint_violation_is_eio(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  write_sample(s);
  cairn_error err = {0};

  /* a second allocation with an index already used */
  OK(cairn__store_begin(s, E));
  OK(cairn__store_alloc_insert(s, 7, 2, 2, 11, 3000, 3060, 0, E));
  assert_int_equal(cairn__store_alloc_insert(s, 2, 2, 3, 11, 3000, 3060, 0, &err), CAIRN_EIO);
  assert_int_equal(err.status, CAIRN_EIO);
  assert_non_null(strstr(err.text, "store:"));
  assert_non_null(strstr(err.text, "UNIQUE"));
  cairn__store_rollback(s);

  /* an outcome outside the CHECK list */
  memset(&err, 0, sizeof err);
  OK(cairn__store_begin(s, E));
  assert_int_equal(cairn__store_result_outcome(s, 2, "great", &err), CAIRN_EIO);
  assert_non_null(strstr(err.text, "CHECK"));
  cairn__store_rollback(s);

  /* a second volunteer with the same token hash */
  memset(&err, 0, sizeof err);
  OK(cairn__store_begin(s, E));
  assert_int_equal(cairn__store_volunteer_insert(s, 3, "w3", "", "[]", 1, HASH1, 5, &err),
                   CAIRN_EIO);
  assert_non_null(strstr(err.text, "token_hash"));
  cairn__store_rollback(s);

  /* an allocation of a task that does not exist */
  memset(&err, 0, sizeof err);
  OK(cairn__store_begin(s, E));
  assert_int_equal(cairn__store_alloc_insert(s, 9, 2, 2, 999, 3000, 3060, 0, &err), CAIRN_EIO);
  assert_non_null(strstr(err.text, "FOREIGN KEY"));
  cairn__store_rollback(s);

  /* nothing of the rolled-back transactions is left, and writing goes on */
  audit a = {0};
  OK(cairn__store_audit(s, 0, 7, audit_cb, &a, E));
  assert_int_equal(a.n, 0);
  OK(cairn__store_audit(s, 0, 2, audit_cb, &a, E));
  assert_string_equal(a.outcome[0], "valid");
  OK(cairn__store_begin(s, E));
  OK(cairn__store_alloc_insert(s, 7, 2, 2, 11, 3000, 3060, 0, E));
  OK(cairn__store_commit(s, E));
  memset(&a, 0, sizeof a);
  OK(cairn__store_audit(s, 1, 2, audit_cb, &a, E));
  assert_int_equal(a.n, 2);
  assert_int_equal(a.idx[1], 7);
  cairn__store_close(s);
}

static void test_open_failure_names_the_path(void **state) {
  fixture *f = *state;
  char bad[400];
  snprintf(bad, sizeof bad, "%s/missing/dir/cairn.db", f->dir);
  cairn_error err = {0};
  assert_null(cairn__store_open(bad, 1, &err));
  assert_int_equal(err.status, CAIRN_EIO);
  assert_non_null(strstr(err.text, bad));
}

static int rate_cb(void *ud, const cairn__store_rate_row *r) {
  rows *w = ud;
  snprintf(w->text[w->n], sizeof w->text[w->n], "%s>%s", r->src, r->dst);
  w->num[w->n][0] = r->bytes_per_second;
  w->num[w->n][1] = r->samples;
  w->n++;
  return 0;
}

static void test_rates_upsert_and_load(void **state) {
  fixture *f = *state;
  cairn__store *s = open_store(f);
  OK(cairn__store_begin(s, E));
  OK(cairn__store_rate_put(s, "", "a", 1000, 1, E));
  OK(cairn__store_rate_put(s, "a", "b", 500, 1, E));
  OK(cairn__store_rate_put(s, "", "a", 3000, 2, E));
  OK(cairn__store_commit(s, E));
  cairn__store_close(s);
  s = open_store(f);
  rows w = {0};
  OK(cairn__store_load_rates(s, rate_cb, &w, E));
  assert_int_equal(w.n, 2);
  assert_string_equal(w.text[0], ">a");
  assert_int_equal(w.num[0][0], 3000);
  assert_int_equal(w.num[0][1], 2);
  assert_string_equal(w.text[1], "a>b");
  assert_int_equal(w.num[1][0], 500);
  cairn__store_close(s);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test_setup_teardown(test_fresh_file_gets_schema_once, setup, teardown),
    cmocka_unit_test_setup_teardown(test_upgrade_from_0001, setup, teardown),
    cmocka_unit_test_setup_teardown(test_upgrade_to_team_ledger, setup, teardown),
    cmocka_unit_test_setup_teardown(test_wal_mode, setup, teardown),
    cmocka_unit_test_setup_teardown(test_rates_upsert_and_load, setup, teardown),
    cmocka_unit_test_setup_teardown(test_rows_survive_reopen, setup, teardown),
    cmocka_unit_test_setup_teardown(test_holders_recorded_once_and_forgotten, setup, teardown),
    cmocka_unit_test_setup_teardown(test_loader_stops_when_asked, setup, teardown),
    cmocka_unit_test_setup_teardown(test_rollback_leaves_nothing, setup, teardown),
    cmocka_unit_test_setup_teardown(test_reader_sees_committed_rows, setup, teardown),
    cmocka_unit_test_setup_teardown(test_audit_by_index_and_volunteer, setup, teardown),
    cmocka_unit_test_setup_teardown(test_constraint_violation_is_eio, setup, teardown),
    cmocka_unit_test_setup_teardown(test_open_failure_names_the_path, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
