/* Allocation failure injection and counting for tests linked with
 * -Wl,--wrap=malloc,--wrap=calloc,--wrap=realloc,--wrap=free: every call the code under test makes
 * goes through the wrappers in alloc_fail.c. Not thread-gated: calls from every thread count. */
#ifndef LDPB_TESTS_ALLOC_FAIL_H
#define LDPB_TESTS_ALLOC_FAIL_H

/* Restarts the call count at 0 and fails call n (0-based) of malloc/calloc/realloc; n < 0 never
 * fails, so alloc_fail_arm(-1) just restarts the count. */
void alloc_fail_arm(long n);
/* Stops failing; the call count keeps running. */
void alloc_fail_disarm(void);
/* malloc/calloc/realloc calls since the last alloc_fail_arm, the failed one included. */
long alloc_fail_calls(void);
/* Successful allocations minus frees of non-NULL pointers, through the wrappers. */
long alloc_fail_live(void);

#endif
