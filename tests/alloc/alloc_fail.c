/* alloc_fail.c — see alloc_fail.h. The counters are atomics: the core's
 * threads (journal commit, validator) allocate too, and are counted. */
#include "tests/alloc/alloc_fail.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);
char *__real_strndup(const char *s, size_t n);

static atomic_long g_target; /* 0: off */
static atomic_long g_calls;
static atomic_int g_hit;

static int fail_now(void) {
  long t = atomic_load(&g_target);
  if (t == 0)
    return 0;
  if (atomic_fetch_add(&g_calls, 1) + 1 != t)
    return 0;
  atomic_store(&g_hit, 1);
  return 1;
}

void *__wrap_malloc(size_t n) { return fail_now() ? NULL : __real_malloc(n); }
void *__wrap_calloc(size_t n, size_t size) { return fail_now() ? NULL : __real_calloc(n, size); }
void *__wrap_realloc(void *p, size_t n) { return fail_now() ? NULL : __real_realloc(p, n); }
char *__wrap_strdup(const char *s) { return fail_now() ? NULL : __real_strdup(s); }
char *__wrap_strndup(const char *s, size_t n) { return fail_now() ? NULL : __real_strndup(s, n); }

int __wrap_asprintf(char **out, const char *fmt, ...) {
  if (fail_now())
    return -1;
  va_list ap;
  va_start(ap, fmt);
  int n = vasprintf(out, fmt, ap);
  va_end(ap);
  return n;
}

static void *json_alloc(size_t n) { return __wrap_malloc(n); }

void alloc_fail_init(void) { json_set_alloc_funcs(json_alloc, free); }

void alloc_fail_arm(long k) {
  atomic_store(&g_target, 0);
  atomic_store(&g_calls, 0);
  atomic_store(&g_hit, 0);
  atomic_store(&g_target, k);
}

int alloc_fail_disarm(void) {
  atomic_store(&g_target, 0);
  return atomic_load(&g_hit);
}
