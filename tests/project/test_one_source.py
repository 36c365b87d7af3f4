"""One source of truth across C and Python: what Python needs from C comes through the cdef or
the workload table, looked up by name, and workers return typed records only."""

import re
from pathlib import Path

import pytest

import pagelab
from pagelab import BadInput
from pagelab._native import ffi, lib
from pagelab.experiments import latency
from pagelab.machine import environment as _environment
from pagelab.native import worker as _worker
from pagelab.native import workloads as _workloads

ROOT = Path(__file__).resolve().parents[2]


def test_latency_sizes_are_the_c_formula():
    """Python's size list is what lat_sizes in C computes, duplicates dropped, any length."""
    assert latency.sizes(4, 64, 4) == [
        4,
        5,
        6,
        7,
        8,
        10,
        12,
        14,
        16,
        20,
        24,
        28,
        32,
        40,
        48,
        56,
        64,
    ]
    assert latency.sizes(1, 8, 8) == [1, 2, 3, 4, 5, 6, 7, 8]
    assert latency.sizes(0, 64, 4) == latency.sizes(4, 64, 0) == []
    many = latency.sizes(1, 1 << 24, 16)
    assert len(many) > latency.MAX_SIZES == lib.PL_OUT_MAX_REGIONS
    with pytest.raises(BadInput, match=f"{len(many)} working-set sizes"):
        pagelab.run("latency", min_kb=1, max_kb=1 << 24, points_per_octave=16, progress=None)


def test_a_choice_is_found_by_its_name():
    """latency's huge-page choice is the index of "huge" in the C table, wherever it sits."""
    assert pagelab.parameters("latency")["pages"].choices[latency.PAGES_HUGE] == "huge"


def test_capability_numbers_come_from_the_kernel_header():
    """The capability list is linux/capability.h's, by number, with no gaps."""
    caps = _environment.CAPABILITIES
    assert list(caps) == list(range(len(caps)))
    assert (caps[0], caps[21], caps[lib.CAP_PERFMON]) == ("CHOWN", "SYS_ADMIN", "PERFMON")


def test_no_hand_copies_of_c_constants():
    """No Python module sets a C workload's constant from a literal again."""
    copied = re.compile(
        r"^(LINE|CACHE_LINE|SLICES|WRITE_CHUNK|FILL_CHUNK|MAX_SIZES|PAGES_HUGE|PAGE|HUGE_PAGE|"
        r"VSYSCALL_BASE|WINDOW|SMALL_BLOCK|LARGE_BLOCK|ADDR_NO_RANDOMIZE|FS_NAMES|_CAPABILITIES)"
        r"\s*=(?!\s*(lib\.|workload\())",
        re.M,
    )
    found = [
        f"{p.relative_to(ROOT)}: {m[0]}"
        for p in (ROOT / "pylib/pagelab").rglob("*.py")
        for m in copied.finditer(p.read_text())
    ]
    assert found == []


def _raw(name, **params):
    args = {"name": name, "params": _workloads.validate(name, params), "events": None}
    return _worker.call("pagelab.native.workloads:execute", args, timeout=120)


def test_maps_worker_returns_typed_records():
    """maps' worker output is regions, values and typed facts: the map a text, the objects
    numbers, and no text side channel."""
    raw = _raw("maps", threads=2)
    assert set(raw) == {"regions", "values", "facts", "overflow"} and not raw["overflow"]
    process, objects = raw["facts"]["process"], raw["facts"]["object"]
    assert process["maps"].endswith("\n") and "[stack]" in process["maps"]
    assert isinstance(process["exe"], str) and isinstance(process["personality"], int)
    assert "thread 2 stack variable" in objects
    assert all(isinstance(a, int) and a > 0 for a in objects.values())


def test_ebizzy_sites_are_typed_records():
    """ebizzy's fault sites come back as numbered records: samples a number, where and module
    texts, busiest first."""
    raw = _raw("ebizzy", mode="mmap", records=20, rounds=1)
    sites = [f for label, f in raw["facts"].items() if label.startswith("site ")]
    if not sites:
        pytest.skip(f"no fault samples here: {raw['values']}")
    assert all(set(s) == {"samples", "where", "module"} for s in sites)
    assert all(isinstance(s["samples"], int) and isinstance(s["where"], str) for s in sites)
    assert [s["samples"] for s in sites] == sorted((s["samples"] for s in sites), reverse=True)


def test_a_text_fact_is_whole_or_absent():
    """A text fact that does not fit is dropped and flags overflow; the next that fits is kept."""
    out = ffi.new("struct pl_out *")
    big = ffi.new("char[]", b"x" * lib.PL_OUT_TEXT_MAX)
    lib.pl_out_text(out, b"l", b"big", b"%s", big)
    assert (out.nfacts, out.overflow) == (0, 1)
    lib.pl_out_text(out, b"l", b"small", b"%s", ffi.new("char[]", b"fits"))
    lib.pl_out_number(out, b"l", b"n", ffi.cast("uint64_t", 1 << 63))
    assert _workloads._facts(out) == {"l": {"small": "fits", "n": 1 << 63}}


GENERIC = {"pl", "sim", "max", "min", "default", "num", "n"}  # name words too common to match on


def _words(name):
    return {w for w in name.lower().split("_") if w and w not in GENERIC}


def _c_constants():
    """{macro: value} of every numeric #define in csrc (headers and sources alike)."""
    found = {}
    define = re.compile(r"^#define\s+([A-Z][A-Z0-9_]*)\s+([^/\n]+?)\s*(?:/\*.*)?$", re.M)
    for path in (ROOT / "csrc").rglob("*.[ch]"):
        for name, text in define.findall(path.read_text()):
            expr = re.sub(r"(?<=[0-9a-fA-F])[uUlL]+\b", "", text)  # 4096u, 1ull: suffixes
            if not re.fullmatch(r"[0-9a-fA-Fx()<>+*\s]+", expr) or (
                not expr[0].isdigit() and expr[0] != "("
            ):
                continue
            try:
                found[name] = int(eval(expr, {"__builtins__": {}}))  # digits and operators only
            except Exception:
                continue
    return found


def _python_literals(path):
    """(name, value) for every top-level NAME = <number or container of numbers> in a module."""
    import ast

    def numbers(node):
        try:
            value = ast.literal_eval(node)
        except ValueError:
            try:
                value = eval(compile(ast.Expression(node), "<expr>", "eval"), {"__builtins__": {}})
            except Exception:
                return []
        if isinstance(value, dict):
            value = list(value.values())
        values = value if isinstance(value, (tuple, list)) else [value]
        return [v for v in values if isinstance(v, int) and not isinstance(v, bool) and v > 1]

    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target = node.targets[0]
            if isinstance(target, ast.Name) and target.id.lstrip("_").isupper():
                for v in numbers(node.value):
                    yield target.id, v


def test_no_python_constant_repeats_a_c_constant():
    """No Python constant holds the value of a C macro of the same meaning (a name word in
    common): such a fact is read from C through the cdef instead. This is what caught a Python
    MAX_LINE beside sim.c's, and PAGE_SIZES beside pl_sim.h's page sizes."""
    c = _c_constants()
    copies = [
        f"{p.relative_to(ROOT)}: {name} = {v} repeats C's {macro}"
        for p in (ROOT / "pylib/pagelab").rglob("*.py")
        for name, v in _python_literals(p)
        for macro, cv in c.items()
        if cv == v and _words(name) & _words(macro)
    ]
    assert copies == []


def test_the_copy_check_sees_a_copy(tmp_path):
    """The two copies the layout issue found would fail the check above."""
    (tmp_path / "m.py").write_text('MAX_LINE = 1 << 30\nPAGE_SIZES = {"4k": 4096, "2m": 2 << 20}\n')
    got = dict(_python_literals(tmp_path / "m.py"))
    c = {"MAX_LINE": 1 << 30, "PL_SIM_PAGE_4K": 4096}
    assert got == {"MAX_LINE": 1 << 30, "PAGE_SIZES": 2 << 20}
    pairs = {
        (n, m)
        for n, v in _python_literals(tmp_path / "m.py")
        for m, cv in c.items()
        if v == cv and _words(n) & _words(m)
    }
    assert pairs == {("MAX_LINE", "MAX_LINE"), ("PAGE_SIZES", "PL_SIM_PAGE_4K")}
