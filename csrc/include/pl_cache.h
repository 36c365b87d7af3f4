/* One set-associative array of tags with a replacement policy: a cache level (tags are line
 * numbers) or a TLB (tags are page numbers). Private to csrc/sim; the hit path is inline. */
#ifndef PL_CACHE_H
#define PL_CACHE_H

#include <stdint.h>

#include "pl_classify.h"
#include "pl_sim.h"

/* Internal to the simulator: calls bind inside the module and may be inlined. */
#pragma GCC visibility push(hidden)

/* Widest set searched by a linear scan: beyond it a scan costs more than a hash lookup. */
#define PL_CACHE_SCAN_WAYS 16
/* Widest set whose LRU/FIFO order fits one 64-bit word of 4-bit way numbers. */
#define PL_CACHE_ORDER_WAYS 16

/* Tag of an empty slot. Only a 1-byte-line cache could see it as a real line number (address
 * 2^64 - 1); pl_cache_access sends that one address down the careful path. */
#define PL_NO_LINE UINT64_MAX

struct pl_cache {
    unsigned shift; /* log2 bytes per line (per page for a TLB) */
    uint32_t ways;
    uint64_t set_mask; /* sets - 1 */
    int policy;        /* PL_POLICY_* */
    /* Per set, ways slots starting at set * ways; slots [0, fill[set]) are valid (the model
     * never invalidates a line, so the valid slots stay a prefix). */
    uint64_t *tag;
    uint8_t *fp; /* per slot, the fingerprint of its tag (pl_cache_find), and 8 spare bytes */
    /* LRU and FIFO order of each set of at most PL_CACHE_ORDER_WAYS ways: its way numbers in
     * 4-bit nibbles, most recently used (filled) first, so a lookup needs neither a search for
     * the victim nor a stamp per slot. Positions at and beyond fill[set] hold leftovers, which
     * the lowest-match search below never reaches. NULL for wider sets, which use stamp, and under
     * PLRU and random. */
    uint64_t *order;
    uint64_t *stamp; /* wide LRU: time of last use; wide FIFO: time of fill; else NULL */
    uint8_t *dirty;
    uint32_t *fill;
    uint64_t *plru;      /* PLRU: tree bits per set; bit n set = the victim is right of node n */
    unsigned plru_depth; /* log2 ways */
    uint64_t clock;      /* stamps: one tick per access that changes one */
    uint64_t seed, rng;  /* RANDOM: xorshift64* state, rewound to seed on reset */
    /* The most recently accessed line and its slot. Accessing it again changes no replacement
     * state under any policy (nor the classification shadow, where it is the head), so that
     * hit needs no lookup. mru_valid is 0 after a reset. */
    uint64_t mru_line, mru_slot;
    int mru_valid;
    /* One set of more than PL_CACHE_SCAN_WAYS ways under LRU (AMD's fully associative
     * DTLBs, say): an exact LRU list with a hash index replaces the linear scans, and slot
     * numbers are its node numbers. NULL otherwise. */
    struct pl_classifier *fa;
    struct pl_classifier *cls; /* NULL without classification */
    int err;                   /* -ENOMEM once classification could not grow */
    struct pl_sim_counts n;
};

/* lines = sets * ways. 0, -EINVAL or -ENOMEM (then nothing is left allocated). */
int pl_cache_init(struct pl_cache *c, uint64_t lines, uint32_t ways, unsigned shift, int policy,
                  uint64_t seed, int classify);
void pl_cache_free(struct pl_cache *c);
void pl_cache_reset(struct pl_cache *c);
/* The miss path of pl_cache_access (and its careful path for line == PL_NO_LINE). */
int pl_cache_miss(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty, int shadow_hit);
/* pl_cache_access for a cache with an fa list. */
int pl_cache_fa_access(struct pl_cache *c, uint64_t line, int is_write, uint8_t **dirty,
                       int shadow_hit);

/* Forced inline: the slow path of every access runs through these. */
#define PL_HOT static inline __attribute__((always_inline))

#define PL_BYTES 0x0101010101010101ull

/* A line's one-byte fingerprint: the top byte of a multiplicative hash, so lines that share a
 * set (they differ only above the set bits) still differ here. */
PL_HOT uint8_t pl_cache_fingerprint(uint64_t line)
{
    return (uint8_t)((line * 0x9E3779B97F4A7C15ull) >> 56);
}

/* The way of line in the set at slot base, or -1. Eight fingerprints are compared at once
 * (SWAR: a zero-byte test of their xor with the line's; its false positives, borrows, only lie
 * above a true match), and only the candidates' tags are read. */
PL_HOT int pl_cache_find(const struct pl_cache *c, uint64_t base, uint64_t line)
{
    uint64_t f = pl_cache_fingerprint(line) * PL_BYTES;
    for (uint32_t i = 0; i < c->ways; i += 8) {
        uint64_t x;
        __builtin_memcpy(&x, c->fp + base + i, sizeof x);
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
        x = __builtin_bswap64(x);
#endif
        x ^= f;
        for (uint64_t z = (x - PL_BYTES) & ~x & (0x80 * PL_BYTES); z; z &= z - 1) {
            uint32_t w = i + (uint32_t)__builtin_ctzll(z) / 8;
            if (w < c->ways && c->tag[base + w] == line)
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

/* Bookkeeping of a hit on slot base + w of line's set. */
PL_HOT int pl_cache_hit(struct pl_cache *c, uint64_t line, uint64_t base, int w, int is_write,
                        uint8_t **dirty)
{
    uint64_t slot = base + (uint64_t)w;
    if (c->policy == PL_POLICY_LRU && c->order)
        pl_cache_order_touch(&c->order[line & c->set_mask], (uint32_t)w);
    else if (c->policy == PL_POLICY_LRU)
        c->stamp[slot] = ++c->clock;
    else if (c->policy == PL_POLICY_PLRU)
        pl_cache_plru_touch(&c->plru[line & c->set_mask], c->plru_depth, (uint32_t)w);
    c->dirty[slot] |= (uint8_t)(is_write != 0);
    *dirty = &c->dirty[slot];
    c->mru_line = line;
    c->mru_slot = slot;
    c->mru_valid = 1;
    return PL_SIM_HIT;
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
        c->dirty[c->mru_slot] |= (uint8_t)(is_write != 0);
        *dirty = &c->dirty[c->mru_slot];
        return PL_SIM_HIT;
    }
    int shadow_hit = c->cls ? pl_shadow_access(c->cls, line) : 0;
    if (c->fa)
        return pl_cache_fa_access(c, line, is_write, dirty, shadow_hit);
    uint64_t base = (line & c->set_mask) * c->ways;
    int w = line == PL_NO_LINE ? -1 : pl_cache_find(c, base, line);
    if (w < 0)
        return pl_cache_miss(c, line, is_write, dirty, shadow_hit);
    return pl_cache_hit(c, line, base, w, is_write, dirty);
}

#pragma GCC visibility pop

#endif
