/* cmd_chain.c — cairn audit verify and cairn audit export: the
 * tamper-evident audit trail (server/store/chain.h). Both read the database file
 * read-only (--db PATH), beside a running master or not; verify also reads
 * an export file without any database. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "server/store/chain.h"

/* How the key the checkpoints were checked against was chosen. An
 * export carries its own key: anyone who rewrites the export signs it
 * again with a key of their own, so only a key from elsewhere (--pubkey,
 * or the database's DB.audit-key) proves who wrote it. */
typedef enum key_trust {
  KEY_PINNED,   /* --pubkey, or the database's own key file */
  KEY_EMBEDDED, /* the export's own key, accepted with --trust-embedded-key */
  KEY_UNPINNED  /* the export's own key, not accepted: exit 2 when all else verifies */
} key_trust;

/* Prints r; returns the exit status: 1 on a problem, 2 when the chain
 * verifies but only against a key that was not pinned, else 0. */
static int print_report(const cairn__chain_report *r, key_trust trust) {
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
  if (r->tree)
    printf("audit log: a tree of %lld leaves, %lld stored nodes and %lld signed heads checked "
           "against the chain\n", (long long)r->tree_size, (long long)r->tree_nodes,
           (long long)r->tree_heads);
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
  if (r->problem[0])
    return 1;
  if (trust == KEY_UNPINNED) {
    printf("KEY NOT PINNED: the export verifies against its own key %s, which whoever wrote "
           "the file chose; pass the master's public key with --pubkey HEX (or accept the "
           "export's own with --trust-embedded-key)\n", r->have_pubkey ? key : "-");
    return 2;
  }
  if (r->signed_seq < r->head_seq)
    printf("OK (entries after %lld are not signed yet)\n", (long long)r->signed_seq);
  else
    printf("OK\n");
  if (trust == KEY_EMBEDDED)
    printf("key not pinned: trusted the export's own key %s (--trust-embedded-key); compare "
           "it with the master's public key\n", r->have_pubkey ? key : "-");
  return 0;
}

/* trust_embedded: an export's own key is accepted (--trust-embedded-key). */
static int verify(const char *db, const char *file, const char *pubhex, int live,
                  int trust_embedded) {
  uint8_t pk[32];
  if (pubhex && cairn__chain_unhex(pubhex, pk, 32))
    return cairn__cli_fail("--pubkey takes 64 hex digits");
  cairn__chain_report r;
  cairn_error err = {0};
  cairn_status st;
  if (db) {
    st = cairn__chain_verify_db(db, pubhex ? pk : NULL, live, &r, &err);
  } else {
    FILE *f = fopen(file, "r");
    if (!f)
      return cairn__cli_fail("cannot open %s", file);
    st = cairn__chain_verify_file(f, pubhex ? pk : NULL, &r, &err);
    fclose(f);
  }
  if (st != CAIRN_OK)
    return cairn__cli_fail("%s", err.text);
  key_trust trust = db || pubhex ? KEY_PINNED : trust_embedded ? KEY_EMBEDDED : KEY_UNPINNED;
  return print_report(&r, trust);
}

static int export_chain(const char *db, long long job, const char *out_path) {
  FILE *out = out_path ? fopen(out_path, "w") : stdout;
  if (!out)
    return cairn__cli_fail("cannot create %s", out_path);
  cairn_error err = {0};
  cairn_status st = cairn__chain_export(db, job, out, &err);
  if (out_path && fclose(out) && st == CAIRN_OK)
    st = cairn__error_set(&err, CAIRN_EIO, "cannot write %s", out_path);
  return st == CAIRN_OK ? 0 : cairn__cli_fail("%s", err.text);
}

int cairn__cmd_audit_chain(int argc, char **argv) {
  if (cairn__cli_wants_help(argc, argv)) {
    puts("usage: cairn audit verify --db PATH [--pubkey HEX] [--chain-only]\n"
         "       cairn audit verify FILE --pubkey HEX | --trust-embedded-key\n"
         "       cairn audit export --db PATH [JOB] [-o FILE]\n"
         "verify re-walks the audit chain of a database (read-only, beside a running master)\n"
         "or of an export: every hash, link and checkpoint signature; prints the entries\n"
         "checked, the head and the first problem with its seq and kind (exit 1).\n"
         "With --db it then checks the live tables against the chain (allocations, results,\n"
         "volunteers' bans, quarantines and credit; a problem names the table, the row and\n"
         "the entry's seq); --chain-only skips that.\n"
         "--pubkey: the key checkpoints must be signed by (default with --db: DB.audit-key's).\n"
         "An export names its own key, which whoever wrote the file chose: without --pubkey\n"
         "it prints KEY NOT PINNED instead of OK and exits 2; --trust-embedded-key accepts\n"
         "that key (OK, then a line saying the key was not pinned, with the key).\n"
         "export writes every entry, or JOB's in full and the others by their links, with\n"
         "the checkpoints and the public key.");
    return 0;
  }
  const char *db = NULL, *out = NULL, *pub = NULL, *pos = NULL;
  int live = 1, trust_embedded = 0;
  for (int i = 1; i < argc; i++) {
    if (strcmp(argv[i], "--chain-only") == 0 && strcmp(argv[0], "verify") == 0)
      live = 0;
    else if (strcmp(argv[i], "--trust-embedded-key") == 0 && strcmp(argv[0], "verify") == 0)
      trust_embedded = 1;
    else if (strcmp(argv[i], "--db") == 0 && i + 1 < argc)
      db = argv[++i];
    else if (strcmp(argv[i], "-o") == 0 && i + 1 < argc)
      out = argv[++i];
    else if (strcmp(argv[i], "--pubkey") == 0 && i + 1 < argc)
      pub = argv[++i];
    else if (argv[i][0] != '-' && !pos)
      pos = argv[i];
    else
      return cairn__cli_fail("unknown argument %s (cairn audit %s --help)", argv[i], argv[0]);
  }
  if (strcmp(argv[0], "verify") == 0) {
    if (!db == !pos)
      return cairn__cli_fail("usage: cairn audit verify --db PATH | cairn audit verify FILE "
                            "--pubkey HEX | --trust-embedded-key");
    if (trust_embedded && (db || pub))
      return cairn__cli_fail("--trust-embedded-key is for an export FILE without --pubkey");
    return verify(db, pos, pub, live, trust_embedded);
  }
  char *end = NULL;
  long long job = pos ? strtoll(pos, &end, 10) : 0;
  if (!db || (pos && (*end || job <= 0)))
    return cairn__cli_fail("usage: cairn audit export --db PATH [JOB] [-o FILE]");
  return export_chain(db, job, out);
}
