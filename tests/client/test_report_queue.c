/* The report queue file as safe as the ledger's: one handle at a time (a second ldpb_client_new on
 * the same queue_path is refused), a planted link at a temporary name never written through, a
 * FIFO, a device, a directory or a link at the path refused at once, and every entry of a file
 * with a valid checksum checked as the wire checks a report. The files are written here from the
 * layout in docs/client.md, not with the library's encoder; and a device killed with SIGKILL at
 * random moments while it queues loses and doubles nothing. No aggregator runs: queueing sends
 * nothing. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <sodium.h>

#include "ldpb/client.h"
#include "report_queue.h"

typedef struct fx {
    char dir[64];
    char queue[128], ledger[128], ledger2[128];
    uint8_t server_pk[32];
} fx;

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    if (!f || sodium_init() < 0)
        return -1;
    strcpy(f->dir, "/tmp/ldpb-rqueue-XXXXXX");
    if (!mkdtemp(f->dir))
        return -1;
    snprintf(f->queue, sizeof f->queue, "%s/q", f->dir);
    snprintf(f->ledger, sizeof f->ledger, "%s/l1", f->dir);
    snprintf(f->ledger2, sizeof f->ledger2, "%s/l2", f->dir);
    uint8_t sk[32];
    crypto_box_keypair(f->server_pk, sk);
    /* A FIFO that blocks open() must fail the test, not hang the suite. */
    alarm(110);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx *f = *state;
    alarm(0);
    DIR *d = opendir(f->dir);
    if (d) {
        struct dirent *e;
        while ((e = readdir(d)) != NULL)
            if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
                unlinkat(dirfd(d), e->d_name, 0) != 0)
                (void)unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
        closedir(d);
    }
    rmdir(f->dir);
    free(f);
    return 0;
}

static ldpb_err open_client(const fx *f, const char *ledger, ldpb_client **c)
{
    ldpb_client_opts o;
    ldpb_client_opts_init(&o);
    char url[160];
    snprintf(url, sizeof url, "ipc://%s/no-aggregator", f->dir);
    o.server_url = url;
    memcpy(o.server_public_key, f->server_pk, 32);
    o.ledger_path = ledger;
    o.queue_path = f->queue;
    o.lifetime_budget = 1000.0;
    return ldpb_client_new(c, &o);
}

static void assignment(ldpb_assignment *a, unsigned i)
{
    memset(a, 0, sizeof *a);
    char id[16];
    snprintf(id, sizeof id, "as%06u", i);
    a->id_len = 8;
    memcpy(a->id, id, 8);
    a->mechanism = LDPB_CLIENT_MECH_LINEAR;
    a->epsilon = 1.0;
    a->propensity = 0.5;
    a->expires_at_ms = ((uint64_t)time(NULL) + 3600) * 1000u;
}

static void test_second_handle_refused(void **state)
{
    fx *f = *state;
    ldpb_client *a = NULL, *b = NULL;
    assert_int_equal(open_client(f, f->ledger, &a), LDPB_OK);
    /* Another ledger, the same queue: before the lock, b queued 80 reports that a's next write
     * dropped (and b's ledger had charged them). */
    assert_int_equal(open_client(f, f->ledger2, &b), LDPB_ESTATE);
    assert_null(b);
    enum { N = 80 };
    ldpb_assignment as;
    for (unsigned i = 0; i < N; i++) {
        assignment(&as, i);
        assert_int_equal(ldpb_client_queue_report(a, &as, 0.5), LDPB_OK);
    }
    ldpb_client_free(a);
    assert_int_equal(open_client(f, f->ledger2, &b), LDPB_OK);
    assert_int_equal(ldpb_client_queued(b), N);
    ldpb_client_free(b);
}

static void read_file(const char *path, char *buf, size_t cap)
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    size_t n = fread(buf, 1, cap - 1, fp);
    fclose(fp);
    buf[n] = '\0';
}

/* A link planted at the old fixed temporary name (q.tmp) and at a name of the new form: neither
 * target is written, the queue file is a regular file, the stale name of the new form is removed
 * and the old-form one left alone (it could be another queue's own file). */
static void test_planted_tmp_link(void **state)
{
    fx *f = *state;
    char victim[160], old_tmp[160], stale[160], buf[64];
    snprintf(victim, sizeof victim, "%s/victim", f->dir);
    snprintf(old_tmp, sizeof old_tmp, "%s.tmp", f->queue);
    snprintf(stale, sizeof stale, "%s.tmp.00112233445566ff", f->queue);
    FILE *fp = fopen(victim, "wb");
    assert_non_null(fp);
    fputs("precious", fp);
    fclose(fp);
    assert_int_equal(symlink(victim, old_tmp), 0);
    assert_int_equal(symlink(victim, stale), 0);

    ldpb_client *c = NULL;
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_OK);
    ldpb_assignment a;
    assignment(&a, 1);
    assert_int_equal(ldpb_client_queue_report(c, &a, 0.5), LDPB_OK);
    ldpb_client_free(c);

    read_file(victim, buf, sizeof buf);
    assert_string_equal(buf, "precious");
    struct stat sb;
    assert_int_equal(lstat(f->queue, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(lstat(old_tmp, &sb), 0);
    assert_true(S_ISLNK(sb.st_mode));
    assert_int_equal(lstat(stale, &sb), -1);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_OK);
    assert_int_equal(ldpb_client_queued(c), 1);
    ldpb_client_free(c);
}

static void test_not_a_regular_file(void **state)
{
    fx *f = *state;
    ldpb_client *c = NULL;
    /* A FIFO: before, fopen blocked for a writer that never came. */
    assert_int_equal(mkfifo(f->queue, 0600), 0);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_EINVAL);
    unlink(f->queue);
    assert_int_equal(mkdir(f->queue, 0700), 0);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_EINVAL);
    rmdir(f->queue);
    assert_int_equal(symlink("/dev/null", f->queue), 0);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_EINVAL);
    unlink(f->queue);
    /* A link to a good queue file is refused too, as the ledger refuses one. */
    char real[160];
    snprintf(real, sizeof real, "%s/real", f->dir);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_OK);
    ldpb_assignment a;
    assignment(&a, 2);
    assert_int_equal(ldpb_client_queue_report(c, &a, 0.5), LDPB_OK);
    ldpb_client_free(c);
    assert_int_equal(rename(f->queue, real), 0);
    assert_int_equal(symlink(real, f->queue), 0);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_EINVAL);
    assert_null(c);
    /* An empty path names no file (its lock would land in the working directory). */
    rq *q = NULL;
    assert_int_equal(rq_open(&q, "", LDPB_CLIENT_QUEUE_MAX), LDPB_EINVAL);
    assert_null(q);
}

/* ---- SIGKILL while queueing ---------------------------------------------------------------- */

/* The child: queues assignments from `first` on, one write each, and reports each id whose
 * ldpb_client_queue_report returned LDPB_OK on the pipe, until killed. */
static void queue_until_killed(const fx *f, unsigned first, int out)
{
    ldpb_client *c = NULL;
    if (open_client(f, f->ledger, &c) != LDPB_OK)
        _exit(3);
    for (unsigned i = first;; i++) {
        ldpb_assignment a;
        assignment(&a, i);
        if (ldpb_client_queue_report(c, &a, 0.5) != LDPB_OK)
            _exit(4);
        if (write(out, &i, sizeof i) != (ssize_t)sizeof i)
            _exit(5);
    }
}

static int tmp_files(const fx *f)
{
    int n = 0;
    DIR *d = opendir(f->dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strncmp(e->d_name, "q.tmp.", 6) == 0;
    closedir(d);
    return n;
}

/* Each queued value is the one the ledger holds for its id. */
static void assert_values_are_the_ledgers(const fx *f, size_t n)
{
    rq *q = NULL;
    ldpb_ledger *l = NULL;
    assert_int_equal(rq_open(&q, f->queue, LDPB_CLIENT_QUEUE_MAX), LDPB_OK);
    assert_int_equal(ldpb_ledger_open(&l, f->ledger, NULL), LDPB_OK);
    assert_int_equal(q->n, n);
    for (size_t i = 0; i < q->n; i++) {
        ldpb_ledger_entry e;
        assert_int_equal(ldpb_ledger_lookup(l, q->e[i].id, q->e[i].id_len, &e), LDPB_OK);
        assert_true(e.value == q->e[i].value);
    }
    ldpb_ledger_close(l);
    rq_close(q);
}

/* A device killed at random moments while it queues: every report whose queueing returned
 * LDPB_OK is in the queue after a restart (0 lost), each once (0 double: the loader refuses an id
 * twice), with the ledger's value; the one the kill interrupted is either queued or in the
 * ledger only, and queueing it again queues the ledger's value. The new handle takes the lock the
 * dead one held and removes the temporary file the kill may have left. */
static void test_kill_while_queueing(void **state)
{
    fx *f = *state;
    enum { ROUNDS = 12 };
    unsigned next = 0, acked = 0, in_ledger_only = 0;
    srand(20261127u);
    for (int round = 0; round < ROUNDS; round++) {
        int p[2];
        assert_int_equal(pipe(p), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(p[0]);
            queue_until_killed(f, next, p[1]);
        }
        close(p[1]);
        /* Kill after 1 to 25 acknowledged reports, at a random point of the next write. */
        unsigned want = 1u + (unsigned)rand() % 25u, got = 0, id = 0;
        while (got < want && read(p[0], &id, sizeof id) == (ssize_t)sizeof id) {
            assert_int_equal(id, next + got);
            got++;
        }
        assert_int_equal(got, want);
        usleep((useconds_t)(rand() % 3000));
        kill(pid, SIGKILL);
        int status = 0;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
        while (read(p[0], &id, sizeof id) == (ssize_t)sizeof id)
            got++; /* acknowledged before the kill but not read yet */
        close(p[0]);
        acked += got;

        ldpb_client *c = NULL;
        assert_int_equal(open_client(f, f->ledger, &c), LDPB_OK);
        assert_int_equal(tmp_files(f), 0);
        size_t queued = ldpb_client_queued(c);
        /* The interrupted one (id next + got) may be queued already. */
        assert_true(queued == acked || queued == acked + 1);
        ldpb_assignment a;
        ldpb_ledger_entry e;
        assignment(&a, next + got);
        ldpb_err lk = ldpb_ledger_lookup(ldpb_client_ledger(c), a.id, a.id_len, &e);
        if (queued == acked && lk == LDPB_OK) {
            /* Charged, not queued: queueing it again queues the ledger's value, at no cost. */
            double before = ldpb_ledger_spent(ldpb_client_ledger(c));
            assert_int_equal(ldpb_client_queue_report(c, &a, 0.5), LDPB_OK);
            assert_true(ldpb_ledger_spent(ldpb_client_ledger(c)) == before);
            in_ledger_only++;
            got++;
            acked++;
        } else if (queued == acked + 1) {
            assert_int_equal(lk, LDPB_OK);
            got++;
            acked++;
        }
        assert_int_equal(ldpb_client_queued(c), acked);
        /* The ledger holds exactly the queued reports, and its spend is theirs. */
        assert_true(ldpb_ledger_spent(ldpb_client_ledger(c)) == (double)acked);
        ldpb_client_free(c);
        assert_values_are_the_ledgers(f, acked);
        next += got;
    }
    print_message("%d kills, %u reports queued and kept, %u found charged but not queued\n", ROUNDS,
                  acked, in_ledger_only);
}

/* ---- entries that pass the checksum but not the wire's checks ---------------------------- */

enum { REC = 83, MAGIC = 14 };

typedef struct rec {
    uint8_t id_len;
    char id[65];
    uint8_t mechanism, is_bit;
    double epsilon, value;
} rec;

static void put_f64(uint8_t *p, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(u >> (8 * i));
}

/* Writes a queue file with a correct checksum, as docs/client.md describes it. */
static void write_queue(const char *path, const rec *r, size_t n)
{
    size_t len = MAGIC + 4 + n * REC + 32;
    uint8_t *b = calloc(1, len);
    assert_non_null(b);
    memcpy(b, "ldpb-queue-v1\n", MAGIC);
    b[MAGIC] = (uint8_t)n;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = b + MAGIC + 4 + i * REC;
        p[0] = r[i].id_len;
        memcpy(p + 1, r[i].id, strlen(r[i].id));
        p[65] = r[i].mechanism;
        p[66] = r[i].is_bit;
        put_f64(p + 67, r[i].epsilon);
        put_f64(p + 75, r[i].value);
    }
    crypto_generichash(b + len - 32, 32, b, len - 32, NULL, 0);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, len, fp), len);
    fclose(fp);
    free(b);
}

static void test_entries_checked_on_load(void **state)
{
    fx *f = *state;
    const rec good = {4, "good", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 1.0};
    const rec laplace = {4, "lapl", LDPB_CLIENT_MECH_LAPLACE, 0, 1.0, 0.25};
    const rec bad[] = {
        {4, "m-99", 99, 1, 1.0, 1.0},                       /* unknown mechanism */
        {4, "enan", LDPB_CLIENT_MECH_LINEAR, 1, NAN, 1.0},  /* epsilon NaN */
        {4, "half", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 0.5},  /* a bit of 0.5, sent as 1 */
        {4, "rbit", LDPB_CLIENT_MECH_LAPLACE, 1, 1.0, 1.0}, /* a bit from a real mechanism */
        {4, "rinf", LDPB_CLIENT_MECH_LAPLACE, 0, 1.0, INFINITY},
        {4, "e-20", LDPB_CLIENT_MECH_LINEAR, 1, 20.0, 1.0}, /* epsilon above the maximum */
        {4, "rawe", LDPB_CLIENT_MECH_RAW, 0, 1.0, 0.5},     /* raw with an epsilon */
        {4, "gaus", LDPB_CLIENT_MECH_GAUSSIAN_STATS, 0, 1.0, 0.5},
        {0, "", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 1.0},     /* an empty id */
        {4, "good", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 0.0}, /* the id of `good` again */
        {2, "padx", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 0.0}, /* "pa" with padding "dx" */
    };
    ldpb_client *c = NULL;
    rec two[2] = {good, laplace};
    write_queue(f->queue, two, 2);
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_OK);
    assert_int_equal(ldpb_client_queued(c), 2);
    ldpb_client_free(c);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        two[1] = bad[i];
        write_queue(f->queue, two, 2);
        struct stat before, after;
        assert_int_equal(stat(f->queue, &before), 0);
        print_message("entry %zu (%.4s)\n", i, bad[i].id);
        assert_int_equal(open_client(f, f->ledger, &c), LDPB_ECORRUPT);
        assert_null(c);
        /* Never reset: the file is as it was. */
        assert_int_equal(stat(f->queue, &after), 0);
        assert_int_equal(before.st_size, after.st_size);
        assert_int_equal(before.st_ino, after.st_ino);
    }
}

/* ---- experiments: format 2 ------------------------------------------------------------------ */

enum { REC2 = REC + 1 + 64 };

/* Writes a format-2 queue file (docs/client.md) with a correct checksum: each record as format 1's,
 * then exp_len and the name, zero-padded (`pad` lands one nonzero byte in the padding). */
static void write_queue2(const char *path, const rec *r, const char *const *exp,
                         const uint8_t *exp_len, size_t n, int pad)
{
    size_t len = MAGIC + 4 + n * REC2 + 32;
    uint8_t *b = calloc(1, len);
    assert_non_null(b);
    memcpy(b, "ldpb-queue-v2\n", MAGIC);
    b[MAGIC] = (uint8_t)n;
    for (size_t i = 0; i < n; i++) {
        uint8_t *p = b + MAGIC + 4 + i * REC2;
        p[0] = r[i].id_len;
        memcpy(p + 1, r[i].id, strlen(r[i].id));
        p[65] = r[i].mechanism;
        p[66] = r[i].is_bit;
        put_f64(p + 67, r[i].epsilon);
        put_f64(p + 75, r[i].value);
        p[REC] = exp_len[i];
        memcpy(p + REC + 1, exp[i], strlen(exp[i]));
        if (pad)
            p[REC2 - 1] = 'x';
    }
    crypto_generichash(b + len - 32, 32, b, len - 32, NULL, 0);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(b, 1, len, fp), len);
    fclose(fp);
    free(b);
}

static void magic_of(const char *path, char out[15])
{
    FILE *fp = fopen(path, "rb");
    assert_non_null(fp);
    assert_int_equal(fread(out, 1, 14, fp), 14);
    out[14] = '\0';
    fclose(fp);
}

/* A queue of "default" reports stays format 1, byte for byte what the library before experiments
 * wrote (a file written here from that layout loads, and is rewritten equal); the first report of
 * another experiment makes it format 2, and every entry keeps its experiment across a reopen. */
static void test_queue_records_experiments(void **state)
{
    fx *f = *state;
    const rec old[2] = {{4, "old1", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 1.0},
                        {4, "old2", LDPB_CLIENT_MECH_LAPLACE, 0, 1.0, 0.25}};
    write_queue(f->queue, old, 2);
    rq *q = NULL;
    assert_int_equal(rq_open(&q, f->queue, LDPB_CLIENT_QUEUE_MAX), LDPB_OK);
    assert_int_equal(q->n, 2);
    assert_string_equal(q->e[0].experiment, "");
    assert_string_equal(q->e[1].experiment, "");
    uint8_t *img = NULL;
    size_t img_len = 0;
    assert_int_equal(rq_encode(q, &img, &img_len), LDPB_OK);
    FILE *fp = fopen(f->queue, "rb");
    assert_non_null(fp);
    uint8_t disk[512];
    size_t disk_len = fread(disk, 1, sizeof disk, fp);
    fclose(fp);
    assert_int_equal(img_len, disk_len);
    assert_memory_equal(img, disk, disk_len);
    free(img);
    rq_close(q);

    ldpb_client *c = NULL;
    assert_int_equal(open_client(f, f->ledger, &c), LDPB_OK);
    ldpb_assignment a;
    assignment(&a, 1);
    assert_int_equal(ldpb_client_queue_report(c, &a, 1.0), LDPB_OK);
    char magic[15];
    magic_of(f->queue, magic);
    assert_string_equal(magic, "ldpb-queue-v1\n");
    assignment(&a, 2);
    snprintf(a.experiment, sizeof a.experiment, "exp-q");
    assert_int_equal(ldpb_client_queue_report(c, &a, 1.0), LDPB_OK);
    magic_of(f->queue, magic);
    assert_string_equal(magic, "ldpb-queue-v2\n");
    assignment(&a, 3);
    snprintf(a.experiment, sizeof a.experiment, "default");
    assert_int_equal(ldpb_client_queue_report(c, &a, 0.0), LDPB_OK);
    ldpb_client_free(c);

    assert_int_equal(rq_open(&q, f->queue, LDPB_CLIENT_QUEUE_MAX), LDPB_OK);
    assert_int_equal(q->n, 5);
    static const char *want[5] = {"", "", "", "exp-q", ""};
    for (size_t i = 0; i < 5; i++)
        assert_string_equal(q->e[i].experiment, want[i]);
    Ldpb__V1__Report rep;
    rq_report_of(&rep, &q->e[3]);
    assert_string_equal(rep.experiment, "exp-q");
    rq_report_of(&rep, &q->e[4]);
    assert_null(rep.experiment);
    rq_close(q);
}

/* Format 2's experiment fields are checked as the wire checks them: a name of [a-z0-9._-] of at
 * most 64 bytes, never "default" spelled out (the writer stores it as none), zero padding, no NUL
 * inside the length, and at least one named entry (else the writer would have written format 1). */
static void test_queue2_entries_checked(void **state)
{
    fx *f = *state;
    const rec two[2] = {{4, "good", LDPB_CLIENT_MECH_LINEAR, 1, 1.0, 1.0},
                        {4, "lapl", LDPB_CLIENT_MECH_LAPLACE, 0, 1.0, 0.25}};
    const char *names[2] = {"", "exp.1_b-2"};
    uint8_t lens[2] = {0, 9};
    write_queue2(f->queue, two, names, lens, 2, 0);
    rq *q = NULL;
    assert_int_equal(rq_open(&q, f->queue, LDPB_CLIENT_QUEUE_MAX), LDPB_OK);
    assert_string_equal(q->e[1].experiment, "exp.1_b-2");
    rq_close(q);

    const struct {
        const char *name;
        uint8_t len;
        int pad;
    } bad[] = {
        {"Exp", 3, 0},  {"default", 7, 0}, {"a b", 3, 0}, {"exp", 4, 0}, /* a NUL inside */
        {"exp", 65, 0}, {"exp", 3, 1},                                   /* padding */
        {"", 0, 0},                                                      /* none named */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        names[1] = bad[i].name;
        lens[1] = bad[i].len;
        write_queue2(f->queue, two, names, lens, 2, bad[i].pad);
        print_message("experiment case %zu\n", i);
        q = NULL;
        assert_int_equal(rq_open(&q, f->queue, LDPB_CLIENT_QUEUE_MAX), LDPB_ECORRUPT);
        assert_null(q);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_second_handle_refused, setup, teardown),
        cmocka_unit_test_setup_teardown(test_planted_tmp_link, setup, teardown),
        cmocka_unit_test_setup_teardown(test_not_a_regular_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entries_checked_on_load, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill_while_queueing, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_records_experiments, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue2_entries_checked, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
