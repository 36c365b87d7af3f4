#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pl_counters.h"

#define READ_FORMAT                                                                                \
    (PERF_FORMAT_GROUP | PERF_FORMAT_ID | PERF_FORMAT_TOTAL_TIME_ENABLED |                         \
     PERF_FORMAT_TOTAL_TIME_RUNNING)

static int open_one(uint32_t type, uint64_t config, pid_t pid, int group_fd, unsigned flags,
                    int exclude_kernel)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = type;
    a.config = config;
    a.read_format = READ_FORMAT;
    a.disabled = group_fd == -1; /* members follow their leader */
    a.inherit = !!(flags & PL_INHERIT);
    a.enable_on_exec = group_fd == -1 && (flags & PL_ENABLE_ON_EXEC);
    a.exclude_kernel = exclude_kernel;
    a.exclude_hv = exclude_kernel;
    int fd = (int)syscall(SYS_perf_event_open, &a, pid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
    return fd < 0 ? -errno : fd;
}

int pl_group_open(struct pl_group *g, const uint32_t *types, const uint64_t *configs, int n,
                  pid_t pid, unsigned flags)
{
    if (n < 1 || n > PL_MAX_EVENTS || pid < 0)
        return -EINVAL;
    memset(g, 0, sizeof *g);
    g->n = n;
    g->flags = flags;
    g->leader = -1;
    memcpy(g->type, types, (size_t)n * sizeof *types);
    memcpy(g->config, configs, (size_t)n * sizeof *configs);
    int opened = 0;
    for (int i = 0; i < n; i++) {
        int group_fd = g->leader < 0 ? -1 : g->fd[g->leader];
        int excl = !!(flags & PL_EXCLUDE_KERNEL);
        int fd = open_one(types[i], configs[i], pid, group_fd, flags, excl);
        /* perf_event_paranoid >= 2 without CAP_PERFMON: only user-space counting is allowed. */
        if ((fd == -EACCES || fd == -EPERM) && !excl) {
            int retry = open_one(types[i], configs[i], pid, group_fd, flags, 1);
            if (retry >= 0) {
                fd = retry;
                g->kernel_excluded[i] = 1;
            }
        }
        g->fd[i] = fd < 0 ? -1 : fd;
        g->err[i] = fd < 0 ? -fd : 0;
        g->page[i] = NULL;
        if (fd < 0)
            continue;
        if (ioctl(fd, PERF_EVENT_IOC_ID, &g->id[i]) < 0) {
            g->err[i] = errno;
            close(fd);
            g->fd[i] = -1;
            continue;
        }
        if (flags & PL_USE_RDPMC) {
            void *p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
            g->page[i] = p == MAP_FAILED ? NULL : p;
        }
        if (g->leader < 0)
            g->leader = i;
        opened++;
    }
    return opened;
}

int pl_group_open_like(struct pl_group *g, const struct pl_group *src, pid_t pid)
{
    /* copies first: g and src may be the same storage only by mistake, never by design */
    uint32_t types[PL_MAX_EVENTS];
    uint64_t configs[PL_MAX_EVENTS];
    int n = src->n;
    memcpy(types, src->type, sizeof types);
    memcpy(configs, src->config, sizeof configs);
    return pl_group_open(g, types, configs, n, pid, src->flags & ~PL_ENABLE_ON_EXEC);
}

static int group_ioctl(const struct pl_group *g, unsigned long request)
{
    if (g->leader < 0)
        return 0;
    return ioctl(g->fd[g->leader], request, PERF_IOC_FLAG_GROUP) < 0 ? -errno : 0;
}

int pl_group_enable(const struct pl_group *g)
{
    int rc = group_ioctl(g, PERF_EVENT_IOC_RESET);
    return rc ? rc : group_ioctl(g, PERF_EVENT_IOC_ENABLE);
}

int pl_group_disable(const struct pl_group *g)
{
    return group_ioctl(g, PERF_EVENT_IOC_DISABLE);
}

#if defined(__x86_64__) || defined(__i386__)
static uint64_t rdpmc(uint32_t counter)
{
    uint32_t lo, hi;
    __asm__ volatile("rdpmc" : "=a"(lo), "=d"(hi) : "c"(counter));
    return lo | ((uint64_t)hi << 32);
}

static uint64_t rdtsc(void)
{
    uint32_t lo, hi;
    __asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
    return lo | ((uint64_t)hi << 32);
}

/* The self-monitoring protocol documented in linux/perf_event.h: retry while the kernel updates
 * the page (lock changes), extend enabled/running by the time since the last update. */
static int read_page(const struct perf_event_mmap_page *pc, uint64_t *value, uint64_t *enabled,
                     uint64_t *running)
{
    uint32_t seq, idx;
    uint64_t count, en, run, cyc = 0, offset = 0;
    uint32_t mult = 0;
    uint16_t shift = 0;
    do {
        seq = pc->lock;
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
        en = pc->time_enabled;
        run = pc->time_running;
        if (pc->cap_user_time && en != run) {
            cyc = rdtsc();
            offset = pc->time_offset;
            mult = pc->time_mult;
            shift = pc->time_shift;
        }
        idx = pc->index;
        count = pc->offset;
        if (!(pc->cap_user_rdpmc && idx))
            return -1; /* not on a counter right now: the caller falls back to read(2) */
        uint64_t pmc = rdpmc(idx - 1);
        unsigned width = pc->pmc_width;
        pmc <<= 64 - width; /* sign-extend the counter's width */
        count += (uint64_t)((int64_t)pmc >> (64 - width));
        __atomic_thread_fence(__ATOMIC_SEQ_CST);
    } while (pc->lock != seq);
    if (mult) {
        uint64_t quot = cyc >> shift, rem = cyc & (((uint64_t)1 << shift) - 1);
        uint64_t delta = offset + quot * mult + ((rem * mult) >> shift);
        en += delta;
        run += delta;
    }
    *value = count;
    *enabled = en;
    *running = run;
    return 0;
}

static int read_rdpmc(const struct pl_group *g, struct pl_counts *c)
{
    for (int i = 0; i < g->n; i++) {
        if (g->fd[i] < 0)
            continue;
        if (!g->page[i])
            return -1;
        uint64_t en, run;
        if (read_page(g->page[i], &c->value[i], &en, &run))
            return -1;
        if (i == g->leader) {
            c->time_enabled = en;
            c->time_running = run;
        }
    }
    c->via_rdpmc = 1;
    return 0;
}
#else
static int read_rdpmc(const struct pl_group *g, struct pl_counts *c)
{
    (void)g;
    (void)c;
    return -1;
}
#endif

int pl_group_read(const struct pl_group *g, struct pl_counts *c)
{
    memset(c, 0, sizeof *c);
    if (g->leader < 0)
        return 0;
    if (read_rdpmc(g, c) == 0)
        return 0;
    memset(c, 0, sizeof *c);
    /* nr, time_enabled, time_running, then {value, id} per opened event */
    uint64_t buf[3 + 2 * PL_MAX_EVENTS];
    ssize_t got = read(g->fd[g->leader], buf, sizeof buf);
    if (got < 0)
        return -errno;
    if (got < (ssize_t)(3 * sizeof(uint64_t)))
        return -EIO;
    uint64_t nr = buf[0];
    if (nr > PL_MAX_EVENTS || (size_t)got < (3 + 2 * nr) * sizeof(uint64_t))
        return -EIO;
    c->time_enabled = buf[1];
    c->time_running = buf[2];
    for (uint64_t k = 0; k < nr; k++)
        for (int i = 0; i < g->n; i++)
            if (g->fd[i] >= 0 && g->id[i] == buf[4 + 2 * k])
                c->value[i] = buf[3 + 2 * k];
    return 0;
}

void pl_group_close(struct pl_group *g)
{
    long page = sysconf(_SC_PAGESIZE);
    /* members first, the leader last, so the group is torn down in one piece */
    for (int i = g->n - 1; i >= 0; i--) {
        if (g->page[i])
            munmap(g->page[i], (size_t)page);
        g->page[i] = NULL;
        if (g->fd[i] >= 0 && i != g->leader)
            close(g->fd[i]);
        if (i != g->leader)
            g->fd[i] = -1;
    }
    if (g->leader >= 0) {
        close(g->fd[g->leader]);
        g->fd[g->leader] = -1;
    }
    g->leader = -1;
}

int64_t pl_group_read_loop(const struct pl_group *g, int64_t n)
{
    struct pl_counts c;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++) {
        int rc = pl_group_read(g, &c);
        if (rc)
            return rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}

int64_t pl_group_syscall_loop(const struct pl_group *g, int64_t n)
{
    uint64_t buf[3 + 2 * PL_MAX_EVENTS];
    struct timespec t0, t1;
    if (g->leader < 0)
        return -EBADF;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++)
        if (read(g->fd[g->leader], buf, sizeof buf) < 0)
            return -errno;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}
