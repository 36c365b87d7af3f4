#include <errno.h>
#include <linux/perf_event.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "pl_counters.h"
#include "pl_perf_sys.h"

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
    return pl_perf_sys()->open(&a, pid, -1, group_fd, PERF_FLAG_FD_CLOEXEC);
}

/* The opened event leading the perf group that event i joins, or -1 if none is open yet. */
static int leader_for(const struct pl_group *g, int i)
{
    for (int j = 0; j < i; j++)
        if (g->fd[j] >= 0 && g->group[j] == g->group[i])
            return g->leader[j];
    return -1;
}

int pl_group_open(struct pl_group *g, const uint32_t *types, const uint64_t *configs,
                  const int *groups, int n, pid_t pid, unsigned flags)
{
    if (n < 1 || n > PL_MAX_EVENTS || pid < 0)
        return -EINVAL;
    const struct pl_perf_sys *sys = pl_perf_sys();
    memset(g, 0, sizeof *g);
    g->n = n;
    g->flags = flags;
    memcpy(g->type, types, (size_t)n * sizeof *types);
    memcpy(g->config, configs, (size_t)n * sizeof *configs);
    memcpy(g->group, groups, (size_t)n * sizeof *groups);
    int opened = 0;
    for (int i = 0; i < n; i++) {
        int lead = leader_for(g, i);
        int group_fd = lead < 0 ? -1 : g->fd[lead];
        int excl = !!(flags & PL_EXCLUDE_KERNEL);
        int fd = open_one(types[i], configs[i], pid, group_fd, flags, excl);
        /* perf_event_paranoid >= 2 without CAP_PERFMON: only user-space counting is allowed. */
        if ((fd == -EACCES || fd == -EPERM) && !excl) {
            int retry = open_one(types[i], configs[i], pid, group_fd, flags, 1);
            if (retry >= 0)
                g->kernel_excluded[i] = 1;
            fd = retry; /* failing, its errno is the real one (e.g. ENOENT: no extended type) */
        }
        g->fd[i] = fd < 0 ? -1 : fd;
        g->err[i] = fd < 0 ? -fd : 0;
        g->leader[i] = -1;
        if (fd < 0)
            continue;
        int rc = sys->ioctl(fd, PERF_EVENT_IOC_ID, (unsigned long)&g->id[i]);
        if (rc < 0) {
            g->err[i] = -rc;
            sys->close(fd);
            g->fd[i] = -1;
            continue;
        }
        if (flags & PL_USE_RDPMC)
            g->page[i] = sys->mmap(fd, (size_t)sysconf(_SC_PAGESIZE), PROT_READ);
        g->leader[i] = lead < 0 ? i : lead;
        opened++;
    }
    return opened;
}

static int is_leader(const struct pl_group *g, int i)
{
    return g->fd[i] >= 0 && g->leader[i] == i;
}

static int group_ioctl(const struct pl_group *g, unsigned long request)
{
    const struct pl_perf_sys *sys = pl_perf_sys();
    for (int i = 0; i < g->n; i++) {
        if (!is_leader(g, i))
            continue;
        int rc = sys->ioctl(g->fd[i], request, PERF_IOC_FLAG_GROUP);
        if (rc < 0)
            return rc;
    }
    return 0;
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

/* The events of the group led by lead, from user space; -1 if any of them is not on a counter
 * right now (a software event never is), and then the caller reads the group with read(2). */
static int read_rdpmc(const struct pl_group *g, int lead, struct pl_counts *c)
{
    for (int i = 0; i < g->n; i++) {
        if (g->fd[i] < 0 || g->leader[i] != lead)
            continue;
        if (!g->page[i] ||
            read_page(g->page[i], &c->value[i], &c->time_enabled[i], &c->time_running[i]))
            return -1;
    }
    return 0;
}
#else
static int read_rdpmc(const struct pl_group *g, int lead, struct pl_counts *c)
{
    (void)g;
    (void)lead;
    (void)c;
    return -1;
}
#endif

/* nr, time_enabled, time_running, then {value, id} per event of the group */
#define GROUP_WORDS (3 + 2 * PL_MAX_EVENTS)

static int read_group(const struct pl_group *g, int lead, struct pl_counts *c)
{
    uint64_t buf[GROUP_WORDS];
    ssize_t got = pl_perf_sys()->read(g->fd[lead], buf, sizeof buf);
    if (got < 0)
        return (int)got;
    if (got < (ssize_t)(3 * sizeof(uint64_t)))
        return -EIO;
    uint64_t nr = buf[0];
    if (nr > PL_MAX_EVENTS || (size_t)got < (3 + 2 * nr) * sizeof(uint64_t))
        return -EIO;
    for (int i = 0; i < g->n; i++) {
        if (g->fd[i] < 0 || g->leader[i] != lead)
            continue;
        c->time_enabled[i] = buf[1];
        c->time_running[i] = buf[2];
        for (uint64_t k = 0; k < nr; k++)
            if (g->id[i] == buf[4 + 2 * k])
                c->value[i] = buf[3 + 2 * k];
    }
    return 0;
}

int pl_group_read(const struct pl_group *g, struct pl_counts *c)
{
    memset(c, 0, sizeof *c);
    int syscalls = 0, groups = 0;
    for (int i = 0; i < g->n; i++) {
        if (!is_leader(g, i))
            continue;
        groups++;
        if (read_rdpmc(g, i, c) == 0)
            continue;
        syscalls++;
        int rc = read_group(g, i, c);
        if (rc)
            return rc;
    }
    c->via_rdpmc = groups > 0 && syscalls == 0;
    return 0;
}

void pl_group_close(struct pl_group *g)
{
    const struct pl_perf_sys *sys = pl_perf_sys();
    long page = sysconf(_SC_PAGESIZE);
    /* members before their leaders, so each group is torn down in one piece */
    for (int pass = 0; pass < 2; pass++) {
        for (int i = g->n - 1; i >= 0; i--) {
            if (g->fd[i] < 0 || is_leader(g, i) != pass)
                continue;
            if (g->page[i])
                sys->munmap(g->page[i], (size_t)page);
            g->page[i] = NULL;
            sys->close(g->fd[i]);
            g->fd[i] = -1;
            g->leader[i] = -1;
        }
    }
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
    uint64_t buf[GROUP_WORDS];
    int lead = -1;
    for (int i = 0; i < g->n && lead < 0; i++)
        if (is_leader(g, i))
            lead = i;
    if (lead < 0)
        return -EBADF;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int64_t i = 0; i < n; i++)
        if (read(g->fd[lead], buf, sizeof buf) < 0)
            return -errno;
    clock_gettime(CLOCK_MONOTONIC, &t1);
    return (int64_t)(t1.tv_sec - t0.tv_sec) * 1000000000 + (t1.tv_nsec - t0.tv_nsec);
}
