/* Writes the seed corpus of fuzz_state into a directory: for every policy the daemon can restore
 * (state_policy.h) and each variant that makes a distinct configuration, the saved state after 0,
 * 25 and (at the short horizon) 70 rounds, plus broken copies of one of them (truncated by a
 * byte, a flipped header byte, a trailing byte) and its bytes offered to the next policy.
 * Deterministic for a given build; the committed copy in tests/fuzz/corpus/state is this output,
 * and the state_corpus_fresh test replays a fresh one, so the corpus follows format changes.
 * Usage: gen_state_corpus OUTDIR */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "state_policy.h"

static const char *outdir;

static void die(const char *what)
{
    fprintf(stderr, "gen_state_corpus: %s\n", what);
    exit(1);
}

/* name NUL variant state */
static void write_input(const char *file, const char *name, uint8_t v, const uint8_t *state,
                        size_t len)
{
    char path[4096];
    if (snprintf(path, sizeof path, "%s/%s", outdir, file) >= (int)sizeof path)
        die("path too long");
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(name, 1, strlen(name) + 1, f) != strlen(name) + 1 || fputc(v, f) == EOF ||
        (len && fwrite(state, 1, len, f) != len) || fclose(f) != 0)
        die("cannot write a corpus file");
}

static uint8_t *state_after(const char *name, uint8_t v, int rounds, size_t *len)
{
    agg_policy *p = state_policy_make(name, v);
    if (!p)
        return NULL;
    state_run r;
    if (state_run_open(&r, 1000u + (uint64_t)rounds) != 0)
        die("setup");
    for (int t = 0; t < rounds; t++)
        (void)state_policy_round(p, &r);
    state_run_close(&r);
    uint8_t *s = state_policy_save(p, len);
    if (!s)
        die("save");
    agg_policy_free(p);
    return s;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        die("usage: gen_state_corpus OUTDIR");
    outdir = argv[1];
    size_t n = 0;
    state_policy_name(0, &n);
    for (size_t i = 0; i < n; i++) {
        const char *name = state_policy_name(i, &n);
        uint8_t *prev = NULL;
        for (uint8_t v = 0; v < 8; v++) {
            agg_policy *p = state_policy_make(name, v);
            if (!p)
                continue;
            /* the mechanism bits matter only to a policy that reads the mechanism */
            int reads_mech = (agg_policy_reads(p->ops, &p->cfg) & AGG_PARAM_MECHANISM) != 0;
            agg_policy_free(p);
            if (!reads_mech && (v & 3) != 0)
                continue;
            static const int rounds[] = {0, 25, 70};
            for (size_t r = 0; r < 3; r++) {
                if (rounds[r] == 70 && !(v & 4))
                    continue;
                size_t len = 0;
                uint8_t *s = state_after(name, v, rounds[r], &len);
                char file[128];
                snprintf(file, sizeof file, "%s-v%u-r%d", name, (unsigned)v, rounds[r]);
                write_input(file, name, v, s, len);
                if (r == 1 && !prev) {
                    prev = s;
                    snprintf(file, sizeof file, "%s-v%u-truncated", name, (unsigned)v);
                    write_input(file, name, v, s, len - 1);
                    s[len / 2] ^= 0x40;
                    snprintf(file, sizeof file, "%s-v%u-flipped", name, (unsigned)v);
                    write_input(file, name, v, s, len);
                    s[len / 2] ^= 0x40;
                    uint8_t *t = malloc(len + 1);
                    if (!t)
                        die("out of memory");
                    memcpy(t, s, len);
                    t[len] = 0;
                    snprintf(file, sizeof file, "%s-v%u-trailing", name, (unsigned)v);
                    write_input(file, name, v, t, len + 1);
                    free(t);
                    const char *next = state_policy_name((i + 1) % n, &n);
                    snprintf(file, sizeof file, "%s-v%u-as-%s", name, (unsigned)v, next);
                    write_input(file, next, v, s, len);
                } else {
                    free(s);
                }
            }
        }
        free(prev);
    }
    return 0;
}
