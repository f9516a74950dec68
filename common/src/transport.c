/* The transports by URL scheme (ldpb/transport.h): the one list of schemes the build serves. */
#include <string.h>

#include "ldpb/detail.h"
#include "ldpb/transport.h"
#include "ldpb/wire.h"

#define say(out, ...) ldpb_detailf((out), LDPB_DETAIL_BYTES, __VA_ARGS__)

/* transport_nn.c: nanomsg, both sides */
extern const ldpb_tp_ops ldpb_tp_nn_ops;
/* transport_sp.c: the native SP listener (the REP side of nanomsg's REQ sockets' wire), and
 * its dialer (transport_sp_dial.c, the REQ side), which a caller picks by name */
extern const ldpb_tp_ops ldpb_tp_sp_ops;

/* Which transport listens and which dials, by scheme. Both speak the same wire, so a device or a
 * relay dialing with nanomsg reaches a native listener. */
struct row {
    const char *scheme; /* with its "://" */
    const ldpb_tp_ops *listen;
    const ldpb_tp_ops *dial;
};
static const struct row schemes[] = {
    {"tcp://", &ldpb_tp_sp_ops, &ldpb_tp_nn_ops},
    {"ipc://", &ldpb_tp_sp_ops, &ldpb_tp_nn_ops},
};

static const ldpb_tp_ops *const all_ops[] = {&ldpb_tp_nn_ops, &ldpb_tp_sp_ops};

void ldpb_tp_opts_init(ldpb_tp_opts *o)
{
    memset(o, 0, sizeof *o);
    o->send_timeout_ms = -1;
}

const char *ldpb_tp_schemes(void)
{
    return "tcp://, ipc://";
}

static const struct row *find_row(const char *url, char *detail)
{
    if (!url) {
        say(detail, "no URL");
        return NULL;
    }
    if (strlen(url) > LDPB_TP_URL_MAX) {
        say(detail, "URL longer than %d bytes", LDPB_TP_URL_MAX);
        return NULL;
    }
    for (size_t i = 0; i < sizeof schemes / sizeof schemes[0]; i++)
        if (strncmp(url, schemes[i].scheme, strlen(schemes[i].scheme)) == 0)
            return &schemes[i];
    say(detail, "'%.200s' is not a URL of a transport this build has (%s)", url, ldpb_tp_schemes());
    return NULL;
}

const ldpb_tp_ops *ldpb_tp_find(const char *url, char *detail)
{
    const struct row *r = find_row(url, detail);
    return r ? r->listen : NULL;
}

const ldpb_tp_ops *ldpb_tp_named(const char *name)
{
    for (size_t i = 0; name && i < sizeof all_ops / sizeof all_ops[0]; i++)
        if (strcmp(all_ops[i]->name, name) == 0)
            return all_ops[i];
    return NULL;
}

ldpb_err ldpb_tp_listen_with(ldpb_tp **out, const ldpb_tp_ops *with, const char *const *urls,
                             size_t n, const ldpb_tp_opts *o, char *detail)
{
    if (!out || !o || !urls || n == 0)
        return LDPB_EINVAL;
    *out = NULL;
    const ldpb_tp_ops *ops = ldpb_tp_find(urls[0], detail);
    if (!ops)
        return LDPB_EINVAL;
    for (size_t i = 1; i < n; i++) {
        const ldpb_tp_ops *other = ldpb_tp_find(urls[i], detail);
        if (other != ops) {
            if (other)
                say(detail,
                    "'%.200s' and '%.200s' belong to different transports: one listener each",
                    urls[0], urls[i]);
            return LDPB_EINVAL;
        }
    }
    if (with)
        ops = with;
    ldpb_tp *t = NULL;
    ldpb_err err = ops->listen(&t, o, detail);
    for (size_t i = 0; i < n && !err; i++)
        err = ops->bind(t, urls[i], detail);
    if (err) {
        ldpb_tp_close(t, 0);
        return err;
    }
    *out = t;
    return LDPB_OK;
}

ldpb_err ldpb_tp_listen(ldpb_tp **out, const char *const *urls, size_t n, const ldpb_tp_opts *o,
                        char *detail)
{
    return ldpb_tp_listen_with(out, NULL, urls, n, o, detail);
}

ldpb_err ldpb_tp_dial_with(ldpb_tp **out, const ldpb_tp_ops *with, const char *url,
                           const ldpb_tp_opts *o, char *detail)
{
    if (!out || !o)
        return LDPB_EINVAL;
    *out = NULL;
    const struct row *r = find_row(url, detail);
    if (!r)
        return LDPB_EINVAL;
    return (with ? with : r->dial)->dial(out, url, o, detail);
}

ldpb_err ldpb_tp_dial(ldpb_tp **out, const char *url, const ldpb_tp_opts *o, char *detail)
{
    return ldpb_tp_dial_with(out, NULL, url, o, detail);
}

void ldpb_tp_close(ldpb_tp *t, int linger_ms)
{
    if (t)
        t->ops->close(t, linger_ms);
}
