/* The workloads, one C file each under csrc/workloads/, collected in table.c. */
#ifndef PL_WORKLOADS_H
#define PL_WORKLOADS_H

#include "pl_workload.h"

/* The runs of the workloads built twice (natively and by sim_variants.c with -DPL_SIM). */
int pl_cache_run(struct pl_ctx *c);
int pl_cache_run_sim(struct pl_ctx *c);
int pl_latency_run(struct pl_ctx *c);
int pl_latency_run_sim(struct pl_ctx *c);

/* Facts about the workloads that Python needs too. It reads them through the cdef, so each is
 * written once, here. */
#define PL_LAT_MAX_SIZES PL_OUT_MAX_REGIONS /* latency: one region per working-set size */
#define PL_MOUNTAIN_WORD 8                  /* mountain: bytes per load (it reads uint64_t) */
#define PL_MOUNTAIN_MAX_POINTS 1000         /* mountain: one value per point; a pl_out holds 1024 */
#define PL_COMPETITION_SLICES 20 /* competition: time slices per phase, the per-cycle timeline */
#define PL_COMPETITION_WRITE_CHUNK (1u << 20) /* competition: the file's write(2) size */
#define PL_MMAP_FILL_CHUNK (1u << 20)         /* mmap-modes: the file's pwrite(2) size */
/* maps: a malloc block far below glibc's 128 KiB mmap threshold (it comes from [heap]), and one
 * above it (malloc gives it a mapping of its own) */
#define PL_MAPS_SMALL_BLOCK 4096u
#define PL_MAPS_LARGE_BLOCK (1u << 20)
/* ebizzy: glibc's default M_MMAP_THRESHOLD; setting it explicitly switches the dynamic
 * threshold off */
#define PL_EBIZZY_FIXED_MMAP_THRESHOLD (128 * 1024)
/* vsyscall, maps: the legacy vsyscall page, fixed by the x86-64 ABI in every process */
#define PL_VSYSCALL_BASE 0xffffffffff600000UL
/* thread-stacks: the window MAP_32BIT searches (arch/x86/kernel/sys_x86_64.c, find_start_end) */
#define PL_MAP32_WINDOW_LO 0x40000000UL
#define PL_MAP32_WINDOW_HI 0x80000000UL

/* The base page, what one fault maps: the kernel's, asked at run time (4 KiB on x86-64; 4, 16 or
 * 64 KiB on arm64). */
size_t pl_page_size(void);

/* latency's working-set sizes in KiB: min_kb * 2^octave * (ppo + step) / ppo up to max_kb,
 * duplicates dropped (none when min_kb or ppo is below 1). Writes at most cap of them to out
 * (NULL when cap is 0) and returns how many there are, like snprintf: more than cap means they
 * did not all fit. */
int pl_lat_sizes(int64_t min_kb, int64_t max_kb, int64_t ppo, int64_t *out, int cap);

/* A file without a name in the working directory (O_TMPFILE; else a file named after tag,
 * unlinked at once, and *named is set): nothing is left behind even if the worker is killed.
 * The worker's Python side chose the directory (pagelab.native.scratch) and made it the working
 * directory. Returns the fd, or -1 with errno set. */
int pl_scratch_file(const char *tag, int *named);

extern const struct pl_workload pl_wl_maps;
extern const struct pl_workload pl_wl_cache;
extern const struct pl_workload pl_wl_latency;
extern const struct pl_workload pl_wl_mountain;
extern const struct pl_workload pl_wl_first_touch;
extern const struct pl_workload pl_wl_vsyscall;
extern const struct pl_workload pl_wl_mmap_modes;
extern const struct pl_workload pl_wl_competition;
extern const struct pl_workload pl_wl_thread_stacks;
extern const struct pl_workload pl_wl_ebizzy;

#endif
