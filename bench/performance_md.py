"""Write docs/performance.md from `pagelab bench --json`.

    pagelab bench --json -o bench/results/pyperf.json > bench/results/bench.json
    .venv/bin/python bench/performance_md.py bench/results/bench.json > docs/performance.md

The figures, their meaning and the command that reproduces each come from the JSON; what limits a
figure that misses its goal is the profile's finding, kept below by key (WHY_MISSED).
"""

import json
import sys

# What `perf record -e cpu-clock` (no PMU here: software clock) showed for each missed goal.
WHY_MISSED = {
    "sim.accesses_per_s.seq8": (
        "7 of 8 accesses take the inline fast path (a compare and two increments); the 8th, a "
        "new line, runs the full model and costs as much as the other 7 together, so the "
        "new-line cost caps this figure: 3e8/s needs a new line in about 20 ns, and it takes "
        "about 30 ns with miss classification on, 16 ns with it off (the same stream then runs "
        "at about 3.2e8/s). Classification stays on by default because chapters 02 and 12, "
        "the CLI and docs report the miss classes."
    ),
    "sim.accesses_per_s.new_line": (
        "Every access runs the full model, bound by the instructions it executes (callgrind, "
        "which counts instructions without a PMU: 405 per access with classification, 231 "
        "without, down from 508 and 328 before the per-set recency word and fingerprint "
        "lookups). Of the 405, roughly: the classification shadow's miss (hash insert and the "
        "evicted tail's delete) 85, the L1 miss and fill 80, the slow path's frame 75, the set "
        "lookup 50, the array loop 23, the first-touch bitmap 20. `perf record -e cpu-clock`: "
        "`pl_sim_access_slow` 20%, `pl_cache_miss` 14%, `pl_lru_insert` 12%. 1e8/s needs "
        "about 130 instructions an access: that is a different design (no exact shadow, or "
        "one shared with the cache's own tags), not tuning."
    ),
    "sim.vs_cachegrind.speedup": (
        "The cache workload puts every access on a new line (one per 64-byte line of its "
        "working sets), so every simulated access runs the full model, not the inline fast "
        "path: about 18 ns an access against cachegrind's 15 ns per data access (see "
        "sim_ns_per_access and cachegrind_ns_per_access; cachegrind sees about twice the "
        "accesses, because the -O2 code reloads the plan's fields around each volatile access, "
        "while the model is fed only the PL_LOAD/PL_STORE of the hot loop). `perf record -e "
        "cpu-clock` of the simulated run: `pl_sim_access_slow` 71% of samples, and about a "
        "third of those on the L1 classification shadow's hash probe and LRU unlink; with "
        "classification off the run takes 0.87 s instead of 1.2 s (about 2.6x). 10x would "
        "mean under 2 ns an access, about what the native access itself costs: an exact "
        "per-access model cannot get there, only a different design (sampling, or batching "
        "accesses by set) could."
    ),
    "run_all_s": (
        "The experiments' own measurements take the time, not the workers: each worker costs "
        "about 0.05 s of CPU to start (21 of them, about 1 s), while the simulated builds of "
        "cache and latency take about 5 s of CPU (the model: `fetch`, `pl_cache_miss`, "
        "`pl_lru_access` lead `perf record -e cpu-clock`), latency's native sweep about 2.3 s "
        "(its timed chases and the warm-up lap of each of 57 sizes, 93% of its samples), ebizzy "
        "about 2 s and mountain about 1 s, and competition waits 1 s by design. The simulated "
        "builds now run first, side by side (a model's counts do not depend on what else runs, "
        "and no native run is beside them), and workers import the simulator only when they "
        "simulate. Its CPU time (cpu_s, workers included) is what an idle 2-vCPU machine "
        "would take, less the simulated builds' overlap, plus competition's wait; on a shared "
        "machine (see the load average above) other work's share of the CPUs comes on top. "
        "Cutting further means measuring less (fewer sizes, repetitions or modes), which the "
        "goal rules out."
    ),
}

CSIM_REF = """\
## Comparing with CS:APP's csim-ref by hand

csim-ref is the cache lab's reference binary; it is not on PyPI or in Debian, so the bench does
not run it, and a replayer written here would measure a guess at it rather than csim-ref. With
csim-ref from the cache lab handout, compare the same trace and geometry side by side:

```sh
valgrind --tool=lackey --trace-mem=yes --log-file=matrix.trace ./matrix   # any program
for i in 1 2 3 4 5; do
  /usr/bin/time -f 'csim-ref %U+%S s' ./csim-ref -s 6 -E 8 -b 6 -t matrix.trace
  /usr/bin/time -f 'pagelab  %U+%S s' pagelab sim trace matrix.trace -s 6 -E 8 -b 6
done
```

Both print the same `hits:H misses:M evictions:E` line; take the median of each.
"""

FIDELITY = """\
## What the fidelity ratios mean

`fidelity.ratio.cache` and `fidelity.ratio.first_touch` run a workload's C twice, in turn, each
time in a fresh process: through cffi in a pagelab worker (the path every experiment takes), and
as a standalone program that the bench compiles -O2 from the same csrc/ files with a small
`main()`. The figure is the median of the pair-by-pair ratios of the workload's own timed
regions (worker over standalone). 1 means the lab's path (the Python interpreter around the
workload, the worker's environment and address-space limit, the extension's build) adds nothing
to what the workload measures; a value far from 1 would mean the chapters measure the lab as
much as the memory system. `spread` is the interquartile range of the pair ratios: the regions
are short (first-touch's are fault-bound), so a shared machine's preemptions scatter single
pairs widely, and each ratio takes three times the bench's usual number of pairs. A ratio that
lies within its spread of 1 says there is no difference this machine can resolve; `worker_s`
and `standalone_s` are the two sides' median times.
"""

AGREEMENT = """\
## Agreement with cachegrind

The L1 misses of a lackey trace replayed through pagelab match cachegrind's D1 misses
(D1mr + D1mw) on the same program and geometry (`sim.vs_cachegrind.miss_agreement` above; the
tests check 32 KiB 8-way, 4 KiB 2-way, 8 KiB direct-mapped and 64 KiB 4-way to within 1%, see
`tests/test_sim_cachegrind.py` and [simulator.md](simulator.md)).
"""


# The keys every figure has; any other key is a detail shown beside its meaning.
STANDARD = {"value", "unit", "source", "meaning", "command", "goal", "better", "met", "reason"}


def _number(v):
    return f"{v:.3g}" if isinstance(v, float) else str(v)


def _value(f):
    return "unavailable" if f["value"] is None else f"{f['value']:.3g} {f['unit']}"


def _goal(f):
    if f.get("goal") is None:
        return ""
    verdict = {None: "", True: " met", False: " **missed**"}[f["met"]]
    return f"{'>=' if f['better'] == 'higher' else '<='} {f['goal']:g}{verdict}"


def markdown(doc):
    m = doc["machine"]
    lines = [
        "# Performance",
        "",
        "Generated by `bench/performance_md.py` from `pagelab bench --json` (do not edit by "
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
        "Reproduce everything: `pagelab bench --json -o pyperf.json` (add `--fast` for a quick "
        "look). `python -m pyperf compare_to old.json new.json` compares two runs' raw timings.",
        "",
        "| figure | value | goal | what it means | reproduce |",
        "|---|---|---|---|---|",
    ]
    for key, f in doc["figures"].items():
        meaning = f["meaning"] or ""
        extra = {k: v for k, v in f.items() if k not in STANDARD}
        if extra:
            meaning += " (" + ", ".join(f"{k} {_number(v)}" for k, v in extra.items()) + ")"
        if f["value"] is None:
            meaning = (meaning + " " if meaning else "") + f"(unavailable: {f['reason']})"
        lines.append(
            f"| `{key}` | {_value(f)} | {_goal(f)} | {meaning} | `{f['command']}` |".replace(
                "\n", " "
            )
        )
    missed = [k for k, f in doc["figures"].items() if f.get("met") is False]
    lines += ["", "## Targets missed, and what limits them", ""]
    if not missed:
        lines.append("None.")
    for key in missed:
        why = WHY_MISSED.get(key) or "not analysed yet."
        f = doc["figures"][key]
        lines.append(f"- `{key}`: {_value(f)}, goal {_goal(f)}. {why}")
    lines += ["", FIDELITY, CSIM_REF, AGREEMENT]
    return "\n".join(lines).rstrip() + "\n"


def main(argv):
    with open(argv[1]) if len(argv) > 1 else sys.stdin as src:
        doc = json.load(src)
    sys.stdout.write(markdown(doc))


if __name__ == "__main__":
    main(sys.argv)
