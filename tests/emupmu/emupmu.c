/* The tests' emulated PMU: the perf calls of csrc/perf/pl_perf_sys.h answered for the machine
 * described in $PAGELAB_MACHINE, so that pagelab's counting logic (parts per core PMU, sums,
 * scaling, reasons, fallbacks) can be tested on machines this host is not. Test-only: built by
 * tests/emulated.py, never part of the package; pagelab labels its readings "emulated".
 *
 * What it reads from the described machine DIR, once, on its first call:
 * - DIR/sys/bus/event_source/devices/NAME/{type,cpus}: the PMUs; a core PMU is one named cpu or
 *   one with a cpus file (perf's is_pmu_core);
 * - DIR/emulated-pmu, one line per core PMU: NAME general=N fixed=N [fixed-events=E,E]
 *   [unsupported=E:ERRNO,...] [rdpmc=0|1] [extended-type=yes|no], E named as in
 *   csrc/perf/events.c; a core PMU without a line has general=4 fixed=0 rdpmc=0 and the
 *   extended type;
 * - DIR/proc/sys/kernel/{perf_event_paranoid,nmi_watchdog} (absent: mainline's 2, and 0) and
 *   DIR/proc/self/status's CapEff (absent: this process's own);
 * - DIR/host-cpus, "HOST=DESCRIBED" pairs (absent: host CPU k stands for described CPU k).
 *
 * Its rules, each after the kernel code it imitates (kernel/events/core.c unless named):
 * 1. Permission, in perf_event_open's order, for every event, software ones too. Debian's patch
 *    "security,perf: Allow further restriction of perf_event_open" returns EACCES when
 *    perf_event_paranoid > 2 without CAP_SYS_ADMIN (CAP_PERFMON is not enough); Ubuntu's
 *    version of it does the same from 4 (its default), so levels 3 and 4 both deny here (on an
 *    Ubuntu kernel 3 would act as 2). Then perf_allow_kernel (include/linux/perf_event.h):
 *    without exclude_kernel, paranoid > 1 needs perfmon_capable() (CAP_PERFMON or
 *    CAP_SYS_ADMIN), else EACCES.
 * 2. Software, tracepoint and breakpoint events, and every call on an fd this file did not
 *    make, go to the real kernel unchanged.
 * 3. The PMU of an event, as perf_init_event picks it. PERF_TYPE_HARDWARE or HW_CACHE with a
 *    PMU type in config >> 32 (PERF_PMU_TYPE_SHIFT) goes to that core PMU; ENOENT when there is
 *    none, or when it lacks PERF_PMU_CAP_EXTENDED_HW_TYPE (extended-type=no) and the type is not
 *    PERF_TYPE_RAW, which that check lets through. Without one it goes to the PMU of type
 *    PERF_TYPE_RAW (x86's cpu, or cpu_core on a hybrid CPU, which init_hw_perf_events registers
 *    as that type); where none has it (arm64) perf_init_event tries the PMUs in list order, and
 *    perf_pmu_register adds each at the head of that list, so the core PMU registered last, the
 *    one with the highest type, takes it. A raw or PMU-typed event goes to that PMU; with no
 *    core PMU, ENOENT. A generic event named in unsupported= gets that errno, as x86's event
 *    tables give ENOENT for a 0 entry and EINVAL for -1 (set_ext_hw_attr, x86_setup_perfctr).
 * 4. Time, as perf_event_update_time and __perf_update_times keep it for a task's event:
 *    enabled grows while the task runs with the event enabled, running only while the event is
 *    also on a counter. Real task-clock events on the target, one per host CPU (pid, cpu k),
 *    enabled, disabled, reset and armed for exec with the emulated event, measure where the
 *    real scheduler ran the task:
 *      time_enabled = the task's time on all host CPUs;
 *      time_running = its time on the host CPUs standing for the PMU's CPUs, times its share.
 *    Off its own CPUs a hybrid PMU's event stays INACTIVE (pmu->filter: x86_pmu_filter,
 *    armpmu_filter), so enabled grows and running does not. The share imitates
 *    perf_rotate_context's round robin: an event named in fixed-events has a counter of its own
 *    (share 1); the rest share free = general - nmi_watchdog counters among the n of them
 *    enabled on that PMU for that task: share = min(1, free / n). Whenever n changes, the time
 *    so far is banked at the old share, so running never goes backwards. CPU-wide and
 *    CPU-bound hardware events (pid -1, cpu >= 0), which pagelab never opens, are not modelled:
 *    EOPNOTSUPP.
 * 5. Counts, the synthetic rule: value = time_running in ns x (1 + the event's index in
 *    csrc/perf/events.c): cycles 1x, instructions 2x, ...; other events (1 + pl_event_count)x.
 * 6. Groups: a member joins a leader on its PMU (EINVAL otherwise, as perf_event_open refuses a
 *    group across PMUs; software members and software leaders are not modelled) and is
 *    scheduled with it, counting its leader's running time at its own rate. PERF_FORMAT_GROUP
 *    reads, PERF_EVENT_IOC_ID, RESET, ENABLE and DISABLE (PERF_IOC_FLAG_GROUP: the whole
 *    group) act as perf_read_group and perf_ioctl do.
 * 7. The rdpmc page: mmap of one page gives a zeroed struct perf_event_mmap_page with
 *    cap_user_rdpmc as rdpmc= says and index 0 (not on a counter now, as
 *    perf_event_update_userpage leaves it for an inactive event), so a reader falls back to
 *    read(2); nothing ever executes rdpmc on it. */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <pthread.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pl_events.h"
#include "pl_perf_sys.h"

#define MAX_PMUS 8
#define MAX_LIST 32   /* fixed-events and unsupported entries per PMU */
#define MAX_HOST 256  /* host CPUs */
#define MAX_DESC 1024 /* described CPUs */
#define MAX_EVENTS 4096
#define CAP_SYS_ADMIN_BIT 21
#define CAP_PERFMON_BIT 38

struct pmu {
    char name[256];
    uint32_t type;
    int core;
    unsigned char cpus[MAX_DESC]; /* described CPUs it counts on (all when no cpus file) */
    int general, fixed, rdpmc, extended;
    int fixed_events[MAX_LIST], nfixed_events; /* indexes into pl_event_table */
    int unsupported[MAX_LIST], unsupported_errno[MAX_LIST], nunsupported;
};

static struct {
    struct pmu pmu[MAX_PMUS];
    int npmu;
    int paranoid, watchdog;
    uint64_t capeff;
    int host_to_desc[MAX_HOST]; /* -1: stands for no described CPU */
    int nhost;
} m;

struct event {
    int fd;                 /* what the caller holds: its first cpu_fd, or a member's dup */
    int pmu, fixed, target; /* fixed: has a counter of its own; target: the task's tid */
    uint64_t rate, id;
    uint64_t read_format;
    struct event *leader;  /* itself for a leader; NULL for a member whose leader closed */
    int on;                /* enabled (or armed to enable on exec) */
    int cpu_fd[MAX_HOST];  /* leaders: task-clock on each host CPU, -1 where none */
    uint64_t bank, mark;   /* leader: running banked so far, and its P-time when banked */
    uint64_t mbank, mmark; /* member: count banked so far, and the leader's running then */
};

static struct event *events[MAX_EVENTS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static uint64_t next_id = 1;

static int real_open(struct perf_event_attr *a, pid_t pid, int cpu, int group_fd,
                     unsigned long flags)
{
    int fd = (int)syscall(SYS_perf_event_open, a, pid, cpu, group_fd, flags);
    return fd < 0 ? -errno : fd;
}

static FILE *open_in(const char *dir, const char *rel)
{
    char path[8192];
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    return fopen(path, "r");
}

/* The first line of DIR/rel, or "" if it cannot be read. */
static void read_line(const char *dir, const char *rel, char *buf, size_t size)
{
    buf[0] = 0;
    FILE *f = open_in(dir, rel);
    if (!f)
        return;
    if (!fgets(buf, (int)size, f))
        buf[0] = 0;
    buf[strcspn(buf, "\n")] = 0;
    fclose(f);
}

static void parse_cpus(const char *text, unsigned char *set)
{
    const char *p = text;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p)
            break;
        if (*end == '-')
            hi = strtol(end + 1, &end, 10);
        for (long c = lo; c <= hi && c < MAX_DESC; c++)
            if (c >= 0)
                set[c] = 1;
        p = *end == ',' ? end + 1 : end + strlen(end);
    }
}

static int event_index(const char *name)
{
    for (int i = 0; i < pl_event_count; i++)
        if (!strcmp(pl_event_table[i].name, name))
            return i;
    return -1;
}

static int errno_of(const char *s)
{
    static const struct {
        const char *name;
        int value;
    } names[] = {{"ENOENT", ENOENT}, {"EINVAL", EINVAL}, {"EOPNOTSUPP", EOPNOTSUPP},
                 {"ENODEV", ENODEV}, {"EACCES", EACCES}, {"EPERM", EPERM}};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(names[i].name, s))
            return names[i].value;
    return isdigit((unsigned char)*s) ? atoi(s) : EINVAL;
}

/* "a,b:c,..." into event indexes (and errnos after ':' when errs is given). */
static int parse_events(char *list, int *idx, int *errs)
{
    int n = 0;
    for (char *save, *tok = strtok_r(list, ",", &save); tok && n < MAX_LIST;
         tok = strtok_r(NULL, ",", &save)) {
        char *colon = strchr(tok, ':');
        if (colon)
            *colon = 0;
        int i = event_index(tok);
        if (i < 0)
            continue;
        idx[n] = i;
        if (errs)
            errs[n] = colon ? errno_of(colon + 1) : ENOENT;
        n++;
    }
    return n;
}

static void read_pmus(const char *dir)
{
    char path[8192], text[4096];
    snprintf(path, sizeof path, "%s/sys/bus/event_source/devices", dir);
    DIR *d = opendir(path);
    if (!d)
        return;
    struct dirent *e;
    while ((e = readdir(d)) && m.npmu < MAX_PMUS) {
        if (e->d_name[0] == '.')
            continue;
        struct pmu *p = &m.pmu[m.npmu];
        char rel[512];
        snprintf(rel, sizeof rel, "sys/bus/event_source/devices/%s/type", e->d_name);
        read_line(dir, rel, text, sizeof text);
        if (!*text)
            continue;
        memset(p, 0, sizeof *p);
        snprintf(p->name, sizeof p->name, "%s", e->d_name);
        p->type = (uint32_t)strtoul(text, NULL, 10);
        snprintf(rel, sizeof rel, "sys/bus/event_source/devices/%s/cpus", e->d_name);
        FILE *f = open_in(dir, rel);
        int has_cpus = f != NULL;
        if (f)
            fclose(f);
        read_line(dir, rel, text, sizeof text);
        if (has_cpus)
            parse_cpus(text, p->cpus);
        else
            memset(p->cpus, 1, sizeof p->cpus);
        p->core = has_cpus || !strcmp(p->name, "cpu");
        p->general = 4;
        p->extended = 1;
        m.npmu++;
    }
    closedir(d);
}

static struct pmu *pmu_named(const char *name)
{
    for (int i = 0; i < m.npmu; i++)
        if (!strcmp(m.pmu[i].name, name))
            return &m.pmu[i];
    return NULL;
}

static void read_config(const char *dir)
{
    char line[4096];
    FILE *f = open_in(dir, "emulated-pmu");
    if (!f)
        return;
    while (fgets(line, sizeof line, f)) {
        char *save, *word = strtok_r(line, " \t\n", &save);
        struct pmu *p = word && *word != '#' ? pmu_named(word) : NULL;
        if (!p)
            continue;
        while ((word = strtok_r(NULL, " \t\n", &save))) {
            char *value = strchr(word, '=');
            if (!value)
                continue;
            *value++ = 0;
            if (!strcmp(word, "general"))
                p->general = atoi(value);
            else if (!strcmp(word, "fixed"))
                p->fixed = atoi(value);
            else if (!strcmp(word, "rdpmc"))
                p->rdpmc = atoi(value);
            else if (!strcmp(word, "extended-type"))
                p->extended = strcmp(value, "no") != 0;
            else if (!strcmp(word, "fixed-events"))
                p->nfixed_events = parse_events(value, p->fixed_events, NULL);
            else if (!strcmp(word, "unsupported"))
                p->nunsupported = parse_events(value, p->unsupported, p->unsupported_errno);
        }
    }
    fclose(f);
}

static uint64_t capeff(const char *status_path)
{
    char line[256];
    uint64_t caps = 0;
    FILE *f = fopen(status_path, "r");
    if (!f)
        return 0;
    while (fgets(line, sizeof line, f))
        if (!strncmp(line, "CapEff:", 7))
            caps = strtoull(line + 7, NULL, 16);
    fclose(f);
    return caps;
}

static void load(void)
{
    const char *dir = getenv(PL_MACHINE_ENV);
    char text[4096], path[8192];
    if (!dir)
        dir = "/nonexistent"; /* pl_perf_sys() never loads this file without it */
    read_pmus(dir);
    read_config(dir);
    read_line(dir, "proc/sys/kernel/perf_event_paranoid", text, sizeof text);
    m.paranoid = *text ? atoi(text) : 2;
    read_line(dir, "proc/sys/kernel/nmi_watchdog", text, sizeof text);
    m.watchdog = atoi(text) ? 1 : 0;
    snprintf(path, sizeof path, "%s/proc/self/status", dir);
    m.capeff = capeff(access(path, R_OK) == 0 ? path : "/proc/self/status");
    long n = sysconf(_SC_NPROCESSORS_CONF);
    m.nhost = n < 1 ? 1 : n > MAX_HOST ? MAX_HOST : (int)n;
    for (int k = 0; k < MAX_HOST; k++)
        m.host_to_desc[k] = k < MAX_DESC ? k : -1;
    FILE *f = open_in(dir, "host-cpus");
    if (f) {
        for (int k = 0; k < MAX_HOST; k++)
            m.host_to_desc[k] = -1;
        int host, desc;
        while (fscanf(f, " %d=%d", &host, &desc) == 2)
            if (host >= 0 && host < MAX_HOST && desc >= 0 && desc < MAX_DESC)
                m.host_to_desc[host] = desc;
        fclose(f);
    }
}

static int capable(int bit)
{
    return (int)(m.capeff >> bit & 1);
}

/* Rule 1. */
static int permitted(const struct perf_event_attr *a)
{
    if (m.paranoid > 2 && !capable(CAP_SYS_ADMIN_BIT))
        return -EACCES;
    if (!a->exclude_kernel && m.paranoid > 1 && !capable(CAP_PERFMON_BIT) &&
        !capable(CAP_SYS_ADMIN_BIT))
        return -EACCES;
    return 0;
}

static int pmu_of_type(uint32_t type)
{
    for (int i = 0; i < m.npmu; i++)
        if (m.pmu[i].type == type)
            return i;
    return -1;
}

static int last_registered_core(void)
{
    int best = -1;
    for (int i = 0; i < m.npmu; i++)
        if (m.pmu[i].core && (best < 0 || m.pmu[i].type > m.pmu[best].type))
            best = i;
    return best;
}

/* Rule 3: the core PMU the event goes to (>= 0), or -errno. */
static int route(const struct perf_event_attr *a, int *index)
{
    uint32_t type = a->type;
    *index = -1;
    if (a->type == PERF_TYPE_HARDWARE || a->type == PERF_TYPE_HW_CACHE) {
        uint32_t ext = (uint32_t)(a->config >> PERF_PMU_TYPE_SHIFT);
        uint64_t config = a->config & PERF_HW_EVENT_MASK;
        for (int i = 0; i < pl_event_count; i++)
            if (pl_event_table[i].type == a->type && pl_event_table[i].config == config)
                *index = i;
        if (a->type == PERF_TYPE_HARDWARE && config >= PERF_COUNT_HW_MAX)
            return -EINVAL;
        if (ext) {
            int p = pmu_of_type(ext);
            if (p < 0 || !m.pmu[p].core || (ext != PERF_TYPE_RAW && !m.pmu[p].extended))
                return -ENOENT;
            return p;
        }
        type = PERF_TYPE_RAW;
    }
    int p = pmu_of_type(type);
    if (p >= 0 && m.pmu[p].core)
        return p;
    if (p >= 0)
        return -EINVAL; /* an uncore PMU takes no task events
                           (uncore_pmu_event_init) */
    p = last_registered_core();
    return type == PERF_TYPE_RAW && p >= 0 ? p : -ENOENT;
}

static struct event *find(int fd)
{
    for (int i = 0; i < MAX_EVENTS; i++)
        if (events[i] && events[i]->fd == fd)
            return events[i];
    return NULL;
}

static int stands_for(int pmu, int host)
{
    int d = m.host_to_desc[host];
    return d >= 0 && m.pmu[pmu].cpus[d];
}

/* The task's time since reset on all host CPUs (*all) and on those of the
 * event's PMU. */
static uint64_t clocks(const struct event *e, uint64_t *all)
{
    uint64_t on_pmu = 0;
    *all = 0;
    for (int k = 0; k < m.nhost; k++) {
        uint64_t t = 0;
        if (e->cpu_fd[k] < 0 || read(e->cpu_fd[k], &t, sizeof t) != sizeof t)
            continue;
        *all += t;
        if (stands_for(e->pmu, k))
            on_pmu += t;
    }
    return on_pmu;
}

/* Events in the general pool that are counting on pmu for target: n of rule 4.
 */
static int contenders(int pmu, int target)
{
    int n = 0;
    for (int i = 0; i < MAX_EVENTS; i++) {
        struct event *e = events[i];
        if (e && e->pmu == pmu && e->target == target && !e->fixed && e->on && e->leader &&
            e->leader->on)
            n++;
    }
    return n;
}

/* Running time at the share in force now (rule 4), from P-time t. */
static uint64_t running_at(const struct event *l, uint64_t t)
{
    uint64_t delta = t - l->mark;
    if (!l->fixed) {
        int n = contenders(l->pmu, l->target);
        int free = m.pmu[l->pmu].general - m.watchdog;
        free = free < 0 ? 0 : free;
        if (n > free)
            delta = delta * (uint64_t)free / (uint64_t)n;
    }
    return l->bank + delta;
}

static uint64_t running(const struct event *l, uint64_t *enabled)
{
    return running_at(l, clocks(l, enabled));
}

/* Before n changes on (pmu, target): bank every leader's running at the old
 * share. */
static void new_epoch(int pmu, int target)
{
    for (int i = 0; i < MAX_EVENTS; i++) {
        struct event *l = events[i];
        if (!l || l->leader != l || l->pmu != pmu || l->target != target)
            continue;
        uint64_t all, t = clocks(l, &all);
        l->bank = running_at(l, t);
        l->mark = t;
    }
}

/* A member's count so far (rule 6), given its leader's running time. */
static uint64_t member_count(const struct event *e, uint64_t leader_running)
{
    return e->mbank + (e->on ? (leader_running - e->mmark) * e->rate : 0);
}

static int emu_open(struct perf_event_attr *attr, pid_t pid, int cpu, int group_fd,
                    unsigned long flags)
{
    pthread_once(&once, load);
    int rc = permitted(attr);
    if (rc)
        return rc;
    pthread_mutex_lock(&lock);
    struct event *leader = group_fd >= 0 ? find(group_fd) : NULL;
    pthread_mutex_unlock(&lock);
    if (attr->type == PERF_TYPE_SOFTWARE || attr->type == PERF_TYPE_TRACEPOINT ||
        attr->type == PERF_TYPE_BREAKPOINT)
        return leader ? -EINVAL /* not modelled: pagelab keeps software events apart */
                      : real_open(attr, pid, cpu, group_fd, flags);
    int index, p = route(attr, &index);
    if (p < 0)
        return p;
    for (int i = 0; i < m.pmu[p].nunsupported; i++)
        if (m.pmu[p].unsupported[i] == index)
            return -m.pmu[p].unsupported_errno[i];
    if (pid < 0 || cpu != -1)
        return -EOPNOTSUPP; /* not modelled: CPU-wide and CPU-bound hardware events
                             */
    if (group_fd >= 0 && (!leader || leader->leader != leader || leader->pmu != p))
        return -EINVAL;

    struct event *e = calloc(1, sizeof *e);
    if (!e)
        return -ENOMEM;
    e->pmu = p;
    e->target = pid ? pid : (int)syscall(SYS_gettid);
    e->rate = 1 + (uint64_t)(index >= 0 ? index : pl_event_count);
    for (int i = 0; i < m.pmu[p].nfixed_events && i < m.pmu[p].fixed; i++)
        e->fixed |= index >= 0 && m.pmu[p].fixed_events[i] == index;
    e->read_format = attr->read_format;
    e->on = !attr->disabled || attr->enable_on_exec;
    for (int k = 0; k < MAX_HOST; k++)
        e->cpu_fd[k] = -1;

    pthread_mutex_lock(&lock);
    int slot = 0;
    while (slot < MAX_EVENTS && events[slot])
        slot++;
    rc = slot == MAX_EVENTS ? -EMFILE : 0;
    if (!rc && leader) {
        if (e->on && leader->on && !leader->fixed)
            new_epoch(p, e->target);
        e->leader = leader;
        e->fixed = leader->fixed; /* the group runs as its leader does */
        e->mmark = running(leader, &(uint64_t){0});
        e->fd = fcntl(leader->fd, F_DUPFD_CLOEXEC, 0);
        rc = e->fd < 0 ? -errno : 0;
    } else if (!rc) {
        e->leader = e;
        if (e->on)
            new_epoch(p, e->target);
        struct perf_event_attr clock;
        memset(&clock, 0, sizeof clock);
        clock.size = sizeof clock;
        clock.type = PERF_TYPE_SOFTWARE;
        clock.config = PERF_COUNT_SW_TASK_CLOCK;
        clock.disabled = attr->disabled;
        clock.inherit = attr->inherit;
        clock.enable_on_exec = attr->enable_on_exec;
        clock.exclude_kernel = clock.exclude_hv = 1; /* opens at any real paranoid level */
        e->fd = -1;
        for (int k = 0; k < m.nhost && !rc; k++) {
            int fd = real_open(&clock, pid, k, -1, PERF_FLAG_FD_CLOEXEC);
            if (fd == -ENODEV || fd == -EINVAL)
                continue; /* an offline CPU */
            rc = fd < 0 ? fd : 0;
            e->cpu_fd[k] = fd;
            if (e->fd < 0)
                e->fd = fd;
        }
        rc = rc ? rc : e->fd < 0 ? -ENODEV : 0;
    }
    if (rc) {
        for (int k = 0; k < MAX_HOST; k++)
            if (e->cpu_fd[k] >= 0)
                close(e->cpu_fd[k]);
        free(e);
    } else {
        e->id = next_id++;
        events[slot] = e;
        rc = e->fd;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

static size_t lost_words(uint64_t f)
{
#ifdef PERF_FORMAT_LOST
    return !!(f & PERF_FORMAT_LOST);
#else
    (void)f;
    return 0;
#endif
}

/* What one read(2) of e returns, into buf (rule 6 for groups). */
static ssize_t fill(const struct event *e, uint64_t *buf, size_t count)
{
    const struct event *l = e->leader;
    uint64_t enabled = 0, run = l ? running(l, &enabled) : 0, f = e->read_format;
    const struct event *group[MAX_EVENTS];
    int n = 0;
    if (f & PERF_FORMAT_GROUP) {
        group[n++] = l ? l : e;
        for (int i = 0; l && i < MAX_EVENTS; i++)
            if (events[i] && events[i]->leader == l && events[i] != l)
                group[n++] = events[i];
    } else {
        group[n++] = e;
    }
    size_t words = (f & PERF_FORMAT_GROUP ? 1 : 0) + !!(f & PERF_FORMAT_TOTAL_TIME_ENABLED) +
                   !!(f & PERF_FORMAT_TOTAL_TIME_RUNNING) +
                   (size_t)n * (1 + !!(f & PERF_FORMAT_ID) + lost_words(f));
    if (count < words * sizeof *buf)
        return -ENOSPC;
    size_t w = 0;
    if (f & PERF_FORMAT_GROUP)
        buf[w++] = (uint64_t)n;
    for (int i = 0; i < n; i++) {
        const struct event *x = group[i];
        uint64_t value = !l ? x->mbank : x == l ? run * x->rate : member_count(x, run);
        if (!(f & PERF_FORMAT_GROUP) || i == 0) {
            if (!(f & PERF_FORMAT_GROUP))
                buf[w++] = value;
            if (f & PERF_FORMAT_TOTAL_TIME_ENABLED)
                buf[w++] = enabled;
            if (f & PERF_FORMAT_TOTAL_TIME_RUNNING)
                buf[w++] = run;
        }
        if (f & PERF_FORMAT_GROUP)
            buf[w++] = value;
        if (f & PERF_FORMAT_ID)
            buf[w++] = x->id;
#ifdef PERF_FORMAT_LOST
        if (f & PERF_FORMAT_LOST)
            buf[w++] = 0;
#endif
    }
    return (ssize_t)(w * sizeof *buf);
}

static ssize_t emu_read(int fd, void *buf, size_t count)
{
    pthread_mutex_lock(&lock);
    struct event *e = find(fd);
    ssize_t got = e ? fill(e, buf, count) : 0;
    pthread_mutex_unlock(&lock);
    if (e)
        return got;
    got = read(fd, buf, count);
    return got < 0 ? -errno : got;
}

static void set_clocks(const struct event *l, unsigned long request)
{
    for (int k = 0; k < m.nhost; k++)
        if (l->cpu_fd[k] >= 0)
            ioctl(l->cpu_fd[k], request, 0);
}

/* ENABLE, DISABLE or RESET on e alone (rules 4 and 6). */
static void act(struct event *e, unsigned long request)
{
    struct event *l = e->leader;
    if (!l)
        return;
    uint64_t all, run = running(l, &all);
    if (e != l) {
        e->mbank = request == PERF_EVENT_IOC_RESET ? 0 : member_count(e, run);
        e->mmark = run;
        if (request != PERF_EVENT_IOC_RESET)
            e->on = request == PERF_EVENT_IOC_ENABLE;
        return;
    }
    if (request == PERF_EVENT_IOC_RESET) {
        set_clocks(l, request);
        l->bank = l->mark = 0;
        for (int i = 0; i < MAX_EVENTS; i++)
            if (events[i] && events[i]->leader == l && events[i] != l)
                events[i]->mmark = 0; /* members count from the leader's new zero */
        return;
    }
    int on = request == PERF_EVENT_IOC_ENABLE;
    if (on == l->on)
        return;
    for (int i = 0; i < MAX_EVENTS; i++) /* members stop and start with their leader */
        if (events[i] && events[i]->leader == l && events[i] != l) {
            events[i]->mbank = member_count(events[i], run);
            events[i]->mmark = run;
        }
    if (!l->fixed)
        new_epoch(l->pmu, l->target);
    l->on = on;
    set_clocks(l, request);
}

static int emu_ioctl(int fd, unsigned long request, unsigned long arg)
{
    pthread_mutex_lock(&lock);
    struct event *e = find(fd);
    int rc = 0;
    if (e && request == PERF_EVENT_IOC_ID) {
        *(uint64_t *)arg = e->id;
    } else if (e && (request == PERF_EVENT_IOC_ENABLE || request == PERF_EVENT_IOC_DISABLE ||
                     request == PERF_EVENT_IOC_RESET)) {
        struct event *l = e->leader;
        if (arg & PERF_IOC_FLAG_GROUP && l) {
            act(l, request);
            for (int i = 0; i < MAX_EVENTS; i++)
                if (events[i] && events[i]->leader == l && events[i] != l)
                    act(events[i], request);
        } else {
            act(e, request);
        }
    } else if (e) {
        rc = -ENOTTY; /* not modelled */
    }
    pthread_mutex_unlock(&lock);
    if (e)
        return rc;
    return ioctl(fd, request, arg) < 0 ? -errno : 0;
}

static void *emu_mmap(int fd, size_t length, int prot)
{
    pthread_mutex_lock(&lock);
    struct event *e = find(fd);
    int rdpmc = e ? m.pmu[e->pmu].rdpmc : 0;
    pthread_mutex_unlock(&lock);
    if (!e) {
        void *p = mmap(NULL, length, prot, MAP_SHARED, fd, 0);
        return p == MAP_FAILED ? NULL : p;
    }
    if (length != (size_t)sysconf(_SC_PAGESIZE)) {
        errno = EINVAL; /* not modelled: a sampling ring buffer */
        return NULL;
    }
    struct perf_event_mmap_page *pc =
        mmap(NULL, length, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (pc == MAP_FAILED)
        return NULL;
    pc->cap_user_rdpmc = (unsigned)rdpmc;
    pc->index = 0; /* never on a counter from user space: read(2) it */
    if (mprotect(pc, length, prot) < 0) {
        munmap(pc, length);
        return NULL;
    }
    return pc;
}

static int emu_munmap(void *addr, size_t length)
{
    return munmap(addr, length) < 0 ? -errno : 0;
}

static int emu_close(int fd)
{
    pthread_mutex_lock(&lock);
    struct event *e = find(fd);
    if (e) {
        if (e->leader == e) {
            if (e->on && !e->fixed)
                new_epoch(e->pmu, e->target);
            uint64_t all, run = running(e, &all);
            for (int i = 0; i < MAX_EVENTS; i++)
                if (events[i] && events[i]->leader == e && events[i] != e) {
                    events[i]->mbank = member_count(events[i], run); /* counts no more */
                    events[i]->leader = NULL;
                }
            for (int k = 0; k < m.nhost; k++)
                if (e->cpu_fd[k] >= 0 && e->cpu_fd[k] != fd)
                    close(e->cpu_fd[k]);
        } else if (e->leader && e->on && e->leader->on && !e->fixed) {
            new_epoch(e->pmu, e->target);
        }
        for (int i = 0; i < MAX_EVENTS; i++)
            if (events[i] == e)
                events[i] = NULL;
        free(e);
    }
    pthread_mutex_unlock(&lock);
    return close(fd) < 0 ? -errno : 0;
}

const struct pl_perf_sys pl_emulated_perf_sys = {emu_open, emu_read,   emu_ioctl,
                                                 emu_mmap, emu_munmap, emu_close};
