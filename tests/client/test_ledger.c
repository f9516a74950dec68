/* The device privacy ledger: one privatization per id, fixed-point spend that never
 * under-charges, budget refusals, every error code, corrupt files refused and left untouched,
 * crash safety (SIGKILL at each durability step and at random moments) and out-of-memory at every
 * allocation. Linked with --wrap=malloc,calloc,realloc so a test can fail the Nth allocation. */
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
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ldpb/ledger.h"
#include "ldpb/mech_table.h"
#include "ledger_internal.h"

/* Allocation failure injection: linked with -Wl,--wrap=malloc,... (tests/support/alloc_fail.h). */
#include "alloc_fail.h"

/* ---- fixture ------------------------------------------------------------------------------- */

typedef struct fx {
    char dir[64];
    char path[128];
    char tmp[160];
    ldpb_rng *rng;
    ldpb_mech *lin1;   /* linear, epsilon 1 */
    ldpb_mech *lin05;  /* linear, epsilon 0.5 */
    ldpb_mech *lap05;  /* laplace, epsilon 0.5 */
    ldpb_mech *quad1;  /* quadratic, epsilon 1 */
    ldpb_mech *lin2;   /* linear, epsilon 2 */
    ldpb_mech *lin025; /* linear, epsilon 0.25 */
} fx;

static ldpb_mech *make_mech(ldpb_mech_kind kind, double eps)
{
    ldpb_mech_opts o;
    ldpb_mech_opts_init(&o, kind, eps);
    ldpb_mech *m = NULL;
    assert_int_equal(ldpb_mech_new(&m, &o), LDPB_OK);
    return m;
}

static ldpb_rng *make_rng(const char *text)
{
    uint8_t seed[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed, text);
    ldpb_rng *r = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&r, seed), LDPB_OK);
    return r;
}

static int setup(void **state)
{
    fx *f = calloc(1, sizeof *f);
    assert_non_null(f);
    strcpy(f->dir, "/tmp/ldpb-ledger-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    snprintf(f->path, sizeof f->path, "%s/ledger", f->dir);
    snprintf(f->tmp, sizeof f->tmp, "%s/ledger.tmp", f->dir);
    f->rng = make_rng("test_ledger");
    f->lin1 = make_mech(LDPB_MECH_LINEAR, 1.0);
    f->lin05 = make_mech(LDPB_MECH_LINEAR, 0.5);
    f->lap05 = make_mech(LDPB_MECH_LAPLACE, 0.5);
    f->quad1 = make_mech(LDPB_MECH_QUADRATIC, 1.0);
    f->lin2 = make_mech(LDPB_MECH_LINEAR, 2.0);
    f->lin025 = make_mech(LDPB_MECH_LINEAR, 0.25);
    *state = f;
    return 0;
}

/* Removes a directory tree (the temp dirs hold a few files and subdirectories). */
static void rm_tree(const char *p)
{
    struct stat sb;
    if (lstat(p, &sb) != 0)
        return;
    if (S_ISDIR(sb.st_mode)) {
        chmod(p, 0700);
        DIR *d = opendir(p);
        if (d) {
            for (struct dirent *de; (de = readdir(d));) {
                if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
                    continue;
                char sub[512];
                snprintf(sub, sizeof sub, "%s/%s", p, de->d_name);
                rm_tree(sub);
            }
            closedir(d);
        }
        rmdir(p);
    } else {
        unlink(p);
    }
}

static int teardown(void **state)
{
    fx *f = *state;
    rm_tree(f->dir);
    ldpb_rng_free(f->rng);
    ldpb_mech_free(f->lin1);
    ldpb_mech_free(f->lin05);
    ldpb_mech_free(f->lap05);
    ldpb_mech_free(f->quad1);
    ldpb_mech_free(f->lin2);
    ldpb_mech_free(f->lin025);
    free(f);
    return 0;
}

static ldpb_ledger_opts opts_of(double budget, double cap)
{
    ldpb_ledger_opts o;
    ldpb_ledger_opts_init(&o);
    o.lifetime_budget = budget;
    o.per_report_cap = cap;
    return o;
}

static ldpb_ledger *open_ok(const char *path, double budget, double cap)
{
    ldpb_ledger_opts o = opts_of(budget, cap);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, path, &o), LDPB_OK);
    assert_non_null(l);
    return l;
}

static ldpb_err priv(ldpb_ledger *l, const char *id, const ldpb_mech *m, ldpb_rng *rng,
                     double reward, ldpb_ledger_entry *e)
{
    return ldpb_ledger_privatize(l, (const uint8_t *)id, strlen(id), m, rng, reward, e);
}

static int read_all(const char *path, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    *len = 0;
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        close(fd);
        return -1;
    }
    size_t n = (size_t)sb.st_size;
    uint8_t *b = malloc(n ? n : 1);
    assert_non_null(b);
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        assert_true(r > 0);
        got += (size_t)r;
    }
    close(fd);
    *buf = b;
    *len = n;
    return 0;
}

static void write_all(const char *path, const uint8_t *buf, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, buf + off, len - off);
        assert_true(w > 0);
        off += (size_t)w;
    }
    assert_int_equal(close(fd), 0);
}

static void assert_file_equals(const char *path, const uint8_t *buf, size_t len)
{
    uint8_t *now;
    size_t n;
    assert_int_equal(read_all(path, &now, &n), 0);
    assert_int_equal(n, len);
    assert_memory_equal(now, buf, len);
    free(now);
}

/* Temporary files (ledger.tmp.RANDOM) in the fixture's directory. */
static int count_tmp(const fx *f)
{
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *de; (de = readdir(d));)
        n += strncmp(de->d_name, "ledger.tmp.", 11) == 0;
    closedir(d);
    return n;
}

static void assert_no_tmp(const fx *f)
{
    assert_int_equal(count_tmp(f), 0);
}

static void assert_entry_equal(const ldpb_ledger_entry *a, const ldpb_ledger_entry *b)
{
    assert_int_equal(a->assignment_id_len, b->assignment_id_len);
    assert_memory_equal(a->assignment_id, b->assignment_id, a->assignment_id_len);
    assert_int_equal(a->kind, b->kind);
    assert_true(memcmp(&a->epsilon, &b->epsilon, sizeof(double)) == 0);
    assert_true(memcmp(&a->value, &b->value, sizeof(double)) == 0);
}

/* Parses the file as stored and checks that the spend is exactly the sum of the stored entries'
 * charges (what every write produces). Returns the parsed state; the caller frees it. */
static void parse_file_checked(const char *path, ledger_state *st)
{
    uint8_t *buf;
    size_t len;
    assert_int_equal(read_all(path, &buf, &len), 0);
    ledger_state_init(st);
    assert_int_equal(ledger_parse(buf, len, st), LDPB_OK);
    free(buf);
    uint64_t sum = 0;
    for (size_t i = 0; i < st->count; i++)
        sum += ledger_charge_units(st->recs[i].epsilon);
    assert_true(st->spent_units == sum);
}

/* ---- semantics ---------------------------------------------------------------------------- */

static void create_and_reopen_round_trip(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = open_ok(f->path, 5.0, 2.0);
    assert_int_equal(access(f->path, F_OK), 0); /* written at creation */
    ldpb_ledger_opts o = ldpb_ledger_get_opts(l);
    assert_true(o.lifetime_budget == 5.0 && o.per_report_cap == 2.0);
    assert_true(ldpb_ledger_spent(l) == 0.0);
    assert_true(ldpb_ledger_remaining(l) == 5.0);
    assert_int_equal(ldpb_ledger_count(l), 0);

    const char *ids[] = {"a", "assignment-0002", "zz"};
    const ldpb_mech *mechs[] = {f->lin1, f->lap05, f->quad1};
    ldpb_ledger_entry e[3];
    for (int i = 0; i < 3; i++) {
        assert_int_equal(priv(l, ids[i], mechs[i], f->rng, 0.7, &e[i]), LDPB_OK);
        assert_int_equal(e[i].assignment_id_len, strlen(ids[i]));
        assert_memory_equal(e[i].assignment_id, ids[i], strlen(ids[i]));
        assert_int_equal(e[i].kind, ldpb_mech_get_kind(mechs[i]));
        assert_true(e[i].epsilon == ldpb_mech_epsilon_effective(mechs[i]));
    }
    assert_true(e[0].value == 0.0 || e[0].value == 1.0);
    double spent = ldpb_ledger_spent(l);
    assert_true(spent > 0.0);
    ldpb_ledger_close(l);

    /* Reopening with other options keeps the stored ones. */
    ldpb_ledger_opts other = opts_of(50.0, 10.0);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &other), LDPB_OK);
    o = ldpb_ledger_get_opts(l);
    assert_true(o.lifetime_budget == 5.0 && o.per_report_cap == 2.0);
    assert_int_equal(ldpb_ledger_count(l), 3);
    assert_true(ldpb_ledger_spent(l) == spent);
    assert_true(ldpb_ledger_remaining(l) == 5.0 - spent);
    for (int i = 0; i < 3; i++) {
        ldpb_ledger_entry got;
        assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)ids[i], strlen(ids[i]), &got),
                         LDPB_OK);
        assert_entry_equal(&got, &e[i]);
    }
    ldpb_ledger_close(l);

    /* opts may be NULL for an existing ledger. */
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
    assert_int_equal(ldpb_ledger_count(l), 3);
    ldpb_ledger_close(l);
    ledger_state st;
    parse_file_checked(f->path, &st);
    assert_int_equal(st.count, 3);
    ledger_state_fini(&st);
    ldpb_ledger_close(NULL);
}

static void in_memory_ledger_touches_no_file(void **state)
{
    fx *f = *state;
    ldpb_ledger *a = open_ok(NULL, 3.0, 1.0);
    ldpb_ledger *b = open_ok(NULL, 3.0, 1.0); /* no lock either */
    ldpb_ledger_entry e;
    assert_int_equal(priv(a, "x", f->lin1, f->rng, 1.0, &e), LDPB_OK);
    assert_int_equal(ldpb_ledger_count(a), 1);
    assert_int_equal(ldpb_ledger_count(b), 0);
    ldpb_ledger_close(a);
    ldpb_ledger_close(b);
    ldpb_ledger *c = open_ok(NULL, 3.0, 1.0);
    assert_int_equal(ldpb_ledger_count(c), 0);
    ldpb_ledger_close(c);
    int n = 0;
    DIR *d = opendir(f->dir);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));)
        n += de->d_name[0] != '.';
    closedir(d);
    assert_int_equal(n, 0);
}

static void relative_path_uses_cwd(void **state)
{
    fx *f = *state;
    char cwd[4096];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir(f->dir), 0);
    ldpb_ledger *l = open_ok("rel", 3.0, 1.0);
    ldpb_ledger_entry e;
    ldpb_err err = priv(l, "id", f->lin1, f->rng, 0.0, &e);
    ldpb_ledger_close(l);
    assert_int_equal(chdir(cwd), 0);
    assert_int_equal(err, LDPB_OK);
    char p[200];
    snprintf(p, sizeof p, "%s/rel", f->dir);
    ledger_state st;
    parse_file_checked(p, &st);
    assert_int_equal(st.count, 1);
    ledger_state_fini(&st);
}

static void same_id_same_bytes_spends_once(void **state)
{
    fx *f = *state;
    ldpb_rng *twin = make_rng("test_ledger");
    ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger_entry e1, e2;
    assert_int_equal(priv(l, "same", f->lap05, f->rng, 0.3, &e1), LDPB_OK);
    double spent = ldpb_ledger_spent(l);
    for (int i = 0; i < 5; i++) {
        /* A different reward is ignored: the stored release comes back. */
        assert_int_equal(priv(l, "same", f->lap05, f->rng, 0.9 - 0.1 * i, &e2), LDPB_OK);
        assert_entry_equal(&e1, &e2);
        assert_true(ldpb_ledger_spent(l) == spent);
    }
    assert_int_equal(ldpb_ledger_count(l), 1);
    /* Exactly one draw was taken from the generator. */
    double v;
    assert_int_equal(ldpb_mech_privatize(f->lap05, twin, 0.3, &v), LDPB_OK);
    assert_true(v == e1.value);
    assert_true(ldpb_rng_u64(f->rng) == ldpb_rng_u64(twin));
    ldpb_ledger_close(l);

    /* And after a restart. */
    l = open_ok(f->path, 10.0, 2.0);
    assert_int_equal(priv(l, "same", f->lap05, f->rng, 0.3, &e2), LDPB_OK);
    assert_entry_equal(&e1, &e2);
    assert_true(ldpb_ledger_spent(l) == spent);
    ldpb_ledger_close(l);
    ldpb_rng_free(twin);
}

static void known_id_with_other_mechanism_is_estate(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger_entry e, got;
    assert_int_equal(priv(l, "k", f->lin1, f->rng, 1.0, &e), LDPB_OK);
    double spent = ldpb_ledger_spent(l);
    uint8_t *before;
    size_t n;
    assert_int_equal(read_all(f->path, &before, &n), 0);
    /* Other kind, other epsilon, both: all refused, nothing drawn or spent. */
    assert_int_equal(priv(l, "k", f->lap05, f->rng, 1.0, &got), LDPB_ESTATE);
    assert_int_equal(got.assignment_id_len, 0); /* out is cleared on error */
    assert_int_equal(priv(l, "k", f->lin05, f->rng, 1.0, &got), LDPB_ESTATE);
    assert_int_equal(priv(l, "k", f->quad1, f->rng, 1.0, &got), LDPB_ESTATE);
    assert_true(ldpb_ledger_spent(l) == spent);
    assert_int_equal(ldpb_ledger_count(l), 1);
    assert_file_equals(f->path, before, n);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"k", 1, &got), LDPB_OK);
    assert_entry_equal(&got, &e);
    free(before);
    ldpb_ledger_close(l);
}

static void budget_and_cap_refusals_spend_nothing(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = open_ok(f->path, 1.5, 1.0);
    ldpb_ledger_entry e;
    uint8_t *before;
    size_t n;
    assert_int_equal(read_all(f->path, &before, &n), 0);

    /* Above the per-report cap. */
    assert_int_equal(ldpb_ledger_check(l, ldpb_mech_epsilon_effective(f->lin2)), LDPB_EBUDGET);
    assert_int_equal(priv(l, "c", f->lin2, f->rng, 0.5, &e), LDPB_EBUDGET);
    assert_true(ldpb_ledger_spent(l) == 0.0);
    assert_int_equal(ldpb_ledger_count(l), 0);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"c", 1, &e), LDPB_ESTATE);
    assert_file_equals(f->path, before, n);
    free(before);
    /* The cap binds even with budget to spare. */
    ldpb_ledger *m = open_ok(NULL, 100.0, 1.0);
    assert_int_equal(priv(m, "c", f->lin2, f->rng, 0.5, &e), LDPB_EBUDGET);
    assert_int_equal(priv(m, "c", f->lin1, f->rng, 0.5, &e), LDPB_OK);
    assert_true(ldpb_ledger_spent(m) ==
                ldexp((double)ledger_charge_units(ldpb_mech_epsilon_effective(f->lin1)), -32));
    ldpb_ledger_close(m);

    /* Then the lifetime budget: 1 fits, a second 1 does not, 0.5 - margin does. */
    assert_int_equal(ldpb_ledger_check(l, ldpb_mech_epsilon_effective(f->lin1)), LDPB_OK);
    assert_true(ldpb_ledger_spent(l) == 0.0);
    assert_int_equal(priv(l, "a", f->lin1, f->rng, 0.5, &e), LDPB_OK);
    double spent = ldpb_ledger_spent(l);
    assert_int_equal(read_all(f->path, &before, &n), 0);
    assert_int_equal(ldpb_ledger_check(l, ldpb_mech_epsilon_effective(f->lin1)), LDPB_EBUDGET);
    assert_int_equal(priv(l, "b", f->lin1, f->rng, 0.5, &e), LDPB_EBUDGET);
    assert_true(ldpb_ledger_spent(l) == spent);
    assert_int_equal(ldpb_ledger_count(l), 1);
    assert_file_equals(f->path, before, n);
    free(before);
    /* A known id is still answered once the budget is gone. */
    assert_int_equal(priv(l, "a", f->lin1, f->rng, 0.5, &e), LDPB_OK);
    assert_int_equal(priv(l, "b", f->lin025, f->rng, 0.5, &e), LDPB_OK);
    assert_true(ldpb_ledger_spent(l) <= 1.5);
    assert_true(ldpb_ledger_remaining(l) == 1.5 - ldpb_ledger_spent(l));
    ldpb_ledger_close(l);

    /* Refusals survive a restart: the spend was durable. */
    l = open_ok(f->path, 100.0, 10.0);
    assert_int_equal(priv(l, "d", f->lin1, f->rng, 0.5, &e), LDPB_EBUDGET);
    ldpb_ledger_close(l);
}

static void fixed_point_never_undercharges(void **state)
{
    fx *f = *state;
    const double two32 = 4294967296.0;
    /* Each charge is rounded up to a whole unit, by less than one unit, and never to zero. */
    const double eps[] = {0.1, 0.3, 1.0 / 3.0, 0.7, 1e-12, 9.999999, 1.0, 0.25};
    for (size_t i = 0; i < sizeof eps / sizeof eps[0]; i++) {
        uint64_t u = ledger_charge_units(eps[i]);
        assert_true(u >= 1);
        assert_true((long double)u >= (long double)eps[i] * two32);
        assert_true((long double)(u - 1) < (long double)eps[i] * two32);
    }
    assert_true(ledger_charge_units(1.0) == (uint64_t)1 << 32);
    assert_true(ledger_budget_units(0.1) == (uint64_t)floor(0.1 * two32));

    /* Many reports: the spend is k whole charges, never less than the true sum. */
    ldpb_ledger *l = open_ok(NULL, 1000.0, 10.0);
    const ldpb_mech *ms[] = {f->lin05, f->lap05, f->quad1, f->lin025};
    long double truth = 0.0L;
    uint64_t units = 0;
    for (int k = 0; k < 400; k++) {
        char id[16];
        snprintf(id, sizeof id, "fp%d", k);
        const ldpb_mech *m = ms[k % 4];
        ldpb_ledger_entry e;
        assert_int_equal(priv(l, id, m, f->rng, 0.5, &e), LDPB_OK);
        truth += (long double)ldpb_mech_epsilon_effective(m);
        units += ledger_charge_units(ldpb_mech_epsilon_effective(m));
        assert_true(ldpb_ledger_spent(l) == ldexp((double)units, -32));
        assert_true((long double)ldpb_ledger_spent(l) >= truth);
    }
    ldpb_ledger_close(l);

    /* A budget of exactly three rounded charges admits three and refuses the fourth; one unit
     * less refuses the third. */
    double e1 = ldpb_mech_epsilon_effective(f->lin05);
    uint64_t u1 = ledger_charge_units(e1);
    for (int less = 0; less <= 1; less++) {
        double budget = ldexp((double)(3 * u1 - (uint64_t)less), -32);
        l = open_ok(NULL, budget, e1);
        ldpb_ledger_entry e;
        assert_int_equal(priv(l, "1", f->lin05, f->rng, 0.5, &e), LDPB_OK);
        assert_int_equal(priv(l, "2", f->lin05, f->rng, 0.5, &e), LDPB_OK);
        assert_int_equal(priv(l, "3", f->lin05, f->rng, 0.5, &e), less ? LDPB_EBUDGET : LDPB_OK);
        assert_int_equal(priv(l, "4", f->lin05, f->rng, 0.5, &e), LDPB_EBUDGET);
        assert_true(ldpb_ledger_remaining(l) == (less ? ldexp((double)(u1 - 1), -32) : 0.0));
        ldpb_ledger_close(l);
    }
}

static void many_ids_and_the_entry_limit(void **state)
{
    fx *f = *state;
    /* Enough budget for the entry limit at epsilon 0.001. */
    ldpb_mech *tiny = make_mech(LDPB_MECH_LINEAR, 0.001);
    ldpb_ledger *l = open_ok(NULL, 2000.0, 1.0);
    ldpb_ledger_entry e;
    uint8_t id[4];
    for (uint32_t i = 0; i < LDPB_LEDGER_ENTRIES_MAX; i++) {
        memcpy(id, &i, sizeof id);
        assert_int_equal(ldpb_ledger_privatize(l, id, sizeof id, tiny, f->rng, 0.5, &e), LDPB_OK);
    }
    assert_int_equal(ldpb_ledger_count(l), LDPB_LEDGER_ENTRIES_MAX);
    assert_int_equal(priv(l, "one more", tiny, f->rng, 0.5, &e), LDPB_EBUDGET);
    assert_int_equal(ldpb_ledger_check(l, 0.001), LDPB_EBUDGET);
    for (uint32_t i = 0; i < LDPB_LEDGER_ENTRIES_MAX; i += 997) {
        memcpy(id, &i, sizeof id);
        assert_int_equal(ldpb_ledger_lookup(l, id, sizeof id, &e), LDPB_OK);
        assert_memory_equal(e.assignment_id, id, sizeof id);
    }
    ldpb_ledger_close(l);
    ldpb_mech_free(tiny);
}

/* ---- error codes ---------------------------------------------------------------------------- */

static void einval_and_erange(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = NULL;
    ldpb_ledger_opts o = opts_of(10.0, 1.0);
    assert_int_equal(ldpb_ledger_open(NULL, f->path, &o), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_open(&l, NULL, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_open(&l, "", &o), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_EINVAL); /* missing, no opts */
    assert_null(l);
    assert_int_equal(access(f->path, F_OK), -1);

    const double bad_inval[][2] = {{NAN, 1.0}, {INFINITY, 1.0}, {10.0, NAN}, {10.0, -INFINITY}};
    for (size_t i = 0; i < 4; i++) {
        o = opts_of(bad_inval[i][0], bad_inval[i][1]);
        assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_EINVAL);
        assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_EINVAL);
    }
    const double bad_range[][2] = {{0.0, 0.0}, {-1.0, -1.0}, {10.0, 0.0},       {10.0, -1.0},
                                   {1.0, 1.5}, {2e6, 1.0},   {0x1p-33, 0x1p-34}};
    for (size_t i = 0; i < sizeof bad_range / sizeof bad_range[0]; i++) {
        o = opts_of(bad_range[i][0], bad_range[i][1]);
        assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_ERANGE);
        assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_ERANGE);
    }
    assert_int_equal(access(f->path, F_OK), -1);
    o = opts_of(LDPB_LEDGER_BUDGET_MAX, LDPB_LEDGER_BUDGET_MAX); /* the edges are allowed */
    assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_OK);
    ldpb_ledger_close(l);
    o = opts_of(0x1p-32, 0x1p-32);
    assert_int_equal(ldpb_ledger_open(&l, NULL, &o), LDPB_OK);
    ldpb_ledger_close(l);

    l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger_entry e;
    uint8_t id[LDPB_ASSIGNMENT_ID_MAX + 1];
    memset(id, 'i', sizeof id);
    assert_int_equal(ldpb_ledger_privatize(NULL, id, 1, f->lin1, f->rng, 0.5, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, NULL, 1, f->lin1, f->rng, 0.5, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, 0, f->lin1, f->rng, 0.5, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, sizeof id, f->lin1, f->rng, 0.5, &e),
                     LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, 1, NULL, f->rng, 0.5, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, 1, f->lin1, NULL, 0.5, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, 1, f->lin1, f->rng, 0.5, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, 1, f->lin1, f->rng, NAN, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_privatize(l, id, 1, f->lin1, f->rng, -INFINITY, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_count(l), 0);
    /* The longest id is fine. */
    assert_int_equal(ldpb_ledger_privatize(l, id, LDPB_ASSIGNMENT_ID_MAX, f->lin1, f->rng, 0.5, &e),
                     LDPB_OK);
    assert_int_equal(ldpb_ledger_lookup(NULL, id, 1, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_lookup(l, NULL, 1, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_lookup(l, id, 0, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_lookup(l, id, sizeof id, &e), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_lookup(l, id, 1, NULL), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_lookup(l, id, 1, &e), LDPB_ESTATE); /* unknown id */
    assert_int_equal(ldpb_ledger_check(NULL, 1.0), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_check(l, NAN), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_check(l, 0.0), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_check(l, -1.0), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_check(l, INFINITY), LDPB_EINVAL);
    assert_int_equal(ldpb_ledger_check(l, 1e300), LDPB_EBUDGET);
    ldpb_ledger_close(l);
    assert_true(isnan(ldpb_ledger_spent(NULL)));
    assert_true(ldpb_ledger_remaining(NULL) == 0.0);
    assert_int_equal(ldpb_ledger_count(NULL), 0);
    assert_true(ldpb_ledger_get_opts(NULL).lifetime_budget == 0.0);
    ldpb_ledger_opts_init(NULL);
    ldpb_ledger_opts_init(&o);
    assert_true(o.lifetime_budget == 100.0 && o.per_report_cap == LDPB_EPSILON_MAX);
}

static void second_open_is_estate(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger *l2 = NULL;
    assert_int_equal(ldpb_ledger_open(&l2, f->path, NULL), LDPB_ESTATE);
    assert_null(l2);

    /* Another process is refused too. */
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        ldpb_ledger *c = NULL;
        _exit((int)ldpb_ledger_open(&c, f->path, NULL));
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), LDPB_ESTATE);

    ldpb_ledger_close(l);
    assert_int_equal(ldpb_ledger_open(&l2, f->path, NULL), LDPB_OK);
    ldpb_ledger_close(l2);
}

static void assert_privatize_eio_changes_nothing(fx *f, ldpb_ledger *l, const char *id)
{
    double spent = ldpb_ledger_spent(l);
    size_t count = ldpb_ledger_count(l);
    ldpb_ledger_entry e;
    assert_int_equal(priv(l, id, f->lin1, f->rng, 0.5, &e), LDPB_EIO);
    assert_int_equal(e.assignment_id_len, 0);
    assert_true(e.value == 0.0);
    assert_true(ldpb_ledger_spent(l) == spent);
    assert_int_equal(ldpb_ledger_count(l), count);
    assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)id, strlen(id), &e), LDPB_ESTATE);
}

static void eio_from_the_filesystem(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = NULL;
    ldpb_ledger_opts o = opts_of(10.0, 2.0);
    char p[200];

    /* A path in a directory that does not exist. */
    snprintf(p, sizeof p, "%s/missing/ledger", f->dir);
    assert_int_equal(ldpb_ledger_open(&l, p, &o), LDPB_EIO);
    assert_null(l);

    /* The ledger path is a directory: not a regular file. */
    snprintf(p, sizeof p, "%s/isdir", f->dir);
    assert_int_equal(mkdir(p, 0700), 0);
    assert_int_equal(ldpb_ledger_open(&l, p, &o), LDPB_EINVAL);

    /* The temporary file cannot be created (its name is too long for the file system, the
     * ledger's is not): the open fails and nothing is left behind. */
    char longp[400];
    int dl = snprintf(longp, sizeof longp, "%s/", f->dir);
    memset(longp + dl, 'n', 250);
    longp[dl + 250] = '\0';
    assert_int_equal(ldpb_ledger_open(&l, longp, &o), LDPB_EIO);
    assert_int_equal(access(longp, F_OK), -1);
    assert_no_tmp(f);

    /* ... and when creation fails later (the directory is swapped for a file), a privatization
     * fails and leaves the file as it was. */
    l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger_entry e;
    assert_int_equal(priv(l, "first", f->lin1, f->rng, 0.5, &e), LDPB_OK);
    uint8_t *before;
    size_t n;
    assert_int_equal(read_all(f->path, &before, &n), 0);
    char moved[80];
    snprintf(moved, sizeof moved, "%s.moved", f->dir);
    assert_int_equal(rename(f->dir, moved), 0);
    int blocker = open(f->dir, O_WRONLY | O_CREAT | O_EXCL, 0600);
    assert_true(blocker >= 0);
    close(blocker);
    assert_privatize_eio_changes_nothing(f, l, "second");
    assert_int_equal(unlink(f->dir), 0);
    assert_int_equal(rename(moved, f->dir), 0);
    assert_file_equals(f->path, before, n);
    assert_no_tmp(f);
    assert_int_equal(priv(l, "second", f->lin1, f->rng, 0.5, &e), LDPB_OK);
    free(before);

    /* The rename fails (the ledger path became a directory): the temporary file is removed. */
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(mkdir(f->path, 0700), 0);
    assert_privatize_eio_changes_nothing(f, l, "third");
    assert_no_tmp(f);
    assert_int_equal(rmdir(f->path), 0);
    ldpb_ledger_close(l);

    /* A directory we may not write to (root ignores permissions, so only as a normal user). */
    if (geteuid() != 0) {
        snprintf(p, sizeof p, "%s/ro", f->dir);
        assert_int_equal(mkdir(p, 0500), 0);
        char q[220];
        snprintf(q, sizeof q, "%s/ledger", p);
        assert_int_equal(ldpb_ledger_open(&l, q, &o), LDPB_EIO);
    }
}

static void on_alarm(int sig)
{
    (void)sig;
    /* A blocked open is a regression: fail loudly instead of hanging the suite. */
    static const char msg[] = "test_ledger: ldpb_ledger_open blocked on a non-regular file\n";
    if (write(2, msg, sizeof msg - 1) < 0)
        _exit(3);
    _exit(2);
}

/* A FIFO, a socket or a device at the ledger's path is refused at once (LDPB_EINVAL), never
 * waited on: opening a FIFO for reading blocks until a writer comes. */
static void non_regular_path_refused_without_blocking(void **state)
{
    fx *f = *state;
    ldpb_ledger_opts o = opts_of(10.0, 2.0);
    ldpb_ledger *l = NULL;
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigemptyset(&sa.sa_mask);
    assert_int_equal(sigaction(SIGALRM, &sa, &old), 0);
    alarm(5);

    assert_int_equal(mkfifo(f->path, 0600), 0);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_EINVAL);
    assert_null(l);
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_EINVAL);
    assert_int_equal(unlink(f->path), 0);

    /* A character device, reached through the ledger's own name (a link to /dev/zero is refused
     * as a link; the device itself is tested through mknod where permitted). */
    assert_int_equal(symlink("/dev/zero", f->path), 0);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_EINVAL);
    assert_int_equal(unlink(f->path), 0);
    if (mknod(f->path, S_IFCHR | 0600, makedev(1, 5)) == 0) {
        assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_EINVAL);
        assert_int_equal(unlink(f->path), 0);
    }

    /* A FIFO at the lock's path neither blocks nor is taken as the lock. */
    char lockp[200];
    snprintf(lockp, sizeof lockp, "%s.lock", f->path);
    unlink(lockp);
    assert_int_equal(mkfifo(lockp, 0600), 0);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_EINVAL);
    assert_int_equal(access(f->path, F_OK), -1);
    assert_int_equal(unlink(lockp), 0);

    alarm(0);
    assert_int_equal(sigaction(SIGALRM, &old, NULL), 0);
    l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger_close(l);
}

/* Links planted where the ledger writes are never followed: at the name earlier versions used
 * for the temporary file, at names of the current pattern (stale files are removed as links,
 * their targets untouched), and at the ledger's own path. */
static void planted_links_are_not_followed(void **state)
{
    fx *f = *state;
    char target[160];
    snprintf(target, sizeof target, "%s/precious", f->dir);
    static const char precious[] = "not a ledger, must stay as it is\n";
    write_all(target, (const uint8_t *)precious, sizeof precious - 1);

    assert_int_equal(symlink(target, f->tmp), 0);
    char stale[200];
    snprintf(stale, sizeof stale, "%s.0123456789abcdef", f->tmp);
    assert_int_equal(symlink(target, stale), 0);
    char other[200];
    snprintf(other, sizeof other, "%s/ledger.tmp.not-ours", f->dir);
    write_all(other, (const uint8_t *)"x", 1);

    ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
    ldpb_ledger_entry e;
    for (int i = 0; i < 3; i++) {
        char id[8];
        snprintf(id, sizeof id, "id%d", i);
        assert_int_equal(priv(l, id, f->lin1, f->rng, 0.5, &e), LDPB_OK);
    }
    ldpb_ledger_close(l);
    assert_file_equals(target, (const uint8_t *)precious, sizeof precious - 1);
    struct stat sb;
    assert_int_equal(lstat(f->path, &sb), 0);
    assert_true(S_ISREG(sb.st_mode));
    assert_int_equal(sb.st_mode & 0777, 0600);
    assert_int_equal(lstat(stale, &sb), -1);  /* the stale link was removed */
    assert_int_equal(lstat(f->tmp, &sb), 0);  /* an old-style name could be another ledger's */
    assert_int_equal(access(other, F_OK), 0); /* not of the pattern: not ours */
    assert_int_equal(count_tmp(f), 1);
    assert_int_equal(unlink(other), 0);

    /* The ledger's own path as a link: refused, the target untouched. */
    assert_int_equal(unlink(f->path), 0);
    assert_int_equal(symlink(target, f->path), 0);
    ldpb_ledger_opts o = opts_of(10.0, 2.0);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_EINVAL);
    assert_null(l);
    assert_file_equals(target, (const uint8_t *)precious, sizeof precious - 1);
}

typedef struct fail_at {
    ledger_step step;
    int calls;
} fail_at;

static int fail_hook(void *ctx, ledger_step s)
{
    fail_at *fa = ctx;
    fa->calls++;
    return s == fa->step;
}

/* Each durability step failing: before the rename the old file stays and the handle goes on;
 * after it the spend may be on disk, so the handle refuses new draws until reopened. */
static void eio_at_each_durability_step(void **state)
{
    fx *f = *state;
    const ledger_step steps[] = {LEDGER_STEP_TMP_WRITTEN, LEDGER_STEP_TMP_SYNCED,
                                 LEDGER_STEP_RENAMED, LEDGER_STEP_DIR_SYNCED};
    for (size_t i = 0; i < 4; i++) {
        unlink(f->path);
        ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
        ldpb_ledger_entry e;
        assert_int_equal(priv(l, "before", f->lin1, f->rng, 0.5, &e), LDPB_OK);
        uint8_t *before;
        size_t n;
        assert_int_equal(read_all(f->path, &before, &n), 0);

        fail_at fa = {steps[i], 0};
        ledger_set_step_hook(l, fail_hook, &fa);
        assert_privatize_eio_changes_nothing(f, l, "x");
        assert_int_equal(fa.calls, (int)i + 1);
        assert_no_tmp(f);
        int renamed = steps[i] >= LEDGER_STEP_RENAMED;
        if (!renamed)
            assert_file_equals(f->path, before, n);
        ledger_set_step_hook(l, NULL, NULL);
        /* Known ids are still answered; new draws only if the old file is known to stand. */
        assert_int_equal(priv(l, "before", f->lin1, f->rng, 0.5, &e), LDPB_OK);
        assert_int_equal(priv(l, "y", f->lin1, f->rng, 0.5, &e), renamed ? LDPB_EIO : LDPB_OK);
        ldpb_ledger_close(l);

        l = open_ok(f->path, 10.0, 2.0);
        assert_int_equal(ldpb_ledger_lookup(l, (const uint8_t *)"x", 1, &e),
                         renamed ? LDPB_OK : LDPB_ESTATE);
        ldpb_ledger_close(l);
        ledger_state st;
        parse_file_checked(f->path, &st);
        ledger_state_fini(&st);
        free(before);
    }
}

/* ---- corrupt files -------------------------------------------------------------------------- */

static void make_small_ledger(fx *f, uint8_t **buf, size_t *len)
{
    ldpb_ledger *l = open_ok(f->path, 4.0, 1.0);
    ldpb_ledger_entry e;
    assert_int_equal(priv(l, "id-a", f->lin1, f->rng, 0.2, &e), LDPB_OK);
    assert_int_equal(priv(l, "id-b", f->lap05, f->rng, 0.8, &e), LDPB_OK);
    ldpb_ledger_close(l);
    assert_int_equal(read_all(f->path, buf, len), 0);
}

static void assert_open_corrupt(fx *f, const uint8_t *img, size_t len)
{
    write_all(f->path, img, len);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_ECORRUPT);
    assert_null(l);
    ldpb_ledger_opts o = opts_of(4.0, 1.0);
    assert_int_equal(ldpb_ledger_open(&l, f->path, &o), LDPB_ECORRUPT); /* never a reset */
    assert_file_equals(f->path, img, len);
    assert_no_tmp(f);
}

static void corrupt_files_are_refused_and_left_alone(void **state)
{
    fx *f = *state;
    uint8_t *good;
    size_t len;
    make_small_ledger(f, &good, &len);
    assert_int_equal(len, LEDGER_HEADER_BYTES + 2 * 18 + 8 + LEDGER_CHECKSUM_BYTES);
    uint8_t *img = malloc(len + 1);
    assert_non_null(img);

    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit += 7) {
            memcpy(img, good, len);
            img[i] ^= (uint8_t)(1u << bit);
            assert_open_corrupt(f, img, len);
        }
    }
    for (size_t cut = 0; cut < len; cut++)
        assert_open_corrupt(f, good, cut);
    memcpy(img, good, len);
    img[len] = 0;
    assert_open_corrupt(f, img, len + 1);

    /* Too big to be a ledger: refused before it is read. */
    int fd = open(f->path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)LEDGER_FILE_MAX + 1), 0);
    close(fd);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_ECORRUPT);
    struct stat sb;
    assert_int_equal(stat(f->path, &sb), 0);
    assert_true((uint64_t)sb.st_size == LEDGER_FILE_MAX + 1);

    /* The original still opens. */
    write_all(f->path, good, len);
    l = open_ok(f->path, 4.0, 1.0);
    assert_int_equal(ldpb_ledger_count(l), 2);
    ldpb_ledger_close(l);
    free(img);
    free(good);
}

/* The size bound is the format's on every word size: 68 + 4 + 2^20 * (1 + 64 + 24 + 64 + 8 * 561)
 * + 32 bytes, over 4 GiB, which a size_t computation wrapped to about 0.9 GB on armhf. A file
 * past what the process can address (only on a 32-bit target: 2 GiB + 1 here) but within the
 * bound is refused as too big for memory, not called corrupt, and left untouched. */
static void file_size_bound_is_the_same_on_every_word_size(void **state)
{
    fx *f = *state;
    assert_true(LEDGER_FILE_MAX == UINT64_C(4866441320));
    uint64_t size = LEDGER_LOAD_MAX < LEDGER_FILE_MAX ? LEDGER_LOAD_MAX + 1 : LEDGER_FILE_MAX + 1;
    ldpb_err want = LEDGER_LOAD_MAX < LEDGER_FILE_MAX ? LDPB_ENOMEM : LDPB_ECORRUPT;
    write_all(f->path, (const uint8_t *)"x", 1);
    int fd = open(f->path, O_WRONLY | O_TRUNC);
    assert_true(fd >= 0);
    assert_int_equal(ftruncate(fd, (off_t)size), 0); /* sparse: no disk used */
    close(fd);
    ldpb_ledger *l = NULL;
    assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), want);
    assert_null(l);
    struct stat sb;
    assert_int_equal(stat(f->path, &sb), 0);
    assert_true((uint64_t)sb.st_size == size);
    assert_no_tmp(f);
}

static void reseal(uint8_t *img, size_t len)
{
    crypto_generichash(img + len - LEDGER_CHECKSUM_BYTES, LEDGER_CHECKSUM_BYTES, img,
                       len - LEDGER_CHECKSUM_BYTES, NULL, 0);
}

static void put64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void putd(uint8_t *p, double d)
{
    uint64_t u;
    memcpy(&u, &d, 8);
    put64(p, u);
}

static ldpb_err parse_img(const uint8_t *img, size_t len)
{
    ledger_state st;
    ledger_state_init(&st);
    ldpb_err err = ledger_parse(img, len, &st);
    if (err != LDPB_OK)
        assert_true(st.count == 0 && st.recs == NULL && st.slots == NULL);
    ledger_state_fini(&st);
    return err;
}

/* Structural defects behind a valid checksum: the parser checks the content, not only the
 * hash. Offsets follow docs/ledger.md; entry 0 is id "id-a" (linear), entry 1 "id-b" (laplace). */
static void resealed_structural_defects_are_corrupt(void **state)
{
    fx *f = *state;
    uint8_t *good;
    size_t len;
    make_small_ledger(f, &good, &len);
    uint8_t *img = malloc(len + 40);
    assert_non_null(img);
    const size_t e0 = LEDGER_HEADER_BYTES, e1 = e0 + 22;
    const size_t kind0 = e0 + 5, eps0 = e0 + 6, val0 = e0 + 14, val1 = e1 + 14, eps1 = e1 + 6;

    /* Control: the untouched image parses and re-encodes to the same bytes. */
    ledger_state st;
    ledger_state_init(&st);
    assert_int_equal(ledger_parse(good, len, &st), LDPB_OK);
    uint8_t *enc;
    size_t enc_len;
    assert_int_equal(ledger_encode(&st, &enc, &enc_len), LDPB_OK);
    assert_int_equal(enc_len, len);
    assert_memory_equal(enc, good, len);
    free(enc);
    uint64_t spent = st.spent_units;
    uint64_t charged =
        ledger_charge_units(st.recs[0].epsilon) + ledger_charge_units(st.recs[1].epsilon);
    ledger_state_fini(&st);

#define DEFECT(stmt)                                                                               \
    do {                                                                                           \
        memcpy(img, good, len);                                                                    \
        stmt;                                                                                      \
        reseal(img, len);                                                                          \
        assert_int_equal(parse_img(img, len), LDPB_ECORRUPT);                                      \
    } while (0)
    DEFECT(img[0] = 'X');                          /* magic */
    DEFECT(img[8] = 2);                            /* version */
    DEFECT(img[12] = 1);                           /* flags */
    DEFECT(putd(img + 16, NAN));                   /* budget */
    DEFECT(putd(img + 16, 0.0));                   /* budget */
    DEFECT(putd(img + 16, 2e6));                   /* budget above the maximum */
    DEFECT(putd(img + 24, 5.0));                   /* cap above budget */
    DEFECT(putd(img + 24, -1.0));                  /* cap */
    DEFECT(put64(img + 32, charged - 1));          /* spent below the entries' charges */
    DEFECT(put64(img + 32, (uint64_t)5 << 32));    /* spent above the budget */
    DEFECT(img[40] = 3);                           /* count too high */
    DEFECT(img[40] = 1);                           /* count too low: trailing bytes */
    DEFECT(img[43] = 0x80);                        /* count absurd */
    DEFECT(img[e0] = 0);                           /* empty id */
    DEFECT(img[e0] = LDPB_ASSIGNMENT_ID_MAX + 1);  /* id too long */
    DEFECT(img[e1] = 60);                          /* id runs past the end */
    DEFECT(img[kind0] = 0);                        /* kind */
    DEFECT(img[kind0] = 5);                        /* kind */
    DEFECT(putd(img + eps0, 0.0));                 /* epsilon */
    DEFECT(putd(img + eps0, -0.5));                /* epsilon */
    DEFECT(putd(img + eps0, NAN));                 /* epsilon */
    DEFECT(putd(img + eps0, 1.5));                 /* epsilon above the cap */
    DEFECT(putd(img + val0, 0.5));                 /* Bernoulli value */
    DEFECT(putd(img + val0, -0.0));                /* Bernoulli value, not canonical */
    DEFECT(putd(img + val1, INFINITY));            /* Laplace value */
    DEFECT(putd(img + val1, NAN));                 /* Laplace value */
    DEFECT(memcpy(img + e1 + 1, img + e0 + 1, 4)); /* duplicate id */
#undef DEFECT

    /* And the positive controls for the checks above: these edits stay valid. */
    memcpy(img, good, len);
    put64(img + 32, spent + 12345);
    reseal(img, len);
    assert_int_equal(parse_img(img, len), LDPB_OK); /* spent may exceed the entries' sum */
    memcpy(img, good, len);
    putd(img + val1, -3.25);
    putd(img + eps1, 0.125);
    reseal(img, len);
    assert_int_equal(parse_img(img, len), LDPB_OK);
    assert_int_equal(parse_img(NULL, 0), LDPB_ECORRUPT);
    free(img);
    free(good);
}

/* A stored Laplace value is one the aggregator admits (the mechanism table's rule): a ledger
 * holding a value more than 100 noise scales from [0, 1] would make the client resend, forever,
 * a report that every aggregator refuses, so the file is refused as not written by this code.
 * Before, any finite value passed. Entry 1 is "id-b" (laplace at 0.5, stored as its effective
 * epsilon), as above; the edits lower that epsilon, which the spent total still covers. */
static void laplace_value_beyond_the_admissible_range_is_corrupt(void **state)
{
    fx *f = *state;
    uint8_t *good;
    size_t len;
    make_small_ledger(f, &good, &len);
    uint8_t *img = malloc(len);
    assert_non_null(img);
    const size_t e1 = LEDGER_HEADER_BYTES + 22, eps1 = e1 + 6, val1 = e1 + 14;
    static const struct {
        double eps, value;
        ldpb_err want;
    } cases[] = {
        {0.25, 401.0, LDPB_OK},           /* 0.5 + 0.5 + 100 / eps: the edge */
        {0.25, -400.0, LDPB_OK},          /* the other edge */
        {0.25, 401.0625, LDPB_ECORRUPT},  /* just beyond */
        {0.25, -400.0625, LDPB_ECORRUPT}, /* just beyond */
        {0.25, 1e6, LDPB_ECORRUPT},       {0.125, 801.0, LDPB_OK}, {0.125, 1e300, LDPB_ECORRUPT},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        memcpy(img, good, len);
        putd(img + eps1, cases[i].eps);
        putd(img + val1, cases[i].value);
        reseal(img, len);
        assert_int_equal(parse_img(img, len), cases[i].want);
        assert_int_equal(ldpb_mech_check_value(LDPB_MECH_LAPLACE, cases[i].eps, 0, cases[i].value,
                                               "r", NULL) == LDPB_OK,
                         cases[i].want == LDPB_OK);
    }
    free(img);
    free(good);
}

/* ---- crashes -------------------------------------------------------------------------------- */

static int kill_hook(void *ctx, ledger_step s)
{
    if (s == *(const ledger_step *)ctx)
        raise(SIGKILL);
    return 0;
}

static void write_full(int fd, const void *p, size_t n)
{
    const uint8_t *b = p;
    while (n) {
        ssize_t w = write(fd, b, n);
        if (w <= 0)
            _exit(3);
        b += w;
        n -= (size_t)w;
    }
}

static size_t read_full(int fd, void *p, size_t n)
{
    uint8_t *b = p;
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, b + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    return got;
}

/* SIGKILL at each durability step (0: no kill). The value reaches the pipe only once
 * privatize has returned, as it would reach the network. */
static void kill_at_each_step(void **state)
{
    fx *f = *state;
    const ledger_step steps[] = {0,
                                 LEDGER_STEP_TMP_WRITTEN,
                                 LEDGER_STEP_TMP_SYNCED,
                                 LEDGER_STEP_RENAMED,
                                 LEDGER_STEP_DIR_SYNCED,
                                 LEDGER_STEP_COMMITTED};
    for (size_t i = 0; i < sizeof steps / sizeof steps[0]; i++) {
        unlink(f->path);
        ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
        ldpb_ledger_entry e;
        assert_int_equal(priv(l, "old", f->lap05, f->rng, 0.5, &e), LDPB_OK);
        double spent0 = ldpb_ledger_spent(l);
        ldpb_ledger_close(l);

        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            ldpb_ledger *c = NULL;
            if (ldpb_ledger_open(&c, f->path, NULL) != LDPB_OK)
                _exit(2);
            ledger_step s = steps[i];
            ledger_set_step_hook(c, kill_hook, &s);
            ldpb_ledger_entry ce;
            if (priv(c, "new", f->lap05, f->rng, 0.25, &ce) != LDPB_OK)
                _exit(2);
            write_full(pfd[1], &ce.value, sizeof ce.value);
            _exit(0);
        }
        close(pfd[1]);
        double released;
        size_t got = read_full(pfd[0], &released, sizeof released);
        close(pfd[0]);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (steps[i] == 0) {
            assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
            assert_int_equal(got, sizeof released);
        } else {
            assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
            assert_int_equal(got, 0);
        }

        /* Never corrupt; the spend is on disk iff the rename happened; released implies on disk. */
        ledger_state st;
        parse_file_checked(f->path, &st);
        ledger_state_fini(&st);
        l = NULL;
        assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
        int on_disk = ldpb_ledger_lookup(l, (const uint8_t *)"new", 3, &e) == LDPB_OK;
        assert_int_equal(on_disk, steps[i] == 0 || steps[i] >= LEDGER_STEP_RENAMED);
        double charge =
            ldexp((double)ledger_charge_units(ldpb_mech_epsilon_effective(f->lap05)), -32);
        assert_true(ldpb_ledger_spent(l) == spent0 + (on_disk ? charge : 0.0));
        if (got)
            assert_true(e.value == released);
        /* A retry returns the stored value, or (if nothing reached disk) draws once. */
        ldpb_ledger_entry r;
        assert_int_equal(priv(l, "new", f->lap05, f->rng, 0.25, &r), LDPB_OK);
        if (on_disk)
            assert_entry_equal(&r, &e);
        assert_true(ldpb_ledger_spent(l) == spent0 + charge);
        ldpb_ledger_close(l);
    }
}

typedef struct released {
    uint32_t index;
    uint32_t pad;
    double value;
} released;

/* Children privatize many ids and are killed after a random delay. After each, the ledger
 * opens, its spend is exactly the sum of its entries' charges, and every released value is
 * stored as released. */
static void kill_at_random_moments(void **state)
{
    fx *f = *state;
    ldpb_ledger *l = open_ok(f->path, 1000.0, 2.0);
    ldpb_ledger_close(l);
    enum { CHILDREN = 16, IDS = 400 };
    int killed_mid = 0;
    size_t total_released = 0;
    for (int c = 0; c < CHILDREN; c++) {
        int pfd[2];
        assert_int_equal(pipe(pfd), 0);
        pid_t pid = fork();
        assert_true(pid >= 0);
        if (pid == 0) {
            close(pfd[0]);
            ldpb_ledger *cl = NULL;
            if (ldpb_ledger_open(&cl, f->path, NULL) != LDPB_OK)
                _exit(2);
            for (uint32_t i = 0; i < IDS; i++) {
                char id[32];
                snprintf(id, sizeof id, "c%d-%u", c, (unsigned)i);
                ldpb_ledger_entry e;
                const ldpb_mech *m = (i % 2) ? f->lap05 : f->lin05;
                if (priv(cl, id, m, f->rng, 0.5, &e) != LDPB_OK)
                    _exit(2);
                released r = {i, 0, e.value};
                write_full(pfd[1], &r, sizeof r);
            }
            _exit(0);
        }
        close(pfd[1]);
        struct timespec ts = {0, (long)ldpb_rng_uniform(f->rng, 40000) * 1000L};
        nanosleep(&ts, NULL);
        kill(pid, SIGKILL);
        int status;
        assert_int_equal(waitpid(pid, &status, 0), pid);
        if (WIFEXITED(status))
            assert_int_equal(WEXITSTATUS(status), 0);
        else
            killed_mid++;

        ledger_state st;
        parse_file_checked(f->path, &st);
        released r;
        while (read_full(pfd[0], &r, sizeof r) == sizeof r) {
            char id[32];
            snprintf(id, sizeof id, "c%d-%u", c, (unsigned)r.index);
            const ledger_record *rec = ledger_state_find(&st, (const uint8_t *)id, strlen(id));
            assert_non_null(rec);
            assert_true(rec->value == r.value);
            total_released++;
        }
        close(pfd[0]);
        ledger_state_fini(&st);
        l = NULL;
        assert_int_equal(ldpb_ledger_open(&l, f->path, NULL), LDPB_OK);
        ldpb_ledger_close(l);
    }
    /* The delays are short enough that most children die mid-run. */
    assert_true(killed_mid > 0);
    print_message("%d of %d children killed mid-run, %zu values released\n", killed_mid, CHILDREN,
                  total_released);
}

/* ---- out of memory -------------------------------------------------------------------------- */

/* Fails allocation n = 0, 1, 2, ... of open + privatize until both succeed. Every failure is
 * LDPB_ENOMEM and (under ASan) leaks nothing; the state stays consistent. */
static void oom_loop(fx *f, const char *path, int existing)
{
    long n;
    for (n = 0; n < 1000; n++) {
        alloc_fail_arm(n);
        ldpb_ledger *l = NULL;
        ldpb_ledger_opts o = opts_of(10.0, 2.0);
        ldpb_err err = ldpb_ledger_open(&l, path, &o);
        if (err) {
            alloc_fail_disarm();
            assert_int_equal(err, LDPB_ENOMEM);
            assert_null(l);
            continue;
        }
        size_t count = ldpb_ledger_count(l);
        double spent = ldpb_ledger_spent(l);
        ldpb_ledger_entry e;
        err = priv(l, "fresh", f->lin1, f->rng, 0.5, &e);
        alloc_fail_disarm();
        if (err) {
            assert_int_equal(err, LDPB_ENOMEM);
            assert_int_equal(ldpb_ledger_count(l), count);
            assert_true(ldpb_ledger_spent(l) == spent);
            ldpb_ledger_close(l);
            continue;
        }
        assert_int_equal(ldpb_ledger_count(l), count + 1);
        ldpb_ledger_close(l);
        break;
    }
    assert_true(n > 0 && n < 1000);
    if (existing)
        assert_true(n > 2); /* the parse allocates too */
}

static void out_of_memory_at_every_allocation(void **state)
{
    fx *f = *state;
    oom_loop(f, NULL, 0);
    oom_loop(f, f->path, 0);
    unlink(f->path);

    ldpb_ledger *l = open_ok(f->path, 10.0, 2.0);
    for (int i = 0; i < 20; i++) {
        char id[8];
        snprintf(id, sizeof id, "e%d", i);
        ldpb_ledger_entry e;
        assert_int_equal(priv(l, id, f->lin025, f->rng, 0.5, &e), LDPB_OK);
    }
    ldpb_ledger_close(l);
    oom_loop(f, f->path, 1);
    ledger_state st;
    parse_file_checked(f->path, &st);
    assert_int_equal(st.count, 21);
    ledger_state_fini(&st);
}

int main(void)
{
#define T(fn) cmocka_unit_test_setup_teardown(fn, setup, teardown)
    const struct CMUnitTest tests[] = {
        T(create_and_reopen_round_trip),
        T(in_memory_ledger_touches_no_file),
        T(relative_path_uses_cwd),
        T(same_id_same_bytes_spends_once),
        T(known_id_with_other_mechanism_is_estate),
        T(budget_and_cap_refusals_spend_nothing),
        T(fixed_point_never_undercharges),
        T(many_ids_and_the_entry_limit),
        T(einval_and_erange),
        T(second_open_is_estate),
        T(eio_from_the_filesystem),
        T(eio_at_each_durability_step),
        T(non_regular_path_refused_without_blocking),
        T(planted_links_are_not_followed),
        T(corrupt_files_are_refused_and_left_alone),
        T(file_size_bound_is_the_same_on_every_word_size),
        T(resealed_structural_defects_are_corrupt),
        T(laplace_value_beyond_the_admissible_range_is_corrupt),
        T(kill_at_each_step),
        T(kill_at_random_moments),
        T(out_of_memory_at_every_allocation),
    };
#undef T
    return cmocka_run_group_tests(tests, NULL, NULL);
}
