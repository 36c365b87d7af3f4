"""A cell simulated by instrumentation agrees line by line with valgrind's cachegrind.

The programs are bench/transpose.c (a naive and a tiled matrix transpose, written for the lab,
not for this test) and a matrix multiply that clang vectorises; both tools see them with the same
power-of-two geometry, and cachegrind's per-line counts are read from cg_annotate's annotated
source.
"""

import re
import shutil
import subprocess

import pytest

from helpers import ROOT
from pagelab.cell import build as _build
from pagelab.cell import run as _cell

pytestmark = pytest.mark.skipif(
    not (shutil.which("valgrind") and shutil.which("cg_annotate") and shutil.which("cc")),
    reason="valgrind (cachegrind, cg_annotate) and a C compiler are needed",
)

PROGRAM = ROOT / "bench" / "transpose.c"
D1, LL = (32768, 8, 64), (8 << 20, 16, 64)  # sizes, ways, lines: what both tools model
CONFIG = {
    "l1": ":".join(map(str, D1)),
    "l2": None,
    "llc": ":".join(map(str, LL)),
    "tlb": None,
    "stlb": None,
    "classify": False,
}
TOLERANCE = 0.01
# accesses cachegrind sees on a function's first line that no instrumentation reports: the
# prologue's and epilogue's pushes and pops of saved registers
PROLOGUE = 16
_COL = r"(\.|[\d,]+(?: \(\s*[\d.]+%\))?)"
_ROW = re.compile(rf"^\s*{_COL}\s+{_COL}\s+{_COL}\s+{_COL}(?:\s|$)")


def cg_annotate_lines(out_file, source):
    """{line: (Dr, D1mr, Dw, D1mw)} from cg_annotate's annotated source of ``source``; line 0:
    the counts of the file's instructions that the debug information gives no line."""
    text = subprocess.run(
        ["cg_annotate", "--show=Dr,D1mr,Dw,D1mw", str(out_file), str(source)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    body = re.split(rf"-- \w+-annotated source: {re.escape(str(source))}\n", text)[1].splitlines()
    counts, line, started = {}, 1, False
    for row in body:
        if m := re.match(r"^-- line (\d+) -+", row):
            line, started = int(m[1]), True
            continue
        m = _ROW.match(row)
        if m and "<counts for unidentified lines" in row:
            counts[0] = tuple(
                0 if v == "." else int(v.split()[0].replace(",", "")) for v in m.groups()
            )
        elif m and not row.lstrip().startswith("Dr"):
            started = True
            values = [0 if v == "." else int(v.split()[0].replace(",", "")) for v in m.groups()]
            counts[line] = tuple(values)
            line += 1
        elif started and row.startswith("----"):
            break
    return counts


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    """cachegrind's per-line counts and pagelab's LineView of the same program."""
    tmp = tmp_path_factory.mktemp("transpose")
    src = tmp / "transpose.c"
    src.write_text(PROGRAM.read_text())
    exe, out = tmp / "transpose", tmp / "cachegrind.out"
    subprocess.run(["cc", "-O2", "-g", "-o", str(exe), str(src)], check=True)
    d1, ll = ",".join(map(str, D1)), ",".join(map(str, LL))
    subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}", f"--LL={ll}"]
        + ["--I1=32768,8,64", f"--cachegrind-out-file={out}", str(exe)],
        check=True,
        capture_output=True,
    )
    _, lines, _ = _cell.simulate_c(src.read_text(), config=CONFIG, name="transpose.c")
    return cg_annotate_lines(out, src), lines


def test_d1_misses_per_line_agree_with_cg_annotate(both):
    """On every line where both tools see the same reads and writes (both transpose loops among
    them), pagelab's L1 read and write misses are cachegrind's D1mr and D1mw within 1%."""
    cg, view = both
    same = [
        no
        for no, c in view.lines.items()
        if no in cg and c.accesses and (c.reads, c.writes) == (cg[no][0], cg[no][2])
    ]
    source = view.source.splitlines()
    transposes = [no for no, text in enumerate(source, 1) if "b[j * N + i] = a[i * N + j]" in text]
    assert len(transposes) == 2 and set(transposes) <= set(same), (same, transposes)
    for no in same:
        ours, theirs = view.lines[no], cg[no]
        for got, want in ((ours.l1_read_misses, theirs[1]), (ours.l1_write_misses, theirs[3])):
            assert abs(got - want) <= TOLERANCE * want, (no, source[no - 1], got, want)


def test_the_tiled_transpose_misses_less_in_both(both):
    """Both tools see the tiled loop miss several times less than the naive one."""
    cg, view = both
    naive, tiled = [
        no
        for no, text in enumerate(view.source.splitlines(), 1)
        if "b[j * N + i] = a[i * N + j]" in text
    ]
    assert view.lines[naive].l1_misses > 3 * view.lines[tiled].l1_misses
    assert cg[naive][1] + cg[naive][3] > 3 * (cg[tiled][1] + cg[tiled][3])
    assert view.hottest()[0] == naive


# A 200x200 matrix multiply of doubles, in the two loop orders: clang -O2 keeps ijk's loads
# scalar (a sum it may not reorder) and vectorises ikj into 16-byte loads and stores.
MATMUL = r"""
#include <stdio.h>
#define N 200
static double a[N][N], b[N][N], c[N][N];
int main(void)
{
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = i + j;
            b[i][j] = i - j;
        }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            for (int k = 0; k < N; k++)
                c[i][j] += a[i][k] * b[k][j]; /* ijk */
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++)
            for (int j = 0; j < N; j++)
                c[i][j] += a[i][k] * b[k][j]; /* ikj */
    printf("%g\n", c[N - 1][N - 1]);
    return 0;
}
"""
# Runs a cell's measured build as pagelab does: its main() called in a process of its own.
HOST = ROOT / "bench" / "cell_host.c"


@pytest.fixture(scope="module", params=["clang", "gcc"])
def matmul(request, tmp_path_factory):
    """cachegrind's per-line counts of the very build that %%c measured, pagelab's LineView of
    the simulated build, and the builds' description; both built by clang, then by gcc."""
    cc = request.param
    if not shutil.which(cc):
        pytest.skip(f"{cc} is not installed (`make setup` installs clang when run as root)")
    tmp = tmp_path_factory.mktemp(f"matmul-{cc}")
    # the worker compiles in this directory, so the debug information names the file here
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CC", cc)
        mp.chdir(tmp)
        (tmp / "matmul.c").write_text(MATMUL)
        _, lines, run = _cell.simulate_c(MATMUL, config=CONFIG, name="matmul.c", force=True)
        builds = _build.cached_build(MATMUL, "every", False, "matmul.c")
    host, out = tmp / "host", tmp / "cachegrind.out"
    subprocess.run(["cc", "-O2", "-o", str(host), str(HOST), "-ldl"], check=True)
    d1, ll = ",".join(map(str, D1)), ",".join(map(str, LL))
    subprocess.run(
        ["valgrind", "--tool=cachegrind", "--cache-sim=yes", f"--D1={d1}", f"--LL={ll}"]
        + ["--I1=32768,8,64", f"--cachegrind-out-file={out}", str(host), builds["measured"]],
        check=True,
        capture_output=True,
    )
    return cg_annotate_lines(out, tmp / "matmul.c"), lines, run["builds"], cc


def _loop(view, order):
    return next(
        no for no, text in enumerate(view.source.splitlines(), 1) if f"/* {order} */" in text
    )


def _drw(c):
    """(reads, L1 read misses, writes, L1 write misses) of a LineCounts, cg_annotate's order."""
    return (c.reads, c.l1_read_misses, c.writes, c.l1_write_misses) if c else (0, 0, 0, 0)


def test_matmul_accesses_and_misses_per_line_agree_with_cg_annotate(matmul):
    """On every line of the vectorised matrix multiply, pagelab's reads, writes and L1 misses are
    cachegrind's on the measured build within 1%, give or take what either tool could place on
    no line (clang leaves a few instructions of some loops without one, in either build) and
    the registers main() saves, and the file's totals agree within 1%."""
    cg, view, _, _ = matmul
    cg_unplaced, unplaced = cg.pop(0, (0, 0, 0, 0)), _drw(view.outside)
    table = ["line  pagelab (Dr, D1mr, Dw, D1mw)  cg_annotate (Dr, D1mr, Dw, D1mw)"]
    for no in sorted(set(cg) | set(view.lines)):
        ours, theirs = _drw(view.lines.get(no)), cg.get(no, (0, 0, 0, 0))
        table.append(f"{no:>4}  {ours}  {theirs}")
        for got, want, spare, cg_spare in zip(ours, theirs, unplaced, cg_unplaced):
            low = (want - spare - PROLOGUE) * (1 - TOLERANCE)
            high = (want + cg_spare) * (1 + TOLERANCE)
            assert low <= got <= high, "\n".join(table)
    table.append(f"no line  {unplaced}  {cg_unplaced}")
    print("\n".join(table))
    ours_total = [sum(v) for v in zip(*[_drw(c) for c in view.lines.values()], unplaced)]
    theirs_total = [sum(v) for v in zip(*cg.values(), cg_unplaced)]
    for got, want in zip(ours_total, theirs_total):
        assert abs(got - want) <= TOLERANCE * want, (ours_total, theirs_total)
    assert sum(cg_unplaced) < 0.1 * sum(theirs_total)  # placing most is the point


def test_matmul_is_simulated_with_the_measured_builds_vector_accesses(matmul):
    """With clang, ikj's inner loop is simulated as 16-byte accesses (a load of b, a load and a
    store of c per two elements: N**3 reads), ijk's as 8-byte ones (2 N**3 reads), as the
    measured build makes them; with gcc, both are 8-byte ones in both builds, and the header
    says why."""
    _, view, builds, cc = matmul
    n = 200
    ijk, ikj = view.lines[_loop(view, "ijk")], view.lines[_loop(view, "ikj")]
    assert ijk.reads == 2 * n**3
    assert builds[0].startswith(f"compiler: {cc} (")
    assert "-fsanitize=thread" in builds[2]
    if cc == "clang":
        assert (ikj.reads, ikj.writes) == (n**3, n**3 // 2)
        assert builds[1] == "measured build: " + " ".join(_build.COMPILE + _build.CLANG_BOTH)
        assert len(builds) == 3  # no reason to give
    else:
        assert (ikj.reads, ikj.writes) == (2 * n**3 + n**2, n**3)  # a[i][k] once per row
        assert builds[1] == "measured build: " + " ".join(_build.COMPILE + _build.GCC_MEASURED)
        assert builds[3] == "why: " + _build.GCC_WHY
