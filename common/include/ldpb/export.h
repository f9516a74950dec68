/* Symbol visibility for the public API: the shared library hides everything not marked LDPB_API. */
#ifndef LDPB_EXPORT_H
#define LDPB_EXPORT_H

#if defined(__GNUC__) || defined(__clang__)
#define LDPB_API __attribute__((visibility("default")))
#else
#define LDPB_API
#endif

#endif
