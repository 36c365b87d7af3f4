#include "pl_cell.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PL_CELL_RUNNER
#include "pagelab_cell.h"

/* Site 0 gathers accesses whose call site is not in the cell's code (or could not be indexed). */
#define OUTSIDE 0
#define NO_OFFSET UINT64_MAX

/* Records per buffer: 64 KiB, which stays in the L2 cache between the hooks' stores and the
 * simulation's loads. */
#define BUFFER_RECS 4096

/* The counts a site is charged, as the simulator's live counts stood at the last charge. */
struct charged {
    uint64_t l1_read, l1_write, compulsory, capacity, conflict, llc_read, llc_write, tlb;
};

struct pl_cell_sites {
    void *thread;     /* main()'s thread pointer: the only thread simulated (the model
                         is one core's caches) */
    uintptr_t base;   /* the cell's load address: offsets are relative to it */
    uintptr_t lo, hi; /* its code, [lo, hi) */
    uint32_t *slot;   /* per code byte: 1 + the index of its site, or 0 */
    uint32_t cap;     /* sites allocated */
    int counting;     /* 0 once the first region has ended */
    struct pl_cell_hooks *hooks;
    struct pl_cell_rec *buffer; /* the hooks' records (NULL: every access comes to touch()) */
    struct pl_sim *sim;         /* the simulator, and its counts as they stand: */
    const struct pl_sim_counts *l1, *llc, *tlb;
    struct charged seen; /* at the last access charged */
    uint64_t misses;     /* misses(x) then */
};

static const struct pl_sim_counts none;

static void drain(struct pl_cell *cell);

static void cell_begin(void *ctx)
{
    struct pl_cell *cell = ctx;
    drain(cell); /* the accesses before the region warm the caches but count for no site */
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
    drain(cell);
    if (cell->begun > 0 && cell->ended++ == 0) {
        pl_region_end(&cell->region);
        if (cell->index)
            cell->index->counting = 0;
    }
}

/* The L1 and TLB misses so far. Every count a site is charged moves only with one of them (the
 * LLC sees only L1 misses; the classes split them), so an access that leaves this unchanged
 * (most of them) is charged nothing. */
static inline uint64_t misses(const struct pl_cell_sites *x)
{
    return x->l1->read_misses + x->l1->write_misses + x->tlb->read_misses + x->tlb->write_misses;
}

/* The index entry of a return address in the code at lo (span bytes), or NULL outside it. */
static inline uint32_t *slot_of(uint32_t *slot, uintptr_t lo, uintptr_t span, uintptr_t pc)
{
    return slot && pc - lo < span ? &slot[pc - lo] : NULL;
}

/* The site of a call's return address, new on its first access; NULL when no longer counting. */
static inline struct pl_cell_site *site_of(struct pl_cell *cell, uintptr_t pc)
{
    struct pl_cell_sites *x = cell->index;
    if (!x->counting)
        return NULL;
    uint32_t *slot = slot_of(x->slot, x->lo, x->hi - x->lo, pc);
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

/* The access just simulated missed somewhere: its misses go to site s (if any). */
static __attribute__((noinline)) void charge(struct pl_cell_sites *x, struct pl_cell_site *s)
{
    const struct pl_sim_counts *l1 = x->l1, *llc = x->llc, *tlb = x->tlb;
    struct charged now = {
        l1->read_misses, l1->write_misses, l1->compulsory,    l1->capacity,
        l1->conflict,    llc->read_misses, llc->write_misses, tlb->read_misses + tlb->write_misses,
    };
    if (s) {
        s->l1_read_misses += now.l1_read - x->seen.l1_read;
        s->l1_write_misses += now.l1_write - x->seen.l1_write;
        s->compulsory += now.compulsory - x->seen.compulsory;
        s->capacity += now.capacity - x->seen.capacity;
        s->conflict += now.conflict - x->seen.conflict;
        s->llc_read_misses += now.llc_read - x->seen.llc_read;
        s->llc_write_misses += now.llc_write - x->seen.llc_write;
        s->tlb_misses += now.tlb - x->seen.tlb;
    }
    x->seen = now;
    x->misses = misses(x);
}

/* One access (a piece of at most PL_CELL_CHUNK bytes) charged to site s. */
static inline __attribute__((always_inline)) void simulate_at(struct pl_cell_sites *x,
                                                              struct pl_cell_site *s, uint64_t addr,
                                                              uint64_t size, int is_write)
{
    *(is_write ? &s->writes : &s->reads) += 1;
    pl_sim_access(x->sim, addr, (uint32_t)size, is_write);
    if (misses(x) != x->misses)
        charge(x, s);
}

/* The same, charged to site s if any (NULL: no longer counting). */
static inline __attribute__((always_inline)) void simulate_one(struct pl_cell_sites *x,
                                                               struct pl_cell_site *s,
                                                               uint64_t addr, uint64_t size,
                                                               int is_write)
{
    if (s) {
        simulate_at(x, s, addr, size, is_write);
        return;
    }
    pl_sim_access(x->sim, addr, (uint32_t)size, is_write);
    if (misses(x) != x->misses)
        charge(x, NULL);
}

/* An access of size bytes at addr from the call returning to pc, by main()'s thread; wider
 * ones than PL_CELL_CHUNK are simulated as the chunk-aligned pieces a copy would move. */
static inline __attribute__((always_inline)) void
simulate(struct pl_cell *cell, uint64_t addr, uint64_t size, int is_write, uintptr_t pc)
{
    struct pl_cell_sites *x = cell->index;
    struct pl_cell_site *s = site_of(cell, pc);
    if (__builtin_expect(size <= PL_CELL_CHUNK, 1)) {
        simulate_one(x, s, addr, size, is_write);
        return;
    }
    for (uint64_t end = addr + size; addr < end;) {
        uint64_t piece = PL_CELL_CHUNK - addr % PL_CELL_CHUNK;
        piece = piece < end - addr ? piece : end - addr;
        simulate_one(x, s, addr, piece, is_write);
        addr += piece;
    }
}

/* The hooks' buffer, simulated record by record and emptied. The common record (one piece,
 * from a site already indexed, while the sites count) finds its site through locals: through
 * cell and x, the compiler would reload the index after every call into the simulator. */
static void cell_flush(void *ctx)
{
    struct pl_cell *cell = ctx;
    struct pl_cell_sites *x = cell->index;
    const struct pl_cell_rec *r = x->buffer, *end = x->hooks->next;
    const uint32_t *slot = x->slot;
    /* span 0 (no index, or no longer counting): every record the long way */
    uintptr_t lo = x->lo, span = x->counting && slot ? x->hi - x->lo : 0;
    struct pl_cell_site *sites = cell->sites;
    for (; r < end; r++) {
        uint64_t addr = r->addr, site = r->site, size = site >> 1 & PL_CELL_REC_MAX;
        uintptr_t at = (uintptr_t)(site >> 16) - lo;
        int is_write = (int)(site & 1);
        uint32_t k = at < span && size <= PL_CELL_CHUNK ? slot[at] : 0;
        if (__builtin_expect(k == 0, 0)) { /* a new site, or not counted, or wider */
            simulate(cell, addr, size, is_write, (uintptr_t)(site >> 16));
            sites = cell->sites; /* a new site may have moved them */
            continue;
        }
        simulate_at(x, &sites[k - 1], addr, size, is_write);
    }
    x->hooks->next = x->buffer;
}

/* Whatever the buffer holds, simulated before anything else happens. */
static void drain(struct pl_cell *cell)
{
    struct pl_cell_sites *x = cell->index;
    if (x && x->buffer && x->hooks->next != x->buffer && __builtin_thread_pointer() == x->thread)
        cell_flush(cell);
}

/* An access that came without the buffer: PL_LOAD/PL_STORE, an access wider than a record, or
 * one by another thread (counted, not simulated). */
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
    drain(cell);
    simulate(cell, addr, size, is_write, (uintptr_t)pc);
}

/* Where main() ends when the cell calls exit(): back in pl_cell_run (one cell per worker). */
static jmp_buf main_over;
static void *main_thread;

static void cell_exit(void *ctx, int status)
{
    struct pl_cell *cell = ctx;
    if (__builtin_thread_pointer() != main_thread)
        return; /* another thread's exit() ends the process as it would anyway */
    cell->status = status;
    cell->exited = 1;
    longjmp(main_over, 1);
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

static int sites_init(struct pl_cell *cell, void *handle, struct pl_cell_hooks *hooks)
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
    x->hooks = hooks;
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
    /* a record holds a return address of up to 48 bits: without the buffer, touch() takes all */
    if (x->hi > x->lo && x->hi <= (1ull << 48) && x->slot) {
        x->buffer = malloc(BUFFER_RECS * sizeof *x->buffer);
        if (!x->buffer)
            return -ENOMEM;
    }
    struct pl_sim *sim = x->sim = cell->region.sim;
    x->l1 = pl_sim_counts_live(sim, 0, 0);
    x->tlb = pl_sim_counts_live(sim, 1, 0);
    x->llc = NULL;
    for (int i = 1; pl_sim_counts_live(sim, 0, i); i++)
        x->llc = pl_sim_counts_live(sim, 0, i);
    /* a level that is not there counts nothing */
    x->l1 = x->l1 ? x->l1 : &none;
    x->llc = x->llc ? x->llc : &none;
    x->tlb = x->tlb ? x->tlb : &none;
    charge(x, NULL);
    return 0;
}

void pl_cell_release(struct pl_cell *cell)
{
    if (cell->index) {
        free(cell->index->slot);
        free(cell->index->buffer);
    }
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
    if (cell->region.sim && sites_init(cell, handle, hooks)) {
        pl_cell_release(cell);
        snprintf(cell->error, sizeof cell->error, "no memory for the cell's call sites");
        dlclose(handle);
        return -1;
    }
    hooks->begin = cell_begin;
    hooks->end = cell_end;
    hooks->access = cell_access;
    hooks->touch = cell_touch;
    hooks->exit = cell_exit;
    hooks->ctx = cell;
    if (cell->index && cell->index->buffer) {
        hooks->flush = cell_flush;
        hooks->next = cell->index->buffer;
        hooks->last = cell->index->buffer + BUFFER_RECS;
        hooks->thread = cell->index->thread;
    }
    cell->whole.group = cell->region.group;
    cell->whole.sim = cell->region.sim;
    char name[] = "cell";
    char *argv[] = {name, NULL};
    main_thread = __builtin_thread_pointer();
    pl_region_begin(&cell->whole);
    if (setjmp(main_over) == 0)
        cell->status = cell_main(1, argv);
    hooks->exit = NULL; /* an exit() from an atexit handler, later, is the real one */
    drain(cell);
    pl_region_end(&cell->whole);
    fflush(stdout);
    /* not dlclose()d: the cell may have registered atexit handlers; the worker exits soon */
    return 0;
}
