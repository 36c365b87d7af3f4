#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pl_cache.h"
#include "pl_simmem.h"

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
    c->tag = pl_big_alloc(lines, sizeof *c->tag);
    int by_age = policy == PL_POLICY_LRU || policy == PL_POLICY_FIFO;
    int ordered = by_age && ways <= PL_CACHE_ORDER_WAYS, stamped = by_age && !ordered;
    if (ordered)
        c->order = pl_big_alloc(sets, sizeof *c->order);
    if (stamped)
        c->stamp = pl_big_alloc(lines, sizeof *c->stamp);
    c->dirty = pl_big_alloc(lines, 1);
    c->fp = pl_big_zalloc(lines + 8, 1); /* the spare bytes past the last set are read, unused */
    c->fill = pl_big_alloc(sets, sizeof *c->fill);
    if (policy == PL_POLICY_PLRU)
        c->plru = pl_big_alloc(sets, sizeof *c->plru);
    int ok = c->tag && c->fp && (!ordered || c->order) && (!stamped || c->stamp) && c->dirty &&
             c->fill && (policy != PL_POLICY_PLRU || c->plru);
    if (ok && sets == 1 && ways > PL_CACHE_SCAN_WAYS && policy == PL_POLICY_LRU) {
        c->fa = malloc(sizeof *c->fa);
        if (c->fa && pl_classifier_init(c->fa, ways)) {
            free(c->fa);
            c->fa = NULL;
        }
        ok = c->fa != NULL;
    }
    if (ok && classify) {
        c->cls = malloc(sizeof *c->cls);
        if (c->cls && pl_classifier_init(c->cls, (uint32_t)lines)) {
            free(c->cls);
            c->cls = NULL;
        }
        ok = c->cls != NULL;
    }
    if (!ok) {
        pl_cache_free(c);
        return -ENOMEM;
    }
    pl_cache_reset(c);
    return 0;
}

void pl_cache_free(struct pl_cache *c)
{
    free(c->tag);
    free(c->fp);
    free(c->order);
    free(c->stamp);
    free(c->dirty);
    free(c->fill);
    free(c->plru);
    if (c->fa) {
        pl_classifier_free(c->fa);
        free(c->fa);
    }
    if (c->cls) {
        pl_classifier_free(c->cls);
        free(c->cls);
    }
    memset(c, 0, sizeof *c);
}

void pl_cache_reset(struct pl_cache *c)
{
    uint64_t sets = c->set_mask + 1, lines = sets * c->ways;
    for (uint64_t i = 0; i < lines; i++)
        c->tag[i] = PL_NO_LINE;
    if (c->order)
        memset(c->order, 0, sets * sizeof *c->order);
    if (c->stamp)
        memset(c->stamp, 0, lines * sizeof *c->stamp);
    memset(c->dirty, 0, lines);
    memset(c->fill, 0, sets * sizeof *c->fill);
    if (c->plru)
        memset(c->plru, 0, sets * sizeof *c->plru);
    c->clock = 0;
    /* xorshift64* must not start at 0; mixing the seed also spreads nearby seeds apart */
    c->rng = (c->seed ^ 0x2545F4914F6CDD1Dull) * 0x9E3779B97F4A7C15ull | 1;
    c->mru_valid = 0;
    if (c->fa)
        pl_classifier_reset(c->fa);
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

/* The slot with the smallest stamp: least recently used (LRU) or oldest (FIFO). Stamps are
 * unique, so there are no ties. */
static uint32_t oldest_way(const uint64_t *stamp, uint32_t ways)
{
    uint32_t w = 0;
    uint64_t min = stamp[0]; /* in a register: no load waits on the previous choice */
    for (uint32_t i = 1; i < ways; i++) {
        w = stamp[i] < min ? i : w;
        min = stamp[i] < min ? stamp[i] : min;
    }
    return w;
}

/* Tree-PLRU over ways = 2^depth leaves. Node n (root 0) has children 2n+1 and 2n+2; its bit
 * says on which side the next victim is (0 left, 1 right). A touched way turns every bit on its
 * path to point away from it. */
void pl_cache_plru_touch(uint64_t *bits, unsigned depth, uint32_t way)
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
    /* a shadow hit means the line was touched before: only shadow misses can be compulsory */
    if (shadow_hit) {
        c->n.conflict++;
        return;
    }
    int seen = pl_seen_test_and_set(c->cls, line);
    if (seen < 0)
        c->err = seen;
    else if (seen)
        c->n.capacity++;
    else
        c->n.compulsory++;
}

int pl_cache_miss(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty, int shadow_hit)
{
    uint64_t set = line & c->set_mask, base = set * c->ways;
    uint32_t fill = c->fill[set];
    if (line == PL_NO_LINE) {
        /* the one line number that equals the empty-slot tag: only valid slots count */
        for (uint32_t i = 0; i < fill; i++)
            if (c->tag[base + i] == line)
                return pl_cache_hit(c, line, base, (int)i, is_write, dirty);
    }
    if (is_write)
        c->n.write_misses++;
    else
        c->n.read_misses++;
    if (c->cls)
        classify_miss(c, line, shadow_hit);

    int flags = 0;
    uint32_t w;
    if (fill < c->ways) {
        w = fill; /* free ways first, in order */
        c->fill[set] = fill + 1;
    } else {
        if (c->order)
            w = (uint32_t)(c->order[set] >> 4 * (c->ways - 1)) & 15; /* the last in order */
        else if (c->policy == PL_POLICY_PLRU)
            w = plru_victim(c->plru[set], c->plru_depth);
        else if (c->policy == PL_POLICY_RANDOM)
            w = random_way(c);
        else
            w = oldest_way(c->stamp + base, c->ways);
        flags = PL_SIM_EVICT;
        c->n.evictions++;
        c->n.writebacks += c->dirty[base + w];
    }
    uint64_t slot = base + w;
    c->tag[slot] = line;
    c->fp[slot] = pl_cache_fingerprint(line);
    if (c->order)
        c->order[set] = c->order[set] << 4 | w;
    else if (c->stamp)
        c->stamp[slot] = ++c->clock;
    c->dirty[slot] = (uint8_t)(is_write != 0);
    if (c->policy == PL_POLICY_PLRU)
        pl_cache_plru_touch(&c->plru[set], c->plru_depth, w);
    *dirty = &c->dirty[slot];
    c->mru_line = line;
    c->mru_slot = slot;
    c->mru_valid = 1;
    return flags;
}

int pl_cache_fa_access(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty,
                       int shadow_hit)
{
    uint32_t node;
    int evicted, flags = 0;
    if (pl_lru_access(c->fa, line, &node, &evicted)) {
        c->dirty[node] |= (uint8_t)(is_write != 0);
        flags = PL_SIM_HIT;
    } else {
        if (is_write)
            c->n.write_misses++;
        else
            c->n.read_misses++;
        if (c->cls)
            classify_miss(c, line, shadow_hit);
        if (evicted) {
            flags = PL_SIM_EVICT;
            c->n.evictions++;
            c->n.writebacks += c->dirty[node];
        }
        c->dirty[node] = (uint8_t)(is_write != 0);
    }
    *dirty = &c->dirty[node];
    c->mru_line = line;
    c->mru_slot = node;
    c->mru_valid = 1;
    return flags;
}
