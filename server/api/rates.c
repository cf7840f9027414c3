/* rates.c — the API's rate checks over the token buckets of
 * server/conn/ratelimit.h: one anonymous token of a client address
 * (registrations, failed authentications, anonymous reads of the
 * standings), one request token of a volunteer (the volunteer routes);
 * answered 429 with the wait. Each O(1): one probe window of a fixed table.
 * Called by the gate (server/http/gate.c) at a request's headers and by
 * admission (registration). */
#include <arpa/inet.h>
#include <stdint.h>
#include <time.h>

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
int cairn__api_volunteer_rate_ok(cairn_master *m, int64_t v, cairn__resp *rs) {
  double wait = m->vrate ? cairn__rl_take(m->vrate, (uint64_t)v, mono_seconds()) : 0;
  if (wait <= 0)
    return 1;
  cairn__api_failf(rs, CAIRN_ERATE, "volunteer %lld is over %d requests a minute; retry in %.3f s",
                   (long long)v, m->cfg.volunteer_per_minute, wait);
  retry_in(rs, wait);
  return 0;
}
