/* cmd_auditlog.c — cairn audit prove and cairn audit check: the audit log
 * every volunteer can check (docs/accountability.md, "A log every volunteer
 * can check"; docs/cli.md). prove asks a master for proofs and checks each
 * here before printing or writing it; check reads files only: a signed
 * head and a volunteer's receipts (the receipt file of common/sth.h), and
 * decides with the project's public audit key alone. */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "common/base64.h"
#include "common/sth.h"

/* ---- reading files ---- */

static json_t *read_json(const char *path) {
  json_error_t je;
  json_t *o = json_load_file(path, 0, &je);
  if (!o)
    cairn__cli_fail("%s: %s (line %d)", path, je.text, je.line);
  return o;
}

/* The audit key from arg: its base64, or a file holding that or the JSON of
 * GET /v1/audit/key ({"public_key": B64}). 0, or 1 after printing why. */
static int load_key(const char *arg, uint8_t pk[32]) {
  json_t *s = json_string(arg);
  int ok = cairn__b64_parse(s, pk, 32) == 0;
  json_decref(s);
  if (ok)
    return 0;
  FILE *f = fopen(arg, "r");
  if (!f)
    return cairn__cli_fail("--key: \"%.100s\" is neither the base64 of a 32-byte key nor a "
                           "readable file", arg);
  char buf[512] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' ' || buf[n - 1] == '\r'))
    buf[--n] = '\0';
  json_t *o = json_loads(buf, JSON_DECODE_ANY, NULL);
  s = json_is_object(o) ? json_incref(json_object_get(o, "public_key")) : json_string(buf);
  ok = cairn__b64_parse(s, pk, 32) == 0;
  json_decref(s);
  json_decref(o);
  return ok ? 0 : cairn__cli_fail("--key: %s holds no audit key (base64 of 32 bytes, or "
                                  "{\"public_key\": ...})", arg);
}

static int load_sth(const char *path, cairn__sth *h) {
  json_t *o = read_json(path);
  char why[200];
  int rc = !o ? 1 : cairn__sth_parse(o, h, why, sizeof why) ? cairn__cli_fail("%s: %s", path, why)
                                                            : 0;
  json_decref(o);
  return rc;
}

static int receipt_name(const struct dirent *d) {
  size_t n = strlen(d->d_name);
  return strncmp(d->d_name, "receipt-", 8) == 0 && n > 13 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* ---- cairn audit check ---- */

/* A proved receipt's head against the head the auditor holds: 0, or 1 with
 * why. Heads of one size must have one root; a larger tree signed before a
 * smaller one means the log shrank. */
static int against(const cairn__sth *mine, const cairn__sth *theirs, char *why, size_t len) {
  if (mine->tree_size == theirs->tree_size && memcmp(mine->root, theirs->root, 32) != 0)
    snprintf(why, len, "the key signed two trees of size %" PRIu64 " with different roots: the "
             "log was rewritten", mine->tree_size);
  else if ((mine->tree_size > theirs->tree_size && mine->timestamp < theirs->timestamp) ||
           (theirs->tree_size > mine->tree_size && theirs->timestamp < mine->timestamp))
    snprintf(why, len, "a head of size %" PRIu64 " was signed after one of size %" PRIu64
             ": the log shrank", mine->tree_size > theirs->tree_size ? theirs->tree_size
                                                                     : mine->tree_size,
             mine->tree_size > theirs->tree_size ? mine->tree_size : theirs->tree_size);
  else
    return 0;
  return 1;
}

static int check(const char *key, const char *sth_path, const char *dir) {
  uint8_t pk[32];
  cairn__sth head;
  if (load_key(key, pk) || load_sth(sth_path, &head))
    return 1;
  if (!cairn__sth_verify(&head, pk))
    return cairn__cli_fail("%s: the head of size %" PRIu64 " is not signed by the audit key",
                           sth_path, head.tree_size);
  printf("head %s: tree_size %" PRIu64 ", timestamp %" PRId64 ": signature verifies\n", sth_path,
         head.tree_size, head.timestamp);
  struct dirent **names = NULL;
  int n = scandir(dir, &names, receipt_name, alphasort);
  if (n < 0)
    return cairn__cli_fail("--receipts %s: %s", dir, strerror(errno));
  long verified = 0, unproved = 0, failed = 0;
  for (int i = 0; i < n; i++) {
    char path[4096], why[300];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
    free(names[i]);
    cairn__receipt *r = malloc(sizeof *r);
    json_t *o = r ? read_json(path) : NULL;
    int bad = !o || cairn__receipt_parse(o, r, why, sizeof why);
    if (!bad && !r->proved) {
      unproved++;
      printf("unproved %s: leaf %" PRIu64 " has no inclusion proof yet\n", path, r->leaf_index);
    } else if (bad || !cairn__receipt_verify(r, pk, why, sizeof why) ||
               against(&r->sth, &head, why, sizeof why)) {
      failed++;
      printf("FAILED %s: %s\n", path, o ? why : "unreadable");
    } else
      verified++;
    json_decref(o);
    free(r);
  }
  free(names);
  printf("receipts: %ld verified, %ld not proved yet, %ld failed\n", verified, unproved, failed);
  return failed ? 1 : 0;
}

/* ---- cairn audit prove ---- */

static json_t *get(cairn__http *h, const char *path) {
  json_t *o = NULL;
  if (cairn__client_json(h, "GET", path, NULL, &o, 0) == 200)
    return o;
  json_decref(o);
  return NULL;
}

/* The newest head and the key, the head verified with the key. */
static int fetch_head(cairn__http *h, cairn__sth *sth, uint8_t pk[32]) {
  json_t *k = get(h, "/v1/audit/key"), *s = k ? get(h, "/v1/audit/sth") : NULL;
  char why[200] = "";
  int rc = !s ? 1
           : cairn__b64_parse(json_object_get(k, "public_key"), pk, 32)
             ? cairn__cli_fail("the master's audit key is not the base64 of 32 bytes")
           : cairn__sth_parse(s, sth, why, sizeof why) ? cairn__cli_fail("its head: %s", why)
           : !cairn__sth_verify(sth, pk)
             ? cairn__cli_fail("its newest head is not signed by its audit key")
             : 0;
  json_decref(k);
  json_decref(s);
  return rc;
}

/* The inclusion proof of leaf in sth from the master, into r->path (r's
 * leaf and hash set by the caller); 1 when it verifies. */
static int fetch_proof(cairn__http *h, const cairn__sth *sth, cairn__receipt *r) {
  char path[160];
  snprintf(path, sizeof path, "/v1/audit/proof?leaf_index=%" PRIu64 "&tree_size=%" PRIu64,
           r->leaf_index, sth->tree_size);
  json_t *o = get(h, path);
  r->sth = *sth;
  r->proved = o && cairn__proof_parse(json_object_get(o, "audit_path"), r->path, &r->npath) == 0;
  json_decref(o);
  return r->proved && cairn_merkle_verify_inclusion(r->leaf_index, sth->tree_size, r->leaf_hash,
                                                    r->path, r->npath, sth->root);
}

/* One leaf of an index: its input from the master, hashed here, and its
 * proof; printed (or added to out as what). 0, or 1. */
static int prove_leaf(cairn__http *h, const char *what, int64_t leaf, const cairn__sth *sth,
                      json_t *out) {
  if (leaf < 0)
    return printf("%s: no entry\n", what), 0;
  if ((uint64_t)leaf >= sth->tree_size)
    return cairn__cli_fail("%s: leaf %" PRId64 " is not under the newest signed head yet (size "
                           "%" PRIu64 "); a head is signed every 10 s", what, leaf, sth->tree_size);
  char path[128];
  snprintf(path, sizeof path, "/v1/audit/entries?start=%" PRId64 "&end=%" PRId64, leaf, leaf);
  json_t *e = get(h, path);
  json_t *in = json_object_get(json_array_get(json_object_get(e, "entries"), 0), "leaf_input");
  cairn__receipt r = {.leaf_index = (uint64_t)leaf};
  size_t len = json_string_length(in), got = 0;
  unsigned char *body = malloc(cairn__base64_decoded_max(len) + 1);
  int ok = e && body && json_is_string(in) &&
           cairn__base64_decode(json_string_value(in), len, body,
                                cairn__base64_decoded_max(len) + 1, &got) == 0;
  if (ok)
    cairn_merkle_leaf_hash(body, got, r.leaf_hash);
  free(body);
  ok = ok && fetch_proof(h, sth, &r);
  char hash[64];
  cairn__base64_encode(r.leaf_hash, 32, hash);
  if (out)
    json_object_set_new(out, what, json_pack("{s:I, s:O?, s:s, s:o, s:b}", "leaf_index",
                                             (json_int_t)leaf, "leaf_input", in, "leaf_hash",
                                             hash, "audit_path", cairn__proof_json(r.path, r.npath),
                                             "verified", ok));
  else {
    printf("%s: leaf %" PRId64 ", leaf hash %s\n  audit path (%zu):", what, leaf, hash, r.npath);
    for (size_t i = 0; i < r.npath; i++) {
      char b[64];
      cairn__base64_encode(r.path[i], 32, b);
      printf("%s%s", i % 2 ? " " : "\n    ", b);
    }
    printf("\n  %s\n", ok ? "verified: the leaf is in the signed tree"
                          : "NOT VERIFIED: the proof does not lead to the signed root");
  }
  json_decref(e);
  return ok ? 0 : 1;
}

static int prove_index(cairn__http *h, long long n, int as_json) {
  char path[64];
  uint8_t pk[32];
  cairn__sth sth;
  snprintf(path, sizeof path, "/v1/audit/index/%lld", n);
  json_t *a = get(h, path);
  if (!a || fetch_head(h, &sth, pk)) {
    json_decref(a);
    return 1;
  }
  json_t *al = json_object_get(a, "leaf_index"), *out = as_json ? json_object() : NULL;
  json_t *rl = json_object_get(json_object_get(a, "result"), "leaf_index");
  char root[64], key[64];
  cairn__base64_encode(sth.root, 32, root);
  cairn__base64_encode(pk, 32, key);
  if (out) {
    json_object_set_new(out, "sth", cairn__sth_json(&sth));
    json_object_set_new(out, "public_key", json_string(key));
  } else
    printf("index %lld: head tree_size %" PRIu64 ", timestamp %" PRId64 ", root %s, signed by "
           "%s\n", n, sth.tree_size, sth.timestamp, root, key);
  int rc = prove_leaf(h, "allocation", al ? json_integer_value(al) : -1, &sth, out) |
           prove_leaf(h, "result", rl ? json_integer_value(rl) : -1, &sth, out);
  if (out) {
    char *s = json_dumps(out, JSON_INDENT(2));
    puts(s ? s : "{}");
    free(s);
  }
  json_decref(out);
  json_decref(a);
  return rc;
}

typedef struct prove_tally {
  long proved, past, failed;
  int rc;
} prove_tally;

/* Receipt o (read from src; taken) proved against sth and written to
 * out/receipt-LEAF.json, counted in t. */
static void prove_one(cairn__http *h, const cairn__sth *sth, json_t *o, const char *src,
                      const char *out, prove_tally *t) {
  char why[200], path[4200];
  cairn__receipt *r = malloc(sizeof *r);
  if (!o || !r || cairn__receipt_parse(o, r, why, sizeof why)) {
    t->rc = o && r ? cairn__cli_fail("%s: %s", src, why) : 1;
    json_decref(o);
    free(r);
    return;
  }
  if (r->leaf_index >= sth->tree_size) { /* kept with its own head */
    t->past++;
    printf("leaf %" PRIu64 ": past the master's newest head (size %" PRIu64 "), kept as it "
           "was\n", r->leaf_index, sth->tree_size);
  } else if (fetch_proof(h, sth, r))
    t->proved++;
  else {
    t->failed++;
    printf("leaf %" PRIu64 ": the master gives no proof of it in its head of size %" PRIu64
           " that verifies\n", r->leaf_index, sth->tree_size);
  }
  json_t *w = cairn__receipt_json(r);
  snprintf(path, sizeof path, "%s/receipt-%" PRIu64 ".json", out, r->leaf_index);
  if (!w || json_dump_file(w, path, JSON_INDENT(2)))
    t->rc = cairn__cli_fail("cannot write %s", path);
  json_decref(w);
  json_decref(o);
  free(r);
}

/* The receipts a worker holds that wait for a head (one line each of the
 * pending.jsonl beside in, docs/worker.md), but for those of in already. */
static void prove_pending(cairn__http *h, const cairn__sth *sth, const char *in, const char *out,
                          prove_tally *t) {
  char path[4200], line[512];
  snprintf(path, sizeof path, "%s/../pending.jsonl", in);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f)) {
    json_t *o = json_loads(line, 0, NULL);
    json_int_t leaf = json_integer_value(json_object_get(o, "leaf_index"));
    char file[4300];
    snprintf(file, sizeof file, "%s/receipt-%lld.json", in, (long long)leaf);
    if (o && access(file, F_OK) == 0)
      json_decref(o); /* proved by the worker since: its file is read */
    else
      prove_one(h, sth, o, path, out, t);
  }
  if (f)
    fclose(f);
}

/* Each receipt of in (its files, and the lines of the pending.jsonl beside
 * it) proved against the master's newest head, written to out (created)
 * with that head as sth.json. 0, or 1 when a receipt could not be read or
 * the master gave no proof that verifies. */
static int prove_receipts(cairn__http *h, const char *in, const char *out) {
  uint8_t pk[32];
  cairn__sth sth;
  if (fetch_head(h, &sth, pk))
    return 1;
  if (mkdir(out, 0755) && errno != EEXIST)
    return cairn__cli_fail("--out %s: %s", out, strerror(errno));
  char path[4096];
  snprintf(path, sizeof path, "%s/sth.json", out);
  json_t *hj = cairn__sth_json(&sth);
  prove_tally t = {0};
  t.rc = json_dump_file(hj, path, JSON_INDENT(2)) ? cairn__cli_fail("cannot write %s", path) : 0;
  json_decref(hj);
  struct dirent **names = NULL;
  int n = t.rc ? 0 : scandir(in, &names, receipt_name, alphasort);
  if (n < 0)
    return cairn__cli_fail("--receipts %s: %s", in, strerror(errno));
  for (int i = 0; i < n; i++) {
    snprintf(path, sizeof path, "%s/%s", in, names[i]->d_name);
    prove_one(h, &sth, read_json(path), path, out, &t);
    free(names[i]);
  }
  free(names);
  if (!t.rc)
    prove_pending(h, &sth, in, out, &t);
  printf("receipts against the head of size %" PRIu64 ": %ld proved, %ld past it, %ld without "
         "a proof that verifies; written to %s\n", sth.tree_size, t.proved, t.past, t.failed, out);
  return t.rc || t.failed ? 1 : 0;
}

static const char usage[] =
  "usage: cairn audit prove INDEX [--json]\n"
  "       cairn audit prove --receipts DIR --out DIR2\n"
  "       cairn audit check --key KEY --sth FILE --receipts DIR\n"
  "prove INDEX: the inclusion proofs of index INDEX's allocation and result entries in the\n"
  "  master's newest signed tree head, each checked here (the entry's input hashed, the\n"
  "  proof followed to the signed root, the head's signature with the master's audit key).\n"
  "prove --receipts: each receipt file of DIR (a worker's DIR/audit/receipts), and each\n"
  "  receipt still waiting in the pending.jsonl beside DIR, proved against the master's\n"
  "  newest head, written to DIR2 with that head (DIR2/sth.json).\n"
  "check: offline, with no master: the head in FILE (as GET /v1/audit/sth gives it) and\n"
  "  every receipt-*.json of DIR must be signed by KEY (base64, or a file holding it or\n"
  "  {\"public_key\": ...}), each receipt's proof must lead to its head's root, and no two\n"
  "  heads may disagree (one size, two roots; a larger tree signed before a smaller one).\n"
  "  Exit 1 when any fails.";

int cairn__cmd_audit_log(int argc, char **argv) {
  if (cairn__cli_wants_help(argc, argv))
    return puts(usage), 0;
  const char *key = NULL, *sth = NULL, *dir = NULL, *out = NULL, *pos = NULL;
  int as_json = 0, is_check = strcmp(argv[0], "check") == 0;
  cairn__client_opts o = {0};
  if (!is_check && cairn__client_parse(&argc, argv, &o))
    return 1;
  for (int i = 1; i < argc; i++) {
    const char **dst = !strcmp(argv[i], "--key") ? &key : !strcmp(argv[i], "--sth") ? &sth
                       : !strcmp(argv[i], "--receipts") ? &dir : !strcmp(argv[i], "--out") ? &out
                                                                                        : NULL;
    if (dst && i + 1 < argc)
      *dst = argv[++i];
    else if (!strcmp(argv[i], "--json"))
      as_json = 1;
    else if (!dst && !pos && argv[i][0] != '-')
      pos = argv[i];
    else
      return cairn__cli_fail("%s: %s", argv[i], dst ? "needs a value" : usage);
  }
  if (is_check)
    return key && sth && dir && !pos ? check(key, sth, dir) : cairn__cli_fail("%s", usage);
  char *end = NULL;
  long long n = pos ? strtoll(pos, &end, 10) : 0;
  if (pos ? (dir || n <= 0 || *end) : (!dir || !out))
    return cairn__cli_fail("%s", usage);
  cairn__http *h = cairn__client_connect(&o);
  if (!h)
    return 1;
  int rc = pos ? prove_index(h, n, as_json) : prove_receipts(h, dir, out);
  cairn__http_delete(h);
  return rc;
}
