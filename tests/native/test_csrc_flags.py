"""Every C file in csrc/ compiles warning-free with the project's flags (STYLE.md)."""

import shutil
import subprocess

import pytest

from helpers import CFLAGS, ROOT

SOURCES = sorted((ROOT / "csrc").rglob("*.c"))
# as _ffi_build.py compiles: the public headers by name, a component's private ones by path
INCLUDES = ["-I", str(ROOT / "csrc" / "include"), "-I", str(ROOT / "csrc")]


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
@pytest.mark.parametrize("src", SOURCES, ids=[str(p.relative_to(ROOT)) for p in SOURCES])
def test_c_file_compiles_without_warnings(src):
    """A real compile (-c: the optimiser's warnings run too), STYLE.md's flags, -Werror."""
    r = subprocess.run(
        ["cc", *CFLAGS, "-c", "-o", "/dev/null", *INCLUDES, src],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


def test_the_pl_sim_hook_compiles_into_a_workload():
    """A kernel built with -DPL_SIM sees pl_sim_access through pl_access.h and compiles clean."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) on PATH")
    kernel = (
        '#include "harness/pl_access.h"\n'
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
                *INCLUDES,
                "-",
            ],
            input=kernel,
            capture_output=True,
            text=True,
        )
        assert r.returncode == 0, r.stderr


# Kernel names csrc/harness/pl_compat.h supplies when the C library's headers lack them.
COMPAT = ("MADV_PAGEOUT", "MAP_FIXED_NOREPLACE", "O_TMPFILE", "PR_SET_THP_DISABLE")
# Old headers, simulated: the system headers are read first and the newer names removed; their
# include guards keep the names from coming back, as if the headers never had them.
OLD_HEADERS = "#include <fcntl.h>\n#include <sys/mman.h>\n#include <sys/prctl.h>\n" + "".join(
    f"#undef {name}\n" for name in COMPAT
)
USERS = [p for p in SOURCES if any(name in p.read_text() for name in COMPAT)]


def _defined_in(src, extra):
    """For each COMPAT name src uses, the file holding its last #define (preprocessor output)."""
    r = subprocess.run(
        ["cc", *CFLAGS, *extra, "-E", "-dD", *INCLUDES, src],
        capture_output=True,
        text=True,
        check=True,
    )
    where, current = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("# ") and '"' in line:
            current = line.split('"')[1]
        elif line.startswith("#define "):
            name = line.split()[1]
            if name in COMPAT:
                where[name] = current
    return {name: where.get(name) for name in COMPAT if name in src.read_text()}


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
@pytest.mark.parametrize("src", USERS, ids=[str(p.relative_to(ROOT)) for p in USERS])
def test_newer_flags_compile_with_and_without_the_headers_defining_them(src, tmp_path):
    """With today's headers the flags come from the system; with headers that lack them the file
    still compiles warning-free and takes each flag from pl_compat.h."""
    old = tmp_path / "old_headers.h"
    old.write_text(OLD_HEADERS)
    system = _defined_in(src, [])
    assert system and all(f and not f.endswith("pl_compat.h") for f in system.values()), system
    fallback = _defined_in(src, ["-include", str(old)])
    assert all(f and f.endswith("pl_compat.h") for f in fallback.values()), fallback
    r = subprocess.run(
        [
            "cc",
            *CFLAGS,
            "-include",
            old,
            "-c",
            "-o",
            "/dev/null",
            *INCLUDES,
            src,
        ],
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc) on PATH")
def test_fallback_values_are_the_kernels():
    """Each fallback in pl_compat.h equals the value this machine's headers give the name."""
    probe = (
        "#include <fcntl.h>\n#include <sys/mman.h>\n#include <sys/prctl.h>\n"
        + "".join(f"enum {{ real_{n} = {n} }};\n#undef {n}\n" for n in COMPAT)
        + '#include "harness/pl_compat.h"\n'
        + "".join(f'_Static_assert({n} == real_{n}, "{n}");\n' for n in COMPAT)
    )
    r = subprocess.run(
        ["cc", *CFLAGS, "-fsyntax-only", "-x", "c", *INCLUDES, "-"],
        input=probe,
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0, r.stderr
