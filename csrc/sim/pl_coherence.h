/* The multi-core model: one simulator per core, private first levels, a shared last level, and
 * invalidation-based coherence between the private levels (MESI).
 *
 * Core 0 is a simulator of the whole hierarchy (pl_sim.h); its last level, when there are two
 * or more, is the shared one (the LLC). Every other core gets the levels above it and the TLBs,
 * and sends what its lowest private level misses to core 0's last level. With one level, every
 * core's L1 is private and nothing is shared.
 *
 * Protocol, per L1 line, with a directory that knows which core (if any) holds a line Modified:
 * - a write by core c to a line it does not hold Modified invalidates the line in every other
 *   core's private levels (M, E or S -> I) and makes c its Modified owner (I or S -> M);
 * - a read by c of a line another core holds Modified downgrades that copy (M -> S);
 * - reads of lines no other core holds Modified, and writes to a line c holds Modified, change
 *   no other core's state (E -> M silently, as MESI allows).
 * The data moves cache to cache: an invalidation or a downgrade writes nothing back to the
 * shared level. A core's next first-level miss on a line another core's write took from it is a
 * coherence miss (pl_sim_counts.coherence), taken out of compulsory, capacity and conflict. */
#ifndef PL_COHERENCE_H
#define PL_COHERENCE_H

#include <stdint.h>

#include "pl_sim.h"

/* Cores of one model: the directory keeps a 64-bit mask of cores per line. */
#define PL_COH_MAX_CORES 64

struct pl_coh;

/* What the protocol did to one core's lines. */
struct pl_coh_counts {
    uint64_t invalidations; /* lines another core's write took from its private levels */
    uint64_t downgrades;    /* Modified lines another core's read made Shared */
};

/* A model whose core 0 is first (not freed by the model), made with cfg. 0, -EINVAL where a
 * private level cannot drop a line (pl_sim_invalidate), or -ENOMEM. */
int pl_coh_create(struct pl_sim *first, const struct pl_sim_config *cfg, struct pl_coh **out);
void pl_coh_destroy(struct pl_coh *m);
/* A new core, empty: its number (1, 2, ...), or -ENOSPC beyond PL_COH_MAX_CORES, or -ENOMEM. */
int pl_coh_add_core(struct pl_coh *m);
/* The simulator of core c (its private levels, and for core 0 the shared one). */
struct pl_sim *pl_coh_sim(const struct pl_coh *m, int c);
/* One access of size bytes (0 counts as 1) at addr by core c. */
void pl_coh_access(struct pl_coh *m, int c, uint64_t addr, uint32_t size, int is_write);
/* Core c's counts: its private levels (and core 0's the shared one), its TLBs, and what the
 * protocol did to it. 0, or a negative errno (as pl_sim_stats; the directory's -ENOMEM too). */
int pl_coh_core_stats(const struct pl_coh *m, int c, struct pl_sim_stats *out,
                      struct pl_coh_counts *protocol);
/* Every core's counts added up (the shared level counted once). */
int pl_coh_stats(const struct pl_coh *m, struct pl_sim_stats *out);

#endif
