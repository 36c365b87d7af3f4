/* Bracket a workload's hot region: counters innermost, then the clock, then rusage, so the
 * region's own bookkeeping lands outside the counted span as far as possible. */
#ifndef PL_REGION_H
#define PL_REGION_H

#include <sys/resource.h>
#include <time.h>

#include "pl_counters.h"

struct pl_snapshot {
    struct pl_counts counts; /* zero when no group is attached */
    struct timespec clock;   /* CLOCK_MONOTONIC */
    struct rusage rusage;    /* RUSAGE_SELF: the region runs in a worker process of its own */
};

struct pl_region {
    const struct pl_group *group; /* may be NULL: then only clock and rusage are taken */
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
}

static inline void pl_region_end(struct pl_region *r)
{
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
