/* The one error enum every fallible ldpb function returns. Values are pinned forever and only
 * ever appended, because they travel on the wire and end up in operators' scripts. */
#ifndef LDPB_ERR_H
#define LDPB_ERR_H

#include "ldpb/export.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ldpb_err {
    LDPB_OK = 0,             /* success */
    LDPB_EINVAL = 1,         /* an argument is malformed (NaN, NULL, unknown name, bad syntax) */
    LDPB_ENOMEM = 2,         /* an allocation failed */
    LDPB_ERANGE = 3,         /* an argument is well-formed but outside its allowed range */
    LDPB_ESTATE = 4,         /* the call conflicts with the object's state */
    LDPB_EPROTO = 5,         /* a message violates the wire protocol */
    LDPB_ECRYPTO = 6,        /* a cryptographic operation failed (bad key, forged message) */
    LDPB_ETRANSPORT = 7,     /* the transport failed */
    LDPB_ETIMEDOUT = 8,      /* no answer in time */
    LDPB_EBUDGET = 9,        /* the privacy budget (lifetime or per report) would be exceeded */
    LDPB_EIO = 10,           /* a file could not be read, written or synced */
    LDPB_ECORRUPT = 11,      /* stored data failed validation; it is never silently reset */
    LDPB_EREPLAY = 12,       /* a replayed, reflected or stale message (outside the time window) */
    LDPB_EVERSION = 13,      /* the peer speaks another protocol or frame version */
    LDPB_EAUTH = 14,         /* the client key is not allowed by the server */
    LDPB_ENOTFOUND = 15,     /* the assignment id is unknown */
    LDPB_EEXPIRED = 16,      /* the assignment has expired */
    LDPB_EBUSY = 17,         /* the server is overloaded; retry later */
    LDPB_ENOTSUP = 18,       /* a well-formed request of a kind the peer does not support */
    LDPB_ENOEXPERIMENT = 19, /* the experiment is unknown or stopped */
} ldpb_err;

/* Returns a static, human-readable sentence for any ldpb_err value; never NULL. Values outside
 * the enum yield "unknown error". Thread-safe. */
LDPB_API const char *ldpb_strerror(ldpb_err err);

/* Returns the constant's name ("LDPB_EBUDGET") for logs and metrics labels; never NULL. */
LDPB_API const char *ldpb_errname(ldpb_err err);

#ifdef __cplusplus
}
#endif

#endif
