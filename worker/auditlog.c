/* auditlog.c — the worker's side of the master's audit log (auditlog.h):
 * the pinned key, the newest head checked, receipts and their proofs, and
 * the evidence of an inconsistent log. */
#include "worker/auditlog.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "common/base64.h"
#include "worker/fsutil.h"

#define ANSWER_MAX (1u << 20)

/* ---- files ---- */

/* Writes o to dir/name through a temporary file and a rename (not synced:
 * a receipt lost to a power cut is asked for again by nobody, but a torn
 * one is never read). Takes o. 0 or -1. */
static int save(const char *dir, const char *name, json_t *o) {
  char path[4096], tmp[4200];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  int rc = o && json_dump_file(o, tmp, JSON_INDENT(2)) == 0 && rename(tmp, path) == 0 ? 0 : -1;
  if (rc)
    unlink(tmp);
  json_decref(o);
  return rc;
}

static json_t *load(const char *dir, const char *name) {
  char path[4096];
  snprintf(path, sizeof path, "%s/%s", dir, name);
  return json_load_file(path, 0, NULL);
}

static void receipt_file(uint64_t leaf, char name[48]) {
  snprintf(name, 48, "receipt-%" PRIu64 ".json", leaf);
}

/* ---- evidence ---- */

static int64_t wall_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The log is inconsistent: keeps old (the head held; NULL: none), new (the
 * head at fault; NULL: none), proof (the master's answer; taken, NULL:
 * none) and receipt (NULL: none) in DIR/audit/evidence-MS/ with why, marks
 * DIR/audit/inconsistent, logs it. CAIRN_EFORBIDDEN with err. */
static cairn_status inconsistent(cairn__auditlog *a, const char *why, const cairn__sth *old,
                                 const cairn__sth *new_head, json_t *proof,
                                 const cairn__receipt *receipt, cairn_error *err) {
  char dir[4200], text[5000];
  snprintf(dir, sizeof dir, "%s/evidence-%" PRId64, a->dir, wall_ms());
  mkdir(dir, 0700);
  if (old)
    save(dir, "old-sth.json", cairn__sth_json(old));
  if (new_head)
    save(dir, "new-sth.json", cairn__sth_json(new_head));
  if (proof)
    save(dir, "proof.json", proof);
  if (receipt)
    save(dir, "receipt.json", cairn__receipt_json(receipt));
  snprintf(text, sizeof text, "%s\nevidence: %s\n", why, dir);
  save(dir, "reason.json", json_pack("{s:s}", "reason", why));
  char mark[4200];
  snprintf(mark, sizeof mark, "%s/inconsistent", a->dir);
  FILE *f = fopen(mark, "w");
  if (f) {
    fputs(text, f);
    fclose(f);
  }
  pthread_mutex_lock(&a->mu);
  a->inconsistent = 1;
  pthread_mutex_unlock(&a->mu);
  CAIRN_ERR(a->log, "audit log inconsistent: %s (evidence in %s); no more work from this master",
            why, dir);
  return cairn__error_set(err, CAIRN_EFORBIDDEN, "audit log inconsistent: %.400s (evidence in "
                          "%.300s)", why, dir);
}

/* ---- receipts ---- */

/* Under a->mu: a receipt of leaf waits for a head (a full ring drops its
 * oldest: that receipt stays unproved on disk). */
static void wait_push(cairn__auditlog *a, const cairn__audit_wait *w) {
  if (w->leaf > a->wait_top)
    a->wait_top = w->leaf;
  if (a->wait_n == CAIRN__AUDIT_RECEIPTS) {
    a->wait_first = (a->wait_first + 1) % CAIRN__AUDIT_RECEIPTS;
    a->wait_n--;
  }
  a->wait[(a->wait_first + a->wait_n++) % CAIRN__AUDIT_RECEIPTS] = *w;
}

/* Under a->mu: leaf's file is kept; past CAIRN__AUDIT_RECEIPTS the oldest
 * file goes. */
static void keep(cairn__auditlog *a, uint64_t leaf) {
  if (a->kept_n == CAIRN__AUDIT_RECEIPTS) {
    char name[48], path[4200];
    receipt_file(a->kept[a->kept_first], name);
    snprintf(path, sizeof path, "%s/%s", a->receipts, name);
    unlink(path);
    a->kept_first = (a->kept_first + 1) % CAIRN__AUDIT_RECEIPTS;
    a->kept_n--;
  }
  a->kept[(a->kept_first + a->kept_n++) % CAIRN__AUDIT_RECEIPTS] = leaf;
}

/* A pending receipt's line: {"index", "leaf_index", "leaf_hash"} and a
 * newline; its length. */
static int pending_line(const cairn__audit_wait *w, char line[200]) {
  char h[64];
  cairn__base64_encode(w->hash, 32, h);
  return snprintf(line, 200, "{\"index\": %lld, \"leaf_index\": %llu, \"leaf_hash\": \"%s\"}\n",
                  (long long)w->index, (unsigned long long)w->leaf, h);
}

void cairn__auditlog_receipt(cairn__auditlog *a, int64_t index, json_t *receipt) {
  cairn__receipt r;
  char why[200], line[200];
  if (!receipt || cairn__receipt_parse(receipt, &r, why, sizeof why) || r.proved)
    return; /* none (a master without a log), or not one */
  cairn__audit_wait w = {.leaf = r.leaf_index, .index = index};
  memcpy(w.hash, r.leaf_hash, 32);
  int n = pending_line(&w, line);
  pthread_mutex_lock(&a->mu);
  if (a->pending_fd >= 0 && write(a->pending_fd, line, (size_t)n) == n)
    a->pending_lines++;
  else
    CAIRN_WARN(a->log, "audit log: cannot note the receipt of result %lld in %s/pending.jsonl",
               (long long)index, a->dir);
  wait_push(a, &w);
  pthread_mutex_unlock(&a->mu);
}

/* Under a->mu: pending.jsonl holds the receipts waiting again: emptied when
 * none waits, written anew from the waiting ones (at most
 * CAIRN__AUDIT_RECEIPTS) when it has grown past twice that. */
static void pending_compact(cairn__auditlog *a) {
  if (a->pending_fd < 0 || (a->wait_n > 0 && a->pending_lines <= 2 * CAIRN__AUDIT_RECEIPTS))
    return;
  if (a->wait_n == 0) {
    if (a->pending_lines && ftruncate(a->pending_fd, 0) == 0)
      a->pending_lines = 0;
    return;
  }
  char path[4200], tmp[4300], line[200];
  snprintf(path, sizeof path, "%s/pending.jsonl", a->dir);
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  for (size_t i = 0; f && i < a->wait_n; i++)
    fwrite(line, 1, (size_t)pending_line(&a->wait[(a->wait_first + i) % CAIRN__AUDIT_RECEIPTS],
                                         line), f);
  int fd = f && fclose(f) == 0 && rename(tmp, path) == 0
             ? open(path, O_WRONLY | O_APPEND | O_CLOEXEC) : -1;
  if (fd >= 0) {
    close(a->pending_fd);
    a->pending_fd = fd;
    a->pending_lines = a->wait_n;
  } else
    unlink(tmp);
}

void cairn__auditlog_answer(cairn__auditlog *a, int64_t index, const char *body, size_t len) {
  json_t *o = body ? json_loadb(body, len, 0, NULL) : NULL;
  cairn__auditlog_receipt(a, index, json_object_get(o, "receipt"));
  json_decref(o);
}

/* A head the master gave (s: its JSON): checked at the next tick unless it
 * is the one held. */
static void heard_head(cairn__auditlog *a, json_t *s) {
  cairn__sth h;
  char why[200];
  if (!s || cairn__sth_parse(s, &h, why, sizeof why))
    return;
  pthread_mutex_lock(&a->mu);
  if (!(a->has_sth && cairn__sth_same(&h, &a->sth)) &&
      !(a->has_heard && cairn__sth_same(&h, &a->heard))) {
    a->heard = h; /* the last one heard is checked next */
    a->has_heard = 1;
  }
  pthread_mutex_unlock(&a->mu);
}

void cairn__auditlog_heard(cairn__auditlog *a, json_t *sth) { heard_head(a, sth); }

/* ---- requests ---- */

/* GET path: the answer's status (0: none came, or not JSON) and its JSON
 * (caller's). */
static long get(cairn__http *h, const char *path, json_t **out) {
  cairn__http_response resp = {0};
  cairn_error err = {0};
  *out = NULL;
  long st = 0;
  if (cairn__http_request(h, "GET", path, NULL, NULL, 0, ANSWER_MAX, &resp, &err) == CAIRN_OK) {
    *out = json_loadb(resp.body.data ? resp.body.data : "", resp.body.len, 0, NULL);
    st = *out ? resp.status : 0;
  }
  cairn__buf_free(&resp.body);
  return st;
}

/* A master's refusal (400) of what its own head says it has is evidence;
 * no answer, a 5xx or a 404 (no log: it was turned off, or an older
 * master) is not: asked again later. */
static int refused(long st) { return st == 400; }

cairn_status cairn__auditlog_pin(cairn__auditlog *a, cairn__http *h, cairn_error *err) {
  json_t *o = NULL;
  uint8_t pk[32];
  long st = get(h, "/v1/audit/key", &o);
  cairn_status rc = CAIRN_OK;
  if (st == 200 && cairn__b64_parse(json_object_get(o, "public_key"), pk, 32) == 0) {
    pthread_mutex_lock(&a->mu);
    int had = a->has_key, same = had && memcmp(pk, a->pk, 32) == 0;
    if (!had) {
      memcpy(a->pk, pk, 32);
      a->has_key = 1;
    }
    pthread_mutex_unlock(&a->mu);
    if (!had && save(a->dir, "key.json", json_incref(o)) == 0)
      CAIRN_INFO(a->log, "audit log: the master's audit key %s pinned",
                 json_string_value(json_object_get(o, "public_key")));
    if (had && !same)
      rc = inconsistent(a, "the master's audit key is not the one pinned", NULL, NULL,
                        json_incref(o), NULL, err);
  }
  json_decref(o);
  return rc;
}

/* h verifies with the pinned key and is consistent with the head held (a
 * consistency proof, when they differ in size); the newer of the two is
 * held then. */
static cairn_status check_head(cairn__auditlog *a, cairn__http *h, const cairn__sth *heard,
                               cairn_error *err) {
  pthread_mutex_lock(&a->mu);
  int has = a->has_sth;
  cairn__sth held = a->sth;
  pthread_mutex_unlock(&a->mu);
  char why[400], path[160];
  if (!cairn__sth_verify(heard, a->pk)) {
    snprintf(why, sizeof why, "the head of size %" PRIu64 " (timestamp %" PRId64 ") does not "
             "verify with the pinned audit key", heard->tree_size, heard->timestamp);
    return inconsistent(a, why, has ? &held : NULL, heard, NULL, NULL, err);
  }
  const cairn__sth *small = has && held.tree_size <= heard->tree_size ? &held : heard;
  const cairn__sth *big = small == heard ? &held : heard;
  if (has && small->tree_size == big->tree_size && memcmp(small->root, big->root, 32) != 0) {
    snprintf(why, sizeof why, "two heads of size %" PRIu64 " have different roots",
             small->tree_size);
    return inconsistent(a, why, &held, heard, NULL, NULL, err);
  }
  if (has && big->timestamp < small->timestamp) {
    snprintf(why, sizeof why, "the tree shrank: a head of size %" PRIu64 " was signed after "
             "one of size %" PRIu64, small->tree_size, big->tree_size);
    return inconsistent(a, why, &held, heard, NULL, NULL, err);
  }
  if (has && small->tree_size > 0 && small->tree_size < big->tree_size) {
    json_t *o = NULL;
    cairn_merkle_hash p[CAIRN_MERKLE_MAX_PROOF];
    size_t n = 0;
    snprintf(path, sizeof path, "/v1/audit/consistency?first=%" PRIu64 "&second=%" PRIu64,
             small->tree_size, big->tree_size);
    long st = get(h, path, &o);
    if (st == 200 && cairn__proof_parse(json_object_get(o, "consistency"), p, &n) == 0 &&
        cairn_merkle_verify_consistency(small->tree_size, big->tree_size, small->root, big->root,
                                        p, n))
      json_decref(o);
    else if (st == 200 || refused(st)) {
      snprintf(why, sizeof why, "no consistency proof from the head of size %" PRIu64 " to the "
               "one of size %" PRIu64 " verifies (HTTP %ld)", small->tree_size, big->tree_size,
               st);
      return inconsistent(a, why, &held, heard, o, NULL, err);
    } else {
      json_decref(o);
      return CAIRN_OK; /* asked again at the next tick */
    }
  }
  pthread_mutex_lock(&a->mu);
  if (!has || heard->timestamp > held.timestamp) {
    a->sth = *heard;
    a->has_sth = 1;
    save(a->dir, "sth.json", cairn__sth_json(heard));
  }
  if (a->has_heard && cairn__sth_same(&a->heard, heard))
    a->has_heard = 0;
  pthread_mutex_unlock(&a->mu);
  return CAIRN_OK;
}

/* The big-endian integer at p. */
static uint64_t be64(const unsigned char *p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; i++)
    v = v << 8 | p[i];
  return v;
}

/* The log's leaf w->leaf must be a result entry of w->index whose hash is
 * the receipt's (docs/accountability.md: version 1, seq, kind 2, idx
 * first), and in head s. 0 proved (its file rewritten), 1 to ask again
 * later, or -1 with the inconsistency returned in *st. */
static int prove(cairn__auditlog *a, cairn__http *h, const cairn__sth *s,
                 const cairn__audit_wait *w, cairn_status *st, cairn_error *err) {
  cairn__receipt r = {.index = w->index, .leaf_index = w->leaf, .sth = *s, .proved = 1};
  memcpy(r.leaf_hash, w->hash, 32);
  char path[160], why[300];
  json_t *e = NULL, *p = NULL;
  snprintf(path, sizeof path, "/v1/audit/entries?start=%" PRIu64 "&end=%" PRIu64, w->leaf, w->leaf);
  long est = get(h, path, &e);
  snprintf(path, sizeof path, "/v1/audit/proof?leaf_index=%" PRIu64 "&tree_size=%" PRIu64,
           w->leaf, s->tree_size);
  long pst = est == 200 ? get(h, path, &p) : 0;
  json_t *in = json_object_get(json_array_get(json_object_get(e, "entries"), 0), "leaf_input");
  unsigned char body[4200];
  size_t len = 0;
  uint8_t leaf[32];
  int have = json_is_string(in) && json_string_length(in) < 5600 &&
             cairn__base64_decode(json_string_value(in), json_string_length(in), body,
                                  sizeof body, &len) == 0;
  if (have)
    cairn_merkle_leaf_hash(body, len, leaf);
  why[0] = '\0';
  if (est != 200 || pst != 200) {
    if (refused(est) || refused(pst))
      snprintf(why, sizeof why, "the master refuses leaf %" PRIu64 " of its head of size %"
               PRIu64 " (HTTP %ld)", w->leaf, s->tree_size, refused(est) ? est : pst);
  } else if (!have || memcmp(leaf, w->hash, 32) != 0)
    snprintf(why, sizeof why, "the log's leaf %" PRIu64 " is not the entry of the receipt "
             "(its hash differs)", w->leaf);
  else if (len < 18 || body[0] != 1 || be64(body + 1) != w->leaf + 1 || body[9] != 2 ||
           (w->index > 0 && be64(body + 10) != (uint64_t)w->index))
    snprintf(why, sizeof why, "the log's leaf %" PRIu64 " is not the result entry of index %"
             PRId64, w->leaf, w->index);
  else if (cairn__proof_parse(json_object_get(p, "audit_path"), r.path, &r.npath) ||
           !cairn_merkle_verify_inclusion(w->leaf, s->tree_size, w->hash, r.path, r.npath,
                                          s->root))
    snprintf(why, sizeof why, "the inclusion proof of leaf %" PRIu64 " does not lead to the "
             "root of the head of size %" PRIu64, w->leaf, s->tree_size);
  json_decref(e);
  if (why[0]) {
    *st = inconsistent(a, why, s, NULL, p, &r, err);
    return -1;
  }
  json_decref(p);
  if (est != 200 || pst != 200)
    return 1;
  char name[48];
  receipt_file(w->leaf, name);
  pthread_mutex_lock(&a->mu);
  if (save(a->receipts, name, cairn__receipt_json(&r)) == 0)
    keep(a, w->leaf);
  pthread_mutex_unlock(&a->mu);
  return 0;
}

/* 1 when a receipt waits that the head held does not cover and the newest
 * head was not asked for in the last CAIRN__AUDIT_ASK_MS (noted as asked). */
static int ask_due(cairn__auditlog *a) {
  int64_t now = wall_ms();
  pthread_mutex_lock(&a->mu);
  int due = now - a->asked_ms >= CAIRN__AUDIT_ASK_MS && a->wait_n > 0 &&
            (!a->has_sth || a->wait_top >= a->sth.tree_size);
  if (due)
    a->asked_ms = now;
  pthread_mutex_unlock(&a->mu);
  return due;
}

cairn_status cairn__auditlog_tick(cairn__auditlog *a, cairn__http *h, cairn_error *err) {
  pthread_mutex_lock(&a->mu);
  int bad = a->inconsistent, has_key = a->has_key, heard = a->has_heard;
  cairn__sth head = a->heard;
  pthread_mutex_unlock(&a->mu);
  if (bad)
    return cairn__error_set(err, CAIRN_EFORBIDDEN, "audit log inconsistent");
  cairn_status st = CAIRN_OK;
  if (!has_key && heard && (st = cairn__auditlog_pin(a, h, err)) != CAIRN_OK)
    return st;
  if (!a->has_key)
    return CAIRN_OK; /* no log, or no key yet */
  if (!heard && ask_due(a)) { /* receipts no head covers, and no beat heard a newer one */
    json_t *o = NULL;
    if (get(h, "/v1/audit/sth", &o) == 200)
      heard_head(a, o);
    json_decref(o);
    pthread_mutex_lock(&a->mu);
    heard = a->has_heard;
    head = a->heard;
    pthread_mutex_unlock(&a->mu);
  }
  if (heard && (st = check_head(a, h, &head, err)) != CAIRN_OK)
    return st;
  int64_t now = wall_ms(), until = now + CAIRN__AUDIT_TICK_MS;
  if (now - a->budget_ms >= CAIRN__AUDIT_PROOF_MS) { /* the heartbeat thread's alone */
    a->budget = CAIRN__AUDIT_PROOFS;
    a->budget_ms = now;
  }
  for (int i = 0; i < CAIRN__AUDIT_PROOFS && a->budget > 0 && wall_ms() < until; i++) {
    pthread_mutex_lock(&a->mu);
    int go = a->wait_n > 0 && a->has_sth;
    cairn__audit_wait w = go ? a->wait[a->wait_first] : (cairn__audit_wait){0};
    cairn__sth s = a->sth;
    if (go) {
      a->wait_first = (a->wait_first + 1) % CAIRN__AUDIT_RECEIPTS;
      a->wait_n--;
    }
    if (go && w.leaf >= s.tree_size) /* not covered yet: to the back */
      wait_push(a, &w);
    pthread_mutex_unlock(&a->mu);
    if (!go || w.leaf >= s.tree_size)
      continue;
    a->budget--;
    int rc = prove(a, h, &s, &w, &st, err);
    if (rc < 0)
      return st;
    if (rc > 0) { /* no answer: again later */
      pthread_mutex_lock(&a->mu);
      wait_push(a, &w);
      pthread_mutex_unlock(&a->mu);
      break;
    }
  }
  pthread_mutex_lock(&a->mu);
  pending_compact(a);
  pthread_mutex_unlock(&a->mu);
  return CAIRN_OK;
}

/* ---- start-up ---- */

static int by_leaf(const struct dirent **x, const struct dirent **y) {
  uint64_t a = strtoull((*x)->d_name + 8, NULL, 10), b = strtoull((*y)->d_name + 8, NULL, 10);
  return a < b ? -1 : a > b;
}

static int receipt_name(const struct dirent *d) {
  size_t n = strlen(d->d_name);
  return strncmp(d->d_name, "receipt-", 8) == 0 && n > 13 && strcmp(d->d_name + n - 5, ".json") == 0;
}

/* The receipts an earlier run kept: the newest CAIRN__AUDIT_RECEIPTS proved
 * files (the older go), and the lines of pending.jsonl not proved since,
 * waiting again. */
static void scan(cairn__auditlog *a) {
  struct dirent **names = NULL;
  int n = scandir(a->receipts, &names, receipt_name, by_leaf);
  for (int i = 0; i < n; i++) {
    keep(a, strtoull(names[i]->d_name + 8, NULL, 10));
    free(names[i]);
  }
  free(names);
  char path[4200], line[512];
  snprintf(path, sizeof path, "%s/pending.jsonl", a->dir);
  FILE *f = fopen(path, "r");
  while (f && fgets(line, sizeof line, f)) {
    json_t *o = json_loads(line, 0, NULL);
    cairn__receipt r;
    char why[200], name[48], file[4300];
    if (o && cairn__receipt_parse(o, &r, why, sizeof why) == 0) {
      receipt_file(r.leaf_index, name);
      snprintf(file, sizeof file, "%s/%s", a->receipts, name);
      cairn__audit_wait w = {.leaf = r.leaf_index, .index = r.index};
      memcpy(w.hash, r.leaf_hash, 32);
      if (access(file, F_OK) != 0)
        wait_push(a, &w);
      a->pending_lines++;
    }
    json_decref(o);
  }
  if (f)
    fclose(f);
  a->pending_fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600);
}

cairn_status cairn__auditlog_init(cairn__auditlog *a, const char *dir, const cairn__logger *log,
                                  cairn_error *err) {
  memset(a, 0, sizeof *a);
  a->pending_fd = -1;
  pthread_mutex_init(&a->mu, NULL);
  a->log = log;
  a->dir = cairn__path_join(dir, "audit");
  a->receipts = a->dir ? cairn__path_join(a->dir, "receipts") : NULL;
  a->kept = calloc(CAIRN__AUDIT_RECEIPTS, sizeof *a->kept);
  a->wait = calloc(CAIRN__AUDIT_RECEIPTS, sizeof *a->wait);
  if (!a->receipts || !a->kept || !a->wait)
    return cairn__error_set(err, CAIRN_ENOMEM, "out of memory");
  cairn_status st = cairn__mkdirs(a->receipts, 0700, err);
  if (st != CAIRN_OK)
    return st;
  char mark[4200], text[1024] = "";
  snprintf(mark, sizeof mark, "%s/inconsistent", a->dir);
  FILE *f = fopen(mark, "r");
  if (f) {
    size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    a->inconsistent = 1;
    return cairn__error_set(err, CAIRN_EFORBIDDEN, "audit log inconsistent: an earlier run "
                           "found %.600s; this worker takes no work from that master until %s "
                           "is removed", text, mark);
  }
  json_t *k = load(a->dir, "key.json"), *s = load(a->dir, "sth.json");
  char why[200];
  a->has_key = k && cairn__b64_parse(json_object_get(k, "public_key"), a->pk, 32) == 0;
  a->has_sth = a->has_key && s && cairn__sth_parse(s, &a->sth, why, sizeof why) == 0 &&
               cairn__sth_verify(&a->sth, a->pk);
  json_decref(k);
  json_decref(s);
  scan(a);
  return CAIRN_OK;
}

void cairn__auditlog_destroy(cairn__auditlog *a) {
  if (a->pending_fd >= 0)
    close(a->pending_fd);
  free(a->dir);
  free(a->receipts);
  free(a->kept);
  free(a->wait);
  pthread_mutex_destroy(&a->mu);
}
