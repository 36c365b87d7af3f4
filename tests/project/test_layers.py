"""The package's layout shows its architecture: sub-packages by responsibility, each importing only
from the layers below it, no import cycle, and only the package's face at its top; the same for
the C tree's #include arrows between its components."""

import ast
import re

import pagelab
from helpers import ROOT

PACKAGE = ROOT / "pylib" / "pagelab"
# The layers, lowest first: the one place the order is written (docs/architecture.md explains it).
LAYERS = (
    "core",
    "machine",
    "counters",
    "sim",
    "native",
    "results",
    "experiments",
    "cell",
    "jupyter",
    "cli",
)
# The package's face: __init__ (the public API), __main__, the version, the cffi builder and the
# module it builds. Every layer may import the built module and the version; the builder is for
# the build alone.
FACE = {"__init__", "__main__", "_version", "_ffi_build"}
EVERYONE = {"pagelab._native", "pagelab._version"}
# The public API the layout must keep: the sorted names' digest (the names themselves are written
# once, in pagelab/__init__.py's _EXPORTS); changing the API means changing this on purpose.
PUBLIC_COUNT, PUBLIC_DIGEST = 64, "e6bbbce2cc6f0f98"


def modules():
    """{dotted module name: path} of every module in the package."""
    out = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        out[name] = path
    return out


def imported(name, path, known):
    """The package's modules that module ``name`` imports, anywhere in it (functions too)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            targets = [f"{base}.{a.name}" for a in node.names]
            found |= {t if t in known else base for t in targets}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return {t for t in found if t in known and t != name}


def layer(name):
    parts = name.split(".")
    return LAYERS.index(parts[1]) if len(parts) > 2 or parts[-1] in LAYERS else None


def graph():
    known = modules()
    return {name: imported(name, path, known) for name, path in known.items()}


def test_every_module_lives_in_a_layer_and_the_top_holds_only_the_face():
    """Apart from the face, every module is in one of the sub-packages LAYERS names."""
    for name in modules():
        parts = name.split(".")
        if name == "pagelab" or (len(parts) == 2 and parts[1] in FACE):
            continue
        assert len(parts) >= 2 and parts[1] in LAYERS, f"{name} is not in a layer"
    top = {p.name for p in PACKAGE.iterdir() if p.suffix == ".py" or (p.is_dir() and p.name)}
    top -= {"__pycache__"} | {f"{m}.py" for m in FACE} | set(LAYERS)
    assert not {t for t in top if not t.endswith(".so")}, f"at the top of the package: {top}"


def test_no_import_points_up_a_layer():
    """A module imports only from its own layer or below (and the built module and version)."""
    up = []
    for name, targets in graph().items():
        mine = layer(name)
        for t in targets - EVERYONE:
            theirs = layer(t)
            if mine is None:  # the face: __init__ imports lazily, __main__ the CLI
                continue
            if theirs is None or theirs > mine:
                up.append(f"{name} -> {t}")
    assert not up, "imports pointing up a layer:\n" + "\n".join(sorted(up))


def cycles(g):
    """Every path in graph ``g`` ({node: its targets}) that comes back to a node on it."""
    state, found = {}, []

    def visit(n, path):
        state[n] = "open"
        for t in sorted(g[n]):
            if state.get(t) == "open":
                found.append(path + [t])
            elif t not in state:
                visit(t, path + [t])
        state[n] = "done"

    for n in sorted(g):
        if n not in state:
            visit(n, [n])
    return found


def test_there_are_no_import_cycles():
    """No module reaches itself through the modules it imports."""
    cycle = cycles(graph())
    assert not cycle, f"import cycles: {cycle}"


def test_the_checker_sees_an_upward_import(tmp_path):
    """The import reader resolves relative imports, so an upward one would be caught."""
    path = tmp_path / "x.py"
    path.write_text("from ..jupyter import live\nfrom ..core.errors import BadInput\n")
    known = {"pagelab.jupyter.live", "pagelab.core.errors", "pagelab.sim.x"}
    got = imported("pagelab.sim.x", path, known)
    assert got == {"pagelab.jupyter.live", "pagelab.core.errors"}
    assert layer("pagelab.jupyter.live") > layer("pagelab.sim.x")


def test_the_public_api_is_unchanged():
    """pagelab exports the same 64 names (their digest), each reachable, and lists them once."""
    import hashlib

    names = sorted(pagelab.__all__)
    assert len(names) == len(set(names)) == PUBLIC_COUNT
    assert hashlib.sha256(" ".join(names).encode()).hexdigest()[:16] == PUBLIC_DIGEST, names
    for name in names:
        assert getattr(pagelab, name) is not None, name


def test_no_shim_is_left_at_an_old_name():
    """No module of the old flat layout remains (pagelab._run, pagelab._sim, ...)."""
    old = {p.stem for p in PACKAGE.glob("_*.py")} - FACE
    assert not old, old
    assert [p.name for p in (PACKAGE / "experiments").glob("_*.py")] == ["__init__.py"]


def test_every_module_imports():
    """Every module of the package imports (a relative import the move left pointing at a
    layer's own folder would fail here, not in the one test that happens to use it)."""
    import importlib

    for name in sorted(modules()):
        if not name.endswith("__main__"):
            importlib.import_module(name)


def test_the_package_reaches_nothing_outside_itself():
    """No module of the installed package imports the build script, the checkout's bench/ or
    tests/, or finds the checkout by climbing above its own parent (the maintainer's bench is the
    checkout's `python -m bench`)."""
    outside = []
    for name, path in modules().items():
        if name == "pagelab._ffi_build":
            continue
        text = path.read_text()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            bad = [n for n in names if n.split(".")[0] in ("bench", "tests", "helpers")]
            bad += [a.name for a in getattr(node, "names", []) if a.name == "_ffi_build"]
            bad += [n for n in names if n.endswith("_ffi_build")]
            outside += [f"{name}: {n}" for n in bad]
        if "parents[3]" in text:
            outside.append(f"{name}: parents[3]")
    assert not outside, outside


# ---- the C tree ---------------------------------------------------------------------------------

CSRC = ROOT / "csrc"
# The C components, lowest first (csrc/<name>/, the headers of csrc/include/ placed by
# PUBLIC_HEADERS): a file includes only from its own component or below. csrc/tools/ holds
# standalone programs, outside the module.
C_LAYERS = ("student", "perf", "sim", "proc", "harness", "workloads", "cell", "face")
# csrc/include/: what the wheel ships (setup.py), by component: the student headers %%c compiles
# against and the cffi face.
PUBLIC_HEADERS = {
    "pagelab_cell.h": "student",
    "pagelab_cell_every.h": "student",
    "pagelab.h": "face",
    "pagelab_cdef.h": "face",
}
_INCLUDE = re.compile(r'^#include "([^"]+)"', re.M)


def c_files():
    return sorted(p for p in CSRC.rglob("*.[ch]") if p.relative_to(CSRC).parts[0] != "tools")


def c_component(path):
    rel = path.relative_to(CSRC)
    return PUBLIC_HEADERS[rel.name] if rel.parts[0] == "include" else rel.parts[0]


def c_graph():
    """{file: the files its quoted #includes name}, resolved as the build does: the including
    file's directory, then -Icsrc/include, then -Icsrc (a private header by its path)."""
    out = {}
    for path in c_files():
        found = set()
        for name in _INCLUDE.findall(path.read_text()):
            where = [
                d / name for d in (path.parent, CSRC / "include", CSRC) if (d / name).is_file()
            ]
            assert where, f'{path.relative_to(CSRC)}: #include "{name}" resolves nowhere'
            found.add(where[0])
        out[path] = found
    return out


def test_every_c_file_lives_in_a_component():
    """Every C file is in one of C_LAYERS's components, and csrc/include/ holds only the headers
    the wheel ships (PUBLIC_HEADERS: setup.py copies csrc/include/*.h and no other header)."""
    for path in c_files():
        rel = path.relative_to(CSRC)
        assert len(rel.parts) == 2, f"{rel} is loose at the top of csrc/"
        if rel.parts[0] == "include":
            assert rel.name in PUBLIC_HEADERS, f"{rel} is private: it belongs to its component"
        assert c_component(path) in C_LAYERS, f"{rel} is in no component"
    assert {p.name for p in (CSRC / "include").glob("*.h")} == set(PUBLIC_HEADERS)
    shipped = re.findall(r'"([^"]*\.h)"', (ROOT / "setup.py").read_text())
    assert shipped == ["include/*.h"], shipped


def test_no_include_points_up_a_component():
    """A C file includes only headers of its own component or of one below it."""
    up = []
    for path, targets in c_graph().items():
        for t in targets:
            if C_LAYERS.index(c_component(t)) > C_LAYERS.index(c_component(path)):
                up.append(f"{path.relative_to(CSRC)} -> {t.relative_to(CSRC)}")
    assert not up, "includes pointing up:\n" + "\n".join(sorted(up))


def test_there_are_no_include_cycles():
    """No C file reaches itself through the headers it includes."""
    cycle = cycles(c_graph())
    assert not cycle, f"include cycles: {cycle}"


def test_the_c_checker_sees_an_upward_include():
    """A header of a component included from one below it counts as an arrow up."""
    assert C_LAYERS.index(c_component(CSRC / "cell" / "pl_cell.h")) > C_LAYERS.index(
        c_component(CSRC / "sim" / "pl_sim.h")
    )
    assert c_component(CSRC / "include" / "pagelab.h") == C_LAYERS[-1]
