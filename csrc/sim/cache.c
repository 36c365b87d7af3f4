#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pl_cache.h"
#include "pl_simmem.h"

/* A lazy level's directory: leaves of 2^PL_LEAF_SHIFT set pointers (512 bytes), allocated when
 * one of their sets is first touched. Working sets cover runs of line numbers, hence of sets,
 * so their leaves fill up; a line far from all others costs one leaf. */
#define PL_LEAF_SHIFT 6
#define PL_LEAF_SETS (1u << PL_LEAF_SHIFT)
/* The first slots of a lazy set; it doubles when full, up to the ways. */
#define PL_BLOCK_FIRST 2
/* A lazy level's classification ring first covers 32 times this many lines, then grows with
 * the lines the level holds. */
#define LAZY_RING_LINES (1u << 15)
/* Lazy levels map their memory in chunks of this size (leaves and blocks are far smaller). */
#define PL_CHUNK_BYTES (2u << 20)

struct pl_chunk {
    struct pl_chunk *next;
};

struct pl_leaf {
    struct pl_block *set[PL_LEAF_SETS]; /* NULL: the set was never touched */
    struct pl_leaf *next;               /* the level's list of leaves */
    uint64_t index;                     /* its place in dir */
};

/* One set of a lazy level: room for cap lines, the first fill of them valid. Ways fill in order
 * and are never invalidated, so a set keeps its way numbers when it grows. After the header:
 * cap tags, cap stamps (wide LRU/FIFO only), cap shadow stamps (classification only), cap dirty
 * flags. */
struct pl_block {
    uint32_t fill, cap;
    union {
        uint64_t word;         /* the set's order word or PLRU bits, as pl_cache's word[] */
        struct pl_block *next; /* on a free list */
    };
    uint64_t tag[];
};

/* A lazy block's arrays: cap tags, cap stamps (NULL without), cap shadow stamps (NULL
 * without), cap dirty flags. */
struct slots {
    uint64_t *tag, *stamp;
    uint32_t *when;
    uint8_t *dirty;
};

static int pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

static int stamped(const struct pl_cache *c)
{
    return (c->policy == PL_POLICY_LRU || c->policy == PL_POLICY_FIFO) && !c->ordered;
}

static size_t block_bytes(const struct pl_cache *c, uint32_t cap)
{
    size_t slot = sizeof(uint64_t) * (1 + (size_t)stamped(c)) + 1;
    if (c->shadow)
        slot += sizeof(uint32_t);
    size_t bytes = sizeof(struct pl_block) + (size_t)cap * slot;
    return (bytes + 7) & ~(size_t)7; /* the next block's tags stay aligned */
}

static struct slots block_slots(const struct pl_cache *c, struct pl_block *b)
{
    uint64_t *stamp = stamped(c) ? b->tag + b->cap : NULL;
    uint64_t *end = b->tag + b->cap * (1 + (stamp != NULL));
    uint32_t *when = c->shadow ? (uint32_t *)end : NULL;
    uint8_t *dirty = when ? (uint8_t *)(when + b->cap) : (uint8_t *)end;
    return (struct slots){b->tag, stamp, when, dirty};
}

void pl_cache_index_init(struct pl_cache *c, uint64_t sets)
{
    c->sets = sets;
    c->set_mask = pow2(sets) ? sets - 1 : 0;
    c->mod = pow2(sets) ? 0 : ~(pl_u128)0 / sets + 1;
}

int pl_cache_init(struct pl_cache *c, uint64_t lines, uint32_t ways, unsigned shift, int policy,
                  uint64_t seed, int classify)
{
    memset(c, 0, sizeof *c);
    if (ways < 1 || lines < ways || lines % ways || lines > PL_SIM_MAX_LINES)
        return -EINVAL;
    uint64_t sets = lines / ways;
    pl_cache_index_init(c, sets);
    c->shift = shift;
    c->ways = ways;
    c->policy = policy;
    c->seed = seed;
    while ((1u << c->plru_depth) < ways)
        c->plru_depth++;
    int by_age = policy == PL_POLICY_LRU || policy == PL_POLICY_FIFO;
    c->ordered = by_age && ways <= PL_CACHE_ORDER_WAYS;
    int ok;
    if (lines > PL_CACHE_DENSE_LINES) {
        c->dir = calloc((sets + PL_LEAF_SETS - 1) >> PL_LEAF_SHIFT, sizeof *c->dir);
        ok = c->dir != NULL;
    } else {
        c->masked = c->mod == 0;
        /* a block: the header, the fingerprints in whole groups of 16 (each compare reads 16),
         * the dirty flags, the tags (8-byte aligned), in whole host lines */
        c->dirty_off = (uint32_t)(sizeof(struct pl_set) + ((ways + 15) & ~15u));
        c->tag_off = (c->dirty_off + ways + 7) & ~7u;
        c->stride = (c->tag_off + 8 * (uint64_t)ways + 63) & ~(uint64_t)63;
        c->set_raw = pl_big_alloc(sets * c->stride + 64, 1);
        c->set_mem = (char *)(((uintptr_t)c->set_raw + 63) & ~(uintptr_t)63);
        if (stamped(c))
            c->stamp = pl_big_alloc(lines, sizeof *c->stamp);
        c->fp_last = ways % 16 ? (1u << ways % 16) - 1 : 0xFFFF;
        ok = c->set_raw && (c->stamp || !stamped(c));
    }
    if (ok && sets == 1 && ways > PL_CACHE_SCAN_WAYS && policy == PL_POLICY_LRU) {
        c->masked = 0;
        c->fa = malloc(sizeof *c->fa);
        if (c->fa && pl_lru_init(c->fa, ways)) {
            free(c->fa);
            c->fa = NULL;
        }
        ok = c->fa != NULL;
    }
    if (ok && classify) {
        c->seen = malloc(sizeof *c->seen);
        if (c->seen && pl_seen_init(c->seen)) {
            free(c->seen);
            c->seen = NULL;
        }
        ok = c->seen != NULL;
    }
    /* one LRU set is a fully associative LRU cache: its own shadow */
    if (ok && classify && !(sets == 1 && policy == PL_POLICY_LRU)) {
        /* a dense level's ring covers 32 times its lines from the start; a lazy one's grows */
        unsigned bits = 0;
        while ((1ull << bits) < 32 * (c->dir ? LAZY_RING_LINES : lines))
            bits++;
        c->shadow = malloc(sizeof *c->shadow);
        if (c->shadow && pl_shadow_init(c->shadow, (uint32_t)lines, bits)) {
            free(c->shadow);
            c->shadow = NULL;
        }
        if (c->shadow && !c->dir)
            c->when = pl_big_alloc(lines, sizeof *c->when);
        ok = c->shadow && (c->when || c->dir);
    }
    if (!ok) {
        pl_cache_free(c);
        return -ENOMEM;
    }
    pl_cache_reset(c);
    return 0;
}

/* Forget every lazy set and leaf, and unmap their chunks; the directory is left all NULL. */
static void free_sets(struct pl_cache *c)
{
    for (struct pl_leaf *leaf = c->leaves; leaf; leaf = leaf->next)
        c->dir[leaf->index] = NULL;
    c->leaves = NULL;
    while (c->chunks) {
        struct pl_chunk *k = c->chunks;
        c->chunks = k->next;
        pl_pages_unmap(k, PL_CHUNK_BYTES);
    }
    c->bump = c->bump_end = NULL;
    memset(c->free_block, 0, sizeof c->free_block);
}

void pl_cache_free(struct pl_cache *c)
{
    if (c->dir)
        free_sets(c);
    free(c->dir);
    free(c->set_raw);
    free(c->stamp);
    free(c->when);
    if (c->fa) {
        pl_lru_free(c->fa);
        free(c->fa);
    }
    if (c->seen) {
        pl_seen_free(c->seen);
        free(c->seen);
    }
    if (c->shadow) {
        pl_shadow_free(c->shadow);
        free(c->shadow);
    }
    memset(c, 0, sizeof *c);
}

void pl_cache_reset(struct pl_cache *c)
{
    if (c->dir) {
        free_sets(c);
    } else {
        uint64_t lines = c->sets * c->ways;
        memset(c->set_mem, 0, c->sets * c->stride);
        for (uint64_t set = 0; set < c->sets; set++) {
            uint64_t *tag = pl_set_tags(pl_cache_block(c, set), c->tag_off);
            for (uint32_t w = 0; w < c->ways; w++)
                tag[w] = PL_NO_LINE;
        }
        if (c->stamp)
            memset(c->stamp, 0, lines * sizeof *c->stamp);
        if (c->when)
            memset(c->when, 0, lines * sizeof *c->when);
    }
    c->clock = 0;
    /* xorshift64* must not start at 0; mixing the seed also spreads nearby seeds apart */
    c->rng = (c->seed ^ 0x2545F4914F6CDD1Dull) * 0x9E3779B97F4A7C15ull | 1;
    c->mru_line = PL_NO_LINE; /* a page number never is: the DTLB's check needs no mru_valid */
    c->mru_valid = 0;
    c->mru_dirty = &c->spare;
    if (c->fa)
        pl_lru_reset(c->fa);
    if (c->seen)
        pl_seen_reset(c->seen);
    if (c->shadow)
        pl_shadow_reset(c->shadow);
    c->held = 0;
    c->err = 0;
    memset(&c->n, 0, sizeof c->n);
}

/* The valid slots of a set stay a prefix: the set's last valid line moves into the hole, and
 * in an order word the dropped way's nibble goes and the moved way takes its number. */
int pl_cache_invalidate(struct pl_cache *c, uint64_t line)
{
    if (!c->set_mem || c->fa)
        return -EINVAL;
    uint64_t set = pl_cache_set(c, line), base = set * c->ways;
    struct pl_set *s = pl_cache_block(c, set);
    int found = line == PL_NO_LINE ? -1 : pl_cache_find(c, s, line);
    if (found < 0)
        return 0;
    uint32_t w = (uint32_t)found, last = s->fill - 1;
    if (c->ordered) {
        uint64_t o = s->word, kept = 0;
        for (uint32_t i = 0, j = 0; i <= last; i++) {
            uint64_t way = o >> 4 * i & 15;
            if (way == w)
                continue;
            kept |= (way == last ? w : way) << 4 * j++;
        }
        s->word = kept;
    }
    uint64_t *tag = pl_set_tags(s, c->tag_off);
    uint8_t *dirty = pl_set_dirty(s, c->dirty_off);
    uint64_t to = base + w, from = base + last;
    tag[w] = tag[last];
    s->fp[w] = s->fp[last];
    dirty[w] = dirty[last];
    if (c->stamp)
        c->stamp[to] = c->stamp[from];
    if (c->when)
        c->when[to] = c->when[from];
    tag[last] = PL_NO_LINE;
    s->fp[last] = 0;
    dirty[last] = 0;
    s->fill = last;
    c->mru_valid = 0;
    c->mru_line = PL_NO_LINE;
    return 1;
}

int pl_cache_error(const struct pl_cache *c)
{
    if (c->err)
        return c->err;
    return c->shadow ? c->shadow->err : 0;
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

/* Count a miss of line and classify it. With a shadow, *when is the stamp of the slot line
 * now fills, and victim (stamp vwhen) the line it evicted, if evicted. */
void pl_cache_classify(struct pl_cache *c, uint64_t line, uint32_t *when, int evicted,
                       uint64_t victim, uint32_t vwhen)
{
    if (c->shadow) {
        struct pl_shadow *k = c->shadow;
        *when = pl_shadow_return(k, line);
        int held = pl_shadow_touch(k, when);
        if (evicted && vwhen >= k->tail)
            pl_shadow_exile(k, victim, vwhen);
        /* a shadow hit means the line was touched before: only misses can be compulsory */
        if (held) {
            c->n.conflict++;
            return;
        }
    }
    int seen = pl_seen_test_and_set(c->seen, line);
    if (seen < 0)
        c->err = seen;
    else if (seen)
        c->n.capacity++;
    else
        c->n.compulsory++;
}

/* The way a full set gives up: the policy's victim. The set's order word or PLRU bits are
 * *word, its ways' stamps stamps[base ..]; each is read only under its policies. */
PL_HOT uint32_t victim(struct pl_cache *c, const uint64_t *word, const uint64_t *stamps,
                       uint64_t base)
{
    if (c->ordered)
        return (uint32_t)(*word >> 4 * (c->ways - 1)) & 15; /* the last in order */
    if (c->policy == PL_POLICY_PLRU)
        return plru_victim(*word, c->plru_depth);
    if (c->policy == PL_POLICY_RANDOM)
        return random_way(c);
    return oldest_way(stamps + base, c->ways);
}

/* Way w of the set (slot slot) now holds a new line, the most recently used (filled) one. */
PL_HOT void fill_way(struct pl_cache *c, uint64_t *word, uint64_t *stamps, uint64_t slot,
                     uint32_t w)
{
    if (c->ordered)
        *word = *word << 4 | w;
    else if (stamps)
        stamps[slot] = ++c->clock;
    if (c->policy == PL_POLICY_PLRU)
        pl_cache_plru_touch(word, c->plru_depth, w);
}

/* The miss's bookkeeping once line is in: its dirty flag and the MRU. */
PL_HOT int filled(struct pl_cache *c, uint64_t line, uint8_t *d, int is_write, int flags,
                  uint8_t **dirty)
{
    *d = (uint8_t)(is_write != 0);
    *dirty = d;
    c->mru_line = line;
    c->mru_dirty = d;
    c->mru_valid = 1;
    return flags;
}

int pl_cache_miss(struct pl_cache *c, uint64_t set, uint64_t line, int is_write, uint8_t **dirty)
{
    uint64_t base = set * c->ways;
    struct pl_set *s = pl_cache_block(c, set);
    uint32_t w, fill = s->fill;
    if (__builtin_expect(line == PL_NO_LINE, 0)) {
        /* the one line number that equals the empty-slot tag: only valid slots count */
        for (uint32_t i = 0; i < fill; i++)
            if (pl_set_tags(s, c->tag_off)[i] == line)
                return pl_cache_hit(c, line, set, s, (int)i, is_write, dirty);
    } else if (c->ordered && c->policy == PL_POLICY_LRU) {
        return pl_cache_fill_lru(c, set, line, is_write, dirty);
    }
    int flags = 0;
    if (fill < c->ways) {
        w = fill; /* free ways first, in order */
        s->fill = fill + 1;
    } else {
        w = victim(c, &s->word, c->stamp, base);
        flags = PL_SIM_EVICT;
    }
    uint8_t *d = pl_cache_install(c, s, set, w, line, is_write, flags);
    fill_way(c, &s->word, c->stamp, base + w, w);
    flags = filled(c, line, d, is_write, flags, dirty);
    if (__builtin_expect(c->shadow != NULL, 0) && pl_shadow_full(c->shadow))
        pl_cache_renumber(c);
    return flags;
}

static int fa_access(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty)
{
    uint32_t node;
    int evicted, flags = 0;
    uint64_t old = 0;
    uint8_t *d = pl_set_dirty(pl_cache_block(c, 0), c->dirty_off); /* one set */
    if (pl_lru_access(c->fa, line, &node, &evicted, &old)) {
        d[node] |= (uint8_t)(is_write != 0);
        flags = PL_SIM_HIT;
    } else {
        pl_cache_count_miss(c, line, is_write, NULL, 0, &old); /* one LRU set: no shadow */
        if (evicted) {
            flags = PL_SIM_EVICT;
            c->n.evictions++;
            c->n.writebacks += d[node];
        }
        d[node] = (uint8_t)(is_write != 0);
    }
    *dirty = &d[node];
    c->mru_line = line;
    c->mru_dirty = *dirty;
    c->mru_valid = 1;
    return flags;
}

/* bytes (a multiple of 8) from the level's chunks, never used before (so zeroed); NULL when
 * out of memory. */
static void *bump(struct pl_cache *c, size_t bytes)
{
    if ((size_t)(c->bump_end - c->bump) < bytes) {
        struct pl_chunk *k = pl_pages_map(PL_CHUNK_BYTES);
        if (!k)
            return NULL;
        k->next = c->chunks;
        c->chunks = k;
        c->bump = (char *)(k + 1);
        c->bump_end = (char *)k + PL_CHUNK_BYTES;
    }
    void *p = c->bump;
    c->bump += bytes;
    return p;
}

static unsigned block_class(uint32_t cap)
{
    return cap > 1 ? 32 - (unsigned)__builtin_clz(cap - 1) : 0; /* ceil(log2(cap)) */
}

/* The block of a lazy set with room for one more line: created, or moved to one twice as large
 * (up to the ways). NULL when out of memory. */
static struct pl_block *grow_set(struct pl_cache *c, uint64_t set, struct pl_block *b)
{
    struct pl_leaf **leaf = &c->dir[set >> PL_LEAF_SHIFT];
    if (!*leaf) {
        *leaf = bump(c, sizeof **leaf);
        if (!*leaf)
            return NULL;
        (*leaf)->index = set >> PL_LEAF_SHIFT;
        (*leaf)->next = c->leaves;
        c->leaves = *leaf;
    }
    uint32_t cap = b ? b->cap * 2 : PL_BLOCK_FIRST;
    cap = cap < c->ways ? cap : c->ways;
    struct pl_block *nb = c->free_block[block_class(cap)];
    if (nb)
        c->free_block[block_class(cap)] = nb->next;
    else if (!(nb = bump(c, block_bytes(c, cap))))
        return NULL;
    nb->fill = b ? b->fill : 0;
    nb->cap = cap;
    nb->word = b ? b->word : 0;
    if (b) {
        struct slots from = block_slots(c, b), to = block_slots(c, nb);
        memcpy(to.tag, from.tag, b->fill * sizeof *to.tag);
        if (to.stamp)
            memcpy(to.stamp, from.stamp, b->fill * sizeof *to.stamp);
        if (to.when)
            memcpy(to.when, from.when, b->fill * sizeof *to.when);
        memcpy(to.dirty, from.dirty, b->fill);
        b->next = c->free_block[block_class(b->cap)];
        c->free_block[block_class(b->cap)] = b;
    }
    (*leaf)->set[set & (PL_LEAF_SETS - 1)] = nb;
    return nb;
}

static int lazy_access(struct pl_cache *c, uint64_t set, uint64_t line, int is_write,
                       uint8_t **dirty)
{
    struct pl_leaf *leaf = c->dir[set >> PL_LEAF_SHIFT];
    struct pl_block *b = leaf ? leaf->set[set & (PL_LEAF_SETS - 1)] : NULL;
    uint32_t w, fill = b ? b->fill : 0;
    for (w = 0; w < fill; w++) {
        if (b->tag[w] != line)
            continue;
        struct slots s = block_slots(c, b);
        if (c->policy == PL_POLICY_LRU && c->ordered)
            pl_cache_order_touch(&b->word, w);
        else if (c->policy == PL_POLICY_LRU)
            s.stamp[w] = ++c->clock;
        else if (c->policy == PL_POLICY_PLRU)
            pl_cache_plru_touch(&b->word, c->plru_depth, w);
        s.dirty[w] |= (uint8_t)(is_write != 0);
        *dirty = &s.dirty[w];
        c->mru_line = line;
        c->mru_dirty = *dirty;
        c->mru_valid = 1;
        if (c->shadow)
            pl_cache_shadow_hit(c, &s.when[w]);
        return PL_SIM_HIT;
    }
    if (fill == (b ? b->cap : 0) && fill < c->ways && (c->err || !(b = grow_set(c, set, b)))) {
        /* no room (once out of memory, no more tries): the line is not kept, the counts are
         * incomplete, and stats say so */
        uint32_t spare_when = 0;
        pl_cache_count_miss(c, line, is_write, &spare_when, 0, &line);
        c->err = -ENOMEM;
        c->spare = 0;
        *dirty = &c->spare;
        c->mru_valid = 0;
        return 0;
    }
    struct slots s = block_slots(c, b);
    int flags = 0;
    if (fill < c->ways) {
        w = fill; /* free ways first, in order */
        b->fill = fill + 1;
        c->held++;
    } else {
        w = victim(c, &b->word, s.stamp, 0);
        flags = PL_SIM_EVICT;
        c->n.evictions++;
        c->n.writebacks += s.dirty[w];
    }
    uint32_t *when = s.when ? &s.when[w] : NULL;
    pl_cache_count_miss(c, line, is_write, when, flags, &b->tag[w]);
    b->tag[w] = line;
    fill_way(c, &b->word, s.stamp, w, w);
    flags = filled(c, line, &s.dirty[w], is_write, flags, dirty);
    if (c->shadow && pl_shadow_full(c->shadow))
        pl_cache_renumber(c);
    return flags;
}

int pl_cache_access_other(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty)
{
    if (c->fa)
        return fa_access(c, line, is_write, dirty);
    uint64_t set = pl_cache_set(c, line);
    if (c->dir)
        return lazy_access(c, set, line, is_write, dirty);
    return pl_cache_lookup(c, set, line, is_write, dirty);
}

void pl_cache_renumber(struct pl_cache *c)
{
    struct pl_shadow *k = c->shadow;
    pl_shadow_renumber_begin(k);
    if (c->when) {
        for (uint64_t i = 0, n = c->sets * c->ways; i < n; i++)
            c->when[i] = pl_shadow_restamp(k, c->when[i]);
    }
    for (struct pl_leaf *leaf = c->leaves; leaf; leaf = leaf->next) {
        for (unsigned i = 0; i < PL_LEAF_SETS; i++) {
            struct pl_block *b = leaf->set[i];
            if (!b)
                continue;
            uint32_t *when = block_slots(c, b).when;
            for (uint32_t w = 0; w < b->fill; w++)
                when[w] = pl_shadow_restamp(k, when[w]);
        }
    }
    pl_shadow_renumber_end(k, c->held);
}
