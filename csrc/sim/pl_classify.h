/* Miss classification (Hill's three Cs) for one cache level, and the exact LRU list of wide fully
 * associative sets. Private to csrc/sim.
 *   compulsory: the first access to the line ever (a first-touch set remembers every line);
 *   conflict:   not compulsory, and a fully associative LRU cache with the same number of lines
 *               (the shadow, fed every access of the level) would have hit;
 *   capacity:   not compulsory, and the shadow missed too.
 *
 * The shadow keeps no list. Every access gives its line the next stamp of a clock; the shadow
 * holds the cap lines with the latest stamps, so a line is in it exactly when its stamp is at
 * least tail, the stamp of the least recently used line it holds. A ring of bits over stamps
 * marks the live ones (each the latest stamp of a line it holds): when that line leaves or is
 * used again, the next tail is the next set bit. A stamp lives beside its line: in the level's
 * own slot (the cache finds the line anyway, so a hit costs no lookup), or, for a line the level
 * evicted while the shadow still holds it, in a small hash table of exiles, which only the
 * level's misses look up. Stamps that fall below tail are dead where they lie. When the clock
 * runs a whole ring ahead of tail, every stamp is renumbered in order (pl_cache_renumber), which
 * a ring 32 times the lines held makes rare. */
#ifndef PL_CLASSIFY_H
#define PL_CLASSIFY_H

#include <errno.h>
#include <stdint.h>

/* Internal to the simulator: calls bind inside the module and may be inlined. */
#pragma GCC visibility push(hidden)

#define PL_GOLDEN 0x9E3779B97F4A7C15ull /* Fibonacci hashing: 2^64 / golden ratio */

/* --- first-touch set ---------------------------------------------------------------------- */

/* Lines per first-touch bitmap chunk: 512 bits are 64 bytes, one host cache line, and cover
 * 32 KiB of 64-byte lines, so dense traces need few chunks and sparse ones waste little. */
#define PL_SEEN_CHUNK_SHIFT 9
#define PL_SEEN_CHUNK_WORDS ((1u << PL_SEEN_CHUNK_SHIFT) / 64)
/* Initial first-touch table: grows by doubling, so the start only needs to be small. */
#define PL_SEEN_INITIAL_SLOTS 64

/* A slot of the first-touch table: chunk number -> index + 1 of its bitmap (0 = empty). */
struct pl_seen_slot {
    uint64_t key;
    uint64_t idx;
};

/* Open addressing, doubled when half full; the bitmaps live in one array that also doubles. */
struct pl_seen {
    struct pl_seen_slot *chunk;
    uint64_t chunk_mask;
    unsigned chunk_shift;
    uint64_t chunks;   /* chunks in use */
    uint64_t *bits;    /* PL_SEEN_CHUNK_WORDS words per chunk */
    uint64_t bits_cap; /* chunks the bits array has room for */
    uint64_t last_key; /* one-entry cache of the last chunk looked up */
    uint64_t last_idx; /* its bitmap index + 1, 0 = none */
};

/* 0 or -ENOMEM (nothing left allocated). */
int pl_seen_init(struct pl_seen *k);
void pl_seen_free(struct pl_seen *k);
/* Empty again, with the memory of a fresh set where it can be had. */
void pl_seen_reset(struct pl_seen *k);
/* The bitmap of first-touch chunk key (index + 1), created if new; 0 when out of memory. */
uint64_t pl_seen_chunk(struct pl_seen *k, uint64_t key);

/* Mark line touched; 1 if it was touched before, 0 if this is the first time, -ENOMEM if the
 * set could not grow (the line is then not recorded). Inline: a run of misses in one chunk
 * costs a compare and a bit test each. */
static inline int pl_seen_test_and_set(struct pl_seen *k, uint64_t line)
{
    uint64_t key = line >> PL_SEEN_CHUNK_SHIFT;
    uint64_t idx = k->last_idx && k->last_key == key ? k->last_idx : pl_seen_chunk(k, key);
    if (!idx)
        return -ENOMEM;
    k->last_key = key;
    k->last_idx = idx;
    unsigned bit = (unsigned)(line & ((1u << PL_SEEN_CHUNK_SHIFT) - 1));
    uint64_t *w = &k->bits[(idx - 1) * PL_SEEN_CHUNK_WORDS + bit / 64];
    uint64_t m = 1ull << (bit % 64);
    int was = (*w & m) != 0;
    *w |= m;
    return was;
}

/* --- the shadow ---------------------------------------------------------------------------- */

/* A line out of the level but still in the shadow, and its stamp. */
struct pl_exile {
    uint64_t line;
    uint32_t when; /* 0: an empty slot */
    uint32_t unused;
};

struct pl_shadow {
    uint32_t lines;     /* lines of the level */
    uint32_t cap;       /* the shadow's capacity: lines, less only once memory ran out */
    uint32_t live;      /* lines it holds */
    uint32_t now;       /* the next stamp (stamps start at 1; 0 is never live) */
    uint32_t tail;      /* the least recently used line's stamp: held means stamp >= tail */
    uint64_t *ring;     /* bit s & ring_mask set: stamp s in [tail, now) is live */
    uint32_t *rank;     /* per ring word, for renumbering: the new stamp of its first live bit */
    uint32_t ring_mask; /* ring bits - 1; now - tail stays within it */
    uint32_t min_bits;  /* log2 of the ring's bits after a reset */
    /* Exiles: open addressing, linear probing, backward-shift deletion; dead ones (stamp below
     * tail) are dropped when the table fills and when stamps are renumbered. */
    struct pl_exile *ex;
    uint64_t ex_mask;
    unsigned ex_shift;
    uint64_t ex_used; /* entries, dead ones included */
    int err;          /* -ENOMEM once an exile found no room (its line then counts as gone) */
};

/* 0, -EINVAL or -ENOMEM (nothing left allocated). 1 <= cap <= PL_SIM_MAX_LINES; ring_bits
 * (log2) for a level whose lines are all allocated up front, which must cover 32 * cap for
 * renumbering to stay rare; a lazy level starts smaller and grows it (pl_shadow_renumber). */
int pl_shadow_init(struct pl_shadow *k, uint32_t cap, unsigned ring_bits);
void pl_shadow_free(struct pl_shadow *k);
/* Empty again (the clock back to 1); the level resets its own stamps to 0. */
void pl_shadow_reset(struct pl_shadow *k);

static inline void pl_ring_flip(const struct pl_shadow *k, uint32_t s)
{
    uint32_t bit = s & k->ring_mask;
    k->ring[bit >> 6] ^= 1ull << (bit & 63);
}

/* The first live stamp after the word of s (pl_shadow_next's scan). */
uint32_t pl_shadow_scan(const struct pl_shadow *k, uint32_t s);

/* The next live stamp after s: there is one (the latest access's), within a ring of s. */
static inline __attribute__((always_inline)) uint32_t pl_shadow_next(const struct pl_shadow *k,
                                                                     uint32_t s)
{
    uint32_t bit = (s + 1) & k->ring_mask;
    uint64_t w = k->ring[bit >> 6] >> (bit & 63);
    return w ? s + 1 + (uint32_t)__builtin_ctzll(w) : pl_shadow_scan(k, s);
}

/* An access to a line whose stamp is *when (0, or any stamp below tail: not in the shadow).
 * *when becomes the newest stamp. 1 if the shadow held the line (it would have hit). */
static inline __attribute__((always_inline)) int pl_shadow_touch(struct pl_shadow *k,
                                                                 uint32_t *when)
{
    uint32_t s = *when, t = k->now++;
    *when = t;
    pl_ring_flip(k, t);
    if (s >= k->tail) {
        pl_ring_flip(k, s);
        if (s == k->tail)
            k->tail = pl_shadow_next(k, s);
        return 1;
    }
    if (k->live < k->cap) {
        k->live++;
    } else { /* the least recently used line leaves; its stamp, wherever it is, is dead */
        pl_ring_flip(k, k->tail);
        k->tail = pl_shadow_next(k, k->tail);
    }
    return 0;
}

/* 1 when the clock is nearly a ring ahead of tail: renumber before the next access. The word
 * of bits before a ring's end never wraps around onto tail's word, so each word of the ring
 * holds stamps of one stretch of the clock (pl_shadow_restamp ranks them by word). */
static inline int pl_shadow_full(const struct pl_shadow *k)
{
    return k->now - k->tail > k->ring_mask - 64;
}

/* The stamp of an exiled line, taken out of the exiles (the level holds it again), or 0. */
uint32_t pl_shadow_recall(struct pl_shadow *k, uint64_t line);
static inline uint32_t pl_shadow_return(struct pl_shadow *k, uint64_t line)
{
    return k->ex_used ? pl_shadow_recall(k, line) : 0;
}
/* The level evicted line, whose stamp was when: kept among the exiles if the shadow holds it. */
void pl_shadow_exile(struct pl_shadow *k, uint64_t line, uint32_t when);

/* Renumbering, by the level that holds the stamps: begin, the new stamp of every stamp the
 * level holds (new stamps keep their order, from 1; the dead become 0), end, which renumbers
 * the exiles. grow: the level's lines held, for a lazy level, whose ring then grows to at
 * least 32 times as many bits where memory allows (0: the ring stays as it is). */
void pl_shadow_renumber_begin(struct pl_shadow *k);
static inline uint32_t pl_shadow_restamp(const struct pl_shadow *k, uint32_t s)
{
    if (s < k->tail)
        return 0;
    uint32_t bit = s & k->ring_mask, word = bit >> 6;
    uint64_t below = k->ring[word] & ((1ull << (bit & 63)) - 1);
    return k->rank[word] + (uint32_t)__builtin_popcountll(below);
}
void pl_shadow_renumber_end(struct pl_shadow *k, uint64_t grow);

/* --- the LRU list of wide fully associative sets ------------------------------------------- */

/* A hash table slot holds the tag itself, so a probe reads one host cache line. */
struct pl_lru_slot {
    uint64_t tag;
    uint32_t node; /* the line's node; 0 = empty */
    uint32_t home; /* the tag's home slot: deletion need not hash again */
};

struct pl_lru_node {
    uint32_t prev, next; /* towards the most and the least recent line */
    uint32_t slot;       /* where the node's line sits in the hash table */
    uint32_t unused;
};

/* An exact LRU list of cap lines (at most PL_SIM_MAX_WAYS), found through an open-addressing
 * hash table at most a quarter full, with linear probing and backward-shift deletion. Node 0
 * is the sentinel of the circular list; lines live in nodes 1 .. used. Allocated whole. */
struct pl_lru {
    uint32_t cap, used;
    struct pl_lru_node *node;
    struct pl_lru_slot *slot;
    uint64_t slot_mask;
    unsigned slot_shift; /* hash = (key * golden) >> slot_shift */
};

/* 0, -EINVAL or -ENOMEM (nothing left allocated). 1 <= cap <= PL_SIM_MAX_WAYS. */
int pl_lru_init(struct pl_lru *k, uint32_t cap);
void pl_lru_free(struct pl_lru *k);
void pl_lru_reset(struct pl_lru *k);
/* Look line up; a miss enters it at the front, replacing the least recently used line when
 * the list is full (*evicted, and *old is that line). 1 on a hit. *node (0 .. cap-1) holds the
 * line now. */
int pl_lru_access(struct pl_lru *k, uint64_t line, uint32_t *node, int *evicted, uint64_t *old);

#pragma GCC visibility pop

#endif
