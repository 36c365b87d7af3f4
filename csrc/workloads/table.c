#include <unistd.h>

#include "pl_workloads.h"

size_t pl_page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096; /* POSIX requires it; 4 KiB if a libc says otherwise */
}

/* The single list of experiments, in the order chapters and `pagelab run all` use. */
const struct pl_workload *const pl_workload_table[] = {
    &pl_wl_maps,          &pl_wl_cache,       &pl_wl_latency,    &pl_wl_mountain,
    &pl_wl_vsyscall,      &pl_wl_first_touch, &pl_wl_mmap_modes, &pl_wl_competition,
    &pl_wl_thread_stacks, &pl_wl_ebizzy,
};

const int pl_workload_count = (int)(sizeof pl_workload_table / sizeof pl_workload_table[0]);
