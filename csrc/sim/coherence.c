/* The multi-core model and its MESI directory (pl_coherence.h). */
#include "pl_coherence.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define NO_OWNER (-1)
#define FIRST_SLOTS 1024 /* directory entries at first; it doubles at half full */

/* A line's directory entry: key = line number + 1 (0: empty). */
struct entry {
    uint64_t key;
    uint64_t lost; /* bit c: core c held the line until another core's write invalidated it */
    int owner;     /* the core holding it Modified, or NO_OWNER */
};

struct pl_coh {
    int ncores;
    int private_levels;       /* levels [0, private_levels) are each core's own */
    int shared;               /* core 0's level that the others' misses reach, or -1 */
    unsigned shift;           /* log2 of the first level's line: the unit of coherence */
    unsigned span;            /* log2 of the lowest private level's line */
    struct pl_sim_config own; /* the other cores' configuration */
    struct pl_sim *sim[PL_COH_MAX_CORES];
    struct pl_coh_counts count[PL_COH_MAX_CORES];
    struct entry *dir;
    uint64_t slots, used;
    int err;
};

static unsigned log2_of(uint64_t x)
{
    return (unsigned)__builtin_ctzll(x);
}

int pl_coh_create(struct pl_sim *first, const struct pl_sim_config *cfg, struct pl_coh **out)
{
    *out = NULL;
    struct pl_coh *m = calloc(1, sizeof *m);
    if (!m)
        return -ENOMEM;
    m->ncores = 1;
    m->sim[0] = first;
    m->own = *cfg;
    m->shared = cfg->nlevels >= 2 ? cfg->nlevels - 1 : -1;
    m->private_levels = cfg->nlevels >= 2 ? cfg->nlevels - 1 : cfg->nlevels;
    m->own.nlevels = m->private_levels;
    m->shift = cfg->nlevels ? log2_of(cfg->level[0].line) : 6;
    m->span = m->private_levels ? log2_of(cfg->level[m->private_levels - 1].line) : m->shift;
    m->slots = FIRST_SLOTS;
    m->dir = calloc(m->slots, sizeof *m->dir);
    /* a level that cannot drop a line cannot take part */
    int rc = m->dir ? pl_sim_invalidate(first, 0, m->private_levels) : -ENOMEM;
    if (rc < 0) {
        pl_coh_destroy(m);
        return rc;
    }
    *out = m;
    return 0;
}

void pl_coh_destroy(struct pl_coh *m)
{
    if (!m)
        return;
    for (int c = 1; c < m->ncores; c++)
        pl_sim_destroy(m->sim[c]);
    free(m->dir);
    free(m);
}

int pl_coh_add_core(struct pl_coh *m)
{
    if (m->ncores == PL_COH_MAX_CORES)
        return -ENOSPC;
    int rc = pl_sim_create(&m->own, &m->sim[m->ncores]);
    return rc ? rc : m->ncores++;
}

struct pl_sim *pl_coh_sim(const struct pl_coh *m, int c)
{
    return c >= 0 && c < m->ncores ? m->sim[c] : NULL;
}

static struct entry *slot_of(struct entry *dir, uint64_t slots, uint64_t key)
{
    uint64_t i = (key * 0x9E3779B97F4A7C15ull) >> 20 & (slots - 1);
    while (dir[i].key && dir[i].key != key)
        i = (i + 1) & (slots - 1);
    return &dir[i];
}

/* Line x's entry, new if need be; NULL when the directory cannot grow (m->err). */
static struct entry *entry_of(struct pl_coh *m, uint64_t x)
{
    struct entry *e = slot_of(m->dir, m->slots, x + 1);
    if (e->key)
        return e;
    if (2 * (m->used + 1) > m->slots) {
        struct entry *bigger = calloc(2 * m->slots, sizeof *bigger);
        if (!bigger) {
            m->err = -ENOMEM;
            return NULL;
        }
        for (uint64_t i = 0; i < m->slots; i++)
            if (m->dir[i].key)
                *slot_of(bigger, 2 * m->slots, m->dir[i].key) = m->dir[i];
        free(m->dir);
        m->dir = bigger;
        m->slots *= 2;
        e = slot_of(m->dir, m->slots, x + 1);
    }
    m->used++;
    *e = (struct entry){x + 1, 0, NO_OWNER};
    return e;
}

static uint64_t misses(const struct pl_sim_counts *n)
{
    return n ? n->read_misses + n->write_misses : 0;
}

/* The protocol's part of core c's access to line x. Returns whether c had lost the line. */
static int protocol(struct pl_coh *m, int c, uint64_t x, int is_write)
{
    struct entry *e = entry_of(m, x);
    if (!e)
        return 0;
    if (is_write && e->owner != c) {
        for (int k = 0; k < m->ncores; k++) {
            int held = k == c ? 0 : pl_sim_invalidate(m->sim[k], x << m->shift, m->private_levels);
            if (held > 0)
                m->count[k].invalidations++;
            if (held & 1)
                e->lost |= 1ull << k;
        }
        e->owner = c;
    } else if (!is_write && e->owner != NO_OWNER && e->owner != c) {
        m->count[e->owner].downgrades++;
        e->owner = NO_OWNER;
    }
    int lost = (int)(e->lost >> c & 1);
    e->lost &= ~(1ull << c);
    return lost;
}

/* One access within line x. */
static void access_line(struct pl_coh *m, int c, uint64_t x, uint64_t addr, uint32_t size,
                        int is_write)
{
    int lost = protocol(m, c, x, is_write);
    struct pl_sim *sim = m->sim[c];
    const struct pl_sim_counts *l1 = pl_sim_counts_live(sim, 0, 0);
    const struct pl_sim_counts *low =
        c && m->shared >= 0 ? pl_sim_counts_live(sim, 0, m->private_levels - 1) : NULL;
    struct pl_sim_counts before = l1 ? *l1 : (struct pl_sim_counts){0};
    uint64_t low_misses = misses(low);
    pl_sim_access(sim, addr, size, is_write);
    if (misses(low) != low_misses) /* another core's miss reaches the shared level */
        pl_sim_fetch(m->sim[0], m->shared, addr, m->span, is_write);
    if (lost && misses(l1) != misses(&before))
        pl_sim_coherence_miss(sim, &before);
}

void pl_coh_access(struct pl_coh *m, int c, uint64_t addr, uint32_t size, int is_write)
{
    uint64_t end = addr + (size ? size - 1 : 0);
    if (end < addr)
        end = UINT64_MAX;
    uint64_t first = addr >> m->shift, last = end >> m->shift;
    if (first == last) {
        access_line(m, c, first, addr, size, is_write);
        return;
    }
    for (uint64_t x = first;; x++) { /* a straddling access: each line's part */
        uint64_t lo = x == first ? addr : x << m->shift;
        uint64_t hi = x == last ? end : ((x + 1) << m->shift) - 1;
        access_line(m, c, x, lo, (uint32_t)(hi - lo + 1), is_write);
        if (x == last)
            break;
    }
}

int pl_coh_core_stats(const struct pl_coh *m, int c, struct pl_sim_stats *out,
                      struct pl_coh_counts *protocol_counts)
{
    if (c < 0 || c >= m->ncores)
        return -EINVAL;
    int rc = pl_sim_stats(m->sim[c], out);
    if (protocol_counts)
        *protocol_counts = m->count[c];
    return rc ? rc : m->err;
}

static void add_counts(struct pl_sim_counts *to, const struct pl_sim_counts *from)
{
    to->reads += from->reads, to->writes += from->writes;
    to->read_misses += from->read_misses, to->write_misses += from->write_misses;
    to->evictions += from->evictions, to->writebacks += from->writebacks;
    to->compulsory += from->compulsory, to->capacity += from->capacity;
    to->conflict += from->conflict, to->coherence += from->coherence;
}

int pl_coh_stats(const struct pl_coh *m, struct pl_sim_stats *out)
{
    int rc = pl_coh_core_stats(m, 0, out, NULL);
    for (int c = 1; c < m->ncores; c++) {
        struct pl_sim_stats s;
        int err = pl_coh_core_stats(m, c, &s, NULL);
        rc = rc ? rc : err;
        for (int i = 0; i < m->private_levels; i++)
            add_counts(&out->level[i], &s.level[i]);
        for (int i = 0; i < PL_SIM_MAX_TLBS; i++)
            add_counts(&out->tlb[i], &s.tlb[i]);
    }
    return rc;
}
