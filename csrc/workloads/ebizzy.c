/* ebizzy: threads repeatedly take a buffer, copy a chunk of a shared "database" into it, search
 * it and give the buffer back, like the IBM/LTP benchmark modelled on web-server workloads. How
 * a record gets its buffer decides whether it faults fresh zeroed pages every time:
 *   malloc        glibc's defaults (a dynamic mmap threshold, see docs/experiments/ebizzy.md)
 *   malloc-fixed  M_MMAP_THRESHOLD pinned at its 128 KiB default: big buffers are mmapped and
 *                 munmapped on every record: the ebizzy analysis's storm, through munmap
 *                 where the analysis saw madvise
 *   mmap          mmap/munmap per record: always fresh pages
 *   pool          one buffer per thread, reused
 *   tuned         mallopt: buffers stay below the mmap threshold and the heap is not trimmed
 * Each mode runs in a worker process of its own: mallopt settings and glibc's dynamic threshold
 * are process-wide and would otherwise carry over from one mode to the next. */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "harness/pl_compat.h"
#include "harness/pl_steady.h"
#include "perf/pl_sampling.h"
#include "pl_ebizzy.h"
#include "pl_workloads.h"

#define MAX_THREADS 64
#define CHUNK_TAG_SHIFT 40 /* source words carry their chunk number above this bit */
/* glibc's largest accepted threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX): above every
 * buffer_kb allowed below, so tuned buffers always come from an arena */
#define TUNED_MMAP_THRESHOLD (32 << 20)
/* keep up to 1 GiB free at the top of a heap instead of handing it back after every free */
#define TUNED_TRIM_THRESHOLD (1 << 30)
/* samples a record may add beyond its buffer's pages: malloc headers, arena setup, stack */
#define RING_SLACK_SAMPLES 64

enum { MODE_ALL, MODE_MALLOC, MODE_MALLOC_FIXED, MODE_MMAP, MODE_POOL, MODE_TUNED, NMODES };
enum { P_MODE, P_THREADS, P_BUFFER_KB, P_RECORDS, P_ROUNDS, P_CHUNKS, P_RING_KB, NPARAMS };

static const struct pl_param params[NPARAMS] = {
    {"mode", MODE_ALL, 0, NMODES - 1, "", "all,malloc,malloc-fixed,mmap,pool,tuned",
     "how each record gets its buffer; all runs every mode, each in a worker of its own"},
    {"threads", 2, 1, MAX_THREADS, "threads", NULL, "threads doing records at the same time"},
    {"buffer_kb", 1024, 4, 16384, "KiB", NULL,
     "the per-record buffer and the chunk copied into it (glibc mmaps >= 128 KiB by default)"},
    {"records", 50, 1, 100000, "records", NULL, "records per thread in each round"},
    {"rounds", 20, 1, 50, "rounds", NULL,
     "at most this many timed rounds per mode; they stop sooner once the fastest few agree"},
    {"chunks", 8, 1, 1024, "chunks", NULL, "chunks in the shared source the records copy from"},
    {"ring_kb", 0, 0, 4096, "KiB", NULL,
     "per-thread ring buffer of the fault profile; 0 sizes it for one record's samples"},
};

struct ebizzy { /* read-only while threads run */
    int mode;
    size_t len; /* buffer bytes, a multiple of 64 */
    int64_t records;
    const uint64_t *source;
    size_t nchunks;
    size_t ring_bytes;
};

struct slot {                            /* one per thread, kept across rounds */
    _Alignas(64) const struct ebizzy *e; /* a cache line each: threads write their own slot */
    uint64_t rng;
    uint64_t found; /* search hits: keeps the searches alive */
    char *pool;     /* MODE_POOL: this thread's buffer, reused across records and rounds */
    struct pl_fault_profile *prof; /* set for the profiling round only */
    int err;                       /* -errno of a failed allocation */
    int sampler_err;               /* -errno of a sampler that failed; sampler_step says where */
    const char *sampler_step;
};

struct line {
    uint64_t w[8];
};

void pl_ebizzy_copy(void *dst, const void *src, size_t len)
{
    struct line *d = dst;
    const struct line *s = src;
    for (size_t i = 0; i < len / sizeof *d; i++) {
        d[i] = s[i];
        /* without this empty asm GCC turns the loop into a call to memcpy, and the profile
         * would point into libc's unexported memcpy variant instead of at this copy */
        __asm__ volatile("" ::: "memory");
    }
}

int pl_ebizzy_search(const uint64_t *words, size_t n, uint64_t key)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (words[mid] < key)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && words[lo] == key;
}

static void *take(struct slot *s)
{
    const struct ebizzy *e = s->e;
    if (e->mode == MODE_MMAP) {
        void *p = mmap(NULL, e->len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    if (e->mode == MODE_POOL) {
        if (!s->pool)
            s->pool = malloc(e->len);
        return s->pool;
    }
    return malloc(e->len);
}

static int give(struct slot *s, void *p)
{
    const struct ebizzy *e = s->e;
    if (e->mode == MODE_MMAP)
        return munmap(p, e->len) == 0 ? 0 : -errno;
    if (e->mode != MODE_POOL)
        free(p);
    return 0;
}

/* One record: take a buffer, copy a random chunk into it, search it, give the buffer back. */
static int record(struct slot *s)
{
    const struct ebizzy *e = s->e;
    size_t words = e->len / sizeof(uint64_t);
    uint64_t r = pl_random(&s->rng);
    uint64_t chunk = r % e->nchunks;
    uint64_t *buf = take(s);
    if (!buf)
        return errno ? -errno : -ENOMEM;
    pl_ebizzy_copy(buf, e->source + chunk * words, e->len);
    uint64_t key = chunk << CHUNK_TAG_SHIFT | (r >> 24) % (2 * words); /* half the keys exist */
    s->found += (uint64_t)pl_ebizzy_search(buf, words, key);
    return give(s, buf);
}

static void sampler_failed(struct slot *s, int err, const char *step)
{
    s->sampler_err = err;
    s->sampler_step = step;
}

static void *worker(void *arg)
{
    struct slot *s = arg;
    struct pl_sampler smp;
    int sampling = 0;
    if (s->prof) {
        /* fault the profile's own pages in now, or the sampler would profile its bookkeeping */
        memset(s->prof, 0, sizeof *s->prof);
        int rc = pl_sampler_open(&smp, s->e->ring_bytes);
        if (rc) {
            sampler_failed(s, rc, smp.failed);
        } else if ((rc = pl_sampler_enable(&smp)) != 0) {
            pl_sampler_close(&smp);
            sampler_failed(s, rc, "ioctl");
        } else {
            sampling = 1;
        }
    }
    for (int64_t i = 0; i < s->e->records && !s->err; i++) {
        s->err = record(s);
        /* drained between records, so the ring only ever has to hold one record's faults */
        if (sampling) {
            int rc = pl_sampler_drain(&smp, s->prof);
            if (rc && !s->sampler_err)
                sampler_failed(s, rc, "ring");
        }
    }
    if (sampling) {
        int rc = pl_sampler_finish(&smp, s->prof);
        if (rc && !s->sampler_err)
            sampler_failed(s, rc, "ring");
    }
    return NULL;
}

static int run_threads(struct pl_ctx *c, const struct ebizzy *e, struct slot *slots, int n)
{
    pthread_t tid[MAX_THREADS];
    int started = 0, rc = 0;
    for (; started < n; started++) {
        rc = pthread_create(&tid[started], NULL, worker, &slots[started]);
        if (rc)
            break;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    if (rc)
        return pl_out_fail(c->out, -rc, "pthread_create failed for thread %d of %d", started + 1,
                           n);
    for (int i = 0; i < n; i++)
        if (slots[i].err)
            return pl_out_fail(c->out, slots[i].err,
                               "taking or giving back a %zu KiB buffer failed", e->len >> 10);
    return 0;
}

static double round_seconds(const struct pl_region *r)
{
    return (double)(r->end.clock.tv_sec - r->begin.clock.tv_sec) +
           (double)(r->end.clock.tv_nsec - r->begin.clock.tv_nsec) / 1e9;
}

/* Timed rounds until the fastest agree (pl_steady.h), at most `rounds` of them. */
static int timed_rounds(struct pl_ctx *c, const struct ebizzy *e, struct slot *slots, int n,
                        int64_t rounds)
{
    struct pl_fastest best = {0};
    while (best.runs < rounds && !pl_fastest_steady(&best)) {
        struct pl_region reg = {.group = c->group};
        PL_REGION_BEGIN(&reg);
        int rc = run_threads(c, e, slots, n);
        PL_REGION_END(&reg);
        if (rc)
            return rc;
        char label[PL_LABEL_MAX];
        snprintf(label, sizeof label, "round %d", best.runs + 1);
        pl_out_region(c->out, label, &reg);
        pl_fastest_add(&best, round_seconds(&reg));
    }
    pl_out_value(c->out, "rounds", "spread", pl_fastest_spread(&best), "", "clock");
    return 0;
}

static void report_profile(struct pl_ctx *c, struct slot *slots, int n, size_t ring_bytes,
                           struct pl_fault_profile *all)
{
    struct pl_out *o = c->out;
    int sampled = 0;
    for (int i = 0; i < n; i++) {
        if (slots[i].sampler_err && slots[i].sampler_step) {
            char name[PL_NAME_MAX];
            snprintf(name, sizeof name, "%s_errno", slots[i].sampler_step);
            pl_out_value(o, "profile", name, -slots[i].sampler_err, "", "sw");
            break; /* the first failure says why; the others are the same */
        }
    }
    for (int i = 0; i < n; i++) {
        sampled += !slots[i].sampler_err;
        pl_fault_profile_merge(all, slots[i].prof);
    }
    pl_fault_profile_sort(all);
    const struct {
        const char *name;
        double value;
    } v[] = {
        {"threads_sampled", sampled},
        {"ring_bytes", (double)ring_bytes},
        {"samples", (double)all->samples},
        {"lost", (double)all->lost},
        {"counted", (double)all->counted},
        {"unsited", (double)all->unsited},
        {"foreign", (double)all->foreign},
        {"kernel", (double)all->kernel},
        {"pages", (double)all->pages},
        {"pages_full", all->pages_full},
        {"kernel_excluded", all->kernel_excluded},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        pl_out_value(o, "profile", v[i].name, v[i].value, "", "sw");
    /* one record set per code location, busiest first: samples, where, module */
    for (int i = 0; i < all->nsites; i++) {
        char label[PL_LABEL_MAX], where[160], module[96];
        snprintf(label, sizeof label, "site %d", i + 1);
        pl_fault_site_name(all->site[i].ip, where, sizeof where, module, sizeof module);
        pl_out_number(o, label, "samples", all->site[i].samples);
        pl_out_text(o, label, "where", "%s", where);
        pl_out_text(o, label, "module", "%s", module);
    }
}

/* One more round with a page-fault sampler in every thread, after the timed ones so the
 * sampling cost never lands in a timed region. */
static int profile_round(struct pl_ctx *c, struct ebizzy *e, struct slot *slots, int n,
                         size_t ring_bytes)
{
    struct pl_fault_profile *prof = malloc(((size_t)n + 1) * sizeof *prof); /* zeroed by users */
    if (!prof)
        return pl_out_fail(c->out, -ENOMEM, "no memory for the fault profile");
    for (int i = 0; i < n; i++) {
        slots[i].prof = &prof[i + 1];
        slots[i].sampler_err = 0;
        slots[i].sampler_step = NULL;
    }
    e->ring_bytes = ring_bytes;
    memset(&prof[0], 0, sizeof prof[0]);
    int rc = run_threads(c, e, slots, n);
    if (!rc)
        report_profile(c, slots, n, ring_bytes, &prof[0]);
    for (int i = 0; i < n; i++)
        slots[i].prof = NULL;
    free(prof);
    return rc;
}

/* Process-wide malloc settings for this mode; the worker is fresh, so they start at glibc's
 * defaults. */
static int malloc_settings(struct pl_ctx *c, int mode)
{
#ifdef __GLIBC__
    if (mode == MODE_MALLOC_FIXED && mallopt(M_MMAP_THRESHOLD, PL_EBIZZY_FIXED_MMAP_THRESHOLD) != 1)
        return pl_out_fail(c->out, -EINVAL, "mallopt(M_MMAP_THRESHOLD) failed");
    if (mode == MODE_TUNED && (mallopt(M_MMAP_THRESHOLD, TUNED_MMAP_THRESHOLD) != 1 ||
                               mallopt(M_TRIM_THRESHOLD, TUNED_TRIM_THRESHOLD) != 1))
        return pl_out_fail(c->out, -EINVAL, "mallopt(M_MMAP/M_TRIM_THRESHOLD) failed");
    return 0;
#else
    if (mode == MODE_MALLOC_FIXED || mode == MODE_TUNED)
        return pl_out_fail(c->out, -ENOTSUP, "this mode needs glibc's mallopt");
    return 0;
#endif
}

static uint64_t *make_source(size_t nchunks, size_t len)
{
    void *p = mmap(NULL, nchunks * len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    uint64_t *w = p;
    size_t words = len / sizeof *w;
    for (size_t c = 0; c < nchunks; c++) /* sorted within a chunk: odd numbers, chunk-tagged */
        for (size_t i = 0; i < words; i++)
            w[c * words + i] = (uint64_t)c << CHUNK_TAG_SHIFT | (2 * i + 1);
    return w;
}

static int run(struct pl_ctx *c)
{
    int mode = (int)c->param[P_MODE];
    int n = (int)c->param[P_THREADS];
    if (mode == MODE_ALL)
        return pl_out_fail(c->out, -EINVAL,
                           "mode=all runs each mode in a worker of its own: pass one mode");
    /* each fault maps one 4 KiB page: huge pages (and mTHP) are the first-touch chapter's topic */
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0)
        return pl_out_fail(c->out, -errno, "prctl(PR_SET_THP_DISABLE) failed");
    int rc = malloc_settings(c, mode);
    if (rc)
        return rc;
    struct ebizzy e = {
        .mode = mode,
        .len = (size_t)c->param[P_BUFFER_KB] << 10,
        .records = c->param[P_RECORDS],
        .nchunks = (size_t)c->param[P_CHUNKS],
    };
    uint64_t *source = make_source(e.nchunks, e.len);
    if (!source)
        return pl_out_fail(c->out, -errno, "mmap of the %zu MiB source failed",
                           (e.nchunks * e.len) >> 20);
    e.source = source;
    struct slot slots[MAX_THREADS];
    for (int i = 0; i < n; i++)
        slots[i] = (struct slot){.e = &e, .rng = 0x9e3779b97f4a7c15ull * (uint64_t)(i + 1)};

    rc = timed_rounds(c, &e, slots, n, c->param[P_ROUNDS]);
    if (!rc) {
        size_t ring = (size_t)c->param[P_RING_KB] << 10;
        if (!ring)
            ring = (e.len / pl_page_size() + RING_SLACK_SAMPLES) * PL_SAMPLE_BYTES;
        rc = profile_round(c, &e, slots, n, ring);
    }

    uint64_t found = 0;
    for (int i = 0; i < n; i++) {
        found += slots[i].found;
        free(slots[i].pool);
    }
    volatile uint64_t sink = found; /* the searches' results stay observable */
    (void)sink;
    munmap(source, e.nchunks * e.len);
    return rc;
}

const struct pl_workload pl_wl_ebizzy = {
    "ebizzy", "threads allocate, copy into, search and free short-lived buffers: a fault storm",
    params,   NPARAMS,
    run,      NULL,
};
