/* share.c — the choice of the project a free slot asks (share.h). */
#include "worker/share.h"

#include <math.h>

double cairn__share_decay(double usage, long long elapsed_ms, double half_life_s) {
  if (elapsed_ms <= 0 || !(half_life_s > 0))
    return usage;
  return usage * exp2(-(double)elapsed_ms / (half_life_s * 1000.0));
}

double cairn__share_usage(const cairn__share *s, long long now_ms, double half_life_s) {
  return cairn__share_decay(s->usage, now_ms - s->usage_ms, half_life_s);
}

void cairn__share_charge(cairn__share *s, double seconds, long long now_ms, double half_life_s) {
  s->usage = cairn__share_usage(s, now_ms, half_life_s) + (seconds > 0 ? seconds : 0);
  s->usage_ms = now_ms;
}

/* 1 when project a comes before project b (both ready). */
static int before(const cairn__share *a, double pa, const cairn__share *b, double pb) {
  if ((a->share > 0) != (b->share > 0))
    return a->share > 0; /* a backup project only when no other is ready */
  if (pa != pb)
    return pa < pb;
  return a->share > b->share;
}

long cairn__share_pick(const cairn__share *s, size_t n, long long now_ms, double half_life_s,
                       long long *hold_ms) {
  long best = -1;
  double best_p = 0;
  for (size_t k = 0; k < n; k++) {
    if (s[k].ready_ms > now_ms)
      continue;
    double load = cairn__share_usage(&s[k], now_ms, half_life_s) + s[k].running_s;
    double p = s[k].share > 0 ? load / s[k].share : load;
    if (best < 0 || before(&s[k], p, &s[best], best_p)) {
      best = (long)k;
      best_p = p;
    }
  }
  long long hold = -1; /* the first other project to be ready */
  for (size_t k = 0; k < n; k++) {
    if ((long)k == best || s[k].ready_ms == CAIRN__SHARE_NEVER)
      continue;
    long long wait = s[k].ready_ms > now_ms ? s[k].ready_ms - now_ms : 0;
    if (hold < 0 || wait < hold)
      hold = wait;
  }
  if (hold_ms)
    *hold_ms = hold;
  return best;
}
