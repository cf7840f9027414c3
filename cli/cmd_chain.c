/* cmd_chain.c — cairn audit verify and cairn audit export: the
 * tamper-evident audit trail (server/chain.h). Both read the database file
 * read-only (--db PATH), beside a running master or not; verify also reads
 * an export file without any database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "server/chain.h"

static void print_report(const cairn__chain_report *r) {
  char head[65], key[65];
  cairn__chain_hex(r->head, 32, head);
  cairn__chain_hex(r->pubkey, 32, key);
  printf("entries checked: %lld", (long long)r->checked);
  if (r->linked)
    printf(" (and %lld of other jobs by their links)", (long long)r->linked);
  printf("\nhead: %lld %s\n", (long long)r->head_seq, r->head_seq ? head : "-");
  printf("checkpoints: %lld valid, signed head %lld; key %s\n", (long long)r->checkpoints,
         (long long)r->signed_seq, r->have_pubkey ? key : "-");
  if (r->live) {
    printf("live rows checked: %lld allocations, %lld results, %lld volunteers, %lld teams",
           (long long)r->live_allocs, (long long)r->live_results, (long long)r->live_vols,
           (long long)r->live_teams);
    if (r->live_gone)
      printf(" (and %lld entries whose rows went with deleted jobs)", (long long)r->live_gone);
    printf("\n");
  }
  if (r->gap[0])
    printf("chain gap (meta audit_chain_gap: %s): %lld rows without entries allowed\n", r->gap,
           (long long)r->live_unchained);
  char seq[24] = "-"; /* a live row no entry describes */
  if (r->bad_seq)
    snprintf(seq, sizeof seq, "%lld", (long long)r->bad_seq);
  if (r->problem[0] && r->bad_row)
    printf("FIRST PROBLEM: seq %s (%s row %lld): %s\n", seq, r->bad_kind, (long long)r->bad_row,
           r->problem);
  else if (r->problem[0])
    printf("FIRST PROBLEM: seq %s (%s): %s\n", seq, r->bad_kind, r->problem);
  else if (r->signed_seq < r->head_seq)
    printf("OK (entries after %lld are not signed yet)\n", (long long)r->signed_seq);
  else
    printf("OK\n");
}

static int verify(const char *db, const char *file, const char *pubhex, int live) {
  uint8_t pk[32];
  if (pubhex && cairn__chain_unhex(pubhex, pk, 32))
    return cairn_cli_fail("--pubkey takes 64 hex digits");
  cairn__chain_report r;
  cairn_error err = {0};
  cairn_status st;
  if (db) {
    st = cairn__chain_verify_db(db, pubhex ? pk : NULL, live, &r, &err);
  } else {
    FILE *f = fopen(file, "r");
    if (!f)
      return cairn_cli_fail("cannot open %s", file);
    st = cairn__chain_verify_file(f, pubhex ? pk : NULL, &r, &err);
    fclose(f);
  }
  if (st != CAIRN_OK)
    return cairn_cli_fail("%s", err.text);
  print_report(&r);
  return r.problem[0] ? 1 : 0;
}

static int export_chain(const char *db, long long job, const char *out_path) {
  FILE *out = out_path ? fopen(out_path, "w") : stdout;
  if (!out)
    return cairn_cli_fail("cannot create %s", out_path);
  cairn_error err = {0};
  cairn_status st = cairn__chain_export(db, job, out, &err);
  if (out_path && fclose(out) && st == CAIRN_OK)
    st = cairn_error_set(&err, CAIRN_EIO, "cannot write %s", out_path);
  return st == CAIRN_OK ? 0 : cairn_cli_fail("%s", err.text);
}

int cairn_cmd_audit_chain(int argc, char **argv) {
  if (cairn_cli_wants_help(argc, argv)) {
    puts("usage: cairn audit verify --db PATH [--pubkey HEX] [--chain-only]\n"
         "       cairn audit verify FILE [--pubkey HEX]\n"
         "       cairn audit export --db PATH [JOB] [-o FILE]\n"
         "verify re-walks the audit chain of a database (read-only, beside a running master)\n"
         "or of an export: every hash, link and checkpoint signature; prints the entries\n"
         "checked, the head and the first problem with its seq and kind (exit 1).\n"
         "With --db it then checks the live tables against the chain (allocations, results,\n"
         "volunteers' bans, quarantines and credit; a problem names the table, the row and\n"
         "the entry's seq); --chain-only skips that.\n"
         "--pubkey: the key checkpoints must be signed by (default: DB.audit-key's, or the\n"
         "export's own). export writes every entry, or JOB's in full and the others by\n"
         "their links, with the checkpoints and the public key.");
    return 0;
  }
  const char *db = NULL, *out = NULL, *pub = NULL, *pos = NULL;
  int live = 1;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--chain-only") == 0 && strcmp(argv[0], "verify") == 0)
      live = 0;
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      db = argv[++i];
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--pubkey") == 0 && i + 1 < argc)
      pub = argv[++i];
    else if (argv[i][0] != '-' && !pos)
      pos = argv[i];
    else
      return cairn_cli_fail("unknown argument %s (cairn audit %s --help)", argv[i], argv[0]);
  }
  if (strcmp(argv[0], "verify") == 0) {
    if (!db == !pos)
      return cairn_cli_fail("usage: cairn audit verify --db PATH | cairn audit verify FILE");
    return verify(db, pos, pub, live);
  }
  char *end = NULL;
  long long job = pos ? strtoll(pos, &end, 10) : 0;
  if (!db || (pos && (*end || job <= 0)))
    return cairn_cli_fail("usage: cairn audit export --db PATH [JOB] [-o FILE]");
  return export_chain(db, job, out);
}
