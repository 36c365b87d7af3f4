/* Page-fault sampling: which code locations take a thread's page faults, and on how many
 * distinct data pages. A software page-fault event with sample_period 1 writes one
 * PERF_SAMPLE_IP|TID|ADDR record per fault into an mmap'd ring buffer; draining the ring
 * aggregates the records by code address into a small profile.
 *
 * One sampler per thread: the kernel refuses to mmap an inherited per-task event (EINVAL) and to
 * redirect another task's event into a per-task ring (PERF_EVENT_IOC_SET_OUTPUT: EINVAL), so
 * each thread opens its own event and ring, drains it between pieces of work, and the profiles
 * are merged after the threads join. Nothing here is shared between threads. */
#ifndef PL_SAMPLING_H
#define PL_SAMPLING_H

#include <stddef.h>
#include <stdint.h>

#define PL_FAULT_SITES 64       /* code locations kept; a fault storm has a handful */
#define PL_FAULT_PAGES 8192     /* slots of the distinct-page set (a power of two), filled to 3/4 */
#define PL_SAMPLE_BYTES 32      /* one sample record: header, ip, pid/tid, addr */
#define PL_RING_MAX (64u << 20) /* larger rings would exceed any locked-memory limit */

struct pl_fault_site {
    uint64_t ip;
    uint64_t samples;
};

struct pl_fault_profile {
    uint64_t samples;    /* sample records read */
    uint64_t lost;       /* samples the kernel dropped on a full ring (PERF_RECORD_LOST) */
    uint64_t counted;    /* the event's own count; counted - samples were never delivered */
    uint64_t unsited;    /* samples at code locations beyond PL_FAULT_SITES */
    uint64_t foreign;    /* samples whose TID was not the sampler's thread: should be 0 */
    uint64_t kernel;     /* samples at kernel addresses (faults taken in kernel mode) */
    uint64_t pages;      /* distinct data pages that faulted */
    int pages_full;      /* the page set filled up: pages is a lower bound */
    int kernel_excluded; /* some sampler had to exclude the kernel (perf_event_paranoid) */
    int nsites;
    struct pl_fault_site site[PL_FAULT_SITES];
    uint64_t page[PL_FAULT_PAGES]; /* open-addressing set of page numbers + 1 (0 = empty) */
};

struct pl_sampler {
    int fd;
    int kernel_excluded; /* opened with exclude_kernel=1 after an EACCES/EPERM */
    int tid;             /* the thread it samples */
    long page_size;
    void *ring;         /* perf_event_mmap_page followed by data_size bytes of data */
    size_t data_size;   /* a power of two number of pages */
    const char *failed; /* after a failed open: "perf_event_open" or "mmap" */
};

/* Open a disabled page-fault sampler on the calling thread with a ring of at least ring_bytes
 * (rounded up to a power of two pages). 0, or -errno with s->failed naming the step. */
int pl_sampler_open(struct pl_sampler *s, size_t ring_bytes);
int pl_sampler_enable(struct pl_sampler *s);  /* 0 or -errno */
int pl_sampler_disable(struct pl_sampler *s); /* 0 or -errno */
/* Move every record in the ring into p. 0, or -EIO for a malformed ring (then it is emptied). */
int pl_sampler_drain(struct pl_sampler *s, struct pl_fault_profile *p);
/* Disable, drain what is left and add the event's count to p->counted; then close. 0 or -errno
 * (the sampler is closed either way). */
int pl_sampler_finish(struct pl_sampler *s, struct pl_fault_profile *p);
void pl_sampler_close(struct pl_sampler *s);

void pl_fault_profile_merge(struct pl_fault_profile *dst, const struct pl_fault_profile *src);
void pl_fault_profile_sort(struct pl_fault_profile *p); /* sites by samples, most first */
/* Name a code address of this process: "symbol+0xoff" when dladdr finds an exported symbol
 * containing it, else "module+0xoff"; module gets the object's file name. Returns 1 when a
 * symbol was found, 0 otherwise. */
int pl_fault_site_name(uint64_t ip, char *where, size_t where_cap, char *module, size_t module_cap);

#endif
