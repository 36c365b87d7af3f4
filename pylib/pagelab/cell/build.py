"""Compiling a cell: the measured and the simulated shared objects, cached like %%cython's in
$XDG_CACHE_HOME/pagelab/cells (else ~/.cache), keyed by the source, the mode, the flags, the
compiler and its version, pagelab's version and headers. The compiler runs in a worker (build)."""

import contextlib
import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sysconfig
import tempfile
from pathlib import Path

from .._version import __version__
from ..core.errors import BadInput
from ..native import worker as _worker
from ..native.shipped import include_dir

HEADER = "pagelab_cell.h"
EVERY_HEADER = "pagelab_cell_every.h"  # the instrumentation's hooks and the libc wrappers
SOURCE_FILE = "cell.c"  # what is compiled: the header's include, #line, the source
MODES = ("every", "marked")
# The student's cell is GNU C (PL_KEEP uses __typeof__ and an asm barrier), built like a program
# would be but as a shared object; --no-undefined makes a missing function a link error here
# rather than a failed dlopen later; exit() is pagelab_cell.h's, which ends main() as a return
# does. -g changes no code: the simulated build's call sites map to lines with it, and the
# measured build's instructions do for cachegrind.
COMPILE = ["-std=gnu11", "-O2", "-g", "-Wall", "-fPIC"]
LINK = ["-shared", "-Wl,--no-undefined", "-Wl,--wrap=exit"]
# "every" is instrumented at compile time only (linking with -fsanitize=thread would pull in
# libtsan).
SIM_FLAGS = {"marked": ["-DPL_SIM"], "every": ["-fsanitize=thread", "-DPL_SIM_EVERY"]}
# The instrumented build must make the measured build's loads and stores, vector ones included.
# clang instruments after its vectoriser, so both builds vectorise alike; told to, it also
# reports the load of a read-modify-write (c[i] += x), which it otherwise leaves out. It reports
# no access wider than 16 bytes, so neither build vectorises strided (interleaved) accesses, which
# become one load of several vectors (a[7 * i] reads <28 x i32>). GCC instruments before its
# vectoriser and stops it, so with gcc the measured build goes without.
CLANG_BOTH = ["-mllvm", "-enable-interleaved-mem-accesses=0"]
CLANG_EVERY = ["-mllvm", "-tsan-instrument-read-before-write"]
GCC_MEASURED = ["-fno-tree-vectorize"]
GCC_WHY = (
    "gcc's instrumentation stops its vectoriser, so the measured build is made without it too "
    "and both make the same accesses (with clang, used where $CC is unset, both vectorise)"
)
_MARKED = re.compile(r"\bPL_(LOAD|STORE)\s*\(")
_COMMENTS = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)


def sim_mode(source):
    """The simulated build's default: "marked" when the cell writes PL_LOAD or PL_STORE (outside
    comments), else "every"."""
    return "marked" if _MARKED.search(_COMMENTS.sub("", source)) else "every"


def cache_dir():
    """Where built cells are kept: $XDG_CACHE_HOME/pagelab/cells, else ~/.cache/pagelab/cells."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "pagelab", "cells")


def cached_build(source, mode, force, name):
    """The builds of ``source``: the cache's, or compiled in a worker (the compiler's
    failures and limits stay there)."""
    entry, cc = cache_entry(source, mode, name)
    if not force and (entry / "build.json").exists():
        return _built(entry, json.loads((entry / "build.json").read_text()), cached=True)
    args = {"source": source, "mode": mode, "entry": str(entry), "cc": cc, "name": name}
    return _worker.call("pagelab.cell.build:build", args, what="C cell compiler")


def cache_entry(source, mode, name="cell"):
    """(the cache directory of this build, the compiler command): the key is the source, the
    mode, the name, the flags, the compiler and its version, pagelab's version and headers."""
    include = include_dir()
    cc = _compiler()
    version = _version(cc, Path(cache_dir()))
    headers = [(include / h).read_text() for h in (HEADER, EVERY_HEADER)]
    key = json.dumps(
        [source, mode, name, cc, version, __version__, headers, COMPILE, LINK, SIM_FLAGS]
        + [CLANG_BOTH, CLANG_EVERY, GCC_MEASURED]
    )
    return Path(cache_dir()) / hashlib.sha256(key.encode()).hexdigest()[:32], cc


def _compiler():
    """$CC, else clang (it instruments after its vectoriser: see CLANG_EVERY), else cc, else the
    compiler Python was built with (a conda environment's, which is on PATH there while `cc` may
    not be)."""
    for candidate in (os.environ.get("CC"), "clang", "cc", sysconfig.get_config_var("CC")):
        if candidate and shutil.which(shlex.split(candidate)[0]):
            return shlex.split(candidate)
    raise BadInput("no C compiler: %%c needs cc (gcc or clang) where the kernel runs")


def _version(cc, cache):
    """What ``cc --version`` prints, remembered in ``cache`` by the identity (path, size,
    modification time) of each word of ``cc`` that names a program: running clang costs about
    20 ms of CPU for loading libLLVM, on every cell. Reinstalling any of them runs it again."""
    ids = []
    for word in cc:
        if path := shutil.which(word):
            st = os.stat(path)
            ids.append([os.path.realpath(path), st.st_size, st.st_mtime_ns])
    key = json.dumps([cc, ids])
    memo = cache / "compilers.json"
    try:
        known = json.loads(memo.read_text())
    except (OSError, ValueError):
        known = {}
    if key not in known:
        known[key] = subprocess.run([*cc, "--version"], capture_output=True, text=True).stdout
        with contextlib.suppress(OSError):  # a read-only cache: run it again next time
            memo.parent.mkdir(parents=True, exist_ok=True)
            tmp = memo.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps(known))
            os.replace(tmp, memo)  # whole, for a cell started beside this one
    return known[key]


def describe(builds):
    """The lines of a cell's header that name the compiler and the flags of both builds."""
    b = builds["builds"]
    lines = [
        f"compiler: {b['compiler']}",
        f"measured build: {b['measured']}",
        f"simulated build: {b['simulated']}",
    ]
    return lines + ([f"why: {b['why']}"] if b["why"] else [])


# ---- inside the worker -------------------------------------------------------------------


def _run_cc(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise BadInput(_unsupported(p.stderr) or p.stderr.strip() or f"cc failed ({p.returncode})")
    return p.stderr.strip()


def _unsupported(stderr):
    """One line naming what the instrumented build cannot simulate, from a link error about a
    hook pagelab_cell_every.h does not define (e.g. 16-byte atomics)."""
    m = re.search(r"undefined reference to .(__tsan_\w+)", stderr)
    if not m:
        return None
    return (
        f"unsupported in a simulated cell: the compiler's instrumentation calls {m[1]}, which "
        "pagelab does not model; --sim marked simulates only PL_LOAD/PL_STORE, --no-sim none"
    )


def _wrapped(include, *headers):
    """The C library functions these headers wrap (their __wrap_ definitions)."""
    text = "".join((include / h).read_text() for h in headers)
    return list(dict.fromkeys(re.findall(r"__wrap_(\w+)\(", text)))


def _flags(clang, mode, include):
    """(the measured build's compiler flags, the simulated build's), for clang or gcc; the
    instrumented build keeps its calls to the wrapped memory functions (-fno-builtin)."""
    if mode == "marked":
        return COMPILE, COMPILE + SIM_FLAGS[mode]
    nobuiltin = [f"-fno-builtin-{f}" for f in _wrapped(include, EVERY_HEADER)]
    if not clang:
        return COMPILE + GCC_MEASURED, COMPILE + SIM_FLAGS[mode] + nobuiltin
    both = COMPILE + CLANG_BOTH
    return both, both + SIM_FLAGS[mode] + CLANG_EVERY + nobuiltin


def _commands(cc, flags, include, mode, work):
    """The compiler commands of both builds, with ``flags`` (_flags), in work/, as (variant,
    [commands])."""
    c, inc = str(work / SOURCE_FILE), ["-I", str(include)]
    measured = [[*cc, *flags[0], *LINK, *inc, "-o", str(work / "cell-measured.so"), c, "-lm"]]
    so = str(work / "cell-sim.so")
    if mode == "marked":
        return measured, [[*cc, *flags[1], *LINK, *inc, "-o", so, c, "-lm"]]
    obj = str(work / "cell-sim.o")
    wrap = "-Wl," + ",".join(f"--wrap={f}" for f in _wrapped(include, EVERY_HEADER))
    return measured, [
        [*cc, *flags[1], *inc, "-c", "-o", obj, c],
        [*cc, *LINK, wrap, "-o", so, obj, "-lm"],
    ]


def _unseen(work, include):
    """The library functions the instrumented cell calls whose memory is not simulated."""
    nm = shutil.which("nm")
    if not nm:
        return ["(nm was not found: the library calls could not be listed)"]
    out = subprocess.run([nm, "-u", str(work / "cell-sim.o")], capture_output=True, text=True)
    names = set()
    for line in out.stdout.splitlines():
        name = line.split()[-1].split("@")[0]
        if name.startswith(("__tsan_", "__real_", "_GLOBAL_", "__stack_chk")):
            continue
        names.add(re.sub(r"^__(\w+)_chk$", r"\1", name))  # _FORTIFY_SOURCE's checked calls
    return sorted(names - set(_wrapped(include, HEADER, EVERY_HEADER)))


def build(source, mode, entry, cc, name="cell"):
    """Compile the measured and the simulated shared objects into the cache directory
    ``entry`` with the compiler ``cc``; BadInput carries the compiler's errors at the cell's
    line numbers."""
    include = include_dir()
    entry = Path(entry)
    entry.parent.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=".build-", dir=entry.parent))
    try:
        # the include comes first, then #line, so the compiler numbers its messages as the cell's
        (work / SOURCE_FILE).write_text(f'#include "{HEADER}"\n#line 1 "{name}"\n{source}\n')
        version = _version(cc, entry.parent).partition("\n")[0].strip()
        clang = "clang" in version
        flags = _flags(clang, mode, include)
        first, sim = _commands(cc, flags, include, mode, work)
        # the measured build is compiled even for `pagelab sim c`: it gives the plain errors
        warnings = _run_cc(first[0])
        for cmd in sim:
            _run_cc(cmd)
        record = {
            "warnings": warnings,
            "unseen": _unseen(work, include) if mode == "every" else [],
            "builds": {
                "compiler": f"{shlex.join(cc)} ({version})",
                "measured": shlex.join(flags[0]),
                "simulated": shlex.join(flags[1]),
                "why": GCC_WHY if mode == "every" and not clang else None,
            },
        }
        (work / "build.json").write_text(json.dumps(record))
        shutil.rmtree(entry, ignore_errors=True)  # a forced rebuild replaces the old one
        # another process may have built the same cell meanwhile: theirs is as good
        with contextlib.suppress(OSError):
            work.rename(entry)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return _built(entry, record, cached=False)


def _built(entry, record, cached):
    return {
        "measured": str(entry / "cell-measured.so"),
        "sim": str(entry / "cell-sim.so"),
        **record,
        "cached": cached,
    }
