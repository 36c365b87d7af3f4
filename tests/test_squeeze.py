"""squeeze: the cgroup v2 sandbox is used only where it is ours to make, and says why not."""

import os

import pytest

import pagelab


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


def test_this_machine_runs_the_sandbox_or_says_why():
    """squeeze either measures in a cgroup of its own (and removes it) or judges nothing, with
    the reason; nothing is left behind under this process's cgroup."""
    parent, reason = pagelab.sandbox_parent()
    before = set(os.listdir(parent)) if parent else set()
    r = pagelab.squeeze(file_mb=32, limit_mb=8, passes=2)
    if parent is None:
        print(f"sandbox not possible here: {reason}")
        assert r.measurements == [] and all(c.holds is None for c in r.claims)
        assert all(c.reason == reason for c in r.claims)
        return
    assert set(os.listdir(parent)) == before
    run = r["sandboxed run"]
    assert run["majflt"].source == "rusage" and run["oublock"].source == "rusage"
    assert r.claim("squeeze-major-faults").holds is True, r.claim("squeeze-major-faults")


@pytest.mark.parametrize(
    "kw",
    [
        {"file_mb": 0},
        {"limit_mb": 4},
        {"passes": 1},
        {"file_mb": 16, "limit_mb": 16},
        {"file_mb": "8"},
    ],
)
def test_bad_sizes_are_bad_input(kw):
    """Sizes out of range, a limit not below the file, or non-integers: one BadInput."""
    with pytest.raises(pagelab.BadInput, match="squeeze"):
        pagelab.squeeze(**kw)
