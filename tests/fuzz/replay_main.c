/* Replays inputs through a fuzz target without libFuzzer, so CTest can run every target over
 * its committed corpus in any build (and under the sanitizers). Arguments are files or
 * directories; a directory contributes every regular file in it whose name does not start with
 * a dot. A target signals a failure by crashing or aborting; replaying nothing is a failure too. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_target.h"

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "replay: cannot open %s\n", path);
        return -1;
    }
    size_t cap = 4096, len = 0;
    uint8_t *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fprintf(stderr, "replay: out of memory reading %s\n", path);
            fclose(f);
            return -1;
        }
        len += fread(buf + len, 1, cap - len, f);
        if (len < cap)
            break;
        cap *= 2;
        uint8_t *nb = realloc(buf, cap);
        if (!nb)
            free(buf);
        buf = nb;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        fprintf(stderr, "replay: read error on %s\n", path);
        free(buf);
        return -1;
    }
    LLVMFuzzerTestOneInput(buf, len);
    free(buf);
    return 0;
}

static int replay_dir(const char *dir, size_t *count)
{
    DIR *d = opendir(dir);
    if (!d) {
        fprintf(stderr, "replay: cannot open directory %s\n", dir);
        return -1;
    }
    int rc = 0;
    for (struct dirent *de; (de = readdir(d));) {
        if (de->d_name[0] == '.')
            continue;
        size_t n = strlen(dir) + strlen(de->d_name) + 2;
        char *p = malloc(n);
        if (!p) {
            rc = -1;
            break;
        }
        snprintf(p, n, "%s/%s", dir, de->d_name);
        struct stat sb;
        if (stat(p, &sb) == 0 && S_ISREG(sb.st_mode)) {
            if (replay_file(p) != 0)
                rc = -1;
            else
                (*count)++;
        }
        free(p);
    }
    closedir(d);
    return rc;
}

int main(int argc, char **argv)
{
    size_t count = 0;
    int rc = 0;
    for (int i = 1; i < argc; i++) {
        struct stat sb;
        if (stat(argv[i], &sb) != 0) {
            fprintf(stderr, "replay: no such file or directory: %s\n", argv[i]);
            rc = 1;
        } else if (S_ISDIR(sb.st_mode)) {
            if (replay_dir(argv[i], &count) != 0)
                rc = 1;
        } else if (replay_file(argv[i]) != 0) {
            rc = 1;
        } else {
            count++;
        }
    }
    printf("replay: %zu inputs\n", count);
    if (count == 0) {
        fprintf(stderr, "replay: no inputs (usage: %s FILE_OR_DIR...)\n", argv[0]);
        rc = 1;
    }
    return rc;
}
