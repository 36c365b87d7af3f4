"""The scratch directory: where a workload that needs a file (maps, mmap-modes, competition)
makes it. Chosen here, by one rule, before the worker starts; the worker runs in it and the C
side creates its nameless file in the working directory (csrc/workloads/scratch.c).

The rule: the candidates are $PAGELAB_SCRATCH alone when it is set, else $TMPDIR (when set),
/var/tmp, /tmp and the working directory. The first writable candidate on a disk-backed
filesystem with room (DISK_SHARE times the file's size free) wins; else the first memory-only
one with room (claims about disk I/O then say why they were not evaluated); else BadInput.
"""

import os
import re
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import BadInput
from ..core.numbers import format_size

ENV = "PAGELAB_SCRATCH"  # a directory chosen by the user
# Filesystems that keep files in memory: no writeback and no disk, so no blocks in or out and
# nothing to evict clean pages to.
MEMORY_FS = frozenset({"tmpfs", "ramfs", "hugetlbfs", "devtmpfs"})
DISK_SHARE = 2  # a file may take at most 1/DISK_SHARE of the free space where it is made


@dataclass(frozen=True)
class Scratch:
    """The chosen directory, its filesystem type (None if unknown) and the memory-only
    candidates passed over for it ("DIR (TYPE)")."""

    path: str
    fs_type: str | None
    skipped: tuple = ()

    @property
    def disk_backed(self):
        return self.fs_type not in MEMORY_FS


def candidates(environ=None):
    """The directories tried, in order."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV):
        return [environ[ENV]]
    tmpdir = environ.get("TMPDIR")
    return list(dict.fromkeys([*([tmpdir] if tmpdir else []), "/var/tmp", "/tmp", os.getcwd()]))


def _unescape(field):
    """mountinfo escapes space, tab, newline and backslash as \\ooo octal."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m[1], 8)), field)


def filesystem_type(path, root="/"):
    """The type of the filesystem holding ``path`` (from proc/self/mountinfo), or None."""
    try:
        text = os.fsdecode((Path(root) / "proc/self/mountinfo").read_bytes())  # as paths are
    except OSError:
        return None
    real = os.path.realpath(path)
    best, kind = -1, None
    for line in text.splitlines():
        left, _, right = line.partition(" - ")
        fields = left.split()
        if len(fields) < 5 or not right:
            continue
        mount = _unescape(fields[4])
        inside = real == mount or real.startswith(mount.rstrip("/") + "/")
        if inside and len(mount) >= best:  # the deepest mount wins; a later one covers earlier
            best, kind = len(mount), right.split()[0]
    return kind


def choose(size, what, dirs=None):
    """The Scratch for a ``size``-byte file of experiment ``what``, by the rule above."""
    dirs = dirs or candidates()
    memory, short = [], []  # memory-only candidates with room; those without
    for d in dict.fromkeys(os.path.realpath(d) for d in dirs):  # a reader learns little from "."
        if not (os.path.isdir(d) and os.access(d, os.W_OK | os.X_OK)):
            continue
        st = os.statvfs(d)
        free = st.f_bavail * st.f_frsize
        kind = filesystem_type(d)
        if free < DISK_SHARE * size:
            short.append(f"{d} has {format_size(free)} free")
            continue
        if kind not in MEMORY_FS:
            return Scratch(d, kind, tuple(f"{m} ({k})" for m, k in memory))
        memory.append((d, kind))
    if memory:
        (d, kind), *others = memory
        return Scratch(d, kind, tuple(f"{m} ({k})" for m, k in others))
    if not short:
        raise BadInput(
            f"{what} found no writable directory for its file among {', '.join(dirs)} "
            f"(set {ENV} to one)"
        )
    raise BadInput(
        f"{what} may use at most 1/{DISK_SHARE} of the free disk space for its "
        f"{format_size(size)} file ({'; '.join(short)}); choose a smaller size or set {ENV}"
    )
