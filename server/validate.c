/* validate.c — see validate.h. */
#include "server/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "common/validator.h"

void cairn__valid_files_key(const cairn_output_file *files, size_t n, char out[65]) {
  cairn_sha256 h;
  char len[24];
  cairn_sha256_init(&h);
  for (size_t i = 0; i < n; i++) {
    int k = snprintf(len, sizeof len, "%zu:", strlen(files[i].name));
    cairn_sha256_update(&h, len, (size_t)k);
    cairn_sha256_update(&h, files[i].name, strlen(files[i].name));
    cairn_sha256_update(&h, files[i].sha256, 64);
  }
  cairn_sha256_final_hex(&h, out);
}

static int counted(const mres *m) {
  return m->ok && (m->outcome == OUT_PENDING || m->outcome == OUT_VALID);
}

/* Compares two results' kept data: O(a->len + b->len). */
static int compare(const mjob *j, const mres *a, const mres *b) {
  if (!a->out || !b->out || strcmp(a->fkey, b->fkey) != 0)
    return 0;
  return cairn_numeric_agree(a->out, a->len, b->out, b->len, j->validator.rel,
                             j->validator.abs);
}

int cairn__valid_add(const mjob *j, mrep *r, const void *out, size_t len, const char fkey[65]) {
  mres *m = &r->res[r->nres - 1];
  uint32_t me = r->nres - 1;
  m->agree = 0;
  if (j->validator.kind == CAIRN_VALIDATOR_EXACT || !m->ok)
    return 0;
  m->out = malloc(len ? len : 1);
  if (!m->out)
    return -1;
  if (len)
    memcpy(m->out, out, len);
  m->len = (uint32_t)len;
  snprintf(m->fkey, sizeof m->fkey, "%s", fkey);
  if (me >= CAIRN__VALID_MAX_COMPARED)
    return 0;
  m->agree = 1ull << me;
  /* O(min(nres, 64) × CAIRN_MAX_OUTPUT): each earlier result once */
  for (uint32_t k = 0; k < me; k++)
    if (r->res[k].out && compare(j, &r->res[k], m)) {
      m->agree |= 1ull << k;
      r->res[k].agree |= 1ull << me;
    }
  return 0;
}

int cairn__valid_agree(const mjob *j, const mrep *r, const mres *a, const mres *b) {
  if (j->validator.kind == CAIRN_VALIDATOR_EXACT)
    return strcmp(a->digest, b->digest) == 0;
  if (a == b)
    return 1;
  ptrdiff_t kb = b - r->res;
  return kb >= 0 && kb < CAIRN__VALID_MAX_COMPARED && (a->agree >> kb & 1);
}

uint32_t cairn__valid_best(const mjob *j, const mrep *r, const mres **canon) {
  uint32_t best = 0;
  *canon = NULL;
  /* O(nres²): replicas are few */
  for (uint32_t i = 0; r && i < r->nres; i++) {
    if (!counted(&r->res[i]))
      continue;
    uint32_t n = 0;
    for (uint32_t k = 0; k < r->nres; k++)
      n += counted(&r->res[k]) && cairn__valid_agree(j, r, &r->res[i], &r->res[k]);
    if (n > best) {
      best = n;
      *canon = &r->res[i];
    }
  }
  return best;
}

void cairn__valid_trim(mrep *r, int64_t keep) {
  for (uint32_t i = 0; r && i < r->nres; i++)
    if (r->res[i].idx != keep) {
      free(r->res[i].out);
      r->res[i].out = NULL;
    }
}
