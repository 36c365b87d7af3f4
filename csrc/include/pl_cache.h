/* One set-associative array of tags with a replacement policy: a cache level (tags are line
 * numbers) or a TLB (tags are page numbers). Private to csrc/sim. */
#ifndef PL_CACHE_H
#define PL_CACHE_H

#include <stdint.h>

#include "pl_classify.h"
#include "pl_sim.h"

struct pl_cache {
    unsigned shift;    /* log2 bytes per line (per page for a TLB) */
    uint32_t ways;
    uint64_t set_mask; /* sets - 1 */
    int policy;        /* PL_POLICY_* */
    /* Per set, ways slots starting at set * ways. Slots [0, fill[set]) are valid; a model line
     * is never invalidated, so valid slots stay a prefix. Under LRU and FIFO the valid slots
     * are kept in order, most recently used (LRU) or newest (FIFO) first. */
    uint64_t *tag;
    uint8_t *dirty;
    uint32_t *fill;
    uint64_t *plru;    /* tree bits per set (PLRU only): bit n set = victim is right of node n */
    unsigned plru_depth; /* log2 ways */
    uint64_t seed, rng; /* RANDOM: xorshift64* state, rewound to seed on reset */
    struct pl_classifier *cls; /* NULL without classification */
    int err;           /* -ENOMEM once classification could not grow */
    struct pl_sim_counts n;
};

/* lines = sets * ways. 0 or -ENOMEM (everything freed again). */
int pl_cache_init(struct pl_cache *c, uint64_t lines, uint32_t ways, unsigned shift, int policy,
                  uint64_t seed, int classify);
void pl_cache_free(struct pl_cache *c);
void pl_cache_reset(struct pl_cache *c);

/* Look up one line (page) number, fill it on a miss, count it. Returns PL_SIM_HIT and/or
 * PL_SIM_EVICT; *dirty points at the line's dirty flag until the next access to this cache. */
int pl_cache_access(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty);

#endif
