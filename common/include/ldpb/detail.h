/* The one formatter of detail messages ("what was wrong", one line) that the modules reporting
 * them share: common's wire codec, sealed frames and key files, and the daemon's server, config
 * and store. Internal to the build: not installed, and not part of the client library's API (the
 * installed library keeps only the LDPB_API functions of its public headers global). */
#ifndef LDPB_DETAIL_H
#define LDPB_DETAIL_H

#include <stddef.h>

#if defined(__GNUC__) || defined(__clang__)
#define LDPB_DETAIL_FORMAT __attribute__((format(printf, 3, 4)))
#else
#define LDPB_DETAIL_FORMAT
#endif

/* Formats into out[0..size) like snprintf, truncating to size - 1 bytes and always terminating
 * (size > 0); does nothing when out is NULL, so a caller may pass an optional detail buffer
 * straight through. Each module fixes its own size with a one-line macro (say()). */
void ldpb_detailf(char *out, size_t size, const char *fmt, ...) LDPB_DETAIL_FORMAT;

#endif
