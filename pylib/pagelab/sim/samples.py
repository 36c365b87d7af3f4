"""Data shipped with the package, for machines that cannot make their own.

my_program.trace.gz: valgrind 3.19 lackey (`--tool=lackey --trace-mem=yes`) of data/my_program.c
built with `cc -O2` on x86-64 Debian 12; instruction records dropped, data records and
valgrind's own header lines kept. Chapter 12 uses it where valgrind is not installed.
"""

import functools
import gzip
import shutil
import tempfile
from pathlib import Path

_DATA = Path(__file__).resolve().parent / "data"


def sample_program():
    """The path of data/my_program.c, the C program the shipped trace was made from."""
    return _DATA / "my_program.c"


@functools.cache
def sample_trace():
    """The path of a plain-text copy of the shipped lackey trace of data/my_program.c (made
    once per process in a temporary directory; the simulator reads plain text)."""
    out = Path(tempfile.mkdtemp(prefix="pagelab-")) / "my_program.trace"
    with gzip.open(_DATA / "my_program.trace.gz", "rb") as src, out.open("wb") as dst:
        shutil.copyfileobj(src, dst)
    return out
