"""The one parser for whole numbers and byte sizes, and the one byte-size formatter.

Every verb and function reads numbers through ``parse_int`` or ``parse_size``: a plain in-range
value, or BadInput with one line. Only ASCII digits count (``str.isdigit`` accepts '²' and '①',
which ``int`` then rejects), and the digit count is bounded well below Python's int-string limit.
"""

import re

from .errors import BadInput

# 2**64 has 20 decimal digits and 16 hex ones; anything longer is out of every range we use.
_DEC = re.compile(r"[+-]?[0-9]{1,20}")
_HEX = re.compile(r"0[xX][0-9a-fA-F]{1,16}")
_SIZE = re.compile(r"([0-9]{1,20})\s*([kKmMgGtT]?)(?:[iI]?[bB])?")
_SHIFTS = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}
_UNITS = (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10))


def quote(value):
    """The value as an error message quotes it: its repr, cut short if long."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _in_range(n, what, lo, hi):
    if (lo is not None and n < lo) or (hi is not None and n > hi):
        if hi is None:
            span = f">= {lo}"
        elif lo is None:
            span = f"<= {hi}"
        else:
            span = f"in {lo}..{hi}"
        raise BadInput(f"{what} must be {span}, got {quote(n)}")
    return n


def parse_int(value, what="value", lo=None, hi=None, *, hex=False):
    """A whole number from an int or a string of ASCII digits (with ``hex``: also 0x...),
    checked against ``lo``..``hi`` (inclusive; None: unbounded). BadInput otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _in_range(value, what, lo, hi)
    if isinstance(value, str):
        text = value.strip()
        if _DEC.fullmatch(text):
            return _in_range(int(text, 10), what, lo, hi)
        if hex and _HEX.fullmatch(text):
            return _in_range(int(text, 16), what, lo, hi)
    kind = "an integer" + (" (decimal or 0x hex)" if hex else "")
    raise BadInput(f"{what} must be {kind}, got {quote(value)}")


def parse_size(value, what="size", lo=None, hi=None):
    """Bytes from an int or a string like '64', '32K', '1M', '1MiB', '2g' (powers of 1024),
    checked against ``lo``..``hi``. BadInput otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return _in_range(value, what, lo, hi)
    m = _SIZE.fullmatch(value.strip()) if isinstance(value, str) else None
    if not m:
        raise BadInput(f"{what} {quote(value)} is not a size like 64, 32K or 1M")
    return _in_range(int(m[1]) << _SHIFTS[m[2].lower()], what, lo, hi)


def int_or_none(text):
    """A whole number read from a system file (/proc, /sys), or None if it holds anything else
    (or nothing: None)."""
    try:
        return parse_int(text)
    except BadInput:
        return None


def format_size(n):
    """Bytes for people: exact in the largest unit that divides them ('32 KiB', '1280 KiB'),
    else rounded to a tenth of the largest unit that fits ('1.1 GiB')."""
    n = round(n)  # a size computed as a float (a cache size / 2) is still a whole byte count
    for unit, shift in _UNITS:
        if n >= 1 << shift and n % (1 << shift) == 0 and n >> shift < 10_000:
            return f"{n >> shift} {unit}"
    for unit, shift in _UNITS:
        if n >= 1 << shift:
            return f"{n / (1 << shift):,.1f} {unit}"
    return f"{n} B"
