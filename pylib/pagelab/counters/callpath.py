"""Where in the kernel a command spends its time: perf record's call chains through one function.

The perf tool samples the command on the cpu-clock software event (a timer: it needs no PMU) with
call chains, and the kernel part of each chain that passes through the function asked about is
counted. That is how the vsyscall write-up's profile showed the fault path of an emulated call;
without a PMU the samples come from the timer instead of the cycles counter.
"""

import contextlib
import os
import shutil
import signal
import subprocess
import tempfile
from collections import Counter
from dataclasses import dataclass, field

from ..core.errors import BadInput
from ..machine import environment as env

EVENT = "cpu-clock"  # a software timer event: samples where no hardware PMU exists
FREQ = 4000  # samples per second: thousands in a second's run, little disturbance
TOP = 4  # chains shown: the emulation has a handful


@dataclass(frozen=True)
class CallPaths:
    """Samples of a command and the kernel chains that pass through ``through``."""

    command: list
    through: str
    samples: int = 0  # samples recorded
    kernel: int = 0  # samples with a kernel frame
    chains: list = field(default_factory=list)  # [(frames entry first, samples)], most first
    entries: dict = field(default_factory=dict)  # kernel samples by their chain's entry frame
    reason: str = ""  # why nothing could be sampled here ("" when it could)
    source: str = "sw"

    @property
    def passing(self):
        """Samples whose kernel chain passes through ``through``."""
        return sum(n for _, n in self.chains)

    def __str__(self):
        head = f"perf record -e {EVENT} -g: {' '.join(self.command)}"
        if self.reason:
            return f"{head}\n  no profile: {self.reason}"

        def pct(n):
            return f"{100 * n / self.samples:5.1f}%"

        lines = [
            f"{head}\n  {self.samples:,} samples ({self.source}: {EVENT}), {pct(self.kernel)} in "
            f"the kernel, {pct(self.passing)} through {self.through}:"
        ]
        lines += [f"  {pct(n)}  {' > '.join(chain)}" for chain, n in self.chains[:TOP]]
        entries = ", ".join(f"{name} {pct(n)}" for name, n in list(self.entries.items())[:TOP])
        lines.append(f"  entered the kernel through: {entries}")
        return "\n".join(lines)


def _frames(block):
    """The kernel functions of one sample's chain, entry first."""
    names = []
    for line in block.splitlines():
        parts = line.split()
        if len(parts) >= 3 and parts[-1] == "([kernel.kallsyms])":
            names.append(parts[1].split("+")[0])
    return names[::-1]  # perf prints the leaf first


def parse_script(text, through):
    """(samples, kernel samples, Counter of kernel chains through ``through``, Counter of the
    kernel chains' entry frames) from perf script output with the ip, sym and dso fields."""
    samples = kernel = 0
    chains, entries = Counter(), Counter()
    for block in text.split("\n\n"):
        if not block.strip():
            continue
        samples += 1
        frames = _frames(block)
        if frames:
            kernel += 1
            entries[frames[0]] += 1
        if through in frames:
            chains[tuple(frames)] += 1
    return samples, kernel, chains, entries


def _unsampled(paranoid):
    if os.geteuid() != 0 and paranoid is not None and paranoid > 1:
        return f"perf_event_paranoid is {paranoid} and this is not root: the kernel is excluded"
    return "perf recorded no kernel frames here"


def callpaths(command, through, timeout=60):
    """Sample ``command`` (a list) with perf record and count its kernel chains via ``through``."""
    if not isinstance(command, (list, tuple)) or not all(isinstance(a, str) for a in command):
        raise BadInput("callpaths needs a command as a non-empty list of strings")
    if not command or not isinstance(through, str) or not through:
        raise BadInput("callpaths needs a command and the name of a kernel function")
    if shutil.which(command[0]) is None:
        raise BadInput(f"command not found: {command[0]}")
    command = list(command)
    perf = shutil.which("perf")
    if perf is None:
        return CallPaths(command, through, reason="the perf tool is not installed (linux-perf)")
    with tempfile.TemporaryDirectory(prefix="pagelab-callpath-") as work:
        data = os.path.join(work, "perf.data")
        record = [perf, "record", "-q", "-e", EVENT, "-F", str(FREQ), "-g", "-o", data, "--"]
        # a session of its own: on a timeout perf and the command go together
        proc = subprocess.Popen(
            record + command,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        try:
            _, err = proc.communicate(timeout=timeout)
        except BaseException as e:  # a timeout or an interrupt: perf and the command go together
            with contextlib.suppress(ProcessLookupError):  # already gone
                os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            if not isinstance(e, subprocess.TimeoutExpired):
                raise
            return CallPaths(command, through, reason=f"perf record ran past {timeout} s")
        if not os.path.exists(data) or os.path.getsize(data) == 0:
            why = (err.strip().splitlines() or [f"exit status {proc.returncode}"])[-1]
            return CallPaths(command, through, reason=f"perf record failed: {why}")
        try:
            script = subprocess.run(
                [perf, "script", "-i", data, "-F", "ip,sym,dso"],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            return CallPaths(command, through, reason=f"perf script ran past {timeout} s")
    samples, kernel, chains, entries = parse_script(script.stdout, through)
    if not kernel:
        reason = _unsampled(env.perf_event_paranoid("/")) if samples else "perf got no samples"
        return CallPaths(command, through, samples, reason=reason)
    return CallPaths(
        command, through, samples, kernel, chains.most_common(), entries=dict(entries.most_common())
    )
