/* The RNG handles: the seeded stream is the ChaCha20 keystream byte for byte (so it is the same
 * on every platform), draws are unbiased, and the system generator never repeats across fork. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <math.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "ldpb/rng.h"

static const uint8_t zero_seed[LDPB_RNG_SEED_BYTES];

/* RFC 7539 section 2.3.2 / A.1 test vector 1: ChaCha20 block 0 under the all-zero key and nonce. */
static const uint8_t chacha20_zero_block[64] = {
    0x76, 0xb8, 0xe0, 0xad, 0xa0, 0xf1, 0x3d, 0x90, 0x40, 0x5d, 0x6a, 0xe5, 0x53, 0x86, 0xbd, 0x28,
    0xbd, 0xd2, 0x19, 0xb8, 0xa0, 0x8d, 0xed, 0x1a, 0xa8, 0x36, 0xef, 0xcc, 0x8b, 0x77, 0x0d, 0xc7,
    0xda, 0x41, 0x59, 0x7c, 0x51, 0x57, 0x48, 0x8d, 0x77, 0x24, 0xe0, 0x3f, 0xb8, 0xd8, 0x4a, 0x37,
    0x6a, 0x43, 0xb8, 0xf4, 0x15, 0x18, 0xa1, 0x1c, 0xc3, 0x87, 0xb6, 0x69, 0xb2, 0xee, 0x65, 0x86};

static void seeded_stream_is_chacha20(void **state)
{
    (void)state;
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, zero_seed), LDPB_OK);
    uint8_t got[64];
    ldpb_rng_bytes(rng, got, sizeof got);
    assert_memory_equal(got, chacha20_zero_block, sizeof got);
    ldpb_rng_free(rng);

    /* u64 draws are the same bytes read little-endian, whatever the host byte order. */
    assert_int_equal(ldpb_rng_new_seeded(&rng, zero_seed), LDPB_OK);
    uint64_t first = ldpb_rng_u64(rng);
    uint64_t expect = 0;
    for (int i = 7; i >= 0; i--)
        expect = expect << 8 | chacha20_zero_block[i];
    assert_true(first == expect);
    ldpb_rng_free(rng);
}

static void draw_sizes_do_not_change_the_stream(void **state)
{
    (void)state;
    enum { TOTAL = 5000 };
    static uint8_t whole[TOTAL], pieces[TOTAL];
    ldpb_rng *a = NULL, *b = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&a, zero_seed), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded(&b, zero_seed), LDPB_OK);
    ldpb_rng_bytes(a, whole, TOTAL);
    size_t off = 0, step = 1;
    while (off < TOTAL) {
        size_t take = step > TOTAL - off ? TOTAL - off : step;
        if (take == 8) {
            uint64_t v = ldpb_rng_u64(b);
            for (int i = 0; i < 8; i++)
                pieces[off + (size_t)i] = (uint8_t)(v >> (8 * i));
        } else {
            ldpb_rng_bytes(b, pieces + off, take);
        }
        off += take;
        step = step % 13 + 1; /* crosses the 1 KiB buffer boundary at every alignment */
    }
    assert_memory_equal(whole, pieces, TOTAL);
    ldpb_rng_free(a);
    ldpb_rng_free(b);
}

static void streams_and_seeds_are_independent(void **state)
{
    (void)state;
    uint8_t seed_a[LDPB_RNG_SEED_BYTES], seed_b[LDPB_RNG_SEED_BYTES];
    ldpb_rng_seed_from_text(seed_a, "42");
    ldpb_rng_seed_from_text(seed_b, "42");
    assert_memory_equal(seed_a, seed_b, sizeof seed_a);
    ldpb_rng_seed_from_text(seed_b, "43");
    assert_memory_not_equal(seed_a, seed_b, sizeof seed_a);

    ldpb_rng *s0 = NULL, *s1 = NULL, *plain = NULL;
    assert_int_equal(ldpb_rng_new_seeded_stream(&s0, seed_a, 0), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded_stream(&s1, seed_a, 1), LDPB_OK);
    assert_int_equal(ldpb_rng_new_seeded(&plain, seed_a), LDPB_OK);
    uint64_t x0 = ldpb_rng_u64(s0), x1 = ldpb_rng_u64(s1), xp = ldpb_rng_u64(plain);
    assert_true(x0 == xp);
    assert_true(x0 != x1);
    ldpb_rng_free(s0);
    ldpb_rng_free(s1);
    ldpb_rng_free(plain);
}

static void constructors_reject_null(void **state)
{
    (void)state;
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(NULL, zero_seed), LDPB_EINVAL);
    assert_int_equal(ldpb_rng_new_seeded(&rng, NULL), LDPB_EINVAL);
    assert_null(rng);
    assert_int_equal(ldpb_rng_new_system(NULL), LDPB_EINVAL);
    ldpb_rng_free(NULL);
}

/* Chi-square goodness of fit for bound 10 over 10^6 draws (9 degrees of freedom): the critical
 * value 50.0 is exceeded by a correct generator with probability about 1e-7. A biased modulo
 * reduction with bound 3 * 2^62 would put 1/2 of the mass on a third of the values; that is
 * checked exactly below instead. */
static void uniform_is_unbiased(void **state)
{
    (void)state;
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, zero_seed), LDPB_OK);
    enum { N = 1000000, BOUND = 10 };
    unsigned counts[BOUND] = {0};
    for (int i = 0; i < N; i++) {
        uint64_t v = ldpb_rng_uniform(rng, BOUND);
        assert_true(v < BOUND);
        counts[v]++;
    }
    double chi2 = 0;
    for (int i = 0; i < BOUND; i++) {
        double d = counts[i] - N / (double)BOUND;
        chi2 += d * d / (N / (double)BOUND);
    }
    assert_true(chi2 < 50.0);

    /* bound = 3 * 2^62: plain modulo would make values below 2^62 twice as likely. Here each
     * third of the range must get 1/3 of 300000 draws; 6 sigma (~1e-9 false failure). */
    const uint64_t big = (uint64_t)3 << 62;
    unsigned low = 0;
    for (int i = 0; i < 300000; i++) {
        uint64_t v = ldpb_rng_uniform(rng, big);
        assert_true(v < big);
        low += v < ((uint64_t)1 << 62);
    }
    double sd = sqrt(300000 * (1.0 / 3) * (2.0 / 3));
    assert_true(fabs(low - 100000.0) < 6 * sd);

    assert_true(ldpb_rng_uniform(rng, 1) == 0);
    (void)ldpb_rng_uniform(rng, 0); /* full range: any value */
    ldpb_rng_free(rng);
}

static void doubles_and_bernoulli(void **state)
{
    (void)state;
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_seeded(&rng, zero_seed), LDPB_OK);
    double sum = 0;
    enum { N = 1000000 };
    for (int i = 0; i < N; i++) {
        double u = ldpb_rng_double(rng);
        assert_true(u >= 0.0 && u < 1.0);
        assert_true(ldexp(u, 53) == floor(ldexp(u, 53))); /* on the 2^-53 grid */
        sum += u;
    }
    /* Mean of 10^6 uniforms: sd 2.9e-4; 6 sigma. */
    assert_true(fabs(sum / N - 0.5) < 6 * sqrt(1.0 / 12 / N));

    for (int i = 0; i < 1000; i++)
        assert_int_equal(ldpb_rng_bernoulli(rng, 0), 0);
    int ones = 0;
    for (int i = 0; i < N; i++)
        ones += ldpb_rng_bernoulli(rng, (uint64_t)1 << 62); /* p = 1/4 */
    assert_true(fabs(ones - N / 4.0) < 6 * sqrt(N * 0.25 * 0.75));
    ldpb_rng_free(rng);
}

static void system_generator_differs_and_survives_rekey(void **state)
{
    (void)state;
    ldpb_rng *a = NULL, *b = NULL;
    assert_int_equal(ldpb_rng_new_system(&a), LDPB_OK);
    assert_int_equal(ldpb_rng_new_system(&b), LDPB_OK);
    assert_true(ldpb_rng_u64(a) != ldpb_rng_u64(b));
    /* Past 1 MiB the key is refreshed from the OS; output must go on and look random. */
    static uint8_t big[3 << 20];
    ldpb_rng_bytes(a, big, sizeof big);
    size_t zeros = 0;
    for (size_t i = 0; i < sizeof big; i++)
        zeros += big[i] == 0;
    /* Expect 12288 zero bytes (sd ~110): a stuck generator would be far off. */
    assert_true(zeros > 11000 && zeros < 13600);
    ldpb_rng_free(a);
    ldpb_rng_free(b);
}

/* After fork the child must not replay the parent's buffered keystream. */
static void system_generator_rekeys_after_fork(void **state)
{
    (void)state;
    ldpb_rng *rng = NULL;
    assert_int_equal(ldpb_rng_new_system(&rng), LDPB_OK);
    (void)ldpb_rng_u64(rng); /* leave buffered bytes behind */
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        uint64_t v[4];
        for (int i = 0; i < 4; i++)
            v[i] = ldpb_rng_u64(rng);
        ssize_t w = write(fds[1], v, sizeof v);
        _exit(w == (ssize_t)sizeof v ? 0 : 1);
    }
    uint64_t mine[4], theirs[4];
    for (int i = 0; i < 4; i++)
        mine[i] = ldpb_rng_u64(rng);
    assert_int_equal(read(fds[0], theirs, sizeof theirs), (ssize_t)sizeof theirs);
    int status = 0;
    waitpid(pid, &status, 0);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 4; j++)
            assert_true(mine[i] != theirs[j]);
    close(fds[0]);
    close(fds[1]);
    ldpb_rng_free(rng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(seeded_stream_is_chacha20),
        cmocka_unit_test(draw_sizes_do_not_change_the_stream),
        cmocka_unit_test(streams_and_seeds_are_independent),
        cmocka_unit_test(constructors_reject_null),
        cmocka_unit_test(uniform_is_unbiased),
        cmocka_unit_test(doubles_and_bernoulli),
        cmocka_unit_test(system_generator_differs_and_survives_rekey),
        cmocka_unit_test(system_generator_rekeys_after_fork),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
