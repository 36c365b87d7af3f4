"""The script a guest of the kernel matrix runs (tests/kernels.py boots it; it is not a test).

`kernel_guest.py setup CONFIG` runs as the guest's root: it prepares the guest as the
configuration says (zram swap, the memory controller for the children of the root cgroup, the
scratch disk), then runs `kernel_guest.py run` as root and, through setpriv, as an unprivileged
user (side by side), then nbval on the configuration's chapters, and writes everything to
OUT/results.json. Where the configuration names chapters to record (.ci/record_chapters.py
--guest), it records them into OUT instead of the runs and nbval.
`kernel_guest.py run` runs the doctor, the experiments and a squeeze in one interpreter (under
TCG each interpreter's start costs seconds) through the same entry points as the command line,
then a squeeze interrupted while its scene runs, and prints one JSON document: per step its exit
status, its JSON output, a traceback if it raised, and its time.
"""

import contextlib
import faulthandler
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time
import traceback
from pathlib import Path

# Small but real runs (the sizes tests/system/test_profile_claims.py uses): under TCG every step is
# several times slower than on the host.
CLI = (
    ("doctor", ["doctor", "--json"]),
    ("vsyscall", ["run", "vsyscall", "--json", "--set", "calls=20000", "--set", "processes=2"]),
    (
        "first-touch",
        ["run", "first-touch", "--json", "--set", "size_mb=16", "--set", "threads=2"]
        + ["--set", "rounds=3"],
    ),
    ("mmap-modes", ["run", "mmap-modes", "--json", "--set", "size_mb=8"]),
    (
        "competition",
        ["run", "competition", "--json", "--set", "size_mb=8", "--set", "competitor_mb=16"]
        + ["--set", "seconds=1"],
    ),
)
RUN_LIMIT = 420  # s for one user's run; past it the run prints its stack and exits
SCRATCH = "/run/pagelab-scratch"  # the scratch disk's mount point (/run is the guest's tmpfs)
NOBODY = 65534
RECORD_LIMIT = 780  # s to record a chapter: within the host's limit for the whole guest


def _log(message):
    """A line on the guest's console, which the host keeps when the guest outlives its limit."""
    print(f"pagelab-guest {time.monotonic():.0f} s: {message}", file=sys.stderr, flush=True)


def _step(call):
    """Run ``call`` with stdout captured: (exit status, parsed JSON or None, traceback, seconds)."""
    out, start = io.StringIO(), time.monotonic()
    tb = None
    try:
        with contextlib.redirect_stdout(out):
            rc = call() or 0
    except BaseException:  # a traceback is what the matrix must report
        rc, tb = None, traceback.format_exc()
    try:
        doc = json.loads(out.getvalue())
    except ValueError:
        doc = None
    return {"rc": rc, "json": doc, "traceback": tb, "seconds": time.monotonic() - start}


def run():
    # a run that hangs says where, on stderr (the host reports its tail), and ends
    faulthandler.dump_traceback_later(RUN_LIMIT, exit=True)
    from pagelab import squeeze
    from pagelab.cli.main import main

    def squeezed():
        print(json.dumps(squeeze(file_mb=32, competitor_mb=40, limit_mb=64).to_dict()))
        return 0

    def interrupted():
        print(json.dumps(_interrupt_squeeze(squeeze)))
        return 0

    calls = [(name, lambda argv=argv: main(argv)) for name, argv in CLI]
    steps = {}
    for name, call in [*calls, ("squeeze", squeezed), ("squeeze-interrupted", interrupted)]:
        steps[name] = _step(call)
        _log(f"uid {os.getuid()}: {name} took {steps[name]['seconds']:.1f} s")
    print(json.dumps(steps))


def _interrupt_squeeze(squeeze):
    """A squeeze interrupted (SIGINT, as Jupyter's interrupt) once its scene and competitor are
    both in its cgroup: whether it raised KeyboardInterrupt, which of those processes still run
    a moment later, and whether the cgroup is still there."""
    from pagelab import sandbox_parent

    parent, _ = sandbox_parent()
    if parent is None:
        return {"sandboxed": False}
    procs_file = parent / f"pagelab-squeeze-{os.getpid()}" / "cgroup.procs"
    seen, done = [], threading.Event()

    def watch():
        while not done.wait(0.05):
            with contextlib.suppress(OSError, ValueError):
                if len(pids := [int(p) for p in procs_file.read_text().split()]) >= 2:
                    seen.extend(pids)
                    os.kill(os.getpid(), signal.SIGINT)
                    return

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        squeeze(file_mb=32, competitor_mb=40, limit_mb=64)
        raised = False
    except KeyboardInterrupt:
        raised = True
    finally:
        done.set()
        watcher.join()
    time.sleep(1)  # killed processes take a moment to go
    running = []
    for pid in seen:
        with contextlib.suppress(OSError), open(f"/proc/{pid}/stat") as f:
            if f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X"):
                running.append(pid)
    return {
        "sandboxed": True,
        "interrupted": raised,
        "processes": len(seen),
        "still_running": running,
        "cgroup_left": procs_file.parent.exists(),
    }


def _sh(*cmd):
    subprocess.run(cmd, check=True, capture_output=True, timeout=60)


def _prepare(cfg):
    """The guest's own setup; the host is not touched (this is the guest's kernel)."""
    if cfg["zram_mb"]:
        _sh("modprobe", "zram")
        Path("/sys/block/zram0/disksize").write_text(f"{cfg['zram_mb']}M")
        _sh("mkswap", "/dev/zram0")
        _sh("swapon", "/dev/zram0")
    if cfg["delegate_memory"]:
        Path("/sys/fs/cgroup/cgroup.subtree_control").write_text("+memory")
    # the scratch disk (an ext4 image the host made), so evicted file pages go to a real disk
    os.makedirs(SCRATCH, exist_ok=True)
    _sh("mount", "-t", "ext4", "/dev/vda", SCRATCH)
    os.chmod(SCRATCH, 0o1777)
    # and where chapters' own C keeps a file on disk (the host's /var/tmp is read-only here)
    _sh("mount", "--bind", SCRATCH, "/var/tmp")


def _start(user, python, home):
    """Start `kernel_guest.py run` as ``user`` (root or nobody)."""
    home.mkdir(exist_ok=True)
    env = {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": str(home),
        "XDG_CACHE_HOME": str(home / "cache"),
        "PAGELAB_SCRATCH": SCRATCH,
    }
    cmd = [python, "-I", __file__, "run"]
    if user != "root":
        os.chown(home, NOBODY, NOBODY)
        cmd = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", *cmd]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    return p, time.monotonic()


def _finish(p, start):
    """The run's JSON with its time, or why it gave none."""
    try:
        out, err = p.communicate(timeout=RUN_LIMIT + 60)
    except subprocess.TimeoutExpired:  # past even faulthandler's exit: kill it, keep its words
        p.kill()
        out, err = p.communicate()
    took = time.monotonic() - start
    try:
        return {"steps": json.loads(out.strip().splitlines()[-1]), "seconds": took}
    except (ValueError, IndexError):
        return {"error": f"exit {p.returncode}: {err.strip()[-2000:]}", "seconds": took}


def _nbval(python, chapters, home):
    """nbval on the chapters, as root: per chapter its exit status, the summary and time."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    env["PAGELAB_SCRATCH"] = SCRATCH
    out = {}
    for chapter in chapters:
        nb = next((root / "notebooks").glob(f"{chapter}-*.ipynb"))
        start = time.monotonic()
        p = subprocess.run(
            [python, "-m", "pytest", "-p", "no:cacheprovider", "-q", str(nb)]
            + ["--nbval-kernel-startup-timeout=300"],
            cwd=root,
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
        )
        tail = p.stdout.strip().splitlines()[-15:]
        out[nb.stem] = {"rc": p.returncode, "tail": tail, "seconds": time.monotonic() - start}
    return out


def _record(python, chapters, out, home):
    """.ci/record_chapters.py on the chapters, as root, writing into ``out``, what it says into
    OUT/record.log (the host shows its tail when a chapter was not recorded): its exit status."""
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "HOME": str(home), "XDG_CACHE_HOME": str(home / "cache")}
    env["PAGELAB_SCRATCH"] = SCRATCH
    with open(out / "record.log", "w") as log:
        p = subprocess.run(
            [python, str(root / ".ci" / "record_chapters.py"), "--out", str(out), *chapters],
            cwd=root,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=env,
            timeout=RECORD_LIMIT,
        )
    return {"rc": p.returncode}


def _runs(cfg, results, home):
    """Both users' runs, then nbval on the configuration's chapters, into ``results``."""
    results["network"] = sorted(os.listdir("/sys/class/net"))
    # both users at once: the guest has two vCPUs, and each run mostly waits on imports
    runs = {
        "root": _start("root", cfg["python"], home / "root"),
        "nobody": _start("nobody", cfg["nobody_python"], home / "nobody"),
    }
    results.update({user: _finish(*run) for user, run in runs.items()})
    _log("both runs finished")
    results["nbval"] = _nbval(cfg["python"], cfg["chapters"], home / "root")


def setup(cfg_path):
    faulthandler.enable()  # a fatal signal prints the stack on the console the host keeps
    cfg = json.loads(Path(cfg_path).read_text())
    out = Path(cfg["out"])
    start = time.monotonic()
    results = {"config": cfg["name"]}
    try:
        _prepare(cfg)
        results["setup_seconds"] = time.monotonic() - start
        _log(f"prepared in {results['setup_seconds']:.1f} s")
        home = Path("/run/pagelab-home")
        home.mkdir(exist_ok=True)
        if cfg["record"]:
            (home / "root").mkdir(exist_ok=True)
            results["record"] = _record(cfg["python"], cfg["record"], out, home / "root")
        else:
            _runs(cfg, results, home)
    except Exception:  # reported to the host, which fails the guest
        results["error"] = traceback.format_exc()
    results["seconds"] = time.monotonic() - start
    with open(out / "results.json", "w") as f:
        f.write(json.dumps(results, indent=1))
        f.flush()
        # 6.12 mounts the shared 9p directory without sync: flush before the guest powers off
        os.fsync(f.fileno())
    os.sync()


if __name__ == "__main__":
    if sys.argv[1] == "run":
        run()
    else:
        setup(sys.argv[2])
