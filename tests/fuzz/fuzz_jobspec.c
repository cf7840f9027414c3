/* fuzz_jobspec.c — libFuzzer target: the job file parser (plan/jobspec.c).
 * The first byte picks the mode (client or server) and whether the server's
 * ceiling is applied; the rest is the job file. A refusal must come with a
 * message; an accepted job must find each
 * of its files by name. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "plan/jobspec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  uint8_t sel = data[0];
  cairn__jobspec_mode mode = sel & 1 ? CAIRN_JOBSPEC_SERVER : CAIRN_JOBSPEC_CLIENT;
  cairn_error err = {0};
  cairn__jobspec *j = cairn__jobspec_parse((const char *)data + 1, size - 1, mode, &err);
  if (!j) {
    if (!err.text[0])
      abort(); /* a refusal names its problem */
    return 0;
  }
  if (sel & 2) {
    static const char *const flag[CAIRN_LIMIT_COUNT] = {"--a", "--b", "--c", "--d", "--e"};
    int64_t ceiling[CAIRN_LIMIT_COUNT];
    for (int i = 0; i < CAIRN_LIMIT_COUNT; i++)
      ceiling[i] = (sel & 4) ? 1 + i : 1000000;
    cairn_error cerr = {0};
    (void)cairn__jobspec_ceiling(j, ceiling, flag, &cerr);
  }
  for (uint32_t i = 0; i < j->nfiles; i++)
    if (cairn__jobspec_file_index(j, j->files[i].name) < 0)
      abort();
  cairn__jobspec_free(j);
  return 0;
}
