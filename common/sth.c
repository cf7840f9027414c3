/* sth.c — signed tree heads, proofs and receipts on the wire (sth.h). */
#include "common/sth.h"

#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/base64.h"
#include "common/sha256.h"

static void put_be(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (56 - 8 * i));
}

void cairn__sth_message(const cairn__sth *h, uint8_t msg[CAIRN_STH_MSG]) {
  memcpy(msg, CAIRN_STH_TAG, 12);
  put_be(msg + 12, h->tree_size);
  put_be(msg + 20, (uint64_t)h->timestamp);
  memcpy(msg + 28, h->root, CAIRN_MERKLE_HASH);
}

void cairn__sth_sign(cairn__sth *h, const uint8_t sk[64]) {
  uint8_t msg[CAIRN_STH_MSG];
  cairn__sodium_once();
  cairn__sth_message(h, msg);
  crypto_sign_detached(h->sig, NULL, msg, sizeof msg, sk);
}

int cairn__sth_verify(const cairn__sth *h, const uint8_t pk[CAIRN_STH_PK]) {
  uint8_t msg[CAIRN_STH_MSG];
  if (cairn__sodium_once())
    return 0;
  cairn__sth_message(h, msg);
  return crypto_sign_verify_detached(h->sig, msg, sizeof msg, pk) == 0;
}

int cairn__sth_same(const cairn__sth *a, const cairn__sth *b) {
  return a->tree_size == b->tree_size && a->timestamp == b->timestamp &&
         memcmp(a->root, b->root, sizeof a->root) == 0 && memcmp(a->sig, b->sig, sizeof a->sig) == 0;
}

json_t *cairn__b64_json(const void *p, size_t n) {
  char buf[160]; /* the longest: a 64-byte signature, 88 characters */
  if (cairn__base64_encoded_len(n) >= sizeof buf)
    return NULL;
  cairn__base64_encode(p, n, buf);
  return json_string(buf);
}

int cairn__b64_parse(json_t *s, void *out, size_t n) {
  uint8_t buf[96];
  size_t got = 0;
  if (!json_is_string(s) || n > sizeof buf ||
      cairn__base64_decode(json_string_value(s), json_string_length(s), buf, sizeof buf, &got) ||
      got != n)
    return -1;
  memcpy(out, buf, n);
  return 0;
}

json_t *cairn__sth_json(const cairn__sth *h) {
  return json_pack("{s:I, s:I, s:o, s:o}", "tree_size", (json_int_t)h->tree_size, "timestamp",
                   (json_int_t)h->timestamp, "root_hash", cairn__b64_json(h->root, 32),
                   "signature", cairn__b64_json(h->sig, 64));
}

/* A member that must be an integer from 0: its value, or -1. */
static int64_t count(json_t *o, const char *key) {
  json_t *v = json_object_get(o, key);
  return json_is_integer(v) && json_integer_value(v) >= 0 ? (int64_t)json_integer_value(v) : -1;
}

int cairn__sth_parse(json_t *o, cairn__sth *h, char *why, size_t whylen) {
  const char *bad = NULL;
  int64_t size = count(o, "tree_size"), ts = count(o, "timestamp");
  if (!json_is_object(o))
    bad = "a signed tree head must be an object";
  else if (size < 0)
    bad = "\"tree_size\" must be an integer from 0";
  else if (ts < 0)
    bad = "\"timestamp\" must be an integer from 0 (ms since 1970)";
  else if (cairn__b64_parse(json_object_get(o, "root_hash"), h->root, 32))
    bad = "\"root_hash\" must be the base64 of 32 bytes";
  else if (cairn__b64_parse(json_object_get(o, "signature"), h->sig, 64))
    bad = "\"signature\" must be the base64 of 64 bytes";
  if (bad) {
    snprintf(why, whylen, "%s", bad);
    return -1;
  }
  h->tree_size = (uint64_t)size;
  h->timestamp = ts;
  return 0;
}

json_t *cairn__proof_json(const cairn_merkle_hash *path, size_t n) {
  json_t *a = json_array();
  for (size_t i = 0; a && i < n; i++)
    if (json_array_append_new(a, cairn__b64_json(path[i], CAIRN_MERKLE_HASH))) {
      json_decref(a);
      return NULL;
    }
  return a;
}

int cairn__proof_parse(json_t *a, cairn_merkle_hash path[CAIRN_MERKLE_MAX_PROOF], size_t *n) {
  *n = 0;
  if (!json_is_array(a) || json_array_size(a) > CAIRN_MERKLE_MAX_PROOF)
    return -1;
  for (size_t i = 0; i < json_array_size(a); i++)
    if (cairn__b64_parse(json_array_get(a, i), path[i], CAIRN_MERKLE_HASH))
      return -1;
  *n = json_array_size(a);
  return 0;
}

json_t *cairn__receipt_json(const cairn__receipt *r) {
  json_t *o = json_pack("{s:i, s:I, s:I, s:o}", "cairn_receipt", 1, "index",
                        (json_int_t)r->index, "leaf_index", (json_int_t)r->leaf_index,
                        "leaf_hash", cairn__b64_json(r->leaf_hash, 32));
  if (o && r->proved &&
      (json_object_set_new(o, "sth", cairn__sth_json(&r->sth)) ||
       json_object_set_new(o, "audit_path", cairn__proof_json(r->path, r->npath)))) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int cairn__receipt_parse(json_t *o, cairn__receipt *r, char *why, size_t whylen) {
  memset(r, 0, sizeof *r);
  json_t *version = json_object_get(o, "cairn_receipt"), *index = json_object_get(o, "index");
  json_t *sth = json_object_get(o, "sth"), *path = json_object_get(o, "audit_path");
  int64_t leaf = count(o, "leaf_index");
  char inner[160];
  const char *bad = NULL;
  if (!json_is_object(o))
    bad = "a receipt must be an object";
  else if (version && !(json_is_integer(version) && json_integer_value(version) == 1))
    bad = "\"cairn_receipt\" must be 1 (the version of this format)";
  else if (leaf < 0)
    bad = "\"leaf_index\" must be an integer from 0";
  else if (cairn__b64_parse(json_object_get(o, "leaf_hash"), r->leaf_hash, 32))
    bad = "\"leaf_hash\" must be the base64 of 32 bytes";
  else if (index && (!json_is_integer(index) || json_integer_value(index) < 0))
    bad = "\"index\" must be an allocation index (an integer from 0)";
  else if (!sth != !path)
    bad = "\"sth\" and \"audit_path\" go together";
  else if (sth && cairn__sth_parse(sth, &r->sth, inner, sizeof inner))
    bad = inner;
  else if (path && cairn__proof_parse(path, r->path, &r->npath))
    bad = "\"audit_path\" must be an array of at most 65 base64 hashes of 32 bytes";
  if (bad) {
    snprintf(why, whylen, "%s", bad);
    return -1;
  }
  r->leaf_index = (uint64_t)leaf;
  r->index = index ? (int64_t)json_integer_value(index) : 0;
  r->proved = sth != NULL;
  return 0;
}

int cairn__receipt_verify(const cairn__receipt *r, const uint8_t pk[CAIRN_STH_PK], char *why,
                          size_t whylen) {
  if (!r->proved)
    snprintf(why, whylen, "leaf %llu has no inclusion proof yet",
             (unsigned long long)r->leaf_index);
  else if (!cairn__sth_verify(&r->sth, pk))
    snprintf(why, whylen, "the signature of the head of size %llu does not verify with the "
             "audit key", (unsigned long long)r->sth.tree_size);
  else if (!cairn_merkle_verify_inclusion(r->leaf_index, r->sth.tree_size, r->leaf_hash, r->path,
                                          r->npath, r->sth.root))
    snprintf(why, whylen, "the inclusion proof of leaf %llu does not lead to the root of the "
             "signed head of size %llu", (unsigned long long)r->leaf_index,
             (unsigned long long)r->sth.tree_size);
  else
    return 1;
  return 0;
}
