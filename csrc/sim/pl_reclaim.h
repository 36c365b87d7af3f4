/* A page-reclaim model: a reference string of dense page ids replayed against a fixed number of
 * page frames under one replacement policy. It models what a policy decides, not what the
 * kernel costs: counts of faults, evictions and activations, nothing timed. */
#ifndef PL_RECLAIM_H
#define PL_RECLAIM_H

#include <stdint.h>

enum pl_reclaim_policy {
    PL_RECLAIM_FIFO,           /* evict the page resident longest */
    PL_RECLAIM_LRU,            /* evict the page used least recently (exact) */
    PL_RECLAIM_CLOCK,          /* second chance: a referenced page goes round once more */
    PL_RECLAIM_KERNEL,         /* active/inactive lists, activation on a second reference */
    PL_RECLAIM_NEVER_ACTIVATE, /* the same, with PAGEREF_ACTIVATE doing what RECLAIM does */
    PL_RECLAIM_NPOLICIES
};

struct pl_reclaim_stats {
    int64_t refs, faults, evictions, activations, deactivations;
};

/* refs[i] in [0, npages); frames >= 1. 0, or -EINVAL (bad arguments) / -ENOMEM. */
int pl_reclaim_run(const int32_t *refs, int64_t n, int32_t npages, int32_t frames, int policy,
                   struct pl_reclaim_stats *out);

#endif
