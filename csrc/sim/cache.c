#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pl_cache.h"

int pl_cache_init(struct pl_cache *c, uint64_t lines, uint32_t ways, unsigned shift, int policy,
                  uint64_t seed, int classify)
{
    memset(c, 0, sizeof *c);
    if (ways < 1 || lines < ways || lines % ways || lines > PL_SIM_MAX_LINES)
        return -EINVAL;
    uint64_t sets = lines / ways;
    c->shift = shift;
    c->ways = ways;
    c->set_mask = sets - 1;
    c->policy = policy;
    c->seed = seed;
    while ((1u << c->plru_depth) < ways)
        c->plru_depth++;
    c->tag = malloc(lines * sizeof *c->tag);
    c->dirty = malloc(lines);
    c->fill = malloc(sets * sizeof *c->fill);
    if (policy == PL_POLICY_PLRU)
        c->plru = malloc(sets * sizeof *c->plru);
    if (classify) {
        c->cls = malloc(sizeof *c->cls);
        if (c->cls && pl_classifier_init(c->cls, (uint32_t)lines)) {
            free(c->cls);
            c->cls = NULL;
            classify = -1;
        }
    }
    if (!c->tag || !c->dirty || !c->fill || (policy == PL_POLICY_PLRU && !c->plru) ||
        (classify && !c->cls)) {
        pl_cache_free(c);
        return -ENOMEM;
    }
    pl_cache_reset(c);
    return 0;
}

void pl_cache_free(struct pl_cache *c)
{
    free(c->tag);
    free(c->dirty);
    free(c->fill);
    free(c->plru);
    if (c->cls) {
        pl_classifier_free(c->cls);
        free(c->cls);
    }
    memset(c, 0, sizeof *c);
}

void pl_cache_reset(struct pl_cache *c)
{
    uint64_t sets = c->set_mask + 1;
    memset(c->fill, 0, sets * sizeof *c->fill);
    if (c->plru)
        memset(c->plru, 0, sets * sizeof *c->plru);
    /* xorshift64* must not start at 0; mixing the seed also spreads nearby seeds apart */
    c->rng = (c->seed ^ 0x2545F4914F6CDD1Dull) * 0x9E3779B97F4A7C15ull | 1;
    if (c->cls)
        pl_classifier_reset(c->cls);
    c->err = 0;
    memset(&c->n, 0, sizeof c->n);
}

/* A uniform way in [0, ways): multiply-shift instead of a modulo (no division). */
static uint32_t random_way(struct pl_cache *c)
{
    uint64_t x = c->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    c->rng = x;
    uint32_t r = (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
    return (uint32_t)(((uint64_t)r * c->ways) >> 32);
}

/* Tree-PLRU over ways = 2^depth leaves. Node n (root 0) has children 2n+1 and 2n+2; its bit
 * says on which side the next victim is (0 left, 1 right). A touched way turns every bit on its
 * path to point away from it. */
static void plru_touch(uint64_t *bits, unsigned depth, uint32_t way)
{
    uint32_t node = 0;
    for (unsigned level = 0; level < depth; level++) {
        unsigned right = (way >> (depth - 1 - level)) & 1;
        if (right)
            *bits &= ~(1ull << node); /* way is on the right: the victim side is left */
        else
            *bits |= 1ull << node;
        node = 2 * node + 1 + right;
    }
}

static uint32_t plru_victim(uint64_t bits, unsigned depth)
{
    uint32_t node = 0, way = 0;
    for (unsigned level = 0; level < depth; level++) {
        unsigned right = (bits >> node) & 1;
        way = way << 1 | right;
        node = 2 * node + 1 + right;
    }
    return way;
}

static void classify_miss(struct pl_cache *c, uint64_t line, int shadow_hit)
{
    int seen = pl_seen_test_and_set(c->cls, line);
    if (seen < 0)
        c->err = seen;
    else if (!seen)
        c->n.compulsory++;
    else if (shadow_hit)
        c->n.conflict++;
    else
        c->n.capacity++;
}

int pl_cache_access(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty)
{
    uint64_t set = line & c->set_mask;
    uint64_t *tag = c->tag + set * c->ways;
    uint8_t *drt = c->dirty + set * c->ways;
    uint32_t fill = c->fill[set];
    int shadow_hit = c->cls ? pl_shadow_access(c->cls, line) : 0;
    if (is_write)
        c->n.writes++;
    else
        c->n.reads++;

    for (uint32_t i = 0; i < fill; i++) {
        if (tag[i] != line)
            continue;
        uint8_t d = drt[i] | (uint8_t)(is_write != 0);
        if (c->policy == PL_POLICY_LRU && i > 0) {
            /* move to the front: the set stays in most-recently-used order */
            memmove(tag + 1, tag, i * sizeof *tag);
            memmove(drt + 1, drt, i);
            tag[0] = line;
            i = 0;
        } else if (c->policy == PL_POLICY_PLRU) {
            plru_touch(&c->plru[set], c->plru_depth, i);
        }
        drt[i] = d;
        *dirty = &drt[i];
        return PL_SIM_HIT;
    }

    if (is_write)
        c->n.write_misses++;
    else
        c->n.read_misses++;
    if (c->cls)
        classify_miss(c, line, shadow_hit);

    int flags = 0;
    uint32_t w;
    if (c->policy == PL_POLICY_LRU || c->policy == PL_POLICY_FIFO) {
        /* the new line goes in front; when the set is full the last (LRU / oldest) falls out */
        w = fill < c->ways ? fill : c->ways - 1;
        if (fill == c->ways) {
            flags = PL_SIM_EVICT;
            c->n.evictions++;
            c->n.writebacks += drt[w];
        } else {
            c->fill[set] = fill + 1;
        }
        memmove(tag + 1, tag, w * sizeof *tag);
        memmove(drt + 1, drt, w);
        w = 0;
    } else {
        if (fill < c->ways) {
            w = fill; /* free ways first, in order */
            c->fill[set] = fill + 1;
        } else {
            w = c->policy == PL_POLICY_PLRU ? plru_victim(c->plru[set], c->plru_depth) : random_way(c);
            flags = PL_SIM_EVICT;
            c->n.evictions++;
            c->n.writebacks += drt[w];
        }
        if (c->policy == PL_POLICY_PLRU)
            plru_touch(&c->plru[set], c->plru_depth, w);
    }
    tag[w] = line;
    drt[w] = (uint8_t)(is_write != 0);
    *dirty = &drt[w];
    return flags;
}
