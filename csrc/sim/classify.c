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

static void free_all(struct pl_classifier *k)
{
    free(k->node);
    free(k->slot);
    free(k->chunk_key);
    free(k->chunk_idx);
    free(k->bits);
    memset(k, 0, sizeof *k);
}

int pl_classifier_init(struct pl_classifier *k, uint32_t cap)
{
    memset(k, 0, sizeof *k);
    if (cap < 1 || cap == UINT32_MAX)
        return -EINVAL;
    /* short probe runs where memory is cheap, half the memory where the table is large */
    unsigned bits = log2_ceil(4ull * cap);
    if ((sizeof *k->slot << bits) > BIG_TABLE_BYTES)
        bits--;
    if (bits <= PL_LRU_GROUP_SHIFT)
        bits = PL_LRU_GROUP_SHIFT + 1; /* pl_lru_home shifts by slot_shift + the group < 64 */
    k->cap = cap;
    k->node = pl_big_alloc((uint64_t)cap + 1, sizeof *k->node); /* and the sentinel */
    k->slot = pl_big_alloc(1ull << bits, sizeof *k->slot);
    k->slot_mask = (1ull << bits) - 1;
    k->slot_shift = 64 - bits;
    unsigned cbits = log2_ceil(PL_SEEN_INITIAL_SLOTS);
    k->chunk_key = pl_big_alloc(1ull << cbits, sizeof *k->chunk_key);
    k->chunk_idx = pl_big_alloc(1ull << cbits, sizeof *k->chunk_idx);
    k->chunk_mask = (1ull << cbits) - 1;
    k->chunk_shift = 64 - cbits;
    k->bits_cap = PL_SEEN_INITIAL_SLOTS / 2;
    k->bits = pl_big_alloc(k->bits_cap * PL_SEEN_CHUNK_WORDS, sizeof *k->bits);
    if (!k->node || !k->slot || !k->chunk_key || !k->chunk_idx || !k->bits) {
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

void pl_classifier_reset(struct pl_classifier *k)
{
    k->used = 0;
    k->node[k->cap].prev = k->node[k->cap].next = k->cap;
    memset(k->slot, 0, (k->slot_mask + 1) * sizeof *k->slot);
    memset(k->chunk_idx, 0, (k->chunk_mask + 1) * sizeof *k->chunk_idx);
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
            k->node[k->slot[i].node - 1].slot = (uint32_t)i;
            i = j;
        }
    }
    k->slot[i].node = 0;
}

uint32_t pl_lru_insert(struct pl_classifier *k, uint64_t line, uint64_t h, uint64_t i, int *evicted)
{
    uint32_t n;
    *evicted = k->used == k->cap;
    if (!*evicted) {
        n = k->used++;
    } else {
        n = k->node[k->cap].prev; /* the least recently used line leaves */
        slot_delete(k, k->node[n].slot);
        pl_lru_unlink(k->node, n);
        for (i = h; k->slot[i].node; i = (i + 1) & k->slot_mask)
            ; /* the deletion may have moved the free slot */
    }
    k->slot[i].tag = line;
    k->slot[i].node = n + 1;
    k->slot[i].home = (uint32_t)h;
    k->node[n].slot = (uint32_t)i;
    pl_lru_push_front(k->node, k->cap, n);
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
    *node = pl_lru_insert(k, line, h, i, evicted);
    return 0;
}

/* --- first-touch set ------------------------------------------------------------------------ */

static int grow_chunk_table(struct pl_classifier *k)
{
    uint64_t old_size = k->chunk_mask + 1, size = old_size * 2;
    uint64_t *key = pl_big_alloc(size, sizeof *key);
    uint32_t *idx = pl_big_zalloc(size, sizeof *idx);
    if (!key || !idx) {
        free(key);
        free(idx);
        return -ENOMEM;
    }
    unsigned shift = k->chunk_shift - 1;
    for (uint64_t i = 0; i < old_size; i++) {
        if (!k->chunk_idx[i])
            continue;
        uint64_t j = home(k->chunk_key[i], shift);
        while (idx[j])
            j = (j + 1) & (size - 1);
        key[j] = k->chunk_key[i];
        idx[j] = k->chunk_idx[i];
    }
    free(k->chunk_key);
    free(k->chunk_idx);
    k->chunk_key = key;
    k->chunk_idx = idx;
    k->chunk_mask = size - 1;
    k->chunk_shift = shift;
    return 0;
}

uint64_t pl_seen_chunk(struct pl_classifier *k, uint64_t key)
{
    uint64_t i = home(key, k->chunk_shift);
    for (; k->chunk_idx[i]; i = (i + 1) & k->chunk_mask)
        if (k->chunk_key[i] == key)
            return k->chunk_idx[i];
    if (2 * (k->chunks + 1) > k->chunk_mask + 1) {
        if (grow_chunk_table(k))
            return 0;
        i = home(key, k->chunk_shift);
        while (k->chunk_idx[i])
            i = (i + 1) & k->chunk_mask;
    }
    if (k->chunks == k->bits_cap) {
        uint64_t *bits = pl_big_alloc(2 * k->bits_cap * PL_SEEN_CHUNK_WORDS, sizeof *bits);
        if (!bits)
            return 0;
        memcpy(bits, k->bits, k->chunks * PL_SEEN_CHUNK_WORDS * sizeof *bits);
        free(k->bits);
        k->bits = bits;
        k->bits_cap *= 2;
    }
    memset(k->bits + k->chunks * PL_SEEN_CHUNK_WORDS, 0, PL_SEEN_CHUNK_WORDS * sizeof *k->bits);
    k->chunk_key[i] = key;
    k->chunk_idx[i] = (uint32_t)++k->chunks;
    return k->chunks;
}
