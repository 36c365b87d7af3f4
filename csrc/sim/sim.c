/* The hierarchy: TLBs and cache levels glued together, the slow path of pl_sim_access, arrays. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pl_cache.h"
#include "pl_sim.h"

/* Seeds of the levels differ so that two random-policy levels do not make the same choices. */
#define LEVEL_SEED_STEP 0x9E3779B97F4A7C15ull

/* What pl_sim_access_slow's quick path reads, side by side: the first level's hot fields (its
 * arrays never move) and the DTLB's most recently used page. */
struct quick {
    /* The DTLB's most recently used page (its mru_line), or no_page: 0 without TLBs (with
     * page_shift 63, which all user addresses match), PL_NO_LINE, which no page number
     * matches, where the first level does not suit the quick path (a dense level under LRU,
     * its order in one word per set). */
    unsigned page_shift;
    const uint64_t *page;
    uint64_t set_mask; /* sets - 1 for a power of two, else 0 (mod) */
    pl_u128 mod;       /* pl_cache's */
    uint64_t sets;
    uint32_t ways, fp_last;
    char *set_mem; /* its set blocks (struct pl_set), stride bytes each */
    uint64_t stride;
    uint32_t dirty_off, tag_off;
    uint32_t *when; /* NULL without a shadow */
    struct pl_shadow *shadow;
    struct pl_cache *l1;
    /* 1: the quick path applies to a masked level without a shadow: pl_sim_access_slow's
     * lean path */
    int lean;
};

struct pl_sim_core {
    struct quick q;
    int nlevels, ntlbs;
    unsigned page_shift;
    struct pl_cache level[PL_SIM_MAX_LEVELS];
    struct pl_cache tlb[PL_SIM_MAX_TLBS];
    uint64_t no_page; /* the quick path's page without TLBs */
    int lean2; /* the second level suits lean_below: dense and masked, LRU with its order in one
                  word, no shadow, lines as long as the first level's */
    uint8_t no_line_dirty; /* stands in for the L1 dirty flag when there is no cache level */
};

static int pow2(uint64_t x)
{
    return x && !(x & (x - 1));
}

static unsigned log2_of(uint64_t pow2_value)
{
    return (unsigned)__builtin_ctzll(pow2_value);
}

/* -EINVAL, and the reason in why (when there is room for one). */
__attribute__((format(printf, 3, 4))) static int refuse(char *why, size_t len, const char *fmt, ...)
{
    if (why && len) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(why, len, fmt, ap);
        va_end(ap);
    }
    return -EINVAL;
}

/* units (lines or entries) in sets of ways: any whole number of sets, within the limits. */
static int check_array(const char *name, uint64_t units, uint32_t ways, const char *unit, char *why,
                       size_t len)
{
    if (ways < 1)
        return refuse(why, len, "%s: ways must be at least 1", name);
    if (ways > PL_SIM_MAX_WAYS)
        return refuse(why, len, "%s: %" PRIu32 " ways is more than the simulator's %d", name, ways,
                      PL_SIM_MAX_WAYS);
    if (units < ways)
        return refuse(why, len, "%s: %s (%" PRIu64 ") must be at least the ways (%" PRIu32 ")",
                      name, unit, units, ways);
    if (units % ways)
        return refuse(why, len,
                      "%s: %" PRIu64 " %s do not divide into %" PRIu32 " ways (sets must be whole)",
                      name, units, unit, ways);
    if (units > PL_SIM_MAX_LINES)
        return refuse(why, len, "%s: %" PRIu64 " %s is more than the simulator's %u", name, units,
                      unit, PL_SIM_MAX_LINES);
    return 0;
}

static int check_level(const struct pl_sim_config *cfg, const struct pl_cache_geom *g, char *why,
                       size_t len)
{
    const char *name = g->name;
    if (!pow2(g->line) || g->line > PL_SIM_MAX_LINE)
        return refuse(why, len, "%s: line size %" PRIu32 " is not a power of two up to 1 GiB", name,
                      g->line);
    if (g->size < 1)
        return refuse(why, len, "%s: size %" PRIu64 " is not a positive number of bytes", name,
                      g->size);
    if (g->size % g->line)
        return refuse(why, len,
                      "%s: size %" PRIu64 " is not a whole number of %" PRIu32 "-byte lines", name,
                      g->size, g->line);
    int rc = check_array(name, g->size / g->line, g->ways, "lines", why, len);
    if (rc)
        return rc;
    if (cfg->policy == PL_POLICY_PLRU && (!pow2(g->ways) || g->ways > 64))
        return refuse(why, len,
                      "%s: plru needs a power-of-two number of ways up to 64 (a binary tree over "
                      "the ways), not %" PRIu32 "; lru, fifo and random take any number",
                      name, g->ways);
    if (cfg->ntlbs && g->line > cfg->page_size)
        return refuse(why, len,
                      "%s: %" PRIu32 "-byte lines are larger than the %" PRIu32 "-byte pages", name,
                      g->line, cfg->page_size);
    return 0;
}

int pl_sim_config_check(const struct pl_sim_config *cfg, char *why, size_t len)
{
    if (why && len)
        why[0] = '\0';
    if (cfg->nlevels < 0 || cfg->nlevels > PL_SIM_MAX_LEVELS || cfg->ntlbs < 0 ||
        cfg->ntlbs > PL_SIM_MAX_TLBS)
        return refuse(why, len, "at most %d cache levels and %d TLBs", PL_SIM_MAX_LEVELS,
                      PL_SIM_MAX_TLBS);
    if (cfg->nlevels + cfg->ntlbs == 0)
        return refuse(why, len, "nothing to simulate: no cache level and no TLB");
    if (cfg->policy < PL_POLICY_LRU || cfg->policy > PL_POLICY_PLRU)
        return refuse(why, len, "unknown replacement policy %d", cfg->policy);
    if (cfg->ntlbs && cfg->page_size != PL_SIM_PAGE_4K && cfg->page_size != PL_HUGE_PAGE)
        return refuse(why, len, "page size %" PRIu32 " is not 4k or 2m", cfg->page_size);
    for (int i = 0; i < cfg->nlevels; i++) {
        int rc = check_level(cfg, &cfg->level[i], why, len);
        if (rc)
            return rc;
    }
    for (int i = 0; i < cfg->ntlbs; i++) {
        const struct pl_tlb_geom *t = &cfg->tlb[i];
        int rc = check_array(t->name, t->entries, t->ways, "entries", why, len);
        if (rc)
            return rc;
    }
    return 0;
}

void pl_sim_destroy(struct pl_sim *sim)
{
    if (!sim)
        return;
    if (sim->core) {
        for (int i = 0; i < PL_SIM_MAX_LEVELS; i++)
            pl_cache_free(&sim->core->level[i]);
        for (int i = 0; i < PL_SIM_MAX_TLBS; i++)
            pl_cache_free(&sim->core->tlb[i]);
        free(sim->core);
    }
    free(sim);
}

int pl_sim_create(const struct pl_sim_config *cfg, struct pl_sim **out)
{
    *out = NULL;
    int rc = pl_sim_config_check(cfg, NULL, 0);
    if (rc)
        return rc;
    struct pl_sim *sim = calloc(1, sizeof *sim);
    if (!sim)
        return -ENOMEM;
    struct pl_sim_core *k = sim->core = calloc(1, sizeof *k);
    if (!k) {
        free(sim);
        return -ENOMEM;
    }
    k->nlevels = cfg->nlevels;
    k->ntlbs = cfg->ntlbs;
    k->page_shift = cfg->ntlbs ? log2_of(cfg->page_size) : 0;
    for (int i = 0; i < cfg->nlevels && !rc; i++) {
        const struct pl_cache_geom *g = &cfg->level[i];
        rc = pl_cache_init(&k->level[i], g->size / g->line, g->ways, log2_of(g->line), cfg->policy,
                           cfg->seed + (uint64_t)i * LEVEL_SEED_STEP, (cfg->classify >> i) & 1);
    }
    for (int i = 0; i < cfg->ntlbs && !rc; i++)
        rc = pl_cache_init(&k->tlb[i], cfg->tlb[i].entries, cfg->tlb[i].ways, k->page_shift,
                           PL_POLICY_LRU, 0, 0);
    if (rc) {
        pl_sim_destroy(sim);
        return rc;
    }
    /* the fast-path granule: the L1 line (never larger than a page), else the page */
    sim->shift = cfg->nlevels ? k->level[0].shift : k->page_shift;
    struct pl_cache *l1 = &k->level[0];
    /* 1-byte lines are left out: their line numbers reach PL_NO_LINE */
    int on = cfg->nlevels && l1->set_mem && !l1->fa && l1->policy == PL_POLICY_LRU && l1->ordered &&
             l1->shift > 0;
    k->no_page = on ? 0 : PL_NO_LINE;
    k->q = (struct quick){
        .page_shift = cfg->ntlbs ? k->page_shift : 63,
        .page = on && cfg->ntlbs ? &k->tlb[0].mru_line : &k->no_page,
        .set_mask = l1->set_mask,
        .mod = l1->mod,
        .sets = l1->sets,
        .ways = l1->ways,
        .fp_last = l1->fp_last,
        .set_mem = l1->set_mem,
        .stride = l1->stride,
        .dirty_off = l1->dirty_off,
        .tag_off = l1->tag_off,
        .when = l1->when,
        .shadow = l1->shadow,
        .l1 = l1,
        .lean = on && l1->set_mask && !l1->shadow,
    };
    struct pl_cache *l2 = &k->level[1];
    k->lean2 = cfg->nlevels > 1 && l2->masked && l2->policy == PL_POLICY_LRU && l2->ordered &&
               !l2->shadow && l2->shift == l1->shift && l2->shift > 0;
    sim->gmask = (1ull << sim->shift) - 1;
    pl_sim_reset(sim);
    *out = sim;
    return 0;
}

void pl_sim_reset(struct pl_sim *sim)
{
    struct pl_sim_core *k = sim->core;
    for (int i = 0; i < k->nlevels; i++)
        pl_cache_reset(&k->level[i]);
    for (int i = 0; i < k->ntlbs; i++)
        pl_cache_reset(&k->tlb[i]);
    sim->last = 0;
    sim->limit = 0;
    sim->last_dirty = &k->no_line_dirty;
    sim->fast[0] = sim->fast[1] = 0;
}

int pl_sim_stats(const struct pl_sim *sim, struct pl_sim_stats *out)
{
    const struct pl_sim_core *k = sim->core;
    int rc = 0;
    memset(out, 0, sizeof *out);
    for (int i = 0; i < k->nlevels; i++) {
        out->level[i] = k->level[i].n;
        int err = pl_cache_error(&k->level[i]);
        if (err)
            rc = err;
    }
    for (int i = 0; i < k->ntlbs; i++)
        out->tlb[i] = k->tlb[i].n;
    /* fast-path accesses were hits in the first level and in the DTLB */
    struct pl_sim_counts *first = k->nlevels ? &out->level[0] : NULL;
    struct pl_sim_counts *dtlb = k->ntlbs ? &out->tlb[0] : NULL;
    if (first) {
        first->reads += sim->fast[0];
        first->writes += sim->fast[1];
    }
    if (dtlb) {
        dtlb->reads += sim->fast[0];
        dtlb->writes += sim->fast[1];
    }
    return rc;
}

const struct pl_sim_counts *pl_sim_counts_live(const struct pl_sim *sim, int tlb, int i)
{
    const struct pl_sim_core *k = sim->core;
    if (i < 0 || i >= (tlb ? k->ntlbs : k->nlevels))
        return NULL;
    return tlb ? &k->tlb[i].n : &k->level[i].n;
}

int pl_sim_set_of(uint64_t sets, const uint64_t *line, size_t n, uint64_t *out)
{
    if (!sets)
        return -EINVAL;
    struct pl_cache c;
    pl_cache_index_init(&c, sets);
    for (size_t i = 0; i < n; i++)
        out[i] = pl_cache_set(&c, line[i]);
    return 0;
}

/* Level i gets the line-aligned block [base, base + 2^span) that the level above missed. */
static __attribute__((noinline)) void fetch(struct pl_sim_core *k, int i, uint64_t base,
                                            unsigned span, int is_write)
{
    struct pl_cache *c = &k->level[i];
    uint64_t x = base >> c->shift, last = (base + ((1ull << span) - 1)) >> c->shift;
    uint8_t *dirty;
    for (;; x++) {
        int hit = pl_cache_access(c, x, is_write, &dirty) & PL_SIM_HIT;
        if (!hit && i + 1 < k->nlevels)
            fetch(k, i + 1, x << c->shift, c->shift, is_write);
        if (x == last)
            break;
    }
}

int pl_sim_invalidate(struct pl_sim *sim, uint64_t addr, int levels)
{
    struct pl_sim_core *k = sim->core;
    int held = 0;
    for (int i = 0; i < levels && i < k->nlevels; i++) {
        int rc = pl_cache_invalidate(&k->level[i], addr >> k->level[i].shift);
        if (rc < 0)
            return rc;
        held |= rc << i;
    }
    sim->limit = 0;
    return held;
}

void pl_sim_fetch(struct pl_sim *sim, int i, uint64_t base, unsigned span, int is_write)
{
    if (i < sim->core->nlevels)
        fetch(sim->core, i, base >> span << span, span, is_write != 0);
}

void pl_sim_coherence_miss(struct pl_sim *sim, const struct pl_sim_counts *before)
{
    struct pl_sim_counts *n = &sim->core->level[0].n;
    if (n->conflict > before->conflict)
        n->conflict--;
    else if (n->capacity > before->capacity)
        n->capacity--;
    else if (n->compulsory > before->compulsory)
        n->compulsory--;
    n->coherence++;
}

/* The DTLB lookups of the pages [first, last], and the STLB's of the DTLB's misses. */
static __attribute__((noinline)) void translate(struct pl_sim_core *k, uint64_t first,
                                                uint64_t last, int is_write)
{
    uint8_t *dirty;
    for (uint64_t p = first;; p++) {
        int hit = pl_cache_access(&k->tlb[0], p, is_write, &dirty) & PL_SIM_HIT;
        if (!hit && k->ntlbs > 1)
            pl_cache_access(&k->tlb[1], p, is_write, &dirty);
        if (p == last)
            break;
    }
}

/* The first level's lookup of one line, and the lower levels' if it misses. */
static inline __attribute__((always_inline)) int lookup(struct pl_sim_core *k, uint64_t x,
                                                        int is_write, uint8_t **dirty)
{
    struct pl_cache *l1 = &k->level[0];
    int out = pl_cache_access(l1, x, is_write, dirty);
    if (!(out & PL_SIM_HIT) && k->nlevels > 1)
        fetch(k, 1, x << l1->shift, l1->shift, is_write);
    return out;
}

/* An access that covers more than one line: each in turn. */
static __attribute__((noinline)) int lookup_lines(struct pl_sim_core *k, uint64_t first,
                                                  uint64_t last, int is_write, uint8_t **dirty)
{
    for (uint64_t x = first;; x++) {
        int out = lookup(k, x, is_write, dirty);
        if (x == last)
            return out;
    }
}

/* An access the quick path does not take: lines or pages straddled, a first level that is not
 * dense, or no first level. */
static __attribute__((noinline)) int access_lines(struct pl_sim *sim, uint64_t addr, uint32_t size,
                                                  int is_write)
{
    is_write = is_write != 0;
    struct pl_sim_core *k = sim->core;
    uint64_t end = addr + (size ? size - 1 : 0);
    if (end < addr)
        end = UINT64_MAX; /* an access cannot wrap around the address space */
    if (k->ntlbs) {
        /* the DTLB's most recently used page again: a hit that changes nothing else */
        struct pl_cache *dtlb = &k->tlb[0];
        uint64_t page = addr >> k->page_shift;
        if (page == dtlb->mru_line && page == end >> k->page_shift)
            dtlb->n.reads += !is_write, dtlb->n.writes += is_write != 0;
        else
            translate(k, page, end >> k->page_shift, is_write);
    }
    int out = 0;
    uint8_t *dirty = &k->no_line_dirty;
    if (k->nlevels) {
        unsigned shift = k->level[0].shift;
        uint64_t x = addr >> shift;
        out = x == end >> shift ? lookup(k, x, is_write, &dirty)
                                : lookup_lines(k, x, end >> shift, is_write, &dirty);
    }
    sim->last = end >> sim->shift;
    sim->limit = sim->gmask + 1;
    sim->last_dirty = dirty;
    return out | PL_SIM_MORE;
}

/* The second level's access to the line x that the first level missed, where k->lean2:
 * pl_cache_access without its tests of what the level is. Its most recently used line needs
 * no test of its own: touching the front way leaves the order as it is. */
PL_HOT int lean_below(struct pl_cache *c, uint64_t x, int is_write)
{
    uint8_t *dirty;
    c->n.reads += !is_write;
    c->n.writes += is_write;
    uint64_t set = x & c->set_mask;
    struct pl_set *s = pl_cache_block(c, set);
    int w = pl_cache_find(c, s, x);
    if (w < 0)
        return pl_cache_fill_lru(c, set, x, is_write, &dirty);
    pl_cache_order_touch(&s->word, (uint32_t)w);
    dirty = pl_set_dirty(s, c->dirty_off) + w;
    *dirty |= (uint8_t)is_write;
    c->mru_line = x;
    c->mru_dirty = dirty;
    c->mru_valid = 1;
    return PL_SIM_HIT;
}

/* The quick path's miss: the first level's miss path, then the levels below. */
static __attribute__((noinline)) int quick_miss(struct pl_sim *sim, uint64_t x, uint64_t set,
                                                int is_write)
{
    struct pl_sim_core *k = sim->core;
    struct pl_cache *c = &k->level[0];
    uint8_t *dirty;
    int out = pl_cache_fill_lru(c, set, x, is_write, &dirty);
    if (k->nlevels > 1 && k->level[1].shift == c->shift) {
        /* the next level's line is this one (the usual case): looked up here, not by fetch's
         * loop over the lines of a block */
        uint8_t *below;
        int hit = k->lean2 ? lean_below(&k->level[1], x, is_write)
                           : pl_cache_access(&k->level[1], x, is_write, &below);
        if (!(hit & PL_SIM_HIT))
            out |= k->nlevels > 2 ? PL_SIM_MORE : PL_SIM_MISS2;
        if (out & PL_SIM_MORE)
            fetch(k, 2, x << c->shift, c->shift, is_write);
    } else if (k->nlevels > 1) {
        fetch(k, 1, x << c->shift, c->shift, is_write);
        out |= PL_SIM_MORE;
    }
    sim->last = x;
    sim->limit = sim->gmask + 1;
    sim->last_dirty = dirty;
    return out;
}

static __attribute__((noinline)) void quick_renumber(struct pl_sim *sim)
{
    pl_cache_renumber(&sim->core->level[0]);
}

/* The quick path: an access within one line of a dense first level under LRU (its order in
 * one word per set). A page other than the DTLB's most recently used one is translated first.
 * On an L1 hit it does everything, with no call but a renumbering of the shadow's stamps once
 * in many thousand accesses, and returns 1; *last and *last_dirty become the fast path's
 * state. Else it returns 0 with *set the line's set, or -1 where the quick path does not
 * apply. Its counts: an access to the first level on the DTLB's most recently used page, the
 * fast path's own case, joins *fast (also on a miss: the miss path counts only the miss); after
 * a translation, the first level counts its access itself. */
PL_HOT int quick(struct pl_sim *sim, const struct quick *q, uint64_t a, uint64_t sz, int is_write,
                 uint64_t *last, uint8_t **last_dirty, uint64_t *fast, uint64_t *set)
{
    *set = UINT64_MAX;
    if (__builtin_expect((a & sim->gmask) + sz - 1 > sim->gmask, 0))
        return 0;
    if (__builtin_expect(a >> q->page_shift == *q->page, 1)) {
        fast[is_write]++;
    } else {
        if (q->page == &sim->core->no_page)
            return 0; /* the quick path does not apply */
        translate(sim->core, a >> q->page_shift, a >> q->page_shift, is_write);
        q->l1->n.reads += !is_write;
        q->l1->n.writes += is_write;
    }
    uint64_t x = a >> sim->shift;
    uint64_t s =
        __builtin_expect(q->set_mask != 0, 1) ? x & q->set_mask : pl_fastmod(x, q->mod, q->sets);
    struct pl_set *b = pl_set_at(q->set_mem, q->stride, s);
    const uint64_t *tag = pl_set_tags(b, q->tag_off);
    uint32_t w, m = pl_match16(b->fp, pl_cache_fingerprint(x)) & q->fp_last;
    for (;; m &= m - 1) {
        if (!m) {
            *set = s;
            return 0;
        }
        w = (uint32_t)__builtin_ctz(m);
        if (tag[w] == x)
            break;
    }
    pl_cache_order_touch(&b->word, w);
    uint8_t *dirty = pl_set_dirty(b, q->dirty_off) + w;
    if (is_write)
        *dirty = 1;
    *last = x;
    *last_dirty = dirty;
    q->l1->mru_line = x;
    q->l1->mru_dirty = dirty;
    if (q->shadow) {
        pl_shadow_touch(q->shadow, &q->when[s * q->ways + w]);
        if (pl_shadow_full(q->shadow))
            quick_renumber(sim);
    }
    return 1;
}

/* pl_sim_access_slow beyond the lean path: the quick path, its miss, or the general one. */
static __attribute__((noinline)) int access_quick(struct pl_sim *sim, uint64_t addr, uint32_t size,
                                                  int is_write)
{
    const struct quick *q = &sim->core->q;
    uint64_t set;
    /* limit stays as it was: a hit follows an earlier access, which set it */
    if (quick(sim, q, addr, size, is_write, &sim->last, &sim->last_dirty, sim->fast, &set))
        return PL_SIM_HIT;
    if (set != UINT64_MAX)
        return quick_miss(sim, addr >> sim->shift, set, is_write);
    return access_lines(sim, addr, size, is_write);
}

/* A hit on line x of the first level, whose dirty byte is *dirty: the fast path's state follows it.
 */
static inline int lean_hit(struct pl_sim *sim, const struct quick *q, uint64_t x, uint8_t *dirty,
                           int is_write)
{
    *dirty |= (uint8_t)is_write;
    sim->last = x;
    sim->last_dirty = dirty;
    q->l1->mru_line = x;
    q->l1->mru_dirty = dirty;
    return PL_SIM_HIT;
}

/* The lean path's access to a line that is not its set's most recent: the quick path's search
 * of the set, and its hit or miss, with the line and set already known. Counted as the quick
 * path counts (fast: an access to the first level on the DTLB's most recently used page). */
static __attribute__((noinline)) int lean_other(struct pl_sim *sim, const struct quick *q,
                                                uint64_t x, uint64_t s, int is_write)
{
    struct pl_set *b = pl_set_at(q->set_mem, q->stride, s);
    const uint64_t *tag = pl_set_tags(b, q->tag_off);
    sim->fast[is_write]++;
    for (uint32_t m = pl_match16(b->fp, pl_cache_fingerprint(x)) & q->fp_last; m; m &= m - 1) {
        uint32_t w = (uint32_t)__builtin_ctz(m);
        if (tag[w] != x)
            continue;
        pl_cache_order_touch(&b->word, w);
        return lean_hit(sim, q, x, pl_set_dirty(b, q->dirty_off) + w, is_write);
    }
    return quick_miss(sim, x, s, is_write);
}

int pl_sim_access_slow(struct pl_sim *sim, uint64_t addr, uint32_t size, int is_write)
{
    const struct quick *q = &sim->core->q;
    is_write = is_write != 0;
    /* The lean path (q->lean: the quick path applies to a masked level without a shadow), for
     * an access within one line on the DTLB's most recently used page. Its hit on the most
     * recently used way of the set moves nothing in the set's LRU order, and there is no
     * shadow to move it in, so it is the quick path's hit without the search and the reorder:
     * a few loads and a compare, and no call (so no registers saved). The naive transpose's
     * reads are such hits: each line is read 8 times, between writes to other sets. */
    if (q->lean && (addr & sim->gmask) + size - 1 <= sim->gmask &&
        addr >> q->page_shift == *q->page) {
        uint64_t x = addr >> sim->shift, s = x & q->set_mask;
        struct pl_set *b = pl_set_at(q->set_mem, q->stride, s);
        uint32_t w = (uint32_t)b->word & 15; /* the first way in order */
        if (pl_set_tags(b, q->tag_off)[w] != x)
            return lean_other(sim, q, x, s, is_write);
        sim->fast[is_write]++;
        return lean_hit(sim, q, x, pl_set_dirty(b, q->dirty_off) + w, is_write);
    }
    return access_quick(sim, addr, size, is_write);
}

/* pl_sim_access over many accesses, with the fast path's state in locals: through sim, every
 * store to *last_dirty (a uint8_t, which may alias anything) would force the state to be
 * reloaded. */
struct cursor {
    uint64_t last, limit;
    uint8_t *last_dirty;
    uint64_t fast[2];
};

static void cursor_load(struct cursor *cur, const struct pl_sim *sim)
{
    cur->last = sim->last;
    cur->limit = sim->limit;
    cur->last_dirty = sim->last_dirty;
}

/* One access (is_write 0 or 1) of such a loop. */
PL_HOT void step(struct pl_sim *sim, const struct quick *q, struct cursor *cur, uint64_t a,
                 uint64_t sz, int is_write)
{
    uint64_t set;
    if ((a >> sim->shift) == cur->last && (a & sim->gmask) + sz - 1 < cur->limit) {
        cur->fast[is_write]++;
        if (is_write)
            *cur->last_dirty = 1;
        return;
    }
    if (quick(sim, q, a, sz, is_write, &cur->last, &cur->last_dirty, cur->fast, &set))
        return;
    if (set != UINT64_MAX)
        quick_miss(sim, a >> sim->shift, set, is_write);
    else
        access_lines(sim, a, (uint32_t)sz, is_write);
    cursor_load(cur, sim);
}

static void cursor_save(struct pl_sim *sim, const struct cursor *cur)
{
    sim->last = cur->last;
    sim->last_dirty = cur->last_dirty;
    sim->fast[0] += cur->fast[0];
    sim->fast[1] += cur->fast[1];
}

/* op and size are constant NULLs in the specialised copies, so the common loops test nothing
 * per access but the fast path. */
PL_HOT void access_run(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                       const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all)
{
    const struct quick *q = &sim->core->q;
    struct cursor cur = {.fast = {0, 0}};
    cursor_load(&cur, sim);
    for (size_t i = 0; i < n; i++) {
        uint8_t o = op ? op[i] : op_all;
        uint64_t a = addr[i], sz = size ? size[i] : size_all;
        if (o == PL_OP_LOAD || o == PL_OP_MODIFY)
            step(sim, q, &cur, a, sz, 0);
        if (o == PL_OP_STORE || o == PL_OP_MODIFY)
            step(sim, q, &cur, a, sz, 1);
    }
    cursor_save(sim, &cur);
}

void pl_sim_access_run(struct pl_sim *sim, uint64_t addr, uint64_t stride, uint64_t count,
                       uint32_t size, int is_write)
{
    const struct quick *q = &sim->core->q;
    struct cursor cur = {.fast = {0, 0}};
    cursor_load(&cur, sim);
    if (is_write)
        for (uint64_t i = 0; i < count; i++, addr += stride)
            step(sim, q, &cur, addr, size, 1);
    else
        for (uint64_t i = 0; i < count; i++, addr += stride)
            step(sim, q, &cur, addr, size, 0);
    cursor_save(sim, &cur);
}

void pl_sim_access_array(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                         const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all)
{
    if (!op && !size)
        access_run(sim, addr, NULL, NULL, n, op_all, size_all);
    else if (!op)
        access_run(sim, addr, NULL, size, n, op_all, size_all);
    else
        access_run(sim, addr, op, size, n, op_all, size_all);
}

void pl_sim_access_outcomes(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                            const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all,
                            uint8_t *outcome)
{
    for (size_t i = 0; i < n; i++) {
        uint8_t o = op ? op[i] : op_all;
        uint32_t sz = size ? size[i] : size_all;
        int r = 0, first = PL_SIM_HIT | PL_SIM_EVICT;
        if (o == PL_OP_LOAD || o == PL_OP_MODIFY)
            r = pl_sim_access_slow(sim, addr[i], sz, 0) & first;
        if (o == PL_OP_STORE)
            r = pl_sim_access_slow(sim, addr[i], sz, 1) & first;
        if (o == PL_OP_MODIFY)
            r |= (pl_sim_access_slow(sim, addr[i], sz, 1) & first) << 2;
        outcome[i] = (uint8_t)r;
    }
}
