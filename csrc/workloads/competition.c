/* competition: what happens to a victim's memory when something else wants it.
 *
 * Deterministic part: the victim writes a file of its own (on a disk-backed filesystem), maps
 * it, touches it, evicts its clean pages on purpose (MADV_PAGEOUT, or munmap +
 * POSIX_FADV_DONTNEED) and reads it again: the evicted pages come back as major faults, read
 * from disk. mincore shows residency at every step (the victim created the file, so mincore
 * reports the page cache truthfully). The same MADV_PAGEOUT on anonymous memory is measured too:
 * without swap there is nowhere to put those pages, so they stay.
 *
 * Competition part: the victim cycles over its file-backed and anonymous memory, first alone,
 * then while a forked competitor works on a bounded amount of anonymous memory of its own: it
 * touches all of it and then writes one byte per page in order (sequential), or it is the course
 * lab's competitor (random: see random_steps).
 *
 * Facts Python needs besides the numbers (how the file was made, which eviction path ran, the
 * errno of a MADV_PAGEOUT that failed) are recorded as typed facts. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "harness/pl_compat.h"
#include "pl_workloads.h"

#define WRITE_CHUNK PL_COMPETITION_WRITE_CHUNK /* few syscalls, a small buffer */
#define SLICES PL_COMPETITION_SLICES
#define STOP_CHECK_PAGES 4096 /* the competitor looks for "stop" every 16 MiB it touches */

enum { P_SIZE_MB, P_COMPETITOR_MB, P_SECONDS, P_EVICT, P_READAHEAD, P_COMPETITOR, NPARAMS };
enum { EVICT_PAGEOUT, EVICT_FADVISE };
enum { RA_NORMAL, RA_RANDOM };
enum { COMPETE_SEQUENTIAL, COMPETE_RANDOM };

static const struct pl_param params[NPARAMS] = {
    {"size_mb", 32, 1, 1 << 16, "MiB", NULL, "the victim's file, and its anonymous region, each"},
    {"competitor_mb", 64, 1, 1 << 16, "MiB", NULL,
     "anonymous memory the competitor process allocates and cycles over"},
    {"seconds", 1, 1, 60, "s", NULL, "length of each competition phase (alone, then contested)"},
    {"evict", EVICT_PAGEOUT, 0, 1, "", "pageout,fadvise",
     "evict the file with MADV_PAGEOUT, or with munmap + POSIX_FADV_DONTNEED + mmap"},
    {"readahead", RA_NORMAL, 0, 1, "", "normal,random",
     "MADV_NORMAL (readahead) or MADV_RANDOM (one page per fault) on the file mapping"},
    {"competitor", COMPETE_SEQUENTIAL, 0, 1, "", "sequential,random",
     "the competitor touches its memory, then writes every page in order; or the course lab's: "
     "MAP_NORESERVE, a random page read each step and written every 8th step"},
};

struct victim {
    int fd;
    size_t len, page, pages;
    int readahead;
    char *file;         /* MAP_SHARED, read-only mapping of fd; NULL when unmapped */
    unsigned char *vec; /* mincore's answer, one byte per page */
};

static double seconds_since(const struct timespec *t0)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)(t.tv_sec - t0->tv_sec) + (double)(t.tv_nsec - t0->tv_nsec) / 1e9;
}

/* The victim's file: nameless, in the working directory the Python side chose for it (on a
 * disk-backed filesystem where there is one; pylib/pagelab/native/scratch.py). */
static int open_scratch(struct pl_ctx *c, struct victim *v)
{
    int named;
    v->fd = pl_scratch_file("competition", &named);
    if (v->fd < 0)
        return pl_out_fail(c->out, -errno,
                           "cannot create the victim's file in the scratch directory");
    pl_out_text(c->out, "file", "how", "%s", named ? "unlinked" : "O_TMPFILE");
    return 0;
}

/* Written with write(2) and flushed with fdatasync: the pages are in the page cache and clean,
 * so evicting them needs no writeback and re-reading them must come from disk. */
static int fill_file(struct pl_ctx *c, struct victim *v)
{
    char *buf = malloc(WRITE_CHUNK);
    if (!buf)
        return pl_out_fail(c->out, -ENOMEM, "no memory for the write buffer");
    for (size_t i = 0; i < WRITE_CHUNK; i++)
        buf[i] = (char)(i * 131 + 7); /* not zeros: nothing may treat the file as sparse */
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    int rc = 0;
    for (size_t done = 0; done < v->len && !rc;) {
        size_t want = v->len - done < WRITE_CHUNK ? v->len - done : WRITE_CHUNK;
        ssize_t n = write(v->fd, buf, want);
        if (n < 0 && errno != EINTR)
            rc = pl_out_fail(c->out, -errno, "writing the victim's file failed");
        else if (n > 0)
            done += (size_t)n;
    }
    if (!rc && fdatasync(v->fd) != 0)
        rc = pl_out_fail(c->out, -errno, "fdatasync of the victim's file failed");
    PL_REGION_END(&r);
    free(buf);
    if (!rc)
        pl_out_region(c->out, "file: write + fdatasync", &r);
    struct stat st;
    if (!rc && fstat(v->fd, &st) == 0)
        pl_out_text(c->out, "file", "dev", "%u:%u", major(st.st_dev), minor(st.st_dev));
    return rc;
}

static int map_file(struct pl_ctx *c, struct victim *v)
{
    void *p = mmap(NULL, v->len, PROT_READ, MAP_SHARED, v->fd, 0);
    if (p == MAP_FAILED)
        return pl_out_fail(c->out, -errno, "mmap of the victim's file failed");
    if (madvise(p, v->len, v->readahead == RA_RANDOM ? MADV_RANDOM : MADV_NORMAL) != 0) {
        int e = errno;
        munmap(p, v->len);
        return pl_out_fail(c->out, -e, "madvise(MADV_RANDOM/NORMAL) on the file failed");
    }
    v->file = p;
    return 0;
}

static char *map_anon(size_t len, int flags)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | flags, -1, 0);
    if (p == MAP_FAILED)
        return NULL;
    /* 4 KiB pages, so residency and faults count the same unit as the file's; EINVAL means the
     * kernel has no THP at all, which is just as good */
    if (madvise(p, len, MADV_NOHUGEPAGE) != 0 && errno != EINVAL) {
        munmap(p, len);
        return NULL;
    }
    return p;
}

/* Resident pages of [p, p+len) according to mincore, recorded as a value. For a file the
 * caller could not write, mincore would claim every page resident; this file is our own. */
static int residency(struct pl_ctx *c, struct victim *v, char *p, const char *label,
                     const char *stage)
{
    if (mincore(p, v->len, v->vec) != 0)
        return pl_out_fail(c->out, -errno, "mincore failed");
    size_t n = 0;
    for (size_t i = 0; i < v->pages; i++)
        n += v->vec[i] & 1;
    pl_out_value(c->out, label, stage, (double)n, "pages", "rusage");
    return 0;
}

static void read_pages(const char *p, size_t len, size_t page)
{
    volatile char sink = 0; /* keeps every load */
    for (size_t off = 0; off < len; off += page)
        sink += ((const volatile char *)p)[off];
}

/* A plain store, no load first: a load would map the shared zero page and the store would then
 * take a second (copy-on-write) fault on every fresh page. */
static void write_pages(char *p, size_t len, size_t page)
{
    for (size_t off = 0; off < len; off += page)
        ((volatile char *)p)[off] = (char)off;
}

static void measured_read(struct pl_ctx *c, const char *label, const char *p, size_t len,
                          size_t page)
{
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    read_pages(p, len, page);
    PL_REGION_END(&r);
    pl_out_region(c->out, label, &r);
}

/* Evict the file's clean pages: MADV_PAGEOUT where the kernel has it, else (or when asked)
 * unmap, drop the page cache with POSIX_FADV_DONTNEED and map again. */
static int evict_file(struct pl_ctx *c, struct victim *v, int how)
{
    struct pl_region r = {.group = c->group};
    int rc = 0;
    const char *path = "MADV_PAGEOUT";
    PL_REGION_BEGIN(&r);
    if (how == EVICT_PAGEOUT && madvise(v->file, v->len, MADV_PAGEOUT) != 0) {
        pl_out_number(c->out, "eviction", "pageout_errno", (uint64_t)errno);
        how = EVICT_FADVISE;
    }
    if (how == EVICT_FADVISE) {
        path = "fadvise";
        if (munmap(v->file, v->len) != 0)
            rc = pl_out_fail(c->out, -errno, "munmap of the victim's file failed");
        v->file = NULL;
        int e = rc ? 0 : posix_fadvise(v->fd, 0, (off_t)v->len, POSIX_FADV_DONTNEED);
        if (e)
            rc = pl_out_fail(c->out, -e, "posix_fadvise(POSIX_FADV_DONTNEED) failed");
        if (!rc)
            rc = map_file(c, v);
    }
    PL_REGION_END(&r);
    if (rc)
        return rc;
    pl_out_text(c->out, "eviction", "path", "%s", path);
    pl_out_region(c->out, "file: evict", &r);
    return 0;
}

static int file_part(struct pl_ctx *c, struct victim *v)
{
    static const char *const label = "file residency";
    int rc = map_file(c, v);
    if (!rc)
        rc = residency(c, v, v->file, label, "before touch");
    if (rc)
        return rc;
    measured_read(c, "file: first touch", v->file, v->len, v->page);
    rc = residency(c, v, v->file, label, "after touch");
    if (!rc)
        rc = evict_file(c, v, (int)c->param[P_EVICT]);
    if (!rc)
        rc = residency(c, v, v->file, label, "after eviction");
    if (rc)
        return rc;
    measured_read(c, "file: re-access", v->file, v->len, v->page);
    return residency(c, v, v->file, label, "after re-access");
}

/* MADV_PAGEOUT on anonymous memory: reclaim needs swap to write it to. Measured, not assumed. */
static int anon_part(struct pl_ctx *c, struct victim *v)
{
    static const char *const label = "anon residency";
    char *a = map_anon(v->len, 0);
    if (!a)
        return pl_out_fail(c->out, -errno, "mmap of %zu MiB anonymous memory failed", v->len >> 20);
    int rc = residency(c, v, a, label, "before touch");
    if (!rc) {
        struct pl_region r = {.group = c->group};
        PL_REGION_BEGIN(&r);
        write_pages(a, v->len, v->page);
        PL_REGION_END(&r);
        pl_out_region(c->out, "anon: first touch", &r);
        rc = residency(c, v, a, label, "after touch");
    }
    if (!rc) {
        struct pl_region r = {.group = c->group};
        PL_REGION_BEGIN(&r);
        int e = madvise(a, v->len, MADV_PAGEOUT) != 0 ? errno : 0;
        PL_REGION_END(&r);
        pl_out_number(c->out, "anon pageout", "errno", (uint64_t)e);
        pl_out_region(c->out, "anon: pageout", &r);
        rc = residency(c, v, a, label, "after pageout");
    }
    if (!rc) {
        measured_read(c, "anon: re-access", a, v->len, v->page);
        rc = residency(c, v, a, label, "after re-access");
    }
    munmap(a, v->len);
    return rc;
}

/* ---- the competitor: a forked child, in the worker's process group ------------------------- */

struct report {
    int err;                     /* errno of a failed allocation, 0 if fine */
    double alloc_s;              /* time to map its memory (and first-touch it, when sequential) */
    long passes, minflt, majflt; /* passes: sweeps over its pages (random: wraps of its step) */
};

static int read_full(int fd, void *buf, size_t len)
{
    for (size_t got = 0; got < len;) {
        ssize_t n = read(fd, (char *)buf + got, len - got);
        if (n == 0)
            return -EPIPE; /* the other side is gone */
        if (n < 0 && errno != EINTR)
            return -errno;
        if (n > 0)
            got += (size_t)n;
    }
    return 0;
}

static int stop_requested(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLIN};
    return poll(&p, 1, 0) != 0; /* a byte, EOF or an error all mean stop */
}

/* One byte written per page, in order, over and over until told to stop. */
static void sequential_passes(int cmd, struct report *r, char *p, size_t len, size_t page)
{
    for (int stop = 0; !stop; r->passes++) {
        for (size_t off = 0; off < len && !stop; off += page * STOP_CHECK_PAGES) {
            size_t n = len - off < page * STOP_CHECK_PAGES ? len - off : page * STOP_CHECK_PAGES;
            write_pages(p + off, n, page);
            stop = stop_requested(cmd);
        }
    }
}

/* The course lab's competitor ("Competing for Memory" in the write-up): its region is never
 * touched up front; each step picks a random page and reads a byte of it, and every 8th step
 * (counting steps, wrapping at the region's page count as the write-up's loop does) writes that
 * byte too. A page first read maps the shared zero page; its first write takes a page of its own.
 * Runs until told to stop; counts a pass each time the step counter wraps. */
static void random_steps(int cmd, struct report *r, char *p, size_t pages, size_t page)
{
    uint64_t x = 88172645463325252ULL; /* xorshift64: the same pages on every run */
    volatile char sink = 0;
    size_t i = 0;
    do {
        for (int n = 0; n < STOP_CHECK_PAGES; n++, i++) {
            if (i >= pages) {
                i = 0;
                r->passes++;
            }
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            volatile char *a = p + (x % pages) * page;
            sink += *a;
            if (i % 8 == 0)
                *a = 1;
        }
    } while (!stop_requested(cmd));
}

/* The child: waits for "go", maps len bytes and (sequential) touches them, reports, then works
 * on them until told to stop, and reports again. Never returns. */
static void competitor(int cmd, int rep, size_t len, size_t page, pid_t parent, int mode)
{
    struct report r = {0};
    char go;
    if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != parent || read(cmd, &go, 1) != 1 ||
        go != 'g')
        _exit(0); /* the parent is gone, or stopped us before the start */
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    char *p = map_anon(len, mode == COMPETE_RANDOM ? MAP_NORESERVE : 0);
    if (!p) {
        r.err = errno;
        _exit(write(rep, &r, sizeof r) == sizeof r ? 0 : 1);
    }
    if (mode == COMPETE_SEQUENTIAL)
        write_pages(p, len, page);
    r.alloc_s = seconds_since(&t0);
    if (write(rep, &r, sizeof r) != sizeof r)
        _exit(1);
    if (mode == COMPETE_RANDOM)
        random_steps(cmd, &r, p, len / page, page);
    else
        sequential_passes(cmd, &r, p, len, page);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    r.minflt = ru.ru_minflt;
    r.majflt = ru.ru_majflt;
    _exit(write(rep, &r, sizeof r) == sizeof r ? 0 : 1);
}

struct rival {
    pid_t pid;
    int cmd, rep; /* our ends: commands to it, reports from it */
};

static int start_competitor(struct pl_ctx *c, struct rival *k, size_t len, size_t page, int mode)
{
    int cmd[2], rep[2];
    if (pipe2(cmd, O_CLOEXEC) != 0)
        return pl_out_fail(c->out, -errno, "pipe failed");
    if (pipe2(rep, O_CLOEXEC) != 0) {
        int e = errno;
        close(cmd[0]), close(cmd[1]);
        return pl_out_fail(c->out, -e, "pipe failed");
    }
    pid_t parent = getpid();
    pid_t pid = fork(); /* same process group as the worker: killpg on timeout reaches it */
    if (pid == 0) {
        close(cmd[1]), close(rep[0]);
        competitor(cmd[0], rep[1], len, page, parent, mode);
    }
    int e = errno;
    close(cmd[0]), close(rep[1]);
    if (pid < 0) {
        close(cmd[1]), close(rep[0]);
        return pl_out_fail(c->out, -e, "fork of the competitor failed");
    }
    *k = (struct rival){pid, cmd[1], rep[0]};
    return 0;
}

/* Stop and reap the competitor; kill it if it does not answer. A dead competitor makes the
 * write fail with EPIPE (workers run under Python, which ignores SIGPIPE). */
static int stop_competitor(struct rival *k, struct report *final)
{
    int rc = write(k->cmd, "s", 1) == 1 ? 0 : -errno;
    if (!rc && final)
        rc = read_full(k->rep, final, sizeof *final);
    if (rc)
        kill(k->pid, SIGKILL);
    close(k->cmd), close(k->rep);
    while (waitpid(k->pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return rc;
}

/* MemAvailable in whole MiB, -1 if /proc/meminfo cannot say */
static long mem_available_mib(void)
{
    FILE *f = fopen("/proc/meminfo", "re");
    if (!f)
        return -1;
    char line[256];
    long kb = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "MemAvailable: %ld kB", &kb) == 1)
            break;
    fclose(f);
    return kb < 0 ? -1 : kb / 1024;
}

/* Counters for the competition phases, on this thread only: the worker's group is inherited by
 * children, so reading it would add the competitor's faults to the victim's. Same events, same
 * order, so Python's event list still describes it; NULL if nothing opened in the first place. */
static int private_group(struct pl_ctx *c, struct pl_group *g, const struct pl_group **out)
{
    const struct pl_group *src = c->group;
    *out = NULL;
    if (!src)
        return 0;
    int rc = pl_group_open(g, src->type, src->config, src->group, src->n, 0,
                           src->flags & ~(PL_INHERIT | PL_ENABLE_ON_EXEC));
    if (rc < 0)
        return pl_out_fail(c->out, rc, "opening the victim's own counters failed");
    for (int i = 0; i < src->n; i++) {
        if ((g->fd[i] >= 0) != (src->fd[i] >= 0) ||
            g->kernel_excluded[i] != src->kernel_excluded[i]) {
            pl_group_close(g);
            return pl_out_fail(c->out, -EIO, "the victim's own counters differ from the worker's");
        }
    }
    rc = pl_group_enable(g);
    if (rc) {
        pl_group_close(g);
        return pl_out_fail(c->out, rc, "enabling the victim's own counters failed");
    }
    *out = g;
    return 0;
}

struct slice {
    long passes, minflt, majflt;
    double seconds;
};

/* One phase: the victim cycles over its file (reads) and anonymous memory (writes) for
 * `seconds`, recorded per time slice. */
static int phase(struct pl_ctx *c, const struct pl_group *g, struct victim *v, char *anon,
                 const char *label, int64_t seconds)
{
    struct slice s[SLICES];
    double slice_s = (double)seconds / SLICES;
    struct pl_region r = {.group = g};
    PL_REGION_BEGIN(&r);
    struct timespec t0;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    double start = 0;
    for (int i = 0; i < SLICES; i++) {
        struct rusage a, b;
        getrusage(RUSAGE_SELF, &a);
        long passes = 0;
        double now;
        do {
            read_pages(v->file, v->len, v->page);
            write_pages(anon, v->len, v->page);
            passes++;
            now = seconds_since(&t0);
        } while (now < slice_s * (i + 1));
        getrusage(RUSAGE_SELF, &b);
        s[i] = (struct slice){passes, b.ru_minflt - a.ru_minflt, b.ru_majflt - a.ru_majflt,
                              now - start};
        start = now;
    }
    PL_REGION_END(&r);
    pl_out_region(c->out, label, &r);
    long total = 0;
    for (int i = 0; i < SLICES; i++) {
        char name[PL_NAME_MAX];
        snprintf(name, sizeof name, "s%02d us_per_pass", i + 1);
        pl_out_value(c->out, label, name, s[i].seconds * 1e6 / (double)s[i].passes, "us", "clock");
        snprintf(name, sizeof name, "s%02d minflt", i + 1);
        pl_out_value(c->out, label, name, (double)s[i].minflt, "", "rusage");
        snprintf(name, sizeof name, "s%02d majflt", i + 1);
        pl_out_value(c->out, label, name, (double)s[i].majflt, "", "rusage");
        total += s[i].passes;
    }
    pl_out_value(c->out, label, "passes", (double)total, "", "clock");
    pl_out_value(c->out, label, "mem_available_mib", (double)mem_available_mib(), "MiB", "rusage");
    int rc = residency(c, v, v->file, label, "file resident");
    return rc ? rc : residency(c, v, anon, label, "anon resident");
}

static int competition_part(struct pl_ctx *c, struct victim *v)
{
    size_t rival_len = (size_t)c->param[P_COMPETITOR_MB] << 20;
    int64_t seconds = c->param[P_SECONDS];
    /* fork first, before the victim maps anything: then the victim's pages are never shared
     * copy-on-write with the child, and its writes take no COW faults that pressure did not
     * cause */
    struct rival k;
    int rc = start_competitor(c, &k, rival_len, v->page, (int)c->param[P_COMPETITOR]);
    if (rc)
        return rc;
    char *anon = map_anon(v->len, 0);
    if (!anon) {
        rc = pl_out_fail(c->out, -errno, "mmap of %zu MiB anonymous memory failed", v->len >> 20);
        stop_competitor(&k, NULL);
        return rc;
    }
    struct pl_group own;
    const struct pl_group *g = NULL;
    rc = map_file(c, v);
    if (!rc)
        rc = private_group(c, &own, &g);
    if (!rc) {
        /* warm-up, uncounted: every page resident and mapped before the first phase */
        read_pages(v->file, v->len, v->page);
        write_pages(anon, v->len, v->page);
        rc = phase(c, g, v, anon, "alone", seconds);
    }
    struct report ready = {0}, final = {0};
    if (!rc) {
        if (write(k.cmd, "g", 1) != 1 || read_full(k.rep, &ready, sizeof ready) != 0)
            rc = pl_out_fail(c->out, -EPIPE, "the competitor did not start");
        else if (ready.err)
            rc = pl_out_fail(c->out, -ready.err, "the competitor could not allocate %zu MiB",
                             rival_len >> 20);
    }
    if (!rc)
        rc = phase(c, g, v, anon, "with competitor", seconds);
    int stopped = stop_competitor(&k, rc ? NULL : &final);
    if (!rc && stopped)
        rc = pl_out_fail(c->out, stopped, "the competitor did not report back");
    if (!rc) {
        pl_out_value(c->out, "competitor", "alloc_s", ready.alloc_s, "s", "clock");
        pl_out_value(c->out, "competitor", "passes", (double) final.passes, "", "clock");
        pl_out_value(c->out, "competitor", "minflt", (double) final.minflt, "", "rusage");
        pl_out_value(c->out, "competitor", "majflt", (double) final.majflt, "", "rusage");
    }
    if (g)
        pl_group_close(&own);
    munmap(anon, v->len);
    return rc;
}

static int run(struct pl_ctx *c)
{
    size_t page = pl_page_size();
    struct victim v = {.fd = -1,
                       .len = (size_t)c->param[P_SIZE_MB] << 20,
                       .page = page,
                       .readahead = (int)c->param[P_READAHEAD]};
    v.pages = v.len / v.page;
    pl_out_number(c->out, "file", "page_size", (uint64_t)page);
    v.vec = malloc(v.pages);
    if (!v.vec)
        return pl_out_fail(c->out, -ENOMEM, "no memory for the mincore vector");
    int rc = open_scratch(c, &v);
    if (!rc)
        rc = fill_file(c, &v);
    if (!rc)
        rc = file_part(c, &v);
    if (v.file) {
        munmap(v.file, v.len);
        v.file = NULL;
    }
    if (!rc)
        rc = anon_part(c, &v);
    if (!rc)
        rc = competition_part(c, &v);
    if (v.file)
        munmap(v.file, v.len);
    if (v.fd >= 0)
        close(v.fd); /* the file has no name: closing it frees it */
    free(v.vec);
    return rc;
}

const struct pl_workload pl_wl_competition = {
    "competition",
    "a victim's file and anonymous pages: evicted on purpose, then contested by a competitor",
    params,
    NPARAMS,
    run,
    NULL,
};
