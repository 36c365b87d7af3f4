"""The scratch directory: one rule, in pagelab.native.scratch, for every workload that makes a
file."""

import os
from pathlib import Path

import pytest

import pagelab
from pagelab import BadInput
from pagelab.native.scratch import ENV, MEMORY_FS, candidates, choose, filesystem_type

ROOT = Path(__file__).resolve().parents[2]


def _shm():
    if filesystem_type("/dev/shm") != "tmpfs" or not os.access("/dev/shm", os.W_OK):
        pytest.skip("/dev/shm is not a writable tmpfs here")
    return "/dev/shm"


def test_candidates_follow_one_rule():
    """$PAGELAB_SCRATCH alone when set; else $TMPDIR, /var/tmp, /tmp and the working directory."""
    assert candidates({ENV: "/somewhere", "TMPDIR": "/t"}) == ["/somewhere"]
    assert candidates({"TMPDIR": "/t"}) == ["/t", "/var/tmp", "/tmp", os.getcwd()]
    assert candidates({})[:2] == ["/var/tmp", "/tmp"]


def test_filesystem_type_reads_mountinfo(tmp_path):
    """The deepest mount holding a path names its type; octal escapes in mount points work."""
    (tmp_path / "proc/self").mkdir(parents=True)
    (tmp_path / "proc/self/mountinfo").write_text(
        "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda rw\n"
        "30 22 0:26 / /dev/shm rw - tmpfs tmpfs rw\n"
        "31 22 0:27 / /mnt/my\\040disk rw - xfs /dev/vdb rw\n"
        "32 22 0:28 / /mnt/daten-\u00fc rw - btrfs /dev/vdc rw\n",
        encoding="utf-8",
    )
    assert filesystem_type("/dev/shm/x", root=tmp_path) == "tmpfs"
    assert filesystem_type("/mnt/my disk/f", root=tmp_path) == "xfs"
    assert filesystem_type("/mnt/other", root=tmp_path) == "ext4"
    assert filesystem_type("/mnt/daten-\u00fc/f", root=tmp_path) == "btrfs"
    assert filesystem_type("/", root=tmp_path / "nowhere") is None


def test_choose_prefers_disk_and_refuses_when_full(tmp_path):
    """A disk-backed candidate wins over tmpfs (which is then listed as skipped); tmpfs is the
    fallback; a file too big for the free space is BadInput; no writable candidate is BadInput
    naming the variable to set."""
    if filesystem_type(tmp_path) in MEMORY_FS:
        pytest.skip(f"{tmp_path} is on a memory filesystem")
    shm = _shm()
    s = choose(1 << 20, "test", [shm, str(tmp_path)])
    assert (s.path, s.disk_backed, s.skipped) == (str(tmp_path), True, ("/dev/shm (tmpfs)",))
    s = choose(1 << 20, "test", [shm])
    assert (s.path, s.fs_type, s.disk_backed, s.skipped) == (shm, "tmpfs", False, ())
    free = os.statvfs(tmp_path).f_bavail * os.statvfs(tmp_path).f_frsize
    with pytest.raises(BadInput, match="at most 1/2 of the free disk"):
        choose(free, "test", [str(tmp_path)])
    with pytest.raises(BadInput, match=ENV):
        choose(1 << 20, "test", [str(tmp_path / "missing")])


def test_maps_makes_its_file_in_the_scratch_directory(tmp_path, monkeypatch):
    """maps honours $PAGELAB_SCRATCH: its deleted temp file is mapped from there, and nothing is
    left behind."""
    monkeypatch.setenv(ENV, str(tmp_path))
    r = pagelab.run("maps", progress=None)
    files = [r for r in pagelab.parse_maps(r.text) if "pagelab map-" in r.path]
    assert files and all(f.path.startswith(f"{tmp_path}/") for f in files), files
    assert list(tmp_path.iterdir()) == []


def test_competition_uses_the_scratch_directory(tmp_path, monkeypatch):
    """competition honours $PAGELAB_SCRATCH too, and names the directory it used."""
    monkeypatch.setenv(ENV, str(tmp_path))
    r = pagelab.run("competition", size_mb=1, competitor_mb=1, progress=None)
    assert any(str(tmp_path) in n for n in r.notes), r.notes
    assert list(tmp_path.iterdir()) == []


def test_no_other_module_chooses_a_directory():
    """Only pagelab.native.scratch reads $PAGELAB_SCRATCH or $TMPDIR; no C workload does."""
    readers = [
        p.relative_to(ROOT).as_posix()
        for p in [*(ROOT / "pylib/pagelab").rglob("*.py"), *(ROOT / "csrc").rglob("*.c")]
        if "PAGELAB_SCRATCH" in p.read_text() or "TMPDIR" in p.read_text()
    ]
    assert readers == ["pylib/pagelab/native/scratch.py"]
