/* ic_game.h — the IC Pebble Game of [Ros] §4.3.1 (Figure 7) on a dag.
 *
 * States of a task (pebbles) and the legal moves:
 *   NONE (not yet eligible) --all parents XEQ--> EBU (eligible but unallocated)
 *   EBU --allocate--> EAA (eligible and allocated)
 *   EAA --execute--> XEQ (executed); EAA --expire (lease lost)--> EBU.
 * Sources start as EBU. The eligibility profile of a play is E(t) = tasks
 * eligible and unexecuted (EBU + EAA) after t executions, t = 0..n, and its
 * AREA is Σ_t E(t). Every move is O(deg) time; the game keeps 5 bytes per task.
 */
#ifndef CAIRN_IC_GAME_H
#define CAIRN_IC_GAME_H

#include <stdint.h>

#include "common/error.h"
#include "plan/dag.h"
#include "plan/policy.h"

typedef enum cairn__pebble {
  CAIRN_PEBBLE_NONE,
  CAIRN_PEBBLE_EBU,
  CAIRN_PEBBLE_EAA,
  CAIRN_PEBBLE_XEQ
} cairn__pebble;

typedef struct cairn__ic_game {
  const cairn__dag *dag;  /* borrowed */
  uint8_t *state;        /* cairn__pebble per task */
  uint32_t *missing;     /* parents not yet XEQ */
  uint32_t ebu, eaa, xeq;
} cairn__ic_game;

/* Puts EBU pebbles on the sources. 0, or -1 out of memory. */
int cairn__ic_game_init(cairn__ic_game *g, const cairn__dag *d);
void cairn__ic_game_free(cairn__ic_game *g);

/* EBU -> EAA. 0, or -1 if v is not EBU. */
int cairn__ic_game_allocate(cairn__ic_game *g, uint32_t v);
/* EAA -> EBU (the lease was lost). 0, or -1 if v is not EAA. */
int cairn__ic_game_expire(cairn__ic_game *g, uint32_t v);
/* EAA -> XEQ; writes the children that became EBU to out (room for
 * deg+(v) entries) and returns how many; -1 if v is not EAA. */
int cairn__ic_game_execute(cairn__ic_game *g, uint32_t v, uint32_t *out);

/* Eligible and unexecuted tasks now: E at the current step. */
static inline uint32_t cairn__ic_game_eligible(const cairn__ic_game *g) { return g->ebu + g->eaa; }

/* Plays the game with policy ops on d in the game's sequential setting (each
 * allocated task is executed before the next allocation; newly eligible tasks
 * are made ready in increasing number). Writes E(0..n) to profile[n+1] and,
 * if order is not NULL, the execution order to order[n]; returns the AREA, or
 * -1 (err set) on a cycle / no memory / a policy that breaks its contract.
 * O(n + m) plus the policy's own cost. */
int64_t cairn__ic_play(const cairn__dag *d, const cairn__policy_ops *ops, uint64_t seed,
                      uint32_t *profile, uint32_t *order, cairn_error *err);

/* Profile E(0..n) of executing d in the given order (a permutation of the
 * nodes); returns the AREA, or -1 if order is not a topological order. */
int64_t cairn__ic_profile_of_order(const cairn__dag *d, const uint32_t *order, uint32_t *profile);

#endif
