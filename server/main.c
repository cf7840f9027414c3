/* main.c — cairn-server: parse flags, run the master until SIGINT/SIGTERM. */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/master.h"
#include "common/limits.h"

/* The most work requests --max-held-work allows, and job waits
 * --max-job-waits allows (server/conn/waiters.h). */
#define MAX_HELD_WORK 4096
#define MAX_JOB_WAITS 1024

static cairn_master *g_master;
static char *description; /* --project-description-file's text, until the master copies it */

static void on_signal(int sig) {
  (void)sig;
  if (g_master)
    cairn_master_stop(g_master);
}

static void usage(FILE *f) {
  fputs("usage: cairn-server [--db PATH] [--listen HOST:PORT] [--web DIR]\n"
        "                    [--admin-token-file FILE] [--tls-cert FILE --tls-key FILE]\n"
        "                    [--threads N] [--no-fsync] [--ataf-family F]\n"
        "                    [--broadcast-plan ALGO] [--store-and-forward] [--volunteer-rate N]\n"
        "                    [--multicast-plan WR|WRP|CDMD|online]\n"
        "                    [--address-rate N] [--address-connections N]\n"
        "                    [--anonymous-connections N]\n"
        "                    [--registration open|invite|closed] [--max-wall-seconds N]\n"
        "                    [--max-cpu-seconds N] [--max-memory-mib N] [--max-disk-mib N]\n"
        "                    [--max-output-mib N] [--wall-grace-seconds N]\n"
        "                    [--keep-finished DAYS]\n"
        "                    [--max-output-file-mib N] [--max-pending-upload-mib N]\n"
        "                    [--max-held-work N]\n"
        "                    [--max-job-waits N]\n"
        "                    [--project-name NAME] [--project-description-file F]\n"
        "                    [--public-jobs]\n"
        "                    [--stats-dir DIR] [--stats-export-hours H]\n"
        "                    [--log-level error|warn|info|debug] [--help] [--version]\n"
        "\n"
        "  --db PATH            SQLite database (default cairn.db; created if missing)\n"
        "  --listen HOST:PORT   address to serve (default 127.0.0.1:8080; port 0 = any free)\n"
        "  --web DIR            serve the dashboard from DIR at /\n"
        "  --admin-token-file F admin token file (default: $CAIRN_ADMIN_TOKEN, else\n"
        "                       DB.admin-token, created with a random token, mode 0600)\n"
        "  --tls-cert F --tls-key F   serve HTTPS with this PEM certificate and key\n"
        "  --threads N          HTTP worker threads (default 16)\n"
        "  --no-fsync           commits survive a crash of the server but not of the machine\n"
        "  --ataf-family F      accountable indices of a new database: phi1, phi3 or\n"
        "                       phisharp (default); fixed for the database's life\n"
        "  --broadcast-plan A   planner of broadcast inputs: ECEF-LA (default), ECEF,\n"
        "                       ECEF-LAt, ECEF-LAT, FEF, BottomUp, flat, lcf,\n"
        "                       bounded-degree, or online (no plan)\n"
        "  --store-and-forward  name only holders of a whole copy as sources of a\n"
        "                       broadcast input (no cut-through relays)\n"
        "  --multicast-plan A   planner of the copies of outputs kept on workers:\n"
        "                       WR, WRP, CDMD, or online (default: no plan)\n"
        "  --volunteer-rate N   requests one volunteer may make a minute (default 120000,\n"
        "                       after a burst of ten seconds' worth; -1: no limit)\n"
        "  --address-rate N     registrations and failed authentications one client\n"
        "                       address may make a minute (default 60; -1: no limit)\n"
        "  --address-connections N   connections one client address may hold open\n"
        "                       (default 64; -1: no limit; all addresses: 4096)\n"
        "  --anonymous-connections N   connections without a token (no request on them\n"
        "                       carried the admin's or a volunteer's token), all addresses\n"
        "                       together (default 3072, 1 to 4096); one more closes the\n"
        "                       oldest of them that is between requests\n"
        "  --registration M     who may register volunteers: open (default, anyone),\n"
        "                       invite (a code from `cairn invite`) or closed\n"
        "  --max-wall-seconds N, --max-cpu-seconds N, --max-memory-mib N, --max-disk-mib N,\n"
        "  --max-output-mib N   the ceiling of each task limit (default: none); a job asking\n"
        "                       for more is refused, a task without the limit gets the ceiling\n"
        "  --wall-grace-seconds N  a lease ends N s after its task's wall limit, heartbeats\n"
        "                       or not (default 30)\n"
        "  --keep-finished DAYS delete jobs done, failed or cancelled more than DAYS ago\n"
        "                       (fractions allowed: 0.5 = 12 hours; default: keep them)\n"
        "  --max-output-file-mib N   the largest output file a worker may upload, in MiB\n"
        "                       (default 1024), whatever a job declares\n"
        "  --max-pending-upload-mib N   output MiB one volunteer's live leases may have\n"
        "                       uploaded that no result claimed yet (default 4 times\n"
        "                       --max-output-file-mib); past it an upload gets 429\n"
        "  --max-held-work N    work requests held at once while they wait for a task\n"
        "                       (default 4096, at most 4096); past it one is answered at once\n"
        "  --max-job-waits N    job waits (GET /v1/jobs/{id}?wait=) held at once (default\n"
        "                       1024, at most 1024); past it one is answered at once\n"
        "  --quarantine-invalid F, --quarantine-errors F   a volunteer whose share of invalid\n"
        "                       results (errors) over its last 20 exceeds F gets no work until\n"
        "                       released (defaults 0.5 and 0.8; 0: off)\n"
        "  --trust-threshold N  valid replicated results in a row that make a volunteer\n"
        "                       trusted (default 10): its tasks of jobs with \"adaptive\"\n"
        "                       run once, but for spot checks\n"
        "  --spot-check P       the probability that a trusted volunteer's task is still\n"
        "                       replicated (default 0.1; 0 to 1)\n"
        "  --ban-slice K        results a ban handles per hold of the core's lock\n"
        "                       (default 256; 1 to 65536)\n"
        "  --audit-chain on|off the tamper-evident audit trail (default on; its signing\n"
        "                       key is DB.audit-key, created mode 0600)\n"
        "  --audit-tree on|off  the audit log every volunteer can check: a Merkle tree\n"
        "                       over the trail, signed tree heads, proofs, receipts\n"
        "                       (default on, with the trail)\n"
        "  --app-key KEY        the project's Ed25519 public key (base64, as cairn app\n"
        "                       keygen prints, or a file holding it): versions published\n"
        "                       with cairn app publish must verify with it (docs/apps.md)\n"
        "  --project-name NAME  the project's name on its public pages (default Cairn;\n"
        "                       1 to 256 bytes of UTF-8 text)\n"
        "  --project-description-file F   its description there: the text of F (UTF-8,\n"
        "                       lines allowed, at most 16 KiB; default none)\n"
        "  --public-jobs        the public pages list the jobs (name, state, tasks done);\n"
        "                       default: only their totals\n"
        "  --stats-dir DIR      folder of the XML statistics for statistics sites, served at\n"
        "                       /stats/ (default DB.stats; docs/project.md)\n"
        "  --stats-export-hours H   make them again every H hours (default 24; fractions\n"
        "                       allowed; 0: only when asked, cairn stats export)\n",
        f);
}

/* The whole of arg as a number in [lo, hi]; else a message naming flag and
 * -1. */
static int flag_number(const char *flag, const char *arg, long long lo, long long hi,
                       long long *out) {
  char *end = NULL;
  errno = 0;
  long long n = strtoll(arg, &end, 10);
  if (!*arg || *end || errno || n < lo || n > hi) {
    fprintf(stderr, "cairn-server: --%s must be a whole number from %lld to %lld\n", flag, lo,
            hi);
    return -1;
  }
  *out = n;
  return 0;
}

/* The text of --project-description-file (malloc'd), at most
 * PROJECT_TEXT_MAX bytes; NULL with a message. The master checks it. */
#define PROJECT_TEXT_MAX 16384
static char *read_description(const char *path) {
  FILE *f = fopen(path, "r");
  char *text = f ? malloc(PROJECT_TEXT_MAX + 2) : NULL;
  size_t n = text ? fread(text, 1, PROJECT_TEXT_MAX + 1, f) : 0;
  int bad = !f || !text || ferror(f);
  if (f)
    fclose(f);
  if (bad || n > PROJECT_TEXT_MAX || memchr(text, '\0', n)) {
    fprintf(stderr, "cairn-server: --project-description-file %s: %s\n", path,
            bad ? strerror(errno ? errno : EIO)
                : n > PROJECT_TEXT_MAX ? "longer than 16 KiB" : "holds a NUL byte");
    free(text);
    return NULL;
  }
  text[n] = '\0';
  return text;
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
    {"db", required_argument, NULL, 'd'},       {"listen", required_argument, NULL, 'l'},
    {"web", required_argument, NULL, 'w'},      {"admin-token-file", required_argument, NULL, 'a'},
    {"tls-cert", required_argument, NULL, 'c'}, {"tls-key", required_argument, NULL, 'k'},
    {"threads", required_argument, NULL, 't'},  {"no-fsync", no_argument, NULL, 'n'},
    {"log-level", required_argument, NULL, 'v'}, {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"ataf-family", required_argument, NULL, 'f'},
    {"broadcast-plan", required_argument, NULL, 'b'},
    {"store-and-forward", no_argument, NULL, 'F'},
    {"multicast-plan", required_argument, NULL, 'm'},
    {"volunteer-rate", required_argument, NULL, 'r'},
    {"registration", required_argument, NULL, 'g'},
    {"address-rate", required_argument, NULL, 'A'},
    {"address-connections", required_argument, NULL, 'P'},
    {"anonymous-connections", required_argument, NULL, 1002},
    {"max-wall-seconds", required_argument, NULL, 'W'},
    {"max-cpu-seconds", required_argument, NULL, 'C'},
    {"max-memory-mib", required_argument, NULL, 'M'},
    {"max-disk-mib", required_argument, NULL, 'D'},
    {"max-output-mib", required_argument, NULL, 'O'},
    {"wall-grace-seconds", required_argument, NULL, 'G'},
    {"keep-finished", required_argument, NULL, 'K'},
    {"max-output-file-mib", required_argument, NULL, 'o'},
    {"max-pending-upload-mib", required_argument, NULL, 1003},
    {"app-key", required_argument, NULL, 1004},
    {"max-held-work", required_argument, NULL, 'H'},
    {"max-job-waits", required_argument, NULL, 'J'},
    {"quarantine-invalid", required_argument, NULL, 'Q'},
    {"quarantine-errors", required_argument, NULL, 'E'},
    {"trust-threshold", required_argument, NULL, 'T'},
    {"spot-check", required_argument, NULL, 'S'},
    {"ban-slice", required_argument, NULL, 1001},
    {"audit-chain", required_argument, NULL, 'z'},
    {"audit-tree", required_argument, NULL, 1020},
    {"project-name", required_argument, NULL, 1005},
    {"project-description-file", required_argument, NULL, 1006},
    {"public-jobs", no_argument, NULL, 1007},
    {"stats-dir", required_argument, NULL, 1010},
    {"stats-export-hours", required_argument, NULL, 1011},
    {NULL, 0, NULL, 0}};
  cairn_master_config cfg;
  cairn_master_config_init(&cfg);
  const char *tls_cert = NULL, *tls_key = NULL;
  int ch;
  while ((ch = getopt_long(argc, argv, "", opts, NULL)) != -1) {
    switch (ch) {
    case 'd': cfg.db_path = optarg; break;
    case 'l': cfg.listen = optarg; break;
    case 'w': cfg.web_dir = optarg; break;
    case 'a': cfg.admin_token_file = optarg; break;
    case 'c': tls_cert = optarg; break;
    case 'k': tls_key = optarg; break;
    case 't': cfg.threads = atoi(optarg); break;
    case 'n': cfg.durable = 0; break;
    case 'v':
      if (cairn_log_level_parse(optarg, &cfg.log_level) != CAIRN_OK) {
        fprintf(stderr, "cairn-server: --log-level must be error, warn, info or debug\n");
        return 2;
      }
      break;
    case 'f': cfg.ataf_family = optarg; break;
    case 'b': cfg.broadcast_plan = optarg; break;
    case 'F': cfg.store_and_forward = 1; break;
    case 'm': cfg.multicast_plan = optarg; break;
    case 'r': {
      char *end = NULL;
      long n = strtol(optarg, &end, 10);
      if (!*optarg || *end || (n < 1 && n != -1) || n > 100000000) {
        fprintf(stderr, "cairn-server: --volunteer-rate must be a number of requests a minute "
                "from 1 to 100000000, or -1 for no limit\n");
        return 2;
      }
      cfg.volunteer_per_minute = (int)n;
      break;
    }
    case 'g': cfg.registration = optarg; break;
    case 'A': case 'P': { /* per client address: -1 lifts the limit */
      long long n;
      if (flag_number(ch == 'A' ? "address-rate" : "address-connections", optarg, -1,
                      ch == 'A' ? 100000000 : 1000000, &n))
        return 2;
      if (n == 0) {
        fprintf(stderr, "cairn-server: --%s must be -1 (no limit) or above 0\n",
                ch == 'A' ? "address-rate" : "address-connections");
        return 2;
      }
      *(ch == 'A' ? &cfg.anonymous_per_minute : &cfg.per_ip_connections) = (int)n;
      break;
    }
    case 1002: {
      long long n;
      if (flag_number("anonymous-connections", optarg, 1, CAIRN_MAX_CONNECTIONS, &n))
        return 2;
      cfg.anonymous_connections = (int)n;
      break;
    }
    case 'W': case 'C': case 'M': case 'D': case 'O': case 'G': {
      /* the ceilings: 0 = none; the grace: seconds after the wall limit */
      long long n;
      const char *name = opts[0].name;
      for (int i = 0; opts[i].name; i++)
        if (opts[i].val == ch)
          name = opts[i].name;
      if (flag_number(name, optarg, ch == 'G' ? 1 : 0, ch == 'G' ? 86400 : (1LL << 40), &n))
        return 2;
      if (ch == 'W') cfg.max_wall_seconds = n;
      if (ch == 'C') cfg.max_cpu_seconds = n;
      if (ch == 'M') cfg.max_memory_mib = n;
      if (ch == 'D') cfg.max_disk_mib = n;
      if (ch == 'O') cfg.max_output_mib = n;
      if (ch == 'G') cfg.wall_grace_seconds = (int)n;
      break;
    }
    case 'Q': case 'E': {
      char *end = NULL;
      double x = strtod(optarg, &end);
      if (!end || end == optarg || *end || !(x >= 0 && x < 1)) {
        fprintf(stderr, "cairn-server: --quarantine-%s must be a fraction from 0 (off) to "
                "below 1\n", ch == 'Q' ? "invalid" : "errors");
        return 2;
      }
      *(ch == 'Q' ? &cfg.quarantine_invalid : &cfg.quarantine_errors) = x > 0 ? x : -1;
      break;
    }
    case 'T': {
      long long n = 0;
      if (flag_number("trust-threshold", optarg, 1, 1000000, &n))
        return 2;
      cfg.trust_threshold = (int)n;
      break;
    }
    case 1001: {
      long long n = 0;
      if (flag_number("ban-slice", optarg, 1, 65536, &n))
        return 2;
      cfg.ban_slice = (int)n;
      break;
    }
    case 'z':
      if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
        fprintf(stderr, "cairn-server: --audit-chain takes on or off\n");
        return 2;
      }
      cfg.audit_chain = strcmp(optarg, "on") == 0 ? 1 : -1;
      break;
    case 1020:
      if (strcmp(optarg, "on") != 0 && strcmp(optarg, "off") != 0) {
        fprintf(stderr, "cairn-server: --audit-tree takes on or off\n");
        return 2;
      }
      cfg.audit_tree = strcmp(optarg, "on") == 0 ? 1 : -1;
      break;
    case 'S': {
      char *end = NULL;
      double x = strtod(optarg, &end);
      if (!end || end == optarg || *end || !(x >= 0 && x <= 1)) {
        fprintf(stderr, "cairn-server: --spot-check must be a probability from 0 to 1\n");
        return 2;
      }
      cfg.spot_check = x > 0 ? x : -1;
      break;
    }
    case 'K': {
      char *end = NULL;
      cfg.keep_finished_days = strtod(optarg, &end);
      if (!end || end == optarg || *end || !(cfg.keep_finished_days > 0) ||
          cfg.keep_finished_days > 36500) {
        fprintf(stderr, "cairn-server: --keep-finished must be a number of days above 0 (at "
                "most 36500)\n");
        return 2;
      }
      break;
    }
    case 'o': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (*optarg == '\0' || *end || v < 1 || v > 1024L * 1024L) {
        fprintf(stderr, "cairn-server: --max-output-file-mib must be an integer from 1 to 1048576\n");
        return 2;
      }
      cfg.max_output_file_mib = (int)v;
      break;
    }
    case 1004:
      cfg.app_key = optarg;
      break;
    case 1005: cfg.project_name = optarg; break;
    case 1006:
      free(description);
      if (!(description = read_description(optarg)))
        return 2;
      cfg.project_description = description;
      break;
    case 1007: cfg.public_jobs = 1; break;
    case 1010:
      if (!*optarg) {
        fprintf(stderr, "cairn-server: --stats-dir needs a folder\n");
        return 2;
      }
      cfg.stats_dir = optarg;
      break;
    case 1011: { /* 0: only when asked (the config's negative); at most a year */
      char *end = NULL;
      double h = strtod(optarg, &end);
      if (!end || end == optarg || *end || !(h == 0 || (h >= 1.0 / 3600 && h <= 8760))) {
        fprintf(stderr, "cairn-server: --stats-export-hours must be 0 (only when asked) or a "
                "number of hours from 1/3600 (a second) to 8760\n");
        return 2;
      }
      cfg.stats_export_hours = h > 0 ? h : -1;
      break;
    }
    case 1003: {
      long long n = 0;
      if (flag_number("max-pending-upload-mib", optarg, 1, 4LL * 1024 * 1024, &n))
        return 2;
      cfg.max_pending_upload_mib = (int)n;
      break;
    }
    case 'H': {
      char *end = NULL;
      long v = strtol(optarg, &end, 10);
      if (*optarg == '\0' || *end || v < 1 || v > MAX_HELD_WORK) {
        fprintf(stderr, "cairn-server: --max-held-work must be an integer from 1 to %d\n",
                MAX_HELD_WORK);
        return 2;
      }
      cfg.max_held_work = (int)v;
      break;
    }
    case 'J': {
      long long n = 0;
      if (flag_number("max-job-waits", optarg, 1, MAX_JOB_WAITS, &n))
        return 2;
      cfg.max_job_waits = (int)n;
      break;
    }
    case 'h': usage(stdout); return 0;
    case 'V': printf("cairn-server %s\n", cairn_version()); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (optind < argc) {
    fprintf(stderr, "cairn-server: unexpected argument \"%s\"\n", argv[optind]);
    return 2;
  }
  if (!tls_cert != !tls_key) {
    fprintf(stderr, "cairn-server: --tls-cert and --tls-key go together\n");
    return 2;
  }
  cfg.tls_cert = tls_cert;
  cfg.tls_key = tls_key;
  cairn_error err;
  g_master = cairn_master_create(&cfg, &err);
  free(description); /* the master keeps a copy */
  description = NULL;
  if (!g_master) {
    fprintf(stderr, "cairn-server: %s\n", err.text);
    return 1;
  }
  struct sigaction sa = {0};
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  signal(SIGPIPE, SIG_IGN);
  if (cairn_master_start(g_master, &err) != CAIRN_OK) {
    fprintf(stderr, "cairn-server: %s\n", err.text);
    cairn_master_delete(g_master);
    return 1;
  }
  printf("cairn-server listening on %s\n", cairn_master_url(g_master));
  fflush(stdout);
  cairn_status st = cairn_master_run(g_master, &err);
  if (st != CAIRN_OK)
    fprintf(stderr, "cairn-server: %s (%s); exiting\n", err.text, cairn_strerror(st));
  cairn_master_delete(g_master);
  return st == CAIRN_OK ? 0 : 70; /* EX_SOFTWARE: a supervisor restarts it */
}
