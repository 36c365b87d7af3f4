"""The lab's own C, shown in the chapters: a whole file under csrc/ or one function of it, read
from the sources the extension was built from (never a copy pasted into a notebook)."""

import re
from dataclasses import dataclass

from ..core.errors import BadInput
from .shipped import csrc_dir


@dataclass(frozen=True)
class Source:
    """C source text and where it came from; shown as a C code block in notebooks."""

    path: str  # relative to csrc/
    first_line: int
    text: str

    def __str__(self):
        return self.text

    def _repr_markdown_(self):
        return f"`csrc/{self.path}`, from line {self.first_line}:\n\n```c\n{self.text}\n```"

    def _repr_pretty_(self, p, cycle):
        p.text(f"csrc/{self.path}:{self.first_line}\n{self.text}")


def source(path, name=None):
    """The C file ``path`` (relative to csrc/, e.g. "perf/counters.c"), or only the definition of
    the function or macro ``name`` in it, with the comment just above it."""
    root = csrc_dir()
    file = (root / str(path)).resolve()
    if root.resolve() not in file.parents or file.suffix not in (".c", ".h"):
        raise BadInput(f"{path!r} is not a C file under csrc/")
    if not file.is_file():
        raise BadInput(f"csrc/{path} does not exist")
    lines = file.read_text().splitlines()
    rel = str(file.relative_to(root.resolve()))
    if name is None:
        return Source(rel, 1, "\n".join(lines))
    start = _definition(lines, name)
    if start is None:
        raise BadInput(f"csrc/{rel} defines no function or macro named {name!r}")
    end = _end(lines, start)
    while start > 0 and re.match(r"\s*(/\*|\*|//)", lines[start - 1]):
        start -= 1  # the comment above the definition says why it is so
    return Source(rel, start + 1, "\n".join(lines[start : end + 1]))


def _definition(lines, name):
    word = re.compile(rf"(^|[\s*]){re.escape(name)}\(")
    for i, line in enumerate(lines):
        if line.startswith("#define ") and line.split()[1].split("(")[0] == name:
            return i
        if line[:1].strip() and not line.startswith(("#", "/", " ")) and word.search(line):
            # a definition, not a prototype: its body opens before any ';'
            rest = "\n".join(lines[i : i + 6])
            brace, semi = rest.find("{"), rest.find(";")
            if brace >= 0 and (semi == -1 or brace < semi):
                return i
    return None


def _end(lines, start):
    if lines[start].startswith("#define "):
        end = start
        while lines[end].endswith("\\"):
            end += 1
        return end
    return next(i for i in range(start, len(lines)) if lines[i] == "}")
