/* The subcommands of the ldpb command. Each parses its own arguments (argv[0] is the
 * subcommand name), prints to stdout/stderr, and returns the process exit status. */
#ifndef LDPB_TOOLS_COMMANDS_H
#define LDPB_TOOLS_COMMANDS_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "cli_text.h"
#include "ldpb/client.h"
#include "ldpb/err.h"

int cmd_privatize(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_loadgen(int argc, char **argv);
int cmd_relay(int argc, char **argv);
int cmd_experiment(int argc, char **argv);

/* An aggregator's status as `ldpb status` fetches it (cmd_status.c, through ldpb_client_status);
 * `ldpb loadgen` uses it to check the arm count and the report total. */
#define TOOL_KEY_BYTES         32u
#define TOOL_URL_MAX           127u
#define TOOL_STATUS_STRING_MAX 1024u

/* Asks the aggregator at `url` for the status of `experiment` (NULL: `default`) with one attempt
 * of at most timeout_ms, under the client secret key `client_sk` (32 bytes; NULL: a fresh
 * ephemeral key). Errors, with one line
 * for the user in `msg`: LDPB_EINVAL (a URL nanomsg refuses), LDPB_ETIMEDOUT (no reply),
 * LDPB_ECRYPTO (a wrong server key), LDPB_EAUTH (a key not on the allow-list), the aggregator's
 * Error code, LDPB_EPROTO, LDPB_ETRANSPORT, LDPB_ENOMEM. On success release *out with
 * ldpb_status_clear. */
ldpb_err tool_status_fetch(const char *url, const uint8_t server_pk[TOOL_KEY_BYTES],
                           const uint8_t *client_sk, const char *experiment, uint32_t timeout_ms,
                           ldpb_status *out, char *msg, size_t cap);

/* Loads the aggregator's public key file for --server-key; prints the problem (prefixed by
 * `prog`) and returns 1 if it cannot. */
int tool_load_server_key(const char *prog, const char *path, uint8_t pk[TOOL_KEY_BYTES]);

/* Loads a client secret key file given as option `opt` (--client-key; `ldpb experiment`'s
 * --key); prints the problem (prefixed by `prog`) and returns 1 if it cannot. */
int tool_load_client_key(const char *prog, const char *opt, const char *path,
                         uint8_t sk[TOOL_KEY_BYTES]);

/* 1 if `s` is an experiment name: 1..64 bytes of [a-z0-9._-]. */
int tool_experiment_name_valid(const char *s);

/* Writes `s` (valid UTF-8) as a JSON string: quotes, backslashes and control bytes escaped. */
void tool_json_string(FILE *f, const char *s);

/* `ldpb sim --preset shariff2018` (cmd_sim_ctx.c): the contextual experiment, called by cmd_sim
 * with its parsed options. Returns the exit status. */
struct simplan_opts;
int cmd_sim_ctx(const struct simplan_opts *o, const char *seed_text, unsigned threads,
                const char *out, int no_plots, int quiet, int argc, char **argv);

#endif
