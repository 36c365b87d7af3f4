/* mountain: the memory mountain (Bryant and O'Hallaron, CS:APP 6.6.1). Read throughput of a
 * strided read over working sets from a few KiB to beyond the last-level cache, for strides of 1
 * to max_stride 8-byte words. Two kinds of locality shape it: temporal (a small working set stays
 * in a cache, the ridges along the size axis) and spatial (a small stride uses every word of each
 * 64-byte line it fetches, the slope along the stride axis).
 *
 * Each point reads the working set `passes` times, enough passes for at least min_loads loads,
 * after one untimed warm-up pass; the fastest of `repeats` in this thread's CPU time is kept, as
 * in latency.c, so time spent preempted does not count. All file-level names carry a mtn_
 * prefix. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <time.h>

#include "pl_workloads.h"

_Static_assert(PL_MOUNTAIN_WORD == sizeof(uint64_t), "one load reads one word");
_Static_assert(PL_MOUNTAIN_MAX_POINTS <= PL_OUT_MAX_VALUES, "one value per point");

enum { MTN_P_MIN_KB, MTN_P_MAX_KB, MTN_P_MAX_STRIDE, MTN_P_LOADS, MTN_P_REPEATS, MTN_NPARAMS };

/* The hot loop: one pass over n words at the given stride, four independent sums so that the
 * loads are not serialised by one add chain (CS:APP's 4x4 unrolling, reduced to its point). */
static uint64_t mtn_pass(const uint64_t *a, size_t n, size_t stride)
{
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    size_t i = 0;
    for (; i + 3 * stride < n; i += 4 * stride) {
        s0 += a[i];
        s1 += a[i + stride];
        s2 += a[i + 2 * stride];
        s3 += a[i + 3 * stride];
    }
    for (; i < n; i += stride)
        s0 += a[i];
    return s0 + s1 + s2 + s3;
}

static double mtn_seconds(const struct timespec *a, const struct timespec *b)
{
    return (double)(b->tv_sec - a->tv_sec) + (double)(b->tv_nsec - a->tv_nsec) / 1e9;
}

/* One point: MB/s (10^6 bytes read per second of thread CPU time), the fastest of the repeats. */
static double mtn_point(const struct pl_ctx *c, const uint64_t *a, size_t n, size_t stride)
{
    size_t per_pass = (n + stride - 1) / stride;
    int64_t passes = (c->param[MTN_P_LOADS] + (int64_t)per_pass - 1) / (int64_t)per_pass;
    volatile uint64_t sink = mtn_pass(a, n, stride); /* warm-up: the set is in whatever fits it */
    double best = 0;
    for (int64_t rep = 0; rep < c->param[MTN_P_REPEATS]; rep++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
        for (int64_t p = 0; p < passes; p++)
            sink += mtn_pass(a, n, stride);
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
        double s = mtn_seconds(&t0, &t1);
        double mbps = s > 0 ? (double)passes * (double)per_pass * PL_MOUNTAIN_WORD / s / 1e6 : 0;
        best = mbps > best ? mbps : best;
    }
    (void)sink;
    return best;
}

static int mtn_run(struct pl_ctx *c)
{
    int64_t min_kb = c->param[MTN_P_MIN_KB], max_kb = c->param[MTN_P_MAX_KB];
    int64_t max_stride = c->param[MTN_P_MAX_STRIDE];
    int nsizes = 0;
    for (int64_t kb = min_kb; kb <= max_kb; kb *= 2)
        nsizes++;
    if (nsizes == 0 || nsizes * max_stride > PL_MOUNTAIN_MAX_POINTS)
        return pl_out_fail(c->out, -EINVAL,
                           "%d sizes x %lld strides: between 1 and %d points fit one run", nsizes,
                           (long long)max_stride, PL_MOUNTAIN_MAX_POINTS);
    size_t len = (size_t)max_kb * 1024;
    uint64_t *a = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (a == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "mmap of %zu KiB failed", len >> 10);
    /* written, not just mapped: untouched pages would all read the one shared zero page */
    for (size_t i = 0; i < len / PL_MOUNTAIN_WORD; i++)
        a[i] = i;
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    for (int64_t kb = min_kb; kb <= max_kb; kb *= 2) {
        for (int64_t stride = 1; stride <= max_stride; stride++) {
            char label[PL_LABEL_MAX];
            snprintf(label, sizeof label, "%lld KiB stride %lld", (long long)kb, (long long)stride);
            double mbps = mtn_point(c, a, (size_t)kb * 1024 / PL_MOUNTAIN_WORD, (size_t)stride);
            pl_out_value(c->out, label, "mb_per_s", mbps, "MB/s", "clock");
        }
    }
    PL_REGION_END(&r);
    pl_out_region(c->out, "sweep", &r);
    munmap(a, len);
    return 0;
}

/* Defaults: 16 KiB (inside any L1d) up to max_kb, which 0 lets Python choose (4x the largest
 * cache sysfs reports, within the memory budget); strides of 1 to 16 words (8 B to two cache
 * lines); at least 2^20 loads per timed repetition (~1 ms in L1, a few ms from DRAM), the fastest
 * of 3 kept. Sizes double from min_kb up to max_kb. */
static const struct pl_param mtn_params[MTN_NPARAMS] = {
    {"min_kb", 16, 1, 1 << 20, "KiB", NULL, "smallest working set (sizes double up to max_kb)"},
    {"max_kb", 0, 0, 1 << 22, "KiB", NULL,
     "largest working set; 0: 4x the largest cache the machine reports (within the budget)"},
    {"max_stride", 16, 1, 64, "words", NULL, "strides from 1 to this many 8-byte words"},
    {"loads", 1 << 20, 1000, 1 << 30, "loads", NULL, "loads timed per repetition (at least)"},
    {"repeats", 3, 1, 100, "repeats", NULL, "timed repetitions per point; the fastest is kept"},
};

const struct pl_workload pl_wl_mountain = {
    "mountain", "read throughput over working-set size x stride (the memory mountain)",
    mtn_params, MTN_NPARAMS,
    mtn_run,    NULL,
};
