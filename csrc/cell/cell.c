#include "pl_cell.h"

#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PL_CELL_RUNNER
#include "pagelab_cell.h"
#include "sim/pl_coherence.h"

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

/* Threads, PL_THREADS_CORES: once a second thread starts, each thread's accesses are recorded
 * in a stream of its own, a list of blocks that its thread appends to and the interleaving
 * (replay) consumes; a record is published by the store of the block's count. */
#define STREAM_BLOCK 4096
struct block {
    struct block *next; /* set once the block is full */
    uint32_t count;     /* records published (atomic) */
    struct pl_cell_rec rec[STREAM_BLOCK];
};
struct stream { /* a line of its own: each is written by its own thread */
    _Alignas(64) struct block *head, *tail; /* the replay's, the appender's */
    uint32_t done;                          /* records of head replayed */
    uint64_t appended, taken;               /* records in all (atomic), and replayed */
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
    uint64_t misses;     /* misses(x) then (not kept with two_levels) */
    int two_levels;      /* no TLB and no classes: only the L1's and LLC's misses move, and
                            pl_sim_access's outcome says when */
    /* PL_THREADS_CORES: the cores (NULL until a second thread is spawned), each thread's stream
     * and index of its sites (slots[0] is unused: main()'s is slot), and the records held. */
    struct pl_coh *coh;
    int nthreads; /* numbers handed out, main()'s 0 included */
    struct stream stream[PL_COH_MAX_CORES];
    int ended[PL_COH_MAX_CORES];        /* the thread's start routine has returned (atomic) */
    uint32_t *slots[PL_COH_MAX_CORES];  /* per thread after main()'s: slot's like */
    uint32_t outside[PL_COH_MAX_CORES]; /* 1 + a thread's site for calls outside the cell */
    /* the interleaving: the threads in turn (in the order their spawns were replayed), whose
     * turn it is, and how many of its quantum it has used */
    int order[PL_COH_MAX_CORES], active, turn;
    uint32_t used;
    uint64_t held;        /* records in the streams (atomic) */
    pthread_mutex_t lock; /* the model: spawning a core, replaying */
};

/* A stream record that is not an access: the spawn of thread addr (the site's pc is 0). */
#define SPAWN_SITE 0

_Static_assert(PL_CELL_THREADS == PL_COH_MAX_CORES, "a thread number is a core");

/* This thread's number in the model, -1 for a thread not simulated. */
static __thread int my_number = -1;

static const struct pl_sim_counts none;

static void drain(struct pl_cell *cell);
static void replay(struct pl_cell *cell, int force);
static void take_snapshot(struct pl_cell *cell, struct pl_region *r, struct pl_snapshot *snap);

static void cell_begin(void *ctx)
{
    struct pl_cell *cell = ctx;
    drain(cell); /* the accesses before the region warm the caches but count for no site */
    replay(cell, 1);
    if (cell->begun++ == 0) {
        if (cell->index) /* the sites count the region from here */
            for (uint32_t i = 0; i < cell->nsites; i++) {
                struct pl_cell_site *s = &cell->sites[i];
                *s = (struct pl_cell_site){.offset = s->offset, .thread = s->thread};
            }
        pl_region_begin(&cell->region);
        take_snapshot(cell, &cell->region, &cell->region.begin);
    }
}

static void cell_end(void *ctx)
{
    struct pl_cell *cell = ctx;
    drain(cell);
    replay(cell, 1);
    if (cell->begun > 0 && cell->ended++ == 0) {
        pl_region_end(&cell->region);
        take_snapshot(cell, &cell->region, &cell->region.end);
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

/* A new site for thread's calls returning to offset, its index kept in *slot; NULL when the
 * sites cannot grow. */
static struct pl_cell_site *new_site(struct pl_cell *cell, uint64_t offset, uint32_t thread,
                                     uint32_t *slot)
{
    struct pl_cell_sites *x = cell->index;
    if (cell->nsites == x->cap) {
        struct pl_cell_site *more = realloc(cell->sites, 2 * x->cap * sizeof *more);
        if (!more)
            return NULL;
        cell->sites = more;
        x->cap *= 2;
    }
    struct pl_cell_site *s = &cell->sites[cell->nsites];
    memset(s, 0, sizeof *s);
    s->offset = offset;
    s->thread = thread;
    *slot = ++cell->nsites;
    return s;
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
    struct pl_cell_site *s = new_site(cell, pc - x->base, 0, slot);
    return s ? s : &cell->sites[OUTSIDE];
}

/* The access just simulated missed somewhere: its misses go to site s (if any). */
static __attribute__((noinline)) void charge(struct pl_cell_sites *x, struct pl_cell_site *s)
{
    const struct pl_sim_counts *l1 = x->l1, *llc = x->llc, *tlb = x->tlb;
    if (x->two_levels && s) { /* the common case, the other counts standing still */
        s->l1_read_misses += l1->read_misses - x->seen.l1_read;
        s->l1_write_misses += l1->write_misses - x->seen.l1_write;
        s->llc_read_misses += llc->read_misses - x->seen.llc_read;
        s->llc_write_misses += llc->write_misses - x->seen.llc_write;
        x->seen.l1_read = l1->read_misses, x->seen.l1_write = l1->write_misses;
        x->seen.llc_read = llc->read_misses, x->seen.llc_write = llc->write_misses;
        return;
    }
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

/* Whether the access just simulated, whose outcome was r, may have missed: with two levels,
 * its outcome says so; else the misses so far moved. */
static inline int missed(const struct pl_cell_sites *x, int r)
{
    return x->two_levels ? r != PL_SIM_HIT : misses(x) != x->misses;
}

/* One access (a piece of at most PL_CELL_CHUNK bytes) charged to site s. With two levels, an
 * outcome that tells all the access missed is charged from it, with no count read (the counts
 * charge() compares with move along); else charge() compares. */
static inline __attribute__((always_inline)) void simulate_at(struct pl_cell_sites *x,
                                                              struct pl_cell_site *s, uint64_t addr,
                                                              uint64_t size, int is_write)
{
    *(is_write ? &s->writes : &s->reads) += 1;
    int r = pl_sim_access(x->sim, addr, (uint32_t)size, is_write);
    if (!missed(x, r))
        return;
    if (!x->two_levels || (r & (PL_SIM_MORE | PL_SIM_HIT))) {
        charge(x, s);
        return;
    }
    uint64_t llc = (r & PL_SIM_MISS2) != 0;
    if (is_write) {
        s->l1_write_misses++, x->seen.l1_write++;
        s->llc_write_misses += llc, x->seen.llc_write += llc;
    } else {
        s->l1_read_misses++, x->seen.l1_read++;
        s->llc_read_misses += llc, x->seen.llc_read += llc;
    }
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
    if (missed(x, pl_sim_access(x->sim, addr, (uint32_t)size, is_write)))
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
static void record_buffer(struct pl_cell *cell);

static void cell_flush(void *ctx)
{
    struct pl_cell *cell = ctx;
    struct pl_cell_sites *x = cell->index;
    if (x->coh) { /* threads: main()'s accesses join its stream, to be interleaved */
        record_buffer(cell);
        return;
    }
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

/* Threads (PL_THREADS_CORES). Until main() spawns a thread, its accesses are simulated as they
 * come (above). From the first spawn on, every simulated thread's accesses go to its stream,
 * and replay() interleaves the streams on the cores of the model. */

/* Append a record to thread t's stream (only thread t appends to it). x is the index the
 * caller read: a thread that outlives main() may be here when pl_cell_release() clears it. */
static void append(struct pl_cell *cell, struct pl_cell_sites *x, int t, uint64_t addr,
                   uint64_t site)
{
    struct stream *st = &x->stream[t];
    struct block *b = st->tail;
    uint32_t n = b ? b->count : STREAM_BLOCK;
    if (n == STREAM_BLOCK) {
        struct block *more = NULL;
        if (__atomic_add_fetch(&x->held, STREAM_BLOCK, __ATOMIC_RELAXED) <= PL_CELL_RECORDED_MAX)
            more = malloc(sizeof *more);
        if (!more) {
            __atomic_sub_fetch(&x->held, STREAM_BLOCK, __ATOMIC_RELAXED);
            __atomic_fetch_add(&cell->unrecorded, 1, __ATOMIC_RELAXED);
            return;
        }
        more->next = NULL;
        more->count = 0;
        if (b)
            __atomic_store_n(&b->next, more, __ATOMIC_RELEASE);
        else
            __atomic_store_n(&st->head, more, __ATOMIC_RELEASE);
        st->tail = b = more;
        n = 0;
    }
    b->rec[n] = (struct pl_cell_rec){addr, site};
    __atomic_store_n(&b->count, n + 1, __ATOMIC_RELEASE);
    __atomic_store_n(&st->appended, st->appended + 1, __ATOMIC_RELEASE);
}

/* An access of size bytes as records (each at most PL_CELL_REC_MAX bytes, whole chunks). */
static void record(struct pl_cell *cell, struct pl_cell_sites *x, int t, uint64_t addr,
                   uint64_t size, int is_write, uintptr_t pc)
{
    const uint64_t most = PL_CELL_REC_MAX & ~(uint64_t)(PL_CELL_CHUNK - 1);
    do {
        uint64_t n = size < most ? size : most;
        append(cell, x, t, addr, (uint64_t)pc << 16 | n << 1 | (uint64_t)(is_write != 0));
        addr += n, size -= n;
    } while (size);
}

/* main()'s buffer, moved to its stream. */
static void record_buffer(struct pl_cell *cell)
{
    struct pl_cell_sites *x = cell->index;
    for (const struct pl_cell_rec *r = x->buffer; r < x->hooks->next; r++)
        append(cell, x, 0, r->addr, r->site);
    x->hooks->next = x->buffer;
    replay(cell, 0); /* what can be interleaved already: the streams stay short */
}

/* The next record of a stream, freeing the blocks it is done with; 0 when none is published,
 * or when limit records have been taken. */
static int take(struct pl_cell_sites *x, struct stream *st, uint64_t limit, struct pl_cell_rec *out)
{
    if (st->taken >= limit)
        return 0;
    for (;;) {
        struct block *b = __atomic_load_n(&st->head, __ATOMIC_ACQUIRE);
        if (!b)
            return 0;
        if (st->done < __atomic_load_n(&b->count, __ATOMIC_ACQUIRE)) {
            *out = b->rec[st->done++];
            st->taken++;
            return 1;
        }
        struct block *next = __atomic_load_n(&b->next, __ATOMIC_ACQUIRE);
        if (!next)
            return 0;
        st->head = next;
        st->done = 0;
        free(b);
        __atomic_sub_fetch(&x->held, STREAM_BLOCK, __ATOMIC_RELAXED);
    }
}

/* Thread t's site for a call returning to pc; NULL when no longer counting. */
static struct pl_cell_site *thread_site(struct pl_cell *cell, int t, uintptr_t pc)
{
    struct pl_cell_sites *x = cell->index;
    if (t == 0 || !x->counting)
        return site_of(cell, pc);
    if (!x->slots[t] && x->slot)
        x->slots[t] = calloc(x->hi - x->lo, sizeof *x->slots[t]);
    uint32_t *slot = slot_of(x->slots[t], x->lo, x->hi - x->lo, pc);
    uint64_t offset = pc - x->base;
    if (!slot)
        slot = &x->outside[t], offset = NO_OFFSET;
    if (*slot)
        return &cell->sites[*slot - 1];
    struct pl_cell_site *s = new_site(cell, offset, (uint32_t)t, slot);
    return s ? s : &cell->sites[OUTSIDE];
}

static uint64_t total_misses(const struct pl_sim_counts *n)
{
    return n->read_misses + n->write_misses;
}

/* One piece of thread t's access through the cores, charged to site s (if any). */
static void replay_piece(struct pl_cell *cell, int t, struct pl_cell_site *s, uint64_t addr,
                         uint64_t size, int is_write)
{
    struct pl_cell_sites *x = cell->index;
    struct pl_sim *sim = pl_coh_sim(x->coh, t);
    const struct pl_sim_counts *l1 = pl_sim_counts_live(sim, 0, 0);
    const struct pl_sim_counts *tlb = pl_sim_counts_live(sim, 1, 0);
    l1 = l1 ? l1 : &none;
    tlb = tlb ? tlb : &none;
    struct pl_sim_counts b1 = *l1, bl = *x->llc;
    uint64_t bt = total_misses(tlb);
    pl_coh_access(x->coh, t, addr, (uint32_t)size, is_write);
    if (!s)
        return;
    *(is_write ? &s->writes : &s->reads) += 1;
    s->l1_read_misses += l1->read_misses - b1.read_misses;
    s->l1_write_misses += l1->write_misses - b1.write_misses;
    s->compulsory += l1->compulsory - b1.compulsory;
    s->capacity += l1->capacity - b1.capacity;
    s->conflict += l1->conflict - b1.conflict;
    s->coherence += l1->coherence - b1.coherence;
    s->llc_read_misses += x->llc->read_misses - bl.read_misses;
    s->llc_write_misses += x->llc->write_misses - bl.write_misses;
    s->tlb_misses += total_misses(tlb) - bt;
}

/* One record of thread t's stream: a spawn joins the turns; an access is simulated in the
 * chunk-aligned pieces simulate() makes. */
static void replay_record(struct pl_cell *cell, int t, const struct pl_cell_rec *r)
{
    struct pl_cell_sites *x = cell->index;
    uint64_t addr = r->addr, size = r->site >> 1 & PL_CELL_REC_MAX;
    uintptr_t pc = (uintptr_t)(r->site >> 16);
    int is_write = (int)(r->site & 1);
    if (pc == SPAWN_SITE) {
        x->order[x->active++] = (int)addr;
        return;
    }
    struct pl_cell_site *s = thread_site(cell, t, pc);
    if (size <= PL_CELL_CHUNK) {
        replay_piece(cell, t, s, addr, size, is_write);
        return;
    }
    for (uint64_t end = addr + size; addr < end;) {
        uint64_t piece = PL_CELL_CHUNK - addr % PL_CELL_CHUNK;
        piece = piece < end - addr ? piece : end - addr;
        replay_piece(cell, t, s, addr, piece, is_write);
        addr += piece;
    }
}

/* The interleaving: the threads take turns in the order their spawns were replayed (main()'s
 * first), each turn `quantum` accesses of its stream or until it has ended. It stops where a
 * thread still running has no more records yet, so whenever it runs, what it has replayed is
 * a prefix of the one interleaving of the complete streams; with force (at a region's ends and
 * at main()'s end) a running thread's stream counts as ended where its records stood when the
 * replay began. */
static void replay(struct pl_cell *cell, int force)
{
    struct pl_cell_sites *x = cell->index;
    if (!x || !x->coh)
        return;
    uint32_t quantum = cell->quantum ? cell->quantum : PL_CELL_QUANTUM;
    pthread_mutex_lock(&x->lock);
    uint64_t limit[PL_COH_MAX_CORES];
    for (int t = 0; t < x->nthreads; t++)
        limit[t] = force ? __atomic_load_n(&x->stream[t].appended, __ATOMIC_ACQUIRE) : UINT64_MAX;
    for (int idle = 0; idle < x->active;) {
        int t = x->order[x->turn];
        struct pl_cell_rec r;
        if (x->used < quantum) {
            /* ended first: a record published before the end is then taken below */
            int ended = force || __atomic_load_n(&x->ended[t], __ATOMIC_ACQUIRE);
            if (take(x, &x->stream[t], limit[t], &r)) {
                replay_record(cell, t, &r);
                x->used += (uintptr_t)(r.site >> 16) != SPAWN_SITE;
                continue;
            }
            if (!ended)
                break; /* its next records are not recorded yet */
        }
        idle = x->used ? 0 : idle + 1; /* a whole round of empty turns: all is replayed */
        x->turn = (x->turn + 1) % x->active;
        x->used = 0;
    }
    charge(x, NULL); /* main()'s own charging starts from the counts as they stand */
    pthread_mutex_unlock(&x->lock);
}

/* pthread_create by a thread of the cell: the new thread's number, or 0 where it is not
 * simulated (PL_THREADS_MAIN, no simulator, a model that cannot take another core). */
static int cell_spawned(void *ctx)
{
    struct pl_cell *cell = ctx;
    struct pl_cell_sites *x = cell->index;
    if (!x || cell->threads_model != PL_THREADS_CORES || my_number < 0)
        return 0;
    if (my_number == 0)
        drain(cell); /* main()'s accesses until now, before the thread exists */
    pthread_mutex_lock(&x->lock);
    if (!x->coh && pl_coh_create(x->sim, cell->config, &x->coh) == 0) {
        x->nthreads = x->active = 1; /* main()'s stream: 0 */
        x->order[0] = 0;
    }
    int number = x->coh ? pl_coh_add_core(x->coh) : 0;
    number = number > 0 ? number : 0;
    if (number)
        x->nthreads = number + 1;
    pthread_mutex_unlock(&x->lock);
    if (number) /* the thread joins the turns where its spawn is in its parent's stream */
        append(cell, x, my_number, (uint64_t)number, SPAWN_SITE);
    return number;
}

static void cell_started(void *ctx, int number)
{
    (void)ctx;
    my_number = number;
}

static void cell_finished(void *ctx)
{
    struct pl_cell *cell = ctx;
    __atomic_store_n(&cell->index->ended[my_number], 1, __ATOMIC_RELEASE);
}

/* The counts of all cores, in place of main()'s core's alone, once there are several. */
static void take_snapshot(struct pl_cell *cell, struct pl_region *r, struct pl_snapshot *snap)
{
    struct pl_cell_sites *x = cell->index;
    if (!x || !x->coh)
        return;
    int rc = pl_coh_stats(x->coh, &snap->sim);
    if (rc && !r->err)
        r->err = rc;
}

/* An access that came without the buffer: PL_LOAD/PL_STORE, an access wider than a record, or
 * one by another thread (recorded in its stream when it is simulated, else counted). */
static void cell_touch(void *ctx, uint64_t addr, uint64_t size, int is_write, const void *pc)
{
    struct pl_cell *cell = ctx;
    struct pl_cell_sites *x = cell->index;
    if (!x) /* no simulator: nothing to feed */
        return;
    if (x->coh && my_number >= 0) { /* threads: recorded, to be interleaved */
        if (my_number == 0)
            drain(cell);
        record(cell, x, my_number, addr, size, is_write, (uintptr_t)pc);
        return;
    }
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
    pthread_mutex_init(&x->lock, NULL);
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
    x->two_levels = x->tlb == &none && cell->config && !(cell->config->classify & 1);
    charge(x, NULL);
    return 0;
}

void pl_cell_release(struct pl_cell *cell)
{
    struct pl_cell_sites *x = cell->index;
    int running = 0; /* a thread that outlived main() may still append to its stream */
    for (int t = 1; x && t < x->nthreads; t++)
        running |= !__atomic_load_n(&x->ended[t], __ATOMIC_ACQUIRE);
    cell->index = NULL;
    if (x && !running) { /* else left to the worker's exit, which comes soon */
        free(x->slot);
        free(x->buffer);
        for (int t = 0; t < x->nthreads; t++) {
            free(x->slots[t]);
            for (struct block *b = x->stream[t].head, *next; b; b = next)
                next = b->next, free(b);
        }
        pl_coh_destroy(x->coh);
        free(x);
    }
    free(cell->sites);
    cell->sites = NULL;
    cell->nsites = 0;
}

static void no_region(void *ctx)
{
    (void)ctx;
}

static void no_access(void *ctx, uint64_t addr, uint32_t size, int is_write)
{
    (void)ctx, (void)addr, (void)size, (void)is_write;
}

/* main() is over: what runs of the cell's code from here on (a thread that outlives main(), an
 * atexit handler) feeds nothing, since the cell and its index go away before the worker exits.
 * A thread may still be in a hook it entered before; it keeps the index it read, which
 * pl_cell_release() then leaves to the worker's exit. */
static void detach(struct pl_cell_hooks *hooks)
{
    hooks->touch = NULL, hooks->flush = NULL, hooks->spawned = NULL;
    hooks->next = hooks->last = NULL; /* the buffer goes with the index */
    hooks->begin = hooks->end = hooks->finished = no_region;
    hooks->access = no_access;
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
    hooks->spawned = cell_spawned;
    hooks->started = cell_started;
    hooks->finished = cell_finished;
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
    my_number = 0;
    pl_region_begin(&cell->whole);
    if (setjmp(main_over) == 0)
        cell->status = cell_main(1, argv);
    hooks->exit = NULL; /* an exit() from an atexit handler, later, is the real one */
    drain(cell);
    replay(cell, 1);
    pl_region_end(&cell->whole);
    take_snapshot(cell, &cell->whole, &cell->whole.end);
    cell->threads = cell->index && cell->index->coh ? (uint32_t)cell->index->nthreads : 1;
    detach(hooks);
    fflush(stdout);
    /* not dlclose()d: the cell may have registered atexit handlers; the worker exits soon */
    return 0;
}
