/* gate.c — what a request needs before its body is read (cairn__api_gate,
 * api.h), from its route's entry (who may call it, its body cap, whether it
 * spends an anonymous token: server/api/routes.h): the admin and volunteer
 * checks at the headers, and the per-address and per-volunteer token
 * buckets (server/conn/ratelimit.h) answered 429 with the wait. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/limits.h"
#include "server/api/api.h"

static double mono_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A key for client address ip (IPv4 as its number, else a hash). */
static uint64_t address_key(const char *ip) {
  struct in_addr a;
  if (inet_pton(AF_INET, ip, &a) == 1)
    return (uint64_t)ntohl(a.s_addr) + 1;
  uint64_t h = 1469598103934665603ULL;
  for (; *ip; ip++)
    h = (h ^ (uint8_t)*ip) * 1099511628211ULL;
  return h | (1ULL << 63);
}

/* The wait of a 429 in rs: Retry-After in whole seconds (at least 1), and
 * Cairn-Retry-After-Ms to the millisecond for Cairn workers. */
static void retry_in(cairn__resp *rs, double wait) {
  rs->retry_after = wait < 1 ? 1 : (int)(wait + 0.999);
  rs->retry_after_ms = (int)(wait * 1000 + 0.999);
}

/* Takes one of ip's anonymous tokens: 1, or 0 with a 429 in rs. */
int cairn__api_anonymous_ok(cairn_master *m, const char *ip, cairn__resp *rs) {
  double wait = m->anon && ip && *ip ? cairn__rl_take(m->anon, address_key(ip), mono_seconds()) : 0;
  if (wait <= 0)
    return 1;
  cairn__api_failf(rs, CAIRN_ERATE,
                   "too many registrations, failed authentications or anonymous reads "
                   "from %s; retry in "
                   "%.0f s",
                   ip, wait < 1 ? 1 : wait);
  retry_in(rs, wait);
  return 0;
}

/* Takes one of volunteer v's request tokens (cfg.volunteer_per_minute): 1,
 * or 0 with a 429 in rs. O(1): one probe window of the fixed table. */
static int volunteer_rate_ok(cairn_master *m, int64_t v, cairn__resp *rs) {
  double wait = m->vrate ? cairn__rl_take(m->vrate, (uint64_t)v, mono_seconds()) : 0;
  if (wait <= 0)
    return 1;
  cairn__api_failf(rs, CAIRN_ERATE, "volunteer %lld is over %d requests a minute; retry in %.3f s",
                   (long long)v, m->cfg.volunteer_per_minute, wait);
  retry_in(rs, wait);
  return 0;
}

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
      return volunteer_rate_ok(m, v, rs);
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
