/* The workloads, one C file each under csrc/workloads/, collected in table.c. */
#ifndef PL_WORKLOADS_H
#define PL_WORKLOADS_H

#include "pl_workload.h"

extern const struct pl_workload pl_wl_maps;
extern const struct pl_workload pl_wl_cache;
extern const struct pl_workload pl_wl_latency;
extern const struct pl_workload pl_wl_first_touch;
extern const struct pl_workload pl_wl_vsyscall;
extern const struct pl_workload pl_wl_mmap_modes;
extern const struct pl_workload pl_wl_competition;
extern const struct pl_workload pl_wl_thread_stacks;
extern const struct pl_workload pl_wl_ebizzy;

#endif
