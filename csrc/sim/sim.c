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

struct pl_sim_core {
    int nlevels, ntlbs;
    unsigned page_shift;
    struct pl_cache level[PL_SIM_MAX_LEVELS];
    struct pl_cache tlb[PL_SIM_MAX_TLBS];
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
    if (cfg->ntlbs && cfg->page_size != PL_SIM_PAGE_4K && cfg->page_size != PL_SIM_PAGE_2M)
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

int pl_sim_access_slow(struct pl_sim *sim, uint64_t addr, uint32_t size, int is_write)
{
    struct pl_sim_core *k = sim->core;
    uint64_t end = addr + (size ? size - 1 : 0);
    if (end < addr)
        end = UINT64_MAX; /* an access cannot wrap around the address space */
    if (k->ntlbs) {
        /* the DTLB's most recently used page again: a hit that changes nothing else */
        struct pl_cache *dtlb = &k->tlb[0];
        uint64_t page = addr >> k->page_shift;
        if (page == dtlb->mru_line && dtlb->mru_valid && page == end >> k->page_shift)
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
    return out;
}

/* pl_sim_access over arrays, with the fast-path state in locals: through sim, every store to
 * *last_dirty (a uint8_t, which may alias anything) would force the state to be reloaded. op and
 * size are constant NULLs in the specialised copies, so the common loops test nothing per access
 * but the fast path. */
PL_HOT void access_run(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                       const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all)
{
    const unsigned shift = sim->shift;
    const uint64_t gmask = sim->gmask;
    uint64_t last = sim->last, limit = sim->limit, fast[2] = {0, 0};
    uint8_t *last_dirty = sim->last_dirty;
    for (size_t i = 0; i < n; i++) {
        uint8_t o = op ? op[i] : op_all;
        uint64_t a = addr[i], sz = size ? size[i] : size_all;
        for (int w = 0; w < 2; w++) {
            if (!(w ? o == PL_OP_STORE || o == PL_OP_MODIFY : o == PL_OP_LOAD || o == PL_OP_MODIFY))
                continue;
            if ((a >> shift) == last && (a & gmask) + sz - 1 < limit) {
                fast[w]++;
                if (w)
                    *last_dirty = 1;
                continue;
            }
            pl_sim_access_slow(sim, a, (uint32_t)sz, w);
            last = sim->last;
            limit = sim->limit;
            last_dirty = sim->last_dirty;
        }
    }
    sim->fast[0] += fast[0];
    sim->fast[1] += fast[1];
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
        int r = 0;
        if (o == PL_OP_LOAD || o == PL_OP_MODIFY)
            r = pl_sim_access_slow(sim, addr[i], sz, 0);
        if (o == PL_OP_STORE)
            r = pl_sim_access_slow(sim, addr[i], sz, 1);
        if (o == PL_OP_MODIFY)
            r |= pl_sim_access_slow(sim, addr[i], sz, 1) << 2;
        outcome[i] = (uint8_t)r;
    }
}
