/* Miss classification (Hill's three Cs) for one cache level. Private to csrc/sim.
 *   compulsory: the first access to the line ever (a first-touch set remembers every line);
 *   conflict:   not compulsory, and a fully associative LRU cache with the same number of lines
 *               (the shadow, fed every access of the level) would have hit;
 *   capacity:   not compulsory, and the shadow missed too.
 * The shadow's LRU list also serves as the store of wide fully associative LRU caches. */
#ifndef PL_CLASSIFY_H
#define PL_CLASSIFY_H

#include <errno.h>
#include <stdint.h>

/* Internal to the simulator: calls bind inside the module and may be inlined. */
#pragma GCC visibility push(hidden)

/* Lines per first-touch bitmap chunk: 512 bits are 64 bytes, one host cache line, and cover
 * 32 KiB of 64-byte lines, so dense traces need few chunks and sparse ones waste little. */
#define PL_SEEN_CHUNK_SHIFT 9
#define PL_SEEN_CHUNK_WORDS ((1u << PL_SEEN_CHUNK_SHIFT) / 64)
/* Initial first-touch table: grows by doubling, so the start only needs to be small. */
#define PL_SEEN_INITIAL_SLOTS 64
/* The shadow's first table: 2^14 slots (256 KiB). A shadow of up to 4096 lines (an L1's, or
 * the list of a wide fully associative set) needs no more, so it is allocated whole and never
 * grows; a larger one starts here and doubles with the lines it holds. */
#define PL_LRU_FIRST_BITS 14

/* A hash table slot holds the tag itself, so a probe reads one host cache line. */
struct pl_lru_slot {
    uint64_t tag;
    uint32_t node; /* the line's node; 0 = empty */
    uint32_t home; /* the tag's home slot: deletion need not hash again */
};

struct pl_lru_node {
    uint32_t prev, next; /* towards the most and the least recent line */
    uint32_t slot;       /* where the node's line sits in the hash table: deletion needs no
                            search */
    uint32_t unused;
};

/* A slot of the first-touch table: chunk number -> index + 1 of its bitmap (0 = empty). */
struct pl_seen_slot {
    uint64_t key;
    uint64_t idx;
};

struct pl_classifier {
    /* Shadow: a fully associative LRU list of cap lines, found through an open-addressing hash
     * table with linear probing and backward-shift deletion, at most a quarter full while the
     * table is small enough to stay in the host's caches, at most half full beyond that. Node
     * 0 is the sentinel of the circular list; lines live in nodes 1 .. used. The nodes and the
     * table grow (doubling) with the lines held, so memory follows the lines touched, not
     * cap; reset shrinks them back. */
    uint32_t cap, used;
    uint32_t nodes; /* nodes allocated, the sentinel included */
    struct pl_lru_node *node;
    struct pl_lru_slot *slot;
    uint64_t slot_mask;
    unsigned slot_shift; /* hash = (key * golden) >> slot_shift */
    unsigned first_bits; /* log2 slots after init and reset */
    unsigned full_bits;  /* log2 slots when cap lines are held: the table grows no further */
    uint64_t slot_limit; /* lines the table may hold before it doubles */
    int err;             /* -ENOMEM once the shadow could not grow (it then holds fewer lines) */
    /* First-touch set: open addressing, doubled when half full; the bitmaps live in one array
     * that also doubles. */
    struct pl_seen_slot *chunk;
    uint64_t chunk_mask;
    unsigned chunk_shift;
    uint64_t chunks;   /* chunks in use */
    uint64_t *bits;    /* PL_SEEN_CHUNK_WORDS words per chunk */
    uint64_t bits_cap; /* chunks the bits array has room for */
    uint64_t last_key; /* one-entry cache of the last chunk looked up */
    uint64_t last_idx; /* its bitmap index + 1, 0 = none */
};

/* 0, -EINVAL or -ENOMEM (nothing left allocated). 1 <= cap < UINT32_MAX lines. */
int pl_classifier_init(struct pl_classifier *k, uint32_t cap);
void pl_classifier_free(struct pl_classifier *k);
/* Empty again, with the memory of a fresh classifier (never fails: when a smaller table cannot
 * be had, the grown one is cleared instead). */
void pl_classifier_reset(struct pl_classifier *k);
/* --- the shadow's hot path, inline --- */

/* Groups of 2^PL_LRU_GROUP_SHIFT consecutive lines hash together and sit side by side, so a
 * sequential walk probes one host cache line per group instead of one per line, while strides
 * (the usual conflict-miss experiments) still scatter. Even an L1's small table gains: a
 * simulated workload's own data competes with it for the host's L1. */
#define PL_LRU_GROUP_SHIFT 2
#define PL_LRU_GOLDEN 0x9E3779B97F4A7C15ull /* Fibonacci hashing: 2^64 / golden ratio */

/* Home slot of a line: its group's hash (the top bits of a product), then its place in the
 * group. */
static inline uint64_t pl_lru_home(const struct pl_classifier *k, uint64_t line)
{
    unsigned g = PL_LRU_GROUP_SHIFT;
    uint64_t group = ((line >> g) * PL_LRU_GOLDEN) >> (k->slot_shift + g);
    return (group << g | (line & ((1u << g) - 1))) & k->slot_mask;
}

/* The list is circular through the sentinel node 0: its next is the head (most recent), its
 * prev the tail, so linking and unlinking need no tests. */
static inline void pl_lru_unlink(struct pl_lru_node *node, uint32_t n)
{
    uint32_t p = node[n].prev, q = node[n].next;
    node[p].next = q;
    node[q].prev = p;
}

static inline void pl_lru_push_front(struct pl_lru_node *node, uint32_t n)
{
    uint32_t head = node[0].next;
    node[n].prev = 0;
    node[n].next = head;
    node[head].prev = n;
    node[0].next = n;
}

/* Look line (home slot h) up. A hit becomes the most recent line: its node (>= 1). A miss: 0,
 * and *free_slot is the empty slot that ends its probe run. */
static inline uint32_t pl_lru_find(struct pl_classifier *k, uint64_t line, uint64_t h,
                                   uint64_t *free_slot)
{
    uint64_t i = h;
    for (; k->slot[i].node; i = (i + 1) & k->slot_mask) {
        if (k->slot[i].tag == line) {
            uint32_t n = k->slot[i].node;
            if (k->node[0].next != n) {
                pl_lru_unlink(k->node, n);
                pl_lru_push_front(k->node, n);
            }
            return n;
        }
    }
    *free_slot = i;
    return 0;
}

/* The miss path: line enters at the front, in free slot i of home h (as pl_lru_find left
 * them), replacing the least recently used line when the list is full (*evicted), or when it
 * could not grow (k->err). Its node. */
uint32_t pl_lru_insert(struct pl_classifier *k, uint64_t line, uint64_t h, uint64_t i,
                       int *evicted);

/* Record an access in the shadow; 1 if the shadow held the line (a shadow hit), else 0. */
static inline int pl_shadow_access(struct pl_classifier *k, uint64_t line)
{
    uint64_t h = pl_lru_home(k, line), i;
    if (pl_lru_find(k, line, h, &i))
        return 1;
    int evicted;
    pl_lru_insert(k, line, h, i, &evicted);
    return 0;
}

/* The same list as an exact fully associative LRU cache in its own right (of at most 4096
 * lines: allocated whole, it never grows and never fails): also gives the node (0 .. cap-1)
 * that holds the line now, and whether a miss replaced another line there. */
int pl_lru_access(struct pl_classifier *k, uint64_t line, uint32_t *node, int *evicted);

/* The bitmap of first-touch chunk key (index + 1), created if new; 0 when out of memory. */
uint64_t pl_seen_chunk(struct pl_classifier *k, uint64_t key);

/* Mark line touched; 1 if it was touched before, 0 if this is the first time, -ENOMEM if the
 * set could not grow (the line is then not recorded). Inline: a run of misses in one chunk
 * costs a compare and a bit test each. */
static inline int pl_seen_test_and_set(struct pl_classifier *k, uint64_t line)
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

#pragma GCC visibility pop

#endif
