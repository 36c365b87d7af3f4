/* "Same source, two answers": the workloads the simulator models, compiled a second time with
 * -DPL_SIM. Here every PL_LOAD/PL_STORE of their hot loops also goes to the cache/TLB simulator,
 * PL_NAME(x) becomes x_sim, and their regions record the simulator's counts. The table entries
 * (run_sim) point at these builds. */
#define PL_SIM 1
#include "cache.c"
#include "latency.c"
