/* Running a %%c cell: the student's C, built as a shared object with pagelab_cell.h, is loaded
 * here and its main() called with the region hooks pointing at a pl_region and, in the simulated
 * build, every access it reports (each PL_LOAD/PL_STORE, or each load and store the compiler's
 * instrumentation found) at the simulator, counted per call site. */
#ifndef PL_CELL_H
#define PL_CELL_H

#include <stdint.h>

#include "harness/pl_region.h"

#define PL_CELL_ERROR_LEN 512 /* room for dlerror()'s message with a long path */

/* What the accesses of one call site did (a site is the return address of the hook's call; -g
 * maps it to the cell's line). Misses are charged to the access that caused them. */
struct pl_cell_site {
    uint64_t offset; /* of the return address in the cell's object, as addr2line takes it */
    uint64_t reads, writes;
    uint64_t l1_read_misses, l1_write_misses;
    uint64_t llc_read_misses, llc_write_misses; /* the last level, when there are two or more */
    uint64_t tlb_misses;                        /* the DTLB's */
    uint64_t compulsory, capacity, conflict;    /* of the L1 misses, where they are classified */
    uint64_t coherence; /* of the L1 misses: lines another thread's write invalidated */
    uint32_t thread;    /* whose accesses: 0 main()'s, then the threads in creation order */
};

/* How the cell's threads are simulated (pl_cell.threads_model). */
#define PL_THREADS_MAIN 0  /* main()'s thread on one core; the others' accesses only counted */
#define PL_THREADS_CORES 1 /* every thread on a core of its own (pl_coherence.h), interleaved */
/* Accesses per thread per turn of the interleaving, by default: about what a core retires
 * between two coherence events of a contended line, small enough that two threads' loops
 * overlap many times over. */
#define PL_CELL_QUANTUM 100
/* Accesses recorded and not yet interleaved, at most (16 bytes each: 256 MiB); beyond it an
 * access is counted in pl_cell.unrecorded and not simulated. */
#define PL_CELL_RECORDED_MAX (16u << 20)

struct pl_cell_sites; /* the index from code address to site, private to csrc/cell.c */

struct pl_cell {
    struct pl_region region; /* the first PL_REGION_BEGIN..END */
    struct pl_region whole;  /* all of main(): what is measured when the cell has no region */
    int begun, ended;        /* how often PL_REGION_BEGIN and PL_REGION_END ran */
    int status;              /* main()'s return value, or what it passed to exit() */
    int exited;              /* 1: main() ended by calling exit() */
    /* With a simulator: the call sites, over the first region (from its PL_REGION_BEGIN, to its
     * PL_REGION_END or main()'s end), else over all of main(). Free with pl_cell_release. */
    struct pl_cell_site *sites;
    uint32_t nsites;
    uint64_t other_threads; /* accesses by threads other than main()'s, not simulated */
    /* Set by the caller: PL_THREADS_*, the quantum (accesses per turn), and the simulator's
     * configuration, which the other threads' cores are made with. */
    int threads_model;
    uint32_t quantum;
    const struct pl_sim_config *config;
    uint32_t threads;    /* threads simulated, main()'s included */
    uint64_t unrecorded; /* accesses beyond PL_CELL_RECORDED_MAX, not simulated */
    struct pl_cell_sites *index;
    char error[PL_CELL_ERROR_LEN];
};

/* Load the cell at `path` and run its main() once. cell->region.group and .sim are set by the
 * caller (either may be NULL). Returns 0, or -1 with cell->error set when it cannot load. */
int pl_cell_run(const char *path, struct pl_cell *cell);
/* Free what pl_cell_run allocated for the sites. */
void pl_cell_release(struct pl_cell *cell);

#endif
