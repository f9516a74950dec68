/* The PostgreSQL backend of the store (store.h, store_be.h), for one or several nodes, through
 * libpq. The
 * tables are SQLite's (schema version AGG_STORE_SCHEMA_VERSION, docs/aggregator.md) in PostgreSQL's
 * types; a batch is one transaction, and a report is acked only after its COMMIT returned with
 * synchronous_commit on (set for the session at every connect), so an acked report is in the
 * server's flushed WAL. The report id is the primary key of `reports`: a resent report finds its
 * row and is answered as a duplicate.
 *
 * Several nodes per database, one process per node name: the connection holds a session advisory
 * lock keyed by the name (pg_try_advisory_lock(namespace, hashtext(name))), so a second
 * ldpb-aggregator of the same name is refused as a second one on the same state_dir is by the
 * lock file. The state directory is still required: it holds that lock file, the identity
 * marker (state_id.h; the identity row is in the database, shared by the nodes) and the replay
 * log. The experiments row holds the state of the first node that wrote it (experiments.node);
 * another node's partial state of an additive experiment is its exp_node_state row
 * (server_cluster.h merges them), and a follower's counts of a sequenced experiment its
 * exp_node_state row with an empty state (no partial: the sequencer writes the one state).
 *
 * A lost connection is taken up again by the next transaction (agg_store_begin): PQreset, the
 * session settings, the advisory lock and the prepared statements again. Until then every
 * transaction fails with LDPB_EIO, which the daemon answers as "busy, resend" (LDPB_EBUSY). A
 * COMMIT whose answer was lost with the connection may have happened: the node's row of `nodes`
 * holds a number written one higher by each of its transactions that changes an experiment's
 * row (its state, or the experiment itself), and after the reconnect the number read tells
 * which (each node its own row: nodes never wait on each other's). If it did happen, the
 * daemon's memory no longer matches the database (the batch was answered "resend" and its
 * policy update dropped), so every later transaction fails until the daemon has reloaded its
 * states from the database (agg_store_needs_reload, agg_store_reloaded), after which the resent
 * reports are acked as duplicates. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "state_id.h"
#include "store_be.h"
#include "store_pg_seq.h" /* issue 19: sequenced experiments */
#include "store_seq.h"

#define say agg_store_say

/* The lock of the open's transaction (pg_advisory_xact_lock), so that nodes starting together
 * create or migrate the schema one after the other: "ldpbaggr" read as a big-endian integer
 * (the one-node lock of version 2, whose daemons still running keep a new node out). */
#define PG_LOCK_KEY "7810475985062594418"
/* The namespace of the node-name locks, pg_try_advisory_lock(PG_NODE_LOCK_NS, hashtext(name)):
 * "ldpb" read as a big-endian integer. */
#define PG_NODE_LOCK_NS "1818521698"
#define PG_LOCK_WAIT_MS 3000
/* The lock around an experiment id's allocation, pg_advisory_xact_lock(PG_EXP_ID_LOCK_NS, 0):
 * "ldex" read as a big-endian integer. Held to the end of the creating transaction, so the next
 * creator's max + 1 (a statement after the lock, so a snapshot after that COMMIT) sees its row:
 * nodes creating experiments at once get distinct ids, and one name twice gives one winner and
 * one "exists", not a failed transaction. */
#define PG_EXP_ID_LOCK_NS "1818518904"
/* The notification of every transaction that adds an experiment or writes its running flag or
 * settings, delivered at its COMMIT to every node's connection (each LISTENs from its session's
 * start): agg_store_experiments_changed. */
#define PG_EXP_CHANNEL "ldpb_experiments"

typedef struct pg_store {
    PGconn *conn;
    char *url;
    uint64_t generation;         /* the committed commit_generation */
    uint64_t pending_generation; /* written by the open transaction */
    int in_doubt;                /* a COMMIT's answer was lost: resolved at the reconnect */
    int stuck;                   /* that COMMIT happened: no more transactions until a reload */
    /* The last failure was the database going away (the connection lost, or the server shutting
     * down or starting up): the daemon answers "busy, resend". Kept until a BEGIN succeeds, so a
     * reconnect between the failure and its answer does not turn it into an I/O error. */
    int unreachable;
    /* The last failure was PostgreSQL ending the transaction to break a deadlock or a
     * serialization conflict (SQLSTATE 40P01, 40001): run again, it may well succeed. Kept until
     * the next BEGIN. */
    int conflict;
    uint64_t stuck_generation; /* the generation it wrote */
    int64_t started_ms;        /* this node's start, for its row of `nodes` */
    int exps_changed;          /* a reconnect: agg_store_experiments_changed says 1 once */
} pg_store;

#define BE(s) ((pg_store *)(s)->be)

/* The tables version 3 adds (store.h): the nodes, the partial states of additive experiments
 * by node, the shared public key. */
#define NODE_TABLES_SQL                                                                            \
    "CREATE TABLE IF NOT EXISTS nodes("                                                            \
    " id BIGSERIAL PRIMARY KEY, name TEXT UNIQUE NOT NULL, started_at_ms BIGINT NOT NULL,"         \
    " last_seen_ms BIGINT NOT NULL, generation BIGINT NOT NULL DEFAULT 0);"                        \
    "CREATE TABLE IF NOT EXISTS exp_node_state("                                                   \
    " experiment BIGINT NOT NULL, node TEXT NOT NULL, state BYTEA NOT NULL,"                       \
    " policy_version BIGINT NOT NULL, reports BIGINT NOT NULL, duplicates BIGINT NOT NULL,"        \
    " assignments BIGINT NOT NULL, committed_at_ms BIGINT NOT NULL,"                               \
    " PRIMARY KEY (experiment, node));"                                                            \
    "CREATE TABLE IF NOT EXISTS node_key("                                                         \
    " id INTEGER PRIMARY KEY CHECK (id = 1), public_key BYTEA NOT NULL,"                           \
    " created_at_ms BIGINT NOT NULL);"

/* Version 3, in PostgreSQL's types; `commit_generation` is this backend's (the file's header
 * says why). Experiment ids are the store's own (max + 1, under PG_EXP_ID_LOCK_NS when several
 * nodes create at once), so the `default` of a fresh state is id 1 whatever an earlier,
 * rolled-back transaction did. */
static const char schema_sql[] =
    "CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS experiments("
    " id BIGINT PRIMARY KEY, name TEXT UNIQUE NOT NULL, settings TEXT NOT NULL,"
    " origin TEXT NOT NULL CHECK (origin IN ('config', 'runtime')),"
    " running INTEGER NOT NULL, state BYTEA, policy_version BIGINT NOT NULL DEFAULT 0,"
    " reports BIGINT NOT NULL DEFAULT 0, duplicates BIGINT NOT NULL DEFAULT 0,"
    " assignments BIGINT NOT NULL DEFAULT 0, created_at_ms BIGINT NOT NULL,"
    " updated_at_ms BIGINT NOT NULL, node TEXT);"
    "CREATE TABLE IF NOT EXISTS commit_generation("
    " id INTEGER PRIMARY KEY CHECK (id = 1), generation BIGINT NOT NULL);"
    "CREATE TABLE IF NOT EXISTS reports("
    " assignment_id BYTEA PRIMARY KEY, experiment BIGINT NOT NULL, arm BIGINT NOT NULL,"
    " mechanism TEXT NOT NULL, epsilon DOUBLE PRECISION NOT NULL,"
    " propensity DOUBLE PRECISION NOT NULL, policy_version BIGINT NOT NULL,"
    " value DOUBLE PRECISION NOT NULL, expires_at_ms BIGINT NOT NULL,"
    " reported_at_ms BIGINT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS reports_by_experiment ON reports(experiment, arm);"
    "CREATE TABLE IF NOT EXISTS decisions("
    " assignment_id BYTEA PRIMARY KEY, experiment BIGINT NOT NULL, arm BIGINT NOT NULL,"
    " mechanism TEXT NOT NULL, epsilon DOUBLE PRECISION NOT NULL,"
    " propensity DOUBLE PRECISION NOT NULL, policy_version BIGINT NOT NULL,"
    " issued_at_ms BIGINT NOT NULL, expires_at_ms BIGINT NOT NULL,"
    " retain_until_ms BIGINT NOT NULL);"
    "CREATE INDEX IF NOT EXISTS decisions_by_retention ON decisions(retain_until_ms);"
    "CREATE INDEX IF NOT EXISTS decisions_by_experiment ON decisions(experiment, expires_at_ms);"
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BYTEA NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms BIGINT NOT NULL);" NODE_TABLES_SQL;

/* Version 2 to 3 (agg_meta_reader.migrate_v2), idempotent so that it also follows a migration
 * from version 1; $1 the node that wrote the stored states. */
static const char migrate_v2_sql[] =
    "ALTER TABLE experiments ADD COLUMN IF NOT EXISTS node TEXT;" NODE_TABLES_SQL;

/* Version 1 to 2 (agg_meta_reader.migrate): the old tables and their keys renamed, the new ones
 * created, the rows copied with the experiment `default` (id 1), the old ones dropped. */
static const char migrate_rename_sql[] =
    "ALTER TABLE reports RENAME TO v1_reports;"
    "ALTER TABLE v1_reports RENAME CONSTRAINT reports_pkey TO v1_reports_pkey;"
    "ALTER TABLE decisions RENAME TO v1_decisions;"
    "ALTER TABLE v1_decisions RENAME CONSTRAINT decisions_pkey TO v1_decisions_pkey;"
    "DROP INDEX IF EXISTS decisions_by_expiry;"
    "CREATE TABLE IF NOT EXISTS identity("
    " id INTEGER PRIMARY KEY CHECK (id = 1), state_id BYTEA NOT NULL,"
    " legacy_tokens INTEGER NOT NULL, created_at_ms BIGINT NOT NULL);";
/* $1 settings (NULL: no row `default`, for empty tables), $2 now. */
static const char migrate_copy_sql[] =
    "INSERT INTO experiments(id, name, settings, origin, running, state, policy_version,"
    " reports, duplicates, assignments, created_at_ms, updated_at_ms)"
    " SELECT 1, 'default', $1::text, 'config', 1, s.policy_state,"
    " coalesce(s.policy_version, 0), coalesce(s.reports, 0), coalesce(s.duplicates, 0),"
    " coalesce(s.assignments, 0), $2::bigint, coalesce(s.updated_at_ms, $2::bigint)"
    " FROM (SELECT 1) AS one LEFT JOIN state s ON s.id = 1 WHERE $1::text IS NOT NULL;";
static const char *const migrate_move_sql[] = {
    "INSERT INTO commit_generation(id, generation)"
    " SELECT 1, generation FROM state WHERE id = 1",
    "INSERT INTO reports(assignment_id, experiment, arm, mechanism, epsilon, propensity,"
    " policy_version, value, expires_at_ms, reported_at_ms)"
    " SELECT assignment_id, 1, arm, mechanism, epsilon, propensity, policy_version, value,"
    " expires_at_ms, reported_at_ms FROM v1_reports",
    "DROP TABLE v1_reports, state",
};
static const char migrate_decisions_sql[] =
    "INSERT INTO decisions(assignment_id, experiment, arm, mechanism, epsilon, propensity,"
    " policy_version, issued_at_ms, expires_at_ms, retain_until_ms)"
    " SELECT assignment_id, 1, arm, mechanism, epsilon, propensity, policy_version,"
    " issued_at_ms, expires_at_ms, expires_at_ms + $1::bigint FROM v1_decisions;";

/* The columns every experiment query reads after id and name, $1 this node's name: its own
 * partial (the experiments row where no other node's state is there, else its exp_node_state
 * row `p`), the count of reports, the sums over every node's partial that the count checks,
 * whether any node has a state, the row's node, whether other nodes hold partials. */
/* clang-format off */
#define OWN(c)                                                                                     \
    "CASE WHEN e.node = $1 OR e.node IS NULL AND p.node IS NULL THEN e." c " ELSE p." c " END"
#define ALL(c) "(e." c " + coalesce(q." c ", 0))::bigint"
#define EXP_COLUMNS                                                                                \
    "nullif(" OWN("state") ", ''::bytea),"                                                         \
    " coalesce(" OWN("policy_version") ", 0), coalesce(" OWN("reports") ", 0),"                   \
    " coalesce(" OWN("duplicates") ", 0), coalesce(" OWN("assignments") ", 0),"                   \
    " (SELECT count(*) FROM reports r WHERE r.experiment = e.id AND r.observed),"                  \
    " " ALL("policy_version") ", " ALL("reports") ","                                             \
    " (e.state IS NOT NULL OR q.n IS NOT NULL)::int, coalesce(e.node, ''),"                       \
    " (coalesce(q.other, false) OR coalesce(e.node <> $1, false))::int"
/* One pass over exp_node_state for every experiment's sums, not a subquery per row. */
#define EXP_FROM                                                                                   \
    " FROM experiments e LEFT JOIN exp_node_state p ON p.experiment = e.id AND p.node = $1"       \
    " LEFT JOIN (SELECT experiment, sum(policy_version) AS policy_version,"                        \
    " sum(reports) AS reports, count(*) AS n, bool_or(node <> $1) AS other"                        \
    " FROM exp_node_state GROUP BY experiment) q ON q.experiment = e.id"
/* clang-format on */

/* The statements of the batches, prepared on every connection. */
static const struct {
    const char *name;
    const char *sql;
} stmts[] = {
    {"add_report",
     "INSERT INTO reports(assignment_id, experiment, arm, mechanism, epsilon, propensity,"
     " policy_version, value, expires_at_ms, reported_at_ms)"
     " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
     " ON CONFLICT (assignment_id) DO NOTHING"},
    {"has_report", "SELECT 1 FROM reports WHERE assignment_id = $1"},
    {"remove_report", "DELETE FROM reports WHERE assignment_id = $1"},
    {"add_decision",
     "INSERT INTO decisions(assignment_id, experiment, arm, mechanism, epsilon, propensity,"
     " policy_version, issued_at_ms, expires_at_ms, retain_until_ms)"
     " VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
     " ON CONFLICT (assignment_id) DO NOTHING"},
    /* The experiments row is the state of one node ($7): the first to write it. */
    {"put_state",
     "UPDATE experiments SET state = $2, policy_version = $3, reports = $4, duplicates = $5,"
     " assignments = $6, updated_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
     " node = $7 WHERE id = $1 AND (node IS NULL OR node = $7)"},
    {"take_state",
     "UPDATE experiments SET state = $2, policy_version = $3, reports = $4, duplicates = $5,"
     " assignments = $6, updated_at_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint,"
     " node = $7 WHERE id = $1"},
    {"row_node", "SELECT coalesce(node, '') FROM experiments WHERE id = $1"},
    /* This node's partial where the experiments row is another node's: the statement after
     * put_state in one pipeline, writing nothing where put_state just made the row this
     * node's ($7) or where there is no such experiment. */
    {"put_partial",
     "INSERT INTO exp_node_state(experiment, node, state, policy_version, reports, duplicates,"
     " assignments, committed_at_ms) SELECT $1, $7, $2, $3, $4, $5, $6,"
     " (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
     " WHERE EXISTS (SELECT 1 FROM experiments WHERE id = $1 AND node <> $7)"
     " ON CONFLICT (experiment, node) DO UPDATE SET state = EXCLUDED.state,"
     " policy_version = EXCLUDED.policy_version, reports = EXCLUDED.reports,"
     " duplicates = EXCLUDED.duplicates, assignments = EXCLUDED.assignments,"
     " committed_at_ms = EXCLUDED.committed_at_ms"},
    /* Each node's generation is its own (the file's header): nodes never wait on each other's
     * rows. */
    {"put_generation",
     "INSERT INTO nodes(name, started_at_ms, last_seen_ms, generation) VALUES ($1, $2,"
     " (extract(epoch FROM clock_timestamp()) * 1000)::bigint, $3) ON CONFLICT (name) DO UPDATE"
     " SET started_at_ms = EXCLUDED.started_at_ms, last_seen_ms = EXCLUDED.last_seen_ms,"
     " generation = EXCLUDED.generation"},
    {"prune_expired",
     "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM decisions"
     " WHERE retain_until_ms < $1 ORDER BY retain_until_ms LIMIT $2)"},
    {"prune_oldest",
     "DELETE FROM decisions WHERE assignment_id IN (SELECT assignment_id FROM decisions"
     " ORDER BY retain_until_ms LIMIT $1)"},
    {"arm_counts", "SELECT arm, count(*) FROM reports WHERE experiment = $1 GROUP BY arm"},
    {"load", "SELECT e.name, " EXP_COLUMNS EXP_FROM " WHERE e.id = $2"},
    {"experiments", "SELECT e.id, e.name, e.settings, e.origin, e.running, " EXP_COLUMNS EXP_FROM
                    " ORDER BY e.id"},
    /* The partials of the other nodes ($1 this one), aged by the database's clock. */
    {"partials",
     "SELECT id, node, state, policy_version, reports, greatest(0, (extract(epoch FROM"
     " clock_timestamp()) * 1000)::bigint - updated_at_ms), duplicates, assignments"
     " FROM experiments WHERE node IS NOT NULL AND node <> $1 AND state IS NOT NULL UNION ALL"
     " SELECT experiment, node, state, policy_version, reports, greatest(0, (extract(epoch FROM"
     " clock_timestamp()) * 1000)::bigint - committed_at_ms), duplicates, assignments"
     " FROM exp_node_state WHERE node <> $1 AND length(state) > 0"},
    /* A follower's counts of a sequenced experiment ($1, node $2): a row of exp_node_state
     * with an empty state, its duplicates added ($3, this transaction's), its assignments
     * replaced ($4, its running total). */
    {"put_counts",
     "INSERT INTO exp_node_state(experiment, node, state, policy_version, reports, duplicates,"
     " assignments, committed_at_ms) SELECT $1, $2, ''::bytea, 0, 0, $3, $4,"
     " (extract(epoch FROM clock_timestamp()) * 1000)::bigint"
     " WHERE EXISTS (SELECT 1 FROM experiments WHERE id = $1)"
     " ON CONFLICT (experiment, node) DO UPDATE SET"
     " duplicates = exp_node_state.duplicates + EXCLUDED.duplicates,"
     " assignments = EXCLUDED.assignments, committed_at_ms = EXCLUDED.committed_at_ms"
     " WHERE length(exp_node_state.state) = 0"},
    /* The other nodes' counts of the experiments $1 (an array), $2 this node (store.h's
     * agg_store_counts): as the sequencer, the followers' count rows; as a follower, the row's
     * (the sequencer's: its reports count every report once) and the followers' count rows
     * but for that of the row's own node (its counts went on in the row), this node's
     * duplicates included, its assignments not (the caller's live count). */
    {"shared_counts",
     "SELECT e.id, coalesce(sum(c.duplicates) FILTER (WHERE c.node <> $2), 0),"
     " coalesce(sum(c.assignments) FILTER (WHERE c.node <> $2), 0),"
     " e.duplicates + coalesce(sum(c.duplicates) FILTER (WHERE c.node IS DISTINCT FROM e.node),"
     " 0), e.assignments + coalesce(sum(c.assignments) FILTER (WHERE c.node IS DISTINCT FROM"
     " e.node AND c.node <> $2), 0) FROM experiments e"
     " LEFT JOIN exp_node_state c ON c.experiment = e.id AND length(c.state) = 0"
     " WHERE e.id = ANY($1::bigint[]) GROUP BY e.id"},
    /* The next id is max + 1, after lock_exp_ids (PG_EXP_ID_LOCK_NS). A name that exists
     * inserts nothing and returns no id, without failing the transaction. */
    {"lock_exp_ids", "SELECT pg_advisory_xact_lock(" PG_EXP_ID_LOCK_NS ", 0)"},
    {"add_experiment",
     "INSERT INTO experiments(id, name, settings, origin, running, created_at_ms, updated_at_ms)"
     " SELECT CASE WHEN $1::bigint > 0 THEN $1::bigint ELSE coalesce(max(id), 0) + 1 END, $2,"
     " $3, $4, 1, $5::bigint, $5::bigint FROM experiments ON CONFLICT (name) DO NOTHING"
     " RETURNING id"},
    {"notify_experiments", "NOTIFY " PG_EXP_CHANNEL},
    {"catalog", "SELECT id, name, settings, origin, running FROM experiments ORDER BY id"},
    {"set_running", "UPDATE experiments SET running = $2 WHERE id = $1"},
    {"set_settings", "UPDATE experiments SET settings = $2 WHERE id = $1"},
};
#define N_STMTS (sizeof stmts / sizeof stmts[0])

/* The server's message without its trailing newline. */
static void pg_reason(PGconn *conn, char *out, size_t cap)
{
    snprintf(out, cap, "%s", conn ? PQerrorMessage(conn) : "out of memory");
    size_t n = strlen(out);
    while (n > 0 && (out[n - 1] == '\n' || out[n - 1] == ' '))
        out[--n] = '\0';
}

/* SQLSTATE class 08 (connection exception) and 57P01..57P03 (the server shutting down, crashed,
 * or not yet accepting connections) mean the database went away, not that the statement failed.
 * So does an error libpq made itself (no result, or none with a SQLSTATE): a statement it could
 * not send. A write to a socket the server closed fails with "server closed the connection
 * unexpectedly" while PQstatus still says CONNECTION_OK, until a read meets the end of the
 * stream (libpq keeps the socket to read the server's last message). */
static int sqlstate_unreachable(const PGresult *r)
{
    if (!r)
        return 1;
    if (PQresultStatus(r) != PGRES_FATAL_ERROR)
        return 0;
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    return !st || !strncmp(st, "08", 2) || !strcmp(st, "57P01") || !strcmp(st, "57P02") ||
           !strcmp(st, "57P03");
}

/* What a failed statement's result says of the failure: the database out of reach, or a
 * transaction ended by PostgreSQL's deadlock or serialization check. */
static void note_failure(pg_store *b, const PGresult *r)
{
    if (sqlstate_unreachable(r)) {
        b->unreachable = 1;
        return;
    }
    const char *st = PQresultErrorField(r, PG_DIAG_SQLSTATE);
    if (st && (!strcmp(st, "40P01") || !strcmp(st, "40001")))
        b->conflict = 1;
}

static ldpb_err pg_fail(agg_store *s, const char *what)
{
    if (PQstatus(BE(s)->conn) != CONNECTION_OK)
        BE(s)->unreachable = 1;
    char why[AGG_STORE_ERRMAX];
    pg_reason(BE(s)->conn, why, sizeof why);
    say(s->errmsg, "%s: %s", what, why[0] ? why : "the database connection is lost");
    return LDPB_EIO;
}

/* Runs `sql` (no parameters); `want` is PGRES_COMMAND_OK or PGRES_TUPLES_OK. The result, kept
 * only when `res` is not NULL, is the caller's to PQclear. */
static ldpb_err run(agg_store *s, const char *sql, ExecStatusType want, PGresult **res,
                    const char *what)
{
    PGresult *r = PQexec(BE(s)->conn, sql);
    if (PQresultStatus(r) != want) {
        note_failure(BE(s), r);
        ldpb_err err = pg_fail(s, what);
        PQclear(r);
        return err;
    }
    if (res)
        *res = r;
    else
        PQclear(r);
    return LDPB_OK;
}

/* Runs a prepared statement; parameters are text except those marked binary (bytea). */
static PGresult *run_prepared(agg_store *s, const char *name, int n, const char *const *values,
                              const int *lengths, const int *formats)
{
    return PQexecPrepared(BE(s)->conn, name, n, values, lengths, formats, 0);
}

static ldpb_err check_result(agg_store *s, PGresult *r, ExecStatusType want, const char *what)
{
    if (PQresultStatus(r) == want)
        return LDPB_OK;
    note_failure(BE(s), r);
    return pg_fail(s, what);
}

/* A text field as an unsigned integer; -1 if it is not one. */
static int field_u64(const PGresult *r, int row, int col, uint64_t *v)
{
    if (PQgetisnull(r, row, col))
        return -1;
    const char *t = PQgetvalue(r, row, col);
    if (t[0] == '-' || t[0] == '\0')
        return -1;
    char *end;
    errno = 0;
    unsigned long long x = strtoull(t, &end, 10);
    if (errno || *end)
        return -1;
    *v = x;
    return 0;
}

/* A one-row, one-column count; -1 on failure. */
static int64_t query_count(agg_store *s, const char *sql, const char *what)
{
    PGresult *r = NULL;
    if (run(s, sql, PGRES_TUPLES_OK, &r, what))
        return -1;
    uint64_t n = 0;
    int64_t out = PQntuples(r) == 1 && field_u64(r, 0, 0, &n) == 0 ? (int64_t)n : -1;
    if (out < 0)
        say(s->errmsg, "%s: not a count", what);
    PQclear(r);
    return out;
}

/* What every connection needs before its first transaction: durable commits, the node name's
 * lock, the statements. LDPB_ESTATE when another process holds the lock of this name. */
static ldpb_err session_setup(agg_store *s)
{
    /* Explicit, whatever the server's or the role's default: an ack waits for the WAL flush. */
    ldpb_err err = run(s,
                       "SET synchronous_commit = on; SET client_min_messages = warning;"
                       " SET lock_timeout = '5s'; LISTEN " PG_EXP_CHANNEL,
                       PGRES_COMMAND_OK, NULL, "setting up the session");
    if (err)
        return err;
    /* The session of a daemon that just exited (or was killed) ends on the server a moment
     * after its socket closes, and only then is its lock released: a restart waits for that,
     * up to PG_LOCK_WAIT_MS. */
    int held = 0;
    for (int waited = 0; !held && waited <= PG_LOCK_WAIT_MS; waited += 50) {
        if (waited > 0)
            nanosleep(&(struct timespec){0, 50 * 1000000L}, NULL);
        const char *v[1] = {s->node};
        PGresult *r = PQexecParams(BE(s)->conn,
                                   "SELECT pg_try_advisory_lock(" PG_NODE_LOCK_NS ", hashtext($1))",
                                   1, NULL, v, NULL, NULL, 0);
        err = check_result(s, r, PGRES_TUPLES_OK, "taking the node's advisory lock");
        held = !err && PQntuples(r) == 1 && strcmp(PQgetvalue(r, 0, 0), "t") == 0;
        PQclear(r);
        if (err)
            return err;
    }
    if (!held) {
        say(s->errmsg,
            "the node name '%s' is in use by another ldpb-aggregator on this database (it holds "
            "the advisory lock (%s, hashtext('%s'))); give each node its own node_name",
            s->node, PG_NODE_LOCK_NS, s->node);
        return LDPB_ESTATE;
    }
    return LDPB_OK;
}

static ldpb_err prepare_all(agg_store *s)
{
    for (size_t i = 0; i < N_STMTS; i++) {
        PGresult *r = PQprepare(BE(s)->conn, stmts[i].name, stmts[i].sql, 0, NULL);
        ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "preparing a statement");
        PQclear(r);
        if (err)
            return err;
    }
    return LDPB_OK;
}

/* This node's committed generation (0 without a row); -1 on failure. */
static int64_t read_generation(agg_store *s)
{
    const char *v[1] = {s->node};
    PGresult *r = PQexecParams(BE(s)->conn, "SELECT generation FROM nodes WHERE name = $1", 1, NULL,
                               v, NULL, NULL, 0);
    if (check_result(s, r, PGRES_TUPLES_OK, "reading the node's generation")) {
        PQclear(r);
        return -1;
    }
    uint64_t g = 0;
    int64_t out = PQntuples(r) == 0 ? 0 : field_u64(r, 0, 0, &g) == 0 ? (int64_t)g : -1;
    PQclear(r);
    return out;
}

/* Takes a lost connection up again (the file's header says what a COMMIT in doubt becomes). */
static ldpb_err reconnect(agg_store *s)
{
    pg_store *b = BE(s);
    PQreset(b->conn);
    if (PQstatus(b->conn) != CONNECTION_OK)
        return pg_fail(s, "reconnecting to the database");
    ldpb_err err = session_setup(s);
    if (!err)
        err = prepare_all(s);
    if (err)
        return err == LDPB_ESTATE ? LDPB_EIO : err;
    if (b->in_doubt) {
        int64_t g = read_generation(s);
        if (g < 0)
            return LDPB_EIO;
        b->in_doubt = 0;
        if ((uint64_t)g != b->generation) {
            b->stuck = 1;
            b->stuck_generation = (uint64_t)g;
        }
    }
    b->unreachable = 0;
    b->exps_changed = 1; /* a notification may have gone with the old session */
    return LDPB_OK;
}

static ldpb_err pg_begin(agg_store *s)
{
    pg_store *b = BE(s);
    /* A connection that failed a statement as unreachable is taken up again even while
     * PQstatus still says CONNECTION_OK (see sqlstate_unreachable). */
    if (!b->stuck && (PQstatus(b->conn) != CONNECTION_OK || b->unreachable) && reconnect(s))
        return LDPB_EIO;
    if (b->stuck) {
        say(s->errmsg,
            "a COMMIT whose answer was lost with the database connection went through: the "
            "states must be reloaded from the database (ldpb-aggregator does it; the reports of "
            "that batch were answered 'resend' and are then acked as duplicates)");
        return LDPB_EIO;
    }
    ldpb_err err = run(s, "BEGIN", PGRES_COMMAND_OK, NULL, "BEGIN");
    if (err && (PQstatus(b->conn) != CONNECTION_OK || b->unreachable)) {
        /* The server went away while the connection was idle: once more on a new one. */
        if (reconnect(s) || b->stuck)
            return LDPB_EIO;
        err = run(s, "BEGIN", PGRES_COMMAND_OK, NULL, "BEGIN");
    }
    if (!err)
        b->unreachable = b->conflict = 0;
    return err;
}

static ldpb_err pg_commit(agg_store *s)
{
    pg_store *b = BE(s);
    PGresult *r = PQexec(b->conn, "COMMIT");
    /* A COMMIT of a failed transaction answers ROLLBACK (COMMAND_OK, tag "ROLLBACK"). */
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK && strcmp(PQcmdStatus(r), "COMMIT") == 0;
    if (!ok)
        note_failure(b, r);
    PQclear(r);
    if (ok) {
        b->generation = b->pending_generation;
        return LDPB_OK;
    }
    if (PQstatus(b->conn) != CONNECTION_OK || b->unreachable)
        b->in_doubt = b->pending_generation != b->generation;
    return pg_fail(s, "COMMIT");
}

static void pg_rollback(agg_store *s)
{
    pg_store *b = BE(s);
    b->pending_generation = b->generation;
    if (PQstatus(b->conn) != CONNECTION_OK || b->unreachable ||
        PQtransactionStatus(b->conn) == PQTRANS_IDLE)
        return; /* the next BEGIN takes up a new connection */
    PQclear(PQexec(b->conn, "ROLLBACK"));
}

static void u64_text(char *buf, size_t cap, uint64_t v)
{
    snprintf(buf, cap, "%" PRIu64, v > (uint64_t)INT64_MAX ? (uint64_t)INT64_MAX : v);
}

/* The text parameters of add_report and add_decision ($1, the id, is binary). */
typedef struct row_params {
    char exp[24], arm[24], eps[32], prop[32], ver[24], val[32], at[24], expires[24], keep[24];
    const char *v[10];
    int len[10], fmt[10];
} row_params;

static void report_params(row_params *p, const agg_store_row *r)
{
    snprintf(p->exp, sizeof p->exp, "%" PRId64, r->experiment);
    snprintf(p->arm, sizeof p->arm, "%" PRIu32, r->arm);
    snprintf(p->eps, sizeof p->eps, "%.17g", r->epsilon);
    snprintf(p->prop, sizeof p->prop, "%.17g", r->propensity);
    u64_text(p->ver, sizeof p->ver, r->policy_version);
    snprintf(p->val, sizeof p->val, "%.17g", r->value);
    u64_text(p->expires, sizeof p->expires, r->expires_at_ms);
    u64_text(p->at, sizeof p->at, r->at_ms);
    const char *v[10] = {
        (const char *)r->id, p->exp, p->arm, r->mechanism, p->eps, p->prop, p->ver, p->val,
        p->expires,          p->at};
    memcpy(p->v, v, sizeof v);
    memset(p->len, 0, sizeof p->len);
    memset(p->fmt, 0, sizeof p->fmt);
    p->len[0] = (int)r->id_len;
    p->fmt[0] = 1;
}

static void decision_params(row_params *p, const agg_store_row *d)
{
    report_params(p, d);
    u64_text(p->keep, sizeof p->keep, d->retain_until_ms);
    p->v[7] = p->at; /* issued_at_ms, expires_at_ms, retain_until_ms */
    p->v[8] = p->expires;
    p->v[9] = p->keep;
}

static ldpb_err pg_add_report(agg_store *s, const agg_store_row *r, int *is_new)
{
    row_params p;
    report_params(&p, r);
    PGresult *res = run_prepared(s, "add_report", 10, p.v, p.len, p.fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "inserting a report");
    *is_new = !err && strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    return err;
}

static ldpb_err pg_has_report(agg_store *s, const uint8_t *id, size_t id_len, int *exists)
{
    const char *v[1] = {(const char *)id};
    int len[1] = {(int)id_len}, fmt[1] = {1};
    PGresult *res = run_prepared(s, "has_report", 1, v, len, fmt);
    ldpb_err err = check_result(s, res, PGRES_TUPLES_OK, "looking up a report");
    *exists = !err && PQntuples(res) > 0;
    PQclear(res);
    return err;
}

static ldpb_err pg_remove_report(agg_store *s, const uint8_t *id, size_t id_len)
{
    const char *v[1] = {(const char *)id};
    int len[1] = {(int)id_len}, fmt[1] = {1};
    PGresult *res = run_prepared(s, "remove_report", 1, v, len, fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "removing a report");
    PQclear(res);
    return err;
}

static ldpb_err pg_add_decision(agg_store *s, const agg_store_row *d, uint64_t *added)
{
    row_params p;
    decision_params(&p, d);
    PGresult *res = run_prepared(s, "add_decision", 10, p.v, p.len, p.fmt);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "logging a decision");
    *added = !err && strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    return err;
}

/* ---- pipelines: several statements in one round trip ---------------------------------------- */

/* How the answers of a pipeline are read: statement i's expected status and the words of its
 * failure, and what a success gives. */
typedef struct pipe_reader {
    void (*expect)(void *ctx, size_t i, ExecStatusType *want, const char **what);
    void (*answer)(void *ctx, size_t i, PGresult *r); /* PQcmdTuples takes no const */
    void *ctx;
} pipe_reader;

/* One answer: the first failure's reason into s->errmsg (the statements after it answer
 * PGRES_PIPELINE_ABORTED, which says nothing more), a success to the reader. */
static void pipe_answer(agg_store *s, const pipe_reader *rd, size_t i, PGresult *r, ldpb_err *err)
{
    if (*err)
        return;
    ExecStatusType want;
    const char *what;
    rd->expect(rd->ctx, i, &want, &what);
    if (PQresultStatus(r) == want) {
        rd->answer(rd->ctx, i, r);
        return;
    }
    note_failure(BE(s), r);
    if (PQstatus(BE(s)->conn) != CONNECTION_OK)
        BE(s)->unreachable = 1;
    char why[AGG_STORE_ERRMAX];
    snprintf(why, sizeof why, "%s", PQresultErrorMessage(r));
    size_t k = strlen(why);
    while (k > 0 && (why[k - 1] == '\n' || why[k - 1] == ' '))
        why[--k] = '\0';
    say(s->errmsg, "%s: %s", what, why[0] ? why : "the database connection is lost");
    *err = LDPB_EIO;
}

/* Reads the answers of `sent` statements and the sync after them. Every answer is read, also
 * after a failure, so that the connection leaves pipeline mode clean; it stops early only when
 * the connection is gone (libpq then has no more to give). */
static ldpb_err pipe_read(agg_store *s, size_t sent, const pipe_reader *rd)
{
    PGconn *c = BE(s)->conn;
    ldpb_err err = LDPB_OK;
    size_t i = 0;
    int nulls = 0;
    for (;;) {
        PGresult *r = PQgetResult(c);
        if (!r) {
            /* one NULL ends each statement's answers; two in a row: nothing more will come */
            if (++nulls > 1 || PQstatus(c) != CONNECTION_OK)
                break;
            continue;
        }
        nulls = 0;
        int sync = PQresultStatus(r) == PGRES_PIPELINE_SYNC;
        if (!sync && i < sent)
            pipe_answer(s, rd, i, r, &err);
        i += !sync;
        PQclear(r);
        if (sync)
            break;
    }
    if (!err && i != sent) {
        if (i < sent)
            BE(s)->unreachable = 1; /* the answers stopped: the connection is gone */
        err = pg_fail(s, i < sent ? "a pipeline of statements" : "a pipeline: an answer too many");
    }
    return err;
}

/* Ends a pipeline of which `sent` statements were queued (`all`: every one the caller meant):
 * one sync flushes them, the answers are read, the connection leaves pipeline mode, so that
 * ROLLBACK and every other statement run as ever. The first failing statement aborts the ones
 * after it, and the transaction is the caller's to roll back. */
static ldpb_err pipe_end(agg_store *s, size_t sent, int all, const pipe_reader *rd)
{
    pg_store *b = BE(s);
    PGconn *c = b->conn;
    ldpb_err err = all ? LDPB_OK : pg_fail(s, "a pipeline of statements: sending");
    ldpb_err rerr = PQpipelineSync(c) ? pipe_read(s, sent, rd)
                                      : pg_fail(s, "a pipeline of statements: sending");
    if (!err)
        err = rerr;
    if (!PQexitPipelineMode(c) && !err)
        err = pg_fail(s, "a pipeline of statements: leaving pipeline mode");
    if (PQpipelineStatus(c) != PQ_PIPELINE_OFF) {
        /* Answers left unread (a connection gone mid-pipeline): only a new one helps. */
        b->unreachable = 1;
        if (!err)
            err = pg_fail(s, "a pipeline of statements");
    }
    return err;
}

/* ---- a batch's rows (agg_store_write_batch) ---------------------------------------------------
 */

/* What each kind of row sends and expects, and the words of its failure. */
static const struct {
    const char *stmt;
    ExecStatusType want;
    const char *what;
} batch_kinds[] = {
    [AGG_BATCH_DECISION] = {"add_decision", PGRES_COMMAND_OK, "logging a decision"},
    [AGG_BATCH_REPORT] = {"add_report", PGRES_COMMAND_OK, "inserting a report"},
    [AGG_BATCH_LOOKUP] = {"has_report", PGRES_TUPLES_OK, "looking up a report"},
};

/* Queues one row's statement; 0 when libpq refused it. */
static int send_batch_row(PGconn *c, const agg_store_batch_row *b)
{
    row_params p;
    if (b->kind == AGG_BATCH_DECISION)
        decision_params(&p, &b->row);
    else
        report_params(&p, &b->row);
    int n = b->kind == AGG_BATCH_LOOKUP ? 1 : 10;
    return PQsendQueryPrepared(c, batch_kinds[b->kind].stmt, n, p.v, p.len, p.fmt, 0);
}

static void batch_expect(void *ctx, size_t i, ExecStatusType *want, const char **what)
{
    const agg_store_batch_row *b = &((const agg_store_batch_row *)ctx)[i];
    *want = batch_kinds[b->kind].want;
    *what = batch_kinds[b->kind].what;
}

static void batch_answer(void *ctx, size_t i, PGresult *r)
{
    agg_store_batch_row *b = &((agg_store_batch_row *)ctx)[i];
    b->found = b->kind == AGG_BATCH_LOOKUP ? PQntuples(r) > 0 : strcmp(PQcmdTuples(r), "1") == 0;
}

/* store.h's agg_store_write_batch: every row's statement, then one sync, then the answers, in
 * one round trip, where one statement each made as many. The statements are the per-row ones
 * in the same order, so every rule holds as it did (the rows lock in the caller's order; a
 * report sees the rows before it). */
static ldpb_err pg_write_batch(agg_store *s, agg_store_batch_row *rows, size_t n)
{
    PGconn *c = BE(s)->conn;
    if (n == 0)
        return LDPB_OK;
    if (!PQenterPipelineMode(c))
        return pg_fail(s, "a batch of rows: entering pipeline mode");
    size_t sent = 0;
    while (sent < n && send_batch_row(c, &rows[sent]))
        sent++;
    pipe_reader rd = {batch_expect, batch_answer, rows};
    return pipe_end(s, sent, sent == n, &rd);
}

/* Runs a prepared DELETE of decisions and returns the rows it removed in *n. */
static ldpb_err prune_run(agg_store *s, const char *name, int n_params, const char *const *v,
                          uint64_t *n)
{
    PGresult *res = run_prepared(s, name, n_params, v, NULL, NULL);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "deleting old decisions");
    *n = 0;
    if (!err)
        *n = strtoull(PQcmdTuples(res), NULL, 10);
    PQclear(res);
    return err;
}

static ldpb_err pg_prune_expired(agg_store *s, uint64_t before_ms, uint64_t limit, uint64_t *n)
{
    char before[24], lim[24];
    u64_text(before, sizeof before, before_ms);
    u64_text(lim, sizeof lim, limit);
    const char *v[2] = {before, lim};
    return prune_run(s, "prune_expired", 2, v, n);
}

static ldpb_err pg_prune_oldest(agg_store *s, uint64_t count, uint64_t *n)
{
    char cnt[24];
    u64_text(cnt, sizeof cnt, count);
    const char *v[1] = {cnt};
    return prune_run(s, "prune_oldest", 1, v, n);
}

/* The transaction's generation, written once, with its first write of an experiment's row (the
 * header says why): a COMMIT in doubt is then told apart whatever the transaction changed. */
static ldpb_err bump_generation(agg_store *s)
{
    pg_store *b = BE(s);
    if (b->pending_generation != b->generation)
        return LDPB_OK;
    char gen[24], started[24];
    u64_text(gen, sizeof gen, b->generation + 1);
    snprintf(started, sizeof started, "%" PRId64, b->started_ms);
    const char *v[3] = {s->node, started, gen};
    PGresult *res = run_prepared(s, "put_generation", 3, v, NULL, NULL);
    ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "writing the generation");
    PQclear(res);
    if (!err)
        b->pending_generation = b->generation + 1;
    return err;
}

/* Whose state the experiments row of `exp` holds: 1 another node's (its name in `owner`), 0
 * this node's or none. -1 on failure. */
static int row_of_other(agg_store *s, const char *id, char *owner, size_t cap)
{
    const char *v[1] = {id};
    PGresult *r = run_prepared(s, "row_node", 1, v, NULL, NULL);
    int got = -1;
    if (!check_result(s, r, PGRES_TUPLES_OK, "reading an experiment's node")) {
        const char *n = PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "";
        snprintf(owner, cap, "%s", n);
        got = n[0] && strcmp(n, s->node) != 0;
    }
    PQclear(r);
    return got;
}

/* The statements of pg_put_state's pipeline: [put_generation,] put_state or take_state[,
 * put_partial]; the rows each wrote. */
typedef struct state_pipe {
    const char *what[3];
    int bump; /* put_generation is the first */
    int wrote[3];
} state_pipe;

static void state_expect(void *ctx, size_t i, ExecStatusType *want, const char **what)
{
    *want = PGRES_COMMAND_OK;
    *what = ((state_pipe *)ctx)->what[i];
}

static void state_answer(void *ctx, size_t i, PGresult *r)
{
    ((state_pipe *)ctx)->wrote[i] = strcmp(PQcmdTuples(r), "1") == 0;
}

/* One round trip: the generation (the transaction's first write of an experiment's row), the
 * experiments row where it is this node's or none's, and, for an additive experiment
 * (!exclusive), this node's partial where the row is another's, by a statement that writes
 * nothing where the row just became this node's. Only an exclusive write that found no row of
 * its own asks again, whose that row is. */
static ldpb_err pg_put_state(agg_store *s, int64_t exp, const uint8_t *blob, size_t len,
                             const agg_store_counters *c, int exclusive, int *found)
{
    *found = 0;
    if (len > (size_t)INT32_MAX) {
        say(s->errmsg, "the policy state (%zu bytes) is too large", len);
        return LDPB_EIO;
    }
    pg_store *b = BE(s);
    char id[24], ver[24], rep[24], dup[24], asg[24], gen[24], started[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    u64_text(ver, sizeof ver, c->policy_version);
    u64_text(rep, sizeof rep, c->reports);
    u64_text(dup, sizeof dup, c->duplicates);
    u64_text(asg, sizeof asg, c->assignments);
    u64_text(gen, sizeof gen, b->generation + 1);
    snprintf(started, sizeof started, "%" PRId64, b->started_ms);
    const char *v[7] = {id, (const char *)blob, ver, rep, dup, asg, s->node};
    int lens[7] = {0, (int)len}, fmt[7] = {0, 1};
    const char *gv[3] = {s->node, started, gen};
    state_pipe sp = {{"writing the generation"}, b->pending_generation == b->generation, {0}};
    if (!PQenterPipelineMode(b->conn))
        return pg_fail(s, "writing the policy state: entering pipeline mode");
    size_t n = 0, want = (size_t)sp.bump + 1 + !exclusive;
    int ok = !sp.bump || PQsendQueryPrepared(b->conn, "put_generation", 3, gv, NULL, NULL, 0);
    n += ok && sp.bump;
    sp.what[n] = "writing the policy state";
    ok = ok && PQsendQueryPrepared(b->conn, exclusive == 2 ? "take_state" : "put_state", 7, v, lens,
                                   fmt, 0);
    n += ok;
    sp.what[n] = "writing the node's partial state";
    ok = ok && (exclusive || PQsendQueryPrepared(b->conn, "put_partial", 7, v, lens, fmt, 0));
    n += ok && !exclusive;
    pipe_reader rd = {state_expect, state_answer, &sp};
    ldpb_err err = pipe_end(s, n, n == want, &rd);
    if (err)
        return err;
    if (sp.bump)
        b->pending_generation = b->generation + 1;
    *found = sp.wrote[sp.bump] || (!exclusive && sp.wrote[sp.bump + 1]);
    if (*found || !exclusive)
        return LDPB_OK; /* not written: no such experiment (*found = 0) */
    /* Not written: no such experiment, or its row is another node's state. */
    char owner[AGG_STORE_NODE_NAME_MAX + 1] = "";
    int other = row_of_other(s, id, owner, sizeof owner);
    if (other < 0)
        return LDPB_EIO;
    if (other)
        say(s->errmsg,
            "experiment %s: its state is node '%s''s, and its statistics do not add across "
            "nodes: this node ('%s') cannot write it",
            id, owner, s->node);
    return other ? LDPB_ESTATE : LDPB_OK;
}

/* Meta rows in the open transaction; a row that is there (schema_version, by the migration) is
 * replaced. Not prepared: the migration writes before the statements are. */
static ldpb_err pg_write_meta(agg_store *s, const agg_meta_row *rows, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *v[2] = {rows[i].key, rows[i].value};
        PGresult *res = PQexecParams(BE(s)->conn,
                                     "INSERT INTO meta(key, value) VALUES ($1, $2)"
                                     " ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value",
                                     2, NULL, v, NULL, NULL, 0);
        ldpb_err err = check_result(s, res, PGRES_COMMAND_OK, "writing meta");
        PQclear(res);
        if (err)
            return err;
    }
    return LDPB_OK;
}

static ldpb_err pg_arm_counts(agg_store *s, int64_t exp, uint64_t *counts, uint32_t k)
{
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    const char *v[1] = {id};
    PGresult *r = run_prepared(s, "arm_counts", 1, v, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_TUPLES_OK, "counting reports");
    for (int i = 0; !err && i < PQntuples(r); i++) {
        uint64_t arm = 0, n = 0;
        if (field_u64(r, i, 0, &arm) || field_u64(r, i, 1, &n) || arm >= k) {
            say(s->errmsg, "a stored report has arm %s outside [0, %u)", PQgetvalue(r, i, 0), k);
            err = LDPB_ECORRUPT;
        } else {
            counts[arm] = n;
        }
    }
    PQclear(r);
    return err;
}

/* A signed text field; -1 if it is not an integer. */
static int field_i64(const PGresult *r, int row, int col, int64_t *v)
{
    if (PQgetisnull(r, row, col))
        return -1;
    const char *t = PQgetvalue(r, row, col);
    char *end;
    errno = 0;
    long long x = strtoll(t, &end, 10);
    if (errno || *end || end == t)
        return -1;
    *v = x;
    return 0;
}

/* This node's state and counters from the columns at `col` (EXP_COLUMNS), the sums over the
 * nodes checked against the reports. */
static ldpb_err read_state(agg_store *s, const PGresult *r, int row, int col, const char *name,
                           uint8_t **blob, size_t *len, agg_store_counters *c)
{
    int64_t v[5], all[5], any = 0;
    for (int i = 0; i < 5; i++) {
        if (field_i64(r, row, col + 1 + i, &v[i])) {
            say(s->errmsg, "experiment '%s': a malformed counter in its row", name);
            return LDPB_ECORRUPT;
        }
    }
    memcpy(all, v, sizeof all);
    if (field_i64(r, row, col + 6, &all[0]) || field_i64(r, row, col + 7, &all[1]) ||
        field_i64(r, row, col + 8, &any)) {
        say(s->errmsg, "experiment '%s': a malformed counter in its row", name);
        return LDPB_ECORRUPT;
    }
    int has_state = !PQgetisnull(r, row, col);
    size_t n = 0;
    unsigned char *p = NULL;
    if (has_state) {
        p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, row, col), &n);
        if (!p) {
            say(s->errmsg, "out of memory");
            return LDPB_ENOMEM;
        }
        if (n == 0) {
            PQfreemem(p);
            say(s->errmsg, "experiment '%s': the policy state is empty", name);
            return LDPB_ECORRUPT;
        }
    }
    ldpb_err err = agg_store_check_counts(s, name, any != 0, all);
    if (!err && has_state) {
        *blob = malloc(n);
        if (*blob) {
            memcpy(*blob, p, n);
            *len = n;
        } else {
            say(s->errmsg, "out of memory");
            err = LDPB_ENOMEM;
        }
    }
    PQfreemem(p);
    if (!err) {
        c->policy_version = (uint64_t)v[0];
        c->reports = (uint64_t)v[1];
        c->duplicates = (uint64_t)v[2];
        c->assignments = (uint64_t)v[3];
    }
    return err;
}

static ldpb_err pg_load(agg_store *s, int64_t exp, uint8_t **blob, size_t *len,
                        agg_store_counters *c)
{
    *blob = NULL;
    *len = 0;
    memset(c, 0, sizeof *c);
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    const char *v[2] = {s->node, id};
    PGresult *r = run_prepared(s, "load", 2, v, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_TUPLES_OK, "reading the state");
    if (!err && PQntuples(r) == 0) {
        say(s->errmsg, "no experiment with id %" PRId64, exp);
        err = LDPB_ENOEXPERIMENT;
    } else if (!err) {
        err = read_state(s, r, 0, 1, PQgetvalue(r, 0, 0), blob, len, c);
    }
    PQclear(r);
    return err;
}

/* Row `i` of the experiments query into `e`. */
static ldpb_err read_exp(agg_store *s, const PGresult *r, int i, agg_store_exp *e)
{
    const char *name = PQgetvalue(r, i, 1);
    int64_t running = 0;
    if (field_i64(r, i, 0, &e->id) || !agg_store_exp_name_valid(name) || PQgetisnull(r, i, 2) ||
        field_i64(r, i, 4, &running)) {
        say(s->errmsg, "experiment %s: a malformed row", PQgetvalue(r, i, 0));
        return LDPB_ECORRUPT;
    }
    snprintf(e->name, sizeof e->name, "%s", name);
    snprintf(e->owner, sizeof e->owner, "%s", PQgetvalue(r, i, 5 + 9));
    e->others = strcmp(PQgetvalue(r, i, 5 + 10), "0") != 0;
    e->from_config = strcmp(PQgetvalue(r, i, 3), "config") == 0;
    e->running = running != 0;
    e->settings = strdup(PQgetvalue(r, i, 2));
    if (!e->settings) {
        say(s->errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    return read_state(s, r, i, 5, e->name, &e->state, &e->state_len, &e->counters);
}

static ldpb_err pg_experiments(agg_store *s, agg_store_exp **out, size_t *n)
{
    const char *pv[1] = {s->node};
    PGresult *r = run_prepared(s, "experiments", 1, pv, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_TUPLES_OK, "reading experiments");
    if (err) {
        PQclear(r);
        return err;
    }
    size_t rows = (size_t)PQntuples(r), nv = 0;
    agg_store_exp *v = rows ? calloc(rows, sizeof *v) : NULL;
    if (rows && !v) {
        say(s->errmsg, "out of memory");
        err = LDPB_ENOMEM;
    }
    for (; !err && nv < rows; nv++)
        err = read_exp(s, r, (int)nv, &v[nv]);
    PQclear(r);
    if (err) {
        agg_store_experiments_free(v, rows);
        return err;
    }
    *out = v;
    *n = rows;
    return LDPB_OK;
}

static int pg_find(agg_store *s, const char *name, int64_t *id);

/* The other nodes hear of the change at this transaction's COMMIT (PG_EXP_CHANNEL). */
static ldpb_err notify_experiments(agg_store *s)
{
    PGresult *r = run_prepared(s, "notify_experiments", 0, NULL, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "notifying the other nodes");
    PQclear(r);
    return err;
}

static ldpb_err pg_add_experiment(agg_store *s, int64_t want, const char *name,
                                  const char *settings, int from_config, int64_t *id)
{
    ldpb_err err = bump_generation(s);
    if (err)
        return err;
    char w[24], now[24];
    snprintf(w, sizeof w, "%" PRId64, want);
    snprintf(now, sizeof now, "%" PRId64, agg_store_now_ms());
    const char *v[5] = {w, name, settings, from_config ? "config" : "runtime", now};
    PGresult *r = run_prepared(s, "lock_exp_ids", 0, NULL, NULL, NULL);
    err = check_result(s, r, PGRES_TUPLES_OK, "waiting for another node's experiment create");
    PQclear(r);
    if (err)
        return err;
    r = run_prepared(s, "add_experiment", 5, v, NULL, NULL);
    err = check_result(s, r, PGRES_TUPLES_OK, "adding an experiment");
    if (!err && PQntuples(r) == 0) {
        int64_t have = 0;
        if (pg_find(s, name, &have) == 1)
            say(s->errmsg, "the experiment '%s' exists (id %" PRId64 ")", name, have);
        else
            say(s->errmsg, "the experiment '%s' exists", name);
        err = LDPB_ESTATE;
    } else if (!err && field_i64(r, 0, 0, id)) {
        say(s->errmsg, "adding an experiment: a malformed id");
        err = LDPB_EIO;
    }
    PQclear(r);
    return err ? err : notify_experiments(s);
}

/* An UPDATE of one experiment row by id ($1) with one more parameter ($2). */
static ldpb_err update_exp(agg_store *s, const char *name, int64_t id, const char *value,
                           int *found)
{
    *found = 0;
    ldpb_err err = bump_generation(s);
    if (err)
        return err;
    char t[24];
    snprintf(t, sizeof t, "%" PRId64, id);
    const char *v[2] = {t, value};
    PGresult *r = run_prepared(s, name, 2, v, NULL, NULL);
    err = check_result(s, r, PGRES_COMMAND_OK, "updating an experiment");
    *found = !err && strcmp(PQcmdTuples(r), "1") == 0;
    PQclear(r);
    return err ? err : notify_experiments(s);
}

static ldpb_err pg_set_running(agg_store *s, int64_t id, int running, int *found)
{
    return update_exp(s, "set_running", id, running ? "1" : "0", found);
}

static ldpb_err pg_set_settings(agg_store *s, int64_t id, const char *settings, int *found)
{
    return update_exp(s, "set_settings", id, settings, found);
}

/* ---- open ------------------------------------------------------------------------------------ */

static int64_t pg_count_meta(agg_store *s)
{
    return query_count(s, "SELECT count(*) FROM meta", "reading meta");
}

static int64_t pg_count_data(agg_store *s, int shape)
{
    return query_count(s,
                       shape == 1 ? "SELECT (SELECT count(*) FROM state) + (SELECT count(*) FROM"
                                    " reports) + (SELECT count(*) FROM decisions)"
                                  : "SELECT (SELECT count(*) FROM experiments) + (SELECT"
                                    " count(*) FROM reports) + (SELECT count(*) FROM decisions)",
                       "reading the state");
}

static int pg_shape(agg_store *s)
{
    int64_t n = query_count(s,
                            "SELECT (to_regclass('experiments') IS NOT NULL)::int * 2 +"
                            " (to_regclass('state') IS NOT NULL)::int",
                            "reading the schema");
    if (n < 2)
        return (int)n;
    int64_t v3 =
        query_count(s, "SELECT (to_regclass('nodes') IS NOT NULL)::int", "reading the schema");
    return v3 < 0 ? -1 : v3 ? 3 : 2;
}

/* Tables of the same names but another shape are no store of this version. */
static ldpb_err not_ours(agg_store *s)
{
    char why[AGG_STORE_ERRMAX];
    snprintf(why, sizeof why, "%s", s->errmsg);
    say(s->errmsg,
        "the database holds tables that are not those of an ldpb-aggregator store of schema "
        "version %d (%s): use another database",
        AGG_STORE_SCHEMA_VERSION, why);
    return LDPB_ESTATE;
}

/* How many of the tables and indexes that schema_sql creates are missing (the names read from
 * schema_sql itself, after each "IF NOT EXISTS "); -1 on failure. */
static int64_t schema_missing(agg_store *s)
{
    static const char mark[] = "IF NOT EXISTS ";
    char q[2048] = "SELECT 0";
    size_t len = strlen(q);
    for (const char *p = strstr(schema_sql, mark); p; p = strstr(p, mark)) {
        p += sizeof mark - 1;
        size_t n = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");
        int w =
            snprintf(q + len, sizeof q - len, " + (to_regclass('%.*s') IS NULL)::int", (int)n, p);
        if (w < 0 || (size_t)w >= sizeof q - len)
            return -1;
        len += (size_t)w;
    }
    return query_count(s, q, "reading the schema");
}

/* The DDL runs only where something is missing: CREATE INDEX IF NOT EXISTS takes a SHARE lock
 * on its table even where the index is there, so a node starting beside running nodes would
 * wait on their batches' row inserts while holding the locks of the statements before it, on
 * which their batches wait in turn (PostgreSQL ended such a start with "deadlock detected" when
 * a node killed under load started again). */
static ldpb_err pg_create(agg_store *s)
{
    int64_t missing = schema_missing(s);
    if (missing < 0)
        return LDPB_EIO;
    if (missing > 0 && run(s, schema_sql, PGRES_COMMAND_OK, NULL, "creating the schema"))
        return not_ours(s);
    return LDPB_OK;
}

static int pg_get_meta(agg_store *s, const char *key, char *value, size_t cap)
{
    const char *v[1] = {key};
    PGresult *r = PQexecParams(BE(s)->conn, "SELECT value FROM meta WHERE key = $1", 1, NULL, v,
                               NULL, NULL, 0);
    int got = -1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_fail(s, "reading meta");
    } else if (PQntuples(r) == 0) {
        got = 0;
    } else {
        snprintf(value, cap, "%s", PQgetvalue(r, 0, 0));
        got = 1;
    }
    PQclear(r);
    return got;
}

static ldpb_err prepare_all(agg_store *s);

static int pg_find(agg_store *s, const char *name, int64_t *id)
{
    const char *v[1] = {name};
    PGresult *r = PQexecParams(BE(s)->conn, "SELECT id FROM experiments WHERE name = $1", 1, NULL,
                               v, NULL, NULL, 0);
    int got = -1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK)
        pg_fail(s, "reading experiments");
    else if (PQntuples(r) == 0)
        got = 0;
    else if (field_i64(r, 0, 0, id) == 0)
        got = 1;
    else
        say(s->errmsg, "reading experiments: a malformed id");
    PQclear(r);
    return got;
}

static int64_t pg_next_id(agg_store *s)
{
    return query_count(s, "SELECT coalesce(max(id), 0) + 1 FROM experiments",
                       "reading experiments");
}

static ldpb_err pg_migrate(agg_store *s, const char *settings, uint64_t retention_ms)
{
    ldpb_err err = run(s, migrate_rename_sql, PGRES_COMMAND_OK, NULL, "migrating");
    if (!err)
        err = run(s, schema_sql, PGRES_COMMAND_OK, NULL, "migrating");
    char keep[24], now[24];
    u64_text(keep, sizeof keep, retention_ms > INT64_MAX / 2 ? INT64_MAX / 2 : retention_ms);
    snprintf(now, sizeof now, "%" PRId64, agg_store_now_ms());
    if (!err) {
        const char *v[2] = {settings, now};
        PGresult *r = PQexecParams(BE(s)->conn, migrate_copy_sql, 2, NULL, v, NULL, NULL, 0);
        err = check_result(s, r, PGRES_COMMAND_OK, "migrating the state");
        PQclear(r);
    }
    if (!err) {
        const char *v[1] = {keep};
        PGresult *r = PQexecParams(BE(s)->conn, migrate_decisions_sql, 1, NULL, v, NULL, NULL, 0);
        err = check_result(s, r, PGRES_COMMAND_OK, "migrating decisions");
        PQclear(r);
    }
    for (size_t i = 0; !err && i < sizeof migrate_move_sql / sizeof migrate_move_sql[0]; i++)
        err = run(s, migrate_move_sql[i], PGRES_COMMAND_OK, NULL, "migrating");
    if (!err)
        err = run(s, "DROP TABLE v1_decisions", PGRES_COMMAND_OK, NULL, "migrating");
    return err;
}

static ldpb_err pg_migrate_v2(agg_store *s, const char *node)
{
    ldpb_err err = run(s, migrate_v2_sql, PGRES_COMMAND_OK, NULL, "migrating to version 3");
    if (err)
        return err;
    const char *v[1] = {node};
    PGresult *r = PQexecParams(BE(s)->conn,
                               "UPDATE experiments SET node = $1 WHERE node IS NULL AND"
                               " state IS NOT NULL",
                               1, NULL, v, NULL, NULL, 0);
    err = check_result(s, r, PGRES_COMMAND_OK, "migrating to version 3");
    PQclear(r);
    return err;
}

static const agg_meta_reader pg_meta_reader = {pg_shape,      pg_create,   pg_count_meta,
                                               pg_count_data, pg_get_meta, pg_find,
                                               pg_next_id,    pg_migrate,  pg_migrate_v2};

/* The identity row (state_id.h), read and written in the open transaction. */
static int pg_id_read(void *ctx, uint8_t id[AGG_STATE_ID_BYTES], int *legacy, char *errmsg,
                      size_t errcap)
{
    agg_store *s = ctx;
    PGresult *r = PQexec(BE(s)->conn, "SELECT state_id, legacy_tokens FROM identity WHERE id = 1");
    int got = -1;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        pg_fail(s, "reading the identity");
        ldpb_detailf(errmsg, errcap, "%s", s->errmsg);
    } else if (PQntuples(r) == 0) {
        got = 0;
    } else {
        size_t n = 0;
        unsigned char *p = PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 0), &n);
        if (!p || n != AGG_STATE_ID_BYTES) {
            ldpb_detailf(errmsg, errcap, "the identity row holds %zu bytes, not %u", n,
                         AGG_STATE_ID_BYTES);
        } else {
            memcpy(id, p, AGG_STATE_ID_BYTES);
            *legacy = strcmp(PQgetvalue(r, 0, 1), "0") != 0;
            got = 1;
        }
        PQfreemem(p);
    }
    PQclear(r);
    return got;
}

static ldpb_err pg_id_insert(void *ctx, const agg_state_ident *ident, int64_t created_ms,
                             char *errmsg, size_t errcap)
{
    agg_store *s = ctx;
    char legacy[4], created[24];
    snprintf(legacy, sizeof legacy, "%d", ident->legacy_tokens ? 1 : 0);
    snprintf(created, sizeof created, "%" PRId64, created_ms);
    const char *v[3] = {(const char *)ident->id, legacy, created};
    int len[3] = {AGG_STATE_ID_BYTES}, fmt[3] = {1};
    PGresult *r = PQexecParams(BE(s)->conn,
                               "INSERT INTO identity(id, state_id, legacy_tokens, created_at_ms)"
                               " VALUES (1, $1, $2, $3)",
                               3, NULL, v, len, fmt, 0);
    ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "writing the identity");
    PQclear(r);
    if (err)
        ldpb_detailf(errmsg, errcap, "%s", s->errmsg);
    return err;
}

static const agg_state_id_rows pg_id_rows = {pg_id_read, pg_id_insert, "the PostgreSQL database",
                                             "was it restored from an older backup, or replaced?"};

/* Connects to `url`; LDPB_EINVAL (the configured store cannot be reached or logged into) with
 * the server's reason. The password, if the URL has one, is never echoed. */
static PGconn *connect_url(const char *url, char *errmsg)
{
    PGconn *conn = PQconnectdb(url);
    if (PQstatus(conn) != CONNECTION_OK) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store cannot be reached: %s", why);
        PQfinish(conn);
        return NULL;
    }
    return conn;
}

static void hex_prefix(char *out, const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n && i < 8; i++)
        sprintf(out + 2 * i, "%02x", p[i]);
}

/* The public key of the database's nodes: recorded by the first, the same for every other (an
 * assignment issued by one node is then honoured by any). */
static ldpb_err check_key(agg_store *s, const agg_store_meta *m, char *errmsg)
{
    if (!m->public_key || m->public_key_len == 0)
        return LDPB_OK;
    char now[24];
    snprintf(now, sizeof now, "%" PRId64, agg_store_now_ms());
    const char *v[2] = {(const char *)m->public_key, now};
    int len[2] = {(int)m->public_key_len}, fmt[2] = {1};
    PGresult *r = PQexecParams(BE(s)->conn,
                               "INSERT INTO node_key(id, public_key, created_at_ms) VALUES"
                               " (1, $1, $2) ON CONFLICT (id) DO NOTHING",
                               2, NULL, v, len, fmt, 0);
    ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "recording the public key");
    PQclear(r);
    if (!err)
        err = run(s, "SELECT public_key FROM node_key WHERE id = 1", PGRES_TUPLES_OK, &r,
                  "reading the public key");
    if (err) {
        say(errmsg, "%s", s->errmsg);
        return err;
    }
    size_t n = 0;
    unsigned char *have =
        PQntuples(r) == 1 ? PQunescapeBytea((const unsigned char *)PQgetvalue(r, 0, 0), &n) : NULL;
    PQclear(r);
    if (!have || n != m->public_key_len || memcmp(have, m->public_key, n) != 0) {
        char a[17] = "", b[17] = "";
        if (have)
            hex_prefix(a, have, n);
        hex_prefix(b, m->public_key, m->public_key_len);
        say(errmsg,
            "the PostgreSQL store's nodes serve with the public key %s..., this node's key file "
            "has %s...: every node of one database uses the same key file (an assignment issued "
            "by one node is reported to any)",
            a, b);
        err = LDPB_ESTATE;
    }
    PQfreemem(have);
    return err;
}

/* In the open transaction: the schema (created where missing, or migrated), the meta, the
 * identity, the key; then the statements of the batches, on the tables as they now are. */
static ldpb_err settle(agg_store *s, const char *dir, const agg_store_meta *meta, char *errmsg)
{
    ldpb_err err = agg_store_settle_meta(s, &pg_meta_reader, meta, errmsg);
    if (!err)
        err = agg_state_id_settle_rows(&pg_id_rows, s, dir, !s->fresh, meta->new_state, &s->ident,
                                       errmsg, AGG_STORE_ERRMAX);
    if (!err && agg_pg_seq_schema(s)) { /* issue 19: sequenced experiments (store_pg_seq.c) */
        err = LDPB_EIO;
        say(errmsg, "%s", s->errmsg);
    }
    if (!err)
        err = check_key(s, meta, errmsg);
    if (!err && prepare_all(s)) {
        err = not_ours(s);
        say(errmsg, "%s", s->errmsg);
    }
    if (!err && meta->open_hook && meta->open_hook(meta->open_hook_ctx)) {
        say(errmsg, "the PostgreSQL store: the open failed by the test hook");
        err = LDPB_EIO;
    }
    return err;
}

static ldpb_err pg_open(agg_store *s, const char *url, const char *dir, const agg_store_meta *meta,
                        char *errmsg)
{
    pg_store *b = calloc(1, sizeof *b);
    if (!b)
        return LDPB_ENOMEM;
    s->be = b;
    b->started_ms = agg_store_now_ms();
    b->url = strdup(url);
    if (!b->url)
        return LDPB_ENOMEM;
    b->conn = connect_url(url, errmsg);
    if (!b->conn)
        return LDPB_EINVAL;
    ldpb_err err = session_setup(s);
    if (err) {
        say(errmsg, "%s", s->errmsg);
        return err == LDPB_ESTATE ? LDPB_ESTATE : LDPB_EINVAL;
    }
    /* One transaction: a start that is refused leaves the database as it was. Its advisory
     * lock keeps two nodes' first starts from racing on CREATE TABLE or a migration. */
    if (run(s, "BEGIN", PGRES_COMMAND_OK, NULL, "BEGIN") ||
        run(s, "SELECT pg_advisory_xact_lock(" PG_LOCK_KEY ")", PGRES_TUPLES_OK, NULL,
            "waiting for the other nodes' opens")) {
        say(errmsg, "%s", s->errmsg);
        pg_rollback(s);
        return LDPB_EIO;
    }
    err = settle(s, dir, meta, errmsg);
    /* The meta and `default` of a fresh state now, not with the first batch: another node
     * opening meanwhile would take the state for fresh too and write its own. */
    if (!err && agg_store_write_pending(s)) {
        say(errmsg, "%s", s->errmsg);
        err = LDPB_EIO;
    }
    if (err) {
        pg_rollback(s);
        return err;
    }
    /* --check-config: the transaction stays open until the close (the session's end) rolls it
     * back. */
    if (!meta->check_only && run(s, "COMMIT", PGRES_COMMAND_OK, NULL, "COMMIT")) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    agg_store_pending_done(s);
    /* After the COMMIT: a marker without its database would read as a lost database. */
    err =
        meta->check_only ? LDPB_OK : agg_state_id_record(dir, &s->ident, errmsg, AGG_STORE_ERRMAX);
    if (err)
        return err;
    int64_t rows = query_count(s, "SELECT count(*) FROM decisions", "counting decisions");
    int64_t gen = rows < 0 ? -1 : read_generation(s);
    if (rows < 0 || gen < 0) {
        say(errmsg, "%s", s->errmsg);
        return LDPB_EIO;
    }
    s->decision_rows = (uint64_t)rows;
    b->generation = b->pending_generation = (uint64_t)gen;
    return LDPB_OK;
}

static void pg_close(agg_store *s)
{
    pg_store *b = BE(s);
    if (!b)
        return;
    /* Released here, not by the session's end, which the server sees only a moment after the
     * socket closes: a restart right after finds the lock free. */
    if (PQstatus(b->conn) == CONNECTION_OK && PQtransactionStatus(b->conn) == PQTRANS_INTRANS)
        PQclear(PQexec(b->conn, "ROLLBACK")); /* --check-config's open, never committed */
    if (PQstatus(b->conn) == CONNECTION_OK && PQtransactionStatus(b->conn) == PQTRANS_IDLE)
        PQclear(PQexec(b->conn, "SELECT pg_advisory_unlock_all()"));
    PQfinish(b->conn);
    free(b->url);
    free(b);
    s->be = NULL;
}

/* ---- export and backup ----------------------------------------------------------------------- */

/* A PostgreSQL double as the SQLite backend writes it (%.17g), so both export the same text. */
static void csv_field(FILE *out, const PGresult *r, int row, int col, int is_real)
{
    if (PQgetisnull(r, row, col))
        return;
    const char *t = PQgetvalue(r, row, col);
    if (is_real)
        fprintf(out, "%.17g", strtod(t, NULL));
    else
        fputs(t, out);
}

/* The export's query (as SQLite's backend's): version 1's tables or version 2's, every
 * experiment or one ($1 its id). */
static void export_sql(char *sql, size_t cap, int v1, int one)
{
    const char *name_d = v1 ? "'default'" : "e.name";
    const char *join_d = v1 ? "" : " JOIN experiments e ON e.id = d.experiment";
    const char *join_r = v1 ? "" : " JOIN experiments e ON e.id = r.experiment";
    snprintf(sql, cap,
             "SELECT encode(d.assignment_id, 'hex'), d.arm, d.propensity, d.policy_version,"
             " d.mechanism, d.epsilon, r.value, d.issued_at_ms, d.expires_at_ms,"
             " r.reported_at_ms, %s"
             " FROM decisions d%s LEFT JOIN reports r ON r.assignment_id = d.assignment_id%s"
             " UNION ALL "
             "SELECT encode(r.assignment_id, 'hex'), r.arm, r.propensity, r.policy_version,"
             " r.mechanism, r.epsilon, r.value, NULL, r.expires_at_ms, r.reported_at_ms, %s"
             " FROM reports r%s WHERE %sNOT EXISTS (SELECT 1 FROM decisions d"
             " WHERE d.assignment_id = r.assignment_id) ORDER BY 9, 1",
             name_d, join_d, one ? " WHERE d.experiment = $1::bigint" : "", name_d, join_r,
             one ? "r.experiment = $1::bigint AND " : "");
}

/* Which tables the export reads and the id of `experiment` (0: every one; -1: none of that
 * name), in the open snapshot. */
static ldpb_err export_target(PGconn *conn, const char *experiment, int *v1, int64_t *id,
                              char *errmsg)
{
    PGresult *r = PQexec(conn, "SELECT (to_regclass('experiments') IS NOT NULL)::int * 2 +"
                               " (to_regclass('state') IS NOT NULL)::int");
    int shape =
        PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? atoi(PQgetvalue(r, 0, 0)) : -1;
    PQclear(r);
    if (shape <= 0) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store: not an ldpb-aggregator state: %s",
            shape < 0 ? why : "no experiments or state table");
        return shape < 0 ? LDPB_EIO : LDPB_ECORRUPT;
    }
    *v1 = shape == 1;
    *id = 0;
    if (!experiment)
        return LDPB_OK;
    if (*v1) {
        *id = strcmp(experiment, AGG_STORE_DEFAULT_EXP) == 0 ? 0 : -1;
        return LDPB_OK;
    }
    const char *v[1] = {experiment};
    r = PQexecParams(conn, "SELECT id FROM experiments WHERE name = $1", 1, NULL, v, NULL, NULL, 0);
    ldpb_err err = LDPB_OK;
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store: not an ldpb-aggregator state: %s", why);
        err = LDPB_ECORRUPT;
    } else {
        *id = PQntuples(r) == 1 ? strtoll(PQgetvalue(r, 0, 0), NULL, 10) : -1;
    }
    PQclear(r);
    return err;
}

static void csv_row(FILE *out, const PGresult *r, int i, int with_name)
{
    fprintf(out, "%s,%s,%.17g,%s,%s,%.17g,", PQgetvalue(r, i, 0), PQgetvalue(r, i, 1),
            strtod(PQgetvalue(r, i, 2), NULL), PQgetvalue(r, i, 3), PQgetvalue(r, i, 4),
            strtod(PQgetvalue(r, i, 5), NULL));
    csv_field(out, r, i, 6, 1);
    fputc(',', out);
    csv_field(out, r, i, 7, 0);
    fputc(',', out);
    csv_field(out, r, i, 8, 0);
    fputc(',', out);
    csv_field(out, r, i, 9, 0);
    if (with_name)
        fprintf(out, ",%s", PQgetvalue(r, i, 10));
    fputc('\n', out);
}

static ldpb_err pg_export_csv(const char *url, const char *dir, const char *experiment,
                              int with_name, FILE *out, char *errmsg)
{
    (void)dir;
    PGconn *conn = connect_url(url, errmsg);
    if (!conn)
        return LDPB_EIO;
    ldpb_err err = LDPB_EIO;
    /* One snapshot, never a write: the daemon may be running. */
    PGresult *r = PQexec(conn, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
    int ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    r = NULL;
    int v1 = 0;
    int64_t id = 0;
    if (!ok) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store: %s", why);
        goto done;
    }
    err = export_target(conn, experiment, &v1, &id, errmsg);
    if (err)
        goto done;
    err = LDPB_EIO;
    if (id < 0 && with_name) {
        say(errmsg, "the PostgreSQL store: no experiment '%s' in this state", experiment);
        err = LDPB_ENOEXPERIMENT;
        goto done;
    }
    char sql[2048], idt[24];
    int one = experiment && !(v1 && id == 0);
    export_sql(sql, sizeof sql, v1, one);
    snprintf(idt, sizeof idt, "%" PRId64, id);
    const char *v[1] = {idt};
    r = PQexecParams(conn, sql, one ? 1 : 0, NULL, one ? v : NULL, NULL, NULL, 0);
    if (PQresultStatus(r) != PGRES_TUPLES_OK) {
        char why[AGG_STORE_ERRMAX];
        pg_reason(conn, why, sizeof why);
        say(errmsg, "the PostgreSQL store: not an ldpb-aggregator state: %s", why);
        err = LDPB_ECORRUPT;
        goto done;
    }
    fprintf(out,
            "assignment_id,arm,propensity,policy_version,mechanism,epsilon,value,issued_at_ms,"
            "expires_at_ms,reported_at_ms%s\n",
            with_name ? ",experiment" : "");
    for (int i = 0; i < PQntuples(r); i++)
        csv_row(out, r, i, with_name);
    if (fflush(out) != 0 || ferror(out)) {
        say(errmsg, "writing the CSV failed: %s", strerror(errno));
        goto done;
    }
    err = LDPB_OK;
done:
    PQclear(r);
    PQfinish(conn);
    return err;
}

/* The other nodes' partials (store.h, agg_store_partials), outside a transaction. */
static ldpb_err pg_partials(agg_store *s, agg_store_partial **out, size_t *n)
{
    pg_store *b = BE(s);
    if (b->stuck || ((PQstatus(b->conn) != CONNECTION_OK || b->unreachable) && reconnect(s)))
        return LDPB_EIO;
    const char *v[1] = {s->node};
    PGresult *r = run_prepared(s, "partials", 1, v, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_TUPLES_OK, "reading the other nodes' states");
    size_t rows = err ? 0 : (size_t)PQntuples(r), k = 0;
    agg_store_partial *p = rows ? calloc(rows, sizeof *p) : NULL;
    if (rows && !p)
        err = LDPB_ENOMEM;
    for (; !err && k < rows; k++) {
        int i = (int)k;
        uint64_t age = 0;
        size_t len = 0;
        unsigned char *blob = PQunescapeBytea((const unsigned char *)PQgetvalue(r, i, 2), &len);
        if (field_i64(r, i, 0, &p[k].experiment) || field_u64(r, i, 3, &p[k].policy_version) ||
            field_u64(r, i, 4, &p[k].reports) || field_u64(r, i, 5, &age) ||
            field_u64(r, i, 6, &p[k].duplicates) || field_u64(r, i, 7, &p[k].assignments) ||
            !blob) {
            PQfreemem(blob);
            say(s->errmsg, "reading the other nodes' states: a malformed row");
            err = LDPB_ECORRUPT;
            break;
        }
        p[k].age_ms = age;
        snprintf(p[k].node, sizeof p[k].node, "%s", PQgetvalue(r, i, 1));
        p[k].state = malloc(len ? len : 1);
        if (p[k].state)
            memcpy(p[k].state, blob, len);
        p[k].state_len = len;
        PQfreemem(blob);
        if (!p[k].state)
            err = LDPB_ENOMEM;
    }
    PQclear(r);
    if (err) {
        agg_store_partials_free(p, rows);
        return err;
    }
    *out = p;
    *n = rows;
    return LDPB_OK;
}

static int pg_experiments_changed(agg_store *s)
{
    pg_store *b = BE(s);
    int changed = b->exps_changed;
    b->exps_changed = 0;
    /* What the connection received meanwhile (libpq keeps the notifications that came with the
     * answers of other statements); a lost connection is noticed by the next transaction, whose
     * reconnect sets exps_changed. */
    if (PQstatus(b->conn) == CONNECTION_OK && PQtransactionStatus(b->conn) == PQTRANS_IDLE)
        PQconsumeInput(b->conn);
    PGnotify *n;
    while ((n = PQnotifies(b->conn)) != NULL) {
        changed |= strcmp(n->relname, PG_EXP_CHANNEL) == 0;
        PQfreemem(n);
    }
    return changed;
}

static ldpb_err pg_catalog(agg_store *s, agg_store_exp **out, size_t *n)
{
    pg_store *b = BE(s);
    if (b->stuck || ((PQstatus(b->conn) != CONNECTION_OK || b->unreachable) && reconnect(s)))
        return LDPB_EIO;
    PGresult *r = run_prepared(s, "catalog", 0, NULL, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_TUPLES_OK, "reading the experiments");
    size_t rows = err ? 0 : (size_t)PQntuples(r), k = 0;
    agg_store_exp *v = rows ? calloc(rows, sizeof *v) : NULL;
    if (rows && !v) {
        say(s->errmsg, "out of memory");
        err = LDPB_ENOMEM;
    }
    for (; !err && k < rows; k++) {
        int i = (int)k;
        int64_t running = 0;
        const char *name = PQgetvalue(r, i, 1);
        if (field_i64(r, i, 0, &v[k].id) || !agg_store_exp_name_valid(name) ||
            PQgetisnull(r, i, 2) || field_i64(r, i, 4, &running)) {
            say(s->errmsg, "experiment %s: a malformed row", PQgetvalue(r, i, 0));
            err = LDPB_ECORRUPT;
            break;
        }
        snprintf(v[k].name, sizeof v[k].name, "%s", name);
        v[k].from_config = strcmp(PQgetvalue(r, i, 3), "config") == 0;
        v[k].running = running != 0;
        v[k].settings = strdup(PQgetvalue(r, i, 2));
        if (!v[k].settings) {
            say(s->errmsg, "out of memory");
            err = LDPB_ENOMEM;
        }
    }
    PQclear(r);
    if (err) {
        agg_store_experiments_free(v, rows);
        return err;
    }
    *out = v;
    *n = rows;
    return LDPB_OK;
}

static ldpb_err pg_put_counts(agg_store *s, int64_t exp, uint64_t duplicates, uint64_t assignments)
{
    char id[24], dup[24], asg[24];
    snprintf(id, sizeof id, "%" PRId64, exp);
    u64_text(dup, sizeof dup, duplicates);
    u64_text(asg, sizeof asg, assignments);
    const char *v[4] = {id, s->node, dup, asg};
    PGresult *r = run_prepared(s, "put_counts", 4, v, NULL, NULL);
    ldpb_err err = check_result(s, r, PGRES_COMMAND_OK, "writing the node's counts");
    PQclear(r);
    return err;
}

static ldpb_err pg_shared_counts(agg_store *s, agg_store_counts *v, size_t n)
{
    pg_store *b = BE(s);
    if (b->stuck || ((PQstatus(b->conn) != CONNECTION_OK || b->unreachable) && reconnect(s)))
        return LDPB_EIO;
    size_t cap = 2 + 21 * n;
    char *ids = malloc(cap);
    if (!ids) {
        say(s->errmsg, "out of memory");
        return LDPB_ENOMEM;
    }
    size_t k = 0;
    ids[k++] = '{';
    for (size_t i = 0; i < n; i++)
        k += (size_t)snprintf(ids + k, cap - k, "%s%" PRId64, i ? "," : "", v[i].experiment);
    snprintf(ids + k, cap - k, "}");
    const char *pv[2] = {ids, s->node};
    PGresult *r = run_prepared(s, "shared_counts", 2, pv, NULL, NULL);
    free(ids);
    ldpb_err err = check_result(s, r, PGRES_TUPLES_OK, "reading the nodes' counts");
    for (int i = 0; !err && i < PQntuples(r); i++) {
        int64_t id = 0;
        uint64_t c[4];
        if (field_i64(r, i, 0, &id) || field_u64(r, i, 1, &c[0]) || field_u64(r, i, 2, &c[1]) ||
            field_u64(r, i, 3, &c[2]) || field_u64(r, i, 4, &c[3])) {
            say(s->errmsg, "reading the nodes' counts: a malformed row");
            err = LDPB_ECORRUPT;
            break;
        }
        for (size_t j = 0; j < n; j++) {
            if (v[j].experiment != id)
                continue;
            v[j].lead_duplicates = c[0];
            v[j].lead_assignments = c[1];
            v[j].follow_duplicates = c[2];
            v[j].follow_assignments = c[3];
            v[j].found = 1;
        }
    }
    PQclear(r);
    return err;
}

static int pg_needs_reload(const agg_store *s)
{
    const pg_store *b = s->be;
    return b && b->stuck;
}

static void pg_reloaded(agg_store *s)
{
    pg_store *b = BE(s);
    if (!b->stuck)
        return;
    b->generation = b->pending_generation = b->stuck_generation;
    b->stuck = 0;
}

static int pg_conflict(const agg_store *s)
{
    const pg_store *b = s->be;
    return b && b->conflict && !b->unreachable && !b->stuck && !b->in_doubt &&
           PQstatus(b->conn) == CONNECTION_OK;
}

static int pg_unavailable(const agg_store *s)
{
    const pg_store *b = s->be;
    /* stuck: the connection was lost with a COMMIT in doubt, which went through; until the
     * states are reloaded a batch fails, and its reports are resent like any of an outage */
    return b && (b->stuck || b->unreachable || PQstatus(b->conn) != CONNECTION_OK);
}

PGconn *agg_pg_conn(agg_store *s)
{
    return s->be ? BE(s)->conn : NULL;
}

const agg_store_ops agg_store_pg_ops = {
    .scheme = "postgresql",
    .seq = &agg_store_pg_seq_ops, /* issue 19: sequenced experiments (store_pg_seq.c) */
    .alias = "postgres",
    .open = pg_open,
    .close = pg_close,
    .load = pg_load,
    .experiments = pg_experiments,
    .add_experiment = pg_add_experiment,
    .set_running = pg_set_running,
    .set_settings = pg_set_settings,
    .begin = pg_begin,
    .write_meta = pg_write_meta,
    .commit = pg_commit,
    .rollback = pg_rollback,
    .add_report = pg_add_report,
    .has_report = pg_has_report,
    .remove_report = pg_remove_report,
    .add_decision = pg_add_decision,
    .write_batch = pg_write_batch,
    .prune_expired = pg_prune_expired,
    .prune_oldest = pg_prune_oldest,
    .put_state = pg_put_state,
    .partials = pg_partials,
    .experiments_changed = pg_experiments_changed,
    .catalog = pg_catalog,
    .put_counts = pg_put_counts,
    .shared_counts = pg_shared_counts,
    .unavailable = pg_unavailable,
    .conflict = pg_conflict,
    .needs_reload = pg_needs_reload,
    .reloaded = pg_reloaded,
    .arm_counts = pg_arm_counts,
    .export_csv = pg_export_csv,
    /* PostgreSQL's tools do this better than a copy by us could: pg_dump takes a consistent
     * snapshot beside the running daemon, base backups with WAL archiving give point-in-time
     * recovery. */
    .backup = NULL,
    .no_backup = "--backup copies the SQLite store only; back a PostgreSQL store up with "
                 "PostgreSQL's tools: pg_dump --format=custom (a consistent snapshot beside the "
                 "running daemon), or base backups with WAL archiving (docs/aggregator.md, \"The "
                 "store: SQLite or PostgreSQL\")",
};
