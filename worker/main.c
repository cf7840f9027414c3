/* main.c — the cairn-worker command: parse flags, register the apps, run the
 * worker library until SIGINT/SIGTERM, idle timeout or --max-tasks. */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/worker.h"
#include "common/protocol.h"
#include "common/resources.h"
#include "worker/projfile.h"

static cairn_worker *volatile g_worker;

static void on_signal(int sig) {
  (void)sig;
  cairn_worker_stop(g_worker);
}

static const char usage_text[] =
  "usage: cairn-worker --server URL --project-key KEY | --app NAME=PATH [--app NAME=PATH ...]\n"
  "       cairn-worker --project URL[=SHARE] ... | --config FILE [--app NAME=PATH ...]\n"
  "                    [--share-half-life SECONDS]\n"
  "                    [--name NAME] [--cluster LABEL] [--team NAME] [--slots N]\n"
  "                    [--dir DIR]\n"
  "                    [--cores N] [--memory MIB] [--disk MIB]\n"
  "                    [--exit-when-idle SECONDS] [--max-tasks N]\n"
  "                    [--peer-listen HOST:PORT|off] [--peer-address HOST]\n"
  "                    [--peer-max N] [--stall-timeout SECONDS] [--download-limit KIB]\n"
  "                    [--invitation-file PATH] [--account-key KEY | --account-key-file PATH]\n"
  "                    [--idle-only] [--idle-threshold PERCENT] [--idle-settle SECONDS]\n"
  "                    [--cpu-limit PERCENT] [--hours A-B[,A-B...]] [--max-disk MIB]\n"
  "                    [--no-sandbox] [--allow-network] [--sandbox-bind PATH[:rw] ...]\n"
  "                    [--log-level error|warn|info|debug] [--help] [--version]\n"
  "\n"
  "Polls the Cairn master at URL for tasks and runs them with the project's signed\n"
  "apps (--project-key) or the listed apps (a task of app NAME runs as\n"
  "`PATH ARGS...`, never through a shell). With --project or --config it polls\n"
  "the masters of several projects, dividing its slots among them in proportion\n"
  "to their shares.\n"
  "\n"
  "  --server URL            the master, e.g. http://127.0.0.1:8080\n"
  "  --project URL[=SHARE]   compute for this project too, with this resource share\n"
  "                          (0 to 1000000; default 100; 0: only while no other has\n"
  "                          work); repeatable, instead of --server: each project\n"
  "                          has its own state in DIR/projects/<id>\n"
  "  --config FILE           projects, one a line: project URL [share=N]\n"
  "                          [project-key=KEY] [account-key=KEY] [account-key-file=PATH]\n"
  "                          [invitation-file=PATH]\n"
  "  --share-half-life S     the projects' usage the shares are measured by forgets\n"
  "                          with this half-life (1 to 31536000 s; default 600)\n"
  "  --project-key KEY       the project's public key (base64, or a file holding it):\n"
  "                          run its signed apps, each version fetched from the master\n"
  "                          and verified before anything runs (docs/apps.md)\n"
  "  --app NAME=PATH         an app this worker runs (repeatable; at least one\n"
  "                          without --project-key)\n"
  "  --name NAME             volunteer name (default: the host name)\n"
  "  --cluster LABEL         cluster label used for data distribution\n"
  "  --team NAME             the team this volunteer's credit counts for (1 to 64\n"
  "                          printable ASCII characters; GET /v1/stats)\n"
  "  --slots N               task threads: tasks run at once at most (default: one\n"
  "                          per offered core)\n"
  "  --cores N               cores offered to tasks (default: the online CPUs, or\n"
  "                          --slots when that is more)\n"
  "  --memory MIB            memory offered, in MiB (default: MemAvailable)\n"
  "  --disk MIB              disk offered, in MiB (default: free space of --dir)\n"
  "  --dir DIR               state: credentials, cache, task dirs (default ./cairn-worker)\n"
  "  --exit-when-idle S      exit 0 after S seconds without work (default: never)\n"
  "  --max-tasks N           exit 0 after N tasks (default: unlimited)\n"
  "  --prefetch N            tasks each slot takes ahead of its free slot, 0 to 16, from\n"
  "                          a master that lists \"batch\"; their results go back\n"
  "                          together (default 0: one task at a time)\n"
  "  --peer-listen HOST:PORT serve cached inputs to peers here (numeric address;\n"
  "                          default 0.0.0.0:0, a free port; off: no peer server)\n"
  "  --peer-address HOST     host given to the master for peers to reach this worker\n"
  "                          (default: this host's address towards the master)\n"
  "  --peer-max N            files sent to peers at once, 503 beyond (default 4)\n"
  "  --stall-timeout S       a download receiving nothing for S seconds moves on to\n"
  "                          the next source (default 10; decimals allowed)\n"
  "  --download-limit KIB    each download at most KIB KiB a second (default: no cap)\n"
  "  --invitation-file PATH  invitation code (first line of PATH) sent when registering\n"
  "                          with a master that registers by invitation; without it,\n"
  "                          $CAIRN_INVITATION when set\n"
  "  --account-key KEY       the account key of your account on the master (cairn\n"
  "                          account create): this host is attached to it at its\n"
  "                          registration and its credit counts for it too\n"
  "  --account-key-file PATH the same, from the first line of PATH; without either,\n"
  "                          $CAIRN_ACCOUNT_KEY when set\n"
  "  --idle-only             run tasks only while other processes leave the machine\n"
  "                          idle: when they use more than --idle-threshold for 2 s,\n"
  "                          running apps are stopped (SIGSTOP) and no work is\n"
  "                          requested; after --idle-settle seconds idle they go on\n"
  "  --idle-threshold P      other processes' CPU use, in percent of one core, that\n"
  "                          means the computer is in use (default 25)\n"
  "  --idle-settle S         seconds of idle before suspended tasks resume (default 10)\n"
  "  --cpu-limit P           each app runs P percent (1-100) of every second and is\n"
  "                          stopped the rest (default 100: no limit)\n"
  "  --hours A-B[,A-B...]    local time windows (H or H:MM; 22-07 wraps midnight):\n"
  "                          outside them no work is requested and apps are stopped\n"
  "  --max-disk MIB          the cache and task directories of --dir stay under MIB:\n"
  "                          before a task, cached files it does not need are removed\n"
  "                          (oldest first), else the task is refused (default: none)\n"
  "  --no-sandbox            run apps directly, unsandboxed: they see all this user\n"
  "                          sees (default: each task in a bubblewrap sandbox)\n"
  "  --allow-network         a task whose job asks \"network\": true keeps the\n"
  "                          network in its sandbox (default: loopback only)\n"
  "  --sandbox-bind PATH[:rw] show PATH inside the sandbox at the same path,\n"
  "                          read-only, or read-write with :rw (repeatable, 16 at most)\n"
  "  --log-level LEVEL       error, warn (default), info or debug\n"
  "\n"
  "SIGINT/SIGTERM stop the worker: running apps are killed, the master\n"
  "reissues their tasks. Exit status: 0 normal end, 1 fatal error, 2 bad usage.\n";

static int bad_usage(const char *fmt, const char *arg) {
  fputs("cairn-worker: ", stderr);
  fprintf(stderr, fmt, arg);
  fputs(" (see cairn-worker --help)\n", stderr);
  return 2;
}

/* Parses a non-negative integer no larger than max; -1 when it is not one. */
static long long parse_count(const char *s, long long max) {
  char *end = NULL;
  if (!s || !*s || *s == '-' || *s == '+')
    return -1;
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (errno || *end || v > (unsigned long long)max)
    return -1;
  return (long long)v;
}

/* Checks the projects against the other flags and points cfg at them
 * (--project or --config), or at --server. 0, or bad_usage's 2. */
static int check_projects(cairn_worker_config *cfg, cairn__projlist *projects, int keys,
                          size_t napps) {
  if (projects->n && cfg->server_url)
    return bad_usage("give --server (one project) or --project/--config (several), not "
                     "both%s", "");
  if (!projects->n && !cfg->server_url)
    return bad_usage("--server URL, --project URL or --config FILE is required%s", "");
  if (projects->n && keys)
    return bad_usage("with --project or --config, give each project its project key, account "
                     "key and invitation in --config (project URL project-key=KEY ...)%s", "");
  if (projects->n) {
    cfg->projects = projects->v;
    cfg->nprojects = projects->n;
  }
  int signed_apps = cfg->project_key != NULL;
  for (size_t k = 0; k < projects->n; k++)
    signed_apps |= projects->v[k].project_key != NULL;
  if (napps == 0 && !signed_apps)
    return bad_usage("--project-key KEY or at least one --app NAME=PATH is required%s", "");
  return 0;
}

typedef struct app_arg {
  char *name;
  char *path;
} app_arg;

int main(int argc, char **argv) {
  enum {
    O_SERVER = 1, O_APP, O_NAME, O_CLUSTER, O_SLOTS, O_DIR, O_IDLE, O_MAX, O_LOG, O_HELP,
    O_PEER_LISTEN, O_PEER_ADDRESS, O_PEER_MAX, O_STALL, O_DOWNLOAD_LIMIT, O_CORES, O_MEMORY,
    O_DISK,
    O_INVITATION, O_IDLE_ONLY, O_IDLE_THRESHOLD, O_IDLE_SETTLE, O_CPU_LIMIT, O_HOURS,
    O_MAX_DISK, O_TEAM, O_PREFETCH, O_VERSION, O_PROJECT_KEY, O_NO_SANDBOX, O_ALLOW_NETWORK,
    O_SANDBOX_BIND, O_ACCOUNT_KEY, O_ACCOUNT_KEY_FILE, O_PROJECT, O_CONFIG, O_HALF_LIFE
  };
  static const struct option opts[] = {
    {"server", required_argument, NULL, O_SERVER},
    {"project", required_argument, NULL, O_PROJECT},
    {"config", required_argument, NULL, O_CONFIG},
    {"share-half-life", required_argument, NULL, O_HALF_LIFE},
    {"app", required_argument, NULL, O_APP},
    {"project-key", required_argument, NULL, O_PROJECT_KEY},
    {"name", required_argument, NULL, O_NAME},
    {"cluster", required_argument, NULL, O_CLUSTER},
    {"team", required_argument, NULL, O_TEAM},
    {"slots", required_argument, NULL, O_SLOTS},
    {"dir", required_argument, NULL, O_DIR},
    {"exit-when-idle", required_argument, NULL, O_IDLE},
    {"max-tasks", required_argument, NULL, O_MAX},
    {"prefetch", required_argument, NULL, O_PREFETCH},
    {"log-level", required_argument, NULL, O_LOG},
    {"peer-listen", required_argument, NULL, O_PEER_LISTEN},
    {"peer-address", required_argument, NULL, O_PEER_ADDRESS},
    {"peer-max", required_argument, NULL, O_PEER_MAX},
    {"stall-timeout", required_argument, NULL, O_STALL},
    {"download-limit", required_argument, NULL, O_DOWNLOAD_LIMIT},
    {"cores", required_argument, NULL, O_CORES},
    {"memory", required_argument, NULL, O_MEMORY},
    {"disk", required_argument, NULL, O_DISK},
    {"invitation-file", required_argument, NULL, O_INVITATION},
    {"account-key", required_argument, NULL, O_ACCOUNT_KEY},
    {"account-key-file", required_argument, NULL, O_ACCOUNT_KEY_FILE},
    {"idle-only", no_argument, NULL, O_IDLE_ONLY},
    {"idle-threshold", required_argument, NULL, O_IDLE_THRESHOLD},
    {"idle-settle", required_argument, NULL, O_IDLE_SETTLE},
    {"cpu-limit", required_argument, NULL, O_CPU_LIMIT},
    {"hours", required_argument, NULL, O_HOURS},
    {"max-disk", required_argument, NULL, O_MAX_DISK},
    {"no-sandbox", no_argument, NULL, O_NO_SANDBOX},
    {"allow-network", no_argument, NULL, O_ALLOW_NETWORK},
    {"sandbox-bind", required_argument, NULL, O_SANDBOX_BIND},
    {"help", no_argument, NULL, O_HELP},
    {"version", no_argument, NULL, O_VERSION},
    {NULL, 0, NULL, 0},
  };
  cairn_worker_config cfg;
  cairn_worker_config_init(&cfg);
  char invitation[CAIRN__CODE_MAX + 2], account_key[CAIRN__CODE_MAX + 2];
  app_arg apps[256];
  size_t napps = 0;
  const char *binds[16];
  long long v;
  int opt, rc, keys = 0;
  cairn_error err;
  static cairn__projlist projects; /* --project and --config (projfile.h) */

  opterr = 0;
  while ((opt = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
    switch (opt) {
    case O_SERVER: cfg.server_url = optarg; break;
    case O_PROJECT:
    case O_CONFIG:
      if ((opt == O_PROJECT ? cairn__projlist_flag(&projects, optarg, &err)
                            : cairn__projlist_read(&projects, optarg, &err)) != CAIRN_OK) {
        cairn__projlist_free(&projects);
        return bad_usage("%s", err.text);
      }
      break;
    case O_HALF_LIFE:
      v = parse_count(optarg, 31536000);
      if (v < 1)
        return bad_usage("--share-half-life wants seconds from 1 to 31536000, got \"%s\"",
                         optarg);
      cfg.share_half_life = (unsigned)v;
      break;
    case O_NAME: cfg.name = optarg; break;
    case O_CLUSTER: cfg.cluster = optarg; break;
    case O_TEAM: cfg.team = optarg; break;
    case O_DIR: cfg.dir = optarg; break;
    case O_PEER_LISTEN: cfg.peer_listen = optarg; break;
    case O_PEER_ADDRESS: cfg.peer_address = optarg; break;
    case O_PEER_MAX:
      v = parse_count(optarg, CAIRN_MAX_PEER_MAX);
      if (v < 1)
        return bad_usage("--peer-max wants an integer from 1 to 1024, got \"%s\"", optarg);
      cfg.peer_max = (unsigned)v;
      break;
    case O_ACCOUNT_KEY: cfg.account_key = optarg; keys = 1; break;
    case O_ACCOUNT_KEY_FILE:
      if (cairn__first_line(optarg, account_key, sizeof account_key))
        return bad_usage("--account-key-file: %s holds no account key on its first line", optarg);
      cfg.account_key = account_key;
      keys = 1;
      break;
    case O_INVITATION:
      if (cairn__first_line(optarg, invitation, sizeof invitation))
        return bad_usage("--invitation-file: %s holds no code on its first line (at most 256 "
                         "characters)", optarg);
      cfg.invitation = invitation;
      keys = 1;
      break;
    case O_DOWNLOAD_LIMIT: {
      char *end = NULL;
      errno = 0;
      unsigned long k = strtoul(optarg, &end, 10);
      if (errno || end == optarg || *end || optarg[0] == '-' || k < 1 || k > 16777216)
        return bad_usage("--download-limit wants KiB a second from 1 to 16777216, got \"%s\"",
                         optarg);
      cfg.download_kib = (unsigned)k;
      break;
    }
    case O_STALL: {
      char *end = NULL;
      errno = 0;
      double sec = strtod(optarg, &end);
      if (errno || end == optarg || *end || !(sec >= 0.001 && sec <= 86400))
        return bad_usage("--stall-timeout wants seconds from 0.001 to 86400, got \"%s\"",
                         optarg);
      cfg.stall_ms = (unsigned)(sec * 1000 + 0.5);
      break;
    }
    case O_PROJECT_KEY: cfg.project_key = optarg; keys = 1; break;
    case O_APP: {
      char *eq = strchr(optarg, '=');
      if (!eq || eq == optarg || !eq[1])
        return bad_usage("--app wants NAME=PATH, got \"%s\"", optarg);
      if (napps == sizeof apps / sizeof apps[0])
        return bad_usage("too many --app flags%s", "");
      *eq = '\0';
      apps[napps++] = (app_arg){optarg, eq + 1};
      break;
    }
    case O_SLOTS:
      v = parse_count(optarg, 1024);
      if (v < 1)
        return bad_usage("--slots wants an integer from 1 to 1024, got \"%s\"", optarg);
      cfg.slots = (unsigned)v;
      break;
    case O_CORES:
      v = parse_count(optarg, CAIRN_MAX_CORES);
      if (v < 1)
        return bad_usage("--cores wants an integer from 1 to 4096, got \"%s\"", optarg);
      cfg.cores = (unsigned)v;
      break;
    case O_MAX_DISK:
      v = parse_count(optarg, CAIRN_MAX_RES_MIB);
      if (v < 1)
        return bad_usage("--max-disk wants MiB from 1 to 1073741824, got \"%s\"", optarg);
      cfg.max_disk_mib = (unsigned long long)v;
      break;
    case O_MEMORY:
    case O_DISK:
      v = parse_count(optarg, CAIRN_MAX_RES_MIB);
      if (v < 1)
        return bad_usage(opt == O_MEMORY ? "--memory wants MiB from 1 to 1073741824, got \"%s\""
                                         : "--disk wants MiB from 1 to 1073741824, got \"%s\"",
                         optarg);
      if (opt == O_MEMORY)
        cfg.memory_mib = (unsigned long long)v;
      else
        cfg.disk_mib = (unsigned long long)v;
      break;
    case O_IDLE:
      v = parse_count(optarg, INT_MAX);
      if (v < 0)
        return bad_usage("--exit-when-idle wants a number of seconds, got \"%s\"", optarg);
      cfg.exit_when_idle = (unsigned)v;
      break;
    case O_PREFETCH:
      v = parse_count(optarg, CAIRN_MAX_PREFETCH);
      if (v < 0)
        return bad_usage("--prefetch wants an integer from 0 to 16, got \"%s\"", optarg);
      cfg.prefetch = (unsigned)v;
      break;
    case O_MAX:
      v = parse_count(optarg, LONG_MAX);
      if (v < 0)
        return bad_usage("--max-tasks wants a non-negative integer, got \"%s\"", optarg);
      cfg.max_tasks = (unsigned long)v;
      break;
    case O_IDLE_ONLY: cfg.idle_only = 1; break;
    case O_NO_SANDBOX: cfg.no_sandbox = 1; break;
    case O_ALLOW_NETWORK: cfg.allow_network = 1; break;
    case O_SANDBOX_BIND:
      if (cfg.nsandbox_binds == sizeof binds / sizeof binds[0])
        return bad_usage("at most 16 --sandbox-bind flags%s", "");
      binds[cfg.nsandbox_binds++] = optarg;
      cfg.sandbox_binds = binds;
      break;
    case O_IDLE_THRESHOLD:
      v = parse_count(optarg, 409600);
      if (v < 1)
        return bad_usage("--idle-threshold wants a percentage of one core from 1 to 409600, "
                         "got \"%s\"", optarg);
      cfg.idle_threshold = (unsigned)v;
      break;
    case O_IDLE_SETTLE:
      v = parse_count(optarg, 86400);
      if (v < 1)
        return bad_usage("--idle-settle wants seconds from 1 to 86400, got \"%s\"", optarg);
      cfg.idle_settle = (unsigned)v;
      break;
    case O_CPU_LIMIT:
      v = parse_count(optarg, 100);
      if (v < 1)
        return bad_usage("--cpu-limit wants a percentage from 1 to 100, got \"%s\"", optarg);
      cfg.cpu_limit = (unsigned)v;
      break;
    case O_HOURS: cfg.hours = optarg; break;
    case O_LOG:
      if (cairn_log_level_parse(optarg, &cfg.log_level) != CAIRN_OK)
        return bad_usage("--log-level wants error, warn, info or debug, got \"%s\"", optarg);
      break;
    case 'h':
    case O_HELP: fputs(usage_text, stdout); return 0;
    case O_VERSION: printf("cairn-worker %s\n", cairn_version()); return 0;
    case ':': return bad_usage("%s needs a value", argv[optind - 1]);
    default: return bad_usage("unknown option \"%s\"", argv[optind - 1]);
    }
  }
  rc = check_projects(&cfg, &projects, keys, napps);
  if (rc != 0 || optind < argc) {
    cairn__projlist_free(&projects);
    return rc ? rc : bad_usage("unexpected argument \"%s\"", argv[optind]);
  }
  if (!cfg.projects && !cfg.invitation && getenv("CAIRN_INVITATION") &&
      *getenv("CAIRN_INVITATION"))
    cfg.invitation = getenv("CAIRN_INVITATION");
  if (!cfg.projects && !cfg.account_key && getenv("CAIRN_ACCOUNT_KEY") &&
      *getenv("CAIRN_ACCOUNT_KEY"))
    cfg.account_key = getenv("CAIRN_ACCOUNT_KEY");

  cairn_worker *w = cairn_worker_create(&cfg, &err);
  if (!w) {
    cairn__projlist_free(&projects);
    return bad_usage("%s", err.text);
  }
  for (size_t i = 0; i < napps; i++)
    if (cairn_worker_add_exec_app(w, apps[i].name, apps[i].path, &err) != CAIRN_OK) {
      rc = bad_usage("%s", err.text);
      cairn_worker_delete(w);
      return rc;
    }

  g_worker = w;
  struct sigaction sa;
  memset(&sa, 0, sizeof sa);
  sa.sa_handler = on_signal;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);

  cairn_status st_run = cairn_worker_run(w, &err);
  if (st_run != CAIRN_OK)
    fprintf(stderr, "cairn-worker: %s\n", err.text);
  cairn_worker_stats st;
  cairn_worker_get_stats(w, &st);
  fprintf(stderr, "cairn-worker: %llu done, %llu failed, %llu dropped\n", st.tasks_done,
          st.tasks_failed, st.tasks_dropped);
  for (size_t k = 0; cfg.projects && k < cairn_worker_project_count(w); k++) {
    cairn_worker_project_stats ps;
    if (cairn_worker_get_project_stats(w, k, &ps) == CAIRN_OK)
      fprintf(stderr, "cairn-worker: project %s share %u: %llu done, %llu failed, %llu dropped, "
              "%.1f s of CPU, usage %.1f s\n", ps.server_url, ps.share, ps.tasks_done,
              ps.tasks_failed, ps.tasks_dropped, ps.cpu_seconds, ps.usage);
  }
  g_worker = NULL;
  cairn_worker_delete(w);
  cairn__projlist_free(&projects);
  return st_run == CAIRN_OK ? 0 : 1;
}
