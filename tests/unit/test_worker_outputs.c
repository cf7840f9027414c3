/* test_worker_outputs.c — worker/outputs: which files of a task directory
 * are collected as outputs (regular files matching the patterns; never a
 * symbolic link, a file reached through a folder that links out of the
 * directory, the worker's stderr, inputs/ or parents/), their digests,
 * and the failures (a required file missing, a file over its cap). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/sha256.h"
#include "tests/support/harness.h"
#include "worker/outputs.h"

static void put(const char *dir, const char *name, const char *text) {
  char path[4400];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  assert_int_equal(harness_write_file(path, text), 0);
}

static cairn_status collect(const char *dir, const char *patterns, cairn__output_file **files,
                            size_t *n, cairn_error *err) {
  cairn__output_patterns p = {0};
  json_t *a = json_loads(patterns, 0, NULL);
  assert_int_equal(cairn__outputs_parse(a, "t", &p, err), CAIRN_OK);
  json_decref(a);
  cairn_status st = cairn__outputs_collect(dir, &p, files, n, err);
  cairn__output_specs_free(&p);
  return st;
}

static void test_collect(void **state) {
  (void)state;
  char root[4096], dir[4200], outside[4200], path[4400], target[4400];
  harness_tmpdir(root, sizeof root);
  snprintf(dir, sizeof dir, "%s/task[1]*", root); /* glob characters in the folder's own name */
  snprintf(outside, sizeof outside, "%s/outside", root);
  assert_int_equal(mkdir(dir, 0755), 0);
  assert_int_equal(mkdir(outside, 0755), 0);
  snprintf(path, sizeof path, "%s/inputs", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  snprintf(path, sizeof path, "%s/d", dir);
  assert_int_equal(mkdir(path, 0755), 0);
  put(dir, "a.txt", "alpha");
  put(dir, "b.txt", "beta");
  put(dir, ".hidden.txt", "h");
  put(dir, "stderr", "worker's");
  put(dir, "inputs/in.txt", "input");
  put(dir, "d/x.bin", "x");
  put(outside, "secret.bin", "secret");
  snprintf(path, sizeof path, "%s/link.txt", dir);
  snprintf(target, sizeof target, "%s/secret.bin", outside);
  assert_int_equal(symlink(target, path), 0);
  snprintf(path, sizeof path, "%s/out", dir);
  assert_int_equal(symlink(outside, path), 0);

  cairn__output_file *files = NULL;
  size_t n = 0;
  cairn_error err = {0};
  assert_int_equal(collect(dir, "[\"*.txt\", \"*\", \"d/*.bin\"]", &files, &n, &err), CAIRN_OK);
  /* a.txt, b.txt, d/x.bin: not the link, the hidden file, stderr or inputs/ */
  assert_int_equal(n, 3);
  int seen = 0;
  for (size_t i = 0; i < n; i++) {
    char want[65];
    if (strcmp(files[i].name, "a.txt") == 0) {
      cairn__sha256_hex("alpha", 5, want);
      assert_string_equal(files[i].sha256, want);
      assert_int_equal(files[i].size, 5);
      seen |= 1;
    } else if (strcmp(files[i].name, "b.txt") == 0)
      seen |= 2;
    else if (strcmp(files[i].name, "d/x.bin") == 0)
      seen |= 4;
    else
      fail_msg("collected %s", files[i].name);
  }
  assert_int_equal(seen, 7);
  free(files);

  /* a folder that links out of the directory */
  assert_int_equal(collect(dir, "[\"out/*.bin\"]", &files, &n, &err), CAIRN_EINVAL);
  fprintf(stderr, "refused: %s\n", err.text);
  assert_non_null(strstr(err.text, "outside"));
  free(files);
  /* a required name that is a symbolic link */
  assert_int_equal(collect(dir, "[\"link.txt\"]", &files, &n, &err), CAIRN_EINVAL);
  fprintf(stderr, "refused: %s\n", err.text);
  free(files);
  /* a required file missing */
  assert_int_equal(collect(dir, "[\"a.txt\", \"result.dat\"]", &files, &n, &err), CAIRN_EINVAL);
  fprintf(stderr, "refused: %s\n", err.text);
  assert_non_null(strstr(err.text, "result.dat"));
  free(files);
  /* a glob that matches nothing is fine */
  assert_int_equal(collect(dir, "[\"*.none\"]", &files, &n, &err), CAIRN_OK);
  assert_int_equal(n, 0);
  free(files);
  /* over the pattern's cap of 1 MiB */
  snprintf(path, sizeof path, "%s/big.dat", dir);
  FILE *f = fopen(path, "wb");
  assert_non_null(f);
  assert_int_equal(fseek(f, 2 * 1024 * 1024 - 1, SEEK_SET), 0);
  fputc('z', f);
  fclose(f);
  assert_int_equal(collect(dir, "[{\"name\": \"big.dat\", \"max_mib\": 1}]", &files, &n, &err),
                   CAIRN_EINVAL);
  fprintf(stderr, "refused: %s\n", err.text);
  free(files);

  char cmd[4300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", root);
  assert_int_equal(system(cmd), 0);
}

int main(void) {
  const struct CMUnitTest tests[] = {cmocka_unit_test(test_collect)};
  return cmocka_run_group_tests(tests, NULL, NULL);
}
