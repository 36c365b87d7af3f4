/* first-touch: what the first write to fresh anonymous memory costs, and the ways around it
 * (MAP_POPULATE, huge pages, reusing a pool), alone and with threads. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

#include "pl_workloads.h"

#define MAX_THREADS 64

enum { P_SIZE_MB, P_THREADS, P_ROUNDS, NPARAMS };

static const struct pl_param params[NPARAMS] = {
    {"size_mb", 64, 1, 1 << 16, "MiB", NULL, "fresh memory touched by each variant"},
    {"threads", 4, 1, MAX_THREADS, "threads", NULL, "the thread sweep runs 1..threads threads"},
    {"rounds", 4, 2, 1000, "rounds", NULL, "rounds of use for fresh mmap vs a reused pool"},
};

static char *map(size_t len, int extra_flags)
{
    void *p =
        mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | extra_flags, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* THP off for this range; EINVAL means the kernel has no THP at all, which is just as good */
static int no_huge(char *p, size_t len)
{
    return madvise(p, len, MADV_NOHUGEPAGE) == 0 || errno == EINVAL ? 0 : -errno;
}

static void touch(volatile char *p, size_t len)
{
    size_t page = pl_page_size();
    for (size_t off = 0; off < len; off += page)
        p[off] = 1;
}

static void measure_touch(struct pl_ctx *c, const char *label, char *p, size_t len)
{
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    touch(p, len);
    PL_REGION_END(&r);
    pl_out_region(c->out, label, &r);
}

static int fresh_nohuge(struct pl_ctx *c, size_t len, char **out)
{
    char *p = map(len, 0);
    if (!p)
        return pl_out_fail(c->out, -errno, "mmap of %zu MiB failed", len >> 20);
    int rc = no_huge(p, len);
    if (rc) {
        munmap(p, len);
        return pl_out_fail(c->out, rc, "madvise(MADV_NOHUGEPAGE) failed");
    }
    *out = p;
    return 0;
}

static int touch_twice(struct pl_ctx *c, size_t len)
{
    char *p;
    int rc = fresh_nohuge(c, len, &p);
    if (rc)
        return rc;
    measure_touch(c, "first touch", p, len);
    measure_touch(c, "second touch", p, len);
    munmap(p, len);
    return 0;
}

static int populate(struct pl_ctx *c, size_t len)
{
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    char *p = map(len, MAP_POPULATE);
    PL_REGION_END(&r);
    if (!p)
        return pl_out_fail(c->out, -errno, "mmap(MAP_POPULATE) of %zu MiB failed", len >> 20);
    pl_out_region(c->out, "populate: mmap", &r);
    measure_touch(c, "populate: touch", p, len);
    munmap(p, len);
    return 0;
}

static int huge(struct pl_ctx *c, size_t len)
{
    /* over-allocate so a 2 MiB-aligned span of len bytes fits: THP needs aligned PMD ranges */
    size_t span = len + PL_HUGE_PAGE;
    char *raw = map(span, 0);
    if (!raw)
        return pl_out_fail(c->out, -errno, "mmap of %zu MiB failed", span >> 20);
    char *p = (char *)(((uintptr_t)raw + PL_HUGE_PAGE - 1) & ~(uintptr_t)(PL_HUGE_PAGE - 1));
    if (madvise(p, len, MADV_HUGEPAGE) != 0) {
        /* no THP in this kernel: say so instead of measuring 4 KiB pages under a huge label */
        pl_out_value(c->out, "huge pages", "madvise_errno", errno, "", "rusage");
    } else {
        measure_touch(c, "huge pages", p, len);
    }
    munmap(raw, span);
    return 0;
}

static int pool_vs_fresh(struct pl_ctx *c, size_t len, int64_t rounds)
{
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    for (int64_t i = 0; i < rounds; i++) {
        char *p;
        int rc = fresh_nohuge(c, len, &p);
        if (rc)
            return rc;
        touch(p, len);
        munmap(p, len);
    }
    PL_REGION_END(&r);
    pl_out_region(c->out, "fresh mmap per round", &r);

    char *pool;
    int rc = fresh_nohuge(c, len, &pool);
    if (rc)
        return rc;
    measure_touch(c, "pool: first round", pool, len);
    r = (struct pl_region){.group = c->group};
    PL_REGION_BEGIN(&r);
    for (int64_t i = 1; i < rounds; i++)
        touch(pool, len);
    PL_REGION_END(&r);
    pl_out_region(c->out, "pool: later rounds", &r);
    munmap(pool, len);
    return 0;
}

struct toucher {
    _Alignas(64) char *p; /* a cache line each: threads write their results concurrently */
    size_t len;
    long minflt;    /* this thread's own minor faults (RUSAGE_THREAD) */
    double seconds; /* this thread's time touching */
};

static void *toucher_main(void *arg)
{
    struct toucher *t = arg;
    struct rusage r0, r1;
    struct timespec t0, t1;
    getrusage(RUSAGE_THREAD, &r0);
    clock_gettime(CLOCK_MONOTONIC, &t0);
    touch(t->p, t->len);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    getrusage(RUSAGE_THREAD, &r1);
    t->minflt = r1.ru_minflt - r0.ru_minflt;
    t->seconds = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    return NULL;
}

static int thread_sweep(struct pl_ctx *c, size_t len, int nmax)
{
    struct toucher t[MAX_THREADS];
    pthread_t tid[MAX_THREADS];
    for (int n = 1; n <= nmax; n++) {
        char *p;
        int rc = fresh_nohuge(c, len, &p);
        if (rc)
            return rc;
        size_t page = pl_page_size();
        size_t share = (len / page / (size_t)n) * page; /* page-aligned, disjoint shares */
        char label[PL_LABEL_MAX];
        snprintf(label, sizeof label, "threads=%d", n);
        struct pl_region r = {.group = c->group};
        PL_REGION_BEGIN(&r);
        int started = 0;
        for (; started < n; started++) {
            size_t mine = started == n - 1 ? len - share * (size_t)started : share;
            t[started] = (struct toucher){.p = p + share * (size_t)started, .len = mine};
            rc = pthread_create(&tid[started], NULL, toucher_main, &t[started]);
            if (rc)
                break;
        }
        for (int i = 0; i < started; i++)
            pthread_join(tid[i], NULL);
        PL_REGION_END(&r);
        munmap(p, len);
        if (rc)
            return pl_out_fail(c->out, -rc, "pthread_create failed with %d threads", n);
        pl_out_region(c->out, label, &r);
        for (int i = 0; i < n; i++) {
            char name[PL_NAME_MAX];
            snprintf(name, sizeof name, "thread%d minflt", i);
            pl_out_value(c->out, label, name, (double)t[i].minflt, "", "rusage");
            snprintf(name, sizeof name, "thread%d seconds", i);
            pl_out_value(c->out, label, name, t[i].seconds, "s", "clock");
        }
    }
    return 0;
}

static int run(struct pl_ctx *c)
{
    size_t len = (size_t)c->param[P_SIZE_MB] << 20;
    int rc = touch_twice(c, len);
    if (!rc)
        rc = populate(c, len);
    if (!rc)
        rc = huge(c, len);
    if (!rc)
        rc = pool_vs_fresh(c, len, c->param[P_ROUNDS]);
    if (!rc)
        rc = thread_sweep(c, len, (int)c->param[P_THREADS]);
    return rc;
}

const struct pl_workload pl_wl_first_touch = {
    "first-touch", "first writes to fresh anonymous memory: faults, populate, huge pages, pools",
    params,        NPARAMS,
    run,           NULL,
};
