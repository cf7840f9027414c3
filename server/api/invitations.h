/* invitations.h — the invitation codes of a master whose registration is
 * by invitation (private to server/).
 *
 * Owns: the invitations (at most CAIRN_MAX_INVITATIONS, in id order) and
 * their mutex. A code is shown once, when it is created; only its SHA-256
 * and its first CAIRN_INVITATION_PREFIX characters are kept, in memory and
 * in the store (schema/0004_invitations.sql). Every change is journaled
 * (the core's journal, records cairn__jrec_invite*) and acknowledged only
 * once committed, so kill -9 after an acknowledged create, use or revoke
 * loses nothing.
 *
 * Locking: the invitations' mutex is taken alone or before the journal's
 * (it puts records while holding it), never inside or around c->lock. Each
 * call is O(CAIRN_MAX_INVITATIONS) at most (a scan of the table).
 */
#ifndef CAIRN_INVITATIONS_H
#define CAIRN_INVITATIONS_H

#include <jansson.h>
#include <stdint.h>

#include "common/error.h"
#include "server/core/core.h"

typedef struct cairn__invites cairn__invites;

/* Loads the invitations from c's store. NULL with err set. */
cairn__invites *cairn__invites_open(cairn__core *c, cairn_error *err);
void cairn__invites_close(cairn__invites *iv);

/* Why a code was refused (docs/protocol.md names the error codes). */
typedef enum {
  CAIRN__INVITE_OK,
  CAIRN__INVITE_INVALID,  /* no such code (never made, or revoked) */
  CAIRN__INVITE_EXPIRED,
  CAIRN__INVITE_USED_UP
} cairn__invite_verdict;

/* Spends one use of code at now (Unix seconds): CAIRN__INVITE_OK with its
 * invitation's id in *id, the use journaled (a registration's wait for its
 * own records makes it durable). Two concurrent uses of the last use: one
 * gets OK, the other USED_UP. */
cairn__invite_verdict cairn__invites_use(cairn__invites *iv, const char *code, int64_t now,
                                         int64_t *id);
/* Gives back a use taken by cairn__invites_use (the registration failed). */
void cairn__invites_unuse(cairn__invites *iv, int64_t id);

/* Creates an invitation for uses registrations until now + seconds, with
 * note; fills code (shown once) and returns its JSON (id, code, prefix,
 * uses, uses_left, expires, note) once durable. NULL with err set:
 * CAIRN_ECONFLICT when CAIRN_MAX_INVITATIONS exist. */
json_t *cairn__invites_create(cairn__invites *iv, int uses, int64_t seconds, const char *note,
                              int64_t now, cairn_error *err);
/* {"invitations": [...]}: id, prefix, uses, used, uses_left, expires,
 * expired, note, created of each; never a code. */
json_t *cairn__invites_list(cairn__invites *iv, int64_t now);
/* Revokes invitation id (its code is refused from then on) once durable;
 * CAIRN_ENOTFOUND when there is none. */
cairn_status cairn__invites_revoke(cairn__invites *iv, int64_t id, cairn_error *err);

#endif
