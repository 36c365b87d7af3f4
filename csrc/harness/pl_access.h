/* Memory accesses in workload kernels. The same kernel source is compiled twice: natively, where
 * PL_LOAD/PL_STORE are plain loads and stores, and with -DPL_SIM (csrc/workloads/sim_variants.c),
 * where every access is also fed to the cache/TLB simulator before it happens. Only accesses
 * written with these macros are modelled, so kernels use them for every data access of the hot
 * loop and nothing else. A loop that loads n elements at p, p + stride bytes, ... may instead
 * announce them with PL_LOAD_RUN(sim, p, stride, n) and then load them plainly: the simulator
 * sees exactly the same accesses, in the same order, for one call instead of n. PL_NAME gives
 * the two builds distinct symbols. */
#ifndef PL_ACCESS_H
#define PL_ACCESS_H

#include <stdint.h>

#ifdef PL_SIM
#include "sim/pl_sim.h"
#define PL_LOAD(sim, p) (pl_sim_access((sim), (uint64_t)(uintptr_t)(p), sizeof *(p), 0), *(p))
#define PL_STORE(sim, p, v)                                                                        \
    (pl_sim_access((sim), (uint64_t)(uintptr_t)(p), sizeof *(p), 1), *(p) = (v))
#define PL_LOAD_RUN(sim, p, stride, n)                                                             \
    pl_sim_access_run((sim), (uint64_t)(uintptr_t)(p), (uint64_t)(stride), (uint64_t)(n),          \
                      sizeof *(p), 0)
#define PL_NAME(name) name##_sim
#else
#define PL_LOAD(sim, p) ((void)(sim), *(p))
#define PL_STORE(sim, p, v) ((void)(sim), *(p) = (v))
#define PL_LOAD_RUN(sim, p, stride, n) ((void)(sim), (void)(p), (void)(stride), (void)(n))
#define PL_NAME(name) name
#endif

struct pl_sim; /* opaque outside the simulator */

#endif
