"""Every thread of a simulated C program on a core of its own: MESI coherence between the
cores' private caches, the coherence miss class, per-thread lines, and --threads-model."""

import subprocess

import pytest

from helpers import json_document
from pagelab import BadInput
from pagelab._native import ffi, lib
from pagelab.cell import run as _cell
from pagelab.sim.simulator import Simulator

# Two threads incrementing two counters: adjacent (one line) or PAD bytes apart (two lines).
# volatile keeps every load and store; the counters' lines are COUNTER_LINES.
FALSE_SHARING = r"""#include <pthread.h>
#define N 20000
struct { volatile long a; PAD volatile long b; } c __attribute__((aligned(64)));
static void *bump_a(void *arg) { for (long i = 0; i < N; i++) c.a++; return arg; }
static void *bump_b(void *arg) { for (long i = 0; i < N; i++) c.b++; return arg; }
int main(void)
{
    pthread_t t1, t2;
    PL_REGION_BEGIN();
    pthread_create(&t1, NULL, bump_a, NULL);
    pthread_create(&t2, NULL, bump_b, NULL);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    PL_REGION_END();
    return c.a == N && c.b == N ? 0 : 1;
}
"""
COUNTER_LINES = (4, 5)
# An L1 and an LLC, no L2 or TLB: small and the same on every machine.
CORES = {"l1": "32K:8:64", "l2": None, "llc": "1M:16:64", "tlb": None, "stlb": None}


def _program(padded):
    return FALSE_SHARING.replace("PAD", "char pad[64];" if padded else "")


def _sim_c_json(pagelab_cmd, tmp_path, source, *options):
    prog = tmp_path / "counters.c"
    prog.write_text(source)
    out = subprocess.run(
        [
            *pagelab_cmd,
            "sim",
            "c",
            str(prog),
            "--l1",
            "32K:8:64",
            "--l2",
            "none",
            "--llc",
            "1M:16:64",
            "--tlb",
            "none",
            "--stlb",
            "none",
            "--json",
            *options,
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return json_document(out, "sim_c")


def _coherence(doc, lines=COUNTER_LINES):
    return sum(x.get("coherence", 0) for x in doc["lines"]["lines"] if x["line"] in lines)


def test_false_sharing_shows_coherence_misses_on_the_counters_line(pagelab_cmd, tmp_path):
    """`pagelab sim c --json` of two threads bumping adjacent counters shows many coherence
    misses on the counters' lines, each thread's on its own line; padded apart, almost none."""
    adjacent = _sim_c_json(pagelab_cmd, tmp_path, _program(False))
    padded = _sim_c_json(pagelab_cmd, tmp_path, _program(True))
    assert adjacent["params"]["threads_model"] == {"model": "cores", "quantum": lib.PL_CELL_QUANTUM}
    # every turn of the other thread takes the line: about one miss per quantum of accesses
    assert _coherence(adjacent) > 2 * 2 * 20000 // lib.PL_CELL_QUANTUM // 2
    assert _coherence(padded) <= 2
    metrics = adjacent["measurements"][0]["metrics"]
    assert metrics["L1 coherence misses"]["value"] >= _coherence(adjacent)
    assert metrics["L1 coherence misses"]["source"] == "sim"
    for line, thread in zip(COUNTER_LINES, (1, 2)):
        row = next(x for x in adjacent["lines"]["lines"] if x["line"] == line)
        assert [t["thread"] for t in row["threads"]] == [thread]
        assert row["threads"][0]["accesses"] == row["accesses"] == 2 * 20000


def test_a_line_run_by_two_threads_is_counted_per_thread():
    """A function both threads run has its line's accesses split by thread, each thread's
    exactly what it did, and main()'s own accesses are thread 0's."""
    src = r"""#include <pthread.h>
static volatile int a[2][1000];
static void *fill(void *arg)
{
    for (int i = 0; i < 1000; i++) ((volatile int *)arg)[i] = i;
    return arg;
}
int main(void)
{
    pthread_t t1, t2;
    pthread_create(&t1, NULL, fill, (void *)a[0]);
    pthread_create(&t2, NULL, fill, (void *)a[1]);
    pthread_join(t1, NULL);
    pthread_join(t2, NULL);
    for (int i = 0; i < 1000; i++) a[0][i] += 1;
    return a[0][999] == 1000 ? 0 : 1;
}
"""
    _, lines, run = _cell.simulate_c(src, config=CORES)
    assert run["status"] == 0
    by = lines.threads[5]
    assert sorted(by) == [1, 2]
    assert by[1].writes == by[2].writes == 1000
    assert sorted(lines.threads[15]) == [0]
    assert lines.lines[15].reads == lines.lines[15].writes == 1000
    assert "coherence" in lines.levels
    assert any("3 threads simulated" in n for n in lines.notes)


def test_the_interleaving_is_deterministic():
    """Two runs of the same threaded program give the same counts on the threads' lines, thread
    by thread, and the same coherence misses (the stack's place, which address randomisation
    moves from run to run, can change main()'s own misses by one)."""

    def counts(run):
        readings, view, _ = run
        coherence = next(r.value for r in readings if r.name == "L1 coherence misses")
        return coherence, {n: (view.lines[n], view.threads[n]) for n in COUNTER_LINES}

    first = counts(_cell.simulate_c(_program(False), config=CORES))
    assert first == counts(_cell.simulate_c(_program(False), config=CORES))


def test_the_quantum_sets_how_often_the_line_moves():
    """A longer turn moves the shared line less often: fewer coherence misses."""
    short = _cell.simulate_c(_program(False), config=CORES, threads_model="cores:10")[1]
    long = _cell.simulate_c(_program(False), config=CORES, threads_model="cores:1000")[1]
    count = lambda view: sum(view.lines[n].coherence for n in COUNTER_LINES)  # noqa: E731
    assert count(short) > 10 * count(long) > 0


@pytest.mark.parametrize("bad", ["", "core", "cores:", "cores:0", "cores:x", "main:5", 3])
def test_bad_threads_models_are_one_clear_error(bad):
    """A threads model other than cores, cores:N (1 to the maximum) or main is refused with
    one line naming the choices, before anything is built."""
    with pytest.raises(BadInput) as e:
        _cell.simulate_c("int main(void) { return 0; }", threads_model=bad)
    assert "use cores" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(BadInput):
        _cell.parse_threads_model(f"cores:{_cell.QUANTUM_MAX + 1}")


def test_the_cli_refuses_a_bad_threads_model(pagelab_cmd, tmp_path):
    """`pagelab sim c --threads-model` with a bad value exits 2 with one line."""
    prog = tmp_path / "p.c"
    prog.write_text("int main(void) { return 0; }\n")
    bad = subprocess.run(
        [*pagelab_cmd, "sim", "c", str(prog), "--threads-model", "cores:-1"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_a_single_thread_is_simulated_alike_under_both_models():
    """Without threads the cores model is the one-core model: the same counts."""
    src = (
        "static volatile int a[4096];\nint main(void)\n{\n    for (int i = 0; i < 4096; i++)\n"
        "        a[i] += i;\n    return 0;\n}\n"
    )
    cores = _cell.simulate_c(src, config=CORES, threads_model="cores")
    main = _cell.simulate_c(src, config=CORES, threads_model="main")
    assert cores[1].to_dict() == main[1].to_dict()
    assert [r.to_dict() for r in cores[0]] == [r.to_dict() for r in main[0]]
    assert "coherence" not in cores[1].levels


def _core_counts(model, core):
    stats = ffi.new("struct pl_sim_stats *")
    protocol = ffi.new("struct pl_coh_counts *")
    assert lib.pl_coh_core_stats(model, core, stats, protocol) == 0
    l1 = stats.level[0]
    return {
        "reads": l1.reads,
        "writes": l1.writes,
        "misses": l1.read_misses + l1.write_misses,
        "classes": l1.compulsory + l1.capacity + l1.conflict,
        "coherence": l1.coherence,
        "invalidations": protocol.invalidations,
        "downgrades": protocol.downgrades,
    }


def test_the_protocol_on_a_synthetic_trace():
    """Two cores, one line A and one line B: each write invalidates the other core's copy, a
    read of a line the other holds Modified downgrades it, and a miss on a line a write took
    away is a coherence miss, not one of the other classes."""
    first = Simulator(CORES)
    out = ffi.new("struct pl_coh **")
    assert lib.pl_coh_create(first._sim, _native_config(first), out) == 0
    model = ffi.gc(out[0], lib.pl_coh_destroy)
    assert lib.pl_coh_add_core(model) == 1
    A, B = 0x10000, 0x20000
    trace = [
        (0, A, 0),  # core 0 reads A: a compulsory miss
        (1, A, 0),  # core 1 reads A: a compulsory miss; both hold it Shared
        (0, A, 1),  # core 0 writes A: a hit; core 1's copy is invalidated
        (1, A, 0),  # core 1 reads A: a coherence miss; core 0's Modified copy downgraded
        (1, A, 0),  # a hit
        (1, A, 1),  # core 1 writes A: a hit; core 0's copy is invalidated
        (0, A, 1),  # core 0 writes A: a coherence miss; core 1's copy is invalidated
        (0, B, 0),  # core 0 reads B: a compulsory miss, nothing shared
    ]
    for core, addr, write in trace:
        lib.pl_coh_access(model, core, addr, 8, write)
    assert _core_counts(model, 0) == {
        "reads": 2,
        "writes": 2,
        "misses": 3,
        "classes": 2,
        "coherence": 1,
        "invalidations": 1,
        "downgrades": 1,
    }
    assert _core_counts(model, 1) == {
        "reads": 3,
        "writes": 1,
        "misses": 2,
        "classes": 1,
        "coherence": 1,
        "invalidations": 2,
        "downgrades": 0,
    }
    total = ffi.new("struct pl_sim_stats *")
    assert lib.pl_coh_stats(model, total) == 0
    assert total.level[0].read_misses + total.level[0].write_misses == 5
    assert total.level[0].coherence == 2
    # the shared LLC saw every L1 miss: A once from each core's first read, then from the cores
    assert total.level[1].reads + total.level[1].writes == 5


def _native_config(sim):
    from pagelab.sim.config import to_native

    config = to_native(sim.config)
    _native_config.kept = config  # alive while the model is made
    return config


def _two_cores(config):
    first = Simulator(config)
    out = ffi.new("struct pl_coh **")
    rc = lib.pl_coh_create(first._sim, _native_config(first), out)
    if rc:
        return first, rc
    model = ffi.gc(out[0], lib.pl_coh_destroy)
    assert lib.pl_coh_add_core(model) == 1
    return first, model


@pytest.mark.parametrize(
    ("l1", "policy"),
    [("512:8:64", p) for p in ("lru", "fifo", "random", "plru")] + [("4K:32:64", "lru")],
)
def test_an_invalidated_line_leaves_the_rest_of_its_set_alone(l1, policy):
    """Under every policy, and in wide sets kept by stamps, a line another core's write takes
    from a full set misses once (a coherence miss, filling the way it left, evicting nothing)
    while the set's other lines still hit."""
    first, model = _two_cores(
        {"l1": l1, "l2": None, "llc": None, "tlb": None, "stlb": None, "policy": policy}
    )
    ways = int(l1.split(":")[1])
    stride = int(l1.split(":")[0].rstrip("K")) * (1024 if "K" in l1 else 1) // ways  # same set
    lines = [i * stride for i in range(ways)]
    for a in lines:
        lib.pl_coh_access(model, 0, a, 8, 0)
    lib.pl_coh_access(model, 1, lines[3], 8, 1)  # core 1's write takes line 3 from core 0
    before = _core_counts(model, 0)
    for a in lines[:3] + lines[4:]:
        lib.pl_coh_access(model, 0, a, 8, 0)
    assert _core_counts(model, 0)["misses"] == before["misses"]
    lib.pl_coh_access(model, 0, lines[3], 8, 0)
    for a in lines:
        lib.pl_coh_access(model, 0, a, 8, 0)
    after = _core_counts(model, 0)
    assert after["misses"] == before["misses"] + 1 and after["coherence"] == 1
    assert after["invalidations"] == 1
    assert first.stats()["L1D"].evictions == 0


def test_a_level_that_cannot_drop_a_line_is_refused():
    """One fully associative LRU set wider than a scanned set cannot drop one line: no cores."""
    _, rc = _two_cores({"l1": "4K:64:64", "l2": None, "llc": None, "tlb": None, "stlb": None})
    assert rc == -22  # EINVAL


def test_a_thread_that_outlives_main_is_replayed_as_far_as_it_got():
    """A thread still running when main() returns ends the interleaving where its records stood
    (the replay does not chase it), and the run comes back."""
    src = r"""#include <pthread.h>
#include <unistd.h>
static volatile long n;
static void *spin(void *arg) { for (;;) n++; return arg; }
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, spin, NULL);
    usleep(20000);
    return 0;
}
"""
    _, lines, run = _cell.simulate_c(src, config=CORES, timeout=30)
    assert run["status"] == 0
    assert sorted(lines.threads[4]) == [1] and lines.lines[4].reads > 0


def test_threads_that_outlive_main_never_crash_the_worker():
    """After main() the hooks feed nothing: a thread spinning on, or one whose start routine
    returns while the worker builds its result, never touches the released cell (ten runs:
    each used to crash about one time in five)."""
    src = r"""#include <pthread.h>
#include <unistd.h>
static volatile long n;
static void *spin(void *arg) { for (;;) n++; return arg; }
static void *late(void *arg) { usleep(30000); n++; return arg; }
int main(void)
{
    pthread_t t, u;
    pthread_create(&t, NULL, spin, NULL);
    pthread_create(&u, NULL, late, NULL);
    usleep(10000);
    return 0;
}
"""
    for _ in range(10):
        _, _, run = _cell.simulate_c(src, config=CORES, timeout=30)
        assert run["status"] == 0
