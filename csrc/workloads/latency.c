/* latency: a pointer chase (lmbench lat_mem_rd, multichase) over working sets from a few KiB to
 * beyond the last-level cache. Each working set is one random cycle through cache-line-sized
 * nodes, so every load depends on the one before and no prefetcher can guess the next line: the
 * time per load is the latency of wherever the working set fits. It steps up at each cache size.
 *
 * This file is compiled twice: natively (pl_latency_run, the table entry, the parameters), and by
 * csrc/workloads/sim_variants.c with -DPL_SIM, where PL_NAME(pl_latency_run) is
 * pl_latency_run_sim and every chase load goes through PL_LOAD to the cache/TLB simulator.
 * Building and checking the chain uses plain accesses; the warm-up lap uses PL_LOAD (outside the
 * counted regions) so the simulated caches start warm like the real ones. A simulated sweep
 * should be cheaper (fewer loads, one repetition: the model has no noise to take a minimum of).
 * All file-level names carry a lat_ prefix: the sim build may include several workload files in
 * one translation unit. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "harness/pl_access.h"
#include "harness/pl_steady.h"
#include "pl_workloads.h"

#define LAT_LINE PL_CACHE_LINE /* one node per cache line */

enum {
    LAT_P_MIN_KB,
    LAT_P_MAX_KB,
    LAT_P_PPO,
    LAT_P_LOADS,
    LAT_P_REPEATS,
    LAT_P_PAGES,
    LAT_P_SEED,
    LAT_NPARAMS
};
enum { PL_PAGES_HUGE, PL_PAGES_SMALL };

/* While building, a node holds the index of its successor; then the pointer to it. */
union lat_node {
    union lat_node *next;
    uintptr_t idx;
    unsigned char line[LAT_LINE];
};
_Static_assert(sizeof(union lat_node) == LAT_LINE, "a node is exactly one cache line");

/* Sattolo's shuffle: j < i strictly, so i -> idx[i] is a single cycle through all n nodes. */
static void lat_build(union lat_node *nodes, size_t n, uint64_t *rng)
{
    for (size_t i = 0; i < n; i++)
        nodes[i].idx = i;
    for (size_t i = n - 1; i > 0; i--) {
        size_t j = (size_t)(pl_random(rng) % i);
        uintptr_t t = nodes[i].idx;
        nodes[i].idx = nodes[j].idx;
        nodes[j].idx = t;
    }
    for (size_t i = 0; i < n; i++)
        nodes[i].next = &nodes[nodes[i].idx];
}

/* One lap from node 0 that checks the chain and warms the caches (and the simulated ones).
 * Returns 0 if the chase first comes back to node 0 after exactly n loads without leaving the
 * array: a permutation that does so visits every node exactly once. Else the step it failed at. */
static size_t lat_lap(struct pl_sim *sim, union lat_node *nodes, size_t n)
{
    uintptr_t lo = (uintptr_t)nodes, hi = (uintptr_t)(nodes + n);
    union lat_node *p = nodes;
    for (size_t step = 1; step <= n; step++) {
        p = PL_LOAD(sim, &p->next);
        if ((uintptr_t)p < lo || (uintptr_t)p >= hi || ((uintptr_t)p - lo) % LAT_LINE)
            return step;
        if (p == nodes)
            return step == n ? 0 : step;
    }
    return n;
}

/* The hot loop: one dependent load per step, nothing else touches memory. */
static union lat_node *lat_chase(struct pl_sim *sim, union lat_node *p, int64_t loads)
{
    for (int64_t i = 0; i < loads; i++)
        p = PL_LOAD(sim, &p->next);
    return p;
}

static double lat_seconds(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* AnonHugePages of the mapping holding addr, in KiB (from /proc/self/smaps), or -errno. */
static long lat_huge_kb(const void *addr)
{
    FILE *f = fopen("/proc/self/smaps", "re");
    if (!f)
        return -errno;
    char line[512];
    unsigned long want = (unsigned long)(uintptr_t)addr, lo, hi;
    long kb = -ENOENT;
    int inside = 0;
    while (fgets(line, sizeof line, f)) {
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2)
            inside = lo <= want && want < hi;
        else if (inside && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1)
            break;
    }
    fclose(f);
    return kb;
}

/* One working-set size: build, check and warm the chain, then time chases until the fastest agree
 * (pl_steady.h), at most `repeats` of them. Each chase is timed in this thread's CPU time, so a
 * preemption by another process does not count (what it leaves in the caches does). */
static int lat_size(struct pl_ctx *c, union lat_node *nodes, int64_t kb, uint64_t *rng)
{
    size_t n = (size_t)kb * 1024 / LAT_LINE;
    int64_t loads = c->param[LAT_P_LOADS], repeats = c->param[LAT_P_REPEATS];
    lat_build(nodes, n, rng);
    size_t bad = lat_lap(c->sim, nodes, n);
    if (bad)
        return pl_out_fail(c->out, -EINVAL,
                           "the pointer chase over %lld KiB is not one cycle through all %zu nodes "
                           "(it went wrong at load %zu)",
                           (long long)kb, n, bad);
    char label[PL_LABEL_MAX];
    snprintf(label, sizeof label, "%lld KiB", (long long)kb);
    union lat_node *p = nodes;
    double worst = 0;
    struct pl_fastest best = {0};
    struct pl_region r = {.group = c->group, .sim = c->sim};
    PL_REGION_BEGIN(&r);
    while (best.runs < repeats && !pl_fastest_steady(&best)) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        p = lat_chase(c->sim, p, loads);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        double ns = lat_seconds(&t0, &t1) * 1e9 / (double)loads;
        pl_fastest_add(&best, ns);
        worst = ns > worst ? ns : worst;
    }
    PL_REGION_END(&r);
    volatile uintptr_t sink = (uintptr_t)p; /* the chase's end is used: no load is dead */
    (void)sink;
    pl_out_region(c->out, label, &r);
    pl_out_value(c->out, label, "ns_per_load", best.t[0], "ns", "clock");
    pl_out_value(c->out, label, "ns_per_load_max", worst, "ns", "clock");
    pl_out_value(c->out, label, "repeats", best.runs, "", "clock");
    pl_out_value(c->out, label, "spread", pl_fastest_spread(&best), "", "clock");
    return 0;
}

int PL_NAME(pl_latency_run)(struct pl_ctx *c)
{
    int64_t kbs[PL_LAT_MAX_SIZES];
    int nsizes = pl_lat_sizes(c->param[LAT_P_MIN_KB], c->param[LAT_P_MAX_KB], c->param[LAT_P_PPO],
                              kbs, PL_LAT_MAX_SIZES);
    if (nsizes <= 0 || nsizes > PL_LAT_MAX_SIZES)
        return pl_out_fail(c->out, -EINVAL,
                           "between 1 and %d working-set sizes are possible, not %d",
                           PL_LAT_MAX_SIZES, nsizes);
    int huge = c->param[LAT_P_PAGES] == PL_PAGES_HUGE;
    size_t len = (size_t)kbs[nsizes - 1] * 1024;
    if (huge) /* whole huge pages: even a sweep smaller than one gets the same page size */
        len = (len + PL_HUGE_PAGE - 1) & ~(size_t)(PL_HUGE_PAGE - 1);
    size_t span = len + PL_HUGE_PAGE; /* room to align to a huge page */
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "mmap of %zu MiB failed", span >> 20);
    char *buf = (char *)(((uintptr_t)raw + PL_HUGE_PAGE - 1) & ~(uintptr_t)(PL_HUGE_PAGE - 1));
    /* huge pages take the TLB out of the picture (2 MiB pages reach far beyond the LLC), so the
     * knees are the caches'; small pages add knees at the TLB's reach. EINVAL: no THP here. */
    if (madvise(buf, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE) != 0) {
        if (errno != EINVAL || !huge) {
            int err = -errno;
            munmap(raw, span);
            return pl_out_fail(c->out, err, "madvise(%s) failed",
                               huge ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE");
        }
        /* no THP in this kernel: the smaps reading below says how much is huge (none) */
    }
    for (size_t off = 0, page = pl_page_size(); off < len; off += page)
        buf[off] = 0; /* every page (huge or not) exists before anything is timed */
    long huge_kb = lat_huge_kb(buf);
    if (huge_kb >= 0)
        pl_out_value(c->out, "buffer", "huge_kb", (double)huge_kb, "KiB", "rusage");
    uint64_t rng = (uint64_t)c->param[LAT_P_SEED];
    int rc = 0;
    for (int i = 0; i < nsizes && !rc; i++)
        rc = lat_size(c, (union lat_node *)buf, kbs[i], &rng);
    munmap(raw, span);
    return rc;
}

#ifndef PL_SIM
int pl_lat_sizes(int64_t min_kb, int64_t max_kb, int64_t ppo, int64_t *out, int cap)
{
    int n = 0;
    int64_t last = 0;
    if (min_kb < 1 || ppo < 1)
        return 0;
    for (int oct = 0; oct < 62 && (min_kb << oct) <= max_kb; oct++) {
        for (int64_t step = 0; step < ppo; step++) {
            int64_t kb = (min_kb << oct) + (min_kb << oct) * step / ppo;
            if (kb > max_kb)
                break;
            if (n > 0 && kb == last)
                continue;
            if (n < cap)
                out[n] = kb;
            last = kb;
            n++;
        }
    }
    return n;
}

/* Defaults: 4 KiB (well inside any L1) up to max_kb, which 0 lets Python choose: 4x the largest
 * cache sysfs reports, within the memory budget. Repetitions are short (2^16 loads: ~0.1 ms in
 * L1, ~1 ms in L3, ~10 ms in DRAM) so that on a busy machine some run between preemptions, which
 * empty the caches the working set was in; they repeat until the fastest agree (pl_steady.h),
 * which takes a handful on a quiet machine and up to `repeats` on a busy one. */
static const struct pl_param lat_params[LAT_NPARAMS] = {
    {"min_kb", 4, 1, 1 << 20, "KiB", NULL, "smallest working set"},
    {"max_kb", 0, 0, 1 << 24, "KiB", NULL,
     "largest working set; 0: 4x the largest cache the machine reports (within the budget)"},
    {"points_per_octave", 4, 1, 16, "points", NULL, "working-set sizes per doubling"},
    {"loads", 1 << 16, 1000, 1 << 30, "loads", NULL, "dependent loads timed per repetition"},
    {"repeats", 50, 1, 1000, "repeats", NULL,
     "at most this many timed chases per size; they stop sooner once the fastest few agree, "
     "and the fastest is kept"},
    {"pages", PL_PAGES_HUGE, 0, 1, "", "huge,small",
     "huge pages take TLB misses out of the "
     "picture; small (4 KiB) pages add knees at the TLB's reach"},
    {"seed", 1, 1, INT64_MAX, "", NULL, "seed of the xorshift generator that shuffles the chain"},
};

const struct pl_workload pl_wl_latency = {
    "latency",      "pointer chase over working sets from 4 KiB to beyond the last-level cache",
    lat_params,     LAT_NPARAMS,
    pl_latency_run, pl_latency_run_sim, /* built by sim_variants.c */
};
#endif
