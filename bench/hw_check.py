"""The real-PMU check (`make hw-check`): pagelab's counters against perf stat, `run cache` in
hardware against the simulator, and rdpmc against read(2), on whatever machine runs it, written
up as one Markdown report (docs/hardware.md keeps them, one per machine).

Run: `make hw-check [HW_REPORT=FILE]`, or with any Python that has cffi, from the checkout:
`python bench/hw_check.py [--report FILE] [--fast]`. It imports this checkout's pagelab
(pylib/, the extension built in place) and runs its CLI as `python -m pagelab`, so a venv copied
into the checkout on another machine works without installing anything. On a machine without a
hardware PMU it says so and names every check it skipped. Exit status 1 when a comparison is
outside its tolerance, else 0.
"""

import argparse
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "pylib"))  # this checkout's pagelab, wherever the checkout is

STAT_EVENTS = ("cycles", "instructions", "cache-misses", "page-faults")
# pagelab stat and perf stat agree within max(REL * the larger count, ABS): instructions and
# page faults are the program's own (the two differ only by the start-up path around exec);
# cycles follow the clock frequency and cache misses the other processes, run to run.
TOLERANCE = {
    "cycles": (0.15, 0),
    "instructions": (0.02, 0),
    "cache-misses": (0.30, 2_000),
    "page-faults": (0.02, 20),
}
RDPMC_EVENTS = "cycles,instructions"
READS = 10_000  # reads timed in C per path, for the cost of one
SECTIONS = (
    "## Machine",
    "## Doctor",
    "## pagelab stat against perf stat",
    "## run cache: hardware against the simulator",
    "## rdpmc against read()",
    "## Skipped",
)


class Report:
    """The report's sections, in SECTIONS' order, and what was skipped or disagreed."""

    def __init__(self):
        self.body = {s: [] for s in SECTIONS}
        self.skipped = []
        self.failed = []

    def add(self, section, *lines):
        self.body[section].extend(lines)

    def skip(self, section, why):
        self.skipped.append(f"{section[3:]}: {why}")
        self.add(section, f"Skipped: {why}.")

    def text(self, title):
        out = [f"# {title}", ""]
        for s in SECTIONS:
            lines = self.body[s]
            if s == "## Skipped":
                lines = [f"- {w}" for w in self.skipped] or ["Nothing was skipped."]
            out += [s, "", *lines, ""]
        verdict = "FAILED: " + "; ".join(self.failed) if self.failed else "no disagreement"
        out += ["## Verdict", "", verdict + ".", ""]
        return "\n".join(out)


def pagelab(*args, check=True):
    """`python -m pagelab ARGS` with this checkout's package: the parsed JSON document."""
    path = [str(ROOT / "pylib"), os.environ.get("PYTHONPATH", "")]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, path))}
    p = subprocess.run(
        [sys.executable, "-m", "pagelab", *args], capture_output=True, text=True, env=env
    )
    if check and p.returncode != 0:
        raise SystemExit(f"hw-check: pagelab {' '.join(args)} failed:\n{p.stderr}")
    return json.loads(p.stdout)


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return lines + ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]


def number(v):
    return "n/a" if v is None else f"{v:,}" if isinstance(v, int) else f"{v:,.4g}"


def machine(report, doc):
    env = doc["environment"]
    core = [p for p in doc["pmus"] if p["name"] in env["core_pmus"]]
    report.add(
        "## Machine",
        f"- CPU: {env['cpu']} ({env['cpus']} CPUs, {platform.machine()}"
        f"{', under a hypervisor' if env['hypervisor'] else ''})",
        f"- kernel: {env['kernel']}",
        f"- perf_event_paranoid: {env['perf_event_paranoid']}; NMI watchdog: "
        f"{env['nmi_watchdog']}; uid {env['uid']}"
        f"{', CAP_PERFMON' if env['cap_perfmon'] else ''}",
        f"- caches: {env['caches']}",
        f"- perf: {_perf_version() or 'not installed'}",
        f"- pagelab {env['pagelab']}, Python {env['python']}",
        "",
    )
    if not core:
        report.add(
            "## Machine",
            "**No hardware PMU was found**: no core PMU under "
            "/sys/bus/event_source/devices (a VM without a virtual PMU, or a container "
            "that hides it). The hardware checks below are skipped.",
        )
    else:
        rows = [
            (
                p["name"],
                p["type"],
                "all" if p["cpus"] is None else _cpu_list(p["cpus"]),
                _rdpmc_file(p["name"]) or "-",
                ", ".join(f"{k}={v}" for k, v in p["caps"].items()) or "-",
            )
            for p in core
        ]
        report.add("## Machine", *table(["core PMU", "type", "CPUs", "rdpmc file", "caps"], rows))
    others = sorted(p["name"] for p in doc["pmus"] if p["name"] not in env["core_pmus"])
    report.add("## Machine", "", f"Other PMUs: {', '.join(others) or 'none'}.")
    return bool(core)


def _cpu_list(cpus):
    return f"{cpus[0]}-{cpus[-1]}" if cpus == list(range(cpus[0], cpus[-1] + 1)) else cpus


def _rdpmc_file(pmu):
    """/sys/bus/event_source/devices/PMU/rdpmc: 0 off, 1 for tasks with an event open (the
    default), 2 always (arch/x86/events/core.c; arm64 has none, a sysctl instead)."""
    try:
        return Path(f"/sys/bus/event_source/devices/{pmu}/rdpmc").read_text().strip()
    except OSError:
        return None


def _perf_version():
    if shutil.which("perf") is None:
        return None
    p = subprocess.run(["perf", "version"], capture_output=True, text=True)
    return p.stdout.strip() or None


def doctor(report, doc):
    report.add("## Doctor", f"Profile **{doc['profile']}**: {doc['profile_meaning']}.", "")
    rows = []
    for e in doc["events"]:
        if e["available"]:
            state = "counts" + (" (user space only)" if e.get("kernel_excluded") else "")
        else:
            state = f"{e.get('errno', '?')}: {e.get('reason', '')}"
        parts = ", ".join(f"{k} {v}" for k, v in (e.get("parts") or {}).items()) or "-"
        rows.append((e["name"], e["source"], state, parts))
    report.add("## Doctor", *table(["event", "source", "here", "per core PMU"], rows))


def build_loop(tmp):
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None:
        return None
    exe = Path(tmp) / "hw-loop"
    subprocess.run([cc, "-O2", "-o", str(exe), str(ROOT / "bench" / "hw_loop.c")], check=True)
    return exe


def perf_stat(cmd):
    """perf stat -x, of cmd: parse_perf_stat of what it printed."""
    p = subprocess.run(
        ["perf", "stat", "-x,", "-e", ",".join(STAT_EVENTS), "--", *cmd],
        capture_output=True,
        text=True,
    )
    return parse_perf_stat(p.stderr)


# An event column of `perf stat -x,`: "cycles", "cycles:u", or one line per core PMU on a hybrid
# machine, "cpu_core/cycles/" and "cpu_atom/cycles/u" (perf opens one event per core PMU).
PERF_EVENT = re.compile(r"(?:(?P<pmu>[\w.-]+)/)?(?P<event>[\w-]+)/?(?::?\w*)")


def parse_perf_stat(text):
    """{event: (total, {pmu: count} or None)} of STAT_EVENTS; total None when no part counted
    ("<not supported>", "<not counted>")."""
    out = {}
    for line in text.splitlines():
        fields = line.split(",")
        m = PERF_EVENT.fullmatch(fields[2]) if len(fields) > 2 else None
        if not m or m["event"] not in STAT_EVENTS:
            continue
        total, parts = out.get(m["event"], (None, None))
        count = int(fields[0]) if fields[0].isdigit() else None
        if count is not None:
            total = (total or 0) + count
        if m["pmu"]:
            parts = {**(parts or {}), m["pmu"]: count}
        out[m["event"]] = (total, parts)
    return out


def stat_check(report, tmp, runs, has_pmu):
    section = "## pagelab stat against perf stat"
    exe = build_loop(tmp)
    if exe is None:
        report.skip(section, "no C compiler (cc) to build bench/hw_loop.c")
        return
    cmd = [str(exe)]
    perf = shutil.which("perf") is not None
    ours, theirs = {e: [] for e in STAT_EVENTS}, {e: [] for e in STAT_EVENTS}
    reasons, our_parts, their_parts = {}, {}, {}
    for _ in range(runs):  # in turn, so both see the same machine state
        doc = pagelab("stat", "--json", "-e", ",".join(STAT_EVENTS), "--", *cmd)
        for e in STAT_EVENTS:
            m = doc["measurements"][0]["metrics"][e]
            ours[e].append(m["value"])
            reasons[e] = m.get("reason") or m["source"] + (" scaled" if m.get("scaled") else "")
            our_parts[e] = m.get("parts")
        if perf:
            for e, (v, parts) in perf_stat(cmd).items():
                theirs[e].append(v)
                their_parts[e] = parts
    report.add(
        section,
        f"`{exe.name}` (bench/hw_loop.c, 64 MiB: touched once, read 8 times one load per line), "
        f"{runs} run(s) each in turn; the medians. Agreement: within max(rel x larger, abs).",
        "",
    )
    if not perf:
        report.skipped.append(f"{section[3:]}: perf is not installed (pagelab's side only)")
    rows = []
    for e in STAT_EVENTS:
        a, b = _median(ours[e]), _median(theirs[e])
        rel, abs_ = TOLERANCE[e]
        if a is None or b is None:
            verdict = "not compared: " + (
                "perf not installed" if not perf else reasons[e] if a is None else "perf: n/a"
            )
        else:
            ok = abs(a - b) <= max(rel * max(a, b), abs_)
            verdict = "agree" if ok else "DISAGREE"
            if not ok:
                report.failed.append(f"stat {e}: pagelab {a:,} vs perf {b:,}")
        rows.append((e, number(a), number(b), f"{rel:.0%}, {abs_:,}", verdict))
    report.add(
        section, *table(["event", "pagelab stat", "perf stat", "tolerance", "verdict"], rows)
    )
    if not has_pmu:
        report.skipped.append(
            f"{section[3:]}: hardware events (cycles, instructions, cache-misses): no hardware PMU"
        )


def _parts(parts):
    return " + ".join(f"{k} {number(v)}" for k, v in (parts or {}).items()) or "-"


def _median(values):
    values = [v for v in values if v is not None]
    return round(statistics.median(values)) if values else None


def cache_check(report, has_pmu):
    section = "## run cache: hardware against the simulator"
    if not has_pmu:
        report.skip(section, "no hardware PMU: `run cache` falls back to the simulator alone")
        return
    hw = pagelab("run", "cache", "--json")  # its defaults: the claims' thresholds assume them
    sim = pagelab("run", "cache", "--sim", "--json")
    sets = hw["params"]["sets"]
    rows = []
    for mh, ms in zip(hw["measurements"], sim["measurements"]):
        h, s = mh["metrics"], ms["metrics"]
        for name, hw_value, sim_key in (
            (
                "L1D load miss rate",
                _rate(h, "L1-dcache-load-misses", "L1-dcache-loads"),
                "l1_load_miss_rate",
            ),
            (
                "L1D store miss rate",
                _rate(h, "L1-dcache-store-misses", "L1-dcache-stores"),
                "l1_store_miss_rate",
            ),
            ("dTLB load misses per set", _per(h, "dTLB-load-misses", sets), "dtlb_misses_per_set"),
            (
                "dTLB store misses per set",
                _per(h, "dTLB-store-misses", sets),
                "dtlb_store_misses_per_set",
            ),
        ):
            sim_value = s.get(sim_key, {}).get("value")
            rows.append((mh["label"], name, number(hw_value), number(sim_value)))
    report.add(section, *table(["working sets", "figure", "hardware", "simulator"], rows), "")
    claims = {c["id"]: c["holds"] for c in sim["claims"]}
    rows = [(c["id"], c["holds"], claims.get(c["id"])) for c in hw["claims"]]
    report.add(section, *table(["claim", "holds (hardware)", "holds (simulator)"], rows))
    report.add(
        section,
        "",
        "The simulator models the caches' geometry, not their prefetchers "
        "or replacement policy: the figures are set side by side, not held to a tolerance.",
    )


def _rate(metrics, misses, accesses):
    m, a = (metrics.get(k, {}).get("value") for k in (misses, accesses))
    return m / a if m is not None and a else None


def _per(metrics, name, n):
    v = metrics.get(name, {}).get("value")
    return v / n if v is not None else None


def rdpmc_check(report, has_pmu):
    section = "## rdpmc against read()"
    if not has_pmu:
        report.skip(section, "no hardware PMU: cycles and instructions do not open")
        return
    from pagelab import CounterGroup
    from pagelab._native import lib

    with CounterGroup(RDPMC_EVENTS, rdpmc=True) as fast, CounterGroup(RDPMC_EVENTS) as slow:
        if not (fast.opened and slow.opened):
            after = slow.read() if slow.opened else None
            why = next(r.reason for r in slow.readings(None, after) if r.reason)
            report.skip(section, f"cycles and instructions do not open: {why}")
            return
        fast.enable()
        slow.enable()
        b_fast, b_slow = fast.read(), slow.read()
        sum(range(1_000_000))  # the same span for both groups, nested
        a_slow, a_fast = slow.read(), fast.read()
        cost = {"rdpmc": _read_cost(fast, lib), "read()": _read_cost(slow, lib)}
    used = a_fast.via_rdpmc
    report.add(
        section,
        f"- rdpmc used: **{'yes' if used else 'no'}** ("
        + (
            "the kernel set cap_user_rdpmc in every event's mmap page and each had a counter"
            if used
            else "cap_user_rdpmc was clear, or an event was off its counter (index 0): "
            "pagelab fell back to read()"
        )
        + "); /sys/bus/event_source/devices/*/rdpmc: "
        + ", ".join(f"{p} {v}" for p, v in _rdpmc_files().items()),
        f"- per read of {RDPMC_EVENTS} (timed in C, {READS:,} reads): rdpmc path "
        f"{cost['rdpmc']:.0f} ns, read() path {cost['read()']:.0f} ns",
        "",
    )
    rows = []
    for rf, rs in zip(fast.readings(b_fast, a_fast), slow.readings(b_slow, a_slow)):
        ok = (
            rf.value is not None
            and rs.value is not None
            and (abs(rf.value - rs.value) <= 0.05 * max(rf.value, rs.value))
        )
        if not ok:
            report.failed.append(f"rdpmc {rf.name}: {rf.value} vs read() {rs.value}")
        rows.append((rf.name, number(rf.value), number(rs.value), "agree" if ok else "DISAGREE"))
    report.add(section, *table(["event", "rdpmc group", "read() group", "within 5%"], rows))


def _read_cost(group, lib):
    """ns per read of the group, READS reads timed in C (no Python inside)."""
    ns = lib.pl_group_read_loop(group._group, READS)
    if ns < 0:
        raise OSError(-ns, os.strerror(-ns))
    return ns / READS


def _rdpmc_files():
    base = Path("/sys/bus/event_source/devices")
    found = {d.name: _rdpmc_file(d.name) for d in sorted(base.glob("*"))}
    return {k: v for k, v in found.items() if v is not None} or {"none": "-"}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--report", default="hw-report.md", help="where to write the Markdown")
    ap.add_argument("--fast", action="store_true", help="one run of each stat, not three (tests)")
    args = ap.parse_args(argv)
    report = Report()
    doc = pagelab("doctor", "--json")
    has_pmu = machine(report, doc)
    doctor(report, doc)
    with tempfile.TemporaryDirectory(prefix="pagelab-hw-") as tmp:
        stat_check(report, tmp, 1 if args.fast else 3, has_pmu)
    cache_check(report, has_pmu)
    rdpmc_check(report, has_pmu)
    env = doc["environment"]
    text = report.text(f"hw-check: {env['cpu']}, Linux {env['kernel']}")
    Path(args.report).write_text(text)
    print(text)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
