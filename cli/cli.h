/* cli.h — subcommands of the `cairn` tool. Each takes argv after the
 * subcommand name (argv[0] is the subcommand) and returns the exit status. */
#ifndef CAIRN_CLI_H
#define CAIRN_CLI_H

typedef struct cairn__cli_cmd {
  const char *name;
  const char *summary;
  int (*run)(int argc, char **argv);
} cairn__cli_cmd;

/* Prints "cairn: MESSAGE" to stderr (one clear line) and returns 1. */
int cairn__cli_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 if any of argv[1..argc) is --help or -h. */
int cairn__cli_wants_help(int argc, char **argv);

int cairn__cmd_submit(int argc, char **argv);
int cairn__cmd_status(int argc, char **argv);
int cairn__cmd_wait(int argc, char **argv);
int cairn__cmd_results(int argc, char **argv);
/* cairn results JOB --dir OUT: downloads every output file listed in tasks
 * (the "tasks" of GET /v1/jobs/{id}/tasks) into OUT/TASK/NAME, verifying
 * each sha256 (cmd_outputs.c; h: a cairn__http). 0, or 1 after printing why. */
struct cairn__http;
struct json_t;
int cairn__cli_fetch_outputs(struct cairn__http *h, long long job, struct json_t *tasks,
                            const char *dir);
int cairn__cmd_volunteers(int argc, char **argv);
/* cairn stats [--limit N] [--page P] [--json]: GET /v1/stats as tables; cairn
 * stats export [--db PATH [--out DIR]]: the XML statistics (cmd_stats.c). */
int cairn__cmd_stats(int argc, char **argv);
/* cairn team create|join|leave|rename|show: teams of accounts (cmd_team.c);
 * cairn team V NAME | --none: a volunteer's own team (cmd_stats.c). */
int cairn__cmd_team(int argc, char **argv);
int cairn__cmd_team_volunteer(int argc, char **argv);
/* cairn account create NAME EMAIL | login EMAIL | show ID (cmd_account.c). */
int cairn__cmd_account(int argc, char **argv);
int cairn__cmd_audit(int argc, char **argv);
/* cairn audit verify | export (cmd_chain.c; argv[0] is "verify" or "export"). */
int cairn__cmd_audit_chain(int argc, char **argv);
/* cairn audit prove | check: the audit log (cmd_auditlog.c; argv[0] is "prove" or "check"). */
int cairn__cmd_audit_log(int argc, char **argv);
int cairn__cmd_ban(int argc, char **argv);
int cairn__cmd_release(int argc, char **argv);
/* cairn cancel JOB | delete JOB [--purge] | priority JOB N (cmd_life.c) */
int cairn__cmd_cancel(int argc, char **argv);
int cairn__cmd_delete(int argc, char **argv);
int cairn__cmd_priority(int argc, char **argv);
/* cairn invite [--uses N] [--expires DAYS] [--note TEXT]; cairn invitations
 * [revoke ID] (cmd_invite.c). */
int cairn__cmd_invite(int argc, char **argv);
int cairn__cmd_app(int argc, char **argv);
int cairn__cmd_invitations(int argc, char **argv);
/* cairn gen mesh|rmesh|tree|fft N: print a job file with that dag (cmd_gen.c). */
int cairn__cmd_gen(int argc, char **argv);
/* cairn simulate game|run JOB.json: IC pebble game / volunteer run (cmd_simulate.c). */
int cairn__cmd_simulate(int argc, char **argv);
/* cairn ataf FAMILY X Y | FAMILY --invert N (cmd_ataf.c) */
int cairn__cmd_ataf(int argc, char **argv);
/* cairn plan ALGO INSTANCE.json [--svg FILE]: broadcast/multicast planning. */
int cairn__cmd_plan(int argc, char **argv);
/* cairn launch BACKEND --server URL [...]: the worker factory (launch.c). */
int cairn__cmd_launch(int argc, char **argv);

#endif
