/* plan_internal.h — helpers shared by the plan_*.c files only; not part of
 * the public API (include plan/plan.h instead). */
#ifndef CAIRN_PLAN_INTERNAL_H
#define CAIRN_PLAN_INTERNAL_H

#include <stddef.h>

#include "common/buf.h"

/* printf into a capped buffer; 0 or -1 (cap or memory). */
/* Shortest decimal text that reads back as x. */
void cairn__plan_num(char *out, size_t len, double x);

#endif
