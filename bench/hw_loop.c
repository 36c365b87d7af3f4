/* The workload `make hw-check` counts with pagelab stat and with perf stat: touch N MiB of fresh
 * anonymous memory once (one minor fault per 4 KiB page, THP off), then read it PASSES times, one
 * load per 64-byte line. Its instructions and page faults are the same on every run; its cache
 * misses depend on the caches, the same for both counters.
 * usage: hw-loop [MIB]   (default 64) */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>

#define DEFAULT_MIB 64 /* larger than most L2s, so the reads miss somewhere */
#define PAGE 4096      /* the base page size on x86-64 and most of arm64 */
#define LINE 64        /* the common cache line; a larger line only means fewer misses */
#define PASSES 8       /* enough reads that cycles and cache misses dwarf process start-up */

int main(int argc, char **argv)
{
    long mib = argc > 1 ? strtol(argv[1], NULL, 10) : DEFAULT_MIB;
    if (mib <= 0 || mib > 1 << 16) {
        fprintf(stderr, "usage: %s [MIB]  (1 .. 65536)\n", argv[0]);
        return 2;
    }
    size_t len = (size_t)mib << 20;
    volatile unsigned char *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
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
    unsigned long sum = 0;
    for (int pass = 0; pass < PASSES; pass++)
        for (size_t off = 0; off < len; off += LINE)
            sum += p[off];
    return sum == (unsigned long)PASSES * (len / PAGE) ? 0 : 1; /* the loads really happened */
}
