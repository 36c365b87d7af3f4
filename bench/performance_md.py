"""Write docs/performance.md from `python -m bench --json`.

    python -m bench --json -o bench/results/pyperf.json > bench/results/bench.json
    .venv/bin/python bench/performance_md.py bench/results/bench.json > docs/performance.md

The figures, their meaning and the command that reproduces each come from the JSON; what limits a
figure that misses its goal is the profile's finding, kept below by key (WHY_MISSED).
"""

import json
import sys

# What limits each missed goal: callgrind's instruction counts (sim.path.*, the same on any host;
# there is no PMU here) and `perf record -e cpu-clock` (software clock).
WHY_MISSED = {
    "sim.accesses_per_s.seq8": (
        "7 of 8 accesses take the inline fast path (18 instructions a time, the loop's "
        "included); the 8th is a new line, 289 instructions with miss classification on and 173 "
        "with it off, so the stream averages 52 instructions an access on, 37 off "
        "(`sim.path.seq8`; 64 and 44 before this work). With classification off the same stream "
        "runs over the goal (no_classify). With it on, a new line costs the quick path's lookup "
        "that finds no match (about 70 instructions with the call), the fill (about 105: the "
        "victim from the set's order word, tag, fingerprint, order, dirty flag, counts, and "
        "once in 64 the DTLB's new page) and the classification (116: the call and its frame "
        "about 30, the shadow about 35 (the new stamp's ring bit, the evicted tail's, the next "
        "tail), the exiles' check, and the first-touch bitmap about 25). 3e8/s needs about 46 "
        "instructions an access here, a new line in about 245: the classification would have "
        "to lose its call and frame and most of the first-touch test."
    ),
    "sim.accesses_per_s.new_line": (
        "Every access runs the miss path: 289 instructions with classification (`sim.path."
        "new_line`), 173 without, against 385 and 227 before this work (the hashed LRU list and "
        "the generic set lookup are gone: the shadow is now a stamp per slot and a ring of "
        "bits, and `pl_sim_access_slow`'s quick path looks the L1D up inline and fills it "
        "through one LRU helper). With classification off it is at the goal (no_classify). "
        "1e8/s needs about 120 instructions an access on this host with classification on: "
        "the lookup, fill and counts alone take about 180, so the goal needs a different "
        "division of work (a miss path without the general level code, the shadow's bits "
        "beside the set's order word), not tuning."
    ),
    "sim.vs_cachegrind.speedup": (
        "The cache workload makes 15 of every 16 accesses an L1 hit on another line than the "
        "last (512-line working sets, 16 passes): a hit costs 175 instructions per access "
        "through `pl_sim_access` with classification, 127 without (`sim.path.l1_hit`; 235 "
        "and 190 before), and 141 and 91 in a run (`PL_LOAD_RUN`, which the workload's reads "
        "now are: the checks, counts and fast-path state stay in registers). Of a classified "
        "hit in a run, about 45 instructions are the shadow (the stamp moved, two ring bits, "
        "the next tail), 35 the set lookup and LRU order word, 10 the SSE2 fingerprint "
        "compare, the rest the loop, checks and counts. The simulated run went from 1.12 s to "
        "0.85 s (the workload's 67 million accesses at about 12.6 ns each), while cachegrind "
        "takes 18.4 ns for each of its 93 million data accesses (the old loop reloaded its "
        "plan around every volatile store, which cachegrind counted as 143 million). 10x "
        "would need about 2 ns an access, the native access included: a few instructions, "
        "not an exact per-access model of tags, LRU order and an LRU shadow."
    ),
    "sim.cell_vs_cachegrind.speedup": (
        "Start-up alone misses 1.5x. `pagelab sim c` of an empty `main()` (startup_s, the "
        "same run) took 0.20 s of CPU, where 1.5x allows the whole command 0.20 s; an hour "
        "earlier, on a quieter host, 0.15 s against 0.19. The instructions are the same from "
        "run to run (callgrind: about 290 million in the command's interpreter, 316 million "
        "in its worker's, nearly all interpreter start and imports; under cProfile the "
        "worker's 22 dataclasses are a quarter of its imports, regular expressions a tenth); the "
        "seconds are this host's load. The compiler no longer starts on every cell: the "
        "cache remembers `cc --version` per compiler file, which saves clang's 21 ms. "
        "Cachegrind's whole run of the measured build is 70% valgrind without any "
        "simulation (`valgrind --tool=none` of the same run). The simulated `main()` runs "
        "182 instructions an access (callgrind, the figure's instructions_*; 267 before issue "
        "34's work): 6 in the program, 15 in the hooks, which store each access as a 16-byte "
        "record that pagelab simulates 4096 at a time, 53 in the cell's bookkeeping (each "
        "record's call site and its counts; a miss is charged from the simulator's outcome, "
        "which levels missed, with no counts read where there is no TLB and no "
        "classification; 77 before) and 108 in the simulator (170 before; an L1 miss looks "
        "a dense LRU LLC up without the general level code). The naive transpose alternates "
        "a read of `a` with a write of `b`, so the inline fast path (the previous access's "
        "line) never applies; the reads take the lean path, a hit on the most recently used "
        "way of the set checked with one tag compare and no call, while its writes all miss. "
        "Five runs of this figure within minutes gave 1.16, 1.17, 1.21, 1.25 and 1.25."
    ),
    "sim.cell_vs_cachegrind.n3000": (
        "Out of reach for any simulator behind the compiler's instrumentation. 2x allows the "
        "whole command half of cachegrind's 0.74 s, 0.37 s, while start-up (0.20 s, "
        "startup_s) and the build with hooks that do nothing (0.24 s, "
        "`sim.cell_vs_cachegrind.ceiling`'s instrumented_s) already take 0.44 s: a simulator "
        "that cost nothing would still miss. In the other runs below the same sums left at "
        "most about 3 ns an access for recording and simulating, where cachegrind's own "
        "simulation costs 6.8 to 8.3 ns an access (the ceiling figure's cachegrind_s less "
        "cachegrind_unsimulated_s, `--cache-sim=no`, over 40.5 million accesses) and one "
        "more access costs pagelab 16 to 18.5 ns (sim_ns_per_access: the difference of the "
        "two sizes' times over that of their accesses; 29 before the set blocks below) and "
        "cachegrind 9 to 16 (cachegrind_ns_per_access). At N = 3000 the matrices are 72 MB "
        "each, so a third of the accesses miss the model's L1 and look up its 8 MiB LLC, "
        "whose metadata (1.5 MB) misses the host's own caches. A dense level keeps each "
        "set's order word, fill, fingerprints, dirty flags and tags in one block (192 bytes "
        "for 16 ways), so that a lookup reads two host lines, as cachegrind's LL does; a "
        "miss reads the replaced tag only to classify it. A prefetch of the LLC's set block "
        "16 records ahead, or while the L1 fills, and a smaller record buffer (16 KiB, "
        "within the host's L1) changed nothing measurable here and were left out. Five runs "
        "of this figure within minutes gave 0.77, 0.83, 0.84, 0.89 and 1.07 (0.67 before the "
        "set blocks)."
    ),
    "sim.vs_csimref.by_size": (
        "csim-ref starts in about 1 ms; `pagelab sim trace` in about 45 ms of CPU (the "
        "interpreter about 15 ms, argparse and the CLI's parser about 15, the C core and "
        "cache-lab mode's own modules the rest: cache-lab mode no longer loads dataclasses, "
        "the configuration layer or json, which took it from about 90 ms). Per line pagelab is "
        "about 4 times faster (13 ns against 47), so it is 2x faster only from about 4 "
        "million lines (the whole matrix trace, 5.7 million, is over the goal: "
        "`sim.vs_csimref.speedup`), and on a cache lab's own traces (a few hundred to a few "
        "hundred thousand lines) the interpreter's start alone is over twice csim-ref's whole "
        "run: no Python command can meet this goal there."
    ),
    "run_all_s": (
        "The experiments' own measurements take the time, not the workers: each worker costs "
        "about 0.05 s of CPU to start (21 of them, about 1 s), while the simulated builds of "
        "cache and latency take about 5 s of CPU (the model: `fetch`, the L2's and LLC's "
        "lookups and the DTLB's misses lead `perf record -e cpu-clock`), latency's native "
        "sweep about 2.3 s "
        "(its timed chases and the warm-up lap of each of 57 sizes, 93% of its samples), ebizzy "
        "about 2 s and mountain about 1 s, and competition waits 1 s by design. The simulated "
        "builds now run first, side by side (a model's counts do not depend on what else runs, "
        "and no native run is beside them), and workers import the simulator only when they "
        "simulate. Its CPU time (cpu_s, workers included) is what an idle 2-vCPU machine "
        "would take, less the simulated builds' overlap, plus competition's wait; on a shared "
        "machine (see the load average above, and `worker_start_s` against its 0.04 s on a "
        "quiet one) other work's share of the CPUs comes on top, and cache and memory "
        "contention stretch even the CPU time. Cutting further means measuring less (fewer "
        "sizes, repetitions or modes), which the goal rules out."
    ),
}

CSIM_REF = """\
## csim-ref

csim-ref is the cache lab's reference binary (CS:APP's cachelab-handout); it is not on PyPI or
in Debian, so the bench runs it only where `$PAGELAB_CSIM_REF` names it (or `csim-ref` is on
PATH), and otherwise says so. `sim.vs_csimref.speedup` times both whole commands, start-up
included, on the matrix trace; `sim.vs_csimref.by_size` is the smallest ratio over its first
1,000, 100,000 and 1,000,000 lines and the whole, each size's ratio beside it, and both tools'
answers are checked to agree at every size. By hand:

```sh
valgrind --tool=lackey --trace-mem=yes --log-file=matrix.trace ./matrix   # any program
for i in 1 2 3 4 5; do
  /usr/bin/time -f 'csim-ref %U+%S s' ./csim-ref -s 6 -E 8 -b 6 -t matrix.trace
  /usr/bin/time -f 'pagelab  %U+%S s' pagelab sim trace matrix.trace -s 6 -E 8 -b 6
done
```

Both print the same `hits:H misses:M evictions:E` line (csim-ref's -v lines end in a blank;
pagelab's do not).
"""

PATHS = """\
bench/sim_paths.c feeds the simulator one stream per path, 8-byte loads through `pl_sim_access`
(the -DPL_SIM workloads' hook), after one untimed round: an L1D of 32 KiB, 8 ways, 64-byte lines
and a 64-entry 4-way DTLB (`l2_hit` adds a 512 KiB 8-way L2), the named defaults of pl_sim.h, so
the counts are the same on every host. Instructions are callgrind's count of the whole loop,
the loop's own three or four included; the times are CPU time on this machine. `same_line` is
the inline fast path; `seq8` is 7 such accesses and a new line in 8; `l1_hit` another line that
hits (pl_sim_access_slow's quick path, with no call); `l2_hit` an L1 miss that L2 serves;
`new_line` a line never seen (a compulsory miss; a new page in 64); `tlb_miss` a DTLB miss and an
L1 hit. With classification on, a hit also moves its line's stamp in the shadow, and a miss looks
for it among the exiles and in the first-touch set. Before issue 22's work (a hashed LRU list as
the shadow, the generic set lookup on every path) the same harness counted, on and off:
same_line 18 and 18, seq8 64 and 44, l1_hit 235 and 190, l2_hit 613 and 394, new_line 385 and
227, tlb_miss 383 and 338."""

FIDELITY = """\
## What the fidelity ratios mean

`fidelity.ratio.cache` and `fidelity.ratio.first_touch` run a workload's C twice, in turn, each
time in a fresh process: through cffi in a pagelab worker (the path every experiment takes), and
as a standalone program that the bench compiles from the same csrc/ files, with the extension's
flags, and a small `main()`. The figure is the median of the pair-by-pair ratios of the CPU time
(user + system, getrusage) of the workload's own timed regions, worker over standalone; `wall`
is the same ratio for their clock time, which a shared machine's preemptions inflate. 1 means
the lab's path (the Python interpreter around the workload, the worker's environment and
address-space limit, the extension's build) adds nothing to what the workload measures.
`spread` is the interquartile range of the pair ratios; a ratio within its spread of 1 says
there is no difference this machine can resolve.

`fidelity.same_code.*` counts the workload's functions (those its csrc/workloads file defines)
whose instructions differ between the extension and the standalone build (objdump, addresses
left out). Python compiles every extension with its own flags first, `-fwrapv` among them; that
made the cache workload's `cache_measure` other machine code in the extension than in the
standalone build, so the two sides no longer ran the same loop. The extension now adds
`-fno-wrapv` (pylib/pagelab/_ffi_build.py), and this figure turns non-zero if the two builds
part again. The cache workload's old loop also reloaded its plan's fields around every volatile
store with a working set that fills the L1D exactly, which made its speed depend on where a
process placed its stack and code: the main branch's bench measured it 11-14% slower in a
worker than standalone, and the same machine code, rebuilt, ran 17% faster in a worker here.
Its reads are now runs (`PL_LOAD_RUN` and plain loads), which the simulator sees access by
access as before, and both sides measure the same.
"""

AGREEMENT = """\
## Agreement with cachegrind

The L1 misses of a lackey trace replayed through pagelab match cachegrind's D1 misses
(D1mr + D1mw) on the same program and geometry (`sim.vs_cachegrind.miss_agreement` above; the
tests check 32 KiB 8-way, 4 KiB 2-way, 8 KiB direct-mapped and 64 KiB 4-way to within 1%, see
`tests/sim/test_sim_cachegrind.py` and [simulator.md](simulator.md)).
"""


# The keys every figure has (reference: what it was compared with, measured in the same run);
# any other key is a detail shown beside its meaning.
STANDARD = {
    "value",
    "unit",
    "source",
    "meaning",
    "command",
    "goal",
    "better",
    "met",
    "reason",
    "reference",
}


def _number(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _value(f):
    return "unavailable" if f["value"] is None else f"{f['value']:.3g} {f['unit']}"


def _goal(f):
    if f.get("goal") is None:
        return ""
    verdict = {None: "", True: " met", False: " **missed**"}[f["met"]]
    return f"{'>=' if f['better'] == 'higher' else '<='} {f['goal']:g}{verdict}"


def _paths(figures):
    """The per-path table: instructions (callgrind) and CPU time per simulated access."""
    rows = {k.removeprefix("sim.path."): f for k, f in figures.items() if k.startswith("sim.path.")}
    if not rows or all(f["value"] is None for f in rows.values()):
        return []
    out = [
        "## The cost of one simulated access, path by path",
        "",
        PATHS,
        "",
        "| path | instructions, classification on | off | ns, on | off |",
        "|---|---|---|---|---|",
    ]
    for name, f in rows.items():
        if f["value"] is not None:
            cells = (f["value"], f["no_classify"], f["ns"], f["ns_no_classify"])
            out.append(f"| `{name}` | " + " | ".join(f"{v:.1f}" for v in cells) + " |")
    return [*out, ""]


def markdown(doc):
    m = doc["machine"]
    lines = [
        "# Performance",
        "",
        "Generated by `bench/performance_md.py` from `python -m bench --json` (do not edit by "
        "hand). Every ratio was measured side by side in one run (A B A B ..., the median of "
        "the pair-by-pair ratios), so it holds on a machine shared with other work; absolute "
        "figures are medians of repeated runs. Clocks: " + doc["clocks"] + ".",
        "",
        f"Machine: {m['cpus']} vCPU {m['cpu']}, Linux {m['kernel']}, profile {m['profile']}, "
        f"Python {m['python']}, pagelab {m['pagelab']}; measured {m['date']}"
        + (" with `--fast` (fewer repetitions)" if doc["fast"] else "")
        + f"; the whole bench took {doc['elapsed_s']:.0f} s"
        + (
            " with a 1-minute load average of {:.1f} at its start and {:.1f} at its end (other "
            "work on the machine: wall-clock figures carry its share of the CPUs).".format(
                *m["load_1min"]
            )
            if m.get("load_1min")
            else "."
        ),
        "",
        "Reproduce everything: `python -m bench --json -o pyperf.json` (add `--fast` for a quick "
        "look). `python -m pyperf compare_to old.json new.json` compares two runs' raw timings.",
        "",
        "| figure | value | goal | reference, same run | what it means | reproduce |",
        "|---|---|---|---|---|---|",
    ]
    for key, f in doc["figures"].items():
        meaning = f["meaning"] or ""
        extra = {k: v for k, v in f.items() if k not in STANDARD}
        if extra:
            meaning += " (" + ", ".join(f"{k} {_number(v)}" for k, v in extra.items()) + ")"
        if f["value"] is None:
            meaning = (meaning + " " if meaning else "") + f"(unavailable: {f['reason']})"
        reference = f.get("reference") or ""
        row = f"| `{key}` | {_value(f)} | {_goal(f)} | {reference} | {meaning} | `{f['command']}` |"
        lines.append(row.replace("\n", " "))
    missed = [k for k, f in doc["figures"].items() if f.get("met") is False]
    lines += ["", "## Targets missed, and what limits them", ""]
    if not missed:
        lines.append("None.")
    for key in missed:
        why = WHY_MISSED.get(key) or "not analysed yet."
        f = doc["figures"][key]
        lines.append(f"- `{key}`: {_value(f)}, goal {_goal(f)}. {why}")
    lines += ["", *_paths(doc["figures"]), FIDELITY, CSIM_REF, AGREEMENT]
    return "\n".join(lines).rstrip() + "\n"


def main(argv):
    with open(argv[1]) if len(argv) > 1 else sys.stdin as src:
        doc = json.load(src)
    sys.stdout.write(markdown(doc))


if __name__ == "__main__":
    main(sys.argv)
