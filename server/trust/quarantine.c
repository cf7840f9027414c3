/* quarantine.c — a volunteer whose recent results are mostly invalid or
 * errors stops getting work until an administrator releases it.
 *
 * The rule (docs/accountability.md, "Quarantine"): over the volunteer's
 * last CAIRN__QUAR_WINDOW results (two bit rings in mvol, one bit a result),
 * once at least CAIRN__QUAR_MIN results are in the window, it is
 * quarantined when the fraction invalid exceeds c->quar->invalid or the
 * fraction of errors exceeds c->quar->errors (0: that test is off).
 * Quarantine recomputes nothing and invalidates nothing (unlike a ban): its
 * leases run to completion and their results count; it only gets no new
 * task. Everything here runs under c->lock in O(1).
 */
#include "server/trust/trust.h"
#include "server/store/journal.h"

#include "common/log.h"

#include <stdlib.h>

#define WINDOW_MASK ((1u << CAIRN__QUAR_WINDOW) - 1u)

static unsigned ones(uint32_t x) {
  unsigned n = 0;
  for (; x; x &= x - 1)
    n++;
  return n;
}

int cairn__quar_open(cairn__core *c) { return (c->quar = calloc(1, sizeof *c->quar)) ? 0 : -1; }

void cairn__quar_close(cairn__core *c) {
  free(c->quar);
  c->quar = NULL;
}

void cairn__quar_configure(cairn__core *c, double invalid, double errors) {
  c->quar->invalid = invalid;
  c->quar->errors = errors;
}

void cairn__quar_load(cairn__core *c, mvol *v, int quarantined) {
  v->quarantined = quarantined && !v->banned;
  c->quar->now += (uint64_t)v->quarantined;
}

void cairn__quar_drop(cairn__core *c, mvol *v) {
  c->quar->now -= (uint64_t)v->quarantined;
  v->quarantined = 0;
}

void cairn__quar_counts(const cairn__core *c, uint64_t *now, uint64_t *total) {
  *now = c->quar->now;
  *total = c->quar->total;
}

int cairn__quar_crossed(unsigned seen, unsigned bad, double threshold) {
  return threshold > 0 && seen >= CAIRN__QUAR_MIN && (double)bad > threshold * (double)seen;
}

void cairn__quar_note(cairn__core *c, mvol *v, int outcome) {
  if (outcome != OUT_VALID && outcome != OUT_INVALID && outcome != OUT_ERROR)
    return;
  v->q_invalid = ((v->q_invalid << 1) | (outcome == OUT_INVALID)) & WINDOW_MASK;
  v->q_errors = ((v->q_errors << 1) | (outcome == OUT_ERROR)) & WINDOW_MASK;
  if (v->q_seen < CAIRN__QUAR_WINDOW)
    v->q_seen++;
  if (v->quarantined || v->banned)
    return;
  unsigned inv = ones(v->q_invalid), errs = ones(v->q_errors);
  if (!cairn__quar_crossed(v->q_seen, inv, c->quar->invalid) &&
      !cairn__quar_crossed(v->q_seen, errs, c->quar->errors))
    return;
  v->quarantined = 1;
  cairn__journal_put(c->journal, cairn__jrec_quarantine(v->id, 1)); /* with the result */
  c->quar->now++;
  c->quar->total++;
  CAIRN_WARN(&c->log, "volunteer %lld quarantined: %u of its last %u results invalid, %u errors "
             "(thresholds %.2f, %.2f); it gets no work until released", (long long)v->id, inv,
             (unsigned)v->q_seen, errs, c->quar->invalid, c->quar->errors);
}

cairn_status cairn__core_release(cairn__core *c, int64_t id, cairn_error *err) {
  cairn_status st = CAIRN_OK;
  pthread_mutex_lock(&c->lock);
  mvol *v = id >= 1 && (size_t)id <= c->nvols ? c->vols[id - 1] : NULL;
  if (!v)
    st = cairn__error_set(err, CAIRN_ENOTFOUND, "no volunteer %lld", (long long)id);
  else if (!v->quarantined)
    st = cairn__error_set(err, CAIRN_ECONFLICT, "volunteer %lld is not quarantined", (long long)id);
  else {
    CAIRN_WARN(&c->log, "volunteer %lld released from quarantine: %u of its last %u results "
               "invalid, %u errors", (long long)id, ones(v->q_invalid), (unsigned)v->q_seen,
               ones(v->q_errors));
    v->quarantined = 0;
    cairn__journal_put(c->journal, cairn__jrec_quarantine(id, 0));
    v->q_invalid = v->q_errors = 0;
    v->q_seen = 0;
    c->quar->now--;
  }
  uint64_t seq = cairn__journal_last(c->journal);
  cairn__core_unlock(c);
  return st == CAIRN_OK ? cairn__journal_wait(c->journal, seq, err) : st;
}
