#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pl_simmem.h"

void *pl_big_alloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes))
        return NULL;
    if (bytes < PL_HUGE_PAGE)
        return malloc(bytes ? bytes : 1);
    void *p;
    if (posix_memalign(&p, PL_HUGE_PAGE, bytes))
        return NULL;
    /* Only a hint: with THP off ("never") it fails with EINVAL and 4 KiB pages still work. */
    (void)madvise(p, bytes, MADV_HUGEPAGE);
    return p;
}

void *pl_big_zalloc(size_t n, size_t size)
{
    void *p = pl_big_alloc(n, size);
    if (p)
        memset(p, 0, n * size);
    return p;
}

void *pl_big_resize(void *p, size_t keep, size_t n, size_t size)
{
    void *q = pl_big_alloc(n, size);
    if (!q)
        return NULL;
    memcpy(q, p, keep * size);
    free(p);
    return q;
}

void *pl_pages_map(size_t bytes)
{
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint, as in pl_big_alloc */
    return p;
}

void pl_pages_unmap(void *p, size_t bytes)
{
    /* munmap fails (ENOMEM) when the mapping, merged with a neighbour, would have to be split
     * beyond vm.max_map_count: the pages are then still given back, only the addresses kept */
    if (munmap(p, bytes))
        (void)madvise(p, bytes, MADV_DONTNEED);
}
