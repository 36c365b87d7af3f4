"""Counter read cost: C read(2) and rdpmc loops, one Python CounterGroup.read(), and the
overhead of an empty ``pagelab.measure()`` bracket. Run: .venv/bin/python bench/bench_counters.py
(add --fast for a quick look, -o FILE to keep the JSON)."""

import pyperf

import pagelab
from pagelab._native import lib

SW_EVENTS = "page-faults,minor-faults,context-switches"
HW_EVENTS = "instructions,cycles"
LOOP = 10_000


def c_read_loop(events, rdpmc):
    """Total seconds for loops x LOOP reads, timed in C, so no Python lands inside."""

    def bench(loops):
        with pagelab.CounterGroup(events, rdpmc=rdpmc) as g:
            g.enable()
            total = 0
            for _ in range(loops):
                ns = lib.pl_group_read_loop(g._group, LOOP)
                if ns < 0:
                    raise OSError(-ns, "read failed")
                total += ns
        return total / 1e9

    return bench


def python_read(loops):
    with pagelab.CounterGroup(SW_EVENTS) as g:
        g.enable()
        t0 = pyperf.perf_counter()
        for _ in range(loops):
            g.read()
        return pyperf.perf_counter() - t0


def empty_measure(loops):
    t0 = pyperf.perf_counter()
    for _ in range(loops):
        with pagelab.measure(SW_EVENTS):
            pass
    return pyperf.perf_counter() - t0


def main():
    runner = pyperf.Runner()
    runner.metadata["pagelab_profile"] = pagelab.doctor().profile
    runner.bench_time_func(
        "counters: C read(2), 3 sw events", c_read_loop(SW_EVENTS, False), inner_loops=LOOP
    )
    with pagelab.CounterGroup(HW_EVENTS, rdpmc=True) as g:
        has_hw = g.opened
    if has_hw:
        runner.bench_time_func(
            "counters: C rdpmc, 2 hw events", c_read_loop(HW_EVENTS, True), inner_loops=LOOP
        )
    elif not runner.args.worker:
        print("skipped: C rdpmc (no hardware event opens here: no PMU)")
    runner.bench_time_func("counters: Python CounterGroup.read()", python_read)
    runner.bench_time_func("counters: empty measure() bracket", empty_measure)


if __name__ == "__main__":
    main()
