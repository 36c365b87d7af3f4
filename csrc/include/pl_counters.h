/* Counter groups: perf_event_open groups read with PERF_FORMAT_GROUP and time_enabled/running. */
#ifndef PL_COUNTERS_H
#define PL_COUNTERS_H

#include <stdint.h>
#include <sys/types.h>

/* Enough for every named event at once plus a few raw ones; one group leader fd each. */
#define PL_MAX_EVENTS 32

/* pl_group_open flags */
#define PL_INHERIT 1u        /* count threads and children created after opening */
#define PL_ENABLE_ON_EXEC 2u /* start counting when the target execs (for spawned commands) */
#define PL_EXCLUDE_KERNEL 4u /* exclude kernel and hypervisor from the start */
#define PL_USE_RDPMC 8u      /* mmap each event so reads may use user-space rdpmc */

struct pl_group {
    int n;                        /* events requested */
    unsigned flags;               /* as given to pl_group_open */
    uint32_t type[PL_MAX_EVENTS]; /* the request, kept so pl_group_open_like can repeat it */
    uint64_t config[PL_MAX_EVENTS];
    int leader;                         /* index of the group leader, -1 if nothing opened */
    int fd[PL_MAX_EVENTS];              /* -1 where the event failed to open */
    int err[PL_MAX_EVENTS];             /* errno of the failed open, 0 if opened */
    int kernel_excluded[PL_MAX_EVENTS]; /* opened only after retrying with exclude_kernel=1 */
    uint64_t id[PL_MAX_EVENTS];         /* kernel event ids, to match PERF_FORMAT_ID records */
    void *page[PL_MAX_EVENTS];          /* perf_event_mmap_page, or NULL without PL_USE_RDPMC */
};

struct pl_counts {
    uint64_t time_enabled;         /* ns the group was enabled */
    uint64_t time_running;         /* ns it was on the PMU; less than enabled when multiplexed */
    uint64_t value[PL_MAX_EVENTS]; /* raw (unscaled) counts, by request index; 0 if not open */
    int via_rdpmc;                 /* 1 if read from user space without a syscall */
};

/* Open n events as one group on pid (0 = calling thread, -1 not allowed). Events that fail keep
 * their errno in g->err and the rest still open. Returns the number opened, or -errno for bad
 * arguments. The group starts disabled unless PL_ENABLE_ON_EXEC is given. */
int pl_group_open(struct pl_group *g, const uint32_t *types, const uint64_t *configs, int n,
                  pid_t pid, unsigned flags);
/* Open the same events as src on another target (0 = the calling thread): per-thread counting
 * inside a workload. Same return convention as pl_group_open. */
int pl_group_open_like(struct pl_group *g, const struct pl_group *src, pid_t pid);
int pl_group_enable(const struct pl_group *g);  /* reset, then enable; 0 or -errno */
int pl_group_disable(const struct pl_group *g); /* 0 or -errno */
/* Read every opened event; rdpmc when the mmap pages allow, else read(2). 0 or -errno. */
int pl_group_read(const struct pl_group *g, struct pl_counts *c);
void pl_group_close(struct pl_group *g);
/* For benchmarks: n reads back to back in C; returns the total ns (CLOCK_MONOTONIC), or -errno. */
int64_t pl_group_read_loop(const struct pl_group *g, int64_t n);
/* The yardstick of pl_group_read_loop: n bare read(2)s of the group leader's fd into a buffer of
 * the size pl_group_read uses, nothing else; total ns, or -errno. */
int64_t pl_group_syscall_loop(const struct pl_group *g, int64_t n);

#endif
