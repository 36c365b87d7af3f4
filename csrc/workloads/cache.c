/* cache: the lab write-up's do_mem_access. Working sets of an L1D's worth of cache lines (the
 * write-up's 512 lines, 32 KiB, or fewer where the L1D is smaller) are walked 16 times each,
 * writing 1 line in 8 and reading the rest; the base of each working set
 * either advances sequentially through a large buffer or is a random line in it. Every working
 * set fits L1, so L1 read misses stay rare in both variants; random bases land on pages the TLB
 * does not hold far more often through a load.
 *
 * This file is compiled twice: natively (pl_cache_run, the table entry, the parameters), and by
 * csrc/workloads/sim_variants.c with -DPL_SIM, where PL_NAME(pl_cache_run) is pl_cache_run_sim
 * and every access of the hot loop (PL_STORE, PL_LOAD_RUN) is also fed to the cache/TLB
 * simulator. Setup (mapping and prefaulting the buffer) uses plain accesses so the simulator
 * never sees it. All file-level names carry a cache_ prefix: the sim build may include several
 * workload files in one translation unit. */
#include <errno.h>
#include <stdint.h>
#include <sys/mman.h>

#include "harness/pl_access.h"
#include "pl_workloads.h"

enum {
    CACHE_P_SIZE_MB,
    CACHE_P_SETS,
    CACHE_P_LINES,
    CACHE_P_PASSES,
    CACHE_P_WRITE_EVERY,
    CACHE_P_SEED,
    CACHE_P_FLUSH_KB,
    CACHE_P_LINE,
    CACHE_NPARAMS
};

/* What one variant walks; filled from the parameters. */
struct cache_plan {
    volatile unsigned char
        *buf;      /* volatile: every access of the original happens, none is merged */
    size_t line;   /* bytes per line: the lab write-up's CACHE_LINE_SIZE, the machine's */
    size_t nlines; /* lines in the buffer */
    int64_t sets, lines, passes, write_every;
    volatile unsigned char *flush; /* written before each region to empty the L1D */
    size_t flush_len;
};

/* The hot loop: every access of the original goes through PL_STORE, or PL_LOAD_RUN and a plain
 * load, nothing else does. Line i is written when i % write_every == 0, as in the original;
 * the reads between two written lines are one run. */
static unsigned cache_walk(struct pl_sim *sim, const struct cache_plan *w, int random,
                           uint64_t seed)
{
    uint64_t rng = seed;
    size_t span = w->nlines - (size_t)w->lines + 1; /* bases that keep the set inside the buffer */
    size_t base = 0;
    unsigned sum = 0;
    for (int64_t s = 0; s < w->sets; s++) {
        if (random)
            base = (size_t)(pl_random(&rng) % span);
        else if (s > 0 && (base += (size_t)w->lines) >= span)
            base = 0; /* wrap, like the original */
        volatile unsigned char *ws = w->buf + base * w->line;
        for (int64_t pass = 0; pass < w->passes; pass++) {
            for (int64_t i = 0; i < w->lines; i += w->write_every) {
                volatile unsigned char *p = ws + (size_t)i * w->line;
                int64_t group = w->lines - i < w->write_every ? w->lines - i : w->write_every;
                PL_STORE(sim, p, (unsigned char)pass);
                PL_LOAD_RUN(sim, p + w->line, w->line, group - 1);
                for (int64_t k = 1; k < group; k++)
                    sum += p[(size_t)k * w->line];
            }
        }
    }
    return sum;
}

/* The write-up's flush before counting: write a buffer a little larger than the L1D, so every
 * variant starts from the same cache, whatever ran before. Through PL_STORE, outside the region:
 * the simulated L1D is emptied the same way, and neither count includes the flush. */
static void cache_flush(struct pl_sim *sim, const struct cache_plan *w)
{
    for (size_t off = 0; off < w->flush_len; off += w->line)
        PL_STORE(sim, &w->flush[off], (unsigned char)off);
}

static void cache_measure(struct pl_ctx *c, const char *label, const struct cache_plan *w,
                          int random, uint64_t seed)
{
    volatile unsigned sink; /* keeps the loads' results alive */
    cache_flush(c->sim, w);
    struct pl_region r = {.group = c->group, .sim = c->sim};
    PL_REGION_BEGIN(&r);
    sink = cache_walk(c->sim, w, random, seed);
    PL_REGION_END(&r);
    (void)sink;
    pl_out_region(c->out, label, &r);
}

int PL_NAME(pl_cache_run)(struct pl_ctx *c)
{
    size_t len = (size_t)c->param[CACHE_P_SIZE_MB] << 20;
    size_t line = c->param[CACHE_P_LINE] ? (size_t)c->param[CACHE_P_LINE] : PL_CACHE_LINE;
    if (line & (line - 1))
        return pl_out_fail(c->out, -EINVAL, "a line of %zu bytes is not a power of two", line);
    struct cache_plan w = {
        .line = line,
        .nlines = len / line,
        .sets = c->param[CACHE_P_SETS],
        .lines = c->param[CACHE_P_LINES],
        .passes = c->param[CACHE_P_PASSES],
        .write_every = c->param[CACHE_P_WRITE_EVERY],
        .flush_len = (size_t)c->param[CACHE_P_FLUSH_KB] << 10,
    };
    if ((size_t)w.lines > w.nlines)
        return pl_out_fail(c->out, -EINVAL, "a working set of %lld lines does not fit %zu MiB",
                           (long long)w.lines, len >> 20);
    /* mmap is page-aligned, so line 0 of every page is a written line (i % 8 == 0) when bases
     * advance by whole working sets: sequential bases enter each new page with a store. The
     * flush buffer follows the working sets' buffer in the same mapping. */
    unsigned char *buf =
        mmap(NULL, len + w.flush_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (buf == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "mmap of %zu MiB failed", len >> 20);
    /* 4 KiB pages, whatever the THP mode: the TLB claim is about base pages (EINVAL: no THP) */
    if (madvise(buf, len + w.flush_len, MADV_NOHUGEPAGE) != 0 && errno != EINVAL) {
        int err = -errno;
        munmap(buf, len + w.flush_len);
        return pl_out_fail(c->out, err, "madvise(MADV_NOHUGEPAGE) failed");
    }
    w.buf = buf;
    w.flush = buf + len;
    for (size_t off = 0, page = pl_page_size(); off < len + w.flush_len; off += page)
        w.buf[off] = 0; /* prefault outside the regions, unseen by the simulator */
    uint64_t seed = (uint64_t)c->param[CACHE_P_SEED];
    cache_measure(c, "sequential", &w, 0, seed);
    cache_measure(c, "random", &w, 1, seed);
    munmap(buf, len + w.flush_len);
    return 0;
}

#ifndef PL_SIM
/* Defaults: the lab write-up's geometry (lines, 0, lets Python choose it from the machine's L1D,
 * capped at the write-up's 512); 4096 working sets (2x the 64 MiB buffer sequentially) are
 * 33.5M accesses per variant: ~50 ms natively and well under a second in the simulator. */
static const struct pl_param cache_params[CACHE_NPARAMS] = {
    {"size_mb", 64, 1, 1 << 16, "MiB", NULL,
     "buffer the working sets are placed in; far beyond the TLB's reach"},
    {"sets", 4096, 1, 1 << 24, "sets", NULL, "working sets walked per variant"},
    {"lines", 0, 0, 1 << 20, "lines", NULL,
     "cache lines per working set; 0: an L1D's worth, at most the lab write-up's 512 (32 KiB of "
     "64-byte lines)"},
    {"passes", 16, 1, 1 << 16, "passes", NULL, "walks over each working set before moving on"},
    {"write_every", 8, 1, 1 << 20, "lines", NULL,
     "one line in this many is written, the rest "
     "read"},
    {"seed", 1, 1, INT64_MAX, "", NULL, "seed of the xorshift generator for random bases"},
    {"flush_kb", 0, 0, 1 << 20, "KiB", NULL,
     "written before each variant to empty the L1D, as the lab write-up does (32 KiB + 1 KiB); "
     "0: the machine's L1D + 1 KiB"},
    {"line", 0, 0, 4096, "bytes", NULL,
     "bytes per line, the stride between accesses (a power of two); 0: the machine's L1D line, "
     "else 64"},
};

const struct pl_workload pl_wl_cache = {
    "cache",      "do_mem_access: L1D-sized working sets at sequential vs random bases",
    cache_params, CACHE_NPARAMS,
    pl_cache_run, pl_cache_run_sim, /* built by sim_variants.c */
};
#endif
