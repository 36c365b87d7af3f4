/* Touch N MiB of fresh anonymous memory once, one write per 4 KiB page, with THP off.
 * A known page-fault load for checking counters: about one minor fault per page.
 * usage: pl-touch [MIB]   (default 64) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#define DEFAULT_MIB 64
#define PAGE 4096 /* the base page size on x86-64 and most of arm64: one fault per page */

int main(int argc, char **argv)
{
    long mib = argc > 1 ? strtol(argv[1], NULL, 10) : DEFAULT_MIB;
    if (mib <= 0 || mib > 1 << 20) {
        fprintf(stderr, "usage: %s [MIB]  (1 .. 1048576)\n", argv[0]);
        return 2;
    }
    size_t len = (size_t)mib << 20;
    volatile char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    if (madvise((void *)p, len, MADV_NOHUGEPAGE) != 0) {
        perror("madvise");
        return 1;
    }
    for (size_t off = 0; off < len; off += PAGE)
        p[off] = 1;
    return 0;
}
