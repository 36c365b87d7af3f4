#include <dlfcn.h>
#include <errno.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pl_perf_sys.h"
#include "pl_sampling.h"

/* The body of a PERF_RECORD_SAMPLE with IP|TID|ADDR, in the order the kernel writes it. */
struct sample {
    uint64_t ip;
    uint32_t pid, tid;
    uint64_t addr;
};

/* The body of a PERF_RECORD_LOST (sample_id_all is off, so nothing follows). */
struct lost {
    uint64_t id, lost;
};

_Static_assert(sizeof(struct perf_event_header) + sizeof(struct sample) == PL_SAMPLE_BYTES,
               "PL_SAMPLE_BYTES must match the sample record");

static int open_event(int exclude_kernel, size_t data_size)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof a);
    a.size = sizeof a;
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_PAGE_FAULTS;
    a.sample_period = 1; /* every fault */
    a.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_ADDR;
    a.disabled = 1;
    a.exclude_kernel = exclude_kernel;
    a.exclude_hv = exclude_kernel;
    /* nobody polls: wake up only when the ring is full, to keep the per-fault cost down */
    a.watermark = 1;
    a.wakeup_watermark = (uint32_t)data_size;
    return pl_perf_sys()->open(&a, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
}

int pl_sampler_open(struct pl_sampler *s, size_t ring_bytes)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->page_size = sysconf(_SC_PAGESIZE);
    if (s->page_size <= 0 || ring_bytes > PL_RING_MAX) {
        s->failed = "perf_event_open";
        return -EINVAL;
    }
    size_t data = (size_t)s->page_size; /* the kernel wants 2^n data pages */
    while (data < ring_bytes)
        data <<= 1;
    int fd = open_event(0, data);
    /* perf_event_paranoid >= 2 without CAP_PERFMON: only user-space faults may be sampled */
    if (fd == -EACCES || fd == -EPERM) {
        int retry = open_event(1, data);
        if (retry >= 0) {
            fd = retry;
            s->kernel_excluded = 1;
        }
    }
    if (fd < 0) {
        s->failed = "perf_event_open";
        return fd;
    }
    /* writable, so the kernel honours data_tail and never overwrites unread records */
    void *ring = pl_perf_sys()->mmap(fd, (size_t)s->page_size + data, PROT_READ | PROT_WRITE);
    if (!ring) {
        int err = -errno;
        pl_perf_sys()->close(fd);
        s->failed = "mmap";
        return err;
    }
    /* the first write to the control page faults: take that fault now, before sampling */
    __atomic_store_n(&((struct perf_event_mmap_page *)ring)->data_tail, 0, __ATOMIC_RELEASE);
    s->fd = fd;
    s->ring = ring;
    s->data_size = data;
    s->tid = (int)syscall(SYS_gettid);
    return 0;
}

int pl_sampler_enable(struct pl_sampler *s)
{
    return pl_perf_sys()->ioctl(s->fd, PERF_EVENT_IOC_ENABLE, 0);
}

int pl_sampler_disable(struct pl_sampler *s)
{
    return pl_perf_sys()->ioctl(s->fd, PERF_EVENT_IOC_DISABLE, 0);
}

static void add_site(struct pl_fault_profile *p, uint64_t ip, uint64_t n)
{
    for (int i = 0; i < p->nsites; i++) {
        if (p->site[i].ip == ip) {
            p->site[i].samples += n;
            return;
        }
    }
    if (p->nsites == PL_FAULT_SITES) {
        p->unsited += n;
        return;
    }
    p->site[p->nsites++] = (struct pl_fault_site){ip, n};
}

static void add_page(struct pl_fault_profile *p, uint64_t key) /* key = page number + 1 */
{
    const uint64_t mask = PL_FAULT_PAGES - 1;
    uint64_t i = (key * 0x9e3779b97f4a7c15ull) >> 32 & mask; /* Fibonacci hashing */
    for (; p->page[i]; i = (i + 1) & mask)
        if (p->page[i] == key)
            return;
    if (p->pages >= PL_FAULT_PAGES / 4 * 3) { /* keep probes short: stop at 3/4 full */
        p->pages_full = 1;
        return;
    }
    p->page[i] = key;
    p->pages++;
}

/* Copy len bytes starting at ring position pos, which may wrap past the end of the data. */
static void ring_read(void *dst, const char *data, size_t size, uint64_t pos, size_t len)
{
    size_t off = (size_t)(pos & (size - 1));
    size_t first = size - off < len ? size - off : len;
    memcpy(dst, data + off, first);
    memcpy((char *)dst + first, data, len - first);
}

int pl_sampler_drain(struct pl_sampler *s, struct pl_fault_profile *p)
{
    struct perf_event_mmap_page *meta = s->ring;
    /* data_offset/data_size are filled in by kernels since 4.1; before, data follows the page */
    const char *data =
        (const char *)s->ring + (meta->data_offset ? meta->data_offset : (uint64_t)s->page_size);
    size_t size = meta->data_size ? meta->data_size : s->data_size;
    /* acquire: the records the kernel wrote before advancing data_head are visible after it */
    uint64_t head = __atomic_load_n(&meta->data_head, __ATOMIC_ACQUIRE);
    uint64_t tail = meta->data_tail;
    int rc = 0;
    while (tail != head) {
        struct perf_event_header h;
        if (head - tail < sizeof h) {
            rc = -EIO;
            break;
        }
        ring_read(&h, data, size, tail, sizeof h);
        if (h.size < sizeof h || h.size > head - tail) {
            rc = -EIO;
            break;
        }
        if (h.type == PERF_RECORD_SAMPLE && h.size >= sizeof h + sizeof(struct sample)) {
            struct sample smp;
            ring_read(&smp, data, size, tail + sizeof h, sizeof smp);
            p->samples++;
            p->foreign += smp.tid != (uint32_t)s->tid;
            p->kernel += smp.ip >> 63; /* kernel text lives in the upper half */
            add_site(p, smp.ip, 1);
            add_page(p, smp.addr / (uint64_t)s->page_size + 1);
        } else if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + sizeof(struct lost)) {
            struct lost l;
            ring_read(&l, data, size, tail + sizeof h, sizeof l);
            p->lost += l.lost;
        } /* other records (throttling, ...) carry no fault */
        tail += h.size;
    }
    /* release: our reads of the records are done before the kernel may reuse their space */
    __atomic_store_n(&meta->data_tail, rc ? head : tail, __ATOMIC_RELEASE);
    return rc;
}

int pl_sampler_finish(struct pl_sampler *s, struct pl_fault_profile *p)
{
    int rc = pl_sampler_disable(s);
    int drained = pl_sampler_drain(s, p);
    uint64_t count = 0;
    ssize_t got = read(s->fd, &count, sizeof count); /* read_format 0: just the count */
    if (got != (ssize_t)sizeof count && !rc)
        rc = got < 0 ? -errno : -EIO;
    p->counted += count;
    p->kernel_excluded |= s->kernel_excluded;
    pl_sampler_close(s);
    return rc ? rc : drained;
}

void pl_sampler_close(struct pl_sampler *s)
{
    if (s->ring)
        pl_perf_sys()->munmap(s->ring, (size_t)s->page_size + s->data_size);
    if (s->fd >= 0)
        pl_perf_sys()->close(s->fd);
    s->ring = NULL;
    s->fd = -1;
}

void pl_fault_profile_merge(struct pl_fault_profile *dst, const struct pl_fault_profile *src)
{
    dst->samples += src->samples;
    dst->lost += src->lost;
    dst->counted += src->counted;
    dst->unsited += src->unsited;
    dst->foreign += src->foreign;
    dst->kernel += src->kernel;
    dst->pages_full |= src->pages_full;
    dst->kernel_excluded |= src->kernel_excluded;
    for (int i = 0; i < src->nsites; i++)
        add_site(dst, src->site[i].ip, src->site[i].samples);
    for (int i = 0; i < PL_FAULT_PAGES; i++)
        if (src->page[i])
            add_page(dst, src->page[i]);
}

static int by_samples(const void *a, const void *b)
{
    const struct pl_fault_site *x = a, *y = b;
    return (x->samples < y->samples) - (x->samples > y->samples);
}

void pl_fault_profile_sort(struct pl_fault_profile *p)
{
    qsort(p->site, (size_t)p->nsites, sizeof p->site[0], by_samples);
}

int pl_fault_site_name(uint64_t ip, char *where, size_t where_cap, char *module, size_t module_cap)
{
    Dl_info info;
    if (ip >> 63) {
        snprintf(where, where_cap, "[kernel]");
        snprintf(module, module_cap, "[kernel]");
        return 0;
    }
    if (dladdr((void *)(uintptr_t)ip, &info) == 0 || !info.dli_fname) {
        snprintf(where, where_cap, "0x%llx", (unsigned long long)ip);
        snprintf(module, module_cap, "?");
        return 0;
    }
    const char *slash = strrchr(info.dli_fname, '/');
    snprintf(module, module_cap, "%s", slash ? slash + 1 : info.dli_fname);
    /* dladdr only knows exported symbols whose extent holds ip; libc's internal memcpy
     * variants, say, are not among them: those get the module and offset */
    if (info.dli_sname && info.dli_saddr) {
        snprintf(where, where_cap, "%s+0x%llx", info.dli_sname,
                 (unsigned long long)(ip - (uintptr_t)info.dli_saddr));
        return 1;
    }
    snprintf(where, where_cap, "%s+0x%llx", module,
             (unsigned long long)(ip - (uintptr_t)info.dli_fbase));
    return 0;
}
