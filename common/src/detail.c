/* The detail-message formatter (ldpb/detail.h). */
#include <stdarg.h>
#include <stdio.h>

#include "ldpb/detail.h"

void ldpb_detailf(char *out, size_t size, const char *fmt, ...)
{
    if (!out || size == 0)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(out, size, fmt, ap);
    va_end(ap);
}
