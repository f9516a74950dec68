/* The link-time allocator wrappers behind alloc_fail.h. The state is process-wide globals on
 * purpose: test-only support code, shared by the wrappers and the test that arms them (atomic, as
 * some tests allocate from several threads). */
#include "alloc_fail.h"

#include <stdatomic.h>
#include <stddef.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t n, size_t size);
void *__real_realloc(void *p, size_t size);
void __real_free(void *p);
void *__wrap_malloc(size_t size);
void *__wrap_calloc(size_t n, size_t size);
void *__wrap_realloc(void *p, size_t size);
void __wrap_free(void *p);

static atomic_long fail_at = -1; /* -1: never fail */
static atomic_long calls;        /* calls since the last arm */
static atomic_long live;

void alloc_fail_arm(long n)
{
    atomic_store(&calls, 0);
    atomic_store(&fail_at, n);
}

void alloc_fail_disarm(void)
{
    atomic_store(&fail_at, -1);
}

long alloc_fail_calls(void)
{
    return atomic_load(&calls);
}

long alloc_fail_live(void)
{
    return atomic_load(&live);
}

static int should_fail(void)
{
    long at = atomic_load(&fail_at);
    return atomic_fetch_add(&calls, 1) == at && at >= 0;
}

void *__wrap_malloc(size_t size)
{
    if (should_fail())
        return NULL;
    void *p = __real_malloc(size);
    atomic_fetch_add(&live, p != NULL);
    return p;
}

void *__wrap_calloc(size_t n, size_t size)
{
    if (should_fail())
        return NULL;
    void *p = __real_calloc(n, size);
    atomic_fetch_add(&live, p != NULL);
    return p;
}

void *__wrap_realloc(void *p, size_t size)
{
    if (should_fail())
        return NULL;
    void *q = __real_realloc(p, size);
    atomic_fetch_add(&live, p == NULL && q != NULL);
    return q;
}

void __wrap_free(void *p)
{
    atomic_fetch_sub(&live, p != NULL);
    __real_free(p);
}
