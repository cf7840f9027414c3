/* cmd_ataf.c — `cairn ataf`: evaluate and invert the named ATAFs of
 * plan/ataf.h ([Ros] §4.3.2, Figure 10). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "plan/ataf.h"

static const char usage_text[] =
  "usage: cairn ataf FAMILY X Y            print phi(X, Y): the index of row X's Y-th allocation\n"
  "       cairn ataf FAMILY --invert N     print \"X Y\" with phi(X, Y) = N\n"
  "\n"
  "FAMILY: phi1 | phi3 | phisharp ([Ros] §4.3.2, Figure 10)\n"
  "X, Y >= 1; indices are 1 .. 9223372036854775807 (2^63-1); a result beyond\n"
  "that range is an error, never a wrapped value.\n";

/* Decimal digits only (no sign, no spaces), at most UINT64_MAX. */
static int parse_u64(const char *s, uint64_t *out) {
  uint64_t v = 0;
  if (*s == '\0')
    return -1;
  for (; *s; s++) {
    if (*s < '0' || *s > '9')
      return -1;
    if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, (uint64_t)(*s - '0'), &v))
      return -1;
  }
  *out = v;
  return 0;
}

int cairn__cmd_ataf(int argc, char **argv) {
  if (cairn__cli_wants_help(argc, argv)) {
    fputs(usage_text, stdout);
    return 0;
  }
  if (argc != 4)
    return cairn__cli_fail("ataf: expected FAMILY X Y or FAMILY --invert N (see cairn ataf --help)");
  cairn__ataf_family f;
  if (cairn__ataf_parse_family(argv[1], &f) != 0)
    return cairn__cli_fail("ataf: unknown family \"%s\" (phi1, phi3 or phisharp)", argv[1]);
  cairn_error err;
  if (strcmp(argv[2], "--invert") == 0) {
    uint64_t n, x, t;
    if (parse_u64(argv[3], &n) != 0)
      return cairn__cli_fail("ataf: index \"%s\" is not a non-negative integer below 2^64",
                            argv[3]);
    if (cairn__ataf_invert(f, n, &x, &t, &err) != CAIRN_OK)
      return cairn__cli_fail("ataf: %s", err.text);
    printf("%llu %llu\n", (unsigned long long)x, (unsigned long long)t);
    return 0;
  }
  uint64_t x, t, n;
  if (parse_u64(argv[2], &x) != 0)
    return cairn__cli_fail("ataf: row \"%s\" is not a non-negative integer below 2^64", argv[2]);
  if (parse_u64(argv[3], &t) != 0)
    return cairn__cli_fail("ataf: allocation \"%s\" is not a non-negative integer below 2^64",
                          argv[3]);
  if (cairn__ataf_index(f, x, t, &n, &err) != CAIRN_OK)
    return cairn__cli_fail("ataf: %s", err.text);
  printf("%llu\n", (unsigned long long)n);
  return 0;
}
