/* util.h — small helpers every layer of the server uses: the clock, a
 * string copy, the hashes maps are keyed by. Pure but for the clock. */
#ifndef CAIRN_SERVER_UTIL_H
#define CAIRN_SERVER_UTIL_H

#include <stdint.h>

/* The wall clock, in seconds since the epoch. */
int64_t cairn__now(void);
/* A malloc'd copy of s, or NULL out of memory. */
char *cairn__strdup(const char *s);
/* The first 16 hex digits of a SHA-256 (lowercase hex) as a map key; never 0. */
uint64_t cairn__hash_key(const char *hex);
/* The hash an app name is matched by (FNV-1a; never 0). */
uint64_t cairn__hash_app(const char *name);

#endif
