/* Test harness for the daemon tests: runs the real ldpb-aggregator binary in a temporary state
 * directory with fresh keys, and talks to it over real nanomsg sockets with sealed frames built
 * here from wire.h and seal.h (so malformed and hostile frames can be sent too). */
#ifndef LDPB_TEST_DAEMON_HARNESS_H
#define LDPB_TEST_DAEMON_HARNESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "../support/test_port.h"
#include "ldpb/rng.h"
#include "ldpb/seal.h"
#include "ldpb/wire.h"

typedef struct dt_daemon {
    char dir[128]; /* temporary directory: keys, config, log, state/ */
    char state_dir[192];
    char conf[192];
    char log[192];
    char key[192];
    char ipc_url[256];
    char tcp_url[64];
    ldpb_keypair server;
    pid_t pid;
    char store[512]; /* the store URL written into the config; empty: SQLite (the default) */
} dt_daemon;

/* When the environment has LDPB_TEST_PG_STATE (the state file of tests/support/pg_throwaway.sh)
 * and LDPB_TEST_PG_SCRIPT (that script), dt_daemon_init creates a fresh database on that
 * throwaway PostgreSQL for the daemon and dt_daemon_write_config sets `store` to it: the same
 * test then runs on the PostgreSQL backend. */

/* Creates the directory and the server key (and the database, above). Returns 0 on success. */
int dt_daemon_init(dt_daemon *d);

/* A fresh database `name` ([a-z_][a-z0-9_]*) on the throwaway PostgreSQL of the environment
 * (above): its URL into `url`. 0 on success, -1 without that environment or on failure. */
int dt_pg_database(const char *name, char *url, size_t cap);

/* Runs `sql` (one statement) with psql on the database of `d` (its store URL): the first line it
 * printed into `out` (cap bytes, without the newline). 0 with a line, 1 when psql succeeded and
 * printed none, -1 when it failed. */
int dt_pg_query(const dt_daemon *d, const char *sql, char *out, size_t cap);

/* Writes the config file: listen on ipc + tcp (a free port), state_dir, key, store (above), then
 * `extra`
 * (more "key = value" lines, may be NULL). */
int dt_daemon_write_config(dt_daemon *d, const char *extra);

/* How long dt_daemon_start waits for a daemon to answer: 30 s, more in a sanitizer build. */
#define DT_START_MS (30000L * LDPB_TEST_SLOWDOWN)

/* Starts the daemon with --config plus `args` (NULL-terminated, may be NULL) and waits until
 * it answers a request (up to DT_START_MS). Returns 0 when ready, -1 if it exited or hung
 * (then d->pid is 0 and the exit status is in *status if not NULL). */
int dt_daemon_start(dt_daemon *d, const char *const *args, int *status);

/* Runs the daemon to completion with `args` (no config unless given) and returns its exit
 * status (WEXITSTATUS, or 128 + signal), stderr captured into `err` (cap bytes). */
int dt_daemon_run(const dt_daemon *d, const char *const *args, char *err, size_t cap);

/* Sends `sig`, waits for the exit and returns WEXITSTATUS (or 128 + signal). */
int dt_daemon_signal_wait(dt_daemon *d, int sig);

/* Removes the temporary directory (recursively). */
void dt_daemon_cleanup(dt_daemon *d);

/* Exit status of a pid. */
int dt_wait_status(pid_t pid);

typedef struct dt_client {
    int sock;
    ldpb_keypair kp;
    ldpb_seal_key key;
    uint8_t server_pk[LDPB_KEY_BYTES];
    ldpb_rng *rng;
    uint64_t next_id;
} dt_client;

/* A REQ client with a fresh keypair, connected to `url`, receive timeout `timeout_ms`. */
int dt_client_open(dt_client *c, const char *url, const uint8_t server_pk[LDPB_KEY_BYTES],
                   int timeout_ms);
void dt_client_close(dt_client *c);
/* A new socket to `url` for the same client (same keypair and request ids): a daemon restarted
 * on the same URL is then reached at once, and its replies to frames sealed before still open. */
int dt_client_reconnect(dt_client *c, const char *url, int timeout_ms);
/* Packs `env` (its version and request id set, as dt_client_call) and seals it into `frame`
 * without sending it; returns the frame's length, 0 on failure. For replaying captured frames. */
size_t dt_client_frame(dt_client *c, Ldpb__V1__Envelope *env, uint8_t *frame, size_t cap);

/* What came back. */
typedef struct dt_reply {
    int kind;                /* 0 nothing (timeout), 1 sealed Envelope, 2 PLAIN_ERROR, 3 junk */
    uint32_t plain_code;     /* kind 2 */
    char reason[1100];       /* kind 2, or the sealed Error's reason */
    Ldpb__V1__Envelope *env; /* kind 1: free with ldpb_envelope_free */
} dt_reply;

void dt_reply_clear(dt_reply *r);

/* Sends raw bytes and receives one reply (opened with the client's key when sealed). */
int dt_client_raw(dt_client *c, const uint8_t *msg, size_t len, dt_reply *r);

/* Seals `pt` (any bytes) as a request frame into `frame`; returns its length. */
size_t dt_client_seal(dt_client *c, const uint8_t *pt, size_t pt_len, uint8_t *frame, size_t cap);

/* Packs (without the sender's checks), seals and sends `env` (its version and request id are
 * set) and receives the reply. */
int dt_client_call(dt_client *c, Ldpb__V1__Envelope *env, dt_reply *r);

/* Convenience requests. The assignment is copied out of the reply into `a`/`id` (id of up to
 * LDPB_WIRE_ID_MAX bytes, *id_len). Return 0 if the reply was an Assignment. */
int dt_assign(dt_client *c, uint32_t *arm, int *mechanism, double *epsilon, uint8_t *id,
              size_t *id_len);
/* A report with a bit (mechanism Bernoulli) or a real value. Fills `r`. */
int dt_report(dt_client *c, const uint8_t *id, size_t id_len, int mechanism, double epsilon,
              int use_bit, uint32_t bit, double real, dt_reply *r);
/* A status request: pulls per arm into pulls[0..k-1] (up to k). Returns the number of arms or
 * -1. *reports gets the counted reports. */
int dt_status(dt_client *c, uint64_t *pulls, uint32_t k, uint64_t *reports);

/* 1 if `r` is a sealed Error with `code`, or a PLAIN_ERROR with `code`. */
int dt_is_error(const dt_reply *r, int sealed, uint32_t code);
/* 1 if `r` is an Ack; *duplicate gets its flag. */
int dt_is_ack(const dt_reply *r, int *duplicate);

/* A free TCP port on 127.0.0.1, outside the ephemeral range (tests/support/test_port.h). */
int dt_free_port(void);

#endif
