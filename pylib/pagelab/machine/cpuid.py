"""CPUID, the one reader: the running CPU's leaves, or a described machine's ``cpuid`` file.

The file holds one line per leaf and subleaf, ``LEAF SUBLEAF EAX EBX ECX EDX`` in hex (``#``
starts a comment). A leaf it does not hold reads as zeros, as a CPU answers for a leaf past its
highest, and as some hypervisors answer for leaves they mask (leaf 0x18 on some Xeon VMs). The
TLB decoders are C (csrc/sim/cpuid.c); this module feeds them whichever leaves are in use.
"""

import functools
import re

from .._native import ffi, lib
from ..core.errors import BadInput
from . import described as _described

FILE = "cpuid"
AMD_VENDORS = ("AuthenticAMD", "HygonGenuine")
AMD_L1, AMD_L2, INTEL_TLB = 0x80000005, 0x80000006, 0x18
INTEL_MAX_SUBLEAVES = 16  # more than any CPU has TLB kinds
_LINE = re.compile(r"\s*(?:0x)?([0-9a-fA-F]+)" + r"\s+(?:0x)?([0-9a-fA-F]+)" * 5 + r"\s*")


@functools.cache
def _described_leaves(path):
    text = _described.read_text(path, FILE) or ""
    leaves = {}
    for n, line in enumerate(text.splitlines(), 1):
        line = line.split("#", 1)[0]
        if not line.strip():
            continue
        m = _LINE.fullmatch(line)
        if not m:
            raise BadInput(f"{path}/{FILE}:{n}: not LEAF SUBLEAF EAX EBX ECX EDX in hex: {line!r}")
        leaf, sub, *regs = (int(g, 16) for g in m.groups())
        leaves[leaf, sub] = tuple(regs)
    return leaves


def leaf(number, subleaf=0, root="/"):
    """(EAX, EBX, ECX, EDX) of one leaf: zeros where the CPU, or the description, has none."""
    base = _described.resolve(root)
    if str(base) != "/":
        return _described_leaves(str(base)).get((number, subleaf), (0, 0, 0, 0))
    regs = ffi.new("uint32_t[4]")
    lib.pl_cpuid(number, subleaf, regs)  # -ENOSYS off x86: the zeros stand
    return tuple(regs)


def vendor(root="/"):
    """The 12-character vendor string of leaf 0 (GenuineIntel, AuthenticAMD ...), or ""."""
    _, b, c, d = leaf(0, 0, root)
    raw = b"".join(r.to_bytes(4, "little") for r in (b, d, c))
    return raw.rstrip(b"\0").decode("ascii", "replace")


def tlbs(page, root="/"):
    """{"dtlb": (entries, ways, leaf), "stlb": ...} for pages of ``page`` bytes (4 KiB or
    2 MiB), as far as CPUID reports them: AMD's leaves 0x80000005/6, else Intel's leaf 0x18."""
    dtlb, stlb = ffi.new("struct pl_cpuid_tlb *"), ffi.new("struct pl_cpuid_tlb *")
    if vendor(root) in AMD_VENDORS:
        r5 = ffi.new("uint32_t[4]", leaf(AMD_L1, 0, root))
        r6 = ffi.new("uint32_t[4]", leaf(AMD_L2, 0, root))
        rc = lib.pl_cpuid_decode_amd(page, r5, r6, dtlb, stlb)
    else:
        first = leaf(INTEL_TLB, 0, root)
        n = min(first[0] + 1, INTEL_MAX_SUBLEAVES) if any(first) else 0
        regs = [r for sub in range(n) for r in (first if sub == 0 else leaf(INTEL_TLB, sub, root))]
        rc = lib.pl_cpuid_decode_intel(page, ffi.new("uint32_t[]", regs or [0]), n, dtlb, stlb)
    if rc < 0:
        raise BadInput(f"page size {page} is not 4 KiB or 2 MiB")
    return {key: (t.entries, t.ways, t.leaf) for key, t in (("dtlb", dtlb), ("stlb", stlb))}


def source(root="/"):
    """Where CPUID came from: this CPU, or the described machine's file."""
    base = _described.resolve(root)
    return "this CPU" if str(base) == "/" else f"{base}/{FILE}"
