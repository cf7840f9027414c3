/* chain.c — the audit chain's encoding, hashing, signing key and the walk
 * that verifies it (chain.h). The SQL is in store_chain.c. */
#include "server/store/chain.h"

#include "common/sha256.h"
#include "server/store/tree.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char *const kind_names[CAIRN_CK_COUNT] = {
  [CAIRN_CK_ALLOC] = "alloc", [CAIRN_CK_RESULT] = "result", [CAIRN_CK_OUTCOME] = "outcome",
  [CAIRN_CK_BAN] = "ban", [CAIRN_CK_QUARANTINE] = "quarantine",
  [CAIRN_CK_TRUST_RESET] = "trust_reset", [CAIRN_CK_CREDIT] = "credit",
  [CAIRN_CK_TEAM_CREDIT] = "team_credit",
};

const char *cairn__chain_kind_name(int kind) {
  return kind > 0 && kind < CAIRN_CK_COUNT ? kind_names[kind] : "?";
}

/* ---- canonical content ---- */

static void put_be(cairn__centry *e, uint64_t v) {
  if (e->len + 8 > sizeof e->body)
    return; /* cannot happen: the largest kind's fields fit */
  for (int i = 7; i >= 0; i--)
    e->body[e->len++] = (unsigned char)(v >> (8 * i));
}

void cairn__centry_begin(cairn__centry *e, int kind, int64_t vol, int64_t task, int64_t idx) {
  e->seq = 0;
  e->kind = kind;
  e->vol = vol;
  e->task = task;
  e->idx = idx;
  e->len = 0;
  e->body[e->len++] = 1; /* version */
  put_be(e, 0);          /* seq, set by cairn__chain_append */
  e->body[e->len++] = (unsigned char)kind;
}

void cairn__centry_i64(cairn__centry *e, int64_t v) { put_be(e, (uint64_t)v); }

void cairn__centry_f64(cairn__centry *e, double v) {
  uint64_t bits;
  memcpy(&bits, &v, sizeof bits);
  put_be(e, bits);
}

void cairn__centry_str(cairn__centry *e, const char *s) {
  size_t n = s ? strlen(s) : 0;
  if (n > CAIRN_CHAIN_STR_MAX)
    n = CAIRN_CHAIN_STR_MAX;
  if (e->len + 4 + n > sizeof e->body)
    return;
  for (int i = 3; i >= 0; i--)
    e->body[e->len++] = (unsigned char)(n >> (8 * i));
  memcpy(e->body + e->len, s ? s : "", n);
  e->len += n;
}

static uint64_t get_be(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

void cairn__chain_hash(const uint8_t prev[32], const uint8_t chash[32], uint8_t out[32]) {
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, prev, 32);
  cairn__sha256_update(&c, chash, 32);
  cairn__sha256_final(&c, out);
}

void cairn__chain_hex(const uint8_t *in, size_t n, char *out) {
  static const char d[] = "0123456789abcdef";
  for (size_t i = 0; i < n; i++) {
    out[2 * i] = d[in[i] >> 4];
    out[2 * i + 1] = d[in[i] & 15];
  }
  out[2 * n] = '\0';
}

static int nib(char c) {
  return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

int cairn__chain_unhex(const char *hex, uint8_t *out, size_t n) {
  if (strlen(hex) != 2 * n)
    return -1;
  for (size_t i = 0; i < n; i++) {
    int hi = nib(hex[2 * i]), lo = nib(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return -1;
    out[i] = (uint8_t)(hi << 4 | lo);
  }
  return 0;
}

/* The signed message of a checkpoint. */
static void cp_message(int64_t seq, const uint8_t hash[32], int64_t time, uint8_t msg[72]) {
  static const char tag[] = "cairn-audit-checkpoint-1"; /* 24 bytes */
  memcpy(msg, tag, 24);
  for (int i = 0; i < 8; i++) {
    msg[24 + i] = (uint8_t)((uint64_t)seq >> (56 - 8 * i));
    msg[64 + i] = (uint8_t)((uint64_t)time >> (56 - 8 * i));
  }
  memcpy(msg + 32, hash, 32);
}

/* ---- the writer's side ---- */

struct cairn__chain {
  const cairn__logger *log;
  uint8_t sk[crypto_sign_SECRETKEYBYTES], pk[crypto_sign_PUBLICKEYBYTES];
  int loaded;                 /* head read from the store */
  int64_t seq;                /* head (pending until committed) */
  uint8_t hash[32];
  int64_t committed_seq;      /* the committed head */
  uint8_t committed_hash[32];
  int64_t signed_seq;         /* the head of the last checkpoint written */
  int64_t signed_at;
  cairn__tree *tree;          /* the audit log's tree over the entries (tree.h); NULL: off */
};

/* Reads the 64-byte secret key (hex) from path, or creates it. */
static cairn_status load_key(cairn__chain *ch, const char *path, cairn_error *err) {
  char hex[2 * crypto_sign_SECRETKEYBYTES + 2] = {0};
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0 && errno == ENOENT) {
    crypto_sign_keypair(ch->pk, ch->sk);
    cairn__chain_hex(ch->sk, sizeof ch->sk, hex);
    hex[2 * sizeof ch->sk] = '\n';
    fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    ssize_t want = (ssize_t)(2 * sizeof ch->sk + 1);
    int ok = fd >= 0 && write(fd, hex, (size_t)want) == want && fsync(fd) == 0;
    if (fd >= 0)
      close(fd);
    return ok ? CAIRN_OK
              : cairn__error_set(err, CAIRN_EIO, "cannot create the audit key %s", path);
  }
  ssize_t n = fd >= 0 ? read(fd, hex, sizeof hex - 1) : -1;
  if (fd >= 0)
    close(fd);
  if (n >= (ssize_t)(2 * sizeof ch->sk))
    hex[2 * sizeof ch->sk] = '\0';
  if (n < 0 || cairn__chain_unhex(hex, ch->sk, sizeof ch->sk))
    return cairn__error_set(err, CAIRN_EIO, "cannot read the audit key %s", path);
  crypto_sign_ed25519_sk_to_pk(ch->pk, ch->sk);
  return CAIRN_OK;
}

cairn__chain *cairn__chain_open(const char *key_path, int tree, const cairn__logger *log,
                                cairn_error *err) {
  if (sodium_init() < 0) {
    cairn__error_set(err, CAIRN_EINTERNAL, "libsodium cannot start");
    return NULL;
  }
  cairn__chain *ch = calloc(1, sizeof *ch);
  if (!ch) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
    return NULL;
  }
  ch->log = log;
  if (load_key(ch, key_path, err) != CAIRN_OK || (tree && !(ch->tree = cairn__tree_open(log, err)))) {
    cairn__chain_close(ch);
    return NULL;
  }
  return ch;
}

void cairn__chain_close(cairn__chain *ch) {
  if (!ch)
    return;
  sodium_memzero(ch->sk, sizeof ch->sk);
  cairn__tree_close(ch->tree);
  free(ch);
}

void cairn__chain_public_key(const cairn__chain *ch, uint8_t pk[32]) { memcpy(pk, ch->pk, 32); }

struct cairn__tree *cairn__chain_tree(cairn__chain *ch) { return ch->tree; }

/* store_chain.c */
cairn_status cairn__store_chain_head(struct cairn__store *s, int64_t *seq, uint8_t hash[32],
                                     int64_t *signed_seq, cairn_error *err);
cairn_status cairn__store_chain_put(struct cairn__store *s, const cairn__centry *e,
                                    cairn_error *err);
cairn_status cairn__store_checkpoint_put(struct cairn__store *s, int64_t seq,
                                         const uint8_t hash[32], int64_t time,
                                         const uint8_t pk[32], const uint8_t sig[64],
                                         cairn_error *err);

cairn_status cairn__chain_load(cairn__chain *ch, struct cairn__store *s, cairn_error *err) {
  if (ch->loaded)
    return CAIRN_OK;
  cairn_status st = cairn__store_chain_head(s, &ch->seq, ch->hash, &ch->signed_seq, err);
  if (st != CAIRN_OK)
    return st;
  ch->committed_seq = ch->seq;
  memcpy(ch->committed_hash, ch->hash, 32);
  st = ch->tree ? cairn__tree_load(ch->tree, s, (uint64_t)ch->seq, err)
               : cairn__tree_note_off(s, (uint64_t)ch->seq, err); /* where the tree stops */
  if (st != CAIRN_OK)
    return st;
  ch->loaded = 1;
  return CAIRN_OK;
}

cairn_status cairn__chain_append(cairn__chain *ch, struct cairn__store *s, cairn__centry *e,
                                 cairn_error *err) {
  if (ch->tree && !ch->loaded) /* a tree's load has transactions of its own: not in this one */
    return cairn__error_set(err, CAIRN_EINTERNAL, "the audit chain was not loaded");
  cairn_status st = cairn__chain_load(ch, s, err);
  if (st != CAIRN_OK)
    return st;
  e->seq = ch->seq + 1;
  for (int i = 0; i < 8; i++)
    e->body[1 + i] = (unsigned char)((uint64_t)e->seq >> (56 - 8 * i));
  uint8_t chash[32];
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, e->body, e->len);
  cairn__sha256_final(&c, chash);
  memcpy(e->prev, ch->hash, 32);
  cairn__chain_hash(e->prev, chash, e->hash);
  st = cairn__store_chain_put(s, e, err);
  if (st == CAIRN_OK && ch->tree) /* leaf seq - 1: the entry's body, in its transaction */
    st = cairn__tree_append(ch->tree, s, (uint64_t)e->seq - 1, e->body, e->len,
                            e->kind == CAIRN_CK_RESULT ? e->idx : 0, err);
  if (st == CAIRN_OK) {
    ch->seq = e->seq;
    memcpy(ch->hash, e->hash, 32);
  }
  return st;
}

void cairn__chain_committed(cairn__chain *ch) {
  ch->committed_seq = ch->seq;
  memcpy(ch->committed_hash, ch->hash, 32);
  if (ch->tree)
    cairn__tree_committed(ch->tree);
}

/* The chain's own checkpoint is due. */
static int head_due(const cairn__chain *ch, int64_t now, int force) {
  if (!ch->loaded || ch->committed_seq <= ch->signed_seq)
    return 0;
  return force || now - ch->signed_at >= CAIRN_CHAIN_CHECKPOINT_SECONDS;
}

int cairn__chain_checkpoint_due(cairn__chain *ch, int64_t now, int force) {
  return head_due(ch, now, force) || (ch->loaded && ch->tree && cairn__tree_sth_due(ch->tree, force));
}

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

cairn_status cairn__chain_checkpoint(cairn__chain *ch, struct cairn__store *s, int64_t now,
                                     int force, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  if (ch->loaded && ch->tree && cairn__tree_sth_due(ch->tree, force)) /* the log's head */
    st = cairn__tree_sign(ch->tree, s, ch->sk, wall_ms(), err);
  if (st != CAIRN_OK || !head_due(ch, now, force))
    return st;
  uint8_t msg[72], sig[crypto_sign_BYTES];
  cp_message(ch->committed_seq, ch->committed_hash, now, msg);
  crypto_sign_detached(sig, NULL, msg, sizeof msg, ch->sk);
  st = cairn__store_checkpoint_put(s, ch->committed_seq, ch->committed_hash, now, ch->pk, sig,
                                   err);
  if (st == CAIRN_OK) {
    ch->signed_seq = ch->committed_seq;
    ch->signed_at = now;
  }
  return st;
}

/* ---- the walk ---- */

static int problem(cairn__chain_walk *w, int64_t seq, const char *kind, const char *what) {
  cairn__chain_report *r = w->r;
  if (!r->problem[0]) {
    r->bad_seq = seq;
    snprintf(r->bad_kind, sizeof r->bad_kind, "%s", kind ? kind : "-");
    snprintf(r->problem, sizeof r->problem, "%s", what);
  }
  return -1;
}

void cairn__chain_walk_init(cairn__chain_walk *w, cairn__chain_report *r, const uint8_t *pubkey) {
  memset(w, 0, sizeof *w);
  memset(r, 0, sizeof *r);
  w->r = r;
  w->next = 1;
  if (pubkey) {
    memcpy(r->pubkey, pubkey, 32);
    r->have_pubkey = 1;
  }
  if (sodium_init() < 0)
    problem(w, 0, "-", "libsodium cannot start");
}

int cairn__chain_walk_checkpoint(cairn__chain_walk *w, int64_t seq, const uint8_t hash[32],
                                 int64_t time, const uint8_t pubkey[32], const uint8_t sig[64]) {
  cairn__chain_report *r = w->r;
  if (!r->have_pubkey) { /* no key given: the first checkpoint's, which all must share */
    memcpy(r->pubkey, pubkey, 32);
    r->have_pubkey = 1;
  }
  uint8_t msg[72];
  cp_message(seq, hash, time, msg);
  char what[128];
  if (memcmp(pubkey, r->pubkey, 32) != 0) {
    snprintf(what, sizeof what, "checkpoint of head %lld is signed by another key",
             (long long)seq);
    return problem(w, seq, "checkpoint", what);
  }
  if (crypto_sign_verify_detached(sig, msg, sizeof msg, r->pubkey) != 0) {
    snprintf(what, sizeof what, "checkpoint of head %lld has a bad signature", (long long)seq);
    return problem(w, seq, "checkpoint", what);
  }
  if (w->ncp == w->cap) {
    size_t cap = w->cap ? 2 * w->cap : 64;
    cairn__cp *v = realloc(w->cps, cap * sizeof *v);
    if (!v)
      return problem(w, seq, "checkpoint", "out of memory");
    w->cps = v;
    w->cap = cap;
  }
  w->cps[w->ncp++] = (cairn__cp){seq, time, {0}};
  memcpy(w->cps[w->ncp - 1].hash, hash, 32);
  r->checkpoints++;
  return 0;
}

static int by_seq(const void *a, const void *b) {
  int64_t x = ((const cairn__cp *)a)->seq, y = ((const cairn__cp *)b)->seq;
  return x < y ? -1 : x > y;
}

/* Links entry seq (hash computed) after the previous one, and checks the
 * checkpoints of seq. */
static int link_entry(cairn__chain_walk *w, int64_t seq, const char *kind, const uint8_t prev[32],
                const uint8_t chash[32], const uint8_t hash[32]) {
  char what[160];
  if (!w->sorted) {
    if (w->ncp)
      qsort(w->cps, w->ncp, sizeof *w->cps, by_seq);
    w->sorted = 1;
  }
  if (seq != w->next) {
    snprintf(what, sizeof what, seq > w->next ? "entry %lld is missing (next present: %lld)"
                                              : "entry %lld is out of order (after %lld)",
             (long long)(seq > w->next ? w->next : seq), (long long)(seq > w->next ? seq : w->next - 1));
    return problem(w, seq > w->next ? w->next : seq, seq > w->next ? "missing" : kind, what);
  }
  if (memcmp(prev, w->last, 32) != 0)
    return problem(w, seq, kind, "its link (prev) is not the hash of the entry before");
  uint8_t h[32];
  cairn__chain_hash(prev, chash, h);
  if (memcmp(h, hash, 32) != 0)
    return problem(w, seq, kind, "its content does not match its hash");
  for (; w->cpi < w->ncp && w->cps[w->cpi].seq <= seq; w->cpi++) {
    if (w->cps[w->cpi].seq == seq && memcmp(w->cps[w->cpi].hash, hash, 32) != 0) {
      snprintf(what, sizeof what, "the signed checkpoint of head %lld names another hash",
               (long long)seq);
      return problem(w, seq, kind, what);
    }
    if (w->cps[w->cpi].seq == seq)
      w->r->signed_seq = seq;
  }
  memcpy(w->last, hash, 32);
  w->next = seq + 1;
  w->r->head_seq = seq;
  memcpy(w->r->head, hash, 32);
  return 0;
}

int cairn__chain_walk_entry(cairn__chain_walk *w, int64_t seq, const char *kind,
                            const uint8_t *body, size_t len, const uint8_t prev[32],
                            const uint8_t hash[32]) {
  if (w->r->problem[0])
    return -1;
  if (len < 10 || body[0] != 1 || (int64_t)get_be(body + 1) != seq ||
      strcmp(cairn__chain_kind_name(body[9]), kind) != 0) {
    char what[128];
    snprintf(what, sizeof what, "its content is not a version-1 entry of this seq and kind "
             "(version %d, seq %lld, kind %s)", len ? body[0] : -1,
             len >= 10 ? (long long)get_be(body + 1) : -1LL,
             len >= 10 ? cairn__chain_kind_name(body[9]) : "?");
    return problem(w, seq, kind, what);
  }
  uint8_t chash[32];
  cairn__sha256 c;
  cairn__sha256_init(&c);
  cairn__sha256_update(&c, body, len);
  cairn__sha256_final(&c, chash);
  if (link_entry(w, seq, kind, prev, chash, hash))
    return -1;
  w->r->checked++;
  return 0;
}

int cairn__chain_walk_link(cairn__chain_walk *w, int64_t seq, const uint8_t prev[32],
                           const uint8_t chash[32], const uint8_t hash[32]) {
  if (w->r->problem[0] || link_entry(w, seq, "link", prev, chash, hash))
    return -1;
  w->r->linked++;
  return 0;
}

int cairn__chain_walk_end(cairn__chain_walk *w) {
  int rc = w->r->problem[0] ? -1 : 0;
  for (size_t i = w->cpi; !rc && i < w->ncp; i++)
    if (w->cps[i].seq > w->r->head_seq) {
      char what[128];
      snprintf(what, sizeof what, "the chain ends at %lld but a checkpoint signs head %lld",
               (long long)w->r->head_seq, (long long)w->cps[i].seq);
      rc = problem(w, w->r->head_seq + 1, "checkpoint", what);
    }
  free(w->cps);
  w->cps = NULL;
  return rc;
}
