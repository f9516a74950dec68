/* The size of the optional `detail` buffers of common's functions (wire codec, sealed frames, key
 * files, relay frames, the local mode's statistics check) and of the daemon's: one line naming
 * what was wrong and the bound. On its own so that a module can size a detail buffer without
 * depending on the wire codec (ctxstat.c did, while wire.c depends on ctxstat.h). */
#ifndef LDPB_DETAIL_BYTES_H
#define LDPB_DETAIL_BYTES_H

#define LDPB_DETAIL_BYTES 160u

#endif
