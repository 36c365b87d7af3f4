#include <linux/perf_event.h>

#include "pl_events.h"

/* perf encodes generic cache events as cache id | op << 8 | result << 16. */
#define CACHE(id, op, res)                                                                         \
    ((uint64_t)PERF_COUNT_HW_CACHE_##id | ((uint64_t)PERF_COUNT_HW_CACHE_OP_##op << 8) |           \
     ((uint64_t)PERF_COUNT_HW_CACHE_RESULT_##res << 16))

const struct pl_event_def pl_event_table[] = {
    {"cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, ""},
    {"instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, ""},
    {"cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, ""},
    {"cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, ""},
    {"branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, ""},
    {"branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, ""},
    {"L1-dcache-loads", PERF_TYPE_HW_CACHE, CACHE(L1D, READ, ACCESS), ""},
    {"L1-dcache-load-misses", PERF_TYPE_HW_CACHE, CACHE(L1D, READ, MISS), ""},
    {"L1-dcache-stores", PERF_TYPE_HW_CACHE, CACHE(L1D, WRITE, ACCESS), ""},
    {"L1-dcache-store-misses", PERF_TYPE_HW_CACHE, CACHE(L1D, WRITE, MISS), ""},
    {"dTLB-loads", PERF_TYPE_HW_CACHE, CACHE(DTLB, READ, ACCESS), ""},
    {"dTLB-load-misses", PERF_TYPE_HW_CACHE, CACHE(DTLB, READ, MISS), ""},
    {"dTLB-stores", PERF_TYPE_HW_CACHE, CACHE(DTLB, WRITE, ACCESS), ""},
    {"dTLB-store-misses", PERF_TYPE_HW_CACHE, CACHE(DTLB, WRITE, MISS), ""},
    {"iTLB-load-misses", PERF_TYPE_HW_CACHE, CACHE(ITLB, READ, MISS), ""},
    {"LLC-loads", PERF_TYPE_HW_CACHE, CACHE(LL, READ, ACCESS), ""},
    {"LLC-load-misses", PERF_TYPE_HW_CACHE, CACHE(LL, READ, MISS), ""},
    {"page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, ""},
    {"minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, ""},
    {"major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, ""},
    {"context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, ""},
    {"cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, ""},
    {"task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, "ns"},
    {"alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, ""},
    {"emulation-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_EMULATION_FAULTS, ""},
};

const int pl_event_count = (int)(sizeof pl_event_table / sizeof pl_event_table[0]);
