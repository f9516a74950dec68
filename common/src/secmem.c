/* Secret memory with a leak-checker root region in sanitized builds (ldpb/secmem.h). */
#include "ldpb/secmem.h"

#include <sodium.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define LDPB_LSAN_ROOTS 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define LDPB_LSAN_ROOTS 1
#endif

#ifdef LDPB_LSAN_ROOTS
#include <sanitizer/lsan_interface.h>
#endif

void *ldpb_secmem_alloc(size_t size)
{
    void *p = sodium_malloc(size);
#ifdef LDPB_LSAN_ROOTS
    if (p)
        __lsan_register_root_region(p, size);
#endif
    return p;
}

void ldpb_secmem_free(void *p, size_t size)
{
    if (!p)
        return;
#ifdef LDPB_LSAN_ROOTS
    __lsan_unregister_root_region(p, size);
#else
    (void)size;
#endif
    sodium_free(p);
}
