/* One set-associative array of tags with a replacement policy: a cache level (tags are line
 * numbers) or a TLB (tags are page numbers). Private to csrc/sim; the hit path is inline. */
#ifndef PL_CACHE_H
#define PL_CACHE_H

#include <stdint.h>
#ifdef __SSE2__
#include <emmintrin.h>
#endif

#include "pl_classify.h"
#include "pl_sim.h"

/* Internal to the simulator: calls bind inside the module and may be inlined. */
#pragma GCC visibility push(hidden)

/* Widest set searched by a linear scan: beyond it a scan costs more than a hash lookup. */
#define PL_CACHE_SCAN_WAYS 16
/* Widest set whose LRU/FIFO order fits one 64-bit word of 4-bit way numbers. */
#define PL_CACHE_ORDER_WAYS 16
/* Levels of more lines than this are lazy: their sets are allocated on first touch and grow
 * with their fill, so memory follows the lines touched, not the capacity. Smaller ones (every
 * L1 and TLB, most L2s) keep dense arrays, whose lookup is the inline hot path. 2^20 lines are
 * 64 MiB of 64-byte lines, about 11 MB of dense tables. */
#define PL_CACHE_DENSE_LINES (1u << 20)

/* Tag of an empty slot. Only a 1-byte-line cache could see it as a real line number (address
 * 2^64 - 1); pl_cache_access sends that one address down the careful path. */
#define PL_NO_LINE UINT64_MAX

__extension__ typedef unsigned __int128 pl_u128;

/* Lazy levels (cache.c): a page of set pointers, one set's slots, a mapped chunk. */
struct pl_leaf;
struct pl_block;
struct pl_chunk;
/* Sizes of a lazy set's slots: ceil(log2(room)) for room up to PL_SIM_MAX_WAYS ways. */
#define PL_BLOCK_CLASSES 13

/* A dense set's block: its order word (under LRU and FIFO with ordered sets, its way numbers in
 * 4-bit nibbles, most recently used (filled) first, so a lookup needs neither a search for the
 * victim nor a stamp per slot: positions at and beyond the fill hold leftovers, which the
 * lowest-match search never reaches; under PLRU its tree bits, bit n set = the victim is right
 * of node n; unused under random and for wider sets, which use stamps), its fill (ways [0,
 * fill) are valid: the model never invalidates a line, and pl_cache_invalidate keeps them a
 * prefix), then the fingerprints of its ways' tags (pl_cache_find) in groups of 16, then at
 * dirty_off a dirty flag per way and at tag_off a tag per way. */
struct pl_set {
    uint64_t word;
    uint32_t fill, unused;
    uint8_t fp[];
};

struct pl_cache {
    unsigned shift; /* log2 bytes per line (per page for a TLB) */
    uint32_t ways;
    uint64_t sets;
    uint64_t set_mask; /* sets - 1, when sets is a power of two */
    pl_u128 mod;       /* otherwise ceil(2^128 / sets), for pl_cache_set's reduction; else 0 */
    /* 1: dense, with a power-of-two number of sets, looked up inline by pl_cache_access. 0: a
     * set number that needs the reduction, a lazy level or a list; pl_cache_access_other. */
    int masked;
    int policy;  /* PL_POLICY_* */
    int ordered; /* LRU or FIFO order kept in one word per set (at most PL_CACHE_ORDER_WAYS) */
    /* Dense levels: one block of stride bytes per set (struct pl_set, 64-byte aligned), its
     * order word, fill, fingerprints, dirty flags and tags side by side, so that a lookup reads
     * the block's first host line and the line of its candidate's tag, and a miss the same two:
     * in a level larger than the host's caches, separate arrays cost a host miss each. A slot
     * (set * ways + way) indexes the arrays of the features that are off by default: */
    char *set_mem, *set_raw; /* the blocks; set_raw as allocated (for free) */
    uint64_t stride;
    uint32_t dirty_off, tag_off; /* where a block's dirty flags and tags begin */
    uint32_t fp_last;            /* masks the ways of a set's last group of 16 fingerprints */
    uint64_t *stamp; /* wide LRU: time of last use; wide FIFO: time of fill; else NULL */
    uint32_t *when;  /* per slot, its line's stamp in the classification shadow; else NULL */
    /* Lazy levels (set_mem == NULL): sets >> PL_LEAF_SHIFT leaf pointers, NULL until a set of the
     * leaf is touched, and the list of allocated leaves, which reset walks. Leaves and sets
     * live in chunks of pages (bump allocated; a set that outgrows its block leaves it on the
     * free list of its size), which reset unmaps. */
    struct pl_leaf **dir;
    struct pl_leaf *leaves;
    struct pl_chunk *chunks;
    char *bump, *bump_end;
    struct pl_block *free_block[PL_BLOCK_CLASSES];
    uint64_t held;       /* lines a lazy level holds */
    unsigned plru_depth; /* log2 ways */
    uint64_t clock;      /* stamps: one tick per access that changes one */
    uint64_t seed, rng;  /* RANDOM: xorshift64* state, rewound to seed on reset */
    /* The most recently accessed line and its dirty flag. Accessing it again changes no
     * replacement state under any policy (nor the classification shadow, where it is the head),
     * so that hit needs no lookup. mru_valid is 0 after a reset. */
    uint64_t mru_line;
    uint8_t *mru_dirty;
    int mru_valid;
    /* One set of more than PL_CACHE_SCAN_WAYS ways under LRU (AMD's fully associative
     * DTLBs, say): an exact LRU list with a hash index replaces the linear scans, and slot
     * numbers are its node numbers. NULL otherwise. */
    struct pl_lru *fa;
    /* Classification: the first-touch set, and the shadow (pl_classify.h). Both NULL without
     * classification; the shadow also NULL for one LRU set, which is its own shadow (a miss
     * there is never a conflict). */
    struct pl_seen *seen;
    struct pl_shadow *shadow;
    int err;       /* -ENOMEM once a lazy set or classification could not grow */
    uint8_t spare; /* the dirty flag of a line that found no room (err) */
    struct pl_sim_counts n;
};

/* lines = sets * ways, any whole number of sets. 0, -EINVAL or -ENOMEM (then nothing is left
 * allocated). */
int pl_cache_init(struct pl_cache *c, uint64_t lines, uint32_t ways, unsigned shift, int policy,
                  uint64_t seed, int classify);
void pl_cache_free(struct pl_cache *c);
/* Empty, zero counts. Cheap for a lazy level: what was touched is freed. */
void pl_cache_reset(struct pl_cache *c);
/* 0, or -ENOMEM if the level or its classification ran out of memory (counts incomplete). */
int pl_cache_error(const struct pl_cache *c);
/* Sets up only c's set arithmetic, for sets (>= 1) sets: pl_sim_set_of's. */
void pl_cache_index_init(struct pl_cache *c, uint64_t sets);
/* The miss path of pl_cache_lookup (and its careful path for line == PL_NO_LINE). */
int pl_cache_miss(struct pl_cache *c, uint64_t set, uint64_t line, int is_write, uint8_t **dirty);
/* The classification of a miss of line (c->seen is not NULL). With a shadow, *when is the
 * stamp of the slot line now fills, and victim (stamp vwhen) the line it evicted, if evicted. */
void pl_cache_classify(struct pl_cache *c, uint64_t line, uint32_t *when, int evicted,
                       uint64_t victim, uint32_t vwhen);
/* pl_cache_access for any level that is not masked. */
int pl_cache_access_other(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty);
/* Line leaves the level (coherence): 1 if it was there, 0 if not, -EINVAL for a lazy level or a
 * wide LRU list, which cannot drop one line. */
int pl_cache_invalidate(struct pl_cache *c, uint64_t line);
/* Every stamp of the level and its shadow renumbered (pl_shadow_full). */
void pl_cache_renumber(struct pl_cache *c);

/* Forced inline: the slow path of every access runs through these. */
#define PL_HOT static inline __attribute__((always_inline))

#define PL_BYTES 0x0101010101010101ull

/* x mod d without dividing, exact for every 64-bit x and d: Lemire, Kaser and Kurz, "Faster
 * remainder by direct computation" (2019), with a 128-bit magic = ceil(2^128 / d). The low
 * 128 bits of magic * x are the fractional part of x / d in units of 2^-128; times d, its
 * integer part is the remainder. */
PL_HOT uint64_t pl_fastmod(uint64_t x, pl_u128 magic, uint64_t d)
{
    pl_u128 frac = magic * x;
    pl_u128 low = (pl_u128)(uint64_t)frac * d >> 64;
    return (uint64_t)(((frac >> 64) * d + low) >> 64);
}

/* The set of a line: line number mod sets. */
PL_HOT uint64_t pl_cache_set(const struct pl_cache *c, uint64_t line)
{
    return c->mod ? pl_fastmod(line, c->mod, c->sets) : line & c->set_mask;
}

/* A line's one-byte fingerprint: the top byte of a multiplicative hash, so lines that share a
 * set (they differ only above the set bits) still differ here. */
PL_HOT uint8_t pl_cache_fingerprint(uint64_t line)
{
    return (uint8_t)((line * 0x9E3779B97F4A7C15ull) >> 56);
}

/* Bit i set: byte i of the 16 at p is f. */
PL_HOT uint32_t pl_match16(const uint8_t *p, uint8_t f)
{
#ifdef __SSE2__
    __m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
    return (uint32_t)_mm_movemask_epi8(_mm_cmpeq_epi8(v, _mm_set1_epi8((char)f)));
#else
    /* SWAR: a zero-byte test of the xor with f in every byte (its false positives, borrows,
     * only lie above a true match, and the tag compare rejects them), then the byte flags
     * gathered into bits by a multiply */
    uint32_t m = 0;
    for (int half = 0; half < 2; half++) {
        uint64_t x;
        __builtin_memcpy(&x, p + 8 * half, sizeof x);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
#endif
        x ^= f * PL_BYTES;
        uint64_t z = ((x - PL_BYTES) & ~x & (0x80 * PL_BYTES)) >> 7;
        m |= (uint32_t)((z * 0x0102040810204080ull) >> 56) << (8 * half);
    }
    return m;
#endif
}

/* The block of set in a dense level's blocks (at mem, stride bytes each), its dirty flags
 * (dirty_off bytes into it) and its tags (tag_off). */
PL_HOT struct pl_set *pl_set_at(char *mem, uint64_t stride, uint64_t set)
{
    return (struct pl_set *)(void *)(mem + set * stride);
}
PL_HOT uint8_t *pl_set_dirty(struct pl_set *s, uint32_t dirty_off)
{
    return (uint8_t *)s + dirty_off;
}
PL_HOT uint64_t *pl_set_tags(struct pl_set *s, uint32_t tag_off)
{
    return (uint64_t *)(void *)((char *)s + tag_off);
}
PL_HOT struct pl_set *pl_cache_block(const struct pl_cache *c, uint64_t set)
{
    return pl_set_at(c->set_mem, c->stride, set);
}

/* The way of line in set block s, or -1. Sixteen fingerprints are compared at once, and only
 * the candidates' tags are read. */
PL_HOT int pl_cache_find(const struct pl_cache *c, struct pl_set *s, uint64_t line)
{
    const uint64_t *tag = pl_set_tags(s, c->tag_off);
    uint8_t f = pl_cache_fingerprint(line);
    for (uint32_t i = 0; i < c->ways; i += 16) {
        uint32_t m = pl_match16(s->fp + i, f);
        if (i + 16 >= c->ways)
            m &= c->fp_last;
        for (; m; m &= m - 1) {
            uint32_t w = i + (uint32_t)__builtin_ctz(m);
            if (tag[w] == line)
                return (int)w;
        }
    }
    return -1;
}

void pl_cache_plru_touch(uint64_t *bits, unsigned depth, uint32_t way);

#define PL_NIBBLES 0x1111111111111111ull

/* Move way w to the front of a set's order word (w is among its valid positions). SWAR: the
 * lowest nibble equal to w is found by a zero-nibble test of order ^ (w in every nibble), whose
 * false positives (borrows) only ever lie above the true match. */
PL_HOT void pl_cache_order_touch(uint64_t *order, uint32_t w)
{
    uint64_t o = *order, x = o ^ (w * PL_NIBBLES);
    unsigned pos = (unsigned)__builtin_ctzll((x - PL_NIBBLES) & ~x & (8 * PL_NIBBLES)) - 3;
    uint64_t before = (1ull << pos) - 1;        /* the nibbles in front of w */
    uint64_t through = (2ull << (pos + 3)) - 1; /* and w's own (all ones when pos is 60) */
    *order = (o & ~through) | (o & before) << 4 | w;
}

/* Count a miss of line, and classify it (pl_cache_classify). *victim, the tag line replaces
 * (when evicted), is read only to classify: without classification its host cache line, cold in
 * a large level, is only written. */
PL_HOT void pl_cache_count_miss(struct pl_cache *c, uint64_t line, int is_write, uint32_t *when,
                                int evicted, const uint64_t *victim)
{
    c->n.read_misses += !is_write;
    c->n.write_misses += is_write != 0;
    if (__builtin_expect(c->seen != NULL, 0))
        pl_cache_classify(c, line, when, evicted, *victim, when ? *when : 0);
}

/* Line (not PL_NO_LINE) fills way w of set (block s) of a dense level on a miss: the eviction
 * of its line before (when evicted), the miss and its class counted, tag and fingerprint
 * written. Returns the way's dirty flag, not yet set. */
PL_HOT uint8_t *pl_cache_install(struct pl_cache *c, struct pl_set *s, uint64_t set, uint32_t w,
                                 uint64_t line, int is_write, int evicted)
{
    uint8_t *d = pl_set_dirty(s, c->dirty_off) + w;
    uint64_t *tag = pl_set_tags(s, c->tag_off) + w;
    if (evicted) {
        c->n.evictions++;
        c->n.writebacks += *d;
    }
    uint32_t *when = c->when ? &c->when[set * c->ways + w] : NULL;
    pl_cache_count_miss(c, line, is_write, when, evicted, tag);
    *tag = line;
    s->fp[w] = pl_cache_fingerprint(line);
    return d;
}

/* The miss of line (not PL_NO_LINE) in set of a dense level under LRU with its order in one
 * word per set: it takes the next free way, or the least recently used one's, and becomes the
 * most recent. Returns PL_SIM_EVICT or 0; *dirty is its dirty flag. */
PL_HOT int pl_cache_fill_lru(struct pl_cache *c, uint64_t set, uint64_t line, int is_write,
                             uint8_t **dirty)
{
    struct pl_set *s = pl_cache_block(c, set);
    uint64_t order = s->word;
    uint32_t w = s->fill;
    int out = 0;
    if (w < c->ways) {
        s->fill = w + 1;
    } else {
        w = (uint32_t)(order >> 4 * (c->ways - 1)) & 15;
        out = PL_SIM_EVICT;
    }
    uint8_t *d = pl_cache_install(c, s, set, w, line, is_write, out);
    s->word = order << 4 | w;
    *d = (uint8_t)(is_write != 0);
    *dirty = d;
    c->mru_line = line;
    c->mru_dirty = d;
    c->mru_valid = 1;
    if (__builtin_expect(c->shadow != NULL, 0) && pl_shadow_full(c->shadow))
        pl_cache_renumber(c);
    return out;
}

/* The shadow's part of a hit on a line whose stamp is *when (c->shadow is not NULL). */
PL_HOT void pl_cache_shadow_hit(struct pl_cache *c, uint32_t *when)
{
    pl_shadow_touch(c->shadow, when);
    if (pl_shadow_full(c->shadow))
        pl_cache_renumber(c);
}

/* Bookkeeping of a hit on way w of a dense set (block s). */
PL_HOT int pl_cache_hit(struct pl_cache *c, uint64_t line, uint64_t set, struct pl_set *s, int w,
                        int is_write, uint8_t **dirty)
{
    uint64_t slot = set * c->ways + (uint64_t)w;
    if (c->policy == PL_POLICY_LRU && c->ordered)
        pl_cache_order_touch(&s->word, (uint32_t)w);
    else if (c->policy == PL_POLICY_LRU)
        c->stamp[slot] = ++c->clock;
    else if (c->policy == PL_POLICY_PLRU)
        pl_cache_plru_touch(&s->word, c->plru_depth, (uint32_t)w);
    if (c->shadow)
        pl_cache_shadow_hit(c, &c->when[slot]);
    uint8_t *d = pl_set_dirty(s, c->dirty_off) + w;
    *d |= (uint8_t)(is_write != 0);
    *dirty = d;
    c->mru_line = line;
    c->mru_dirty = *dirty;
    c->mru_valid = 1;
    return PL_SIM_HIT;
}

/* The lookup of line in set of a dense level, after the MRU check. */
PL_HOT int pl_cache_lookup(struct pl_cache *c, uint64_t set, uint64_t line, int is_write,
                           uint8_t **dirty)
{
    struct pl_set *s = pl_cache_block(c, set);
    int w = line == PL_NO_LINE ? -1 : pl_cache_find(c, s, line);
    if (w < 0)
        return pl_cache_miss(c, set, line, is_write, dirty);
    return pl_cache_hit(c, line, set, s, w, is_write, dirty);
}

/* Look up one line (page) number, fill it on a miss, count it. Returns PL_SIM_HIT and/or
 * PL_SIM_EVICT; *dirty points at the line's dirty flag until the next access to this cache. */
PL_HOT int pl_cache_access(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty)
{
    if (is_write)
        c->n.writes++;
    else
        c->n.reads++;
    if (line == c->mru_line && c->mru_valid) {
        *c->mru_dirty |= (uint8_t)(is_write != 0);
        *dirty = c->mru_dirty;
        return PL_SIM_HIT;
    }
    if (!c->masked)
        return pl_cache_access_other(c, line, is_write, dirty);
    return pl_cache_lookup(c, line & c->set_mask, line, is_write, dirty);
}

#pragma GCC visibility pop

#endif
