"""The real-kernel matrix: Debian's packaged kernels booted under QEMU by virtme-ng (`vng`), each
with the boot parameters and guest setup a chapter's story needs, the host's root filesystem
read-only, loopback networking only, 2 GiB of memory and a hard time limit.

tests/system/test_kernels.py boots them; tests/kernel_guest.py is what runs inside. `make setup` (as
root) installs the pieces: qemu-system-x86, busybox-static (vng's initramfs), Debian's kernels
(linux-image-amd64 and linux-image-6.12-amd64), and virtme-ng from PyPI (the test group).
"""

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path

GUEST = Path(__file__).with_name("kernel_guest.py")
MEMORY = "2G"  # the guest's whole memory: the host lends no more than this
CPUS = 2  # the most this machine gives a guest
SCRATCH_MB = 256  # the guest's ext4 scratch disk, a sparse file under the test's directory
# Boot (~45 s under TCG), the two users' runs and a chapter under nbval (guest a took 340 s in
# all under TCG on a loaded machine), with room to spare; a guest that outlives it is killed
# with its process group.
TIMEOUT = 900


@dataclass(frozen=True)
class Config:
    """One guest: a kernel (a glob under /boot), its boot parameters, what the guest sets up,
    and the chapters nbval runs in it (the ones whose story needs this kernel)."""

    name: str
    kernel: str
    append: str
    zram_mb: int = 0  # zram swap of this size
    delegate_memory: bool = False  # the memory controller enabled for the root cgroup's children
    chapters: tuple = ()
    what: str = ""
    # chapters whose shipped outputs are recorded in this guest (.ci/record_chapters.py --guest)
    records: tuple = ()


CONFIGS = (
    Config(
        "a",
        "vmlinuz-6.1.*-amd64",
        "vsyscall=emulate transparent_hugepage=always",
        zram_mb=256,
        delegate_memory=True,
        # ch04's story is the write-up's emulate mode, which no other guest or host here shows
        chapters=("04",),
        what="6.1, vsyscall=emulate, THP always, cgroup v2 memory delegated, zram swap",
        # their outputs need vsyscall=emulate (04), swap (07), a memory cgroup of the lab's (14)
        records=("04", "07", "14"),
    ),
    Config(
        "b",
        "vmlinuz-6.1.*-amd64",
        "vsyscall=none transparent_hugepage=never",
        what="6.1, vsyscall=none, THP never",
    ),
    Config("c", "vmlinuz-6.12.*-amd64", "", what="6.12, defaults"),
)

RECORDED = []  # (config, results) of the guests booted in this run, for the summary table


def _version(path):
    return [int(n) for n in re.findall(r"\d+", path.name)]


def kernel_image(config, boot="/boot"):
    """The newest /boot image matching the config's glob, or None."""
    images = sorted(Path(boot).glob(config.kernel), key=_version)
    return images[-1] if images else None


def missing():
    """Why no guest can boot here, or None."""
    if os.geteuid() != 0:
        return "booting Debian's kernels needs root (their images in /boot are root's only)"
    bindir = Path(sys.executable).parent
    for tool, how in (
        ("qemu-system-x86_64", "apt-get install qemu-system-x86 (make setup as root)"),
        ("busybox", "apt-get install busybox-static (make setup as root)"),
        ("mkfs.ext4", "apt-get install e2fsprogs"),
        ("setpriv", "apt-get install util-linux"),
    ):
        if not shutil.which(tool):
            return f"{tool} is not installed: {how}"
    if not (bindir / "vng").exists():
        return "virtme-ng (vng) is not installed in this environment: make setup"
    return None


def kvm_works():
    """Whether QEMU can start a KVM guest here: nested KVM may offer /dev/kvm and still fail on
    the first vCPU (QEMU aborts setting its MSRs), so ask QEMU itself, then quit."""
    if not os.access("/dev/kvm", os.R_OK | os.W_OK):
        return False
    cmd = ["qemu-system-x86_64", "-accel", "kvm", "-cpu", "host", "-machine", "q35"]
    cmd += ["-nodefaults", "-display", "none", "-S", "-monitor", "stdio"]
    try:
        p = subprocess.run(cmd, input="quit\n", capture_output=True, text=True, timeout=30)
    except subprocess.TimeoutExpired:
        return False
    return p.returncode == 0


def boot(config, image, nobody_python, out, kvm, record=()):
    """Boot ``config`` on ``image``, run the guest script, return its results (with the host's
    wall time for the whole guest). The guest and everything it started share one process
    group, killed on timeout or any other way out. With ``record`` (chapter paths), the guest
    records those chapters into ``out`` instead (.ci/record_chapters.py --guest)."""
    disk = out / "scratch.img"
    with open(disk, "wb") as f:
        f.truncate(SCRATCH_MB << 20)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(disk)], check=True, timeout=60)
    cfg = {**asdict(config), "out": str(out), "python": sys.executable}
    cfg["nobody_python"] = str(nobody_python)
    cfg["record"] = [str(p) for p in record]
    (out / "config.json").write_text(json.dumps(cfg))
    bindir = Path(sys.executable).parent
    cmd = [str(bindir / "vng"), "--run", str(image), "--memory", MEMORY, "--cpus", str(CPUS)]
    cmd += ["--rwdir", str(out), f"--qemu-opts=-drive file={disk},format=raw,if=virtio"]
    if config.append:
        cmd += ["--append", config.append]
    if not kvm:
        # TCG, with one host thread for both vCPUs: under multi-threaded TCG the guest's own
        # patching of kernel text (the static keys that a first perf event turns on in
        # __schedule) raced with the other vCPU, which oopsed on the int3 in 3 of 6 boots here
        # (a panic, or a hang)
        cmd += ["--disable-kvm", "--qemu-opts=-accel tcg,thread=single"]
    cmd += ["--exec", f"{sys.executable} {GUEST} setup {out / 'config.json'}"]
    env = {**os.environ, "PATH": f"{bindir}:{os.environ.get('PATH', '')}"}
    start = time.monotonic()
    p = subprocess.Popen(
        cmd,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
        env=env,
        start_new_session=True,  # vng, virtme-run and QEMU: one group to kill
    )
    try:
        console, _ = p.communicate(timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        console = None
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
    took = time.monotonic() - start
    results = out / "results.json"
    if console is None:
        console, _ = p.communicate()  # all it printed, from the start
        return {
            "error": f"the guest ran longer than {TIMEOUT} s and was killed; its console: "
            + console[-3000:],
            "wall": took,
        }
    if not results.exists():
        return {
            "error": f"the guest wrote no results (vng exit {p.returncode}); its console: "
            + console[-3000:],
            "wall": took,
        }
    return {**json.loads(results.read_text()), "wall": took}


def _cell(results, user):
    r = results.get(user) or {}
    if "steps" not in r:
        return "no run"
    held = judged = skipped = 0
    for step in r["steps"].values():
        for c in (step.get("json") or {}).get("claims", []):
            held += c["holds"] is True
            judged += c["holds"] is not None
            skipped += c["holds"] is None
    return f"{held}/{judged} hold, {skipped} n/e"


def table():
    """The matrix as text: one row a guest."""
    rows = [("guest", "kernel", "root", "nobody", "chapters", "wall")]
    for config, results in RECORDED:
        env = (((results.get("root") or {}).get("steps") or {}).get("doctor") or {}).get("json")
        kernel = (env or {}).get("environment", {}).get("kernel", "?")
        chapters = ", ".join(
            f"{name[:2]} {'ok' if c['rc'] == 0 else 'FAILED'}"
            for name, c in (results.get("nbval") or {}).items()
        )
        rows.append(
            (
                f"({config.name}) {config.what}",
                kernel,
                _cell(results, "root"),
                _cell(results, "nobody"),
                chapters or "-",
                f"{results['wall']:.0f} s",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(v.ljust(w) for v, w in zip(r, widths)) for r in rows]
    total = sum(r["wall"] for _, r in RECORDED)
    return "\n".join([*lines, f"total {total:.0f} s ({len(RECORDED)} guests)"])
