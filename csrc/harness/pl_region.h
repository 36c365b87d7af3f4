/* Bracket a workload's hot region: counters (and, in -DPL_SIM builds, the simulator's counts)
 * innermost, then the clock, then rusage, so the region's own bookkeeping lands outside the
 * counted span as far as possible. */
#ifndef PL_REGION_H
#define PL_REGION_H

#include <sys/resource.h>
#include <time.h>

#include "perf/pl_counters.h"
#include "sim/pl_sim.h"

struct pl_snapshot {
    struct pl_counts counts; /* zero when no group is attached */
    struct timespec clock;   /* CLOCK_MONOTONIC */
    struct rusage rusage;    /* RUSAGE_SELF: the region runs in a worker process of its own */
    struct pl_sim_stats sim; /* the simulator's counts; zero when no simulator is attached */
};

struct pl_region {
    const struct pl_group *group; /* may be NULL: then only clock and rusage are taken */
    struct pl_sim *sim;           /* the simulator of a -DPL_SIM run, else NULL */
    struct pl_snapshot begin, end;
    int err; /* first -errno from a counter read, 0 if none */
};

static inline void pl_region_begin(struct pl_region *r)
{
    r->err = 0;
    getrusage(RUSAGE_SELF, &r->begin.rusage);
    clock_gettime(CLOCK_MONOTONIC, &r->begin.clock);
    if (r->group) {
        int rc = pl_group_read(r->group, &r->begin.counts);
        if (rc)
            r->err = rc;
    }
    if (r->sim) {
        int rc = pl_sim_stats(r->sim, &r->begin.sim);
        if (rc && !r->err)
            r->err = rc;
    }
}

static inline void pl_region_end(struct pl_region *r)
{
    if (r->sim) {
        int rc = pl_sim_stats(r->sim, &r->end.sim);
        if (rc && !r->err)
            r->err = rc;
    }
    if (r->group) {
        int rc = pl_group_read(r->group, &r->end.counts);
        if (rc && !r->err)
            r->err = rc;
    }
    clock_gettime(CLOCK_MONOTONIC, &r->end.clock);
    getrusage(RUSAGE_SELF, &r->end.rusage);
}

#define PL_REGION_BEGIN(r) pl_region_begin(r)
#define PL_REGION_END(r) pl_region_end(r)

#endif
