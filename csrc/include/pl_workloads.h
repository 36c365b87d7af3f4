/* The workloads, one C file each under csrc/workloads/, collected in table.c. */
#ifndef PL_WORKLOADS_H
#define PL_WORKLOADS_H

#include "pl_workload.h"

/* The runs of the workloads built twice (natively and by sim_variants.c with -DPL_SIM). */
int pl_cache_run(struct pl_ctx *c);
int pl_cache_run_sim(struct pl_ctx *c);
int pl_latency_run(struct pl_ctx *c);
int pl_latency_run_sim(struct pl_ctx *c);

extern const struct pl_workload pl_wl_maps;
extern const struct pl_workload pl_wl_cache;
extern const struct pl_workload pl_wl_latency;
extern const struct pl_workload pl_wl_mountain;
extern const struct pl_workload pl_wl_first_touch;
extern const struct pl_workload pl_wl_vsyscall;
extern const struct pl_workload pl_wl_mmap_modes;
extern const struct pl_workload pl_wl_competition;
extern const struct pl_workload pl_wl_thread_stacks;
extern const struct pl_workload pl_wl_ebizzy;

#endif
