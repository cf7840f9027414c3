/* alloc_fail.h — allocation-failure injection for the tests of a build with
 * -DCAIRN_ALLOC_FAIL=ON: the test executable is linked with
 * -Wl,--wrap=malloc,calloc,realloc,strdup,strndup,asprintf, so every such
 * call made by the project's code (its static libraries) goes through
 * alloc_fail.c, and jansson allocates through it too (json_set_alloc_funcs).
 * SQLite, libcurl and libc's own allocations are not counted. */
#ifndef CAIRN_ALLOC_FAIL_H
#define CAIRN_ALLOC_FAIL_H

/* Routes jansson's allocations through the wrapped malloc; call first. */
void alloc_fail_init(void);
/* From now on, the k-th counted allocation (1-based, any thread) fails. */
void alloc_fail_arm(long k);
/* Stops failing; 1 when the armed failure happened, else 0. */
int alloc_fail_disarm(void);

#endif
