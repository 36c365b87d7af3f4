/* The cache/TLB simulator: up to three set-associative cache levels (L1D, L2, LLC) and two TLBs
 * (DTLB, STLB), fed one data access at a time by pl_sim_access (the PL_SIM hook of pl_access.h),
 * by arrays (pl_sim_access_array) or by a replayed trace (pl_trace.h).
 *
 * Model: write-allocate, non-inclusive. Every access looks up the first level; only its misses
 * go on to the next (an L1 line that misses in L2 is fetched from there as one access of the
 * same kind). Evictions never back-invalidate other levels. Dirty evictions are counted as
 * writebacks but not sent to the next level, as in cachegrind's model. The DTLB translates
 * every access (one lookup per page it covers); its misses look up the STLB. An access that
 * straddles lines (pages) touches each line (page) it covers. Caches are indexed by virtual
 * address: traces and workloads only know virtual addresses. A line's set is its line number
 * mod the number of sets, which may be any whole number (a mask when it is a power of two, an
 * exact division-free reduction otherwise). */
#ifndef PL_SIM_H
#define PL_SIM_H

#include <stddef.h>
#include <stdint.h>

#define PL_SIM_MAX_LEVELS 3 /* L1D, L2, LLC */
#define PL_SIM_MAX_TLBS 2   /* DTLB, STLB */
/* 256 Mi lines (16 GiB of 64-byte lines) per level: beyond the largest LLCs built (1 GiB+ of
 * stacked cache). Large levels are lazy, so memory follows the lines touched, not this. */
#define PL_SIM_MAX_LINES (1u << 28)
/* Classification's fully associative shadow indexes its lines with 32-bit numbers. */
#define PL_SIM_MAX_WAYS 4096
/* The widest single access, in bytes: lackey reports data accesses of at most 512 bytes (its
 * MAX_DSIZE: an FXSAVE area); anything wider is many accesses. Traces and Simulator.access
 * refuse larger sizes, which also bounds one access's work to a few lines. */
#define PL_SIM_MAX_ACCESS 512
/* Longest line: far beyond any real cache (32 to 256 bytes), small enough that shifts stay sane. */
#define PL_SIM_MAX_LINE (1u << 30)
/* The page sizes the TLBs model: base pages and the 2 MiB huge pages of x86-64 (and arm64 with
 * 4 KiB base pages). */
#define PL_SIM_PAGE_4K 4096u
#define PL_HUGE_PAGE (2u << 20) /* a PMD: also what one transparent-huge-page fault maps */
/* Room for a level's name (L1D, LLC, STLB ...) in the messages of pl_sim_config_check. */
#define PL_SIM_NAME_MAX 8

/* Replacement policies of the cache levels (TLBs are always LRU). */
#define PL_POLICY_LRU 0
#define PL_POLICY_FIFO 1
#define PL_POLICY_RANDOM 2 /* xorshift64* seeded per level from the config seed */
#define PL_POLICY_PLRU 3   /* tree pseudo-LRU; needs a power-of-two number of ways <= 64 */

/* Operations of pl_sim_access_array (and of trace records). */
#define PL_OP_LOAD 0
#define PL_OP_STORE 1
#define PL_OP_MODIFY 2 /* a load then a store to the same bytes (valgrind's M records) */

/* Named defaults, used where the machine does not say (no sysfs cache directory, no CPUID
 * leaf). Caches: 32 KiB 8-way with 64-byte lines is the L1D of nearly every x86 core since 2008;
 * 512 KiB 8-way L2 and 8 MiB 16-way LLC sit in the middle of current desktop and server parts. */
#define PL_CACHE_LINE 64 /* also the workloads' line where Python passes none */
#define PL_SIM_DEFAULT_L1_SIZE (32u << 10)
#define PL_SIM_DEFAULT_L1_WAYS 8
#define PL_SIM_DEFAULT_L2_SIZE (512u << 10)
#define PL_SIM_DEFAULT_L2_WAYS 8
#define PL_SIM_DEFAULT_LLC_SIZE (8u << 20)
#define PL_SIM_DEFAULT_LLC_WAYS 16
/* TLBs: Intel Skylake through Ice Lake: a 64-entry 4-way L1 DTLB for 4 KiB pages, 32 entries
 * 4-way for 2 MiB pages, and a 1536-entry 12-way STLB shared by both page sizes. */
#define PL_SIM_DEFAULT_DTLB_ENTRIES 64
#define PL_SIM_DEFAULT_DTLB_WAYS 4
#define PL_SIM_DEFAULT_DTLB_2M_ENTRIES 32
#define PL_SIM_DEFAULT_DTLB_2M_WAYS 4
#define PL_SIM_DEFAULT_STLB_ENTRIES 1536
#define PL_SIM_DEFAULT_STLB_WAYS 12

struct pl_cache_geom {
    uint64_t size; /* bytes; size / (ways * line) sets, any whole number */
    uint32_t ways;
    uint32_t line;              /* bytes, a power of two */
    char name[PL_SIM_NAME_MAX]; /* for messages: "L1D", "L2", "LLC" */
};

struct pl_tlb_geom {
    uint32_t entries; /* entries / ways sets, any whole number */
    uint32_t ways;
    char name[PL_SIM_NAME_MAX]; /* for messages: "DTLB", "STLB" */
};

struct pl_sim_config {
    int nlevels; /* 0..PL_SIM_MAX_LEVELS cache levels, first level first */
    struct pl_cache_geom level[PL_SIM_MAX_LEVELS];
    int ntlbs; /* 0: no TLB, 1: DTLB, 2: DTLB and STLB */
    struct pl_tlb_geom tlb[PL_SIM_MAX_TLBS];
    uint32_t page_size; /* PL_SIM_PAGE_4K or _2M, >= every line size, when there is a TLB */
    int policy;         /* PL_POLICY_*, for the cache levels */
    uint64_t seed;      /* PL_POLICY_RANDOM's seed; the same seed replays the same choices */
    int classify;       /* bit i set: classify level i's misses (compulsory / capacity /
                           conflict); a level's classification costs a hash lookup per access
                           that misses the most recently used line, so only levels whose
                           classes are reported pay for it */
};

/* Counts of one cache level or TLB. hits = reads + writes - read_misses - write_misses. */
struct pl_sim_counts {
    uint64_t reads, writes;
    uint64_t read_misses, write_misses;
    uint64_t evictions;  /* valid lines replaced */
    uint64_t writebacks; /* dirty lines replaced */
    uint64_t compulsory; /* first touch of the line ever (at this level) */
    uint64_t capacity;   /* not first touch, and a fully associative LRU cache of the same
                            capacity would have missed too */
    uint64_t conflict;   /* not first touch, but that fully associative cache would have hit */
    uint64_t coherence;  /* of the first level's misses, those of a line this core held until
                            another core's write invalidated it (pl_coherence.h); taken out of
                            the class the classification gave the miss */
};

struct pl_sim_stats {
    struct pl_sim_counts level[PL_SIM_MAX_LEVELS];
    struct pl_sim_counts tlb[PL_SIM_MAX_TLBS];
};

struct pl_sim_core; /* the levels and TLBs, private to csrc/sim */

/* The fields are visible only so that pl_sim_access's fast path can be inlined into workload
 * kernels; nothing outside csrc/sim reads or writes them. */
struct pl_sim {
    /* Fast path: an access that lies within the granule (the L1 line, or the page without an
     * L1; the smaller of the two) of the previous access is an L1 hit and a DTLB hit, and
     * changes no replacement state: that line is already the most recently used in its set and
     * in the classification shadow, and under FIFO, random and PLRU a repeated hit changes
     * nothing either. So counting it is exact. */
    uint64_t last;       /* granule number of the previous access */
    uint64_t gmask;      /* granule bytes - 1 */
    uint64_t limit;      /* granule bytes, or 0 when there is no previous access */
    unsigned shift;      /* log2 granule bytes */
    uint8_t *last_dirty; /* dirty flag of the previous access's L1 line */
    uint64_t fast[2];    /* accesses served by the fast path: loads, stores */
    struct pl_sim_core *core;
};

/* 0, or -EINVAL for a configuration the model cannot run, with the one-line reason in why (len
bytes, always terminated; why may be NULL). The one place the model's limits are checked: the
Python layer passes the reason on as it is. */
int pl_sim_config_check(const struct pl_sim_config *cfg, char *why, size_t len);
/* 0 and *out set, or -EINVAL / -ENOMEM. Free with pl_sim_destroy. */
int pl_sim_create(const struct pl_sim_config *cfg, struct pl_sim **out);
void pl_sim_destroy(struct pl_sim *sim);
/* Back to the state right after creation: empty caches, zero counts, the seed rewound. */
void pl_sim_reset(struct pl_sim *sim);
/* Counts so far. 0, or -ENOMEM if a lazy level or classification ran out of memory as it grew
 * (the counts are then incomplete). */
int pl_sim_stats(const struct pl_sim *sim, struct pl_sim_stats *out);

/* The counts of cache level i (tlb 0) or TLB i (tlb 1) as they stand, live: the fast path's
 * accesses (first-level hits on the DTLB's most recently used page, which pl_sim_stats adds) are
 * not in them, so they change only when an access misses somewhere or leaves that page, and
 * then by exactly that access's misses, evictions and classes. For charging misses to the code
 * that caused them (a %%c cell's lines); NULL where there is no such level. */
const struct pl_sim_counts *pl_sim_counts_live(const struct pl_sim *sim, int tlb, int i);

/* out[i] = line[i] mod sets, computed as the model computes set numbers; for tests. 0, or
 * -EINVAL for no sets. */
int pl_sim_set_of(uint64_t sets, const uint64_t *line, size_t n, uint64_t *out);

/* For the multi-core model (pl_coherence.h). The line at addr leaves cache levels [0, levels)
 * of sim (another core's write invalidated it); the fast path forgets it. Returns bit i set
 * where level i held it, or -EINVAL where a level cannot drop one line (a lazy level, or one
 * fully associative set under LRU wider than a scanned set). */
int pl_sim_invalidate(struct pl_sim *sim, uint64_t addr, int levels);
/* Level i and those below it get the line-aligned block [base, base + 2^span) that a level
 * above missed, as in pl_sim_access (no TLB lookup): another core's miss in the shared level. */
void pl_sim_fetch(struct pl_sim *sim, int i, uint64_t base, unsigned span, int is_write);
/* The first level's miss just counted was a coherence miss: it moves from the class it was
 * given (the first level's counts stood at *before) to coherence. */
void pl_sim_coherence_miss(struct pl_sim *sim, const struct pl_sim_counts *before);

/* The full model for one access; returns its outcome: the first level's for its last line
 * (PL_SIM_HIT, PL_SIM_EVICT bits), and what else it did. Without PL_SIM_MORE, the first level's
 * miss (no PL_SIM_HIT) of the access's one line, and the second level's when PL_SIM_MISS2 is
 * set, are all the cache misses it caused; with it, the counts say what it missed. (TLB misses
 * are left to the counts.) Always correct, also when the fast path would apply. */
#define PL_SIM_HIT 1
#define PL_SIM_EVICT 2
#define PL_SIM_MISS2 4 /* the second of two cache levels missed too */
#define PL_SIM_MORE 8  /* lines straddled, a level off the quick path, or a third level reached */
int pl_sim_access_slow(struct pl_sim *sim, uint64_t addr, uint32_t size, int is_write);

/* Simulate one access of size bytes (0 counts as 1) at addr; returns its outcome, as
 * pl_sim_access_slow's. The PL_SIM hook: sim must be a valid simulator (no NULL check in the hot
 * path). No allocation, no division: an access within the previous access's granule costs a
 * compare and two increments. (Beyond the fast path, lazy levels and classification allocate as
 * they grow.) */
static inline int pl_sim_access(struct pl_sim *sim, uint64_t addr, uint32_t size, int is_write)
{
    /* (addr & gmask) + size - 1 < limit: the access ends inside the granule; with limit 0 (no
     * previous access) or size 0 (wraps to a huge value) it fails and takes the slow path. */
    if ((addr >> sim->shift) == sim->last &&
        (addr & sim->gmask) + (uint64_t)size - 1 < sim->limit) {
        sim->fast[is_write != 0]++;
        if (is_write)
            *sim->last_dirty = 1;
        return PL_SIM_HIT;
    }
    return pl_sim_access_slow(sim, addr, size, is_write);
}

/* Simulate n accesses in one call. op and size are per-access arrays, or NULL to use op_all
 * (PL_OP_*) and size_all for every access. PL_OP_MODIFY is a load then a store. Ops other than
 * PL_OP_* are skipped (the Python layer rejects them first). */
void pl_sim_access_array(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                         const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all);
/* count accesses of size bytes at addr, addr + stride, ... (stride may wrap around, to walk
 * down): exactly pl_sim_access on each in turn, with the fast path's state kept in registers.
 * Workloads whose loops stride tell the simulator their runs with PL_LOAD_RUN (pl_access.h). */
void pl_sim_access_run(struct pl_sim *sim, uint64_t addr, uint64_t stride, uint64_t count,
                       uint32_t size, int is_write);
/* Like pl_sim_access_array without the fast path, recording the first level's outcome of each
 * access in outcome[i]: PL_SIM_HIT / PL_SIM_EVICT bits of the load (or the only access), and
 * the store of a PL_OP_MODIFY shifted left by 2. For cache-lab -v output. */
void pl_sim_access_outcomes(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                            const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all,
                            uint8_t *outcome);

#endif
