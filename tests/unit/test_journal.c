/* test_journal — the journal's groups (server/store/journal.h) over a real SQLite
 * file: records put under one hold of the core's lock commit in one
 * transaction, never split; a sealed group is committed and acknowledged;
 * close writes what is left. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/store/journal.h"
#include "server/store/load.h"

typedef struct {
  char dir[256], db[300];
  cairn__store *s;
  cairn__journal *j;
} fixture;

static int setup(void **state) {
  fixture *f = calloc(1, sizeof *f);
  const char *tmp = getenv("TMPDIR");
  snprintf(f->dir, sizeof f->dir, "%s/cairn-journal-XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(f->dir))
    return -1;
  snprintf(f->db, sizeof f->db, "%s/m.db", f->dir);
  cairn_error err = {0};
  f->s = cairn__store_open(f->db, 0, &err);
  if (!f->s)
    return -1;
  f->j = cairn__journal_open(f->s, NULL, -1, &err);
  if (!f->j)
    return -1;
  *state = f;
  return 0;
}

static int teardown(void **state) {
  fixture *f = *state;
  cairn__journal_close(f->j);
  cairn__store_close(f->s);
  char cmd[400];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", f->dir);
  if (system(cmd) != 0)
    return -1;
  free(f);
  return 0;
}

static int has(fixture *f, const char *key) {
  char v[64];
  return cairn__store_meta_get(f->s, key, v, sizeof v) == 0;
}

static void pause_ms(long ms) {
  struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&t, NULL);
}

/* An unsealed group is not taken, however long it waits; sealing it commits
 * its records together, and the batch cairn__journal_last names holds them. */
static void test_group_commits_whole(void **state) {
  fixture *f = *state;
  cairn__journal_put(f->j, cairn__jrec_meta("a", "1"));
  pause_ms(300); /* the commit thread is idle and free to run meanwhile */
  assert_int_equal(cairn__journal_committed(f->j), 0);
  assert_false(has(f, "a"));
  cairn__journal_put(f->j, cairn__jrec_meta("b", "2"));
  uint64_t seq = cairn__journal_last(f->j);
  assert_int_equal(seq, 1);
  cairn_error err = {0};
  assert_int_equal(cairn__journal_wait(f->j, seq, &err), CAIRN_OK);
  assert_true(has(f, "a"));
  assert_true(has(f, "b"));
  assert_int_equal(cairn__journal_committed(f->j), 1);
}

/* Sealed groups are committed in order; a later group put while an earlier
 * one is sealed lands in a later batch, and last() names it. */
static void test_groups_in_order(void **state) {
  fixture *f = *state;
  cairn_error err = {0};
  uint64_t prev = 0;
  for (int g = 0; g < 50; g++) {
    char k1[16], k2[16];
    snprintf(k1, sizeof k1, "g%d.x", g);
    snprintf(k2, sizeof k2, "g%d.y", g);
    cairn__journal_put(f->j, cairn__jrec_meta(k1, "x"));
    cairn__journal_put(f->j, cairn__jrec_meta(k2, "y"));
    uint64_t seq = cairn__journal_last(f->j);
    assert_true(seq >= prev);
    prev = seq;
  }
  assert_int_equal(cairn__journal_wait(f->j, prev, &err), CAIRN_OK);
  for (int g = 0; g < 50; g++) {
    char k[16];
    snprintf(k, sizeof k, "g%d.y", g);
    assert_true(has(f, k));
  }
}

/* With nothing put, last() is what was committed, and waiting is at once. */
static void test_last_when_idle(void **state) {
  fixture *f = *state;
  assert_int_equal(cairn__journal_last(f->j), 0);
  cairn__journal_seal(f->j); /* nothing to seal */
  cairn__journal_seal(NULL);
  cairn_error err = {0};
  assert_int_equal(cairn__journal_wait(f->j, 0, &err), CAIRN_OK);
}

/* Close writes a group that was put but never sealed. */
static void test_close_writes_the_rest(void **state) {
  fixture *f = *state;
  cairn__journal_put(f->j, cairn__jrec_meta("late", "1"));
  cairn__journal_close(f->j);
  f->j = NULL;
  assert_true(has(f, "late"));
  cairn_error err = {0};
  f->j = cairn__journal_open(f->s, NULL, -1, &err);
  assert_non_null(f->j);
}

int main(void) {
  const struct CMUnitTest tests[] = {
      cmocka_unit_test_setup_teardown(test_group_commits_whole, setup, teardown),
      cmocka_unit_test_setup_teardown(test_groups_in_order, setup, teardown),
      cmocka_unit_test_setup_teardown(test_last_when_idle, setup, teardown),
      cmocka_unit_test_setup_teardown(test_close_writes_the_rest, setup, teardown),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
