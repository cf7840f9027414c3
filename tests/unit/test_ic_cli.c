/* test_ic_cli.c — `cairn gen` and `cairn simulate` ([Ros] §4.3.1) through
 * the real binary, and a hand-written mesh job (other ids, other order)
 * loaded by the job parser: ic still reaches the optimal profile. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "plan/dag_gen.h"
#include "plan/ic_exact.h"
#include "plan/ic_game.h"
#include "plan/jobspec.h"
#include "plan/policy.h"

static char *run(const char *cmd, int *status) {
  char full[1024];
  const char *bin = getenv("CAIRN_BIN_DIR");
  snprintf(full, sizeof full, "%s/cairn %s 2>&1", bin ? bin : "./bin", cmd);
  FILE *p = popen(full, "r");
  assert_non_null(p);
  size_t cap = 1 << 16, n = 0, k;
  char *out = malloc(cap);
  while ((k = fread(out + n, 1, cap - n - 1, p)) > 0) {
    n += k;
    if (n + 1 == cap)
      out = realloc(out, cap *= 2);
  }
  out[n] = '\0';
  *status = pclose(p);
  return out;
}

static void test_gen_parses_and_matches(void **state) {
  (void)state;
  static const char *const fam[] = {"mesh 6", "rmesh 6", "tree 3", "fft 3"};
  for (int f = 0; f < 4; f++) {
    char cmd[64];
    int st;
    snprintf(cmd, sizeof cmd, "gen %s --app demo", fam[f]);
    char *text = run(cmd, &st);
    assert_int_equal(st, 0);
    cairn_error err = {0};
    cairn__jobspec *j = cairn__jobspec_parse(text, strlen(text), CAIRN_JOBSPEC_CLIENT, &err);
    if (!j)
      fail_msg("gen %s: %s", fam[f], err.text);
    assert_string_equal(j->app, "demo");
    assert_string_equal(j->policy, "ic");
    cairn__dag *d = cairn__gen_dag((cairn__gen_family)f, (uint32_t)atoi(fam[f] + strlen(fam[f]) - 1),
                                 NULL);
    assert_int_equal(j->dag->n, d->n);
    assert_int_equal(j->dag->m, d->m);
    uint32_t best[64], prof[64];
    assert_int_equal(cairn__ic_max_profile(j->dag, 1000000, best, NULL), 0);
    assert_true(cairn__ic_play(j->dag, &cairn__policy_ic, 0, prof, NULL, NULL) >= 0);
    assert_memory_equal(prof, best, (d->n + 1) * sizeof *prof);
    cairn__dag_free(d);
    cairn__jobspec_free(j);
    free(text);
  }
}

/* A 5-level mesh written by hand: ids "rIcJ", tasks listed last diagonal
 * first and reversed within each diagonal. */
static void test_hand_written_mesh(void **state) {
  (void)state;
  char *text = malloc(1 << 16);
  size_t n = (size_t)sprintf(text, "{\"name\":\"hand\",\"app\":\"cell\",\"tasks\":[");
  int first = 1;
  for (int dgl = 4; dgl >= 0; dgl--)
    for (int i = dgl; i >= 0; i--) {
      int j = dgl - i;
      n += (size_t)sprintf(text + n, "%s{\"id\":\"r%dc%d\",\"after\":[", first ? "" : ",", i, j);
      first = 0;
      if (i > 0)
        n += (size_t)sprintf(text + n, "\"r%dc%d\"%s", i - 1, j, j > 0 ? "," : "");
      if (j > 0)
        n += (size_t)sprintf(text + n, "\"r%dc%d\"", i, j - 1);
      n += (size_t)sprintf(text + n, "]}");
    }
  n += (size_t)sprintf(text + n, "]}");
  cairn_error err = {0};
  cairn__jobspec *jb = cairn__jobspec_parse(text, n, CAIRN_JOBSPEC_CLIENT, &err);
  if (!jb)
    fail_msg("%s", err.text);
  uint32_t best[16], prof[16];
  assert_int_equal(cairn__ic_max_profile(jb->dag, 100000, best, NULL), 0);
  assert_true(cairn__ic_play(jb->dag, &cairn__policy_ic, 0, prof, NULL, NULL) >= 0);
  assert_memory_equal(prof, best, 16 * sizeof *prof);
  const uint32_t want[16] = {1, 2, 2, 3, 3, 3, 4, 4, 4, 4, 5, 4, 3, 2, 1, 0};
  assert_memory_equal(prof, want, sizeof want);
  cairn__jobspec_free(jb);
  free(text);
}

static void test_simulate_cli(void **state) {
  (void)state;
  int st;
  char path[] = "/tmp/cairn-test-ic-______";
  memset(path + strlen(path) - 6, 'X', 6); /* mkstemp template */
  int fd = mkstemp(path);
  assert_true(fd >= 0);
  FILE *f = fdopen(fd, "w");
  char cmd[256];
  char *job = run("gen tree 2", &st);
  assert_int_equal(st, 0);
  fputs(job, f);
  fclose(f);
  free(job);
  snprintf(cmd, sizeof cmd, "simulate game %s --policy ic --json", path);
  char *out = run(cmd, &st);
  assert_int_equal(st, 0);
  assert_string_equal(out, "{\"policy\":\"ic\",\"profile\":[4,3,3,2,2,1,1,0],\"area\":16}\n");
  free(out);
  snprintf(cmd, sizeof cmd, "simulate run %s --policy all --workers 3 --dropout 0.2 --json", path);
  out = run(cmd, &st);
  assert_int_equal(st, 0);
  assert_non_null(strstr(out, "\"policy\":\"ic\""));
  assert_non_null(strstr(out, "\"policy\":\"fifo\""));
  assert_non_null(strstr(out, "\"no_work\":"));
  free(out);
  snprintf(cmd, sizeof cmd, "simulate run %s --workers 0", path);
  out = run(cmd, &st);
  assert_int_not_equal(st, 0);
  assert_non_null(strstr(out, "cairn: simulate: bad value"));
  assert_ptr_equal(strchr(out, '\n'), out + strlen(out) - 1); /* one line */
  free(out);
  out = run("gen cube 3", &st);
  assert_int_not_equal(st, 0);
  assert_string_equal(out, "cairn: gen: unknown family \"cube\" (mesh, rmesh, tree or fft)\n");
  free(out);
  out = run("simulate game /nonexistent.json", &st);
  assert_int_not_equal(st, 0);
  free(out);
  out = run("gen --help", &st);
  assert_int_equal(st, 0);
  assert_non_null(strstr(out, "usage: cairn gen"));
  free(out);
  unlink(path);
}

int main(void) {
  const struct CMUnitTest tests[] = {
    cmocka_unit_test(test_gen_parses_and_matches),
    cmocka_unit_test(test_hand_written_mesh),
    cmocka_unit_test(test_simulate_cli),
  };
  return cmocka_run_group_tests(tests, NULL, NULL);
}
