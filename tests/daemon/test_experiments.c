/* Many experiments in one ldpb-aggregator (docs/aggregator.md, "Experiments"), against the real
 * binary with sealed frames built here: 100 experiments from one config file, each served and
 * counted apart; an unknown experiment is LDPB_ENOEXPERIMENT; a report naming another experiment
 * than its assignment's is refused and counted nowhere; a restart (SIGTERM or kill -9) restores
 * every experiment with its counts; operator commands (create, list, show, stop) from an admin key
 * only, durable before the reply; SIGHUP starts new experiments and refuses a forbidden change,
 * leaving the running experiment as it was. */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "harness.h"
#include "ldpb/err.h"
#include "ldpb/keyfile.h"

#define N_EXP 100

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static const char service[] = "assignment_ttl_s = 600\n"
                              "log_level = info\n";

/* One experiment's section: ldp-ts-b, 3 arms, linear, the given epsilon. */
static void section(char *buf, size_t cap, size_t *n, const char *name, double eps)
{
    int r = snprintf(buf + *n, cap - *n,
                     "[experiment %s]\npolicy = ldp-ts-b\narms = 3\nmechanism = linear\n"
                     "epsilon = %g\n",
                     name, eps);
    assert_true(r > 0 && (size_t)r < cap - *n);
    *n += (size_t)r;
}

typedef struct asg {
    uint8_t id[LDPB_WIRE_ID_MAX];
    size_t id_len;
    uint32_t arm;
    int mechanism;
    double epsilon;
} asg;

/* An assignment in `exp` (NULL: no field); 0, or the Error's code (or -1 for anything else). */
static int assign_in(dt_client *c, const char *exp, asg *a)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__AssignRequest ar = LDPB__V1__ASSIGN_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_ASSIGN_REQUEST;
    env.assign_request = &ar;
    ar.experiment = (char *)exp;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    int rc = -1;
    if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ASSIGNMENT) {
        const Ldpb__V1__Assignment *m = r.env->assignment;
        memcpy(a->id, m->assignment_id.data, m->assignment_id.len);
        a->id_len = m->assignment_id.len;
        a->arm = m->arm;
        a->mechanism = (int)m->mechanism;
        a->epsilon = m->epsilon;
        rc = 0;
    } else if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        rc = (int)r.env->error->code;
    }
    dt_reply_clear(&r);
    return rc;
}

/* The report of `a` (bit 1) naming experiment `exp`; the reply in *r. */
static void report_in(dt_client *c, const char *exp, const asg *a, dt_reply *r)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__Report rep = LDPB__V1__REPORT__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_REPORT;
    env.report = &rep;
    rep.assignment_id.data = (uint8_t *)a->id;
    rep.assignment_id.len = a->id_len;
    rep.mechanism = (Ldpb__V1__Mechanism)a->mechanism;
    rep.epsilon = a->epsilon;
    rep.value_case = LDPB__V1__REPORT__VALUE_BIT;
    rep.bit = 1;
    rep.experiment = (char *)exp;
    assert_int_equal(dt_client_call(c, &env, r), 0);
}

static void assert_acked(dt_client *c, const char *exp, const asg *a)
{
    dt_reply r;
    report_in(c, exp, a, &r);
    int dup = -1;
    assert_true(dt_is_ack(&r, &dup));
    assert_int_equal(dup, 0);
    dt_reply_clear(&r);
}

/* Reports counted in `exp` (Status.experiment names it), or -1 with *code the Error's code. */
static int64_t status_in(dt_client *c, const char *exp, uint32_t *code)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__StatusRequest sr = LDPB__V1__STATUS_REQUEST__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_STATUS_REQUEST;
    env.status_request = &sr;
    sr.experiment = (char *)exp;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    int64_t n = -1;
    if (r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_STATUS) {
        if (exp) {
            assert_non_null(r.env->status->experiment);
            assert_string_equal(r.env->status->experiment, exp);
        }
        n = (int64_t)r.env->status->reports;
    } else if (code && r.kind == 1 && r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        *code = r.env->error->code;
    }
    dt_reply_clear(&r);
    return n;
}

static void exp_name(char *buf, size_t cap, size_t i)
{
    snprintf(buf, cap, "e%03zu", i);
}

static void start_config(dt_daemon *d, const char *body)
{
    assert_int_equal(dt_daemon_init(d), 0);
    assert_int_equal(dt_daemon_write_config(d, body), 0);
    assert_int_equal(dt_daemon_start(d, NULL, NULL), 0);
}

/* A config of N_EXP sections (no default) plus `more`. */
static char *hundred(const char *more)
{
    size_t cap = 64 * 1024, n = 0;
    char *buf = malloc(cap);
    assert_non_null(buf);
    n += (size_t)snprintf(buf, cap, "%s", service);
    for (size_t i = 0; i < N_EXP; i++) {
        char name[16];
        exp_name(name, sizeof name, i);
        section(buf, cap, &n, name, 1.0);
    }
    snprintf(buf + n, cap - n, "%s", more ? more : "");
    return buf;
}

static void test_hundred_served_and_restored(void **state)
{
    (void)state;
    dt_daemon d;
    char *conf = hundred(NULL);
    start_config(&d, conf);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    /* experiment i gets i % 3 + 1 reports */
    for (size_t i = 0; i < N_EXP; i++) {
        char name[16];
        exp_name(name, sizeof name, i);
        for (size_t j = 0; j < i % 3 + 1; j++) {
            asg a;
            assert_int_equal(assign_in(&c, name, &a), 0);
            assert_int_equal(a.id[0], 4); /* a named experiment's token */
            assert_acked(&c, name, &a);
        }
    }
    for (size_t i = 0; i < N_EXP; i++) {
        char name[16];
        exp_name(name, sizeof name, i);
        assert_int_equal(status_in(&c, name, NULL), (int64_t)(i % 3 + 1));
    }
    /* no default experiment in this configuration; and an unknown name */
    asg a;
    uint32_t code = 0;
    assert_int_equal(assign_in(&c, NULL, &a), LDPB_ENOEXPERIMENT);
    assert_int_equal(assign_in(&c, "nope", &a), LDPB_ENOEXPERIMENT);
    assert_int_equal(status_in(&c, "nope", &code), -1);
    assert_int_equal(code, LDPB_ENOEXPERIMENT);
    /* kill -9, then a restart restores every experiment with its counts */
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_reconnect(&c, d.ipc_url, 5000), 0);
    for (size_t i = 0; i < N_EXP; i++) {
        char name[16];
        exp_name(name, sizeof name, i);
        assert_int_equal(status_in(&c, name, NULL), (int64_t)(i % 3 + 1));
    }
    /* and they keep serving */
    assert_int_equal(assign_in(&c, "e042", &a), 0);
    assert_acked(&c, "e042", &a);
    assert_int_equal(status_in(&c, "e042", NULL), 1 + 42 % 3 + 1);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
    free(conf);
}

/* The rows of `--export-csv [--experiment exp]`, and those with a report; every row's last field
 * is its experiment (`exp` when given). */
static void export_rows(const dt_daemon *d, const char *exp, size_t *rows, size_t *reported)
{
    char path[256], err[512], line[1024];
    snprintf(path, sizeof path, "%s/log.csv", d->dir);
    unlink(path);
    const char *args[] = {"--config", d->conf, "--export-csv", path, exp ? "--experiment" : NULL,
                          exp,        NULL};
    assert_int_equal(dt_daemon_run(d, args, err, sizeof err), 0);
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    assert_non_null(fgets(line, sizeof line, f));
    assert_non_null(strstr(line, ",reported_at_ms,experiment\n"));
    *rows = *reported = 0;
    while (fgets(line, sizeof line, f)) {
        char *last = strrchr(line, ',');
        assert_non_null(last);
        if (exp) {
            char want[80];
            snprintf(want, sizeof want, ",%s\n", exp);
            assert_string_equal(last, want);
        }
        *last = '\0';
        last = strrchr(line, ',');
        (*rows)++;
        *reported += last[1] != '\0';
    }
    fclose(f);
}

/* A report naming another experiment than its assignment's: LDPB_ENOTFOUND naming the
 * experiment, counted nowhere; the right one is then accepted. */
static void test_report_in_other_experiment(void **state)
{
    (void)state;
    dt_daemon d;
    char conf[2048];
    size_t n = (size_t)snprintf(conf, sizeof conf,
                                "%spolicy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 1\n",
                                service);
    section(conf, sizeof conf, &n, "alpha", 1.0);
    section(conf, sizeof conf, &n, "beta", 1.0);
    start_config(&d, conf);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    asg a, b;
    assert_int_equal(assign_in(&c, "alpha", &a), 0);
    assert_int_equal(assign_in(&c, NULL, &b), 0);
    assert_int_equal(b.id[0], 3); /* default: version 3, as always */
    dt_reply r;
    report_in(&c, "beta", &a, &r);
    assert_true(dt_is_error(&r, 1, LDPB_ENOTFOUND));
    assert_non_null(strstr(r.reason, "not issued in experiment 'beta'"));
    dt_reply_clear(&r);
    report_in(&c, NULL, &a, &r); /* absent: default */
    assert_true(dt_is_error(&r, 1, LDPB_ENOTFOUND));
    assert_non_null(strstr(r.reason, "not issued in experiment 'default'"));
    dt_reply_clear(&r);
    report_in(&c, "alpha", &b, &r); /* default's assignment in alpha */
    assert_true(dt_is_error(&r, 1, LDPB_ENOTFOUND));
    assert_non_null(strstr(r.reason, "not issued in experiment 'alpha'"));
    dt_reply_clear(&r);
    report_in(&c, "gamma", &a, &r); /* unknown experiment */
    assert_true(dt_is_error(&r, 1, LDPB_ENOEXPERIMENT));
    assert_non_null(strstr(r.reason, "gamma"));
    dt_reply_clear(&r);
    assert_int_equal(status_in(&c, "alpha", NULL), 0);
    assert_int_equal(status_in(&c, "beta", NULL), 0);
    assert_int_equal(status_in(&c, NULL, NULL), 0);
    assert_acked(&c, "alpha", &a);
    assert_acked(&c, "default", &b); /* "default" spelt out is the default experiment */
    assert_int_equal(status_in(&c, "alpha", NULL), 1);
    assert_int_equal(status_in(&c, "beta", NULL), 0);
    assert_int_equal(status_in(&c, NULL, NULL), 1);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    /* the export of one experiment: its decisions only, the experiment named last */
    size_t rows = 0, reported = 0;
    export_rows(&d, "alpha", &rows, &reported);
    assert_int_equal(rows, 1);
    assert_int_equal(reported, 1);
    export_rows(&d, NULL, &rows, &reported);
    assert_int_equal(rows, 2);
    assert_int_equal(reported, 2);
    char path[256], err[512];
    snprintf(path, sizeof path, "%s/x.csv", d.dir);
    const char *args[] = {"--config", d.conf, "--export-csv", path, "--experiment", "gamma", NULL};
    assert_int_not_equal(dt_daemon_run(&d, args, err, sizeof err), 0);
    assert_non_null(strstr(err, "gamma"));
    dt_daemon_cleanup(&d);
}

/* ---- operator commands ------------------------------------------------------------------- */

typedef struct cmd_result {
    uint32_t code; /* 0: an ExperimentReply */
    char reason[1100];
    size_t n;
    char names[8][70];
    int running[8];
    uint64_t reports[8];
    double epsilon[8];
} cmd_result;

static void command(dt_client *c, int op, const char *name, const char *config, cmd_result *out)
{
    Ldpb__V1__Envelope env = LDPB__V1__ENVELOPE__INIT;
    Ldpb__V1__ExperimentCommand cmd = LDPB__V1__EXPERIMENT_COMMAND__INIT;
    env.body_case = LDPB__V1__ENVELOPE__BODY_EXPERIMENT_COMMAND;
    env.experiment_command = &cmd;
    cmd.op = (Ldpb__V1__ExperimentCommand__Op)op;
    cmd.name = (char *)name;
    cmd.config = (char *)config;
    dt_reply r;
    assert_int_equal(dt_client_call(c, &env, &r), 0);
    memset(out, 0, sizeof *out);
    assert_int_equal(r.kind, 1);
    if (r.env->body_case == LDPB__V1__ENVELOPE__BODY_ERROR) {
        out->code = r.env->error->code;
        snprintf(out->reason, sizeof out->reason, "%s", r.reason);
    } else {
        assert_int_equal(r.env->body_case, LDPB__V1__ENVELOPE__BODY_EXPERIMENT_REPLY);
        const Ldpb__V1__ExperimentReply *rep = r.env->experiment_reply;
        out->n = rep->n_experiments;
        for (size_t i = 0; i < rep->n_experiments && i < 8; i++) {
            snprintf(out->names[i], sizeof out->names[i], "%s", rep->experiments[i]->name);
            out->running[i] = rep->experiments[i]->running;
            out->reports[i] = rep->experiments[i]->reports;
            out->epsilon[i] = rep->experiments[i]->epsilon;
        }
    }
    dt_reply_clear(&r);
}

#define OP_CREATE LDPB__V1__EXPERIMENT_COMMAND__OP__CREATE
#define OP_LIST   LDPB__V1__EXPERIMENT_COMMAND__OP__LIST
#define OP_SHOW   LDPB__V1__EXPERIMENT_COMMAND__OP__SHOW
#define OP_STOP   LDPB__V1__EXPERIMENT_COMMAND__OP__STOP

static const char rt_settings[] =
    "policy = ldp-ts-b\narms = 4\nmechanism = linear\nepsilon = 0.5\n";

static void test_operator_commands(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    dt_client op, other;
    assert_int_equal(dt_client_open(&op, d.ipc_url, d.server.pk, 5000), 0);
    assert_int_equal(dt_client_open(&other, d.ipc_url, d.server.pk, 5000), 0);
    char admins[256], conf[1024];
    snprintf(admins, sizeof admins, "%s/admins", d.dir);
    assert_int_equal(ldpb_keyfile_write(admins, LDPB_KEYFILE_PUBLIC, op.kp.pk, 0, NULL), LDPB_OK);
    snprintf(conf, sizeof conf,
             "%sadmin_list = %s\npolicy = ldp-ts-b\narms = 3\nmechanism = linear\nepsilon = 1\n",
             service, admins);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);

    cmd_result res;
    /* another key: refused, nothing created */
    command(&other, OP_CREATE, "rt1", rt_settings, &res);
    assert_int_equal(res.code, LDPB_EAUTH);
    command(&other, OP_LIST, NULL, NULL, &res);
    assert_int_equal(res.code, LDPB_EAUTH);
    command(&op, OP_LIST, NULL, NULL, &res);
    assert_int_equal(res.code, 0);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.names[0], "default");
    asg a;
    assert_int_equal(assign_in(&other, "rt1", &a), LDPB_ENOEXPERIMENT);
    /* the operator creates it; it serves at once */
    command(&op, OP_CREATE, "rt1", rt_settings, &res);
    assert_int_equal(res.code, 0);
    assert_int_equal(res.n, 1);
    assert_string_equal(res.names[0], "rt1");
    assert_true(res.running[0]);
    assert_true(res.epsilon[0] == 0.5);
    assert_int_equal(assign_in(&other, "rt1", &a), 0);
    assert_true(a.epsilon == 0.5);
    assert_acked(&other, "rt1", &a);
    /* bad settings, bad name: refused with the reason */
    command(&op, OP_CREATE, "rt2", "policy = no-such-policy\narms = 3\n", &res);
    assert_int_equal(res.code, LDPB_EINVAL);
    command(&op, OP_CREATE, "Bad Name", rt_settings, &res); /* the wire check refuses it */
    assert_int_equal(res.code, LDPB_EPROTO);
    /* another key cannot stop it */
    command(&other, OP_STOP, "rt1", NULL, &res);
    assert_int_equal(res.code, LDPB_EAUTH);
    assert_int_equal(assign_in(&other, "rt1", &a), 0);
    /* the operator can */
    command(&op, OP_STOP, "rt1", NULL, &res);
    assert_int_equal(res.code, 0);
    assert_false(res.running[0]);
    assert_int_equal(res.reports[0], 1);
    assert_int_equal(assign_in(&other, "rt1", &a), LDPB_ENOEXPERIMENT);
    /* a stop is durable: after kill -9 it is still stopped, with its count */
    assert_int_equal(dt_daemon_signal_wait(&d, SIGKILL), 128 + SIGKILL);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    assert_int_equal(dt_client_reconnect(&op, d.ipc_url, 5000), 0);
    assert_int_equal(dt_client_reconnect(&other, d.ipc_url, 5000), 0);
    command(&op, OP_SHOW, "rt1", NULL, &res);
    assert_int_equal(res.code, 0);
    assert_false(res.running[0]);
    assert_int_equal(res.reports[0], 1);
    assert_int_equal(assign_in(&other, "rt1", &a), LDPB_ENOEXPERIMENT);
    /* created again with other settings: refused; with the same: resumed with its state */
    command(&op, OP_CREATE, "rt1", "policy = ldp-ts-b\narms = 4\nmechanism = linear\nepsilon = 2\n",
            &res);
    assert_int_equal(res.code, LDPB_ESTATE);
    assert_non_null(strstr(res.reason, "stop it and start one under a new name"));
    command(&op, OP_CREATE, "rt1", rt_settings, &res);
    assert_int_equal(res.code, 0);
    assert_true(res.running[0]);
    assert_int_equal(status_in(&other, "rt1", NULL), 1);
    assert_int_equal(assign_in(&other, "rt1", &a), 0);
    /* unknown names */
    command(&op, OP_SHOW, "nope", NULL, &res);
    assert_int_equal(res.code, LDPB_ENOEXPERIMENT);
    dt_client_close(&op);
    dt_client_close(&other);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- SIGHUP ------------------------------------------------------------------------------ */

static int log_has(const dt_daemon *d, const char *what)
{
    FILE *f = fopen(d->log, "r");
    if (!f)
        return 0;
    char line[2048];
    int found = 0;
    while (!found && fgets(line, sizeof line, f))
        found = strstr(line, what) != NULL;
    fclose(f);
    return found;
}

static void test_sighup(void **state)
{
    (void)state;
    dt_daemon d;
    char conf[4096];
    size_t n = (size_t)snprintf(conf, sizeof conf, "%s", service);
    section(conf, sizeof conf, &n, "keep", 1.0);
    section(conf, sizeof conf, &n, "gone", 1.0);
    start_config(&d, conf);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    asg a;
    assert_int_equal(assign_in(&c, "keep", &a), 0);
    assert_acked(&c, "keep", &a);
    /* the file now changes keep's epsilon (forbidden), drops gone, adds fresh */
    n = (size_t)snprintf(conf, sizeof conf, "%s", service);
    section(conf, sizeof conf, &n, "keep", 2.0);
    section(conf, sizeof conf, &n, "fresh", 1.0);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    assert_int_equal(kill(d.pid, SIGHUP), 0);
    /* The reload's last line, logged once every experiment is started, stopped or refused (the
     * refusal's line comes first, before gone is stopped and fresh started: waiting for any
     * "reload: " line raced with the rest of the reload). */
    static const char done[] = "reload: 1 experiments started or resumed, 1 stopped, "
                               "1 changes refused";
    for (long end = ldpb_test_now_ms() + 30000L * LDPB_TEST_SLOWDOWN;
         !log_has(&d, done) && ldpb_test_now_ms() < end;)
        sleep_ms(20);
    assert_true(log_has(&d, done));
    assert_true(log_has(&d, "stop it and start one under a new name"));
    /* keep runs as it was: epsilon 1, its count */
    assert_int_equal(assign_in(&c, "keep", &a), 0);
    assert_true(a.epsilon == 1.0);
    assert_int_equal(status_in(&c, "keep", NULL), 1);
    assert_acked(&c, "keep", &a);
    /* fresh serves, gone is stopped */
    assert_int_equal(assign_in(&c, "fresh", &a), 0);
    assert_acked(&c, "fresh", &a);
    assert_int_equal(assign_in(&c, "gone", &a), LDPB_ENOEXPERIMENT);
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

/* ---- /metrics --------------------------------------------------------------------------- */

static void http_get(int port, const char *path, char *buf, size_t cap)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    struct sockaddr_in a;
    memset(&a, 0, sizeof a);
    a.sin_family = AF_INET;
    a.sin_port = htons((uint16_t)port);
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    char req[128];
    int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\n\r\n", path);
    assert_int_equal(write(fd, req, (size_t)n), n);
    size_t len = 0;
    ssize_t r;
    while (len + 1 < cap && (r = read(fd, buf + len, cap - 1 - len)) > 0)
        len += (size_t)r;
    buf[len] = '\0';
    close(fd);
}

/* Labelled series for the first metrics_experiments_max experiments by declaration, the rest
 * summed under _other; the unlabelled totals sum all. */
static void test_metrics_labels(void **state)
{
    (void)state;
    dt_daemon d;
    assert_int_equal(dt_daemon_init(&d), 0);
    int mport = dt_free_port();
    char conf[4096];
    size_t n =
        (size_t)snprintf(conf, sizeof conf,
                         "%smetrics = 127.0.0.1:%d\nmetrics_experiments_max = 2\n", service, mport);
    const char *names[4] = {"zeta", "alpha", "mid", "last"}; /* declaration order, not sorted */
    for (size_t i = 0; i < 4; i++)
        section(conf, sizeof conf, &n, names[i], 1.0);
    assert_int_equal(dt_daemon_write_config(&d, conf), 0);
    assert_int_equal(dt_daemon_start(&d, NULL, NULL), 0);
    dt_client c;
    assert_int_equal(dt_client_open(&c, d.ipc_url, d.server.pk, 5000), 0);
    for (size_t i = 0; i < 4; i++)
        for (size_t j = 0; j <= i; j++) {
            asg a;
            assert_int_equal(assign_in(&c, names[i], &a), 0);
            assert_acked(&c, names[i], &a);
        }
    static char http[256 * 1024];
    http_get(mport, "/metrics", http, sizeof http);
    assert_non_null(strstr(http, "\nldpb_reports_total 10\n"));
    assert_non_null(strstr(http, "\nldpb_experiments 4\n"));
    assert_non_null(strstr(http, "\nldpb_experiment_reports_total{experiment=\"zeta\"} 1\n"));
    assert_non_null(strstr(http, "\nldpb_experiment_reports_total{experiment=\"alpha\"} 2\n"));
    assert_non_null(strstr(http, "\nldpb_experiment_reports_total{experiment=\"_other\"} 7\n"));
    assert_non_null(strstr(http, "\nldpb_experiment_running{experiment=\"_other\"} 2\n"));
    assert_null(strstr(http, "experiment=\"mid\""));
    assert_null(strstr(http, "experiment=\"last\""));
    dt_client_close(&c);
    assert_int_equal(dt_daemon_signal_wait(&d, SIGTERM), 0);
    dt_daemon_cleanup(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hundred_served_and_restored),
        cmocka_unit_test(test_report_in_other_experiment),
        cmocka_unit_test(test_operator_commands),
        cmocka_unit_test(test_sighup),
        cmocka_unit_test(test_metrics_labels),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
