"""The simulator's L1 agrees with valgrind cachegrind's D1 on the same program and geometry."""

import shutil
import subprocess

import pytest

from helpers import CFLAGS
from pagelab import Simulator

# A transpose of a 256x256 int matrix, four times: the column-wise stores walk 1 KiB apart and
# pile into 4 of the 64 sets, so the phase has ~280,000 D1 misses, hundreds of times the
# program's start-up, and both tools see that same start-up anyway.
PROGRAM = r"""
#include <stdlib.h>
#define N 256
static int src[N][N], dst[N][N];
volatile int sink; /* keeps the result alive */
int main(int argc, char **argv)
{
    int reps = argc > 1 ? atoi(argv[1]) : 4;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            src[i][j] = i ^ j;
    for (int r = 0; r < reps; r++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++)
                dst[j][i] = src[i][j] + r;
    sink = dst[3][5];
    return 0;
}
"""
# D1 geometries (size, ways, line) compared: this machine's usual L1D, a small 2-way one with
# 32-byte lines, a direct-mapped one and a 4-way one with 128-byte lines.
GEOMETRIES = [(32768, 8, 64), (4096, 2, 32), (8192, 1, 64), (65536, 4, 128)]
OTHER = "32768,8,64"  # --I1 (not compared)
LL = "1048576,16,64"  # --LL (not compared)


def _no_aslr(cmd):
    """Prefix setarch -R so both runs see the same addresses."""
    return ["setarch", "-R", *cmd] if shutil.which("setarch") else cmd


def cachegrind_d1_misses(out_file):
    """D1mr + D1mw from a cachegrind.out file's events: and summary: lines."""
    events = summary = None
    for line in out_file.read_text().splitlines():
        if line.startswith("events:"):
            events = line.split()[1:]
        elif line.startswith("summary:"):
            summary = [int(v) for v in line.split()[1:]]
    counts = dict(zip(events, summary))
    return counts["D1mr"] + counts["D1mw"]


@pytest.fixture(scope="module")
def program(tmp_path_factory):
    """The transpose compiled at -O1 (its loops stay real loads and stores) and its lackey
    trace."""
    if shutil.which("valgrind") is None:
        pytest.skip("valgrind is not installed (`make setup` installs it when run as root)")
    d = tmp_path_factory.mktemp("cachegrind")
    src, exe, trace = d / "transpose.c", d / "transpose", d / "lackey.trace"
    src.write_text(PROGRAM)
    subprocess.run(["cc", *CFLAGS, "-O1", "-o", str(exe), str(src)], check=True)
    subprocess.run(
        _no_aslr(["valgrind", "--tool=lackey", "--trace-mem=yes", f"--log-file={trace}", str(exe)]),
        check=True,
        capture_output=True,
        timeout=120,
    )
    return exe, trace


@pytest.mark.slow
@pytest.mark.parametrize("geometry", GEOMETRIES, ids=lambda g: "{}:{}:{}".format(*g))
def test_l1_misses_agree_with_cachegrind_within_one_percent(program, geometry, tmp_path):
    """Replaying the lackey trace through pagelab's L1 gives cachegrind's D1 misses
    (D1mr + D1mw, same geometry, LRU, write-allocate) within 1%."""
    exe, trace = program
    cg_out = tmp_path / "cachegrind.out"
    subprocess.run(
        _no_aslr(
            [
                "valgrind",
                "--tool=cachegrind",
                "--cache-sim=yes",
                "--D1={},{},{}".format(*geometry),
                f"--I1={OTHER}",
                f"--LL={LL}",
                f"--cachegrind-out-file={cg_out}",
                str(exe),
            ]
        ),
        check=True,
        capture_output=True,
        timeout=120,
    )
    expected = cachegrind_d1_misses(cg_out)

    sim = Simulator({"l1": geometry, "l2": None, "llc": None, "dtlb": None, "stlb": None})
    sim.replay(trace)
    got = sim.stats()["L1D"].misses
    print(f"D1 {geometry}: cachegrind {expected}, pagelab {got} ({got / expected - 1:+.4%})")
    assert expected > 250_000  # the transpose really dominates
    assert abs(got - expected) <= 0.01 * expected
