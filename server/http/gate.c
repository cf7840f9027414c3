/* gate.c — what a request needs before its body is read (cairn__api_gate,
 * api.h), from its route's entry (who may call it, its body cap, whether it
 * spends an anonymous token: server/api/routes.h): the admin and volunteer
 * checks at the headers, and the per-address and per-volunteer token
 * buckets (server/api/rates.c) answered 429 with the wait. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/limits.h"
#include "server/api/api.h"


int cairn__api_gate(cairn_master *m, const cairn__route *r, const char *token,
                    const char *client_ip, cairn__gate *g, cairn__resp *rs) {
  int ok;
  g->max_body = r->max_body;
  g->trusted = cairn__api_is_admin(m, token);
  g->authenticated = g->trusted;
  cairn__req rq = {.method = "", .path = "", .token = token, .client_ip = client_ip};
  rs->fd = -1;
  switch (r->who) {
  case WHO_ADMIN:
    ok = cairn__api_admin(m, &rq, rs);
    break;
  case WHO_READER:
  case WHO_VOLUNTEER: {
    if (r->who == WHO_READER && g->trusted) /* the admin is not rate-limited */
      return 1;
    int64_t v = cairn__api_volunteer(m, &rq, rs);
    if (v) {
      g->authenticated = 1; /* a registered volunteer's token, even over its rate */
      return cairn__api_volunteer_rate_ok(m, v, rs);
    }
    ok = 0;
    break;
  }
  default: /* a registration spends a token, as does each failed authentication and each
            * anonymous read of the standings (GET /v1/stats) */
    return (r->flags & RF_SPEND) || ((r->flags & RF_SPEND_ANON) && !g->trusted)
             ? cairn__api_anonymous_ok(m, client_ip, rs)
             : 1;
  }
  cairn__resp limited = {.fd = -1};
  if (!ok && !cairn__api_anonymous_ok(m, client_ip, &limited)) {
    free(rs->body); /* the 429 replaces the 401 or 403 */
    *rs = limited;
  }
  return ok;
}
