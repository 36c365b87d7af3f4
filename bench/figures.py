"""What every part of `python -m bench` shares: a figure's record (its value beside its goal, or
the reason it is missing) and the timing helpers, A B A B in turn."""

import resource
import statistics
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]  # the checkout: bench/, csrc/, notebooks/


def _figure(value, unit, meaning, command, goal=None, higher_is_better=True, reason=None, **extra):
    met = None
    if goal is not None and value is not None:
        met = value >= goal if higher_is_better else value <= goal
    d = {"value": value, "unit": unit, "source": "clock", "meaning": meaning, "command": command}
    if goal is not None:
        d["goal"] = goal
        d["better"] = "higher" if higher_is_better else "lower"
        d["met"] = met
    if value is None:
        d["reason"] = reason
    d.update(extra)
    return d


def _unavailable(unit, meaning, reason, command="python -m bench --json"):
    return _figure(None, unit, meaning, command, reason=reason)


def _child_cpu(cmd, **kw):
    """CPU seconds (user + system) of one run of cmd, which must succeed."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, **kw)
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _thread_cpu(fn):
    t0 = time.thread_time()
    fn()
    return time.thread_time() - t0


def _pairs(a, b, n):
    """Time a() and b() in turn, n times each: ([a seconds], [b seconds])."""
    ta, tb = [], []
    for _ in range(n):
        ta.append(a())
        tb.append(b())
    return ta, tb


def _ratio(num, den):
    return statistics.median(x / y for x, y in zip(num, den))


def _spread(num, den):
    """The pair-by-pair ratios' interquartile range: how far one pair could mislead."""
    q = statistics.quantiles([x / y for x, y in zip(num, den)], n=4)
    return q[2] - q[0]
