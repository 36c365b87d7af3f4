"""The cffi builder (API mode) for ``pagelab._native``.

Compiles every C file under csrc/ (except csrc/tools/, which holds standalone programs) into one
extension module exposing ``ffi`` and ``lib``. The declarations live in
csrc/include/pagelab_cdef.h; no C is kept in Python strings beyond the one include line.

Build switches (environment variables):
  PAGELAB_CFLAGS   extra compiler flags appended to the defaults, e.g. "-O0 -g" for debugging.
"""

import os
import shlex
from pathlib import Path

from cffi import FFI

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "csrc"
INCLUDE = CSRC / "include"
CDEF = INCLUDE / "pagelab_cdef.h"

if not CDEF.is_file():
    raise SystemExit(
        f"pagelab build: {CDEF} is missing; build from a full checkout or sdist (csrc/ is needed)"
    )


def _sources():
    tools = CSRC / "tools"
    # setuptools wants paths relative to the project root, where it runs the build
    return sorted(str(p.relative_to(ROOT)) for p in CSRC.rglob("*.c") if tools not in p.parents)


# STYLE.md's flags, as errors: the tree builds with zero warnings. cffi's generated glue is
# compiled with them too, which is why -Wmissing-prototypes stays in the compile test only
# (its PyInit__native has no prototype); csrc/ itself is checked with it. Python's own flags
# come first on an extension's compile line (sysconfig's CFLAGS, "-O3 -fwrapv" on CPython):
# -O2 overrides -O3, and -fno-wrapv undoes -fwrapv (signed overflow wraps), which changes how
# the workloads' loops compile. So the extension's C is the same machine code as the bench's
# standalone build of the same files (fidelity.same_code). -g0 undoes sysconfig's -g: the
# debug info would be 3/4 of the shipped module (PAGELAB_CFLAGS="-g" brings it back).
CFLAGS = ["-std=c11", "-O2", "-fno-wrapv", "-g0", "-Wall", "-Wextra", "-Wshadow", "-Werror"]
# Calls between csrc files (the simulator's slow path from every -DPL_SIM workload) bind inside
# the module, not through the PLT. The symbols stay exported: the fault profile names the
# workloads' functions with dladdr (so no hidden visibility), and the compiler keeps treating
# them as interposable (so no -fno-semantic-interposition, which would inline the ebizzy copy
# the profile points at into its caller).
LDFLAGS = ["-Wl,-Bsymbolic-functions"]

ffibuilder = FFI()
ffibuilder.cdef(CDEF.read_text())
ffibuilder.set_source(
    "pagelab._native",
    '#include "pagelab.h"',
    sources=_sources(),
    # the public headers by name, a component's private ones by path ("sim/pl_sim.h")
    include_dirs=[str(INCLUDE.relative_to(ROOT)), str(CSRC.relative_to(ROOT))],
    define_macros=[("_GNU_SOURCE", None)],
    extra_compile_args=[*CFLAGS, *shlex.split(os.environ.get("PAGELAB_CFLAGS", ""))],
    extra_link_args=LDFLAGS,
    libraries=["pthread", "m", "dl"],
)
