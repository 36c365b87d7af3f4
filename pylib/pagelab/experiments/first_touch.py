"""first-touch: the first write to fresh anonymous memory costs a page fault per base page."""

from ..machine import environment as env
from ..results.result import Claim
from .common import HUGE_PAGE, MIB, PAGE, per, ratio_text, unavailable

TIMEOUT = 120
EVENTS = "page-faults,minor-faults,major-faults"
THREAD_STACK = 8 * MIB  # glibc's default pthread stack (RLIMIT_STACK), reserved per thread
SUMMARY = ("faults_per_page", "us_per_mib", "page-faults", "minflt")


def memory(p):
    size = p["size_mb"] * MIB
    return size + HUGE_PAGE, 2 * size + HUGE_PAGE + p["threads"] * THREAD_STACK


def run(ctx):
    p = ctx.params
    measured, _ = ctx.workload(EVENTS)
    pages = p["size_mb"] * MIB // PAGE
    touched = {  # label -> pages written in that region
        "first touch": pages,
        "second touch": pages,
        "populate: mmap": pages,
        "populate: touch": pages,
        "huge pages": pages,
        "fresh mmap per round": pages * p["rounds"],
        "pool: first round": pages,
        "pool: later rounds": pages * (p["rounds"] - 1),
    }
    for m in measured:
        n = touched.get(m.label, pages)  # threads=N regions touch the whole buffer once
        if "page-faults" in m.metrics:
            m.add(per(m["page-faults"], n, "faults_per_page"))
            m.add(per(m["minflt"], n, "minflt_per_page"))
            mib = n * PAGE / MIB
            m.add(per(m["elapsed"], mib / 1e6, "us_per_mib", "us"))
    by = {m.label: m for m in measured}
    claims = [
        _first(by),
        _second(by),
        _populate(by),
        _huge(by, p),
        _pool(by),
        _threads(by, pages, p["threads"]),
    ]
    notes = [
        "MAP_POPULATE faults are taken inside mmap by the kernel itself: rusage counts them "
        "as minor faults, perf's page-fault event (which fires only in the fault handler) "
        "does not."
    ]
    return ctx.result(measured, claims, notes, summary=SUMMARY, figure=figure)


def _fpp(by, label):
    return by[label]["faults_per_page"]


def _first(by):
    r = _fpp(by, "first touch")
    text = "first touch of fresh memory costs about one page fault per page"
    if why := unavailable(r):
        return Claim("first-touch-fault-per-page", text, None, reason=why)
    return Claim(
        "first-touch-fault-per-page",
        text,
        0.9 <= r.best <= 1.1,
        f"{r.best:.3f} faults per page ({r.best_source})",
    )


def _second(by):
    r = _fpp(by, "second touch")
    text = "touching the same memory again costs almost no faults"
    if why := unavailable(r):
        return Claim("second-touch-free", text, None, reason=why)
    return Claim(
        "second-touch-free", text, r.best < 0.01, f"{r.best:.4f} faults per page ({r.best_source})"
    )


def _populate(by):
    mmap_minflt = by["populate: mmap"]["minflt_per_page"]
    touch = _fpp(by, "populate: touch")
    text = "MAP_POPULATE moves the faulting into mmap: touching afterwards costs almost no faults"
    if why := unavailable(touch):
        return Claim("populate-moves-cost", text, None, reason=why)
    # with THP always, populate maps huge pages: one fault may fill HUGE_PAGE / PAGE pages
    always = env.thp_mode() == "always"
    least = 0.9 * PAGE / HUGE_PAGE if always else 0.9
    holds = touch.best < 0.01 and mmap_minflt.best >= least
    return Claim(
        "populate-moves-cost",
        text,
        holds,
        f"mmap took {mmap_minflt.best:.2f} minflt per page (rusage"
        + ("; THP always: a fault may map a huge page" if always else "")
        + f"); the touch after it {touch.best:.4f} faults per page ({touch.best_source})",
    )


def _huge(by, p):
    text = (
        "transparent huge pages cut first-touch faults by two orders of magnitude (physics: one "
        "huge page takes the fault of every base page it holds, 512 on x86-64)"
    )
    mode = env.thp_mode()
    if mode not in ("always", "madvise"):
        return Claim(
            "huge-pages-cut-faults",
            text,
            None,
            reason=f"transparent huge pages are {mode or 'not supported'} on this kernel",
        )
    if "huge pages" not in by or "faults_per_page" not in by["huge pages"].metrics:
        return Claim(
            "huge-pages-cut-faults",
            text,
            None,
            reason="madvise(MADV_HUGEPAGE) failed on this kernel",
        )
    if p["size_mb"] * MIB < 2 * HUGE_PAGE:
        return Claim(
            "huge-pages-cut-faults",
            text,
            None,
            reason="size_mb is too small to hold two 2 MiB huge pages",
        )
    small, huge = _fpp(by, "first touch"), _fpp(by, "huge pages")
    if why := unavailable(small) or unavailable(huge):
        return Claim("huge-pages-cut-faults", text, None, reason=why)
    ratio = small.best / max(huge.best, 1e-9)
    # 100x: physical margin below the 512 base pages a 2 MiB page maps (a few may stay small)
    return Claim("huge-pages-cut-faults", text, ratio >= 100, f"{ratio_text(ratio)} fewer faults")


def _pool(by):
    fresh, later = _fpp(by, "fresh mmap per round"), _fpp(by, "pool: later rounds")
    text = "reusing a pool avoids the faults that a fresh mmap pays every round"
    if why := unavailable(fresh) or unavailable(later):
        return Claim("pool-avoids-faults", text, None, reason=why)
    return Claim(
        "pool-avoids-faults",
        text,
        later.best < 0.01 and fresh.best >= 0.9,
        f"fresh: {fresh.best:.3f} faults per page per round, pool after its first "
        f"round: {later.best:.4f}",
    )


def _threads(by, pages, nmax):
    text = (
        "threads touching disjoint parts each take the faults of their own pages; the total "
        "stays one per page"
    )
    worst = 0.0
    for n in range(1, nmax + 1):
        m = by[f"threads={n}"]
        share = pages // n
        for i in range(n):
            mine = share if i < n - 1 else pages - share * (n - 1)
            worst = max(worst, abs(m[f"thread{i} minflt"].value / mine - 1))
    return Claim(
        "thread-faults-add-up",
        text,
        worst <= 0.1,
        f"largest per-thread deviation from its own page count: {worst:.1%} (rusage)",
    )


def figure(result):
    from ..results.plots import bars, lines, side_by_side

    variants = [m for m in result.measurements if not m.label.startswith("threads=")]
    threads = [m for m in result.measurements if m.label.startswith("threads=")]
    labels = [m.label for m in variants]
    # linear axes: a log axis cannot draw the zero bars (second touch, populate's touch, the
    # pool's later rounds), and those zeros are the point; each bar is labelled with its value
    faults = bars("faults per page", labels, [m["faults_per_page"] for m in variants])
    time = bars("time per MiB (us)", labels, [m["us_per_mib"] for m in variants])
    for panel in (faults, time):
        _label_values(panel.traces[0])
    return side_by_side(
        "first touch: faults and time",
        faults,
        time,
        lines(
            "thread sweep: time per MiB",
            [int(m.label.split("=")[1]) for m in threads],
            {"us per MiB": [m["us_per_mib"] for m in threads]},
            "threads",
        ),
    )


def _label_values(bar):
    """Each bar's text: its value and source, so a zero is read as a zero, not a missing bar."""
    bar.text = [f"{y:.3g} ({s})" if y is not None else s for y, s in zip(bar.y, bar.customdata)]
    bar.cliponaxis = False  # the tallest bar's label sits above the plot area: keep it whole
