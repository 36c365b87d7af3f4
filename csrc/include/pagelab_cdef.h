/* cffi declarations for the pagelab._native module (cdef syntax: "..." is filled in by the
 * compiler from the real headers). Keep in step with the headers in this directory. */

#define PERF_TYPE_HARDWARE ...
#define PERF_TYPE_SOFTWARE ...
#define PERF_TYPE_HW_CACHE ...
#define PERF_TYPE_RAW ...
#define PERF_TYPE_TRACEPOINT ...
#define PERF_TYPE_BREAKPOINT ...

typedef int... pid_t;

/* pl_events.h */
struct pl_event_def {
    const char *name;
    uint32_t type;
    uint64_t config;
    const char *unit;
};
extern const struct pl_event_def pl_event_table[];
extern const int pl_event_count;

/* pl_counters.h */
#define PL_MAX_EVENTS ...
#define PL_INHERIT ...
#define PL_ENABLE_ON_EXEC ...
#define PL_EXCLUDE_KERNEL ...
#define PL_USE_RDPMC ...
#define PL_PERF_KERNEL ...
#define PL_PERF_EMULATED ...
#define PL_PERF_FAILED ...

struct pl_group {
    int n;
    int leader[...];
    int fd[...];
    int err[...];
    int kernel_excluded[...];
    ...;
};
struct pl_counts {
    uint64_t value[...];
    uint64_t time_enabled[...];
    uint64_t time_running[...];
    int via_rdpmc;
};
int pl_group_open(struct pl_group *g, const uint32_t *types, const uint64_t *configs,
                  const int *groups, int n, pid_t pid, unsigned flags);
int pl_group_enable(const struct pl_group *g);
int pl_group_disable(const struct pl_group *g);
int pl_group_read(const struct pl_group *g, struct pl_counts *c);
void pl_group_close(struct pl_group *g);
int pl_perf_backend(char *why, size_t size);
int64_t pl_group_read_loop(const struct pl_group *g, int64_t n);
int64_t pl_group_syscall_loop(const struct pl_group *g, int64_t n);

/* pl_region.h: the snapshot a workload takes around its hot loop (pl_sim_stats: see pl_sim.h) */
struct pl_sim_counts {
    uint64_t reads, writes;
    uint64_t read_misses, write_misses;
    uint64_t evictions;
    uint64_t writebacks;
    uint64_t compulsory;
    uint64_t capacity;
    uint64_t conflict;
    uint64_t coherence;
};
struct pl_sim_stats {
    struct pl_sim_counts level[...];
    struct pl_sim_counts tlb[...];
};
struct timespec {
    long tv_sec;
    long tv_nsec;
    ...;
};
struct timeval {
    long tv_sec;
    long tv_usec;
    ...;
};
struct rusage {
    struct timeval ru_utime;
    struct timeval ru_stime;
    long ru_maxrss;
    long ru_minflt;
    long ru_majflt;
    long ru_inblock;
    long ru_oublock;
    long ru_nvcsw;
    long ru_nivcsw;
    ...;
};
struct pl_snapshot {
    struct pl_counts counts;
    struct timespec clock;
    struct rusage rusage;
    struct pl_sim_stats sim;
};
struct pl_region {
    const struct pl_group *group;
    struct pl_sim *sim;
    struct pl_snapshot begin;
    struct pl_snapshot end;
    int err;
};

/* pl_cell.h: a %%c cell's main(), loaded from its shared object and run with region hooks */
struct pl_cell_site {
    uint64_t offset;
    uint64_t reads, writes;
    uint64_t l1_read_misses, l1_write_misses;
    uint64_t llc_read_misses, llc_write_misses;
    uint64_t tlb_misses;
    uint64_t compulsory, capacity, conflict;
    uint64_t coherence;
    uint32_t thread;
};
#define PL_THREADS_MAIN ...
#define PL_THREADS_CORES ...
#define PL_CELL_QUANTUM ...
#define PL_CELL_RECORDED_MAX ...
struct pl_cell {
    struct pl_region region;
    struct pl_region whole;
    int begun;
    int ended;
    int status;
    int exited;
    struct pl_cell_site *sites;
    uint32_t nsites;
    uint64_t other_threads;
    int threads_model;
    uint32_t quantum;
    const struct pl_sim_config *config;
    uint32_t threads;
    uint64_t unrecorded;
    char error[...];
    ...;
};
int pl_cell_run(const char *path, struct pl_cell *cell);
void pl_cell_release(struct pl_cell *cell);

/* pl_sampling.h: page-fault sampling into a per-thread ring, aggregated by code address */
#define PL_FAULT_SITES ...
#define PL_FAULT_PAGES ...
#define PL_SAMPLE_BYTES ...
struct pl_fault_site {
    uint64_t ip;
    uint64_t samples;
};
struct pl_fault_profile {
    uint64_t samples;
    uint64_t lost;
    uint64_t counted;
    uint64_t unsited;
    uint64_t foreign;
    uint64_t kernel;
    uint64_t pages;
    int pages_full;
    int kernel_excluded;
    int nsites;
    struct pl_fault_site site[...];
    ...;
};
struct pl_sampler {
    int fd;
    int kernel_excluded;
    size_t data_size;
    const char *failed;
    ...;
};
int pl_sampler_open(struct pl_sampler *s, size_t ring_bytes);
int pl_sampler_enable(struct pl_sampler *s);
int pl_sampler_finish(struct pl_sampler *s, struct pl_fault_profile *p);
void pl_sampler_close(struct pl_sampler *s);
int pl_fault_site_name(uint64_t ip, char *where, size_t where_cap, char *module, size_t module_cap);

/* pl_spawn.h */
pid_t pl_spawn_gated(const char *path, char *const argv[], int *gate, int *exec_status,
                     int stdout_fd);
int pl_spawn_release(int gate, int exec_status);

/* pl_worker.h */
pid_t pl_worker_spawn(const char *path, char *const argv[], char *const envp[], const int fds[4],
                      pid_t parent);
int pl_worker_guard(void);

/* pl_out.h */
#define PL_LABEL_MAX ...
#define PL_NAME_MAX ...
#define PL_OUT_MAX_REGIONS ...
#define PL_OUT_MAX_VALUES ...
#define PL_OUT_MAX_FACTS ...
#define PL_OUT_TEXT_MAX ...
#define PL_FACT_NUMBER ...
#define PL_FACT_TEXT ...
struct pl_out_region {
    char label[...];
    struct pl_snapshot begin;
    struct pl_snapshot end;
    int err;
};
struct pl_out_value {
    char label[...];
    char name[...];
    double value;
    char unit[...];
    char source[...];
};
struct pl_out_fact {
    char label[...];
    char name[...];
    int kind;
    uint64_t number;
    uint32_t text;
};
struct pl_out {
    int nregions;
    int nvalues;
    int nfacts;
    int overflow;
    struct pl_out_region region[...];
    struct pl_out_value value[...];
    struct pl_out_fact fact[...];
    uint32_t text_used;
    char text[...];
    char note[...];
};

void pl_out_number(struct pl_out *o, const char *label, const char *name, uint64_t number);
void pl_out_text(struct pl_out *o, const char *label, const char *name, const char *fmt, ...);

/* pl_workload.h */
struct pl_param {
    const char *name;
    int64_t def;
    int64_t min;
    int64_t max;
    const char *unit;
    const char *choices;
    const char *help;
};
struct pl_sim;
struct pl_ctx {
    const int64_t *param;
    const struct pl_group *group;
    struct pl_sim *sim;
    struct pl_out *out;
};
struct pl_workload {
    const char *name;
    const char *summary;
    const struct pl_param *params;
    int nparams;
    int (*run)(struct pl_ctx *ctx);
    int (*run_sim)(struct pl_ctx *ctx);
};
extern const struct pl_workload *const pl_workload_table[];
extern const int pl_workload_count;

/* pl_workloads.h: facts about the workloads that Python needs too */
size_t pl_page_size(void);
#define PL_LAT_MAX_SIZES ...
#define PL_MOUNTAIN_WORD ...
#define PL_MOUNTAIN_MAX_POINTS ...
#define PL_COMPETITION_SLICES ...
#define PL_COMPETITION_WRITE_CHUNK ...
#define PL_MMAP_FILL_CHUNK ...
#define PL_MAPS_SMALL_BLOCK ...
#define PL_MAPS_LARGE_BLOCK ...
#define PL_EBIZZY_FIXED_MMAP_THRESHOLD ...
#define PL_VSYSCALL_BASE ...
#define PL_MAP32_WINDOW_LO ...
#define PL_MAP32_WINDOW_HI ...
int pl_lat_sizes(int64_t min_kb, int64_t max_kb, int64_t ppo, int64_t *out, int cap);

/* kernel facts the Python side reads by name (pagelab.h includes their headers): the
 * personality flag `setarch -R` sets, and every capability (pagelab.machine.environment lists the
 * CAP_ names found here, so this is the one list) */
#define ADDR_NO_RANDOMIZE ...
#define CAP_CHOWN ...
#define CAP_DAC_OVERRIDE ...
#define CAP_DAC_READ_SEARCH ...
#define CAP_FOWNER ...
#define CAP_FSETID ...
#define CAP_KILL ...
#define CAP_SETGID ...
#define CAP_SETUID ...
#define CAP_SETPCAP ...
#define CAP_LINUX_IMMUTABLE ...
#define CAP_NET_BIND_SERVICE ...
#define CAP_NET_BROADCAST ...
#define CAP_NET_ADMIN ...
#define CAP_NET_RAW ...
#define CAP_IPC_LOCK ...
#define CAP_IPC_OWNER ...
#define CAP_SYS_MODULE ...
#define CAP_SYS_RAWIO ...
#define CAP_SYS_CHROOT ...
#define CAP_SYS_PTRACE ...
#define CAP_SYS_PACCT ...
#define CAP_SYS_ADMIN ...
#define CAP_SYS_BOOT ...
#define CAP_SYS_NICE ...
#define CAP_SYS_RESOURCE ...
#define CAP_SYS_TIME ...
#define CAP_SYS_TTY_CONFIG ...
#define CAP_MKNOD ...
#define CAP_LEASE ...
#define CAP_AUDIT_WRITE ...
#define CAP_AUDIT_CONTROL ...
#define CAP_SETFCAP ...
#define CAP_MAC_OVERRIDE ...
#define CAP_MAC_ADMIN ...
#define CAP_SYSLOG ...
#define CAP_WAKE_ALARM ...
#define CAP_BLOCK_SUSPEND ...
#define CAP_AUDIT_READ ...
#define CAP_PERFMON ...
#define CAP_BPF ...
#define CAP_CHECKPOINT_RESTORE ...
/* pl_sim.h: the cache/TLB simulator */
#define PL_SIM_MAX_LEVELS ...
#define PL_SIM_MAX_TLBS ...
#define PL_SIM_MAX_LINES ...
#define PL_SIM_MAX_WAYS ...
#define PL_SIM_MAX_ACCESS ...
#define PL_SIM_MAX_LINE ...
#define PL_SIM_PAGE_4K ...
#define PL_HUGE_PAGE ...
#define PL_CACHE_LINE ...
#define PL_SIM_NAME_MAX ...
#define PL_POLICY_LRU ...
#define PL_POLICY_FIFO ...
#define PL_POLICY_RANDOM ...
#define PL_POLICY_PLRU ...
#define PL_OP_LOAD ...
#define PL_OP_STORE ...
#define PL_OP_MODIFY ...
#define PL_SIM_HIT ...
#define PL_SIM_EVICT ...
#define PL_SIM_DEFAULT_L1_SIZE ...
#define PL_SIM_DEFAULT_L1_WAYS ...
#define PL_SIM_DEFAULT_L2_SIZE ...
#define PL_SIM_DEFAULT_L2_WAYS ...
#define PL_SIM_DEFAULT_LLC_SIZE ...
#define PL_SIM_DEFAULT_LLC_WAYS ...
#define PL_SIM_DEFAULT_DTLB_ENTRIES ...
#define PL_SIM_DEFAULT_DTLB_WAYS ...
#define PL_SIM_DEFAULT_DTLB_2M_ENTRIES ...
#define PL_SIM_DEFAULT_DTLB_2M_WAYS ...
#define PL_SIM_DEFAULT_STLB_ENTRIES ...
#define PL_SIM_DEFAULT_STLB_WAYS ...

struct pl_cache_geom {
    uint64_t size;
    uint32_t ways;
    uint32_t line;
    char name[...];
};
struct pl_tlb_geom {
    uint32_t entries;
    uint32_t ways;
    char name[...];
};
struct pl_sim_config {
    int nlevels;
    struct pl_cache_geom level[...];
    int ntlbs;
    struct pl_tlb_geom tlb[...];
    uint32_t page_size;
    int policy;
    uint64_t seed;
    int classify;
};
struct pl_sim {
    ...;
};
int pl_sim_config_check(const struct pl_sim_config *cfg, char *why, size_t len);
int pl_sim_create(const struct pl_sim_config *cfg, struct pl_sim **out);
void pl_sim_destroy(struct pl_sim *sim);
void pl_sim_reset(struct pl_sim *sim);
int pl_sim_stats(const struct pl_sim *sim, struct pl_sim_stats *out);
int pl_sim_set_of(uint64_t sets, const uint64_t *line, size_t n, uint64_t *out);
const struct pl_sim_counts *pl_sim_counts_live(const struct pl_sim *sim, int tlb, int i);

/* pl_coherence.h: cores with private levels over a shared one, MESI between them */
#define PL_COH_MAX_CORES ...
struct pl_coh;
struct pl_coh_counts {
    uint64_t invalidations;
    uint64_t downgrades;
};
int pl_coh_create(struct pl_sim *first, const struct pl_sim_config *cfg, struct pl_coh **out);
void pl_coh_destroy(struct pl_coh *m);
int pl_coh_add_core(struct pl_coh *m);
void pl_coh_access(struct pl_coh *m, int c, uint64_t addr, uint32_t size, int is_write);
int pl_coh_core_stats(const struct pl_coh *m, int c, struct pl_sim_stats *out,
                      struct pl_coh_counts *protocol);
int pl_coh_stats(const struct pl_coh *m, struct pl_sim_stats *out);
int pl_sim_access_slow(struct pl_sim *sim, uint64_t addr, uint32_t size, int is_write);
int pl_sim_access(struct pl_sim *sim, uint64_t addr, uint32_t size, int is_write);
void pl_sim_access_run(struct pl_sim *sim, uint64_t addr, uint64_t stride, uint64_t count,
                       uint32_t size, int is_write);
void pl_sim_access_array(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                         const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all);
void pl_sim_access_outcomes(struct pl_sim *sim, const uint64_t *addr, const uint8_t *op,
                            const uint32_t *size, size_t n, uint8_t op_all, uint32_t size_all,
                            uint8_t *outcome);

/* pl_trace.h: valgrind lackey traces */
#define PL_TRACE_BUF ...
struct pl_trace {
    uint64_t line;
    uint64_t instr, loads, stores, modifies, skipped;
    char err[...];
    ...;
};
int pl_trace_open(const char *path, struct pl_trace **out);
void pl_trace_close(struct pl_trace *t);
long pl_trace_read(struct pl_trace *t, uint64_t *addr, uint32_t *size, uint8_t *op, long cap);
long pl_trace_replay(struct pl_trace *t, struct pl_sim *sim, long cap, int ignore_size);

/* pl_cpuid.h: TLB geometry from CPUID */
struct pl_cpuid_tlb {
    uint32_t entries;
    uint32_t ways;
    uint32_t leaf;
};
int pl_cpuid(uint32_t leaf, uint32_t subleaf, uint32_t regs[4]);
int pl_cpuid_decode_amd(uint32_t page_size, const uint32_t regs5[4], const uint32_t regs6[4],
                        struct pl_cpuid_tlb *dtlb, struct pl_cpuid_tlb *stlb);
int pl_cpuid_decode_intel(uint32_t page_size, const uint32_t *regs, int n,
                          struct pl_cpuid_tlb *dtlb, struct pl_cpuid_tlb *stlb);

/* pl_reclaim.h: the page-reclaim model */
enum pl_reclaim_policy {
    PL_RECLAIM_FIFO,
    PL_RECLAIM_LRU,
    PL_RECLAIM_CLOCK,
    PL_RECLAIM_KERNEL,
    PL_RECLAIM_NEVER_ACTIVATE,
    PL_RECLAIM_NPOLICIES
};
struct pl_reclaim_stats {
    int64_t refs, faults, evictions, activations, deactivations;
};
int pl_reclaim_run(const int32_t *refs, int64_t n, int32_t npages, int32_t frames, int policy,
                   struct pl_reclaim_stats *out);
