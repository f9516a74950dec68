/* The subcommands of the ldpb command. Each parses its own arguments (argv[0] is the
 * subcommand name), prints to stdout/stderr, and returns the process exit status. */
#ifndef LDPB_TOOLS_COMMANDS_H
#define LDPB_TOOLS_COMMANDS_H

#include <stddef.h>
#include <stdint.h>

#include "cli_text.h"
#include "ldpb/err.h"

int cmd_privatize(int argc, char **argv);
int cmd_audit(int argc, char **argv);
int cmd_keygen(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_status(int argc, char **argv);
int cmd_loadgen(int argc, char **argv);

/* An aggregator's Status as `ldpb status` fetches it (cmd_status.c); `ldpb loadgen` uses it to
 * check the arm count and the report total. Strings are cleaned of control bytes. */
#define TOOL_KEY_BYTES         32u
#define TOOL_URL_MAX           127u
#define TOOL_STATUS_STRING_MAX 1024u

typedef struct tool_arm_status {
    uint32_t arm;
    uint64_t pulls;
    int has_estimate, has_ci, has_active, active;
    double estimate, ci_low, ci_high;
} tool_arm_status;

typedef struct tool_status {
    char policy[TOOL_STATUS_STRING_MAX + 1];
    char model[TOOL_STATUS_STRING_MAX + 1];
    uint64_t reports, assignments;
    uint32_t n_arms;
    tool_arm_status *arms; /* owned: tool_status_fini */
} tool_status;

/* Sends one sealed StatusRequest to `url` under a fresh client key and waits at most timeout_ms
 * in all for the Status. Errors, with one line in `msg`: LDPB_EINVAL (a URL nanomsg refuses),
 * LDPB_ETIMEDOUT (no reply), LDPB_ECRYPTO (a wrong server key), the aggregator's Error code,
 * LDPB_EPROTO, LDPB_ETRANSPORT, LDPB_ENOMEM. On success free *out with tool_status_fini. */
ldpb_err tool_status_fetch(const char *url, const uint8_t server_pk[TOOL_KEY_BYTES],
                           uint32_t timeout_ms, tool_status *out, char *msg, size_t cap);
void tool_status_fini(tool_status *st);

/* Loads the aggregator's public key file for --server-key; prints the problem (prefixed by
 * `prog`) and returns 1 if it cannot. */
int tool_load_server_key(const char *prog, const char *path, uint8_t pk[TOOL_KEY_BYTES]);

#endif
