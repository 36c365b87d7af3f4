/* vsyscall: time() three ways: through the vDSO (no kernel entry), as a real system call, and
 * through the legacy vsyscall page, which modern kernels trap and emulate on a page fault. */
#include <errno.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "pl_workloads.h"

/* time() in the fixed legacy page, at +0x400 (gettimeofday is at +0) */
#define VSYSCALL_TIME (PL_VSYSCALL_BASE + 0x400)
#define WARMUP_DIVISOR                                                                             \
    10 /* a tenth of the calls, uncounted, to settle caches and the branch state */

enum { P_CALLS, P_PROCESSES, NPARAMS };

static const struct pl_param params[NPARAMS] = {
    {"calls", 100000, 1000, 100000000, "calls", NULL, "calls per variant in each process"},
    {"processes", 5, 1, 50, "processes", NULL,
     "worker processes, each a fresh run: mean and spread come from these (pyperf style)"},
};

typedef time_t (*time_fn)(time_t *);

/* Only this thread's SIGSEGV handler reads it: per-thread, so nothing is shared. */
static _Thread_local sigjmp_buf *vsyscall_guard;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
    (void)uc;
    if (vsyscall_guard && (uintptr_t)si->si_addr >> 12 == VSYSCALL_TIME >> 12)
        siglongjmp(*vsyscall_guard, 1);
    signal(sig, SIG_DFL); /* any other fault is a real crash: let it kill the worker */
    raise(sig);
}

static time_t via_vdso(void)
{
    return time(NULL);
}

static time_t via_syscall(void)
{
    return (time_t)syscall(SYS_time, NULL);
}

static time_t via_vsyscall(void)
{
    return ((time_fn)VSYSCALL_TIME)(NULL);
}

static void loop(struct pl_ctx *c, const char *label, time_t (*fn)(void), int64_t calls)
{
    volatile time_t sink = 0; /* keeps every call's result alive */
    for (int64_t i = 0; i < calls / WARMUP_DIVISOR; i++)
        sink += fn();
    struct pl_region r = {.group = c->group};
    PL_REGION_BEGIN(&r);
    for (int64_t i = 0; i < calls; i++)
        sink += fn();
    PL_REGION_END(&r);
    pl_out_region(c->out, label, &r);
}

static int run(struct pl_ctx *c)
{
    int64_t calls = c->param[P_CALLS];
    loop(c, "vdso", via_vdso, calls);
    loop(c, "syscall", via_syscall, calls);

    /* Under vsyscall=none the page is not mapped and the call is a SIGSEGV: catch exactly that
     * fault and report it, instead of letting the worker die without the other results. */
    struct sigaction sa = {.sa_sigaction = on_segv, .sa_flags = SA_SIGINFO | SA_NODEFER}, old;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGSEGV, &sa, &old) != 0)
        return pl_out_fail(c->out, -errno, "sigaction(SIGSEGV) failed");
    sigjmp_buf jb;
    vsyscall_guard = &jb;
    if (sigsetjmp(jb, 1) == 0)
        loop(c, "vsyscall", via_vsyscall, calls);
    else
        pl_out_value(c->out, "vsyscall", "sigsegv", 1, "", "rusage");
    vsyscall_guard = NULL;
    sigaction(SIGSEGV, &old, NULL);
    return 0;
}

const struct pl_workload pl_wl_vsyscall = {
    "vsyscall", "time() via the vDSO, a real syscall, and the trapped legacy vsyscall page",
    params,     NPARAMS,
    run,        NULL,
};
