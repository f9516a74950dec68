/* minimal.c without the library: what any app of that shape costs (libc start-up, stdio). */
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 4)
        return 2;
    fprintf(stderr, "%s %s %s\n", argv[1], argv[2], argv[3]);
    return 0;
}
