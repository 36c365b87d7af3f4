#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "pl_simmem.h"

void *pl_big_alloc(size_t n, size_t size)
{
    size_t bytes;
    if (__builtin_mul_overflow(n, size, &bytes))
        return NULL;
    if (bytes < PL_SIMMEM_HUGE)
        return malloc(bytes ? bytes : 1);
    void *p;
    if (posix_memalign(&p, PL_SIMMEM_HUGE, bytes))
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
