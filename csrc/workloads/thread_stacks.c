/* thread-stacks: the MAP_32BIT window and the thread-stack trap of 2008.
 *
 * On x86-64, mmap(MAP_32BIT) hands out addresses from [1 GiB, 2 GiB) only (the search starts at
 * a base randomised by up to 32 MiB). glibc used to allocate every thread stack there, retrying
 * without the flag once the window was full (the 2003 retry); the kernels of 2008 searched the
 * window linearly on every failing call, so each pthread_create got slower with every thread.
 *
 * Three parts, each setup / timed run / cleanup:
 *   window:  MAP_32BIT mappings until the flag fails: bounds, count, bytes, time per call;
 *   retry:   in the full window, a plain mmap, a failing MAP_32BIT call and the 2003 retry pair,
 *            interleaved; then the failing call again with the window held by one mapping;
 *   threads: pthread_create with 2003-style stacks (MAP_32BIT, then the retry) and with today's
 *            MAP_STACK stacks, interleaved, all threads kept alive until the end.
 * Nothing here touches the mapped memory except the threads' own stack tops: the cost is
 * address space, not RAM. MAP_32BIT exists only on x86-64; elsewhere the workload says so. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "harness/pl_compat.h"
#include "pl_workloads.h"

/* 64 KiB chunks: the full window then holds ~16,000 separate mappings (the thread stacks of a
 * big 2008 server), so a linear gap search could not hide; 64 KiB is also the smallest size
 * whose full window stays well inside the default vm.max_map_count of 65530. */
#define DEFAULT_CHUNK_KB 64
#define MIN_CHUNK_KB 64
/* glibc's default thread stack is RLIMIT_STACK, usually 8 MiB: only ~127 of them fit the window */
#define DEFAULT_STACK_KB 8192
/* enough threads to fill the window with default stacks and then keep going as long again */
#define DEFAULT_THREADS 256
/* samples of each kind of call: medians of a thousand are steady on a busy machine (~10 ms) */
#define DEFAULT_CALLS 1000
/* the figure's series are bucket medians: at most this many points keeps the output small; the
 * thread series gets fewer, so that each median covers several creates (default: 8) */
#define FILL_POINTS 128
#define THREAD_POINTS 32
/* the first failing calls in the full window, recorded one by one for the figure */
#define FAIL_SERIES 32

enum { P_CHUNK_KB, P_CALLS, P_THREADS, P_STACK_KB, NPARAMS };

static const struct pl_param params[NPARAMS] = {
    {"chunk_kb", DEFAULT_CHUNK_KB, MIN_CHUNK_KB, 256 << 10, "KiB", NULL,
     "size of each MAP_32BIT mapping that fills the window (a multiple of the page size)"},
    {"calls", DEFAULT_CALLS, 16, 100000, "calls", NULL,
     "timed calls of each kind (plain, failing, retry) once the window is full"},
    {"threads", DEFAULT_THREADS, 16, 4096, "threads", NULL,
     "threads created with each kind of stack; all stay alive until the end"},
    {"stack_kb", DEFAULT_STACK_KB, 64, 65536, "KiB", NULL,
     "thread stack size (a multiple of the page size; glibc's default is 8 MiB)"},
};

#ifdef MAP_32BIT

#define WINDOW_LO PL_MAP32_WINDOW_LO
#define WINDOW_HI PL_MAP32_WINDOW_HI
#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

static double now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e9 + (double)t.tv_nsec;
}

static int in_window(const void *p, size_t len)
{
    return (uintptr_t)p >= WINDOW_LO && (uintptr_t)p + len <= WINDOW_HI;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* one write per 4 KiB, the smallest page (volatile: a compiler may not turn it into calloc's
 * lazy zeroing, which would leave the faults for the timed parts) */
static void prefault(void *p, size_t len)
{
    volatile char *b = p;
    for (size_t off = 0; off < len; off += 4096)
        b[off] = 0;
}

/* the median of v[0..n) (reorders v); NAN for no samples */
static double median(double *v, int n)
{
    if (n <= 0)
        return NAN;
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* Bucket medians of v[0..n) as "<prefix>@<first index>" values: a series for the figure.
 * Medians, so that a call during which the worker was preempted does not pass for a slow one. */
static void series(struct pl_out *o, const char *label, const char *prefix, const double *v, int n,
                   int points)
{
    int per = (n + points - 1) / points;
    double *tmp = n > 0 ? malloc((size_t)per * sizeof *tmp) : NULL;
    if (!tmp)
        return; /* nothing to draw (or no memory to sort it): the figure leaves it out */
    for (int i = 0; i < n; i += per) {
        int m = i + per < n ? per : n - i;
        memcpy(tmp, v + i, (size_t)m * sizeof *tmp);
        char name[PL_NAME_MAX];
        snprintf(name, sizeof name, "%s@%d", prefix, i);
        pl_out_value(o, label, name, median(tmp, m), prefix, "clock");
    }
    pl_out_value(o, label, "bucket", per, "calls", "rusage");
    free(tmp);
}

/* ---- window and retry ---------------------------------------------------------------- */

struct window {
    size_t chunk;
    void **map; /* every MAP_32BIT mapping we hold, to unmap one by one (never foreign ones) */
    int nmap, cap;
    int most;   /* one more chunk than the window can hold: the fill never goes past it */
    double *ns; /* time of each successful fill call */
    int filled; /* successful calls before the first failure */
    int late;   /* MAP_32BIT calls that still succeeded after the first failure */
    uintptr_t first, lowest, highest_end;
    int outside; /* mappings that landed outside [1 GiB, 2 GiB) */
};

static void keep(struct window *w, void *p)
{
    w->map[w->nmap++] = p;
    uintptr_t a = (uintptr_t)p;
    if (a < w->lowest)
        w->lowest = a;
    if (a + w->chunk > w->highest_end)
        w->highest_end = a + w->chunk;
    w->outside += !in_window(p, w->chunk);
}

static void unmap_all(struct window *w)
{
    for (int i = 0; i < w->nmap; i++)
        munmap(w->map[i], w->chunk);
    w->nmap = 0;
}

/* Fill the window. Neighbouring chunks alternate PROT_NONE and PROT_READ, so the kernel cannot
 * merge them: one VMA per chunk, as 2008's window held VMAs per thread stack. Neither is
 * writable, so nothing is charged to overcommit, and nothing is touched. Returns the errno of
 * the first failing call (0 if the window took more than it can hold: MAP_32BIT not honoured). */
static int fill(struct pl_ctx *c, struct window *w, double *first_fail_ns)
{
    struct pl_region r = {.group = c->group};
    int err = 0;
    PL_REGION_BEGIN(&r);
    while (w->nmap < w->most) {
        int prot = w->nmap & 1 ? PROT_READ : PROT_NONE;
        double t0 = now_ns();
        void *p = mmap(NULL, w->chunk, prot, ANON | MAP_32BIT, -1, 0);
        double t1 = now_ns();
        if (p == MAP_FAILED) {
            err = errno;
            *first_fail_ns = t1 - t0;
            break;
        }
        if (!w->nmap)
            w->first = (uintptr_t)p;
        w->ns[w->nmap] = t1 - t0;
        keep(w, p);
    }
    PL_REGION_END(&r);
    pl_out_region(c->out, "window fill", &r);
    w->filled = w->nmap;
    return err;
}

/* One timed, writable mmap of a chunk with extra flags (MAP_32BIT or none); *got is NULL if it
 * failed. The caller unmaps what it got, or keeps a late MAP_32BIT success in the window. */
static double timed_map(struct window *w, int flags, void **got)
{
    double t0 = now_ns();
    void *p = mmap(NULL, w->chunk, PROT_READ | PROT_WRITE, ANON | flags, -1, 0);
    double t1 = now_ns();
    *got = p == MAP_FAILED ? NULL : p;
    return t1 - t0;
}

/* the 2003 glibc retry (ARCH_RETRY_MMAP): MAP_32BIT first, then the same call without it */
static double timed_retry(struct window *w, void **got, int *late)
{
    double t0 = now_ns();
    void *p = mmap(NULL, w->chunk, PROT_READ | PROT_WRITE, ANON | MAP_32BIT, -1, 0);
    *late = p != MAP_FAILED;
    if (p == MAP_FAILED)
        p = mmap(NULL, w->chunk, PROT_READ | PROT_WRITE, ANON, -1, 0);
    double t1 = now_ns();
    *got = p == MAP_FAILED ? NULL : p;
    return t1 - t0;
}

/* A successful MAP_32BIT call where we expected failure: keep it (the window is fuller now) */
static void late_success(struct window *w, void *p)
{
    if (w->nmap < w->cap) {
        keep(w, p);
        w->late++;
    } else {
        munmap(p, w->chunk);
    }
}

struct samples {
    double *plain, *fail, *retry;
    int nplain, nfail, nretry;
};

/* calls rounds of: plain mmap, failing MAP_32BIT, retry pair; interleaved so that a busy
 * machine slows all three alike. Returns 0 or -errno of a plain mmap that failed. */
static int time_full(struct pl_ctx *c, struct window *w, struct samples *s, int calls, int retry,
                     const char *label)
{
    struct pl_region r = {.group = c->group};
    int err = 0;
    PL_REGION_BEGIN(&r);
    for (int i = 0; i < calls && !err; i++) {
        void *p;
        double t = timed_map(w, 0, &p);
        if (!p) {
            err = -errno;
            break;
        }
        munmap(p, w->chunk);
        s->plain[s->nplain++] = t;
        t = timed_map(w, MAP_32BIT, &p);
        if (p)
            late_success(w, p);
        else
            s->fail[s->nfail++] = t;
        if (!retry)
            continue;
        int late;
        t = timed_retry(w, &p, &late);
        if (!p) {
            err = -errno;
            break;
        }
        if (late)
            late_success(w, p);
        else {
            munmap(p, w->chunk);
            s->retry[s->nretry++] = t;
        }
    }
    PL_REGION_END(&r);
    pl_out_region(c->out, label, &r);
    return err;
}

static void report_window(struct pl_ctx *c, struct window *w, int err, double first_fail_ns,
                          int plain_ok)
{
    const char *L = "window fill";
    struct pl_out *o = c->out;
    pl_out_value(o, L, "chunk_bytes", (double)w->chunk, "B", "rusage");
    pl_out_value(o, L, "mappings", w->filled, "", "rusage");
    pl_out_value(o, L, "bytes", (double)w->filled * (double)w->chunk, "B", "rusage");
    pl_out_value(o, L, "first_addr", (double)w->first, "addr", "rusage");
    pl_out_value(o, L, "lowest_addr", (double)w->lowest, "addr", "rusage");
    pl_out_value(o, L, "highest_end", (double)w->highest_end, "addr", "rusage");
    pl_out_value(o, L, "outside", w->outside, "", "rusage");
    pl_out_value(o, L, "errno", err, "errno", "rusage");
    pl_out_value(o, L, "plain_after_fail", plain_ok, "", "rusage");
    if (err)
        pl_out_value(o, L, "first_fail_ns", first_fail_ns, "ns", "clock");
    series(o, "fill series", "ns", w->ns, w->filled, FILL_POINTS);
    pl_out_value(o, L, "fill_ns_median", median(w->ns, w->filled), "ns", "clock");
}

static int window_and_retry(struct pl_ctx *c, size_t chunk, int calls)
{
    /* setup: room for the fill and for late successes (at most two per timed round) */
    struct window w = {.chunk = chunk, .lowest = UINTPTR_MAX};
    w.most = (int)((WINDOW_HI - WINDOW_LO) / chunk) + 1;
    w.cap = w.most + 2 * calls;
    w.map = malloc((size_t)w.cap * sizeof *w.map);
    w.ns = malloc((size_t)w.cap * sizeof *w.ns);
    struct samples dense = {0}, sparse = {0};
    dense.plain = malloc((size_t)calls * sizeof(double));
    dense.fail = malloc((size_t)calls * sizeof(double));
    dense.retry = malloc((size_t)calls * sizeof(double));
    sparse.plain = malloc((size_t)calls * sizeof(double));
    sparse.fail = malloc((size_t)calls * sizeof(double));
    int rc = 0;
    if (!w.map || !w.ns || !dense.plain || !dense.fail || !dense.retry || !sparse.plain ||
        !sparse.fail) {
        rc = pl_out_fail(c->out, -ENOMEM, "no memory for the sample arrays");
        goto out;
    }
    /* fault the bookkeeping in now, so the timed parts take no page faults of their own */
    prefault(w.map, (size_t)w.cap * sizeof *w.map);
    prefault(w.ns, (size_t)w.cap * sizeof *w.ns);
    prefault(dense.plain, (size_t)calls * sizeof(double));
    prefault(dense.fail, (size_t)calls * sizeof(double));
    prefault(dense.retry, (size_t)calls * sizeof(double));
    prefault(sparse.plain, (size_t)calls * sizeof(double));
    prefault(sparse.fail, (size_t)calls * sizeof(double));

    /* run: fill until MAP_32BIT fails; does the same call without the flag still work? */
    double first_fail_ns = 0;
    int err = fill(c, &w, &first_fail_ns);
    void *p = mmap(NULL, chunk, PROT_READ | PROT_WRITE, ANON, -1, 0);
    int plain_ok = p != MAP_FAILED;
    if (plain_ok)
        munmap(p, chunk);
    report_window(c, &w, err, first_fail_ns, plain_ok);
    if (!err || !plain_ok)
        goto out; /* no full window to time in: the claims say why */

    rc = time_full(c, &w, &dense, calls, 1, "full window");
    if (rc) {
        pl_out_fail(c->out, rc, "a plain mmap of %zu KiB failed in the full window", chunk >> 10);
        goto out;
    }
    for (int i = 0; i < FAIL_SERIES && i < dense.nfail; i++) {
        char name[PL_NAME_MAX];
        snprintf(name, sizeof name, "ns@%d", w.filled + 1 + i);
        pl_out_value(c->out, "failing series", name, dense.fail[i], "ns", "clock");
    }
    const char *L = "full window";
    pl_out_value(c->out, L, "vmas", w.nmap, "", "rusage");
    pl_out_value(c->out, L, "late_successes", w.late, "", "rusage");
    pl_out_value(c->out, L, "plain_ns", median(dense.plain, dense.nplain), "ns", "clock");
    pl_out_value(c->out, L, "fail_ns", median(dense.fail, dense.nfail), "ns", "clock");
    pl_out_value(c->out, L, "retry_ns", median(dense.retry, dense.nretry), "ns", "clock");
    pl_out_value(c->out, L, "fail_samples", dense.nfail, "", "rusage");
    pl_out_value(c->out, L, "retry_samples", dense.nretry, "", "rusage");

    /* the same failing call with the window held by ONE mapping over the span ours covered: a
     * linear search would now be quick, a logarithmic one costs what it did */
    uintptr_t lo = w.lowest, hi = w.highest_end;
    unmap_all(&w);
    void *big = mmap((void *)lo, hi - lo, PROT_NONE, ANON | MAP_FIXED_NOREPLACE, -1, 0);
    if (big != (void *)lo) { /* a foreign mapping in the span, or a kernel before 4.17 */
        int e = big == MAP_FAILED ? errno : EEXIST;
        if (big != MAP_FAILED)
            munmap(big, hi - lo);
        pl_out_value(c->out, "one-mapping window", "errno", e, "errno", "rusage");
        goto out;
    }
    w.late = 0;
    rc = time_full(c, &w, &sparse, calls, 0, "one-mapping window");
    munmap(big, hi - lo);
    if (rc) {
        pl_out_fail(c->out, rc, "a plain mmap of %zu KiB failed", chunk >> 10);
        goto out;
    }
    L = "one-mapping window";
    pl_out_value(c->out, L, "vmas", 1 + w.nmap, "", "rusage");
    pl_out_value(c->out, L, "late_successes", w.late, "", "rusage");
    pl_out_value(c->out, L, "plain_ns", median(sparse.plain, sparse.nplain), "ns", "clock");
    pl_out_value(c->out, L, "fail_ns", median(sparse.fail, sparse.nfail), "ns", "clock");
    pl_out_value(c->out, L, "fail_samples", sparse.nfail, "", "rusage");

out: /* cleanup */
    if (w.map)
        unmap_all(&w);
    free(w.map);
    free(w.ns);
    free(dense.plain);
    free(dense.fail);
    free(dense.retry);
    free(sparse.plain);
    free(sparse.fail);
    return rc;
}

/* ---- threads ------------------------------------------------------------------------- */

/* Created threads wait here until all are made, so they accumulate as in a thread pool. */
struct gate {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int open;
};

static void *waiter(void *arg)
{
    struct gate *g = arg;
    pthread_mutex_lock(&g->mu);
    while (!g->open)
        pthread_cond_wait(&g->cv, &g->mu);
    pthread_mutex_unlock(&g->mu);
    return NULL;
}

struct kind {
    const char *label;
    int first32; /* 2003: MAP_32BIT, retried without it; else today's MAP_STACK */
    int n;       /* threads created */
    pthread_t *tid;
    void **stack;
    double *us; /* stack allocation + pthread_create, per thread */
    unsigned char *retried;
};

/* A stack as glibc's allocate_stack makes one: the mapping, then a PROT_NONE guard page at its
 * low end (which also keeps neighbouring stacks in separate VMAs). */
static void *map_stack(size_t len, size_t page, int first32, unsigned char *retried)
{
    void *p = MAP_FAILED;
    if (first32)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, ANON | MAP_32BIT, -1, 0);
    *retried = first32 && p == MAP_FAILED;
    if (p == MAP_FAILED)
        p = mmap(NULL, len, PROT_READ | PROT_WRITE, ANON | (first32 ? 0 : MAP_STACK), -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    if (mprotect(p, page, PROT_NONE) != 0) {
        int e = errno;
        munmap(p, len);
        errno = e;
        return NULL;
    }
    return p;
}

/* Time stack allocation and pthread_create for thread i of kind k; 0 or an errno. Huge pages
 * are refused (untimed, both kinds) so a thread's first touch maps 4 KiB, not 2 MiB. */
static int create(struct kind *k, int i, size_t len, size_t page, struct gate *g)
{
    pthread_attr_t a;
    int rc = pthread_attr_init(&a);
    if (rc)
        return rc;
    double t0 = now_ns();
    void *p = map_stack(len, page, k->first32, &k->retried[i]);
    double t1 = now_ns();
    if (!p) {
        rc = errno;
    } else if (madvise(p, len, MADV_NOHUGEPAGE) != 0 && errno != EINVAL) {
        rc = errno; /* EINVAL: no THP in this kernel, which is just as good */
    } else {
        rc = pthread_attr_setstack(&a, (char *)p + page, len - page);
    }
    double t2 = now_ns();
    if (!rc)
        rc = pthread_create(&k->tid[i], &a, waiter, g);
    double t3 = now_ns();
    pthread_attr_destroy(&a);
    if (rc) {
        if (p)
            munmap(p, len);
        return rc;
    }
    k->stack[i] = p;
    k->us[i] = (t1 - t0 + t3 - t2) / 1e3;
    k->n = i + 1;
    return 0;
}

static void report_kind(struct pl_ctx *c, struct kind *k, size_t len, int m, int full_at)
{
    /* how many stacks the window took, and how much of it they spanned, holes included */
    int in = 0;
    uintptr_t lo = UINTPTR_MAX, hi = 0;
    for (int i = 0; i < k->n; i++) {
        uintptr_t a = (uintptr_t)k->stack[i];
        if (!in_window(k->stack[i], len))
            continue;
        in++;
        lo = a < lo ? a : lo;
        hi = a + len > hi ? a + len : hi;
    }
    pl_out_value(c->out, k->label, "created", k->n, "", "rusage");
    pl_out_value(c->out, k->label, "stacks_in_window", in, "", "rusage");
    if (in)
        pl_out_value(c->out, k->label, "window_span", (double)(hi - lo), "B", "rusage");
    series(c->out, k->label, "us", k->us, k->n, THREAD_POINTS);
    /* medians before and after the index where the 2003 stacks stopped fitting (same indices
     * for both kinds); us[] is reordered by median(), so this comes last */
    int split = full_at < 0 ? m : full_at;
    double before = median(k->us, split);
    double after = median(k->us + split, m - split);
    pl_out_value(c->out, k->label, "us_before_full", before, "us", "clock");
    if (full_at >= 0)
        pl_out_value(c->out, k->label, "us_after_full", after, "us", "clock");
}

static void free_kinds(struct kind *kinds)
{
    for (int j = 0; j < 2; j++) {
        free(kinds[j].tid);
        free(kinds[j].stack);
        free(kinds[j].us);
        free(kinds[j].retried);
    }
}

static int threads(struct pl_ctx *c, int n, size_t len, size_t page)
{
    /* setup */
    struct kind kinds[2] = {{.label = "threads: MAP_32BIT first", .first32 = 1},
                            {.label = "threads: MAP_STACK", .first32 = 0}};
    struct gate g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};
    for (int j = 0; j < 2; j++) {
        struct kind *k = &kinds[j];
        k->tid = calloc((size_t)n, sizeof *k->tid);
        k->stack = calloc((size_t)n, sizeof *k->stack);
        k->us = calloc((size_t)n, sizeof *k->us);
        k->retried = calloc((size_t)n, 1);
        if (!k->tid || !k->stack || !k->us || !k->retried) {
            free_kinds(kinds);
            return pl_out_fail(c->out, -ENOMEM, "no memory for the thread tables");
        }
    }

    /* run: thread i of each kind in turn, alternating which goes first */
    struct pl_region r = {.group = c->group};
    int rc = 0, failed_at = -1;
    PL_REGION_BEGIN(&r);
    for (int i = 0; i < n && !rc; i++) {
        for (int j = 0; j < 2 && !rc; j++)
            rc = create(&kinds[(i + j) & 1], i, len, page, &g);
        if (rc)
            failed_at = i;
    }
    PL_REGION_END(&r);

    /* cleanup, also after a failed create: release every thread, join it, unmap its stack */
    pthread_mutex_lock(&g.mu);
    g.open = 1;
    pthread_cond_broadcast(&g.cv);
    pthread_mutex_unlock(&g.mu);
    for (int j = 0; j < 2; j++)
        for (int i = 0; i < kinds[j].n; i++) {
            pthread_join(kinds[j].tid[i], NULL);
            munmap(kinds[j].stack[i], len);
        }

    /* a create that failed (EAGAIN at a pids limit, say) is reported as data, not as a crash */
    pl_out_region(c->out, "thread creates", &r);
    int m = kinds[0].n < kinds[1].n ? kinds[0].n : kinds[1].n;
    int full_at = -1;
    for (int i = 0; i < m && full_at < 0; i++)
        if (kinds[0].retried[i])
            full_at = i;
    pl_out_value(c->out, "thread creates", "full_at", full_at, "", "rusage");
    if (failed_at >= 0) {
        pl_out_value(c->out, "thread creates", "failed_at", failed_at, "", "rusage");
        pl_out_value(c->out, "thread creates", "errno", rc, "errno", "rusage");
    }
    for (int j = 0; j < 2; j++)
        report_kind(c, &kinds[j], len, m, full_at);
    free_kinds(kinds);
    return 0;
}

static int run(struct pl_ctx *c)
{
    size_t page = pl_page_size();
    size_t chunk = (size_t)c->param[P_CHUNK_KB] << 10, stack = (size_t)c->param[P_STACK_KB] << 10;
    if (chunk % page || stack % page)
        return pl_out_fail(c->out, -EINVAL, "chunk_kb and stack_kb must be page multiples");
    pl_out_value(c->out, "window fill", "map_32bit", 1, "", "rusage");
    int rc = window_and_retry(c, chunk, (int)c->param[P_CALLS]);
    if (!rc)
        rc = threads(c, (int)c->param[P_THREADS], stack, page);
    return rc;
}

#else /* no MAP_32BIT: not x86-64 */

static int run(struct pl_ctx *c)
{
    pl_out_value(c->out, "window fill", "map_32bit", 0, "", "rusage");
    return 0;
}

#endif

const struct pl_workload pl_wl_thread_stacks = {
    "thread-stacks",
    "MAP_32BIT until the window is full; thread stacks the 2003 way and today's",
    params,
    NPARAMS,
    run,
    NULL,
};
