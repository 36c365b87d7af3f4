"""valgrind lackey traces: read once, front to back, parsed and simulated in C a slice of records
per call (so a pipe or FIFO works as a file does, and Ctrl-C is seen between slices).

Lean on purpose: cache-lab mode (sim/cachelab.py) imports this and the C core, nothing else."""

import errno
import os

from .._native import ffi, lib
from ..core.errors import BadInput

# Records per parser call: big enough that the Python loop costs nothing, small enough that
# Ctrl-C is seen within a few milliseconds.
CHUNK = 1 << 16


def open_trace(path):
    """The opened trace (freed with its object), or BadInput saying why it cannot be read."""
    if not isinstance(path, (str, bytes, os.PathLike)):
        raise BadInput(f"a trace is a file path, not {type(path).__name__}")
    out = ffi.new("struct pl_trace **")
    # EINTR: a signal ended the wait for a FIFO's writer; looping lets Python raise
    # KeyboardInterrupt for Ctrl-C, and waits on for any other signal
    while (rc := lib.pl_trace_open(os.fsencode(path), out)) == -errno.EINTR:
        pass
    if rc < 0:
        raise BadInput(f"cannot read trace {path}: {os.strerror(-rc)}")
    return ffi.gc(out[0], lib.pl_trace_close)


def records(path, t, call):
    """Call ``call()`` (a pl_trace_read or pl_trace_replay of t) until the trace ends; yield
    each positive count. Malformed lines and read errors raise BadInput."""
    while (n := call()) != 0:
        if n > 0:
            yield n
        elif n == -errno.EBADMSG:
            raise BadInput(f"{path}: line {t.line}: {ffi.string(t.err).decode()}")
        elif n != -errno.EINTR:  # EINTR: Python checks for Ctrl-C here, then reads on
            raise BadInput(f"cannot read trace {path}: {os.strerror(-n)}")


def replay(sim, path, ignore_size):
    """Parse and simulate a whole trace in one pass (sizes ignored: 1 byte each, if asked);
    the opened trace, whose counters say what it held."""
    t = open_trace(path)
    for _ in records(path, t, lambda: lib.pl_trace_replay(t, sim, CHUNK, ignore_size)):
        pass
    return t


def buffers():
    """Arrays for CHUNK records (addresses, sizes, ops), for pl_trace_read."""
    return ffi.new("uint64_t[]", CHUNK), ffi.new("uint32_t[]", CHUNK), ffi.new("uint8_t[]", CHUNK)
