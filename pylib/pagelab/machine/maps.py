"""Parse /proc/PID/maps into typed regions, each classified by what it holds.

A maps line is ``start-end perms offset dev inode [path]`` (see proc_pid_maps(5)). The kind of
each region follows these rules, in order:

- ``[heap]`` is heap; ``[stack]`` (or ``[stack:TID]`` on old kernels) is stack; ``[vdso]`` is
  vdso; ``[vvar]`` and ``[vvar_vclock]`` are vvar; ``[vsyscall]`` is vsyscall.
- Other bracketed names (``[anon:NAME]``, ``[uprobes]`` ...) and mappings without a path are
  anon; so is ``/dev/zero (deleted)``, which is how shared anonymous memory shows up.
- The executable's own mappings (``executable``, else the lowest file-backed mapping that is not
  a library) are text when not writable (code and read-only data, as size(1) counts them) and
  data when writable; the anonymous writable mapping right after its data is its bss.
- A file whose name contains ``.so`` (libc.so.6, ld-linux-x86-64.so.2, Python extensions) is lib.
- Any other file-backed mapping is file.

A library's own bss looks exactly like an anonymous mapping that happens to sit next to it, so
maps alone cannot tell them apart: both are anon here.
"""

import re
from dataclasses import dataclass

from ..core.errors import BadInput
from ..core.numbers import format_size

KINDS = ("text", "data", "bss", "heap", "stack", "vdso", "vvar", "vsyscall", "anon", "file", "lib")
DELETED = " (deleted)"
_SPECIAL = {
    "[heap]": "heap",
    "[vdso]": "vdso",
    "[vvar]": "vvar",
    "[vvar_vclock]": "vvar",
    "[vsyscall]": "vsyscall",
}
_LINE = re.compile(
    r"([0-9a-fA-F]+)-([0-9a-fA-F]+) ([r-][w-][x-][ps]) ([0-9a-fA-F]+) "
    r"([0-9a-fA-F]+:[0-9a-fA-F]+) (\d+)(?: +(.*))?$"
)


@dataclass(frozen=True)
class Region:
    """One line of a memory map: [start, end) with its permissions, backing file and kind."""

    start: int
    end: int
    perms: str  # e.g. "r-xp": read, write, execute, then p(rivate) or s(hared)
    offset: int  # into the file, in bytes
    dev: str  # major:minor of the file's device, hex
    inode: int
    path: str  # "" for anonymous memory; the " (deleted)" suffix is moved to `deleted`
    kind: str
    deleted: bool = False

    @property
    def size(self):
        return self.end - self.start

    @property
    def name(self):
        """A short name for pictures: the file's base name, the [name], or the kind."""
        return self.path.rsplit("/", 1)[-1] if self.path else self.kind

    def __contains__(self, address):
        return self.start <= address < self.end

    def __str__(self):
        path = self.path + (DELETED if self.deleted else "")
        return (
            f"{self.start:012x}-{self.end:012x} {self.perms} {format_size(self.size):>9} "
            f"{self.kind:<8} {path}"
        ).rstrip()


def _fields(number, line):
    m = _LINE.match(line)
    if not m:
        raise BadInput(
            f"maps line {number} is not 'start-end perms offset dev inode [path]': {line[:80]!r}"
        )
    start, end = int(m[1], 16), int(m[2], 16)
    if end <= start:
        raise BadInput(f"maps line {number} ends before it starts: {line[:80]!r}")
    path = m[7] or ""
    deleted = path.endswith(DELETED)
    if deleted:
        path = path[: -len(DELETED)]
    return dict(
        start=start,
        end=end,
        perms=m[3],
        offset=int(m[4], 16),
        dev=m[5],
        inode=int(m[6]),
        path=path,
        deleted=deleted,
    )


def _is_lib(path):
    return ".so" in path.rsplit("/", 1)[-1]


def _kind(f, exe):
    path = f["path"]
    if path.startswith("["):
        if path.startswith("[stack"):
            return "stack"
        return _SPECIAL.get(path, "anon")
    if not path or (path == "/dev/zero" and f["deleted"]):
        return "anon"
    if path == exe:
        return "data" if f["perms"][1] == "w" else "text"
    return "lib" if _is_lib(path) else "file"


def parse_maps(text, executable=None):
    """The regions of a /proc/PID/maps text, in address order, each with its kind.

    ``executable`` is the program's path as the map shows it; by default it is the lowest
    file-backed mapping that is not a library. Blank lines are skipped; any other line that is
    not a maps line raises BadInput naming its line number.
    """
    if not isinstance(text, str):
        raise BadInput(f"parse_maps needs the text of a maps file, not {type(text).__name__}")
    fields = [_fields(i, line) for i, line in enumerate(text.splitlines(), start=1) if line.strip()]
    exe = executable
    if exe is None:
        exe = next(
            (
                f["path"]
                for f in sorted(fields, key=lambda f: f["start"])
                if f["path"].startswith("/") and f["inode"] and not _is_lib(f["path"])
            ),
            None,
        )
    regions = []
    for f in fields:
        kind = _kind(f, exe)
        prev = regions[-1] if regions else None
        if (
            kind == "anon"
            and not f["path"]
            and prev is not None
            and prev.kind == "data"
            and prev.end == f["start"]
            and f["perms"][:2] == "rw"
        ):
            kind = "bss"
        regions.append(Region(kind=kind, **f))
    return regions
