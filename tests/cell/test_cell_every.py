"""%%c simulates unmodified C: every load and store of the cell's own code, counted per line."""

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from helpers import ROOT
from pagelab import BadInput
from pagelab._native import ffi, lib
from pagelab.cell import run as _cell
from pagelab.cell.build import cache_entry, cached_build, sim_mode
from pagelab.sim.lines import LineCounts, LineView
from pagelab.sim.simulator import Simulator

# One line, one L1D: a 32 KiB 8-way cache with 64-byte lines, nothing below it but a DTLB.
L1 = {"l1": "32K:8:64", "l2": None, "llc": None, "stlb": None}

# Each construct on a line of its own (line numbers are checked below).
CONSTRUCTS = r"""#include <stdatomic.h>
#include <string.h>
#include <stdlib.h>
struct __attribute__((packed)) rec { char c; int x; };
typedef int v4 __attribute__((vector_size(16)));
_Atomic long counter;
volatile int vol;
_Alignas(64) int a[4096]; /* globals: another file could change them, so -O2 reads them */
struct rec r[64];
v4 v[64];
long s;
int main(void)
{
    for (int i = 0; i < 4096; i++)
        s += a[i];
    for (int i = 0; i < 100; i++)
        atomic_fetch_add(&counter, 1);
    for (int i = 0; i < 50; i++)
        vol = i;
    for (int i = 0; i < 64; i++)
        s += r[i].x;
    for (int i = 0; i < 64; i++)
        v[i] += v[(i + 1) % 64];
    memset(a, 1, sizeof a);
    for (int i = 0; i < 4096; i++)
        a[i] = 0;
    char *buf = aligned_alloc(64, 1 << 16);
    memcpy(buf, a, sizeof a);
    return (int)(s + buf[5] + counter) & 1;
}
"""
LINE = {
    "sum": 15,
    "atomic": 17,
    "volatile": 19,
    "packed": 21,
    "vector": 23,
    "memset": 24,
    "zero loop": 26,
    "memcpy": 28,
}


@pytest.fixture(scope="module")
def constructs():
    return _cell.simulate_c(CONSTRUCTS, config=L1)


def test_every_access_of_plain_c_reaches_the_simulator(constructs):
    """A sum over 4096 ints reads their 16 KiB on its line, in 4-, 8- or 16-byte reads as the
    compiler vectorised it, missing once per 64-byte line (256), with no PL_LOAD in sight (the
    one write is the sum's, where clang places it)."""
    _, lines, run = constructs
    c = lines.lines[LINE["sum"]]
    assert c.reads in (4096, 2048, 1024) and c.writes <= 1
    assert c.l1_read_misses == 4096 * 4 // 64
    assert run["label"] == "main()"


def test_atomics_volatile_unaligned_and_wide_accesses_are_simulated(constructs):
    """An atomic add is a read and a write, a volatile store a write, a packed (unaligned)
    int a read, a 16-byte vector update a read of each operand and a write."""
    lines = constructs[1].lines
    assert (lines[LINE["atomic"]].reads, lines[LINE["atomic"]].writes) == (100, 100)
    assert lines[LINE["volatile"]].writes == 50
    assert lines[LINE["packed"]].reads == 64
    assert (lines[LINE["vector"]].reads, lines[LINE["vector"]].writes) == (128, 64)


def test_memory_functions_and_zeroing_loops_are_not_hidden(constructs):
    """memset and memcpy are simulated in 16-byte pieces on the calling line, and a zeroing loop
    (which -O2 alone turns into a memset call) still shows its stores on its own line."""
    lines = constructs[1].lines
    assert lines[LINE["memset"]].writes == 4 * 4096 // _cell_chunk()
    assert lines[LINE["zero loop"]].writes * 4 >= 4096 * 4 // 4  # 4096 ints, however grouped
    assert lines[LINE["zero loop"]].writes > 0
    copy = lines[LINE["memcpy"]]
    assert copy.reads == copy.writes == 4 * 4096 // _cell_chunk()
    assert copy.l1_write_misses == 4 * 4096 // 64  # the fresh buffer's lines, each once


def _cell_chunk():
    text = (ROOT / "csrc/include/pagelab_cell.h").read_text()
    return int(re.search(r"#define PL_CELL_CHUNK (\d+)", text)[1])


def test_lines_add_up_to_the_simulated_totals(constructs):
    """The per-line misses add up to the region's simulated counts, and so do the accesses but
    for the few unaligned ones that straddle two lines (the L1 counts a lookup per line)."""
    readings, lines, _ = constructs
    by = {r.name: r.value for r in readings}
    total = lines.totals
    assert 0 <= by["L1-dcache-loads"] - total.reads <= lines.lines[LINE["packed"]].reads
    assert total.writes == by["L1-dcache-stores"]
    assert total.l1_misses == by["L1-dcache-load-misses"] + by["L1-dcache-store-misses"]
    assert total.tlb_misses == by["dTLB-load-misses"] + by["dTLB-store-misses"]


def test_library_calls_whose_memory_is_unseen_are_named(constructs):
    """aligned_alloc's own memory traffic is not simulated, and the result says so by name; the
    wrapped memcpy and memset are not in that list."""
    notes = " ".join(constructs[1].notes)
    assert "aligned_alloc" in notes
    assert "memcpy" not in notes and "memset" not in notes


# Struct copies and fills wider than a buffered record (PL_CELL_REC_MAX bytes), which gcc
# reports as ranges and then, being large, hands to memcpy and memset; and a memcpy the cell
# writes itself, on the next line, of the same bytes.
AGGREGATES = r"""#include <string.h>
struct big { _Alignas(64) char b[40000]; };
struct big g1, g2;
int main(void)
{
    g1 = g2;
    memcpy(&g1, &g2, sizeof g1);
    g2 = (struct big){0};
    return g1.b[3] + g2.b[5];
}
"""


def test_large_struct_copies_and_fills_count_once():
    """A 40000-byte struct copy is read and written once, piece by piece (the compiler's range
    report, not again through the memcpy it calls); a fill is written once; the cell's own
    memcpy of the same bytes right after still counts in full."""
    _, lines, _ = _cell.simulate_c(AGGREGATES, config=L1)
    pieces = 40000 // _cell_chunk()
    copy, own, fill = (lines.lines[n] for n in (6, 7, 8))
    assert (copy.reads, copy.writes) == (pieces, pieces)
    assert (own.reads, own.writes) == (pieces, pieces)
    assert (fill.reads, fill.writes) == (0, pieces)
    assert (copy.l1_read_misses, copy.l1_write_misses) == (625, 625)  # each line of each, once


def test_marked_cells_stay_marked_and_every_can_be_chosen():
    """A cell with PL_LOAD simulates only its PL_LOADs by default; --sim every simulates every
    access of the same cell."""
    src = (
        "int a[256];\nint main(void)\n{\n    int s = 0;\n"
        "    for (int i = 0; i < 256; i++)\n        s += PL_LOAD(&a[i]) + a[(i * 7) % 256];\n"
        "    return s;\n}\n"
    )
    assert sim_mode(src) == "marked"
    assert sim_mode("// PL_LOAD(p) in a comment\nint main(void) { return 0; }") == "every"
    _, marked, _ = _cell.simulate_c(src, config=L1)
    _, every, _ = _cell.simulate_c(src, sim="every", config=L1)
    assert marked.lines[6].reads == 256
    assert every.lines[6].reads == 512
    assert marked.outside.accesses == every.outside.accesses == 0


def test_measured_build_is_not_instrumented():
    """The measured build calls no hook (no __tsan_ symbol); the simulated build does."""
    builds = _worker_build("int main(void) { return 0; }")
    nm = shutil.which("nm")
    if not nm:
        pytest.skip("nm (binutils) is not installed")

    def tsan(path):
        out = subprocess.run([nm, "-D", "--defined-only", path], capture_output=True, text=True)
        return [s for s in out.stdout.split() if s.startswith("__tsan_")]

    assert tsan(builds["measured"]) == []
    out = subprocess.run([nm, builds["sim"]], capture_output=True, text=True).stdout
    assert "__tsan_read4" in out


def _worker_build(source, force=False, mode="every"):
    return cached_build(source, mode, force, "cell")


def test_an_unchanged_cell_is_not_compiled_again_and_force_does():
    """The second build of the same source is the cache's (same files, untouched); force
    compiles anew."""
    src = "int main(void) { return 7; }  /* cache test */"
    first = _worker_build(src)
    stamp = Path(first["sim"]).stat().st_mtime_ns
    again = _worker_build(src)
    assert again["cached"] and again["sim"] == first["sim"]
    assert Path(again["sim"]).stat().st_mtime_ns == stamp
    forced = _worker_build(src, force=True)
    assert not forced["cached"] and Path(forced["sim"]).exists()
    other = _worker_build(src + "\n")
    assert other["sim"] != first["sim"]


def test_the_compilers_version_is_asked_once_until_the_compiler_changes(tmp_path, monkeypatch):
    """A cell's cache key holds ``cc --version``, run once per compiler: again only when the
    compiler's file changes, and then the key changes with it."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    calls = tmp_path / "calls"
    cc = tmp_path / "fake-cc"

    def install(version):
        cc.write_text(f"#!/bin/sh\necho run >> {calls}\necho '{version}'\n")
        cc.chmod(0o755)

    install("fake cc 1.0")
    monkeypatch.setenv("CC", str(cc))
    first = cache_entry("int main(void) { return 0; }", "every")
    assert cache_entry("int main(void) { return 0; }", "every") == first
    assert calls.read_text().count("run") == 1
    install("fake cc 10.0")  # another size: a reinstalled compiler
    assert cache_entry("int main(void) { return 0; }", "every") != first
    assert calls.read_text().count("run") == 2


def test_compile_errors_keep_the_cells_line_numbers():
    """The compiler's error names the cell's own line, in the simulated mode too."""
    with pytest.raises(
        BadInput, match=r"cell:2:\d+: error: .*(nope. undeclared|undeclared identifier .nope)"
    ):
        _cell.simulate_c("int main(void) {\n    return nope;\n}\n", config=L1, force=True)


def test_an_unsupported_construct_is_named_in_one_line():
    """A cell calling a ThreadSanitizer hook pagelab does not define fails with one line that
    names it, not a linker dump."""
    src = "void __tsan_acquire(void *);\nint x;\nint main(void) { __tsan_acquire(&x); return 0; }"
    with pytest.raises(BadInput) as e:
        _cell.simulate_c(src, config=L1)
    assert "\n" not in str(e.value)
    assert "unsupported in a simulated cell" in str(e.value)
    assert "__tsan_acquire" in str(e.value)


def test_other_threads_are_counted_but_not_simulated_under_the_main_model():
    """With --threads-model main, accesses from a thread main() starts are left out of the
    one-core model, and said."""
    src = r"""#include <pthread.h>
static int a[1000];
static void *work(void *arg) { for (int i = 0; i < 1000; i++) a[i] = i; return arg; }
int main(void)
{
    pthread_t t;
    pthread_create(&t, NULL, work, NULL);
    pthread_join(t, NULL);
    return a[3] == 3 ? 0 : 1;
}
"""
    _, lines, run = _cell.simulate_c(src, config=L1, threads_model="main")
    assert run["status"] == 0
    assert lines.lines.get(3) is None
    assert any("other threads" in n and "not simulated" in n for n in lines.notes)


def test_the_region_limits_the_lines():
    """With PL_REGION_BEGIN..END the per-line counts cover the region only (volatile: one read
    per element, however the compiler vectorises)."""
    src = (
        "static volatile int a[1024];\nint main(void)\n{\n    for (int i = 0; i < 1024; i++)\n"
        "        a[i] = i;\n    PL_REGION_BEGIN();\n    int s = 0;\n"
        "    for (int i = 0; i < 1024; i++)\n        s += a[i];\n    PL_REGION_END();\n"
        "    PL_KEEP(s);\n    return 0;\n}\n"
    )
    _, lines, run = _cell.simulate_c(src, config=L1)
    assert run["label"] == "region"
    assert 5 not in lines.lines
    assert lines.lines[9].reads == 1024
    assert "first PL_REGION_BEGIN..END" in lines.notes[0]


def test_live_counts_change_only_on_the_slow_path():
    """pl_sim_counts_live: the fast path's hits are not in the live counts, the stats add them,
    and a miss shows there at once."""
    sim = Simulator(L1)
    live = lib.pl_sim_counts_live(sim._sim, 0, 0)
    assert lib.pl_sim_counts_live(sim._sim, 0, 1) == ffi.NULL
    sim.access([4096, 4100, 4104], 0, 4)
    assert (live.reads, live.read_misses) == (1, 1)
    assert sim.stats()["L1D"].reads == 3


def test_the_line_view_marks_the_hottest_lines():
    """The text and HTML views show every source line, mark the lines with the most L1 misses
    and carry the counts; the JSON form lists the lines that made accesses."""
    view = LineView(
        "cell",
        "int a;\nx = 1;\ny = 2;\nz = 3;\nw = 4;\n",
        {2: LineCounts(reads=10, l1_read_misses=5), 3: LineCounts(writes=4, l1_write_misses=9)},
        levels=("tlb",),
    )
    assert view.hottest() == [3, 2]
    text = str(view)
    assert re.search(r"^ +3 +4 +9 +0 +█+ +y = 2;   <- #1$", text, re.M)
    assert re.search(r"^ +2 +10 +5 .* x = 1;   <- #2$", text, re.M)
    assert "LLC misses" not in text and "DTLB misses" in text
    assert re.search(r"^ +1 +int a;$", text, re.M)
    assert "<b>#1</b>" in view._repr_html_()
    d = view.to_dict()
    assert [x["line"] for x in d["lines"]] == [2, 3]
    assert d["lines"][1]["l1_write_misses"] == 9 and d["source"] == "sim"
    assert json.loads(json.dumps(d)) == d


def test_sim_c_prints_the_lines_and_its_json_follows_the_schema(pagelab_cmd, tmp_path):
    """`pagelab sim c FILE.c` prints the builds, the counts and the annotated source; --json is one
    document of the schema's sim_c kind; a bad geometry is one line and exit 2."""
    from helpers import json_document

    prog = tmp_path / "sum.c"
    prog.write_text(
        "volatile int a[2048];\nint main(void)\n{\n    long s = 0;\n"
        "    for (int i = 0; i < 2048; i++)\n        s += a[i];\n    return (int)(s & 1);\n}\n"
    )
    text = subprocess.run(
        [*pagelab_cmd, "sim", "c", str(prog), "--l1", "32K:8:64"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert re.search(r"^ +6 +2,048 .* s \+= a\[i\];   <- #1$", text, re.M)
    assert re.search(r"^  compiler: .*\n  measured build: .*-O2.*\n  simulated build: ", text, re.M)
    out = subprocess.run(
        [*pagelab_cmd, "sim", "c", str(prog), "--json"], capture_output=True, text=True, check=True
    ).stdout
    doc = json_document(out, "sim_c")
    assert [x["line"] for x in doc["lines"]["lines"]] == [6]
    bad = subprocess.run(
        [*pagelab_cmd, "sim", "c", str(prog), "--l1", "32K:7:64"], capture_output=True, text=True
    )
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_exit_ends_the_cell_as_a_return_does():
    """exit() called from a function in the middle of a loop ends main() as a return would:
    both runs come back with exit()'s status and the counts up to it (not a worker that died
    without a result), and exit is not among the unseen library calls (volatile: one read per
    element, however the compiler vectorises)."""
    src = (
        "#include <stdlib.h>\nvolatile int a[1000];\nstatic void stop(long s)\n{\n"
        "    exit((int)(s & 1) + 3);\n}\nint main(void)\n{\n    long s = 0;\n"
        "    for (int i = 0; i < 1000; i++) {\n        s += a[i];\n        if (i == 499)\n"
        "            stop(s);\n    }\n    return 0;\n}\n"
    )
    result = _cell.run_c(src, config=L1)
    assert (result.status, result.exited) == (3, True)
    assert "main() called exit(3)" in str(result)
    assert result.simulated and result.simulated_reason is None
    assert result.lines.lines[11].reads == 500
    assert not any("exit" in note for note in result.lines.notes)
