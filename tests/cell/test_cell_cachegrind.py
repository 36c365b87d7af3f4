"""A cell simulated by instrumentation agrees line by line with valgrind's cachegrind.

The program is bench/transpose.c (a naive and a tiled matrix transpose, written for the lab, not
for this test); both tools see it with the same power-of-two geometry, and cachegrind's per-line
counts are read from cg_annotate's annotated source.
"""

import re
import shutil
import subprocess

import pytest

from helpers import ROOT
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
_COL = r"(\.|[\d,]+(?: \(\s*[\d.]+%\))?)"
_ROW = re.compile(rf"^\s*{_COL}\s+{_COL}\s+{_COL}\s+{_COL}(?:\s|$)")


def cg_annotate_lines(out_file, source):
    """{line: (Dr, D1mr, Dw, D1mw)} from cg_annotate's annotated source of ``source``."""
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
        if m and not row.lstrip().startswith("Dr"):
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
