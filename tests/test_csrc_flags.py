"""Every C file in csrc/ compiles warning-free with the project's flags (STYLE.md)."""

import shutil
import subprocess

import pytest

from helpers import CFLAGS, ROOT

SOURCES = sorted((ROOT / "csrc").rglob("*.c"))


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
@pytest.mark.parametrize("src", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_c_file_compiles_without_warnings(src):
    """A real compile (-c: the optimiser's warnings run too), STYLE.md's flags, -Werror."""
    r = subprocess.run(
        ["cc", *CFLAGS, "-c", "-o", "/dev/null", "-I", ROOT / "csrc" / "include", src],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_the_pl_sim_hook_compiles_into_a_workload():
    """A kernel built with -DPL_SIM sees pl_sim_access through pl_access.h and compiles clean."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) on PATH")
    kernel = (
        '#include "pl_access.h"\n'
        "long PL_NAME(sum)(struct pl_sim *sim, long *a, int n);\n"
        "long PL_NAME(sum)(struct pl_sim *sim, long *a, int n)\n"
        "{\n    long s = 0;\n    for (int i = 0; i < n; i++) {\n"
        "        s += PL_LOAD(sim, &a[i]);\n        PL_STORE(sim, &a[i], s);\n    }\n"
        "    return s;\n}\n"
    )
    for define in ([], ["-DPL_SIM"]):
        r = subprocess.run(
            [
                "cc",
                *CFLAGS,
                *define,
                "-c",
                "-o",
                "/dev/null",
                "-x",
                "c",
                "-I",
                str(ROOT / "csrc" / "include"),
                "-",
            ],
            input=kernel,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr
