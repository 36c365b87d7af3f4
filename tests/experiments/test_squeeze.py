"""squeeze: the cgroup v2 sandbox is used only where it is ours to make, and says why not."""

import mmap
import os
import sys
import time

import pytest

import pagelab
from pagelab.experiments import squeeze as squeeze_module
from pagelab.native import worker as _worker


def fake_tree(tmp_path, controllers="cpu memory", subtree="memory", v2=True, own="/lab"):
    (tmp_path / "proc/self").mkdir(parents=True)
    kind = "cgroup2" if v2 else "tmpfs"
    (tmp_path / "proc/self/mounts").write_text(f"{kind} /sys/fs/cgroup {kind} rw 0 0\n")
    (tmp_path / "proc/self/cgroup").write_text(f"0::{own}\n" if v2 else "4:memory:/x\n")
    group = tmp_path / "sys/fs/cgroup" / own.lstrip("/")
    group.mkdir(parents=True)
    (group / "cgroup.controllers").write_text(controllers + "\n")
    (group / "cgroup.subtree_control").write_text(subtree + "\n")
    return group


def test_a_delegated_memory_controller_is_used(tmp_path):
    """cgroup v2 with memory enabled for our children and a writable group: that group."""
    group = fake_tree(tmp_path)
    assert pagelab.sandbox_parent(tmp_path) == (group, None)


@pytest.mark.parametrize(
    "kw, why",
    [
        ({"v2": False}, "no cgroup v2 hierarchy"),
        ({"controllers": "cpu io"}, "memory controller is not available"),
        ({"subtree": "cpu"}, "never changes a cgroup it did not create"),
    ],
)
def test_no_sandbox_without_a_delegated_memory_controller(tmp_path, kw, why):
    """v1 only, no memory controller, or memory not enabled for children: None and the reason."""
    fake_tree(tmp_path, **kw)
    parent, reason = pagelab.sandbox_parent(tmp_path)
    assert parent is None and why in reason


def user_manager(tmp_path, subtree="cpu memory pids", socket=True, uid=None):
    """A fake systemd user manager: its private socket and its cgroup's subtree_control."""
    uid = os.getuid() if uid is None else uid
    fake_tree(tmp_path)
    if socket:
        (tmp_path / f"run/user/{uid}/systemd").mkdir(parents=True)
        (tmp_path / f"run/user/{uid}/systemd/private").write_text("")
    manager = tmp_path / f"sys/fs/cgroup/user.slice/user-{uid}.slice/user@{uid}.service"
    manager.mkdir(parents=True)
    (manager / "cgroup.subtree_control").write_text(subtree + "\n")
    return {"XDG_RUNTIME_DIR": f"/run/user/{uid}"}


def test_a_user_manager_with_the_memory_controller_gives_a_scope(tmp_path):
    """systemd-run, a user manager's socket, and memory among its cgroup's subtree controllers:
    a transient user scope is possible."""
    environ = user_manager(tmp_path)
    got = squeeze_module.systemd_scope(tmp_path, environ, "/usr/bin/systemd-run")
    assert got == ("/usr/bin/systemd-run", None)


@pytest.mark.parametrize(
    "kw, environ, run, why",
    [
        ({}, None, None, "systemd-run is not installed"),
        ({"socket": False}, None, "/bin/systemd-run", "no systemd user manager"),
        ({}, {}, "/bin/systemd-run", "no systemd user manager"),
        ({"subtree": "cpu pids"}, None, "/bin/systemd-run", "holds no memory controller"),
    ],
)
def test_no_scope_without_a_user_manager_holding_memory(
    tmp_path, monkeypatch, kw, environ, run, why
):
    """No systemd-run on the PATH, no user manager, or a manager without the memory controller:
    no scope, and the reason."""
    default = user_manager(tmp_path, **kw)
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))  # where run is None, nothing is found
    found, reason = squeeze_module.systemd_scope(
        tmp_path, default if environ is None else environ, run
    )
    assert found is None and why in reason


def test_the_scene_runs_and_without_a_limit_takes_no_major_faults(tmp_path):
    """The scene that runs inside the sandbox, run here outside one: the victim reads its file
    three times and the competitor comes and goes; with no limit nothing is evicted, so no pass
    takes a major fault (the plumbing is real; only the pressure is missing)."""
    import json
    import subprocess
    import sys

    args = {"scratch": str(tmp_path), "file_mb": 8, "competitor_mb": 8, "join": None}
    p = subprocess.run(
        [sys.executable, "-I", str(squeeze_module.SCENE), json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode == 0, p.stderr
    report = json.loads(p.stdout)
    assert list(report["passes"]) == ["first read", "alone", "after the competitor"]
    assert all(counts["majflt"] == 0 for counts in report["passes"].values()), report
    assert report["competitor"] == {**report["competitor"], "started": True, "exit": 0}
    assert report["competitor"]["minflt"] >= (8 << 20) // mmap.PAGESIZE  # it touched its memory
    assert list(tmp_path.iterdir()) == []  # the victim's file had no name


def synthetic(alone=0, pressed=2000, peak=60 << 20, oom_kill=0, exit=0):
    """A report as the scene prints it, for judging the claims without a sandbox."""
    counts = {"minflt": 0, "majflt": 0, "inblock": 0, "oublock": 0, "nvcsw": 0, "nivcsw": 0}
    return {
        "how": "a child cgroup of our own",
        "report": {
            "cgroup": "/sys/fs/cgroup/lab/pagelab-squeeze-1",
            "memory.max": str(64 << 20),
            "passes": {
                "first read": dict(counts),
                "alone": {**counts, "majflt": alone},
                "after the competitor": {**counts, "majflt": pressed, "inblock": pressed * 8},
            },
            "stat": {"alone": {"file": 32 << 20}, "after": {"file": 24 << 20}},
            "events": {"max": 12, "oom": 0, "oom_kill": oom_kill},
            "peak": peak,
            "competitor": {"started": True, "exit": exit, "signal": None, "minflt": 10240},
        },
    }


@pytest.mark.parametrize(
    "kw, faults, bounded",
    [
        ({}, True, True),
        ({"alone": 5}, False, True),  # faults without the competitor: not its pressure
        ({"pressed": 0}, False, True),  # nothing came back from disk
        ({"peak": 65 << 20}, True, False),
        ({"oom_kill": 1, "exit": None}, True, False),
        ({"peak": None}, True, True),  # before Linux 5.19: no memory.peak, said so
    ],
)
def test_claims_are_judged_on_the_scene_report(kw, faults, bounded):
    """Major faults count only if the victim took none alone and some after the competitor;
    bounded means the peak within memory.max, no OOM kill and a competitor that exited."""
    params = {"file_mb": 32, "competitor_mb": 40, "limit_mb": 64}
    r = squeeze_module._result(params, synthetic(**kw), None)
    assert r.claim("squeeze-major-faults").holds is faults
    assert r.claim("squeeze-bounded").holds is bounded
    assert r["victim: after the competitor"]["majflt"].source == "rusage"


def test_this_machine_runs_the_sandbox_or_says_why():
    """squeeze either measures in a sandbox of its own (and removes it) or judges nothing, with
    the reason; nothing is left behind under this process's cgroup."""
    parent, reason = pagelab.sandbox_parent()
    before = set(os.listdir(parent)) if parent else set()
    r = pagelab.squeeze()
    if not r.measurements:
        print(f"sandbox not possible here: {r.claims[0].reason}")
        assert all(c.holds is None and c.reason for c in r.claims)
        assert parent is None and reason in r.claims[0].reason
        return
    if parent:
        assert set(os.listdir(parent)) == before
    assert r["victim: alone"]["majflt"].source == "rusage"
    assert r.claim("squeeze-major-faults").holds is True, r.claim("squeeze-major-faults")
    assert r.claim("squeeze-bounded").holds is True, r.claim("squeeze-bounded")


@pytest.mark.parametrize(
    "kw",
    [
        {"file_mb": 0},
        {"limit_mb": 8},
        {"competitor_mb": "8"},
        {"file_mb": 56},  # leaves no room beside it under the 64 MiB limit
        {"competitor_mb": 56},
        {"file_mb": 16, "competitor_mb": 16},  # both fit together: nothing is squeezed
    ],
)
def test_bad_sizes_are_bad_input(kw):
    """Sizes out of range, a process that would not fit the limit alone, sizes that do not
    squeeze, or non-integers: one BadInput."""
    with pytest.raises(pagelab.BadInput, match="squeeze"):
        pagelab.squeeze(**kw)


# A stand-in scene for _run_scene: it forks a child that writes its pid and both sleep, as the
# real scene's competitor outlives a stopped victim.
SLEEPING_SCENE = (
    "import os, sys, time\n"
    "if os.fork() == 0:\n"
    "    open(sys.argv[1], 'w').write(str(os.getpid()))\n"
    "time.sleep(60)\n"
)


def _pid_from(path):
    for _ in range(500):
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.01)
    raise AssertionError(f"the stand-in scene never wrote {path}")


def _gone(pid):
    """The process has exited (a zombie counts: it runs no more)."""
    for _ in range(300):
        try:
            with open(f"/proc/{pid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X"):
                    return True
        except FileNotFoundError:
            return True
        time.sleep(0.01)
    return False


def _run_stand_in(tmp_path, scene_timeout, call_timeout):
    pid_file = tmp_path / "child.pid"
    cmd = [sys.executable, "-c", SLEEPING_SCENE, str(pid_file)]
    args = {"cmd": cmd, "timeout": scene_timeout}
    return pid_file, lambda: _worker.call(
        "pagelab.experiments.squeeze:_run_scene", args, timeout=call_timeout
    )


def test_a_scene_past_its_timeout_is_stopped_with_what_it_started(tmp_path):
    """Past its own timeout the scene is killed by its worker, its competitor too, and the
    result says why."""
    pid_file, run = _run_stand_in(tmp_path, scene_timeout=3, call_timeout=60)
    got = run()
    assert got == {"error": "the scene ran longer than 3 s and was stopped"}
    assert _gone(_pid_from(pid_file))


def test_ending_the_worker_ends_the_scene_and_its_competitor(tmp_path):
    """When the worker is ended from outside (the caller's timeout, as an interrupt does), the
    scene's processes end with it: they share its process group, not a session of their own."""
    # 8 s: room for the worker and the scene to start on a loaded host
    pid_file, run = _run_stand_in(tmp_path, scene_timeout=60, call_timeout=8)
    with pytest.raises(_worker.WorkerTimeout):
        run()
    assert _gone(_pid_from(pid_file)), "the scene's child outlived its worker"
