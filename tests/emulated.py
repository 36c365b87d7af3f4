"""The emulated PMU (tests/emupmu/emupmu.c): built into a shared object for the tests, and the
described machines it counts on. pagelab takes it only when $PAGELAB_MACHINE and
$PAGELAB_EMULATED_PMU are both set, and chooses once per process, so code that counts on it
runs in a child process with ``environment()``."""

import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import CFLAGS, ROOT

SOURCE = ROOT / "tests" / "emupmu" / "emupmu.c"
DEVICES = "sys/bus/event_source/devices"


def build(out_dir):
    """Compile the emulator (with csrc/perf/events.c, whose event table it shares) into
    ``out_dir``/emupmu.so with the project's flags; returns its path."""
    so = Path(out_dir) / "emupmu.so"
    subprocess.run(
        [
            "cc",
            *CFLAGS,
            "-fPIC",
            "-shared",
            "-I",
            str(ROOT / "csrc" / "include"),
            "-I",
            str(ROOT / "csrc" / "perf"),
            "-o",
            str(so),
            str(SOURCE),
            str(ROOT / "csrc" / "perf" / "events.c"),
        ],
        check=True,
        capture_output=True,
        text=True,
    )
    return so


def write_machine(root, pmus, *, paranoid=2, watchdog=0, capeff=None, host_cpus=None):
    """A described machine under ``root`` for the emulator: ``pmus`` maps a core PMU's name to
    (type, cpus, its emulated-pmu line after the name); ``capeff`` (hex) writes
    proc/self/status; ``host_cpus`` the host-cpus pairs. Returns root."""
    root = Path(root)
    lines = []
    for name, (kind, cpus, config) in pmus.items():
        d = root / DEVICES / name
        d.mkdir(parents=True)
        (d / "type").write_text(f"{kind}\n")
        if cpus is not None:
            (d / "cpus").write_text(f"{cpus}\n")
        lines.append(f"{name} {config}\n")
    (root / DEVICES / "software").mkdir(parents=True, exist_ok=True)
    (root / DEVICES / "software" / "type").write_text("1\n")
    (root / "emulated-pmu").write_text("".join(lines))
    kernel = root / "proc" / "sys" / "kernel"
    kernel.mkdir(parents=True)
    (kernel / "perf_event_paranoid").write_text(f"{paranoid}\n")
    (kernel / "nmi_watchdog").write_text(f"{watchdog}\n")
    if capeff is not None:
        (root / "proc" / "self").mkdir(parents=True)
        (root / "proc" / "self" / "status").write_text(f"Name:\tpython\nCapEff:\t{capeff}\n")
    if host_cpus is not None:
        (root / "host-cpus").write_text(f"{host_cpus}\n")
    return root


def environment(so, machine):
    """os.environ with the described machine and the emulated PMU switched on."""
    return {**os.environ, "PAGELAB_MACHINE": str(machine), "PAGELAB_EMULATED_PMU": str(so)}


def run_python(code, env, *args):
    """Run ``code`` (with ``args`` in sys.argv[1:]) in a fresh interpreter with ``env``; the
    JSON it prints last."""
    r = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout.splitlines()[-1])
