/* ic_game.c — the IC Pebble Game ([Ros] §4.3.1, Figure 7): pebble states,
 * moves, and the sequential play that measures a policy's eligibility profile.
 * Each move costs O(deg) time; a full play is O(n + m) plus the policy. */
#include "plan/ic_game.h"

#include <stdlib.h>

int cairn__ic_game_init(cairn__ic_game *g, const cairn__dag *d) {
  g->dag = d;
  g->ebu = g->eaa = g->xeq = 0;
  g->state = calloc((size_t)d->n + 1, 1);
  g->missing = malloc(((size_t)d->n + 1) * sizeof(uint32_t));
  if (!g->state || !g->missing) {
    cairn__ic_game_free(g);
    return -1;
  }
  for (uint32_t v = 0; v < d->n; v++) {
    g->missing[v] = cairn__dag_nparents(d, v);
    if (g->missing[v] == 0) {
      g->state[v] = CAIRN_PEBBLE_EBU;
      g->ebu++;
    }
  }
  return 0;
}

void cairn__ic_game_free(cairn__ic_game *g) {
  free(g->state);
  free(g->missing);
  g->state = NULL;
  g->missing = NULL;
}

int cairn__ic_game_allocate(cairn__ic_game *g, uint32_t v) {
  if (v >= g->dag->n || g->state[v] != CAIRN_PEBBLE_EBU)
    return -1;
  g->state[v] = CAIRN_PEBBLE_EAA;
  g->ebu--;
  g->eaa++;
  return 0;
}

int cairn__ic_game_expire(cairn__ic_game *g, uint32_t v) {
  if (v >= g->dag->n || g->state[v] != CAIRN_PEBBLE_EAA)
    return -1;
  g->state[v] = CAIRN_PEBBLE_EBU;
  g->eaa--;
  g->ebu++;
  return 0;
}

int cairn__ic_game_execute(cairn__ic_game *g, uint32_t v, uint32_t *out) {
  const cairn__dag *d = g->dag;
  if (v >= d->n || g->state[v] != CAIRN_PEBBLE_EAA)
    return -1;
  g->state[v] = CAIRN_PEBBLE_XEQ;
  g->eaa--;
  g->xeq++;
  int k = 0;
  for (uint32_t i = d->ch_off[v]; i < d->ch_off[v + 1]; i++) {
    uint32_t c = d->ch[i];
    if (--g->missing[c] == 0) {
      g->state[c] = CAIRN_PEBBLE_EBU;
      g->ebu++;
      out[k++] = c;
    }
  }
  return k;
}

int64_t cairn__ic_play(const cairn__dag *d, const cairn__policy_ops *ops, uint64_t seed,
                      uint32_t *profile, uint32_t *order, cairn_error *err) {
  cairn__ic_game g;
  void *pol = NULL;
  uint32_t *fresh = NULL, maxdeg = 1;
  int64_t area = -1;
  if (cairn__ic_game_init(&g, d) != 0) {
    cairn__error_set(err, CAIRN_ENOMEM, "out of memory for the pebble game");
    return -1;
  }
  for (uint32_t v = 0; v < d->n; v++)
    if (cairn__dag_nchildren(d, v) > maxdeg)
      maxdeg = cairn__dag_nchildren(d, v);
  fresh = malloc((size_t)maxdeg * sizeof(uint32_t));
  pol = fresh ? ops->create(d, seed) : NULL;
  if (!pol) {
    cairn__error_set(err, CAIRN_ENOMEM, "cannot create policy %s (no memory, or a cycle)", ops->name);
    goto out;
  }
  for (uint32_t v = 0; v < d->n; v++)
    if (g.state[v] == CAIRN_PEBBLE_EBU)
      ops->ready(pol, v);
  area = profile[0] = cairn__ic_game_eligible(&g);
  for (uint32_t t = 0; t < d->n; t++) {
    uint32_t v;
    if (ops->pick(pol, &v) != 0 || cairn__ic_game_allocate(&g, v) != 0) {
      cairn__error_set(err, g.xeq == t && cairn__ic_game_eligible(&g) == 0 ? CAIRN_EINVAL
                                                                        : CAIRN_EINTERNAL,
                      "policy %s: no valid pick at step %u of %u (cycle, or broken policy)",
                      ops->name, t, d->n);
      area = -1;
      goto out;
    }
    int k = cairn__ic_game_execute(&g, v, fresh);
    ops->executed(pol, v);
    for (int i = 0; i < k; i++)
      ops->ready(pol, fresh[i]);
    if (order)
      order[t] = v;
    profile[t + 1] = cairn__ic_game_eligible(&g);
    area += profile[t + 1];
  }
out:
  if (pol)
    ops->destroy(pol);
  free(fresh);
  cairn__ic_game_free(&g);
  return area;
}

int64_t cairn__ic_profile_of_order(const cairn__dag *d, const uint32_t *order, uint32_t *profile) {
  cairn__ic_game g;
  uint32_t *fresh = NULL, maxdeg = 1;
  int64_t area = -1;
  if (cairn__ic_game_init(&g, d) != 0)
    return -1;
  for (uint32_t v = 0; v < d->n; v++)
    if (cairn__dag_nchildren(d, v) > maxdeg)
      maxdeg = cairn__dag_nchildren(d, v);
  fresh = malloc((size_t)maxdeg * sizeof(uint32_t));
  if (!fresh)
    goto out;
  area = profile[0] = cairn__ic_game_eligible(&g);
  for (uint32_t t = 0; t < d->n; t++) {
    if (cairn__ic_game_allocate(&g, order[t]) != 0) {
      area = -1;
      goto out;
    }
    cairn__ic_game_execute(&g, order[t], fresh);
    profile[t + 1] = cairn__ic_game_eligible(&g);
    area += profile[t + 1];
  }
out:
  free(fresh);
  cairn__ic_game_free(&g);
  return area;
}
