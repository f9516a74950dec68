/* Text for every ldpb_err. The switches have no default so that -Wswitch-enum -Werror refuses
 * to build when a code is added without its text. */
#include "ldpb/err.h"

const char *ldpb_strerror(ldpb_err err)
{
    switch (err) {
    case LDPB_OK:
        return "success";
    case LDPB_EINVAL:
        return "invalid argument";
    case LDPB_ENOMEM:
        return "out of memory";
    case LDPB_ERANGE:
        return "argument out of range";
    case LDPB_ESTATE:
        return "operation not allowed in the current state";
    case LDPB_EPROTO:
        return "protocol violation";
    case LDPB_ECRYPTO:
        return "cryptographic failure";
    case LDPB_ETRANSPORT:
        return "transport failure";
    case LDPB_ETIMEDOUT:
        return "timed out";
    case LDPB_EBUDGET:
        return "privacy budget exhausted";
    case LDPB_EIO:
        return "input/output error";
    case LDPB_ECORRUPT:
        return "stored data is corrupt";
    case LDPB_EREPLAY:
        return "replayed or stale message";
    case LDPB_EVERSION:
        return "protocol version mismatch";
    case LDPB_EAUTH:
        return "client key not allowed";
    case LDPB_ENOTFOUND:
        return "unknown assignment";
    case LDPB_EEXPIRED:
        return "assignment expired";
    case LDPB_EBUSY:
        return "server busy, retry later";
    case LDPB_ENOTSUP:
        return "request kind not supported by the peer";
    case LDPB_ENOEXPERIMENT:
        return "unknown or stopped experiment";
    }
    return "unknown error";
}

const char *ldpb_errname(ldpb_err err)
{
    switch (err) {
    case LDPB_OK:
        return "LDPB_OK";
    case LDPB_EINVAL:
        return "LDPB_EINVAL";
    case LDPB_ENOMEM:
        return "LDPB_ENOMEM";
    case LDPB_ERANGE:
        return "LDPB_ERANGE";
    case LDPB_ESTATE:
        return "LDPB_ESTATE";
    case LDPB_EPROTO:
        return "LDPB_EPROTO";
    case LDPB_ECRYPTO:
        return "LDPB_ECRYPTO";
    case LDPB_ETRANSPORT:
        return "LDPB_ETRANSPORT";
    case LDPB_ETIMEDOUT:
        return "LDPB_ETIMEDOUT";
    case LDPB_EBUDGET:
        return "LDPB_EBUDGET";
    case LDPB_EIO:
        return "LDPB_EIO";
    case LDPB_ECORRUPT:
        return "LDPB_ECORRUPT";
    case LDPB_EREPLAY:
        return "LDPB_EREPLAY";
    case LDPB_EVERSION:
        return "LDPB_EVERSION";
    case LDPB_EAUTH:
        return "LDPB_EAUTH";
    case LDPB_ENOTFOUND:
        return "LDPB_ENOTFOUND";
    case LDPB_EEXPIRED:
        return "LDPB_EEXPIRED";
    case LDPB_EBUSY:
        return "LDPB_EBUSY";
    case LDPB_ENOTSUP:
        return "LDPB_ENOTSUP";
    case LDPB_ENOEXPERIMENT:
        return "LDPB_ENOEXPERIMENT";
    }
    return "LDPB_EUNKNOWN";
}
