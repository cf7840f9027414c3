/* ratelimit.h — token buckets keyed by a 64-bit key (a client address), in
 * a table of fixed size (private to server/).
 *
 * Each key has a bucket of `burst` tokens refilled at `rate` per second; a
 * request takes one. The table never grows: a new key takes an empty slot
 * of its probe window or else the fullest bucket there (one that is not
 * being limited: a key that is out of tokens keeps its slot while others
 * come and go). Every call is O(PROBE) and takes the table's own mutex;
 * thread-safe.
 */
#ifndef CAIRN_RATELIMIT_H
#define CAIRN_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>

typedef struct cairn__ratelimit cairn__ratelimit;

/* rate > 0 tokens a second, burst >= 1, slots a power of two; NULL when out
 * of memory or on a bad argument. */
cairn__ratelimit *cairn__rl_create(double rate, double burst, size_t slots);
void cairn__rl_destroy(cairn__ratelimit *rl);
/* Takes a token of key's bucket at now (monotonic seconds): 0 when one was
 * there, else the seconds until one will be (> 0; nothing taken). */
double cairn__rl_take(cairn__ratelimit *rl, uint64_t key, double now);

#endif
