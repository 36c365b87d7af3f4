#include "pl_cell.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PL_CELL_RUNNER
#include "pagelab_cell.h"

/* Site 0 gathers accesses whose call site is not in the cell's code (or could not be indexed). */
#define OUTSIDE 0
#define NO_OFFSET UINT64_MAX

struct pl_cell_sites {
    void *thread;       /* main()'s thread pointer: the only thread simulated (the model
                           is one core's caches) */
    uintptr_t base;     /* the cell's load address: offsets are relative to it */
    uintptr_t lo, hi;   /* its code, [lo, hi) */
    uint32_t *slot;     /* per code byte: 1 + the index of its site, or 0 */
    uint32_t cap;       /* sites allocated */
    int counting;       /* 0 once the first region has ended */
    struct pl_sim *sim; /* the simulator, and its counts as they stand: */
    const struct pl_sim_counts *l1, *llc, *tlb, *probe;
    struct pl_sim_counts seen_l1, seen_llc, seen_tlb; /* at the last access charged */
    uint64_t seen;                                    /* total(probe) then */
};

static const struct pl_sim_counts none;

static void cell_begin(void *ctx)
{
    struct pl_cell *cell = ctx;
    if (cell->begun++ == 0) {
        if (cell->index) /* the sites count the region from here */
            for (uint32_t i = 0; i < cell->nsites; i++) {
                uint64_t offset = cell->sites[i].offset;
                memset(&cell->sites[i], 0, sizeof cell->sites[i]);
                cell->sites[i].offset = offset;
            }
        pl_region_begin(&cell->region);
    }
}

static void cell_end(void *ctx)
{
    struct pl_cell *cell = ctx;
    if (cell->begun > 0 && cell->ended++ == 0) {
        pl_region_end(&cell->region);
        if (cell->index)
            cell->index->counting = 0;
    }
}

/* Moves whenever an access changed the live counts (pl_sim_counts_live): an access the first
 * level counts itself, or a miss of one it left to the fast path's count. */
static uint64_t total(const struct pl_sim_counts *c)
{
    return c->reads + c->writes + c->read_misses + c->write_misses;
}

/* The site of a call's return address, new on its first access; NULL when no longer counting. */
static struct pl_cell_site *site_of(struct pl_cell *cell, uintptr_t pc)
{
    struct pl_cell_sites *x = cell->index;
    if (!x->counting)
        return NULL;
    uint32_t *slot = x->slot && pc >= x->lo && pc < x->hi ? &x->slot[pc - x->lo] : NULL;
    if (!slot)
        return &cell->sites[OUTSIDE];
    if (*slot)
        return &cell->sites[*slot - 1];
    if (cell->nsites == x->cap) {
        struct pl_cell_site *more = realloc(cell->sites, 2 * x->cap * sizeof *more);
        if (!more)
            return &cell->sites[OUTSIDE];
        cell->sites = more;
        x->cap *= 2;
    }
    struct pl_cell_site *s = &cell->sites[cell->nsites];
    memset(s, 0, sizeof *s);
    s->offset = pc - x->base;
    *slot = ++cell->nsites;
    return s;
}

/* The access just simulated took the slow path: its misses go to site s (if any). */
static void charge(struct pl_cell_sites *x, struct pl_cell_site *s)
{
    const struct pl_sim_counts l1 = *x->l1, llc = *x->llc, tlb = *x->tlb;
    if (s) {
        s->l1_read_misses += l1.read_misses - x->seen_l1.read_misses;
        s->l1_write_misses += l1.write_misses - x->seen_l1.write_misses;
        s->compulsory += l1.compulsory - x->seen_l1.compulsory;
        s->capacity += l1.capacity - x->seen_l1.capacity;
        s->conflict += l1.conflict - x->seen_l1.conflict;
        s->llc_read_misses += llc.read_misses - x->seen_llc.read_misses;
        s->llc_write_misses += llc.write_misses - x->seen_llc.write_misses;
        s->tlb_misses +=
            tlb.read_misses + tlb.write_misses - x->seen_tlb.read_misses - x->seen_tlb.write_misses;
    }
    x->seen_l1 = l1, x->seen_llc = llc, x->seen_tlb = tlb;
    x->seen = total(x->probe);
}

/* An access of size bytes at addr from the call returning to pc; wider ones than PL_CELL_CHUNK
 * are simulated as the chunk-aligned pieces a copy would move. */
static void cell_touch(void *ctx, uint64_t addr, uint64_t size, int is_write, const void *pc)
{
    struct pl_cell *cell = ctx;
    struct pl_cell_sites *x = cell->index;
    if (!x) /* no simulator: nothing to feed */
        return;
    if (__builtin_thread_pointer() != x->thread) {
        __atomic_fetch_add(&cell->other_threads, 1, __ATOMIC_RELAXED);
        return;
    }
    struct pl_cell_site *s = site_of(cell, (uintptr_t)pc);
    uint64_t end = addr + size;
    do {
        uint64_t piece = size <= PL_CELL_CHUNK ? size : PL_CELL_CHUNK - addr % PL_CELL_CHUNK;
        if (piece > end - addr)
            piece = end - addr;
        if (s)
            *(is_write ? &s->writes : &s->reads) += 1;
        pl_sim_access(x->sim, addr, (uint32_t)piece, is_write);
        if (total(x->probe) != x->seen)
            charge(x, s);
        addr += piece;
    } while (addr < end);
}

/* PL_LOAD / PL_STORE: the call site is this function's return address, in the cell's code. */
static __attribute__((noinline)) void cell_access(void *ctx, uint64_t addr, uint32_t size,
                                                  int is_write)
{
    cell_touch(ctx, addr, size, is_write, __builtin_return_address(0));
}

/* The cell's code: the executable segments of the object loaded at base. */
struct code {
    uintptr_t base, lo, hi;
};

static int find_code(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct code *c = data;
    if (info->dlpi_addr != c->base)
        return 0;
    for (int i = 0; i < info->dlpi_phnum; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
            continue;
        uintptr_t lo = c->base + ph->p_vaddr, hi = lo + ph->p_memsz;
        c->lo = c->lo && c->lo < lo ? c->lo : lo;
        c->hi = c->hi > hi ? c->hi : hi;
    }
    return 1;
}

static int sites_init(struct pl_cell *cell, void *handle)
{
    struct pl_cell_sites *x = cell->index = calloc(1, sizeof *x);
    enum { FIRST = 64 };
    cell->sites = calloc(FIRST, sizeof *cell->sites);
    if (!x || !cell->sites)
        return -ENOMEM;
    x->cap = FIRST;
    cell->nsites = 1; /* OUTSIDE */
    cell->sites[OUTSIDE].offset = NO_OFFSET;
    x->thread = __builtin_thread_pointer();
    x->counting = 1;
    struct link_map *map;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0) {
        struct code c = {.base = map->l_addr};
        dl_iterate_phdr(find_code, &c);
        x->base = c.base;
        if (c.hi > c.lo) {
            x->lo = c.lo, x->hi = c.hi;
            x->slot = calloc(c.hi - c.lo, sizeof *x->slot); /* NULL: all go to OUTSIDE */
        }
    }
    struct pl_sim *sim = x->sim = cell->region.sim;
    x->l1 = pl_sim_counts_live(sim, 0, 0);
    x->tlb = pl_sim_counts_live(sim, 1, 0);
    x->llc = NULL;
    for (int i = 1; pl_sim_counts_live(sim, 0, i); i++)
        x->llc = pl_sim_counts_live(sim, 0, i);
    x->probe = x->l1 ? x->l1 : x->tlb;
    /* a level that is not there counts nothing */
    x->l1 = x->l1 ? x->l1 : &none;
    x->llc = x->llc ? x->llc : &none;
    x->tlb = x->tlb ? x->tlb : &none;
    charge(x, NULL);
    return 0;
}

void pl_cell_release(struct pl_cell *cell)
{
    if (cell->index)
        free(cell->index->slot);
    free(cell->index);
    free(cell->sites);
    cell->index = NULL;
    cell->sites = NULL;
    cell->nsites = 0;
}

int pl_cell_run(const char *path, struct pl_cell *cell)
{
    void *handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!handle) {
        snprintf(cell->error, sizeof cell->error, "%s", dlerror());
        return -1;
    }
    struct pl_cell_hooks *hooks = dlsym(handle, "pl_cell_hooks");
    int (*cell_main)(int, char **) = (int (*)(int, char **))dlsym(handle, "pl_cell_main");
    if (!hooks || !cell_main) {
        snprintf(cell->error, sizeof cell->error, "the cell defines no main()");
        dlclose(handle);
        return -1;
    }
    if (cell->region.sim && sites_init(cell, handle)) {
        pl_cell_release(cell);
        snprintf(cell->error, sizeof cell->error, "no memory for the cell's call sites");
        dlclose(handle);
        return -1;
    }
    hooks->begin = cell_begin;
    hooks->end = cell_end;
    hooks->access = cell_access;
    hooks->touch = cell_touch;
    hooks->ctx = cell;
    cell->whole.group = cell->region.group;
    cell->whole.sim = cell->region.sim;
    char name[] = "cell";
    char *argv[] = {name, NULL};
    pl_region_begin(&cell->whole);
    cell->status = cell_main(1, argv);
    pl_region_end(&cell->whole);
    fflush(stdout);
    /* not dlclose()d: the cell may have registered atexit handlers; the worker exits soon */
    return 0;
}
