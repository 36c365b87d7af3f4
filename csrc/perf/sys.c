#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pl_counters.h"
#include "pl_perf_sys.h"

static int kernel_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                       unsigned long flags)
{
    int fd = (int)syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
    return fd < 0 ? -errno : fd;
}

static ssize_t kernel_read(int fd, void *buf, size_t count)
{
    ssize_t got = read(fd, buf, count);
    return got < 0 ? -errno : got;
}

static int kernel_ioctl(int fd, unsigned long request, unsigned long arg)
{
    return ioctl(fd, request, arg) < 0 ? -errno : 0;
}

static void *kernel_mmap(int fd, size_t length, int prot)
{
    void *p = mmap(NULL, length, prot, MAP_SHARED, fd, 0);
    return p == MAP_FAILED ? NULL : p;
}

static int kernel_munmap(void *addr, size_t length)
{
    return munmap(addr, length) < 0 ? -errno : 0;
}

static int kernel_close(int fd)
{
    return close(fd) < 0 ? -errno : 0;
}

static const struct pl_perf_sys kernel = {kernel_open, kernel_read,   kernel_ioctl,
                                          kernel_mmap, kernel_munmap, kernel_close};

/* Written once under pthread_once, read-only afterwards. */
static const struct pl_perf_sys *chosen = &kernel;
static int backend = PL_PERF_KERNEL;
static char failure[256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void choose(void)
{
    const char *path = getenv(PL_EMULATED_PMU_ENV);
    if (!path || !*path)
        return;
    if (!getenv(PL_MACHINE_ENV)) {
        snprintf(failure, sizeof failure,
                 "%s is set without %s: the emulated PMU runs only on a described machine",
                 PL_EMULATED_PMU_ENV, PL_MACHINE_ENV);
        backend = PL_PERF_FAILED;
        return;
    }
    void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    const struct pl_perf_sys *table = so ? dlsym(so, PL_PERF_SYS_SYMBOL) : NULL;
    if (!table) {
        snprintf(failure, sizeof failure, "%s=%s: %s", PL_EMULATED_PMU_ENV, path, dlerror());
        backend = PL_PERF_FAILED;
        return;
    }
    chosen = table;
    backend = PL_PERF_EMULATED;
}

const struct pl_perf_sys *pl_perf_sys(void)
{
    pthread_once(&once, choose);
    return chosen;
}

int pl_perf_backend(char *why, size_t size)
{
    pl_perf_sys();
    if (why && size)
        snprintf(why, size, "%s", failure);
    return backend;
}
