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
    return (key * PL_LRU_GOLDEN) >> shift; /* Fibonacci hashing: keep the top bits */
}

/* A hash table beyond this size no longer stays in a host core's L2 cache. */
#define BIG_TABLE_BYTES (1u << 20)

/* Lines a table of 2^bits slots may hold: short probe runs where memory is cheap, half the
 * memory where the table is large; at full size, all cap lines. */
static uint64_t table_limit(const struct pl_classifier *k, unsigned bits)
{
    if (bits >= k->full_bits)
        return k->cap;
    return (sizeof *k->slot << bits) > BIG_TABLE_BYTES ? 1ull << (bits - 1) : 1ull << (bits - 2);
}

static void set_table_bits(struct pl_classifier *k, unsigned bits)
{
    k->slot_mask = (1ull << bits) - 1;
    k->slot_shift = 64 - bits;
    k->slot_limit = table_limit(k, bits);
}

/* Nodes of a fresh classifier: what its first table may hold, and the sentinel. */
static uint32_t first_nodes(const struct pl_classifier *k)
{
    return (uint32_t)table_limit(k, k->first_bits) + 1;
}

static void free_all(struct pl_classifier *k)
{
    free(k->node);
    free(k->slot);
    free(k->chunk);
    free(k->bits);
    memset(k, 0, sizeof *k);
}

int pl_classifier_init(struct pl_classifier *k, uint32_t cap)
{
    memset(k, 0, sizeof *k);
    if (cap < 1 || cap == UINT32_MAX)
        return -EINVAL;
    unsigned bits = log2_ceil(4ull * cap);
    if ((sizeof *k->slot << bits) > BIG_TABLE_BYTES)
        bits--;
    if (bits <= PL_LRU_GROUP_SHIFT)
        bits = PL_LRU_GROUP_SHIFT + 1; /* pl_lru_home shifts by slot_shift + the group < 64 */
    k->cap = cap;
    k->full_bits = bits;
    k->first_bits = bits < PL_LRU_FIRST_BITS ? bits : PL_LRU_FIRST_BITS;
    k->nodes = first_nodes(k);
    k->node = pl_big_alloc(k->nodes, sizeof *k->node);
    k->slot = pl_big_alloc(1ull << k->first_bits, sizeof *k->slot); /* reset clears it */
    set_table_bits(k, k->first_bits);
    unsigned cbits = log2_ceil(PL_SEEN_INITIAL_SLOTS);
    k->chunk = pl_big_alloc(1ull << cbits, sizeof *k->chunk);
    k->chunk_mask = (1ull << cbits) - 1;
    k->chunk_shift = 64 - cbits;
    k->bits_cap = PL_SEEN_INITIAL_SLOTS / 2;
    k->bits = pl_big_alloc(k->bits_cap * PL_SEEN_CHUNK_WORDS, sizeof *k->bits);
    if (!k->node || !k->slot || !k->chunk || !k->bits) {
        free_all(k);
        return -ENOMEM;
    }
    pl_classifier_reset(k);
    return 0;
}

void pl_classifier_free(struct pl_classifier *k)
{
    free_all(k);
}

/* For a reset: *p back to n zeroed elements. A grown array (have > n) is replaced by a fresh
 * one; when that cannot be allocated, or it has not grown, it is cleared in place (always
 * correct, only slower). Returns the elements it now has. */
static uint64_t restart(void **p, uint64_t have, uint64_t n, size_t size)
{
    if (have > n) {
        void *q = pl_big_zalloc(n, size);
        if (q) {
            free(*p);
            *p = q;
            return n;
        }
    }
    memset(*p, 0, have * size);
    return have;
}

void pl_classifier_reset(struct pl_classifier *k)
{
    k->used = 0;
    k->err = 0;
    uint32_t nodes = first_nodes(k);
    if (k->nodes > nodes) {
        struct pl_lru_node *node = pl_big_resize(k->node, 0, nodes, sizeof *node);
        if (node) {
            k->node = node;
            k->nodes = nodes;
        }
    }
    k->node[0].prev = k->node[0].next = 0;
    void *slot = k->slot;
    uint64_t slots = restart(&slot, k->slot_mask + 1, 1ull << k->first_bits, sizeof *k->slot);
    k->slot = slot;
    set_table_bits(k, (unsigned)__builtin_ctzll(slots));
    void *chunk = k->chunk;
    slots = restart(&chunk, k->chunk_mask + 1, PL_SEEN_INITIAL_SLOTS, sizeof *k->chunk);
    k->chunk = chunk;
    k->chunk_mask = slots - 1;
    k->chunk_shift = 64 - (unsigned)__builtin_ctzll(slots);
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

/* --- shadow --------------------------------------------------------------------------------- */

/* Empty slot i, shifting later entries of its probe run back so that no lookup ever stops
 * early at the hole; moved entries tell their nodes where they went. */
static void slot_delete(struct pl_classifier *k, uint64_t i)
{
    uint64_t mask = k->slot_mask;
    for (uint64_t j = (i + 1) & mask; k->slot[j].node; j = (j + 1) & mask) {
        uint64_t h = k->slot[j].home;
        /* the entry at j may fill the hole at i unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            k->slot[i] = k->slot[j];
            k->node[k->slot[i].node].slot = (uint32_t)i;
            i = j;
        }
    }
    k->slot[i].node = 0;
}

/* The table twice as large, every line re-hashed into it. 0 or -ENOMEM (nothing changed). */
static int grow_table(struct pl_classifier *k)
{
    uint64_t old_size = k->slot_mask + 1;
    struct pl_lru_slot *old = k->slot, *slot = pl_big_zalloc(2 * old_size, sizeof *slot);
    if (!slot)
        return -ENOMEM;
    k->slot = slot;
    set_table_bits(k, 65 - k->slot_shift);
    for (uint64_t i = 0; i < old_size; i++) {
        if (!old[i].node)
            continue;
        uint64_t h = pl_lru_home(k, old[i].tag), j = h;
        while (slot[j].node)
            j = (j + 1) & k->slot_mask;
        slot[j] = old[i];
        slot[j].home = (uint32_t)h;
        k->node[old[i].node].slot = (uint32_t)j;
    }
    free(old);
    return 0;
}

/* Room for one more line without an eviction: 0, or -ENOMEM. */
static int make_room(struct pl_classifier *k)
{
    if (k->used + 1u >= k->nodes) {
        uint64_t want = 2ull * k->nodes < k->cap + 1ull ? 2ull * k->nodes : k->cap + 1ull;
        struct pl_lru_node *node = pl_big_resize(k->node, k->nodes, want, sizeof *node);
        if (!node)
            return -ENOMEM;
        k->node = node;
        k->nodes = (uint32_t)want;
    }
    if (k->used + 1u > k->slot_limit)
        return grow_table(k);
    return 0;
}

uint32_t pl_lru_insert(struct pl_classifier *k, uint64_t line, uint64_t h, uint64_t i, int *evicted)
{
    uint32_t n;
    *evicted = k->used == k->cap;
    if (!*evicted) {
        uint64_t size = k->slot_mask + 1;
        if (k->err || make_room(k)) {
            /* counts are incomplete from here on: say so, and go on without growing */
            k->err = -ENOMEM;
            *evicted = 1;
        } else if (k->slot_mask + 1 != size) {
            h = pl_lru_home(k, line); /* the table grew: a new home and a new free slot */
            for (i = h; k->slot[i].node; i = (i + 1) & k->slot_mask)
                ;
        }
    }
    if (!*evicted) {
        n = ++k->used;
    } else {
        n = k->node[0].prev; /* the least recently used line leaves */
        slot_delete(k, k->node[n].slot);
        pl_lru_unlink(k->node, n);
        for (i = h; k->slot[i].node; i = (i + 1) & k->slot_mask)
            ; /* the deletion may have moved the free slot */
    }
    k->slot[i].tag = line;
    k->slot[i].node = n;
    k->slot[i].home = (uint32_t)h;
    k->node[n].slot = (uint32_t)i;
    pl_lru_push_front(k->node, n);
    return n;
}

int pl_lru_access(struct pl_classifier *k, uint64_t line, uint32_t *node, int *evicted)
{
    uint64_t h = pl_lru_home(k, line), i;
    uint32_t found = pl_lru_find(k, line, h, &i);
    if (found) {
        *node = found - 1;
        *evicted = 0;
        return 1;
    }
    *node = pl_lru_insert(k, line, h, i, evicted) - 1;
    return 0;
}

/* --- first-touch set ------------------------------------------------------------------------ */

static int grow_chunk_table(struct pl_classifier *k)
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

uint64_t pl_seen_chunk(struct pl_classifier *k, uint64_t key)
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
