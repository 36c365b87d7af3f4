/* Counter groups: perf_event_open groups read with PERF_FORMAT_GROUP and time_enabled/running.
 *
 * One pl_group holds several perf groups: the caller names, for each event, the perf group it
 * joins (pagelab puts all software events in one group and each hardware event, per core PMU,
 * in a group of its own, as perf stat does, so that more events than counters multiplex and a
 * software event never waits for a hardware leader that is off the PMU). */
#ifndef PL_COUNTERS_H
#define PL_COUNTERS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Enough for every named event at once, each hardware one on up to three core PMUs (a hybrid
 * CPU's P, E and LP-E cores), plus a few raw ones. */
#define PL_MAX_EVENTS 64

/* pl_group_open flags */
#define PL_INHERIT 1u        /* count threads and children created after opening */
#define PL_ENABLE_ON_EXEC 2u /* start counting when the target execs (for spawned commands) */
#define PL_EXCLUDE_KERNEL 4u /* exclude kernel and hypervisor from the start */
#define PL_USE_RDPMC 8u      /* mmap each event so reads may use user-space rdpmc */

/* pl_perf_backend: who answers perf_event_open (csrc/perf/pl_perf_sys.h) */
#define PL_PERF_KERNEL 0
#define PL_PERF_EMULATED 1
#define PL_PERF_FAILED -1

struct pl_group {
    int n;                        /* events requested */
    unsigned flags;               /* as given to pl_group_open */
    uint32_t type[PL_MAX_EVENTS]; /* the request, kept so a workload can open it again */
    uint64_t config[PL_MAX_EVENTS];
    int group[PL_MAX_EVENTS];           /* the caller's perf group number of each event */
    int leader[PL_MAX_EVENTS];          /* index of the event leading i's group; -1: not open */
    int fd[PL_MAX_EVENTS];              /* -1 where the event failed to open */
    int err[PL_MAX_EVENTS];             /* errno of the failed open, 0 if opened */
    int kernel_excluded[PL_MAX_EVENTS]; /* opened only after retrying with exclude_kernel=1 */
    uint64_t id[PL_MAX_EVENTS];         /* kernel event ids, to match PERF_FORMAT_ID records */
    void *page[PL_MAX_EVENTS];          /* perf_event_mmap_page, or NULL without PL_USE_RDPMC */
};

struct pl_counts {
    uint64_t value[PL_MAX_EVENTS]; /* raw (unscaled) counts, by request index; 0 if not open */
    uint64_t time_enabled[PL_MAX_EVENTS]; /* ns the event's group was enabled */
    uint64_t time_running[PL_MAX_EVENTS]; /* ns it was on a counter: less when multiplexed, or
                                             when the thread ran on another core type */
    int via_rdpmc;                        /* 1 if read from user space without a syscall */
};

/* Open n events on pid (0 = calling thread, -1 not allowed); event i joins perf group
 * groups[i] (any int; equal numbers share a group, the first opened one leads it). Events that
 * fail keep their errno in g->err and the rest still open. Returns the number opened, or -errno
 * for bad arguments. The groups start disabled unless PL_ENABLE_ON_EXEC is given. */
int pl_group_open(struct pl_group *g, const uint32_t *types, const uint64_t *configs,
                  const int *groups, int n, pid_t pid, unsigned flags);
int pl_group_enable(const struct pl_group *g);  /* reset, then enable every group; 0 or -errno */
int pl_group_disable(const struct pl_group *g); /* 0 or -errno */
/* Read every opened event; rdpmc when the mmap pages allow, else read(2). 0 or -errno. */
int pl_group_read(const struct pl_group *g, struct pl_counts *c);
void pl_group_close(struct pl_group *g);
/* PL_PERF_KERNEL, PL_PERF_EMULATED, or PL_PERF_FAILED with the reason copied into why. */
int pl_perf_backend(char *why, size_t size);
/* For benchmarks: n reads back to back in C; returns the total ns (CLOCK_MONOTONIC), or -errno. */
int64_t pl_group_read_loop(const struct pl_group *g, int64_t n);
/* The yardstick of pl_group_read_loop: n bare read(2)s of the first group leader's fd into a
 * buffer of the size pl_group_read uses, nothing else; total ns, or -errno. */
int64_t pl_group_syscall_loop(const struct pl_group *g, int64_t n);

#endif
