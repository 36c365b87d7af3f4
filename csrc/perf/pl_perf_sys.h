/* The seam between pagelab's counters and the kernel: every perf_event_open, read, ioctl, mmap,
 * munmap and close of a perf event goes through one table of these calls.
 *
 * Normally the table is the kernel's. Only when both $PAGELAB_MACHINE (a described machine) and
 * $PAGELAB_EMULATED_PMU (the path of a shared object that exports PL_PERF_SYS_SYMBOL) are set is
 * the table taken from that object instead: the tests' emulated PMU (tests/emupmu/), built by
 * the tests and never shipped. Its readings are labelled "emulated", never "hw". */
#ifndef PL_PERF_SYS_H
#define PL_PERF_SYS_H

#include <linux/perf_event.h>
#include <stddef.h>
#include <sys/types.h>

#define PL_PERF_SYS_SYMBOL "pl_emulated_perf_sys"
#define PL_EMULATED_PMU_ENV "PAGELAB_EMULATED_PMU"
#define PL_MACHINE_ENV "PAGELAB_MACHINE"

/* Each call returns what its system call returns, but failures as -errno (mmap: NULL, errno
 * set), so that an emulation needs no errno of its own. */
struct pl_perf_sys {
    int (*open)(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                unsigned long flags);
    ssize_t (*read)(int fd, void *buf, size_t count);
    int (*ioctl)(int fd, unsigned long request, unsigned long arg);
    void *(*mmap)(int fd, size_t length, int prot);
    int (*munmap)(void *addr, size_t length);
    int (*close)(int fd);
};

/* The table in use, chosen once per process (thread-safe). */
const struct pl_perf_sys *pl_perf_sys(void);

#endif
