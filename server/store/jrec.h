/* jrec.h — what the journal (journal.c) needs of its records, which jrec.c
 * owns (private to server/; the constructors are declared in journal.h).
 *
 * A record is owned by whoever holds it: its constructor's caller until
 * cairn__journal_put, then the journal, which frees it after its batch.
 */
#ifndef CAIRN_JREC_H
#define CAIRN_JREC_H

#include "server/store/chain.h"
#include "server/store/journal.h"

/* Writes r in the store's open transaction: O(r's rows). */
cairn_status cairn__jrec_apply(cairn__store *s, const cairn__jrec *r, cairn_error *err);
/* Fills e with r's audit-chain entry (chain.h's field orders); 0 when r's
 * kind is not chained. */
int cairn__jrec_chain_entry(const cairn__jrec *r, cairn__centry *e);
/* r's link in the journal's queue (the journal's to use). */
cairn__jrec **cairn__jrec_next(cairn__jrec *r);
/* 1 when r is a job deletion's last step (its batch reclaims free pages). */
int cairn__jrec_reclaims(const cairn__jrec *r);

#endif
