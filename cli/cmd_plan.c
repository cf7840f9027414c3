/* cmd_plan.c — `cairn plan`: run a broadcast/multicast planner on a JSON
 * instance, check the plan, print it as JSON and optionally draw it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "plan/plan.h"

#define PLAN_FILE_MAX ((size_t)256 << 20)
#define SVG_MAX_ROWS 4000

static void usage(FILE *f) {
  fputs("usage: cairn plan ALGO INSTANCE.json [--svg FILE] [--out FILE]\n"
        "       cairn plan check INSTANCE.json PLAN.json\n"
        "       cairn plan list\n"
        "\n"
        "Plans the broadcast or multicast described by INSTANCE.json with algorithm\n"
        "ALGO, checks the plan in the instance's model and prints it as JSON\n"
        "(docs/planning.md). --svg draws it as a Gantt chart, --out writes the JSON\n"
        "to FILE instead of standard output. `check` replays an existing plan and\n"
        "prints its makespan; `list` prints the algorithms of each model.\n",
        f);
}

/* Reads a whole file into a malloc'd NUL-terminated string. */
static char *slurp(const char *path, size_t *len, char *why, size_t whylen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(why, whylen, "cannot open %s", path);
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  char *buf = malloc(cap + 1);
  while (buf) {
    size_t r = fread(buf + n, 1, cap - n, f);
    n += r;
    if (n < cap)
      break;
    if (cap >= PLAN_FILE_MAX) {
      free(buf);
      buf = NULL;
      snprintf(why, whylen, "%s is larger than %zu bytes", path, PLAN_FILE_MAX);
      fclose(f);
      return NULL;
    }
    cap *= 2;
    char *nb = realloc(buf, cap + 1);
    if (!nb) {
      free(buf);
      buf = NULL;
    } else {
      buf = nb;
    }
  }
  int failed = ferror(f);
  fclose(f);
  if (!buf || failed) {
    free(buf);
    snprintf(why, whylen, "cannot read %s", path);
    return NULL;
  }
  buf[n] = '\0';
  *len = n;
  return buf;
}

static int write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return -1;
  size_t n = strlen(text);
  int bad = fwrite(text, 1, n, f) != n;
  bad |= fclose(f) != 0;
  return bad ? -1 : 0;
}

static int load_instance(const char *path, cairn__plan_instance *in) {
  char why[512];
  size_t len = 0;
  char *text = slurp(path, &len, why, sizeof why);
  if (!text)
    return cairn__cli_fail("%s", why);
  cairn_error err = {0};
  cairn_status st = cairn__plan_instance_parse(text, len, in, &err);
  free(text);
  if (st != CAIRN_OK)
    return cairn__cli_fail("%s: %s", path, err.text);
  return 0;
}

static int cmd_check(const char *ipath, const char *ppath) {
  cairn__plan_instance in;
  if (load_instance(ipath, &in))
    return 1;
  char why[512];
  size_t len = 0;
  char *text = slurp(ppath, &len, why, sizeof why);
  if (!text) {
    cairn__plan_instance_free(&in);
    return cairn__cli_fail("%s", why);
  }
  cairn__plan_schedule s;
  cairn_error err = {0};
  cairn_status st = cairn__plan_schedule_parse(text, len, &in, &s, &err);
  free(text);
  double mk = 0;
  int rc = 0;
  if (st != CAIRN_OK)
    rc = cairn__cli_fail("%s: %s", ppath, err.text);
  else if ((st = cairn__plan_check(&in, &s, &mk, &err)) != CAIRN_OK)
    rc = cairn__cli_fail("%s is infeasible: %s", ppath, err.text);
  else
    printf("feasible: %zu transfers, makespan %.17g, lower bound %.17g\n", s.n, mk, cairn__plan_lower_bound(&in));
  cairn__plan_schedule_free(&s);
  cairn__plan_instance_free(&in);
  return rc;
}

static void list_algorithms(void) {
  for (int m = CAIRN_PLAN_1C; m <= CAIRN_PLAN_CDMD; m++) {
    printf("%-7s", cairn__plan_model_name((cairn__plan_model)m));
    for (const char *const *a = cairn__plan_algorithms((cairn__plan_model)m); *a; a++)
      printf(" %s", *a);
    putchar('\n');
  }
}

int cairn__cmd_plan(int argc, char **argv) {
  if (cairn__cli_wants_help(argc, argv)) {
    usage(stdout);
    return 0;
  }
  if (argc == 2 && strcmp(argv[1], "list") == 0) {
    list_algorithms();
    return 0;
  }
  if (argc >= 2 && strcmp(argv[1], "check") == 0) {
    if (argc != 4)
      return cairn__cli_fail("usage: cairn plan check INSTANCE.json PLAN.json");
    return cmd_check(argv[2], argv[3]);
  }
  const char *algo = NULL, *ipath = NULL, *svg = NULL, *outp = NULL;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--svg") == 0 || strcmp(argv[i], "--out") == 0) {
      if (i + 1 >= argc)
        return cairn__cli_fail("%s needs a file name", argv[i]);
      if (argv[i][2] == 's')
        svg = argv[++i];
      else
        outp = argv[++i];
    } else if (argv[i][0] == '-' && argv[i][1] != '\0') {
      return cairn__cli_fail("unknown option %s (see cairn plan --help)", argv[i]);
    } else if (!algo) {
      algo = argv[i];
    } else if (!ipath) {
      ipath = argv[i];
    } else {
      return cairn__cli_fail("unexpected argument \"%s\" (see cairn plan --help)", argv[i]);
    }
  }
  if (!algo || !ipath)
    return cairn__cli_fail("usage: cairn plan ALGO INSTANCE.json [--svg FILE] [--out FILE]");
  cairn__plan_instance in;
  if (load_instance(ipath, &in))
    return 1;
  cairn__plan_schedule s;
  cairn_error err = {0};
  int rc = 0;
  char *json = NULL, *pic = NULL;
  double mk = 0;
  if (cairn__plan_run(&in, algo, &s, &err) != CAIRN_OK) {
    rc = cairn__cli_fail("%s", err.text);
    goto out;
  }
  if (cairn__plan_check(&in, &s, &mk, &err) != CAIRN_OK) {
    rc = cairn__cli_fail("plan by %s failed its check: %s", s.algorithm, err.text);
    goto out;
  }
  if (!(json = cairn__plan_schedule_to_json(&s, &in))) {
    rc = cairn__cli_fail("out of memory writing the plan");
    goto out;
  }
  if (svg) {
    if (!(pic = cairn__plan_schedule_svg(&s, &in, SVG_MAX_ROWS))) {
      rc = cairn__cli_fail("cannot draw the plan: more than %d nodes take part, or out of memory", SVG_MAX_ROWS);
      goto out;
    }
    if (write_file(svg, pic)) {
      rc = cairn__cli_fail("cannot write %s", svg);
      goto out;
    }
  }
  if (outp) {
    if (write_file(outp, json))
      rc = cairn__cli_fail("cannot write %s", outp);
  } else if (fputs(json, stdout) == EOF || fflush(stdout) != 0) {
    rc = cairn__cli_fail("cannot write the plan to standard output");
  }
out:
  free(json);
  free(pic);
  cairn__plan_schedule_free(&s);
  cairn__plan_instance_free(&in);
  return rc;
}
