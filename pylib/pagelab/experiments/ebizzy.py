"""ebizzy: short-lived per-record buffers from malloc, mmap, a pool or tuned malloc; how many
page faults each record takes, what that costs, and which code takes them."""

import statistics

from ..core.reading import Reading
from ..counters.reasons import Facts, explain
from ..native.worker import environment as worker_environment
from ..native.workloads import EBIZZY_FIXED_MMAP_THRESHOLD as FIXED_MMAP_THRESHOLD
from ..native.workloads import FAULT_PROFILE_BYTES, workload
from ..results.result import Claim, Measured
from .common import MIB, PAGE, per, ratio_text, unavailable

TIMEOUT = 120
EVENTS = "page-faults,minor-faults"
STORMS = ("mmap", "malloc-fixed")  # a fresh mapping per record
FIXES = ("pool", "tuned")
THREAD_STACK = 8 * MIB  # glibc's default pthread stack (RLIMIT_STACK), reserved per thread
ARENA_RESERVE = 128 * MIB  # a new thread arena maps 2 x HEAP_MAX_SIZE (64 MiB) to align it
TOP_SITES = 5  # code locations per mode kept as measurements (all are in result.text)
SUMMARY = ("records_per_s", "faults_per_record", "cpu_us_per_record", "samples", "share")


def _modes():
    return workload("ebizzy").params["mode"].choices  # "all" first, then the modes


def memory(p):
    buf = p["buffer_kb"] << 10
    # the source, plus per thread the buffer in use and one more that malloc may keep
    resident = (p["chunks"] + 2 * p["threads"]) * buf + p["threads"] * FAULT_PROFILE_BYTES
    return resident, resident + p["threads"] * (THREAD_STACK + ARENA_RESERVE)


def run(ctx):
    p = ctx.params
    names = _modes()
    modes = names[1:] if p["mode"] == 0 else (names[p["mode"]],)
    facts = Facts.read()
    measured, sites, text = [], [], []
    for mode in modes:  # one worker each: mallopt and glibc's dynamic threshold are per process
        if ctx.progress:
            ctx.progress(f"ebizzy: {mode}")
        regions, raw = ctx.workload(EVENTS, what=f"ebizzy ({mode})", mode=names.index(mode))
        m, mode_sites = _summarise(mode, regions, raw, p, facts)
        measured.append(m)
        sites += mode_sites
        text.append(_profile_text(m, raw))
    by = {m.label: m for m in measured}
    pages = (p["buffer_kb"] << 10) // PAGE
    storms = [
        s
        for s in STORMS
        if s in by and (s != "malloc-fixed" or p["buffer_kb"] << 10 >= FIXED_MMAP_THRESHOLD)
    ]
    fixes = [f for f in FIXES if f in by]
    claims = [_fresh(by, storms, pages), _fewer(by, storms, fixes), _faster(by, storms, fixes)]
    return ctx.result(
        measured + sites,
        claims,
        _notes(by, storms),
        text="\n".join(text),
        summary=SUMMARY,
        figure=figure,
    )


def _total(readings, name):
    """One reading summed over rounds; unavailable counters keep their reason and fallback."""
    first = readings[0]
    if all(r.value is not None for r in readings):
        return Reading(
            name,
            sum(r.value for r in readings),
            first.source,
            first.unit,
            kernel_excluded=first.kernel_excluded,
        )
    fb = [r.fallback for r in readings]
    fallback = Reading(fb[0].name, sum(f.value for f in fb), fb[0].source) if all(fb) else None
    return Reading(name, None, first.source, first.unit, reason=first.reason, fallback=fallback)


def _summarise(mode, regions, raw, p, facts):
    rounds = [r for r in regions if r.label.startswith("round ")]
    per_round = p["threads"] * p["records"]
    records = per_round * len(rounds)
    m = Measured(mode)
    # the C loop ran rounds until the fastest agreed: noise only slows a round, so the fastest
    # round is the rate the code achieves, and the spread says how well it was pinned down
    rates = sorted((per_round / r["elapsed"].value for r in rounds), reverse=True)
    for name, value in (
        ("records_per_s", rates[0]),
        ("records_per_s_median", statistics.median(rates)),
        ("records_per_s_min", rates[-1]),
    ):
        m.add(Reading(name, round(value), "clock", "1/s"))
    m.add(Reading("rounds", len(rounds), "clock"))
    # how far apart the fastest few rounds lie (the C loop's measure; < 0: too few rounds)
    spread = next(v["value"] for v in raw["values"] if v["label"] == "rounds")
    if spread >= 0:
        m.add(Reading("rate_spread", spread, "clock"))
    faults = m.add(_total([r["page-faults"] for r in rounds], "page-faults"))
    m.add(per(faults, records, "faults_per_record"))
    if len(rounds) > 1:  # after the first round: the steady state, once allocators warmed up
        later = _total([r["page-faults"] for r in rounds[1:]], "page-faults")
        m.add(per(later, records - per_round, "later_faults_per_record"))
    minflt = m.add(_total([r["minflt"] for r in rounds], "minflt"))
    m.add(per(minflt, records, "minflt_per_record"))
    cpu = sum(r["utime"].value + r["stime"].value for r in rounds)
    m.add(Reading("cpu_us_per_record", cpu * 1e6 / records, "rusage", "us"))

    prof = {v["name"]: v["value"] for v in raw["values"] if v["label"] == "profile"}
    why = _profile_failure(prof, facts)
    if why:  # every profile reading is there, unavailable with the reason
        for name in ("samples", "lost", "distinct_pages", "undelivered"):
            m.add(Reading(f"profile_{name}", None, "sw", reason=why))
        return m, []
    excluded = bool(prof["kernel_excluded"])
    for name, key in (("samples", "samples"), ("lost", "lost"), ("distinct_pages", "pages")):
        m.add(Reading(f"profile_{name}", int(prof[key]), "sw", kernel_excluded=excluded))
    m.add(Reading("profile_undelivered", int(prof["counted"] - prof["samples"]), "sw"))
    total = prof["samples"] or 1
    sites = []
    for samples, where, module in _sites(raw["facts"])[:TOP_SITES]:
        s = Measured(f"{mode}: {where}" + ("" if where.startswith(module) else f" in {module}"))
        s.add(Reading("samples", samples, "sw"))
        s.add(Reading("share", 100 * samples / total, "sw", "%"))
        sites.append(s)
    return m, sites


def _profile_failure(prof, facts):
    """Why the fault profile is missing or partial, or None when every thread was sampled."""
    for key, value in prof.items():
        if not key.endswith("_errno"):
            continue
        err = int(value)
        step = key[: -len("_errno")]
        if step == "perf_event_open":
            return f"fault sampling not available here ({explain(err, 'sw', facts)})"
        if step == "mmap":
            return (
                f"mapping the sample ring failed ({explain(err, 'sw', facts).code}: the "
                "locked-memory limit, perf_event_mlock_kb or RLIMIT_MEMLOCK); try a "
                "smaller ring_kb or fewer threads"
            )
        return f"reading the fault samples failed at {step} (errno {err})"
    return None


def _sites(facts):
    """(samples, where, module) per code location, busiest first (the "site N" facts)."""
    sites = [f for label, f in facts.items() if label.startswith("site ")]
    return [(f["samples"], f["where"], f["module"]) for f in sites]


def _profile_text(m, raw):
    head = f"{m.label}: "
    s = m["profile_samples"]
    if s.value is None:
        return head + s.reason
    lines = [
        head + f"{s.value:,} fault samples, {m['profile_lost'].value:,} lost, "
        f"{m['profile_distinct_pages'].value:,} distinct data pages"
    ]
    total = s.value or 1
    lines += [
        f"  {n / total:6.1%}  {n:>9,}  {where}  ({module})"
        for n, where, module in _sites(raw["facts"])
    ]
    return "\n".join(lines)


def _fpr(by, mode):
    return by[mode]["faults_per_record"]


def _missing(by, fixes, need_fix=True):
    """Why a claim comparing modes cannot be evaluated on the modes that ran, or None."""
    if "mmap" not in by:
        return f"needs the mmap mode (ran: {', '.join(by)}); run mode=all"
    if need_fix and not fixes:
        return f"needs the pool or tuned mode (ran: {', '.join(by)}); run mode=all"
    return None


def _fresh(by, storms, pages):
    text = "fresh per-record buffers fault on every page of every record"
    if why := _missing(by, (), need_fix=False):
        return Claim("fresh-buffers-fault", text, None, reason=why)
    if why := next(filter(None, (unavailable(_fpr(by, s)) for s in storms)), None):
        return Claim("fresh-buffers-fault", text, None, reason=why)
    # each page of a fresh mapping faults once per record: 0.9 x pages leaves room for rounding
    holds = all(_fpr(by, s).best >= 0.9 * pages for s in storms)
    shown = ", ".join(f"{s} {_fpr(by, s).best:,.1f}" for s in storms)
    return Claim(
        "fresh-buffers-fault",
        text,
        holds,
        f"{shown} faults per record for a {pages}-page buffer ({_fpr(by, storms[0]).best_source})",
    )


def _fewer(by, storms, fixes):
    text = (
        "pooling or malloc tuning cuts page faults at least 10x (a reused buffer faults only once)"
    )
    if why := _missing(by, fixes):
        return Claim("fix-cuts-faults", text, None, reason=why)
    if why := next(filter(None, (unavailable(_fpr(by, s)) for s in storms + fixes)), None):
        return Claim("fix-cuts-faults", text, None, reason=why)
    base = min(_fpr(by, s).best for s in storms)  # the mildest storm
    ratios = {f: base / _fpr(by, f).best if _fpr(by, f).best else float("inf") for f in fixes}
    shown = ", ".join(f"{f} {_fpr(by, f).best:,.3g} ({_ratio(r)})" for f, r in ratios.items())
    return Claim(
        "fix-cuts-faults",
        text,
        all(r >= 10 for r in ratios.values()),
        f"faults per record: {shown} vs {base:,.1f} for the fresh buffers "
        f"({_fpr(by, fixes[0]).best_source})",
    )


def _ratio(r):
    return "no faults at all" if r == float("inf") else f"{ratio_text(r)} fewer"


def _faster(by, storms, fixes):
    text = "and raises records/s over fresh buffers"
    if why := _missing(by, fixes):
        return Claim("fix-raises-throughput", text, None, reason=why)

    def rate(mode):
        return by[mode]["records_per_s"].value

    def spread(mode):
        r = by[mode].metrics.get("rate_spread")
        return "unsettled" if r is None else f"{r.value:.1%}"

    # the slowest fix against the fastest storm, each its fastest round
    holds = min(rate(f) for f in fixes) > max(rate(s) for s in storms)
    shown = ", ".join(f"{x} {rate(x):,.0f}" for x in fixes + storms)
    spreads = ", ".join(
        f"{x} {int(by[x]['rounds'].value)} rounds, {spread(x)}" for x in fixes + storms
    )
    cpu = ", ".join(f"{x} {by[x]['cpu_us_per_record'].value:,.0f}" for x in fixes + storms)
    return Claim(
        "fix-raises-throughput",
        text,
        holds,
        f"records/s of the fastest round: {shown} (clock; rounds until the fastest few agreed: "
        f"{spreads}); CPU us per record: {cpu} (rusage)",
    )


def _notes(by, storms):
    notes = [
        "transparent huge pages (and mTHP) are off in the workers (PR_SET_THP_DISABLE), "
        "so every fault maps one base page"
    ]
    if "malloc" in by and storms:
        m, base = by["malloc"], min(_fpr(by, s).best or 0 for s in storms)
        fpr = m["faults_per_record"].best
        later = m.metrics.get("later_faults_per_record")
        steady = (
            f"; after the first round {later.best:,.3g}" if later and later.best is not None else ""
        )
        if fpr is not None and base and fpr * 10 <= base:
            notes.append(
                f"malloc (no mallopt) took {fpr:,.3g} faults per record{steady}: the "
                "first free of an mmapped buffer raised glibc's dynamic mmap threshold above "
                "the buffer size, so later buffers came from the thread's arena and were reused"
            )
        elif fpr is not None:
            pinned = [
                k
                for k in ("MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_", "GLIBC_TUNABLES")
                if k in worker_environment()  # passed only when named in $PAGELAB_PASS_ENV
            ]
            notes.append(
                f"malloc (no mallopt) took {fpr:,.3g} faults per record{steady}: "
                "it kept mapping fresh buffers"
                + (
                    f" ({', '.join(pinned)} is set in the environment and may pin the threshold)"
                    if pinned
                    else ""
                )
            )
    profiled = [m for m in by.values() if m["profile_samples"].value is not None]
    if not profiled:
        first = next(iter(by.values()))
        minflt = ", ".join(f"{m.label} {m['minflt'].value:,}" for m in by.values())
        notes.append(f"{first['profile_samples'].reason}; rusage minflt per mode: {minflt}")
        return notes
    undelivered = sum(m["profile_undelivered"].value for m in profiled)
    counted = sum(m["profile_samples"].value for m in profiled) + undelivered
    excluded = any(m["profile_samples"].kernel_excluded for m in profiled)
    notes.append(
        "fault profile: one more round per mode with a page-fault sampler in every "
        "thread (sample_period 1"
        + (", user space only" if excluded else "")
        + "); "
        + (
            "every counted fault was delivered"
            if not undelivered
            else f"{undelivered:,} of {counted:,} counted faults were lost on a full ring"
        )
    )
    for m in profiled:
        samples, pages = m["profile_samples"].value, m["profile_distinct_pages"].value
        if m.label in storms and pages and samples >= 2 * pages:
            notes.append(
                f"{m.label}: {samples:,} sampled faults hit only {pages:,} distinct "
                "data pages: each munmap gave the pages back and the next mapping got "
                "the same addresses, to be faulted and zeroed again"
            )
            break
    return notes


def figure(result):
    from ..results.plots import bars, grid, hbars

    modes = [m for m in result.measurements if "records_per_s" in m.metrics]
    sites = [m for m in result.measurements if "share" in m.metrics]
    rows = [
        (
            bars(
                "faults per record",
                [m.label for m in modes],
                [m["faults_per_record"] for m in modes],
            ),
            bars(
                "records per second", [m.label for m in modes], [m["records_per_s"] for m in modes]
            ),
        )
    ]
    if sites:  # the fault profile gets a row of its own: its labels are long
        rows.append(
            (
                hbars(
                    "where the faults happen (sampled faults per code location)",
                    [s.label for s in sites],
                    [s["samples"] for s in sites],
                ),
            )
        )
    return grid("ebizzy: fresh buffers vs reused ones", *rows)
