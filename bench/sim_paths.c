/* The simulator's cost per access, path by path: `pagelab bench` builds this with csrc/sim and
 * runs each path natively (time per access) and under callgrind (instructions per access, the
 * same on any host). Every access is an 8-byte load through pl_sim_access, the inline hook of
 * -DPL_SIM workloads; each path first runs once untimed, so what is measured is its steady state.
 *
 * usage: sim-paths PATH CLASSIFY N [runs]   (CLASSIFY: 0 none, 1 every level; runs: fed as
 * pl_sim_access_run calls of up to a period each, not one pl_sim_access per access)
 * prints: PATH CLASSIFY N NS_PER_ACCESS, and callgrind counts paths_run's instructions. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "sim/pl_sim.h"

/* One path: an address stream base + (i mod period) * stride (period a power of two), and the
 * hierarchy it runs through. */
struct path {
    const char *name;
    uint64_t stride, period;
    int l2; /* an L2 behind the L1D */
    const char *what;
};

#define LINE PL_CACHE_LINE
#define PAGE 4096
#define FRESH (1ull << 40) /* periods this long never repeat within a run: every line is new */

static const struct path PATHS[] = {
    {"same_line", 0, 1, 0, "the line of the access before (the inline fast path)"},
    {"seq8", 8, FRESH, 0, "sequential 8-byte loads: 7 on the line before, 1 on a new line"},
    {"l1_hit", LINE, 256, 0, "another line, an L1 hit (16 KiB round and round, DTLB hits)"},
    {"l2_hit", LINE, 1024, 1, "an L1 miss and L2 hit (64 KiB round and round)"},
    {"new_line", LINE, FRESH, 0, "a line never touched before (an L1 miss, a new page in 64)"},
    {"tlb_miss", PAGE + LINE, 128, 0, "a DTLB miss and an L1 hit (128 pages round and round)"},
};

static int runs; /* feed whole runs (pl_sim_access_run), up to a period each */

static inline __attribute__((always_inline)) void walk(struct pl_sim *sim, uint64_t stride,
                                                       uint64_t period, uint64_t first, uint64_t n)
{
    const uint64_t base = 1ull << 32, mask = period - 1;
    if (runs) {
        for (uint64_t i = first; i < first + n;) {
            uint64_t left = period - (i & mask), k = left < first + n - i ? left : first + n - i;
            pl_sim_access_run(sim, base + (i & mask) * stride, stride, k, 8, 0);
            i += k;
        }
        return;
    }
    for (uint64_t i = first; i < first + n; i++)
        pl_sim_access(sim, base + (i & mask) * stride, 8, 0);
}

/* Two copies of the walk, neither inlined: callgrind --toggle-collect=paths_run counts the
 * measured one alone. */
void paths_warm(struct pl_sim *sim, uint64_t stride, uint64_t period, uint64_t n);
void paths_run(struct pl_sim *sim, uint64_t stride, uint64_t period, uint64_t first, uint64_t n);

__attribute__((noinline)) void paths_warm(struct pl_sim *sim, uint64_t stride, uint64_t period,
                                          uint64_t n)
{
    walk(sim, stride, period, 0, n);
}

__attribute__((noinline)) void paths_run(struct pl_sim *sim, uint64_t stride, uint64_t period,
                                         uint64_t first, uint64_t n)
{
    walk(sim, stride, period, first, n);
}

int main(int argc, char **argv)
{
    const struct path *p = NULL;
    runs = argc == 5 && strcmp(argv[4], "runs") == 0;
    for (size_t i = 0; (argc == 4 || runs) && i < sizeof PATHS / sizeof PATHS[0]; i++)
        if (strcmp(argv[1], PATHS[i].name) == 0)
            p = &PATHS[i];
    if (!p) {
        fprintf(stderr, "usage: %s PATH CLASSIFY N [runs]\n", argv[0]);
        return 2;
    }
    int classify = atoi(argv[2]);
    uint64_t n = strtoull(argv[3], NULL, 10);
    struct pl_sim_config cfg = {
        .nlevels = 1 + p->l2,
        .level = {{PL_SIM_DEFAULT_L1_SIZE, PL_SIM_DEFAULT_L1_WAYS, LINE},
                  {PL_SIM_DEFAULT_L2_SIZE, PL_SIM_DEFAULT_L2_WAYS, LINE}},
        .ntlbs = 1,
        .tlb = {{PL_SIM_DEFAULT_DTLB_ENTRIES, PL_SIM_DEFAULT_DTLB_WAYS}},
        .page_size = PAGE,
        .policy = PL_POLICY_LRU,
        .classify = classify ? (1 << PL_SIM_MAX_LEVELS) - 1 : 0,
    };
    struct pl_sim *sim;
    if (pl_sim_create(&cfg, &sim)) {
        fprintf(stderr, "%s: pl_sim_create failed\n", argv[0]);
        return 1;
    }
    uint64_t warm = p->period < n ? p->period : n; /* one round: the caches reach their state */
    paths_warm(sim, p->stride, p->period, warm);
    struct timespec t0, t1;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    paths_run(sim, p->stride, p->period, warm, n);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    double ns = (double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec);
    printf("%s %d %llu %.3f\n", p->name, classify, (unsigned long long)n, ns / (double)n);
    pl_sim_destroy(sim);
    return 0;
}
