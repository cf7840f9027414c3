/* plan_cdmd.c — Continuous Delivery Message Dissemination under multicasting
 * ([Gon]: Gonzalez, "Continuous Delivery Message Dissemination Problems
 * under the Multicasting Communication Mode").
 *
 * Model (§1): n processors on a single-port complete network; in a round a
 * processor multicasts one message it holds to any set of processors and
 * receives at most one message; a message of length l occupies sender and
 * receivers for l consecutive rounds. d = max(s, r) (max total length a
 * processor holds to send / must receive) is a lower bound on the total
 * communication time (TCT).
 *
 * Algorithm (§3): message-destination pairs (md-pairs) at each processor; a
 * pair is long if its length exceeds d/2. With r-length = length of the short
 * pairs plus each distinct long message once, a processor is light (r <= d),
 * full (d < r <= 1.5d) or heavy (r > 1.5d), of type 1 if it holds a long pair.
 *   LH (§3.1): while a heavy h and a light l exist (h: the lowest index;
 *   l: the least r-length), [Op 1] if h is of type 1 and r(l) <= d/2 forward
 *   one long pair of h to l, [Op 2] while l is light forward short pairs of h
 *   to l (pairs destined to l first). Forwarding moves the pair and, once per
 *   (h, l, message), sends the message from h to l. Pairs whose destination
 *   then holds the message are dropped. Forwarding schedule S: each h
 *   multicasts each forwarded message once to all its l's, back to back from
 *   time 0: TCT <= d (Theorem 3.2).
 *   LS (§3.2): from the end of S, each processor's long pairs (one message)
 *   are multicast at once; the short pairs, merged per (origin, destination),
 *   are list-scheduled: whenever a processor's receive port is free, it takes
 *   the first pending pair whose sender is free. TCT <= s' + r' <= 2.5d
 *   (Theorems 3.3, 3.4).
 * Guarantee: TCT <= 3.5d (Theorem 3.1). Complexity: O(q·n) for LH and the
 * transfer list, O(q²) for this LS (q md-pairs, n processors). */
#include <stdlib.h>
#include <string.h>

#include "plan/plan.h"

typedef struct mdp {
  uint32_t msg, dest, at;
  int alive;
} mdp;

typedef struct cd {
  const cairn__plan_cdmd *c;
  int64_t d;
  mdp *p;
  size_t np;
  int64_t *shortsum, *longlen;
  uint32_t *longcnt;
  /* forwards: (from, to, msg) */
  uint32_t (*fw)[3];
  size_t nfw, capfw;
  uint8_t *holds; /* nmsg * n after forwarding */
} cd;

static int64_t len_of(const cd *s, uint32_t m) { return s->c->msg[m].length; }
static int is_long(const cd *s, uint32_t m) { return 2 * len_of(s, m) > s->d; }
static int64_t rlen(const cd *s, size_t i) { return s->shortsum[i] + (s->longcnt[i] ? s->longlen[i] : 0); }
static int light(const cd *s, size_t i) { return rlen(s, i) <= s->d; }
static int heavy(const cd *s, size_t i) { return 2 * rlen(s, i) > 3 * s->d; }

int64_t cairn__plan_cdmd_degree(const cairn__plan_cdmd *c) {
  int64_t *snd = calloc(c->n ? c->n : 1, sizeof *snd), *rcv = calloc(c->n ? c->n : 1, sizeof *rcv), d = 0;
  if (!snd || !rcv) {
    free(snd);
    free(rcv);
    return 0;
  }
  for (size_t m = 0; m < c->nmsg; m++) {
    snd[c->msg[m].holder] += c->msg[m].length;
    for (size_t x = 0; x < c->msg[m].nneed; x++)
      rcv[c->msg[m].needed_by[x]] += c->msg[m].length;
  }
  for (size_t i = 0; i < c->n; i++) {
    if (snd[i] > d)
      d = snd[i];
    if (rcv[i] > d)
      d = rcv[i];
  }
  free(snd);
  free(rcv);
  return d;
}

static void take(cd *s, size_t pi) {
  mdp *p = &s->p[pi];
  if (is_long(s, p->msg))
    s->longcnt[p->at]--;
  else
    s->shortsum[p->at] -= len_of(s, p->msg);
}

static void put(cd *s, size_t pi) {
  mdp *p = &s->p[pi];
  if (is_long(s, p->msg)) {
    s->longcnt[p->at]++;
    s->longlen[p->at] = len_of(s, p->msg);
  } else {
    s->shortsum[p->at] += len_of(s, p->msg);
  }
}

static int forward(cd *s, size_t pi, uint32_t l) {
  uint32_t h = s->p[pi].at, m = s->p[pi].msg;
  take(s, pi);
  s->p[pi].at = l;
  put(s, pi);
  for (size_t f = 0; f < s->nfw; f++)
    if (s->fw[f][0] == h && s->fw[f][1] == l && s->fw[f][2] == m)
      return 0;
  if (s->nfw == s->capfw) {
    size_t nc = s->capfw ? 2 * s->capfw : 64;
    void *q = realloc(s->fw, nc * sizeof *s->fw);
    if (!q)
      return -1;
    s->fw = q;
    s->capfw = nc;
  }
  s->fw[s->nfw][0] = h;
  s->fw[s->nfw][1] = l;
  s->fw[s->nfw][2] = m;
  s->nfw++;
  return 0;
}

/* Transformation LH (§3.1). */
static int transform(cd *s) {
  size_t n = s->c->n;
  for (size_t guard = 0; guard <= n + 1; guard++) {
    size_t h = n, l = n;
    for (size_t i = 0; i < n && h == n; i++)
      if (heavy(s, i))
        h = i;
    for (size_t i = 0; i < n; i++)
      if (light(s, i) && (l == n || rlen(s, i) < rlen(s, l)))
        l = i;
    if (h == n || l == n)
      return 0;
    if (s->longcnt[h] && 2 * rlen(s, l) <= s->d) /* Operation 1 */
      for (size_t pi = 0; pi < s->np; pi++)
        if (s->p[pi].alive && s->p[pi].at == h && is_long(s, s->p[pi].msg)) {
          if (forward(s, pi, (uint32_t)l))
            return -1;
          break;
        }
    for (int pass = 0; pass < 2; pass++) /* Operation 2: pairs for l first */
      for (size_t pi = 0; pi < s->np && light(s, l); pi++) {
        mdp *p = &s->p[pi];
        if (p->alive && p->at == h && !is_long(s, p->msg) && (pass == 1 || p->dest == l))
          if (forward(s, pi, (uint32_t)l))
            return -1;
      }
  }
  return 0;
}

typedef struct tup {
  uint32_t from, to;
  int64_t len;
  int done;
} tup;

static int emit(cairn__plan_schedule *out, uint32_t msg, uint32_t from, const cairn__plan_node *to, size_t nto,
                int64_t start, int64_t len) {
  cairn__plan_node f = {from, -1};
  return cairn__plan_schedule_add(out, msg, f, to, nto, (double)start, (double)(start + len));
}

cairn_status cairn__plan_cdmd_run(const cairn__plan_cdmd *c, cairn__plan_schedule *out, cairn_error *err) {
  cd s = {.c = c, .d = cairn__plan_cdmd_degree(c)};
  size_t n = c->n;
  cairn_status st = CAIRN_OK;
  tup *tp = NULL;
  cairn__plan_node *dst = NULL;
  int64_t *sendfree = NULL, *recvfree = NULL, *fwtime = NULL;
  for (size_t m = 0; m < c->nmsg; m++)
    s.np += c->msg[m].nneed;
  s.p = calloc(s.np ? s.np : 1, sizeof *s.p);
  s.shortsum = calloc(n, sizeof *s.shortsum);
  s.longlen = calloc(n, sizeof *s.longlen);
  s.longcnt = calloc(n, sizeof *s.longcnt);
  s.holds = calloc(c->nmsg > 0 && n > 0 ? c->nmsg * n : 1, 1);
  sendfree = calloc(n, sizeof *sendfree);
  recvfree = calloc(n, sizeof *recvfree);
  fwtime = calloc(n, sizeof *fwtime);
  dst = calloc(n, sizeof *dst);
  tp = calloc(s.np ? s.np : 1, sizeof *tp);
  if (!s.p || !s.shortsum || !s.longlen || !s.longcnt || !s.holds || !sendfree || !recvfree || !fwtime || !dst ||
      !tp) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    goto out;
  }
  size_t q = 0;
  for (size_t m = 0; m < c->nmsg; m++) {
    s.holds[m * n + c->msg[m].holder] = 1;
    for (size_t x = 0; x < c->msg[m].nneed; x++) {
      s.p[q] = (mdp){(uint32_t)m, (uint32_t)c->msg[m].needed_by[x], (uint32_t)c->msg[m].holder, 1};
      put(&s, q++);
    }
  }
  if (transform(&s)) {
    st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
    goto out;
  }
  /* schedule S: each h multicasts each forwarded message once, back to back */
  int64_t d1 = 0;
  for (size_t f = 0; f < s.nfw; f++) {
    uint32_t h = s.fw[f][0], m = s.fw[f][2];
    size_t nto = 0;
    int first = 1;
    for (size_t g = 0; g < s.nfw; g++)
      if (s.fw[g][0] == h && s.fw[g][2] == m) {
        if (g < f)
          first = 0;
        dst[nto++] = (cairn__plan_node){s.fw[g][1], -1};
      }
    if (!first)
      continue;
    for (size_t r = 0; r < nto; r++)
      s.holds[m * n + (size_t)dst[r].id] = 1;
    if (emit(out, m, h, dst, nto, fwtime[h], len_of(&s, m))) {
      st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
      goto out;
    }
    fwtime[h] += len_of(&s, m);
    if (fwtime[h] > d1)
      d1 = fwtime[h];
  }
  /* pairs whose destination already holds the message are done */
  for (size_t pi = 0; pi < s.np; pi++)
    if (s.holds[s.p[pi].msg * n + s.p[pi].dest])
      s.p[pi].alive = 0;
  for (size_t i = 0; i < n; i++)
    sendfree[i] = recvfree[i] = d1;
  /* LS, long pairs first: one multicast per processor at time d1 */
  for (size_t i = 0; i < n; i++) {
    size_t nto = 0;
    uint32_t m = 0;
    for (size_t pi = 0; pi < s.np; pi++)
      if (s.p[pi].alive && s.p[pi].at == i && is_long(&s, s.p[pi].msg)) {
        m = s.p[pi].msg;
        dst[nto++] = (cairn__plan_node){s.p[pi].dest, -1};
        recvfree[s.p[pi].dest] = d1 + len_of(&s, m);
        s.p[pi].alive = 0;
      }
    if (nto) {
      if (emit(out, m, (uint32_t)i, dst, nto, d1, len_of(&s, m))) {
        st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
        goto out;
      }
      sendfree[i] = d1 + len_of(&s, m);
    }
  }
  /* short pairs merged per (origin, destination) */
  size_t nt = 0;
  for (size_t pi = 0; pi < s.np; pi++) {
    if (!s.p[pi].alive)
      continue;
    size_t t = 0;
    while (t < nt && !(tp[t].from == s.p[pi].at && tp[t].to == s.p[pi].dest))
      t++;
    if (t == nt)
      tp[nt++] = (tup){s.p[pi].at, s.p[pi].dest, 0, 0};
    tp[t].len += len_of(&s, s.p[pi].msg);
  }
  size_t left = nt;
  int64_t now = d1;
  while (left > 0) {
    for (size_t j = 0; j < n; j++) {
      if (recvfree[j] > now)
        continue;
      for (size_t t = 0; t < nt; t++) {
        if (tp[t].done || tp[t].to != j || sendfree[tp[t].from] > now)
          continue;
        /* the merged pair goes out as its messages back to back */
        int64_t at = now;
        for (size_t pi = 0; pi < s.np; pi++) {
          mdp *p = &s.p[pi];
          if (!p->alive || p->at != tp[t].from || p->dest != j)
            continue;
          cairn__plan_node to = {j, -1};
          if (emit(out, p->msg, p->at, &to, 1, at, len_of(&s, p->msg))) {
            st = cairn__error_set(err, CAIRN_ENOMEM, "out of memory planning");
            goto out;
          }
          at += len_of(&s, p->msg);
          p->alive = 0;
        }
        tp[t].done = 1;
        left--;
        sendfree[tp[t].from] = recvfree[j] = at;
        break;
      }
    }
    int64_t nx = INT64_MAX;
    for (size_t i = 0; i < n; i++) {
      if (sendfree[i] > now && sendfree[i] < nx)
        nx = sendfree[i];
      if (recvfree[i] > now && recvfree[i] < nx)
        nx = recvfree[i];
    }
    if (nx == INT64_MAX)
      break;
    now = nx;
  }
  if (left > 0)
    st = cairn__error_set(err, CAIRN_EINTERNAL, "list schedule left %zu pairs unscheduled", left);
out:
  free(s.p);
  free(s.shortsum);
  free(s.longlen);
  free(s.longcnt);
  free(s.fw);
  free(s.holds);
  free(sendfree);
  free(recvfree);
  free(fwtime);
  free(dst);
  free(tp);
  return st;
}
