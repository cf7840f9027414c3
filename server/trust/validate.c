/* validate.c — see validate.h. */
#include "server/trust/validate.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/sha256.h"
#include "plan/validator.h"

void cairn__valid_files_key(const cairn__output_file *files, size_t n, char out[65]) {
  cairn__sha256 h;
  char len[24];
  cairn__sha256_init(&h);
  for (size_t i = 0; i < n; i++) {
    int k = snprintf(len, sizeof len, "%zu:", strlen(files[i].name));
    cairn__sha256_update(&h, len, (size_t)k);
    cairn__sha256_update(&h, files[i].name, strlen(files[i].name));
    cairn__sha256_update(&h, files[i].sha256, 64);
  }
  cairn__sha256_final_hex(&h, out);
}

int cairn__valid_files_parse(const char *text, cairn__output_file **files, uint32_t *n) {
  *files = NULL;
  *n = 0;
  for (const char *p = text; p && *p;) {
    char *end;
    unsigned long len = strtoul(p, &end, 10);
    if (*end != ':' || len > CAIRN_MAX_OUTPUT_NAME || strlen(end + 1) < len + 64 ||
        *n >= CAIRN_MAX_OUTPUT_FILES)
      goto bad;
    cairn__output_file *nf = realloc(*files, (*n + 1) * sizeof *nf);
    if (!nf)
      goto bad;
    *files = nf;
    cairn__output_file *f = &nf[(*n)++];
    memset(f, 0, sizeof *f);
    memcpy(f->name, end + 1, len);
    memcpy(f->sha256, end + 1 + len, 64);
    p = end + 1 + len + 64;
  }
  return 0;
bad:
  free(*files);
  *files = NULL;
  *n = 0;
  return -1;
}

static int counted(const mres *m) {
  return m->ok && (m->outcome == OUT_PENDING || m->outcome == OUT_VALID);
}

/* Compares two results' kept data: O(a->len + b->len). */
static int compare(const mjob *j, const mres *a, const mres *b) {
  if (!a->out || !b->out || strcmp(a->fkey, b->fkey) != 0)
    return 0;
  return cairn__numeric_agree(a->out, a->len, b->out, b->len, j->validator.rel,
                             j->validator.abs);
}

void cairn__valid_set(mrep *r, mres *a, mres *b, int agree) {
  ptrdiff_t ka = a - r->res, kb = b - r->res;
  if (ka >= CAIRN__VALID_MAX_COMPARED || kb >= CAIRN__VALID_MAX_COMPARED)
    return;
  a->known |= 1ull << kb;
  b->known |= 1ull << ka;
  if (agree) {
    a->agree |= 1ull << kb;
    b->agree |= 1ull << ka;
  }
}

int cairn__valid_add(cairn__core *c, const mjob *j, uint32_t seq, const void *out, size_t len,
                     const cairn__output_file *files, size_t nfiles, const char fkey[65]) {
  mtask *t = &j->tasks[seq];
  mrep *r = t->rep;
  mres *m = &r->res[r->nres - 1];
  uint32_t me = r->nres - 1;
  m->agree = m->known = 0;
  if (j->validator.kind == CAIRN_VALIDATOR_EXACT || !m->ok)
    return 0;
  m->out = malloc(len ? len : 1);
  if (!m->out)
    return -1;
  if (len)
    memcpy(m->out, out, len);
  m->len = (uint32_t)len;
  snprintf(m->fkey, sizeof m->fkey, "%s", fkey);
  if (j->validator.kind == CAIRN_VALIDATOR_COMMAND && nfiles) {
    if (!(m->files = malloc(nfiles * sizeof *m->files)))
      return -1;
    memcpy(m->files, files, nfiles * sizeof *m->files);
    m->nfiles = (uint32_t)nfiles;
  }
  if (me >= CAIRN__VALID_MAX_COMPARED)
    return 0;
  m->agree = m->known = 1ull << me;
  /* ≤ 15 pairs: O(CAIRN_MAX_OUTPUT) each for numeric, O(1) each for command */
  for (uint32_t k = 0; k < me; k++) {
    mres *o = &r->res[k];
    if (!o->out || !counted(o))
      continue;
    if (j->validator.kind == CAIRN_VALIDATOR_NUMERIC)
      cairn__valid_set(r, o, m, compare(j, o, m));
    else {
      cairn__vpair p = {j->id, t->round, {o->idx, m->idx}, seq};
      if (cairn__vcmd_push(c, &p))
        return -1;
      r->checking++;
    }
  }
  return 0;
}

int cairn__valid_agree(const mjob *j, const mrep *r, const mres *a, const mres *b) {
  if (j->validator.kind == CAIRN_VALIDATOR_EXACT)
    return strcmp(a->digest, b->digest) == 0;
  ptrdiff_t kb = b - r->res;
  return kb >= 0 && kb < CAIRN__VALID_MAX_COMPARED && (a->agree >> kb & 1);
}

int cairn__valid_known(const mjob *j, const mrep *r, const mres *a, const mres *b) {
  if (j->validator.kind != CAIRN_VALIDATOR_COMMAND)
    return 1;
  ptrdiff_t ka = a - r->res, kb = b - r->res;
  if (ka >= CAIRN__VALID_MAX_COMPARED || kb >= CAIRN__VALID_MAX_COMPARED || !b->out)
    return 1; /* never compared: disagrees */
  return (int)(a->known >> kb & 1);
}

int cairn__valid_outcome(const mjob *j, const mrep *r, const mres *cn, const mres *m) {
  if (cairn__valid_agree(j, r, cn, m))
    return OUT_VALID;
  return cairn__valid_known(j, r, cn, m) ? OUT_INVALID : OUT_PENDING;
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

static void trim(mrep *r, int64_t keep) {
  for (uint32_t i = 0; r && i < r->nres; i++)
    if (r->res[i].idx != keep) {
      free(r->res[i].out);
      free(r->res[i].files);
      r->res[i].out = NULL;
      r->res[i].files = NULL;
      r->res[i].nfiles = 0;
    }
}

void cairn__valid_settle(mrep *r, int64_t accepted) {
  if (r && !r->checking)
    trim(r, r->active ? accepted : 0);
}

void cairn__valid_free(mrep *r) { trim(r, 0); }

mres *cairn__valid_find(mrep *r, int64_t idx) {
  for (uint32_t i = 0; r && i < r->nres; i++)
    if (r->res[i].idx == idx)
      return &r->res[i];
  return NULL;
}
