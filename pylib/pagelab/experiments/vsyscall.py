"""vsyscall: the legacy vsyscall page is trapped and emulated, one page fault per call."""

from ..core.reading import Reading
from ..machine import environment as env
from ..native.worker import WorkerDied
from ..results.result import Claim, Measured
from .common import mean_stdev, per, ratio_text, unavailable

TIMEOUT = 60
EVENTS = "page-faults,minor-faults"
VARIANTS = ("vdso", "syscall", "vsyscall")
SUMMARY = ("ns_per_call", "ns_per_call_stdev", "faults_per_call", "minflt_per_call")
NONE_REASON = (
    "this kernel has vsyscall=none: the page is not mapped, so a call is a SIGSEGV "
    "(caught in the worker)"
)


def memory(p):
    return 0, 0


def run(ctx):
    calls = ctx.params["calls"]
    runs, sigsegv = [], False
    for i in range(ctx.params["processes"]):
        if ctx.progress:
            ctx.progress(f"vsyscall: process {i + 1} of {ctx.params['processes']}")
        try:
            measured, _ = ctx.workload(EVENTS, what="vsyscall")
        except WorkerDied as e:
            if e.signal != 11:
                raise
            sigsegv = True  # the in-worker guard missed it; the answer is the same
            break
        by = {m.label: m for m in measured}
        sigsegv = sigsegv or "sigsegv" in by.get("vsyscall", Measured("")).metrics
        runs.append(by)
    measurements = [
        _aggregate(label, [r[label] for r in runs if label in r], calls) for label in VARIANTS
    ]
    measurements = [m for m in measurements if m.metrics]
    by = {m.label: m for m in measurements}
    mode = env.vsyscall_mode()
    claims = _claims(by, sigsegv or mode == "none")
    notes = [f"vsyscall mode here: {mode} (from the [vsyscall] mapping)"]
    return ctx.result(measurements, claims, notes, summary=SUMMARY, figure=figure)


def _aggregate(label, runs, calls):
    """Mean and spread over the worker processes, pyperf style."""
    m = Measured(label)
    if not runs or "elapsed" not in runs[0].metrics:
        return m
    ns = [r["elapsed"].value * 1e9 / calls for r in runs]
    mean, stdev = mean_stdev(ns)
    m.add(Reading("ns_per_call", mean, "clock", "ns"))
    m.add(Reading("ns_per_call_stdev", stdev, "clock", "ns"))
    # noise only adds time: the fastest process is what a call costs, for the claim to compare
    m.add(Reading("ns_per_call_min", min(ns), "clock", "ns"))
    m.add(Reading("processes", len(runs), "clock"))
    # perf only: rusage cannot see the emulation fault, so no fallback stands in for it here
    pf = [r["page-faults"] for r in runs]
    first = pf[0]
    value = sum(x.value for x in pf) / (calls * len(runs)) if first.available else None
    m.add(
        Reading(
            "faults_per_call",
            value,
            "sw",
            kernel_excluded=first.kernel_excluded,
            reason=first.reason,
        )
    )
    minflt = Reading("minflt", sum(r["minflt"].value for r in runs), "rusage")
    m.add(per(minflt, calls * len(runs), "minflt_per_call"))
    return m


def _claims(by, none):
    slower = (
        "calling the vsyscall page is at least 20x slower than time() via the vDSO (riley's blog "
        "measured 156x)"
    )
    fault = "each vsyscall call takes one perf page fault (the trap that starts the emulation)"
    flat = "rusage minflt stays flat: the emulated fault is not a memory-manager fault"
    if none or "vsyscall" not in by:
        return [
            Claim(i, t, None, reason=NONE_REASON)
            for i, t in (
                ("vsyscall-much-slower", slower),
                ("vsyscall-fault-per-call", fault),
                ("vsyscall-minflt-flat", flat),
            )
        ]
    v, d = by["vsyscall"], by["vdso"]
    slow, fast = v["ns_per_call_min"].value, d["ns_per_call_min"].value
    ratio = slow / fast
    claims = [
        Claim(
            "vsyscall-much-slower",
            slower,
            ratio >= 20,
            f"{ratio_text(ratio)}: {slow:.0f} ns vs {fast:.1f} ns per call (the fastest process "
            "of each, clock)",
        )
    ]
    f = v["faults_per_call"]
    if why := unavailable(f):
        claims.append(
            Claim(
                "vsyscall-fault-per-call",
                fault,
                None,
                reason=why + "; rusage cannot see this fault, so nothing stands in",
            )
        )
    else:
        claims.append(
            Claim(
                "vsyscall-fault-per-call",
                fault,
                0.9 <= f.value <= 1.1,
                f"{f.value:.3f} page faults per call (sw)",
            )
        )
    mf = v["minflt_per_call"].value
    claims.append(
        Claim("vsyscall-minflt-flat", flat, mf < 0.01, f"{mf:.5f} minflt per call (rusage)")
    )
    return claims


def figure(result):
    from ..results.plots import bars, side_by_side

    ms = result.measurements
    return side_by_side(
        "time() three ways",
        bars("ns per call", [m.label for m in ms], [m["ns_per_call"] for m in ms], log=True),
        bars("page faults per call", [m.label for m in ms], [m["faults_per_call"] for m in ms]),
    )
