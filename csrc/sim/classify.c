#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pl_classify.h"
#include "pl_simmem.h"

static unsigned log2_ceil(uint64_t x)
{
    unsigned b = 0;
    while ((1ull << b) < x)
        b++;
    return b;
}

static uint64_t home(uint64_t key, unsigned shift)
{
    return (key * PL_GOLDEN) >> shift; /* Fibonacci hashing: keep the top bits */
}

/* --- first-touch set ------------------------------------------------------------------------ */

int pl_seen_init(struct pl_seen *k)
{
    memset(k, 0, sizeof *k);
    k->chunk = pl_big_alloc(PL_SEEN_INITIAL_SLOTS, sizeof *k->chunk);
    k->bits_cap = PL_SEEN_INITIAL_SLOTS / 2;
    k->bits = pl_big_alloc(k->bits_cap * PL_SEEN_CHUNK_WORDS, sizeof *k->bits);
    if (!k->chunk || !k->bits) {
        pl_seen_free(k);
        return -ENOMEM;
    }
    k->chunk_mask = PL_SEEN_INITIAL_SLOTS - 1;
    pl_seen_reset(k);
    return 0;
}

void pl_seen_free(struct pl_seen *k)
{
    free(k->chunk);
    free(k->bits);
    memset(k, 0, sizeof *k);
}

void pl_seen_reset(struct pl_seen *k)
{
    /* a grown table goes back to the first size; when that cannot be had, it is cleared */
    if (k->chunk_mask + 1 > PL_SEEN_INITIAL_SLOTS) {
        struct pl_seen_slot *chunk = pl_big_alloc(PL_SEEN_INITIAL_SLOTS, sizeof *chunk);
        if (chunk) {
            free(k->chunk);
            k->chunk = chunk;
            k->chunk_mask = PL_SEEN_INITIAL_SLOTS - 1;
        }
    }
    memset(k->chunk, 0, (k->chunk_mask + 1) * sizeof *k->chunk);
    k->chunk_shift = 64 - log2_ceil(k->chunk_mask + 1);
    if (k->bits_cap > PL_SEEN_INITIAL_SLOTS / 2) {
        uint64_t *bits = pl_big_resize(k->bits, 0, PL_SEEN_INITIAL_SLOTS / 2 * PL_SEEN_CHUNK_WORDS,
                                       sizeof *bits);
        if (bits) {
            k->bits = bits;
            k->bits_cap = PL_SEEN_INITIAL_SLOTS / 2;
        }
    }
    k->chunks = 0;
    k->last_idx = 0;
}

static int grow_chunk_table(struct pl_seen *k)
{
    uint64_t old_size = k->chunk_mask + 1, size = old_size * 2;
    struct pl_seen_slot *chunk = pl_big_zalloc(size, sizeof *chunk);
    if (!chunk)
        return -ENOMEM;
    unsigned shift = k->chunk_shift - 1;
    for (uint64_t i = 0; i < old_size; i++) {
        if (!k->chunk[i].idx)
            continue;
        uint64_t j = home(k->chunk[i].key, shift);
        while (chunk[j].idx)
            j = (j + 1) & (size - 1);
        chunk[j] = k->chunk[i];
    }
    free(k->chunk);
    k->chunk = chunk;
    k->chunk_mask = size - 1;
    k->chunk_shift = shift;
    return 0;
}

uint64_t pl_seen_chunk(struct pl_seen *k, uint64_t key)
{
    uint64_t i = home(key, k->chunk_shift);
    for (; k->chunk[i].idx; i = (i + 1) & k->chunk_mask)
        if (k->chunk[i].key == key)
            return k->chunk[i].idx;
    if (2 * (k->chunks + 1) > k->chunk_mask + 1) {
        if (grow_chunk_table(k))
            return 0;
        i = home(key, k->chunk_shift);
        while (k->chunk[i].idx)
            i = (i + 1) & k->chunk_mask;
    }
    if (k->chunks == k->bits_cap) {
        uint64_t words = k->chunks * PL_SEEN_CHUNK_WORDS;
        uint64_t *bits = pl_big_resize(k->bits, words, 2 * words, sizeof *bits);
        if (!bits)
            return 0;
        k->bits = bits;
        k->bits_cap *= 2;
    }
    memset(k->bits + k->chunks * PL_SEEN_CHUNK_WORDS, 0, PL_SEEN_CHUNK_WORDS * sizeof *k->bits);
    k->chunk[i].key = key;
    k->chunk[i].idx = ++k->chunks;
    return k->chunks;
}

/* --- the shadow ----------------------------------------------------------------------------- */

/* The smallest ring: 64 words, so the ring is always far wider than the word renumbering
 * keeps free at its end. */
#define MIN_RING_BITS 12
/* The exile table's first size; it doubles when live exiles fill a quarter of it. */
#define EXILE_FIRST_BITS 6

/* A cleared ring of 2^bits bits and its rank table; 0 or -ENOMEM (nothing changed). */
static int set_ring(struct pl_shadow *k, unsigned bits)
{
    uint64_t *ring = pl_big_zalloc(1ull << (bits - 6), sizeof *ring);
    uint32_t *rank = pl_big_alloc(1ull << (bits - 6), sizeof *rank);
    if (!ring || !rank) {
        free(ring);
        free(rank);
        return -ENOMEM;
    }
    free(k->ring);
    free(k->rank);
    k->ring = ring;
    k->rank = rank;
    k->ring_mask = (uint32_t)((1ull << bits) - 1);
    return 0;
}

static int set_exiles(struct pl_shadow *k, unsigned bits)
{
    struct pl_exile *ex = pl_big_zalloc(1ull << bits, sizeof *ex);
    if (!ex)
        return -ENOMEM;
    free(k->ex);
    k->ex = ex;
    k->ex_mask = (1ull << bits) - 1;
    k->ex_shift = 64 - bits;
    k->ex_used = 0;
    return 0;
}

int pl_shadow_init(struct pl_shadow *k, uint32_t cap, unsigned ring_bits)
{
    memset(k, 0, sizeof *k);
    if (cap < 1 || ring_bits > 31)
        return -EINVAL;
    k->lines = cap;
    k->min_bits = ring_bits > MIN_RING_BITS ? ring_bits : MIN_RING_BITS;
    if (set_ring(k, k->min_bits) || set_exiles(k, EXILE_FIRST_BITS)) {
        pl_shadow_free(k);
        return -ENOMEM;
    }
    pl_shadow_reset(k);
    return 0;
}

void pl_shadow_free(struct pl_shadow *k)
{
    free(k->ring);
    free(k->rank);
    free(k->ex);
    memset(k, 0, sizeof *k);
}

void pl_shadow_reset(struct pl_shadow *k)
{
    /* back to the first sizes where they can be had, else the grown ones, cleared */
    if (k->ring_mask + 1ull == 1ull << k->min_bits || set_ring(k, k->min_bits))
        memset(k->ring, 0, (k->ring_mask + 1ull) / 8);
    if (k->ex_mask + 1 == 1u << EXILE_FIRST_BITS || set_exiles(k, EXILE_FIRST_BITS))
        memset(k->ex, 0, (k->ex_mask + 1) * sizeof *k->ex);
    k->ex_used = 0;
    k->cap = k->lines;
    k->live = 0;
    k->now = k->tail = 1;
    k->err = 0;
}

uint32_t pl_shadow_scan(const struct pl_shadow *k, uint32_t s)
{
    uint32_t bit = (s + 1) & k->ring_mask, word = bit >> 6;
    uint32_t first = s + 1 - (bit & 63); /* the stamp of the word's bit 0 */
    uint64_t w;
    do {
        word = (word + 1) & (k->ring_mask >> 6);
        first += 64;
        w = k->ring[word];
    } while (!w);
    return first + (uint32_t)__builtin_ctzll(w);
}

/* Empty slot i, shifting later entries of its probe run back so that no lookup ever stops
 * early at the hole. */
static void exile_delete(struct pl_shadow *k, uint64_t i)
{
    uint64_t mask = k->ex_mask;
    for (uint64_t j = (i + 1) & mask; k->ex[j].when; j = (j + 1) & mask) {
        uint64_t h = home(k->ex[j].line, k->ex_shift);
        /* the entry at j may fill the hole at i unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            k->ex[i] = k->ex[j];
            i = j;
        }
    }
    k->ex[i].when = 0;
    k->ex_used--;
}

uint32_t pl_shadow_recall(struct pl_shadow *k, uint64_t line)
{
    for (uint64_t i = home(line, k->ex_shift); k->ex[i].when; i = (i + 1) & k->ex_mask) {
        if (k->ex[i].line == line) {
            uint32_t when = k->ex[i].when;
            exile_delete(k, i);
            return when;
        }
    }
    return 0;
}

static void exile_put(struct pl_exile *ex, uint64_t mask, unsigned shift, uint64_t line,
                      uint32_t when)
{
    uint64_t i = home(line, shift);
    while (ex[i].when)
        i = (i + 1) & mask;
    ex[i].line = line;
    ex[i].when = when;
}

/* The exiles moved into a table of 2^bits slots, the dead left behind, each stamp renumbered
 * if restamp (a renumbering is in progress). 0 or -ENOMEM (nothing changed). */
static int exile_rebuild(struct pl_shadow *k, unsigned bits, int restamp)
{
    struct pl_exile *old = k->ex;
    uint64_t n = k->ex_mask + 1, used = 0;
    k->ex = NULL;
    if (set_exiles(k, bits)) {
        k->ex = old;
        return -ENOMEM;
    }
    for (uint64_t i = 0; i < n; i++) {
        uint32_t when = old[i].when;
        when = restamp ? pl_shadow_restamp(k, when) : when < k->tail ? 0 : when;
        if (when) {
            exile_put(k->ex, k->ex_mask, k->ex_shift, old[i].line, when);
            used++;
        }
    }
    k->ex_used = used;
    free(old);
    return 0;
}

void pl_shadow_exile(struct pl_shadow *k, uint64_t line, uint32_t when)
{
    if (when < k->tail)
        return; /* the shadow no longer holds it either */
    if (2 * (k->ex_used + 1) > k->ex_mask + 1) {
        /* half full: drop the dead, and double if the live still fill a quarter */
        unsigned bits = 64 - k->ex_shift;
        if (exile_rebuild(k, bits, 0) ||
            (4 * (k->ex_used + 1) > k->ex_mask + 1 && exile_rebuild(k, bits + 1, 0))) {
            if (2 * (k->ex_used + 1) > k->ex_mask + 1) {
                k->err = -ENOMEM; /* no room: the line counts as gone from the shadow */
                return;
            }
        }
    }
    exile_put(k->ex, k->ex_mask, k->ex_shift, line, when);
    k->ex_used++;
}

void pl_shadow_renumber_begin(struct pl_shadow *k)
{
    /* the live bits before each word of the window, in clock order from tail's word, plus 1:
     * the new stamps start at 1 */
    uint32_t words = (k->ring_mask >> 6) + 1;
    uint32_t first = (k->tail & k->ring_mask) >> 6, last = ((k->now - 1) & k->ring_mask) >> 6;
    uint32_t before = 1;
    for (uint32_t w = first;; w = (w + 1) & (words - 1)) {
        k->rank[w] = before;
        before += (uint32_t)__builtin_popcountll(k->ring[w]);
        if (w == last)
            break;
    }
}

void pl_shadow_renumber_end(struct pl_shadow *k, uint64_t grow)
{
    /* exiles: restamped, the dead dropped, at the same size */
    if (exile_rebuild(k, 64 - k->ex_shift, 1))
        k->err = -ENOMEM;
    unsigned bits = (unsigned)__builtin_ctzll(k->ring_mask + 1ull), want = bits;
    grow = grow > k->live ? grow : k->live;
    while (want < 31 && (1ull << want) < 32 * grow)
        want++;
    if (want == bits || set_ring(k, want))
        memset(k->ring, 0, (k->ring_mask + 1ull) / 8);
    /* the live stamps are now 1 .. live; a ring that could not grow to hold them with room to
     * spare keeps only the most recent quarter ring of them (the counts are then incomplete,
     * and stats say so) */
    uint32_t room = (k->ring_mask + 1u) / 4;
    k->tail = 1;
    if (k->live > room) {
        k->err = -ENOMEM;
        k->tail += k->live - room;
        k->cap = k->live = room;
    }
    k->now = k->tail;
    for (uint32_t i = 0; i < k->live; i++)
        pl_ring_flip(k, k->now++);
}

/* --- the LRU list of wide fully associative sets ---------------------------------------------- */

/* Groups of 2^LRU_GROUP_SHIFT consecutive lines hash together and sit side by side, so a
 * sequential walk probes one host cache line per group instead of one per line, while strides
 * still scatter. */
#define LRU_GROUP_SHIFT 2

/* Home slot of a line: its group's hash (the top bits of a product), then its place in the
 * group. */
static uint64_t lru_home(const struct pl_lru *k, uint64_t line)
{
    unsigned g = LRU_GROUP_SHIFT;
    uint64_t group = ((line >> g) * PL_GOLDEN) >> (k->slot_shift + g);
    return (group << g | (line & ((1u << g) - 1))) & k->slot_mask;
}

/* The list is circular through the sentinel node 0: its next is the head (most recent), its
 * prev the tail, so linking and unlinking need no tests. */
static void lru_unlink(struct pl_lru_node *node, uint32_t n)
{
    uint32_t p = node[n].prev, q = node[n].next;
    node[p].next = q;
    node[q].prev = p;
}

static void lru_push_front(struct pl_lru_node *node, uint32_t n)
{
    uint32_t head = node[0].next;
    node[n].prev = 0;
    node[n].next = head;
    node[head].prev = n;
    node[0].next = n;
}

int pl_lru_init(struct pl_lru *k, uint32_t cap)
{
    memset(k, 0, sizeof *k);
    if (cap < 1 || cap > (1u << 20))
        return -EINVAL;
    unsigned bits = log2_ceil(4ull * cap);
    if (bits <= LRU_GROUP_SHIFT)
        bits = LRU_GROUP_SHIFT + 1; /* lru_home shifts by slot_shift + the group < 64 */
    k->cap = cap;
    k->node = pl_big_alloc(cap + 1ull, sizeof *k->node);
    k->slot = pl_big_alloc(1ull << bits, sizeof *k->slot);
    if (!k->node || !k->slot) {
        pl_lru_free(k);
        return -ENOMEM;
    }
    k->slot_mask = (1ull << bits) - 1;
    k->slot_shift = 64 - bits;
    pl_lru_reset(k);
    return 0;
}

void pl_lru_free(struct pl_lru *k)
{
    free(k->node);
    free(k->slot);
    memset(k, 0, sizeof *k);
}

void pl_lru_reset(struct pl_lru *k)
{
    k->used = 0;
    k->node[0].prev = k->node[0].next = 0;
    memset(k->slot, 0, (k->slot_mask + 1) * sizeof *k->slot);
}

/* Empty slot i, shifting later entries of its probe run back; moved entries tell their nodes
 * where they went. */
static void lru_slot_delete(struct pl_lru *k, uint64_t i)
{
    uint64_t mask = k->slot_mask;
    for (uint64_t j = (i + 1) & mask; k->slot[j].node; j = (j + 1) & mask) {
        uint64_t h = k->slot[j].home;
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            k->slot[i] = k->slot[j];
            k->node[k->slot[i].node].slot = (uint32_t)i;
            i = j;
        }
    }
    k->slot[i].node = 0;
}

int pl_lru_access(struct pl_lru *k, uint64_t line, uint32_t *node, int *evicted, uint64_t *old)
{
    uint64_t h = lru_home(k, line), i = h;
    for (; k->slot[i].node; i = (i + 1) & k->slot_mask) {
        if (k->slot[i].tag == line) {
            uint32_t n = k->slot[i].node;
            if (k->node[0].next != n) {
                lru_unlink(k->node, n);
                lru_push_front(k->node, n);
            }
            *node = n - 1;
            *evicted = 0;
            return 1;
        }
    }
    uint32_t n;
    *evicted = k->used == k->cap;
    if (!*evicted) {
        n = ++k->used;
    } else {
        n = k->node[0].prev; /* the least recently used line leaves */
        *old = k->slot[k->node[n].slot].tag;
        lru_slot_delete(k, k->node[n].slot);
        lru_unlink(k->node, n);
        for (i = h; k->slot[i].node; i = (i + 1) & k->slot_mask)
            ; /* the deletion may have moved the free slot */
    }
    k->slot[i].tag = line;
    k->slot[i].node = n;
    k->slot[i].home = (uint32_t)h;
    k->node[n].slot = (uint32_t)i;
    lru_push_front(k->node, n);
    *node = n - 1;
    return 0;
}
