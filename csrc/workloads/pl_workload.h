/* The workload table: one entry per experiment, the single list Python reads. A workload gets
 * its parameters (validated by Python against this table), an optional counter group to
 * bracket its hot regions with, an optional simulator, and a pl_out to record results in. */
#ifndef PL_WORKLOAD_H
#define PL_WORKLOAD_H

#include <stdint.h>

#include "harness/pl_out.h"
#include "perf/pl_counters.h"

struct pl_sim;

struct pl_param {
    const char *name;
    int64_t def, min, max; /* max is the "absurd" bound: larger requests are bad input */
    const char *unit;      /* "MiB", "KiB", "threads", "" ... */
    const char *choices;   /* NULL for numbers; else "a,b,c": the value is the index */
    const char *help;
};

struct pl_ctx {
    const int64_t *param;         /* in the order of the workload's param table */
    const struct pl_group *group; /* counters for PL_REGION_*; NULL when nothing could open */
    struct pl_sim *sim;           /* set only when run_sim is called */
    struct pl_out *out;
};

typedef int (*pl_run_fn)(struct pl_ctx *ctx); /* 0, or -errno with out->note saying what failed */

struct pl_workload {
    const char *name; /* the experiment's name, e.g. "first-touch" */
    const char *summary;
    const struct pl_param *params;
    int nparams;
    pl_run_fn run;
    pl_run_fn run_sim; /* the same source built with -DPL_SIM; NULL if nothing to model */
};

extern const struct pl_workload *const pl_workload_table[];
extern const int pl_workload_count;

/* xorshift64* (Vigna 2016): a few cycles and no memory traffic, so it never disturbs what a
 * workload measures; seeded, so both builds of a workload (native and -DPL_SIM) draw the same
 * numbers. The state must not be 0. */
static inline uint64_t pl_random(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}

#endif
