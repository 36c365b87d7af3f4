#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "pl_classify.h"

#define NIL UINT32_MAX
/* Fibonacci hashing: multiply by 2^64 / golden ratio, keep the top bits. */
#define GOLDEN 0x9E3779B97F4A7C15ull

static unsigned log2_ceil(uint64_t x)
{
    unsigned b = 0;
    while ((1ull << b) < x)
        b++;
    return b;
}

static uint64_t home(uint64_t key, unsigned shift)
{
    return (key * GOLDEN) >> shift;
}

static void free_all(struct pl_classifier *k)
{
    free(k->node_tag);
    free(k->prev);
    free(k->next);
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
    unsigned bits = log2_ceil(2ull * cap);
    if (bits < 1)
        bits = 1;
    k->cap = cap;
    k->node_tag = malloc(cap * sizeof *k->node_tag);
    k->prev = malloc(cap * sizeof *k->prev);
    k->next = malloc(cap * sizeof *k->next);
    k->slot = calloc(1ull << bits, sizeof *k->slot);
    k->slot_mask = (1ull << bits) - 1;
    k->slot_shift = 64 - bits;
    unsigned cbits = log2_ceil(PL_SEEN_INITIAL_SLOTS);
    k->chunk_key = malloc(sizeof *k->chunk_key << cbits);
    k->chunk_idx = calloc(1ull << cbits, sizeof *k->chunk_idx);
    k->chunk_mask = (1ull << cbits) - 1;
    k->chunk_shift = 64 - cbits;
    k->bits_cap = PL_SEEN_INITIAL_SLOTS / 2;
    k->bits = malloc(k->bits_cap * PL_SEEN_CHUNK_WORDS * sizeof *k->bits);
    if (!k->node_tag || !k->prev || !k->next || !k->slot || !k->chunk_key || !k->chunk_idx ||
        !k->bits) {
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
    k->head = k->tail = NIL;
    memset(k->slot, 0, (k->slot_mask + 1) * sizeof *k->slot);
    memset(k->chunk_idx, 0, (k->chunk_mask + 1) * sizeof *k->chunk_idx);
    k->chunks = 0;
    k->last_idx = 0;
}

/* --- shadow --------------------------------------------------------------------------------- */

static void unlink_node(struct pl_classifier *k, uint32_t n)
{
    uint32_t p = k->prev[n], q = k->next[n];
    if (p != NIL)
        k->next[p] = q;
    else
        k->head = q;
    if (q != NIL)
        k->prev[q] = p;
    else
        k->tail = p;
}

static void push_front(struct pl_classifier *k, uint32_t n)
{
    k->prev[n] = NIL;
    k->next[n] = k->head;
    if (k->head != NIL)
        k->prev[k->head] = n;
    k->head = n;
    if (k->tail == NIL)
        k->tail = n;
}

/* Remove the table entry of node n, shifting later entries of the probe run back so that no
 * lookup ever stops early at the hole. */
static void slot_delete(struct pl_classifier *k, uint32_t n)
{
    uint64_t mask = k->slot_mask;
    uint64_t i = home(k->node_tag[n], k->slot_shift);
    while (k->slot[i] != n + 1)
        i = (i + 1) & mask;
    for (uint64_t j = (i + 1) & mask; k->slot[j]; j = (j + 1) & mask) {
        uint64_t h = home(k->node_tag[k->slot[j] - 1], k->slot_shift);
        /* the entry at j may fill the hole at i unless its home lies cyclically in (i, j] */
        int stays = i <= j ? (i < h && h <= j) : (i < h || h <= j);
        if (!stays) {
            k->slot[i] = k->slot[j];
            i = j;
        }
    }
    k->slot[i] = 0;
}

int pl_lru_access(struct pl_classifier *k, uint64_t line, uint32_t *node, int *evicted)
{
    uint64_t mask = k->slot_mask;
    uint64_t i = home(line, k->slot_shift);
    *evicted = 0;
    for (uint32_t s; (s = k->slot[i]) != 0; i = (i + 1) & mask) {
        if (k->node_tag[s - 1] == line) {
            uint32_t n = s - 1;
            if (k->head != n) {
                unlink_node(k, n);
                push_front(k, n);
            }
            *node = n;
            return 1;
        }
    }
    uint32_t n;
    if (k->used < k->cap) {
        n = k->used++;
    } else {
        n = k->tail; /* the least recently used line leaves */
        *evicted = 1;
        slot_delete(k, n);
        unlink_node(k, n);
        i = home(line, k->slot_shift); /* the deletion may have moved the free slot */
        while (k->slot[i])
            i = (i + 1) & mask;
    }
    k->node_tag[n] = line;
    k->slot[i] = n + 1;
    push_front(k, n);
    *node = n;
    return 0;
}

int pl_shadow_access(struct pl_classifier *k, uint64_t line)
{
    uint32_t node;
    int evicted;
    return pl_lru_access(k, line, &node, &evicted);
}

/* --- first-touch set ------------------------------------------------------------------------ */

static int grow_chunk_table(struct pl_classifier *k)
{
    uint64_t old_size = k->chunk_mask + 1, size = old_size * 2;
    uint64_t *key = malloc(size * sizeof *key);
    uint32_t *idx = calloc(size, sizeof *idx);
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

/* Index + 1 of the bitmap of chunk key, created if new; 0 if out of memory. */
static uint64_t chunk_of(struct pl_classifier *k, uint64_t key)
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
        uint64_t *bits = realloc(k->bits, 2 * k->bits_cap * PL_SEEN_CHUNK_WORDS * sizeof *bits);
        if (!bits)
            return 0;
        k->bits = bits;
        k->bits_cap *= 2;
    }
    memset(k->bits + k->chunks * PL_SEEN_CHUNK_WORDS, 0, PL_SEEN_CHUNK_WORDS * sizeof *k->bits);
    k->chunk_key[i] = key;
    k->chunk_idx[i] = (uint32_t)++k->chunks;
    return k->chunks;
}

int pl_seen_test_and_set(struct pl_classifier *k, uint64_t line)
{
    uint64_t key = line >> PL_SEEN_CHUNK_SHIFT;
    uint64_t idx = k->last_idx && k->last_key == key ? k->last_idx : chunk_of(k, key);
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
