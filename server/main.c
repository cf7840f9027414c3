/* main.c — cairn-server: parse flags, run the master until SIGINT/SIGTERM. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cairn/master.h"

static cairn_master *g_master;

static void on_signal(int sig) {
  (void)sig;
  if (g_master)
    cairn_master_stop(g_master);
}

static void usage(FILE *f) {
  fputs("usage: cairn-server [--db PATH] [--listen HOST:PORT] [--web DIR]\n"
        "                    [--admin-token-file FILE] [--tls-cert FILE --tls-key FILE]\n"
        "                    [--threads N] [--no-fsync] [--ataf-family F]\n"
        "                    [--broadcast-plan ALGO] [--max-output-file-mib N]\n"
        "                    [--log-level error|warn|info|debug]\n"
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
        "  --max-output-file-mib N   the largest output file a worker may upload, in MiB\n"
        "                       (default 1024), whatever a job declares\n",
        f);
}

int main(int argc, char **argv) {
  static const struct option opts[] = {
    {"db", required_argument, NULL, 'd'},       {"listen", required_argument, NULL, 'l'},
    {"web", required_argument, NULL, 'w'},      {"admin-token-file", required_argument, NULL, 'a'},
    {"tls-cert", required_argument, NULL, 'c'}, {"tls-key", required_argument, NULL, 'k'},
    {"threads", required_argument, NULL, 't'},  {"no-fsync", no_argument, NULL, 'n'},
    {"log-level", required_argument, NULL, 'v'}, {"help", no_argument, NULL, 'h'},
    {"ataf-family", required_argument, NULL, 'f'},
    {"broadcast-plan", required_argument, NULL, 'b'},
    {"max-output-file-mib", required_argument, NULL, 'o'},
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
    case 'h': usage(stdout); return 0;
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
