"""maps: the /proc/PID/maps parser on hand-written text, and the experiment on real processes."""

import json
import platform
import shutil
import sys
from pathlib import Path

import pytest

import pagelab
from helpers import run, run_blocked
from pagelab import BadInput, parse_maps
from pagelab.experiments import maps as exp

EXE = "/usr/bin/prog"
# One line of every kind, in address order, with the kernel's padding before the path.
SAMPLE = f"""\
55d373692000-55d373693000 r--p 00000000 fe:00 18500                      {EXE}
55d373693000-55d373694000 r-xp 00001000 fe:00 18500                      {EXE}
55d373695000-55d373696000 r--p 00002000 fe:00 18500                      {EXE}
55d373696000-55d373697000 rw-p 00003000 fe:00 18500                      {EXE}
55d373697000-55d373699000 rw-p 00000000 00:00 0 
55d381876000-55d381978000 rw-p 00000000 00:00 0                          [heap]
7ff4d3400000-7ff4d3500000 rw-p 00000000 00:00 0                          [anon:glibc malloc]
7ff4d3500000-7ff4d3600000 rw-s 00000000 00:01 1024                       /dev/zero (deleted)
7ff4d3600000-7ff4d3610000 rw-p 00000000 fe:00 9980498                    /tmp/my data file (deleted)
7ff4d3610000-7ff4d3620000 r--s 00000000 fe:00 325737                     /usr/share/a b/c.cache
7ff4d381e000-7ff4d3844000 r--p 00000000 fe:00 326269                     /usr/lib/libc.so.6
7ff4d3844000-7ff4d399a000 r-xp 00026000 fe:00 326269                     /usr/lib/libc.so.6
7ff4d39f1000-7ff4d39f3000 rw-p 001d3000 fe:00 326269                     /usr/lib/libc.so.6
7ff4d39f3000-7ff4d3a00000 rw-p 00000000 00:00 0 
7ff4d4157000-7ff4d415b000 r--p 00000000 00:00 0                          [vvar]
7ff4d415b000-7ff4d415d000 r--p 00000000 00:00 0                          [vvar_vclock]
7ff4d415d000-7ff4d415f000 r-xp 00000000 00:00 0                          [vdso]
7ffcc113f000-7ffcc1160000 rw-p 00000000 00:00 0                          [stack]
ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0                  [vsyscall]
"""
KINDS = [
    "text",
    "text",
    "text",
    "data",
    "bss",
    "heap",
    "anon",
    "anon",
    "file",
    "file",
    "lib",
    "lib",
    "lib",
    "anon",
    "vvar",
    "vvar",
    "vdso",
    "stack",
    "vsyscall",
]


def test_parser_classifies_every_kind():
    """Each line of a hand-written map gets the kind the documented rules give it."""
    regions = parse_maps(SAMPLE)
    assert [r.kind for r in regions] == KINDS
    assert set(KINDS) == set(pagelab.machine.maps.KINDS)  # the sample covers every kind


def test_parser_keeps_fields_exact():
    """Addresses, permissions, offset, device, inode and size come through unchanged."""
    libc = parse_maps(SAMPLE)[11]
    assert (libc.start, libc.end, libc.perms) == (0x7FF4D3844000, 0x7FF4D399A000, "r-xp")
    assert (libc.offset, libc.dev, libc.inode) == (0x26000, "fe:00", 326269)
    assert libc.size == 0x156000 and libc.name == "libc.so.6" and 0x7FF4D3844000 in libc
    assert "lib" in str(libc) and "/usr/lib/libc.so.6" in str(libc)


def test_parser_handles_spaces_and_deleted_files():
    """Paths keep their spaces; ' (deleted)' becomes a flag, not part of the path."""
    regions = parse_maps(SAMPLE)
    deleted = regions[8]
    assert deleted.path == "/tmp/my data file" and deleted.deleted and deleted.kind == "file"
    assert regions[9].path == "/usr/share/a b/c.cache" and not regions[9].deleted
    assert regions[7].path == "/dev/zero" and regions[7].kind == "anon"  # shared anonymous
    assert regions[4].path == "" and regions[4].inode == 0


def test_parser_finds_the_executable_or_takes_it():
    """The lowest non-library file is the program unless ``executable`` names another."""
    regions = parse_maps(SAMPLE, executable="/usr/share/a b/c.cache")
    assert regions[0].kind == "file" and regions[9].kind == "text"
    # a map that starts with a library still finds the program above it
    text = "\n".join(SAMPLE.splitlines()[10:13] + SAMPLE.splitlines()[:2])
    assert [r.kind for r in parse_maps(text)] == ["lib", "lib", "lib", "text", "text"]


def test_parser_skips_blank_lines_and_accepts_empty_text():
    """Blank lines are ignored and an empty map parses to no regions."""
    assert parse_maps("") == []
    assert len(parse_maps("\n" + SAMPLE + "\n\n")) == len(KINDS)


@pytest.mark.parametrize(
    "bad",
    [
        "55d373692000 r--p 00000000 fe:00 18500 /x",  # no end address
        "55d373692000-55d373693000 rwzp 00000000 fe:00 18500",  # bad permissions
        "55d373692000-55d373693000 r--p 0000000g fe:00 18500",  # bad offset
        "55d373692000-55d373693000 r--p 00000000 fe00 18500",  # bad device
        "55d373692000-55d373693000 r--p 00000000 fe:00 x",  # bad inode
        "55d373693000-55d373692000 r--p 00000000 fe:00 0",  # ends before it starts
        "hello world",
    ],
)
def test_parser_rejects_a_malformed_line_by_number(bad):
    """A malformed line is BadInput naming its line number (here line 3)."""
    lines = SAMPLE.splitlines()
    text = "\n".join(lines[:2] + [bad] + lines[2:])
    with pytest.raises(BadInput, match=r"maps line 3\b"):
        parse_maps(text)


def test_parser_rejects_non_text():
    """parse_maps of something that is not a string is BadInput, not a TypeError."""
    with pytest.raises(BadInput, match="text of a maps file"):
        parse_maps(b"00-01 r--p 0 0:0 0")


def test_parser_reads_this_process_map():
    """Every line of this test process's own map parses, and python's text is found."""
    text = Path("/proc/self/maps").read_text()
    regions = parse_maps(text)
    assert len(regions) == len(text.splitlines())
    assert any(r.kind == "text" and "python" in r.name for r in regions)
    assert [r.start for r in regions] == sorted(r.start for r in regions)


def _aslr_reason():
    if exp.randomize_va_space() != 2:
        return f"kernel.randomize_va_space is {exp.randomize_va_space()}, not 2"
    if int(Path("/proc/self/personality").read_text(), 16) & exp.ADDR_NO_RANDOMIZE:
        return "this test runs with ADDR_NO_RANDOMIZE (setarch -R)"
    return None


def test_run_claims_hold_and_data_is_labelled():
    """On this machine every maps claim holds, addresses come labelled from /proc, and the
    objects the worker placed (including two thread stacks) are all found."""
    if why := _aslr_reason():
        pytest.skip(f"ASLR claims cannot hold here: {why}")
    result = pagelab.run("maps", mapping_kb=64, threads=2, progress=None)
    for c in result.claims:
        if c.id == "vsyscall-fixed" and c.holds is None:
            assert "vsyscall=none" in c.reason or "x86-64" in c.reason
            continue
        assert c.holds is True, str(c)
    assert "22 of 22 objects" in result.claim("objects-classified").evidence  # 11 per run
    for m in result.measurements:
        assert all(r.source == "rusage" for r in m.metrics.values()), m.label
        assert m["moved"].value in (0, 1)
    if platform.machine() == "x86_64" and result.claim("vsyscall-fixed").holds:
        vs = result["vsyscall"]
        assert vs["base_run1"].value == vs["base_run2"].value == exp.VSYSCALL_BASE
        assert vs["moved"].value == 0
    assert result["heap"]["moved"].value == 1 and result["stack"]["moved"].value == 1
    regions = parse_maps(result.text)  # the first process's map, ready for students to read
    assert any(r.deleted and "pagelab map-" in r.path and r.kind == "file" for r in regions)
    assert sum(r.kind == "stack" for r in regions) == 1


def test_figure_draws_both_processes_with_sources():
    """The figure has one column per process, a trace per kind, and names its source."""
    result = pagelab.run("maps", threads=0, progress=None)
    fig = result.figure()
    kinds = {t.name for t in fig.data if t.type == "bar"}
    assert {"text", "heap", "stack", "lib", "vdso"} <= kinds
    assert list(fig.layout.xaxis.ticktext) == ["process 1", "process 2"]
    assert all("/proc/PID/maps" in h for t in fig.data if t.type == "bar" for h in t.customdata)


@pytest.mark.parametrize(
    "params, message",
    [
        ({"mapping_kb": 0}, "mapping_kb must be in 4..1048576"),
        ({"threads": 17}, "threads must be in 0..16"),
        ({"thread": 1}, "did you mean threads"),
        ({"mapping_kb": "lots"}, "must be an integer"),
    ],
)
def test_bad_parameters_are_rejected_before_running(params, message):
    """Unknown or out-of-range parameters are one-line BadInput errors; nothing runs."""
    with pytest.raises(BadInput, match=message):
        pagelab.run("maps", progress=None, **params)


def test_memory_is_declared_honestly():
    """The declared need covers both mappings, the malloc blocks and every thread stack."""
    resident, space = exp.memory({"mapping_kb": 1024, "threads": 4})
    assert resident >= 2 << 20 and space >= resident + 4 * exp.THREAD_STACK


def test_blocked_profile_still_evaluates_every_claim(tools_dir, pagelab_cmd):
    """maps needs no counters: under a seccomp filter denying perf_event_open the claims are
    evaluated exactly as before."""
    if why := _aslr_reason():
        pytest.skip(f"ASLR claims cannot hold here: {why}")
    doc = run_blocked(tools_dir, pagelab_cmd, "maps", mapping_kb=16)
    held = {c["id"]: c["holds"] for c in doc["claims"]}
    assert all(v is True for k, v in held.items() if k != "vsyscall-fixed"), held


def test_setarch_r_turns_the_aslr_claims_off(pagelab_cmd):
    """Under `setarch -R` nothing moves, and the ASLR claims say why instead of failing."""
    setarch = shutil.which("setarch")
    if not setarch:
        pytest.skip("setarch (util-linux) is not installed")
    p = run(
        [
            setarch,
            platform.machine(),
            "-R",
            *pagelab_cmd,
            "run",
            "maps",
            "--json",
            "--set",
            "threads=0",
        ]
    )
    if p.returncode != 0 and "personality" in p.stderr:
        pytest.skip(f"setarch -R is not permitted here: {p.stderr.strip()}")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    for c in doc["claims"]:
        if c["id"].startswith("aslr-"):
            assert c["holds"] is None and "ADDR_NO_RANDOMIZE" in c["reason"], c
    moved = {m["label"]: m["metrics"]["moved"]["value"] for m in doc["measurements"]}
    assert moved["heap"] == moved["stack"] == moved["vdso"] == 0  # placed by the kernel at exec
    assert next(c for c in doc["claims"] if c["id"] == "objects-classified")["holds"] is True


def test_randomize_va_space_reads_a_fake_tree(tmp_path):
    """The ASLR level is read from proc/sys/kernel/randomize_va_space under any root."""
    (tmp_path / "proc/sys/kernel").mkdir(parents=True)
    (tmp_path / "proc/sys/kernel/randomize_va_space").write_text("1\n")
    assert exp.randomize_va_space(tmp_path) == 1
    assert exp.randomize_va_space(tmp_path / "missing") is None


def test_elf_type_tells_pie_from_fixed(tmp_path):
    """ET_DYN is PIE, ET_EXEC is fixed-address; a non-ELF file is unknown."""
    assert exp.elf_type(sys.executable) in ("pie", "fixed")
    head = bytearray(b"\x7fELF\x02\x01\x01" + bytes(9))
    for e_type, kind in ((2, "fixed"), (3, "pie")):
        (tmp_path / "elf").write_bytes(bytes(head) + e_type.to_bytes(2, "little"))
        assert exp.elf_type(tmp_path / "elf") == kind
    (tmp_path / "text").write_text("#!/bin/sh\n")
    assert exp.elf_type(tmp_path / "text") is None


@pytest.mark.parametrize("e_type, holds", [(2, True), (3, False)])
def test_malloc_in_a_fixed_address_program_is_its_plt_entry(tmp_path, e_type, holds):
    """In a fixed-address (non-PIE) program, e.g. Debian's python3.11, a pointer to malloc is the
    program's own PLT entry: accepted there, and only there (a PIE program points into libc)."""
    prog = tmp_path / "prog"
    prog.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9) + e_type.to_bytes(2, "little"))
    maps = f"00400000-00401000 r-xp 00000000 fe:00 1                          {prog}\n"
    process = {"maps": maps, "exe": str(prog), "personality": 0, "truncated": 0}
    facts = {"process": process, "object": {"C library function": 0x400100}}
    claim = exp._objects([exp.snapshot(facts)])
    assert claim.holds is holds, claim
    assert ("PLT entry" in claim.evidence) is holds
