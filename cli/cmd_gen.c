/* cmd_gen.c — `cairn gen mesh|rmesh|tree|fft N`: print a job file (docs/jobs.md)
 * whose tasks form one of the computation-dags of [Ros] §4.3.1
 * (plan/dag_gen.h). O(n) time; writes as it goes. */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "common/limits.h"
#include "plan/dag_gen.h"

static const char usage[] =
  "usage: cairn gen mesh|rmesh|tree|fft N [--app NAME] [--name NAME] [--policy P]\n"
  "\n"
  "Prints a job file (JSON) whose tasks form a computation-dag of [Ros] §4.3.1:\n"
  "  mesh  N   evolving 2-D mesh truncated to N levels: tasks \"i,j\" with i+j < N,\n"
  "            after \"i-1,j\" and \"i,j-1\"; N(N+1)/2 tasks\n"
  "  rmesh N   reduction mesh of N levels: tasks \"i,j\" with i+j < N, after\n"
  "            \"i+1,j\" and \"i,j+1\"; N sources, sink \"0,0\"; N(N+1)/2 tasks\n"
  "  tree  N   binary reduction tree with 2^N leaves: task \"l,i\" (level l, 0 =\n"
  "            leaves) after \"l-1,2i\" and \"l-1,2i+1\"; 2^(N+1)-1 tasks\n"
  "  fft   N   FFT dag with 2^N inputs and N+1 levels: task \"l,i\" after \"l-1,i\"\n"
  "            and \"l-1,i^2^(l-1)\"; (N+1)2^N tasks\n"
  "Each task's args are its two coordinates. Defaults: --app cell, --name\n"
  "FAMILY-N, --policy ic.\n";

/* s as a JSON string literal (caller frees), or NULL if s is not UTF-8. */
static char *json_literal(const char *s) {
  json_t *j = json_string(s);
  char *enc = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
  json_decref(j);
  return enc;
}

int cairn__cmd_gen(int argc, char **argv) {
  if (cairn__cli_wants_help(argc, argv)) {
    fputs(usage, stdout);
    return 0;
  }
  const char *app = "cell", *name = NULL, *policy = "ic", *pos[2] = {NULL, NULL};
  int npos = 0;
  for (int i = 1; i < argc; i++) {
    const char **opt = strcmp(argv[i], "--app") == 0      ? &app
                       : strcmp(argv[i], "--name") == 0   ? &name
                       : strcmp(argv[i], "--policy") == 0 ? &policy
                                                          : NULL;
    if (opt) {
      if (i + 1 >= argc)
        return cairn__cli_fail("gen: %s needs a value", argv[i]);
      *opt = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1]) {
      return cairn__cli_fail("gen: unknown option %s (see cairn gen --help)", argv[i]);
    } else if (npos < 2) {
      pos[npos++] = argv[i];
    } else {
      return cairn__cli_fail("gen: too many arguments (see cairn gen --help)");
    }
  }
  if (npos != 2)
    return cairn__cli_fail("gen: need FAMILY and N (see cairn gen --help)");
  cairn__gen_family f;
  if (cairn__gen_family_parse(pos[0], &f) != 0)
    return cairn__cli_fail("gen: unknown family \"%s\" (mesh, rmesh, tree or fft)", pos[0]);
  char *end;
  errno = 0;
  unsigned long N = strtoul(pos[1], &end, 10);
  if (errno || *end || end == pos[1] || N > UINT32_MAX || pos[1][0] == '-')
    return cairn__cli_fail("gen: N must be a positive integer, not \"%s\"", pos[1]);
  if (app[0] == '\0' || strlen(app) > CAIRN_MAX_NAME)
    return cairn__cli_fail("gen: --app must be 1 to %u bytes", CAIRN_MAX_NAME);
  cairn_error err = {0};
  uint32_t n;
  if (cairn__gen_size(f, (uint32_t)N, &n, &err) != CAIRN_OK)
    return cairn__cli_fail("gen: %s", err.text);
  if (n > CAIRN_MAX_TASKS)
    return cairn__cli_fail("gen: %s %lu has %u tasks; a job holds at most %u", pos[0], N, n,
                          CAIRN_MAX_TASKS);
  cairn__dag *d = cairn__gen_dag(f, (uint32_t)N, &err);
  if (!d)
    return cairn__cli_fail("gen: %s", err.text);
  char defname[64];
  snprintf(defname, sizeof defname, "%s-%lu", pos[0], N);
  char *jname = json_literal(name ? name : defname), *japp = json_literal(app),
       *jpol = json_literal(policy);
  if (!jname || !japp || !jpol) {
    free(jname);
    free(japp);
    free(jpol);
    cairn__dag_free(d);
    return cairn__cli_fail("gen: --name, --app and --policy must be UTF-8 text");
  }
  FILE *o = stdout;
  fprintf(o, "{\n  \"name\": %s,\n  \"app\": %s,\n  \"policy\": %s,\n  \"tasks\": [\n", jname,
          japp, jpol);
  free(jname);
  free(japp);
  free(jpol);
  for (uint32_t v = 0; v < n; v++) {
    uint32_t a, b;
    cairn__gen_coords(f, (uint32_t)N, v, &a, &b);
    fprintf(o, "    {\"id\": \"%u,%u\", \"args\": [\"%u\", \"%u\"]", a, b, a, b);
    if (cairn__dag_nparents(d, v)) {
      fputs(", \"after\": [", o);
      for (uint32_t k = d->par_off[v]; k < d->par_off[v + 1]; k++) {
        uint32_t pa, pb;
        cairn__gen_coords(f, (uint32_t)N, d->par[k], &pa, &pb);
        fprintf(o, "%s\"%u,%u\"", k > d->par_off[v] ? ", " : "", pa, pb);
      }
      fputc(']', o);
    }
    fputs(v + 1 < n ? "},\n" : "}\n", o);
  }
  fputs("  ]\n}\n", o);
  cairn__dag_free(d);
  if (fflush(o) != 0 || ferror(o))
    return cairn__cli_fail("gen: cannot write the job: %s", strerror(errno));
  return 0;
}
