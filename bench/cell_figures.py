"""`python -m bench`'s %%c figures (issue 34): `pagelab sim c` of bench/transpose.c against
cachegrind running the very build that %%c measures, at N = 1000 and N = 3000, with callgrind's
count of what each simulated access costs (hooks, bookkeeping, simulator), and the ceiling of
any build instrumented by the compiler.

Each function takes the running bench (``bench._Bench``) and returns figures by key.
"""

import json
import re
import statistics
import subprocess
import sys

from .figures import ROOT, _child_cpu, _pairs, _unavailable
from .sim_figures import D1, LLC_8M, _cachegrind, _cachegrind_counts, _speedup

# what both tools model: D1 and LL, no TLB, no classes (pagelab sim c's options, and the same
# as make_config's settings for the in-process run that callgrind counts)
OPTIONS = [f"--l1={':'.join(map(str, D1))}", "--l2=none", "--llc=8M:16:64"]
OPTIONS += ["--tlb=none", "--stlb=none", "--no-classify"]
SETTINGS = {"l1": ":".join(map(str, D1)), "l2": None, "llc": "8M:16:64", "tlb": None}
SETTINGS |= {"stlb": None, "classify": False}
PROGRAM = ROOT / "bench" / "transpose.c"
HOST = ROOT / "bench" / "cell_host.c"
# the sizes compared, each with its goal: at N = 3000 (45 million accesses) start-up is a small
# part of either tool's time
SIZES = {1000: ("sim.cell_vs_cachegrind.speedup", 1.5), 3000: ("sim.cell_vs_cachegrind.n3000", 2)}
# One simulated run in this process (no worker), for callgrind: main() is counted, from its
# first access to its last (--toggle-collect=pl_cell_main), the simulation of the buffer's
# records at the end of main() included.
IN_PROCESS = (
    "import json, sys\n"
    "from pagelab.cell.execute import execute\n"
    "from pagelab.sim.config import make_config\n"
    "execute(sys.argv[1], None, make_config(json.loads(sys.argv[2])).to_dict(), sys.argv[3])\n"
)


def _source(n):
    """bench/transpose.c at N = n (its default is 1000)."""
    text = PROGRAM.read_text()
    return text if n == 1000 else f"#define N {n}\n{text}"


def _functions(path):
    """The names of the functions a C file defines."""
    # a name, its parameters (with at most one level of parentheses inside), and a body
    return set(re.findall(r"\b(\w+)\((?:[^;{()]|\([^()]*\))*\)\s*\{", path.read_text()))


def breakdown(b, sim_so, name, accesses):
    """Instructions per simulated access of the cell's main(), callgrind's count, split by
    where they run: the program and the hooks (the cell's object), the cell's bookkeeping
    (csrc/cell/cell.c: the records, the call sites, their counts, the charging of misses; the
    simulator's inline fast path, inlined there, with them) and the simulator (csrc/sim)."""
    out = b.tmp / f"callgrind-{name}.out"
    cmd = ["valgrind", "--tool=callgrind", "--toggle-collect=pl_cell_main"]
    cmd += [f"--callgrind-out-file={out}", sys.executable, "-c", IN_PROCESS]
    # a session of its own: the run kills what is left in its process group, as a worker does
    cmd += [sim_so, json.dumps(SETTINGS), name]
    subprocess.run(cmd, check=True, capture_output=True, start_new_session=True)
    annotate = ["callgrind_annotate", "--inclusive=no", "--threshold=100", "--auto=no", str(out)]
    text = subprocess.run(annotate, capture_output=True, text=True, check=True).stdout
    cell = _functions(ROOT / "csrc" / "cell" / "cell.c")
    parts = dict.fromkeys(("program", "hooks", "bookkeeping", "simulator", "other"), 0)
    # "count (percent)  file:function [object]"; a file's part of a function that inlined it
    # (where the extension was built with -g) comes without the object
    for m in re.finditer(r"^\s*([\d,]+) \(.*?(?:\S*:)?(\w+)(?: \[(\S+)\])?$", text, re.M):
        count, function, obj = int(m[1].replace(",", "")), m[2], m[3] or ""
        if function == "TOTALS":
            continue
        if function == "pl_cell_main":
            part = "program"
        elif obj == sim_so:
            part = "hooks"
        elif function in cell:
            part = "bookkeeping"
        elif "_native" in obj or not obj:
            part = "simulator"
        else:
            part = "other"  # the C library's, where the hooks' wrappers call it
        parts[part] += count
    return {f"instructions_{k}": v / accesses for k, v in parts.items()}


def cell_vs_cachegrind(b):
    """bench/transpose.c simulated access by access (`pagelab sim c`, the compiler's
    instrumentation) against cachegrind running the measured build of the same cell (the very
    shared object %%c times, called by bench/cell_host.c): CPU time of each whole command, in
    turn, through the same D1 and LL and nothing else (no TLB, no classes), at N = 1000 and
    N = 3000; callgrind's count of each simulated access, by part, at N = 1000; and the
    command's start-up (startup_s: the same command on an empty main())."""
    host = b.tmp / "cell_host"
    subprocess.run(["cc", "-O2", "-o", str(host), str(HOST), "-ldl"], check=True)
    out = {key: _at_size(b, host, n, key, goal) for n, (key, goal) in SIZES.items()}
    small, large = (out[key] for key, _ in SIZES.values())
    if small["value"] is not None:
        small["startup_s"] = _startup(b)
    if small["value"] is not None and large["value"] is not None:
        # what one more access costs each tool, start-up and the program's set-up left out
        more = large["sim_accesses"] - small["sim_accesses"]
        for tool in ("sim", "cachegrind"):
            large[f"{tool}_ns_per_access"] = (large[f"{tool}_s"] - small[f"{tool}_s"]) / more * 1e9
    return out


def _startup(b):
    """CPU seconds of `pagelab sim c` on a program that makes no access (its build cached): the
    two interpreters, their imports, the worker's run and the report."""
    src = b.tmp / "empty.c"
    src.write_text("int main(void) { return 0; }\n")
    cmd = [*b.pagelab, "sim", "c", str(src), *OPTIONS]
    subprocess.run(cmd, check=True, capture_output=True)  # built and cached
    times = [_child_cpu(cmd) for _ in range(max(5, b.n))]
    b.keep("pagelab sim c of an empty main(), same D1 and LL (CPU s)", times)
    return statistics.median(times)


def _at_size(b, host, n, key, goal):
    """The figure of cell_vs_cachegrind at N = n."""
    from pagelab.cell.build import cached_build

    meaning = (
        f"CPU time of cachegrind (D1 {':'.join(map(str, D1))}, LL 8M:16:64) running the "
        f"measured build of bench/transpose.c at N = {n} (the shared object %%c times, "
        "through bench/cell_host.c) over the CPU time of `pagelab sim c` simulating its "
        "every load and store through the same D1 and LL (no TLB, no classification; the "
        "build cached): both whole commands, measured in turn"
    )
    if not PROGRAM.exists():
        return _unavailable("x", meaning, "bench/transpose.c: a source checkout only")
    name = f"transpose{n}.c"
    src = b.tmp / name
    src.write_text(_source(n))
    ours = [*b.pagelab, "sim", "c", str(src), *OPTIONS]
    b.log(f"bench/transpose.c at N = {n} simulated by instrumentation against cachegrind")
    # built (and cached) by the command itself; the same cache entry holds the measured build
    doc = json.loads(subprocess.run([*ours, "--json"], check=True, capture_output=True).stdout)
    builds = cached_build(src.read_text(), "every", False, name)
    cg_out = b.tmp / f"cachegrind-{name}.out"
    cg = _cachegrind([str(host), builds["measured"]], cg_out, LLC_8M)
    a, s = _pairs(lambda: _child_cpu(cg), lambda: _child_cpu(ours), max(3, b.n // 2))
    b.keep(f"cachegrind, bench/transpose.c N={n}, the measured build (CPU s)", a)
    b.keep(f"pagelab sim c bench/transpose.c N={n}, same D1 and LL (CPU s)", s)
    counts = _cachegrind_counts(cg_out)
    metrics = doc["measurements"][0]["metrics"]
    accesses = metrics["L1-dcache-loads"]["value"] + metrics["L1-dcache-stores"]["value"]
    parts = breakdown(b, builds["sim"], name, accesses) if n == 1000 else {}
    return _speedup(
        key,
        a,
        s,
        meaning,
        goal=goal,
        sim_accesses=accesses,
        cachegrind_accesses=counts["Dr"] + counts["Dw"],
        sim_s=statistics.median(s),
        cachegrind_s=statistics.median(a),
        **parts,
    )


def cell_ceiling(b):
    """The most any build instrumented by the compiler could gain on cachegrind: bench/transpose.c
    at N = 3000 (start-up a small part of either), built with -fsanitize=thread and linked with
    hooks that do nothing (bench/hooks_only.c), against cachegrind running it built -O2: what
    the calls alone cost, with nothing recorded, simulated or started; and cachegrind's run
    without its cache simulation (--cache-sim=no), so what simulating costs cachegrind shows."""
    key = "sim.cell_vs_cachegrind.ceiling"
    meaning = (
        f"CPU time of cachegrind (D1 {':'.join(map(str, D1))}, LL 8M:16:64) running "
        "bench/transpose.c at N = 3000 "
        "(45 million data accesses) built -O2 over the CPU time of the same program built -O2 "
        "with the compiler's instrumentation (-fsanitize=thread) and hooks that do nothing "
        "(bench/hooks_only.c): the most instrumentation could gain with a simulator that cost "
        "nothing and no start-up; both whole commands, measured in turn"
    )
    hooks = ROOT / "bench" / "hooks_only.c"
    if not (PROGRAM.exists() and hooks.exists()):
        return {key: _unavailable("x", meaning, "bench/: a source checkout only")}
    native, instrumented = b.tmp / "transpose-3000", b.tmp / "transpose-3000-hooks"
    obj = b.tmp / "transpose-3000.o"
    cc = ["cc", "-std=gnu11", "-O2", "-DN=3000"]
    for cmd in (
        [*cc, "-o", str(native), str(PROGRAM)],
        [*cc, "-fsanitize=thread", "-c", "-o", str(obj), str(PROGRAM)],
        [*cc, "-o", str(instrumented), str(obj), str(hooks)],  # not libtsan: these hooks
    ):
        subprocess.run(cmd, check=True)
    cg = _cachegrind([str(native)], "/dev/null", LLC_8M)
    b.log("the compiler's instrumentation alone against cachegrind")
    a, s = _pairs(lambda: _child_cpu(cg), lambda: _child_cpu([str(instrumented)]), max(3, b.n // 2))
    plain = [_child_cpu([str(native)]) for _ in range(max(3, b.n // 2))]
    # the same cachegrind run without its cache simulation: the rest is what simulating costs it
    unsimulated = _cachegrind(["--cache-sim=no", str(native)], "/dev/null", LLC_8M)
    bare = [_child_cpu(unsimulated) for _ in range(max(3, b.n // 2))]
    b.keep("cachegrind, bench/transpose.c N=3000 -O2 (CPU s)", a)
    b.keep("bench/transpose.c N=3000, instrumented, hooks that do nothing (CPU s)", s)
    return {
        key: _speedup(
            key,
            a,
            s,
            meaning,
            instrumented_s=statistics.median(s),
            uninstrumented_s=statistics.median(plain),
            cachegrind_s=statistics.median(a),
            cachegrind_unsimulated_s=statistics.median(bare),
        )
    }
