/* The client networking API: what an app calls to take part in an experiment. Ask the aggregator
 * which arm to use (ldpb_client_assign), act on it, observe the reward, and report it
 * (ldpb_client_report): the client rescales the reward to [0,1], clips it, privatizes it with the
 * mechanism and epsilon the assignment names, charges the device's privacy ledger, and sends only
 * the privatized value, sealed to the pinned server key, over nanomsg. docs/client.md is the guide.
 *
 * The client is the privacy authority on the device: it refuses an assignment whose epsilon is
 * above its own cap or that its ledger cannot afford, before the app acts on it; it privatizes an
 * assignment's reward once (a retry, even after a restart, resends the same value); and it never
 * sends a reward that was not privatized unless the app opted in to RAW (central) mode.
 *
 * Thread safety: a handle is not thread-safe; use one per thread, or serialize calls on it.
 * Different handles share nothing and may run in parallel, but two handles must not use one
 * ledger file (the ledger's lock refuses the second with LDPB_ESTATE): an app with several threads
 * either serializes one handle behind a mutex, or gives each thread its own ledger file and
 * budget (the device's total is then the sum of the budgets). */
#ifndef LDPB_CLIENT_H
#define LDPB_CLIENT_H

#include <stddef.h>
#include <stdint.h>

#include "ldpb/err.h"
#include "ldpb/export.h"
#include "ldpb/ledger.h"
#include "ldpb/mech.h"
#include "ldpb/rng.h"

#ifdef __cplusplus
extern "C" {
#endif

/* X25519 keys (the server's public key, the client's secret key) are 32 bytes. */
#define LDPB_CLIENT_KEY_BYTES 32

/* Bounds on the options (inclusive) and the defaults ldpb_client_opts_init fills in. */
#define LDPB_CLIENT_TIMEOUT_DEFAULT_MS  2000u
#define LDPB_CLIENT_TIMEOUT_MAX_MS      3600000u /* one hour per attempt */
#define LDPB_CLIENT_ATTEMPTS_DEFAULT    3u
#define LDPB_CLIENT_ATTEMPTS_MAX        100u
#define LDPB_CLIENT_EPSILON_CAP_DEFAULT 1.0
#define LDPB_CLIENT_URL_MAX             127u /* bytes, as nanomsg allows */
#define LDPB_CLIENT_CONTEXT_MAX         256u /* values in a context vector */
/* Reports the on-disk queue holds at most (opts.queue_path), and per batch frame at most. */
#define LDPB_CLIENT_QUEUE_MAX 4096u
#define LDPB_CLIENT_BATCH_MAX 512u

typedef struct ldpb_client_opts {
    /* The aggregator's endpoint, "tcp://host:port" or "ipc://path"; copied. Required. */
    const char *server_url;
    /* The aggregator's public key, pinned: replies sealed under any other key are refused.
     * Required (all zeros means unset); ldpb_client_opts_load_server_key reads the key file
     * `ldpb keygen` writes (aggregator.pub). */
    uint8_t server_public_key[LDPB_CLIENT_KEY_BYTES];
    /* NULL (default): the handle generates an ephemeral keypair. A deployment whose aggregator
     * keeps an allow-list of client keys must pass a persistent secret key here (32 bytes, e.g.
     * loaded from `ldpb keygen`'s client.key with ldpb_keyfile_load_secret); it is copied at
     * ldpb_client_new, so the caller may wipe its copy right after. */
    const uint8_t *client_secret_key;
    /* The device's privacy ledger file, created if missing. NULL (default) makes an in-memory
     * ledger, for simulations only: it forgets every spend when the handle is freed. A real
     * device must give a path, so the budget and the one-value-per-assignment rule survive
     * restarts. */
    const char *ledger_path;
    /* Used only when the ledger is created (an existing file keeps the values it was created
     * with); defaults from ldpb_ledger_opts_init: lifetime budget 100, per-report cap 10. */
    double lifetime_budget;
    double per_report_cap;
    /* The largest per-report epsilon this client accepts, (0, LDPB_EPSILON_MAX]; an assignment
     * asking for more is refused with LDPB_EBUDGET. Default LDPB_CLIENT_EPSILON_CAP_DEFAULT. */
    double epsilon_cap;
    /* 0 (default): an assignment with mechanism RAW (central or non-private mode, which sends the
     * reward itself) is refused with LDPB_EBUDGET. Nonzero: RAW assignments are accepted, and the
     * aggregator then sees this device's rescaled, clipped reward; only set this if the app
     * trusts the aggregator with it. */
    int allow_raw;
    /* The app's reward range: rewards are rescaled from [reward_lo, reward_hi] to [0,1] and
     * clipped. Both finite, reward_lo < reward_hi; default [0, 1]. */
    double reward_lo;
    double reward_hi;
    /* How long one attempt waits for its reply, [1, LDPB_CLIENT_TIMEOUT_MAX_MS]; default
     * LDPB_CLIENT_TIMEOUT_DEFAULT_MS. */
    uint32_t timeout_ms;
    /* Attempts per call, [1, LDPB_CLIENT_ATTEMPTS_MAX]; default LDPB_CLIENT_ATTEMPTS_DEFAULT. A
     * call can take up to timeout_ms * max_attempts. */
    uint32_t max_attempts;
    /* NULL (default): privacy noise comes from a system RNG the handle owns. Tests and
     * simulations may inject a seeded generator; it is borrowed (it must outlive the handle and
     * must not be used by another thread meanwhile) and drives privacy noise only. */
    ldpb_rng *rng;
    /* NULL (default): no report queue. A path: the device's report queue file, created when
     * first needed (docs/client.md, "The report queue"). Reports queued with
     * ldpb_client_queue_report, and reports whose ldpb_client_report (or _report_and_assign)
     * got no answer, wait there, at most LDPB_CLIENT_QUEUE_MAX of them, with the value already
     * privatized, until ldpb_client_flush delivers them in batches; it survives restarts. Like
     * the ledger file, one handle at a time (a lock on queue_path.lock: a second handle's
     * ldpb_client_new gets LDPB_ESTATE). */
    const char *queue_path;
    /* Nonzero with queue_path NULL: the queue lives in memory only and is lost with the handle,
     * as the in-memory ledger; for simulations and load generators only. */
    int queue_in_memory;
    /* The ledger's delta budget (ldpb_ledger_opts): used when the ledger is created, or to give a
     * delta budget to a ledger that has none. Default 0: the local contextual mode's reports,
     * which spend a delta, are refused with LDPB_EBUDGET until the app sets one. */
    double lifetime_delta;
    double per_report_delta_cap;
    /* NULL (default): the dialer of server_url's scheme (nanomsg's REQ socket, which connects in
     * the background through nanomsg's own threads). Otherwise a transport by name: "nanomsg",
     * or "sp", the native dialer, which speaks the same wire over a socket driven by the calling
     * thread alone (no thread hand-offs: less CPU per request, docs/client.md "Transports"); an
     * unknown name is LDPB_EINVAL at ldpb_client_new. Not copied: a string literal, or one that
     * outlives ldpb_client_new. */
    const char *transport;
} ldpb_client_opts;

/* The mechanism an assignment asks for. Values equal ldpb_mech_kind where they overlap and the
 * wire's Mechanism enum. */
typedef enum ldpb_client_mech {
    LDPB_CLIENT_MECH_LINEAR = 1,         /* Bernoulli, linear (CTB): reports a bit */
    LDPB_CLIENT_MECH_QUADRATIC = 2,      /* Bernoulli, quadratic with curvature kappa: a bit */
    LDPB_CLIENT_MECH_EXPONENTIAL = 3,    /* Bernoulli, exponential: a bit */
    LDPB_CLIENT_MECH_LAPLACE = 4,        /* discrete Laplace noise on a grid: a real */
    LDPB_CLIENT_MECH_RAW = 5,            /* central / non-private: the reward itself, epsilon 0 */
    LDPB_CLIENT_MECH_GAUSSIAN_STATS = 6, /* local contextual mode: (x, y) statistics with
                                            discrete Gaussian noise, (epsilon, delta) */
} ldpb_client_mech;

/* An assignment as ldpb_client_assign fills it: a plain value the app may copy or store (with the
 * ledger's record of it, a report after a restart resends what was sent before). */
typedef struct ldpb_assignment {
    uint8_t id[LDPB_ASSIGNMENT_ID_MAX]; /* opaque, unique, chosen by the aggregator */
    size_t id_len;                      /* 1..LDPB_ASSIGNMENT_ID_MAX */
    uint32_t arm;                       /* the variant to use */
    ldpb_client_mech mechanism;
    double epsilon;          /* per-report epsilon, (0, LDPB_EPSILON_MAX]; 0 for RAW */
    double kappa;            /* QUADRATIC's curvature in [-1, 1] (LDPB_KAPPA_DEFAULT if the
                                aggregator sent none); 0 for the other mechanisms */
    uint64_t expires_at_ms;  /* ms since the Unix epoch on the aggregator's clock */
    double propensity;       /* probability the policy chose this arm, (0, 1] */
    uint64_t policy_version; /* 0 if the aggregator sent none */
    /* GAUSSIAN_STATS (ldpb_client_assign_local) only, 0 otherwise: the mechanism the report must
     * use, as the aggregator sent it: the dimension d, the delta per report, the feature norm
     * bound L and the reward bound B. */
    uint32_t local_d;
    double local_delta;
    double local_feature_norm;
    double local_reward_bound;
    /* The experiment the assignment was issued in (docs/client.md, "Experiments"): "" (or
     * "default") for the experiment "default", which is what ldpb_client_assign asks in; else the
     * name given to ldpb_client_assign_in. Every report of the assignment names it to the
     * aggregator (and nothing at all for "default", so an aggregator older than experiments
     * serves it as before). */
    char experiment[LDPB_EXPERIMENT_NAME_MAX + 1];
} ldpb_assignment;

typedef struct ldpb_client ldpb_client;

/* Fills `opts` with the defaults above; server_url and server_public_key are left unset. */
LDPB_API void ldpb_client_opts_init(ldpb_client_opts *opts);

/* Reads a public key file ("ldpb-public-key-v1 HEX", as `ldpb keygen` writes aggregator.pub)
 * into opts->server_public_key. Errors: LDPB_EINVAL (NULL, or a secret key file), LDPB_EIO
 * (cannot read the file), LDPB_ECORRUPT (not a public key file). */
LDPB_API ldpb_err ldpb_client_opts_load_server_key(ldpb_client_opts *opts, const char *path);

/* Reads a secret key file ("ldpb-secret-key-v1 HEX", as `ldpb keygen` writes client.key) into
 * `sk`, for opts.client_secret_key in allow-list deployments. The file must be readable by its
 * owner only. The caller owns `sk` and wipes it (e.g. sodium_memzero) once ldpb_client_new has
 * copied it. Errors: LDPB_EINVAL (NULL, or an owner-only public key file), LDPB_EIO (cannot read),
 * LDPB_ECRYPTO (group or others may access the file), LDPB_ECORRUPT (not a key file). */
LDPB_API ldpb_err ldpb_client_load_secret_key(const char *path, uint8_t sk[32]);

/* Validates `opts`, opens (or creates) the ledger and the report queue, derives the sealing key
 * and connects the transport's dialer (the connection itself is made later: a missing server
 * shows up as LDPB_ETIMEDOUT on the first call, not here). Errors: LDPB_EINVAL (NULL, no URL or a
 * URL the transport refuses, an unknown opts.transport, unset server key, NaN options, a ledger
 * or queue path that is not
 * a regular file: a symbolic link, a FIFO, a device, a directory), LDPB_ERANGE (an option outside
 * its bounds, including the ledger's), LDPB_ECRYPTO (an invalid server key, libsodium failed), the
 * ledger's and the queue's errors (LDPB_EIO, LDPB_ECORRUPT, LDPB_ESTATE if another handle holds
 * the ledger file or the queue file), LDPB_ETRANSPORT, LDPB_ENOMEM. On success *out is owned by the
 * caller: ldpb_client_free(). */
LDPB_API ldpb_err ldpb_client_new(ldpb_client **out, const ldpb_client_opts *opts);

/* Closes the socket and the ledger, wipes the keys and buffers and frees the handle. Accepts
 * NULL. */
LDPB_API void ldpb_client_free(ldpb_client *c);

/* Asks the aggregator for an assignment (with an optional context vector of at most
 * LDPB_CLIENT_CONTEXT_MAX finite values; NULL if n_context is 0) and fills *out, zeroed on error.
 * Spends nothing. Refused before the app can act on it: LDPB_EBUDGET (epsilon above epsilon_cap,
 * RAW without allow_raw, more than the ledger allows), LDPB_EEXPIRED. Also LDPB_EINVAL, LDPB_ERANGE
 * (arguments), LDPB_ETIMEDOUT, LDPB_EPROTO (a bad reply), LDPB_ECRYPTO (no authentic reply: wrong
 * pinned key?), the aggregator's Error code (its reason in ldpb_client_errmsg), LDPB_ETRANSPORT,
 * LDPB_ENOMEM. Retries and which replies count: docs/client.md. */
LDPB_API ldpb_err ldpb_client_assign(ldpb_client *c, const double *context, size_t n_context,
                                     ldpb_assignment *out);

/* Experiments (docs/client.md, "Experiments"): one aggregator may run many experiments, each a
 * bandit problem of its own, named by 1 to LDPB_EXPERIMENT_NAME_MAX bytes of [a-z0-9._-]. The
 * device's ledger is one budget across all of them: whichever experiment asks, a report is
 * charged to the same lifetime budget, and LDPB_EBUDGET comes once it is spent.
 *
 * ldpb_client_assign_in is ldpb_client_assign in experiment `experiment` (NULL, "" or "default":
 * the experiment "default", exactly as ldpb_client_assign, with no experiment on the wire); the
 * assignment records it in out->experiment and its report names it. Errors: those of
 * ldpb_client_assign; LDPB_EINVAL for a name that is not an experiment name; LDPB_ENOEXPERIMENT
 * when the aggregator runs no such experiment (unknown or stopped; its reason in
 * ldpb_client_errmsg), which is final for the call (not retried). */
LDPB_API ldpb_err ldpb_client_assign_in(ldpb_client *c, const char *experiment,
                                        const double *context, size_t n_context,
                                        ldpb_assignment *out);

/* Rescales, clips and privatizes `reward` for `a` through the ledger (durable before it is
 * released; an assignment privatized before, even before a restart, gets the stored value and
 * `reward` is ignored), sends it, and waits for the Ack. RAW (allow_raw only) sends the unit-scale
 * reward and charges nothing. Errors: those of assign; LDPB_EINVAL (a bad reward or assignment);
 * LDPB_EBUDGET, LDPB_EEXPIRED before any draw (nothing spent or sent); LDPB_ESTATE (the ledger
 * holds this id with another mechanism or epsilon); LDPB_ETIMEDOUT keeps the spend: report again
 * later and the same value is resent. */
LDPB_API ldpb_err ldpb_client_report(ldpb_client *c, const ldpb_assignment *a, double reward);

/* One round trip per report: reports `reward` for `a` exactly as ldpb_client_report does
 * (same privatization through the ledger, same value on every resend) and, in the same request,
 * asks for the next assignment (context as for ldpb_client_assign), which fills *next when the
 * call returns LDPB_OK. *acked (may be NULL) is set to 1 once the aggregator has acknowledged
 * the report (durable, or a duplicate), 0 otherwise; an error with *acked == 1 means the report
 * is done but no next assignment came (the aggregator's reason, or the client refused it as
 * ldpb_client_assign would: LDPB_EBUDGET...), so ask with ldpb_client_assign later. An
 * aggregator that does not know the request (LDPB_ENOTSUP, an older one) gets a Report and an
 * AssignRequest instead, transparently, and the handle remembers it. Errors: those of
 * ldpb_client_report and ldpb_client_assign. */
LDPB_API ldpb_err ldpb_client_report_and_assign(ldpb_client *c, const ldpb_assignment *a,
                                                double reward, const double *context,
                                                size_t n_context, ldpb_assignment *next,
                                                int *acked);

/* Privatizes `reward` for `a` through the ledger as ldpb_client_report does (durably charged
 * first; a stored value is reused) and puts the report in the on-disk queue without sending
 * anything; ldpb_client_flush sends it. A report already queued is not queued twice. Errors:
 * LDPB_EINVAL (no queue_path, bad arguments), LDPB_EBUSY (the queue holds
 * LDPB_CLIENT_QUEUE_MAX reports: flush first; nothing was charged), LDPB_EIO (the queue file
 * could not be written: the charge stands, the value is in the ledger, queue it again later),
 * and the privatization errors of ldpb_client_report. */
LDPB_API ldpb_err ldpb_client_queue_report(ldpb_client *c, const ldpb_assignment *a, double reward);

/* What ldpb_client_flush did. */
typedef struct ldpb_flush_stats {
    size_t acked;      /* acknowledged as durable */
    size_t duplicates; /* acknowledged as already counted (a resend whose ack was lost) */
    size_t refused;    /* refused for good (unknown or expired assignment, invalid): dropped */
    size_t left;       /* still queued: no answer, or the aggregator said retry later */
} ldpb_flush_stats;

/* Sends the queued reports in batch frames of at most `max_batch` reports (0 means
 * LDPB_CLIENT_BATCH_MAX; more is LDPB_ERANGE), one round trip per frame, and removes each report
 * the aggregator answered for good; the queue file is rewritten after every frame. Values are
 * sent exactly as queued: nothing is privatized again. Stops at the first frame without an
 * answer (LDPB_ETIMEDOUT, the reports stay queued). *stats (may be NULL) says what happened.
 * Errors: LDPB_EINVAL (NULL, no queue_path), those of the exchange, LDPB_EIO (queue file). */
LDPB_API ldpb_err ldpb_client_flush(ldpb_client *c, size_t max_batch, ldpb_flush_stats *stats);

/* Reports waiting in the queue (0 without a queue_path). */
LDPB_API size_t ldpb_client_queued(const ldpb_client *c);
/* The report of an assignment of a contextual policy (linucb, jdp-linucb-*; docs/client.md,
 * "Contextual policies"): as ldpb_client_report, and it resends `features`, the n_features = d
 * values of row a->arm of the context given to ldpb_client_assign, exactly (the assignment id
 * binds them: other values are refused with LDPB_ENOTFOUND). Only the assigned arm's features
 * are sent. Also LDPB_EINVAL (NULL or non-finite features), LDPB_ERANGE (more than 64). */
LDPB_API ldpb_err ldpb_client_report_context(ldpb_client *c, const ldpb_assignment *a,
                                             const double *features, size_t n_features,
                                             double reward);

/* The local contextual mode (docs/client.md, "Local contextual mode"; aggregator policy
 * ldp-linucb-gaussian): the device sends neither its features nor its reward in the clear.
 *
 * ldpb_client_assign_local asks for the aggregator's current model (an AssignRequest with no
 * context), chooses the arm on the device among the app's n_actions feature rows (`features`,
 * row-major, d finite values each, every row of norm at most the aggregator's bound L) with the
 * LinUCB rule of ldpb/ctxmodel.h, and fills *out: arm is the device's choice, propensity 1/ties
 * (the number of rows that attained the maximum). Spends nothing. Refused before the app acts:
 * LDPB_EBUDGET (the assignment's epsilon above epsilon_cap, its delta above the ledger's
 * per-report delta cap, or more than the ledger has left: a device without a delta budget
 * cannot take part), LDPB_EINVAL (d other than the aggregator's, bad arguments), LDPB_ERANGE (a
 * row longer than L, d or n_actions out of range), LDPB_EPROTO (an aggregator that answers with
 * anything but a local model), and the errors of ldpb_client_assign. */
#define LDPB_CLIENT_LOCAL_ACTIONS_MAX 4096u
LDPB_API ldpb_err ldpb_client_assign_local(ldpb_client *c, const double *features,
                                           uint32_t n_actions, uint32_t d, ldpb_assignment *out);

/* ldpb_client_assign_local in experiment `experiment` (as ldpb_client_assign_in). */
LDPB_API ldpb_err ldpb_client_assign_local_in(ldpb_client *c, const char *experiment,
                                              const double *features, uint32_t n_actions,
                                              uint32_t d, ldpb_assignment *out);

/* Reports round `a` of the local contextual mode: x_chosen is the chosen row (d values) and
 * `reward` is rescaled to [0, 1] with reward_lo/reward_hi and clipped, as for every report. The
 * statistics of (x, reward) are privatized on the device with the assignment's mechanism through
 * the ledger, which charges its epsilon and delta (durable before release; a repeat, even after
 * a restart, resends the stored values and draws nothing), and only they are sent. Local reports
 * go one at a time: ldpb_client_report, _report_and_assign, _queue_report and the report queue
 * refuse a GAUSSIAN_STATS assignment (LDPB_EINVAL), and one that got no answer is not queued (call
 * again: the same values are resent). Errors: those of ldpb_client_report; LDPB_EINVAL (not a
 * local assignment, d other than the assignment's, NULL or non-finite values), LDPB_ERANGE
 * (x_chosen longer than the assignment's L: nothing spent). */
LDPB_API ldpb_err ldpb_client_report_local(ldpb_client *c, const ldpb_assignment *a,
                                           const double *x_chosen, uint32_t d, double reward);

/* Bytes of the strings of a status (without the terminating NUL), as the wire allows. */
#define LDPB_CLIENT_STATUS_STRING_MAX 1024u

/* One arm of an aggregator's status. A has_ flag of 0 means the policy has no such value (no
 * pulls yet, or a policy without intervals); the value is then 0. */
typedef struct ldpb_arm_status {
    uint32_t arm;
    uint64_t pulls; /* reports the policy has counted for the arm */
    int has_estimate;
    double estimate; /* the policy's estimate of the mean reward on [0, 1] (de-biased) */
    int has_ci;
    double ci_low, ci_high; /* the policy's confidence interval; may reach outside [0, 1] */
    int has_active;
    int active; /* 0 once an elimination policy has dropped the arm */
} ldpb_arm_status;

/* An aggregator's status as ldpb_client_status fills it. The caller owns the struct; `arms` is
 * allocated by the library: release it with ldpb_status_clear. */
typedef struct ldpb_status {
    char policy[LDPB_CLIENT_STATUS_STRING_MAX + 1]; /* the policy's name, e.g. "ldp-ts-b" */
    char model[LDPB_CLIENT_STATUS_STRING_MAX + 1];  /* "local", "central" or "nonprivate" */
    uint64_t reports;     /* reports counted (each durable before it was acknowledged) */
    uint64_t assignments; /* assignments issued */
    uint32_t n_arms;
    ldpb_arm_status *arms; /* n_arms entries in the order the aggregator sent them, or NULL */
    /* The experiment the status is of, as the aggregator named it; "" if it named none (an
     * aggregator older than experiments, whose only experiment is "default"). */
    char experiment[LDPB_EXPERIMENT_NAME_MAX + 1];
} ldpb_status;

/* Asks the aggregator for its status (one StatusRequest, with the retries and reply rules of
 * ldpb_client_assign) and fills *out, zeroed on error. Spends nothing and touches no ledger
 * entry. Strings from the network have control bytes replaced by '?'. An aggregator with an
 * allow-list answers only a handle created with an allowed client_secret_key. Errors: LDPB_EINVAL
 * (NULL), LDPB_ETIMEDOUT, LDPB_EPROTO (a bad reply), LDPB_ECRYPTO (no authentic reply: wrong pinned
 * key?), LDPB_EAUTH (the client key is not on the allow-list), the aggregator's Error code,
 * LDPB_ETRANSPORT, LDPB_ENOMEM. On success release *out with ldpb_status_clear. */
LDPB_API ldpb_err ldpb_client_status(ldpb_client *c, ldpb_status *out);

/* The status of experiment `experiment` (NULL, "" or "default": as ldpb_client_status, with no
 * experiment on the wire). Errors: those of ldpb_client_status; LDPB_EINVAL for a name that is
 * not an experiment name; LDPB_ENOEXPERIMENT (final) when the aggregator runs no such
 * experiment. */
LDPB_API ldpb_err ldpb_client_status_in(ldpb_client *c, const char *experiment, ldpb_status *out);

/* One experiment as an operator command reports it. Strings from the network have control bytes
 * replaced by '?' and are cut to the buffers (at a character boundary); a field the aggregator
 * did not send is "" or 0. */
typedef struct ldpb_experiment_info {
    char name[LDPB_EXPERIMENT_NAME_MAX + 1];
    char policy[64];
    char mode[16]; /* "local", "central" or "nonprivate" */
    uint32_t arms;
    char mechanism[32];
    double epsilon;
    double delta;
    uint64_t horizon;
    uint64_t reports, assignments;
    int running; /* 0: stopped (its state is kept) */
} ldpb_experiment_info;

typedef enum ldpb_experiment_op {
    LDPB_EXPERIMENT_CREATE = 1, /* start `name` with the settings `config` ("key = value" lines) */
    LDPB_EXPERIMENT_LIST = 2,   /* every experiment, running or stopped, in name order */
    LDPB_EXPERIMENT_SHOW = 3,   /* experiment `name` */
    LDPB_EXPERIMENT_STOP = 4,   /* stop `name`: it serves no more, its state is kept */
} ldpb_experiment_op;

/* Sends an operator command (docs/client.md, "Operator commands"); the handle's client key must be
 * on the aggregator's admin list. `name` is required for CREATE, SHOW and STOP and must be NULL
 * for LIST; `config` (at most LDPB_CLIENT_CONFIG_MAX bytes of UTF-8) is required for CREATE and
 * must be NULL otherwise. On LDPB_OK *out is a malloc'd array of *n experiments (LIST: every one,
 * fetched page by page when they do not fit one reply; the others: the one named), freed with
 * ldpb_experiment_info_free; *out is NULL and *n 0 on error (and for an empty LIST). Spends
 * nothing. Errors: LDPB_EINVAL (NULL, a bad name, a missing or superfluous argument, an unknown
 * op), LDPB_ERANGE (config too long), the aggregator's refusal with its reason in
 * ldpb_client_errmsg (LDPB_EAUTH: the key is not on the admin list; LDPB_ENOEXPERIMENT: no such
 * experiment; LDPB_EINVAL/LDPB_ERANGE: settings refused; LDPB_ESTATE: ...), and the exchange's
 * errors as for ldpb_client_status. */
#define LDPB_CLIENT_CONFIG_MAX 4096u
LDPB_API ldpb_err ldpb_client_experiment(ldpb_client *c, ldpb_experiment_op op, const char *name,
                                         const char *config, ldpb_experiment_info **out, size_t *n);

/* Frees an array from ldpb_client_experiment. Accepts NULL. */
LDPB_API void ldpb_experiment_info_free(ldpb_experiment_info *v);

/* Frees the arms of a status filled by ldpb_client_status and zeroes it. Accepts NULL and a
 * zeroed status; calling it twice is harmless. */
LDPB_API void ldpb_status_clear(ldpb_status *st);

/* One line on the last failed call on this handle ("epsilon 2 above the client's cap 1", the
 * aggregator's reason, the transport's error), or "" if the last call succeeded. Owned by the
 * handle, valid until its next call. */
LDPB_API const char *ldpb_client_errmsg(const ldpb_client *c);

/* This client's public key (the half of the keypair in use), e.g. for an operator's allow-list. */
LDPB_API void ldpb_client_public_key(const ldpb_client *c, uint8_t pk[LDPB_CLIENT_KEY_BYTES]);

/* The handle's ledger, to read the spend (ldpb_ledger_spent, ldpb_ledger_remaining). Borrowed:
 * valid until ldpb_client_free; not to be used while another thread calls into the handle. */
LDPB_API const ldpb_ledger *ldpb_client_ledger(const ldpb_client *c);

/* "linear", "quadratic", "exponential", "laplace", "raw", "gaussian-stats"; "unknown" for other
 * values. */
LDPB_API const char *ldpb_client_mech_name(ldpb_client_mech mech);

#ifdef __cplusplus
}
#endif

#endif
