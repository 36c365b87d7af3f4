/* mmap-modes: the same write pass over anonymous memory, a private file mapping and a shared
 * file mapping, each with and without MAP_POPULATE, then msync(MS_SYNC) and munmap. Each phase
 * is its own region, so faults and blocks in/out show where each mode pays.
 *
 * The file is an unnamed O_TMPFILE in the current directory (Python picks the scratch
 * directory, pylib/pagelab/native/scratch.py, and chdirs the worker there): nothing is left behind
 * even if the worker is killed. Before each file variant its pages are written back and dropped
 * from the page cache, so reading them is real disk I/O. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "harness/pl_compat.h"
#include "pl_workloads.h"

#define FILL_CHUNK PL_MMAP_FILL_CHUNK

enum { P_SIZE_MB, P_STRIDE, NPARAMS };

static const struct pl_param params[NPARAMS] = {
    {"size_mb", 32, 1, 1 << 16, "MiB", NULL,
     "size of each mapping (and of the file, which needs as much free disk)"},
    {"stride_pages", 1, 1, 4096, "pages", NULL,
     "the write pass stores one byte every stride_pages pages (1: every page)"},
};

enum mode { ANON, PRIVATE, SHARED };
static const char *const mode_name[] = {"anon", "private", "shared"};

static int open_file(struct pl_ctx *c, size_t len)
{
    int named;
    int fd = pl_scratch_file("mmap", &named);
    if (fd < 0)
        return pl_out_fail(c->out, -errno, "cannot create a temp file in the working directory");
    pl_out_text(c->out, "file", "how", "%s", named ? "unlinked" : "O_TMPFILE");
    char *chunk = malloc(FILL_CHUNK);
    if (!chunk) {
        close(fd);
        return pl_out_fail(c->out, -ENOMEM, "malloc failed");
    }
    memset(chunk, 'x', FILL_CHUNK); /* real data blocks, not a sparse file */
    int rc = 0;
    for (size_t off = 0; off < len && !rc; off += FILL_CHUNK) {
        size_t n = len - off < FILL_CHUNK ? len - off : FILL_CHUNK;
        ssize_t w = pwrite(fd, chunk, n, (off_t)off);
        rc = w < 0 ? -errno : (size_t)w != n ? -EIO : 0;
    }
    free(chunk);
    if (rc || fsync(fd) != 0) {
        rc = rc ? rc : -errno;
        close(fd);
        return pl_out_fail(c->out, rc, "cannot write the %zu MiB temp file", len >> 20);
    }
    return fd;
}

/* Clean and uncached: written back, then dropped, so the variant starts from disk. Returns the
 * pages still cached afterwards (mincore on a throwaway mapping), or -errno. */
static long drop_cache(int fd, size_t len)
{
    int rc = fsync(fd) != 0 ? -errno : -posix_fadvise(fd, 0, (off_t)len, POSIX_FADV_DONTNEED);
    if (rc)
        return rc;
    size_t pages = len / pl_page_size();
    unsigned char *vec = malloc(pages);
    if (!vec)
        return -ENOMEM;
    void *p = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED || mincore(p, len, vec) != 0) {
        rc = -errno;
        if (p != MAP_FAILED)
            munmap(p, len);
        free(vec);
        return rc;
    }
    long cached = 0;
    for (size_t i = 0; i < pages; i++)
        cached += vec[i] & 1;
    munmap(p, len);
    free(vec);
    return cached;
}

static void write_pass(volatile char *p, size_t len, size_t stride)
{
    for (size_t off = 0; off < len; off += stride)
        p[off] = (char)(off / stride); /* one store dirties the whole page (or folio) */
}

static int variant(struct pl_ctx *c, enum mode m, int populate, int fd, size_t len, size_t stride)
{
    /* a mode name and "+populate" fit in 24; sized so that every "name: step" label provably
     * fits PL_LABEL_MAX (the compiler checks the snprintf calls below against it) */
    char name[24], label[PL_LABEL_MAX];
    snprintf(name, sizeof name, "%s%s", mode_name[m], populate ? "+populate" : "");
    if (m != ANON) {
        long cached = drop_cache(fd, len);
        if (cached < 0)
            return pl_out_fail(c->out, (int)cached, "%s: cannot drop the file's cached pages",
                               name);
        snprintf(label, sizeof label, "%s: mmap", name);
        pl_out_value(c->out, label, "cached_before", (double)cached, "pages", "rusage");
    }
    int flags = (m == SHARED ? MAP_SHARED : MAP_PRIVATE) | (m == ANON ? MAP_ANONYMOUS : 0) |
                (populate ? MAP_POPULATE : 0);
    struct pl_region r = {.group = c->group};

    PL_REGION_BEGIN(&r);
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, flags, m == ANON ? -1 : fd, 0);
    PL_REGION_END(&r);
    if (p == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "%s: mmap of %zu MiB failed", name, len >> 20);
    snprintf(label, sizeof label, "%s: mmap", name);
    pl_out_region(c->out, label, &r);

    PL_REGION_BEGIN(&r);
    write_pass(p, len, stride);
    PL_REGION_END(&r);
    snprintf(label, sizeof label, "%s: write", name);
    pl_out_region(c->out, label, &r);

    PL_REGION_BEGIN(&r);
    int rc = msync(p, len, MS_SYNC) == 0 ? 0 : -errno;
    PL_REGION_END(&r);
    if (rc) {
        munmap(p, len);
        return pl_out_fail(c->out, rc, "%s: msync failed", name);
    }
    snprintf(label, sizeof label, "%s: msync", name);
    pl_out_region(c->out, label, &r);

    PL_REGION_BEGIN(&r);
    rc = munmap(p, len) == 0 ? 0 : -errno;
    PL_REGION_END(&r);
    if (rc)
        return pl_out_fail(c->out, rc, "%s: munmap failed", name);
    snprintf(label, sizeof label, "%s: munmap", name);
    pl_out_region(c->out, label, &r);
    return 0;
}

static int run(struct pl_ctx *c)
{
    size_t len = (size_t)c->param[P_SIZE_MB] << 20;
    size_t stride = (size_t)c->param[P_STRIDE] * pl_page_size();
    /* base pages in every mode, whatever the THP setting: this worker only (EINVAL: no THP) */
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0 && errno != EINVAL)
        return pl_out_fail(c->out, -errno, "prctl(PR_SET_THP_DISABLE) failed");
    int fd = open_file(c, len);
    if (fd < 0)
        return fd;
    int rc = 0;
    for (int m = ANON; m <= SHARED && !rc; m++)
        for (int populate = 0; populate <= 1 && !rc; populate++)
            rc = variant(c, (enum mode)m, populate, fd, len, stride);
    close(fd);
    return rc;
}

const struct pl_workload pl_wl_mmap_modes = {
    "mmap-modes", "anonymous, private and shared file mappings, +/- MAP_POPULATE; msync",
    params,       NPARAMS,
    run,          NULL,
};
