/* main.c — the `cairn` admin and tooling command: dispatch to subcommands. */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "cairn/cairn.h"
#include "cli/cli.h"

static const cairn__cli_cmd commands[] = {
  {"submit", "submit a job file (uploads its files); prints the job id", cairn__cmd_submit},
  {"status", "jobs, one job's task counts by state, or one task's attempts", cairn__cmd_status},
  {"wait", "wait for a job: exit 0 done, 1 failed or cancelled, 2 timeout", cairn__cmd_wait},
  {"results", "one line per task: id, state, volunteer, index, result", cairn__cmd_results},
  {"volunteers", "registered volunteers and their counts", cairn__cmd_volunteers},
  {"stats", "credit standings (no token needed); export: BOINC-format XML statistics",
   cairn__cmd_stats},
  {"audit", "who computed index N, V's allocations; verify or export the audit chain", cairn__cmd_audit},
  {"ban", "ban a volunteer; its results and their descendants are recomputed", cairn__cmd_ban},
  {"release", "end a volunteer's quarantine: it gets work again", cairn__cmd_release},
  {"team", "teams of accounts (create, join, leave, rename, show), or a volunteer's own team",
   cairn__cmd_team},
  {"account", "a person's account: create, login (a new key), show with its hosts",
   cairn__cmd_account},
  {"cancel", "cancel a job: no more allocations, running tasks killed", cairn__cmd_cancel},
  {"delete", "delete a finished or cancelled job and the files only it used", cairn__cmd_delete},
  {"priority", "set a job's priority (higher is served first)", cairn__cmd_priority},
  {"app", "the project's signed app versions: keygen, publish, list, retire", cairn__cmd_app},
  {"invite", "create an invitation code for registering a volunteer", cairn__cmd_invite},
  {"invitations", "list the invitations, or revoke one", cairn__cmd_invitations},
  {"launch", "keep a pool of workers for the master's work (local, ssh, ...)", cairn__cmd_launch},
  {"gen", "print a job JSON with a mesh, rmesh, tree or fft dag", cairn__cmd_gen},
  {"simulate", "IC-eligibility (game) and makespan (run) simulations", cairn__cmd_simulate},
  {"ataf", "evaluate or invert an ATAF: phi(X, Y) or phi^-1(N)", cairn__cmd_ataf},
  {"plan", "print a broadcast/multicast plan as JSON", cairn__cmd_plan},
  {NULL, NULL, NULL},
};

int cairn__cli_fail(const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  fputs("cairn: ", stderr);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
  return 1;
}

int cairn__cli_wants_help(int argc, char **argv) {
  for (int i = 1; i < argc; i++)
    if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0)
      return 1;
  return 0;
}

static void usage(FILE *f) {
  fputs("usage: cairn COMMAND [ARGS...]   (cairn COMMAND --help for details)\n"
        "       cairn --version\n\ncommands:\n", f);
  for (const cairn__cli_cmd *c = commands; c->name; c++)
    fprintf(f, "  %-12s %s\n", c->name, c->summary);
}

int main(int argc, char **argv) {
  if (argc < 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0 ||
      strcmp(argv[1], "help") == 0) {
    usage(argc < 2 ? stderr : stdout);
    return argc < 2 ? 1 : 0;
  }
  if (strcmp(argv[1], "--version") == 0) {
    printf("cairn %s\n", cairn_version());
    return 0;
  }
  for (const cairn__cli_cmd *c = commands; c->name; c++)
    if (strcmp(c->name, argv[1]) == 0)
      return c->run(argc - 1, argv + 1);
  return cairn__cli_fail("unknown command \"%s\" (see cairn --help)", argv[1]);
}
