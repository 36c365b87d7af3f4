"""`.ci/wheel` (`pip wheel .`, then auditwheel) builds one cp310-abi3 manylinux wheel that works
from a fresh venv: compiled module, front end, chapters, C headers, `pagelab doctor`, an
experiment, `pagelab lab` on a copied chapter, and the metadata the Jupyter ecosystem reads
(`jupyter labextension list` naming the Python package); it installs and runs on every CPython
from 3.10 present here. An sdist made from a clean tree (`git archive HEAD`) installs without
Node.js.

The wheel is built once per session from a copy of the source tree without anything `make
setup` builds (no widget bundle, no lab extension), so the build itself must make them; only
labext/node_modules is borrowed from the checkout (a link) to spare a 400 MB `npm ci`.

To stay fast the fresh venv gets the wheel with --no-deps and borrows the dependencies from this
test's venv through a .pth file (and JupyterLab's application assets through JUPYTERLAB_DIR);
`pip check` then proves the wheel's declared dependencies are what it needs. Everything pagelab
itself provides comes from the wheel alone.
"""

import email.parser
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import time
import urllib.request
import zipfile
from pathlib import Path

import pytest

from helpers import ROOT, free_port, run, stop_group
from venvs import (
    JUPYTER_SCRIPTS,
    NODE_MODULES,
    NOT_SOURCE,
    borrow_packages,
    install_as_here,
    jupyter_lists,
    lab_extension_line,
    new_venv,
    pip,
    source_tree,
)

pytestmark = pytest.mark.slow

CHAPTERS = sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb"))


def _require(tool):
    if shutil.which(tool) is None:
        reason = f"{tool} is not on PATH: cannot build the wheel's C extension"
        if os.environ.get("CI") == "true":
            pytest.fail(f"{reason} (CI=true: the build tools must be there)")
        print(f"SKIP: {reason}")
        pytest.skip(reason)


@pytest.fixture(scope="session")
def source(tmp_path_factory):
    """A copy of the source tree as a fresh clone has it, plus labext's node modules."""
    _require("cc")
    _require("npm")
    if not (NODE_MODULES / ".package-lock.json").is_file():
        pytest.skip("labext/node_modules is not installed here (make setup installs it)")
    return source_tree(tmp_path_factory.mktemp("wheel") / "src")


@pytest.fixture(scope="session")
def built(source):
    """(wheel, build output) of `.ci/wheel` on that tree, built once for the session:
    `pip wheel .` (building the front ends as it goes), then `auditwheel repair`."""
    out = source.parent / "dist"
    p = run(
        [source / ".ci" / "wheel", out],
        cwd=source,
        env={**os.environ, "PYTHON": sys.executable},
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (wheel,) = out.glob("pagelab-*.whl")
    print(f"wheel {wheel.name}: {wheel.stat().st_size / 1024:.0f} KiB")
    return wheel, p.stdout + p.stderr


@pytest.fixture(scope="session")
def wheel(built):
    return built[0]


def test_build_without_npm_says_what_to_install(tmp_path):
    """From a tree without built front ends, a build on a machine without npm stops at once
    with one message naming what to install, instead of a wheel lacking the lab extension."""
    src = tmp_path / "src"
    shutil.copytree(ROOT, src, ignore=NOT_SOURCE)
    (tmp_path / "empty").mkdir()
    env = {**os.environ, "PATH": str(tmp_path / "empty")}  # no npm (nor anything else) on PATH
    p = run([sys.executable, "setup.py", "-q", "build_py"], cwd=src, env=env)
    assert p.returncode != 0
    message = p.stderr.strip().splitlines()[-1]
    assert message.startswith("pagelab build: ") and "npm is missing" in message, p.stderr
    assert "apt-get install nodejs npm" in message
    assert not (src / "pylib" / "pagelab" / "jupyter" / "static").exists()


@pytest.fixture(scope="session")
def fresh(wheel, tmp_path_factory):
    """A new venv holding the wheel; returns its bin directory."""
    bin_dir = new_venv(tmp_path_factory.mktemp("venv"))
    t = time.monotonic()
    p = pip(bin_dir, "install", "-q", "--no-deps", wheel)
    assert p.returncode == 0, p.stderr
    print(f"wheel installed in {time.monotonic() - t:.1f} s (--no-deps)")
    install_as_here(bin_dir, *JUPYTER_SCRIPTS)  # `jupyter ... list` from the venv itself
    borrow_packages(bin_dir)
    return bin_dir


def _env(tmp_path):
    """An environment that keeps the student's home and the lab's state inside tmp_path."""
    return {
        **os.environ,
        "HOME": str(tmp_path),
        "PAGELAB_HOME": str(tmp_path / "chapters"),
        "JUPYTERLAB_DIR": str(Path(sys.prefix) / "share" / "jupyter" / "lab"),
        "JUPYTER_CONFIG_DIR": str(tmp_path / ".jupyter"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
    }


def _installed(fresh, expr):
    p = run(
        [
            fresh / "python",
            "-c",
            f"import importlib, pagelab.native.shipped as s, pagelab; print({expr})",
        ]
    )
    assert p.returncode == 0, p.stderr
    return Path(p.stdout.strip())


def _lab_files(names):
    """The wheel's lab extension and server extension config, by their installed paths."""
    # (auditwheel's repaired wheel also lists each folder, ending in /)
    data = {n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n and n[-1] != "/"}
    ext = "share/jupyter/labextensions/pagelab/"
    return {n for n in data if n.startswith(ext)}, {n for n in data if n.startswith("etc/")}


def test_wheel_holds_the_extension_the_chapters_and_the_headers(wheel):
    """The wheel carries the compiled module, every chapter, the student header, the C sources the
    chapters show, the shipped trace, the widget bundle and its style sheet, and the lab
    extension with its style, all built by `pip wheel .` itself from a tree `make setup` never
    ran in."""
    names = set(zipfile.ZipFile(wheel).namelist())
    assert any(n.startswith("pagelab/_native") and n.endswith(".so") for n in names)
    assert {f"pagelab/native/chapters/{c}" for c in CHAPTERS} <= names
    assert {"pagelab/native/csrc/include/pagelab_cell.h", "pagelab/results/schema.json"} <= names
    # what the chapters show (pagelab.source) and the trace for machines without valgrind
    assert {
        "pagelab/native/csrc/perf/counters.c",
        "pagelab/native/csrc/workloads/mountain.c",
    } <= names
    assert "pagelab/sim/data/my_program.trace.gz" in names
    assert {
        "pagelab/jupyter/static/livecounters.js",
        "pagelab/jupyter/static/livecounters.css",
    } <= names
    # each header once, and only the public ones (csrc/include), no component's own
    headers = [n for n in names if n.endswith(".h")]
    assert len({Path(n).name for n in headers}) == len(headers), headers
    assert {Path(n).name for n in headers} == {
        h.name for h in (ROOT / "csrc" / "include").glob("*.h")
    }
    assert all(n.startswith("pagelab/native/csrc/include/") for n in headers), headers
    lab, config = _lab_files(names)
    assert "share/jupyter/labextensions/pagelab/package.json" in lab
    assert any(n.endswith("/schemas/pagelab/plugin.json") for n in lab)
    assert any("/static/remoteEntry." in n for n in lab)
    assert "share/jupyter/labextensions/pagelab/static/style.js" in lab
    assert config == {"etc/jupyter/jupyter_server_config.d/pagelab.json"}


def _metadata_file(z, name):
    name = next(n for n in z.namelist() if n.endswith(f".dist-info/{name}"))
    return email.parser.Parser().parsestr(z.read(name).decode())


def _metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        return _metadata_file(z, "METADATA")


def test_wheel_has_what_the_ecosystem_looks_for(wheel, built):
    """The wheel carries the MIT LICENSE, the JupyterLab classifiers the extension manager
    searches for, project URLs, labext/package.json's version, no exact pin and no test tools
    in its requirements, the lab extension once (shared data with install.json, not also under
    the package), and its build warns about no package setuptools would ignore."""
    meta = _metadata(wheel)
    assert meta["Version"] == json.loads((ROOT / "labext" / "package.json").read_text())["version"]
    assert meta["License-Expression"] == "MIT" and meta["License-File"] == "LICENSE"
    classifiers = set(meta.get_all("Classifier"))
    assert {
        "Framework :: Jupyter :: JupyterLab :: 4",
        "Framework :: Jupyter :: JupyterLab :: Extensions :: Prebuilt",
    } <= classifiers
    urls = dict(u.split(", ", 1) for u in meta.get_all("Project-URL"))
    assert {"Homepage", "Source", "Issues"} <= urls.keys()
    requires = [r.replace("_", "-") for r in meta.get_all("Requires-Dist")]
    assert not [r for r in requires if "==" in r.split(";")[0]], requires
    assert not [r for r in requires if "pytest" in r or "ruff" in r]
    core = {r.split(">")[0].split(";")[0].strip() for r in requires if "extra ==" not in r}
    assert "ipykernel" not in core and "jupyter-server" not in core and "jupyterlab" not in core
    assert any(r.startswith("jupyter-server") and 'extra == "lab"' in r for r in requires)
    names = zipfile.ZipFile(wheel).namelist()
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names)
    assert not [n for n in names if "labextension" in n.split(".data/")[0]]
    lab, _ = _lab_files(names)
    assert "share/jupyter/labextensions/pagelab/install.json" in lab
    _, log = built
    assert "running build_py" in log  # the backend's output is there to be checked
    assert "absent from the `packages` configuration" not in log


def test_wheel_is_abi3_manylinux_and_stripped(wheel, built):
    """The wheel a package index takes: tagged cp310-abi3 (the module is built against the
    limited API) and manylinux at the oldest glibc its symbols allow (what auditwheel said), with
    no debug info left in the module."""
    m = re.fullmatch(
        rf"pagelab-[^-]+-cp310-abi3-manylinux_(\d+)_(\d+)_{platform.machine()}\.whl", wheel.name
    )
    assert m, wheel.name
    _, log = built
    # auditwheel show: 'consistent with the following platform tag: "manylinux_2_N_ARCH"', then
    # 'This constrains the platform tag to "..."' when a symbol needs a newer glibc
    allowed = re.findall(r'platform\s+tag(?:\s+to|:)\s+"manylinux_(\d+)_(\d+)_', log)
    assert allowed and allowed[-1] == m.groups(), log[-2000:]
    print(f"manylinux tag: glibc {m[1]}.{m[2]} (the oldest this build allows)")
    with zipfile.ZipFile(wheel) as z:
        (module,) = [n for n in z.namelist() if n.startswith("pagelab/_native")]
        assert module == "pagelab/_native.abi3.so"
        so = Path(wheel).parent / "module.so"
        so.write_bytes(z.read(module))
        tags = _metadata_file(z, "WHEEL").get_all("Tag")
    assert tags == [f"cp310-abi3-manylinux_{m[1]}_{m[2]}_{platform.machine()}"], tags
    sections = run(["readelf", "-S", "-W", so]).stdout
    assert ".dynsym" in sections and ".debug_info" not in sections, sections
    print(f"module: {so.stat().st_size / 1024:.0f} KiB, no debug info")


# The Pythons the wheel must run on: requires-python's floor to the newest here.
PYTHONS = ["3.10", "3.11", "3.12", "3.13"]


def _interpreter(version):
    """A CPython ``version`` on this machine (pyenv's versions first, then PATH), or None."""
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    found = sorted(pyenv.glob(f"{version}.*/bin/python{version}"), reverse=True)
    found += [Path(w) for w in [shutil.which(f"python{version}")] if w]
    for python in found:
        p = run([python, "-c", "import sys, venv; print('%d.%d' % sys.version_info[:2])"])
        if p.returncode == 0 and p.stdout.strip() == version:
            return python
    return None


@pytest.mark.parametrize("version", PYTHONS)
def test_wheel_runs_on_each_python(wheel, version, tmp_path):
    """The one abi3 wheel installs with its declared dependencies into a clean venv of each
    CPython from 3.10 present here, and `pagelab doctor` and an experiment run from it."""
    python = _interpreter(version)
    if python is None:
        print(f"SKIP: no Python {version} on this machine (pyenv or PATH)")
        pytest.skip(f"no Python {version} here")
    subprocess.run([python, "-m", "venv", tmp_path / "venv"], check=True)
    bin_dir = tmp_path / "venv" / "bin"
    p = run([bin_dir / "python", "-m", "pip", "install", "-q", wheel], timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    env = _env(tmp_path)
    p = run([bin_dir / "pagelab", "doctor", "--json"], env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["profile"] in {"full", "software-only", "blocked"}
    p = run([bin_dir / "pagelab", "run", "maps", "--json"], env=env, timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["experiment"] == "maps" and doc["measurements"] and doc["claims"]
    print(f"ran on {python} (Python {version})")


def test_clean_venv_lists_the_extension_with_its_provenance(fresh, tmp_path):
    """In the clean venv `jupyter labextension list` shows pagelab enabled OK, installed by the
    pagelab Python package, and `jupyter server extension list` shows it enabled and valid."""
    env = {**_env(tmp_path), "PATH": f"{fresh}:/usr/bin:/bin"}
    labext, serverext = jupyter_lists(fresh, env)
    print(labext + serverext)
    version = json.loads((ROOT / "labext" / "package.json").read_text())["version"]
    assert lab_extension_line(labext) == f"pagelab v{version} enabled OK (python, pagelab)"
    assert str(fresh.parent / "share" / "jupyter" / "labextensions") in labext
    assert re.search(r"^\s*pagelab enabled$", serverext, re.M)
    assert re.search(rf"^\s*pagelab {re.escape(version)} OK$", serverext, re.M)


def _without_node(dest):
    """A directory of links to every program on PATH but Node.js and its package managers."""
    dest.mkdir()
    for folder in os.environ["PATH"].split(os.pathsep):
        for program in Path(folder).glob("*") if Path(folder).is_dir() else ():
            if program.name not in NODE and not (dest / program.name).exists():
                (dest / program.name).symlink_to(program)
    assert shutil.which("node", path=str(dest)) is None
    return dest


NODE = {"node", "nodejs", "npm", "npx", "corepack"}


def test_clean_tree_sdist_installs_without_node(tmp_path):
    """`git archive HEAD` then `python -m build --sdist` gives an sdist holding both built front
    ends (and labext/ without node_modules), and `pip install` of it, with no Node.js on PATH,
    installs a pagelab whose widget bundle and lab extension are there and whose module runs."""
    if not (ROOT / ".git").exists() or shutil.which("git") is None:
        reason = "not a git checkout (or no git): there is no HEAD to archive"
        print(f"SKIP: {reason}")
        pytest.skip(reason)
    _require("cc")
    _require("npm")
    if not (NODE_MODULES / ".package-lock.json").is_file():
        pytest.skip("labext/node_modules is not installed here (make setup installs it)")
    tree = tmp_path / "tree"
    tree.mkdir()
    archive = subprocess.run(["git", "archive", "HEAD"], cwd=ROOT, capture_output=True, check=True)
    with tarfile.open(fileobj=io.BytesIO(archive.stdout)) as tar:
        tar.extractall(tree, filter="tar")
    (tree / "labext" / "node_modules").symlink_to(NODE_MODULES)  # spares a 400 MB `npm ci`
    p = run([sys.executable, "-m", "build", "--sdist", "--outdir", tmp_path, tree], timeout=600)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (sdist,) = tmp_path.glob("pagelab-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for path in (
        "LICENSE",
        "labext/package.json",
        "labext/package-lock.json",
        "labext/src/labplugin.ts",
        "jupyter-config/jupyter_server_config.d/pagelab.json",
        "pylib/pagelab/jupyter/labextension/package.json",
        "pylib/pagelab/jupyter/static/livecounters.js",
    ):
        assert path in names, f"{path} is not in the sdist"
    assert not any(n.startswith(("labext/node_modules", "labext/lib/")) for n in names)
    bin_dir = new_venv(tmp_path / "venv")
    borrow_packages(bin_dir)  # setuptools and cffi for the build, the runtime dependencies
    env = {**os.environ, "PATH": str(_without_node(tmp_path / "bin"))}
    p = run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            bin_dir / "python",
            "install",
            "--no-deps",
            "--no-build-isolation",
            sdist,
        ],
        env=env,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    prefix = bin_dir.parent
    assert (prefix / "share/jupyter/labextensions/pagelab/package.json").is_file()
    check = (
        "import pagelab._native as n, pagelab.jupyter.live as live; "
        "assert live.BUNDLE.is_file(); print(n.ffi.string(n.lib.pl_event_table[0].name).decode())"
    )
    p = run([bin_dir / "python", "-c", check], env=env)
    assert p.returncode == 0 and p.stdout.strip(), p.stderr


def test_fresh_venv_has_what_the_wheel_declares(fresh):
    """pip check: the wheel's declared dependencies are installed and consistent."""
    p = run([sys.executable, "-m", "pip", "--python", fresh / "python", "check"])
    assert p.returncode == 0, p.stdout + p.stderr


def test_installed_module_is_the_wheels_and_works(fresh):
    """The compiled module is imported from the fresh venv, not the checkout, and answers."""
    p = run(
        [
            fresh / "python",
            "-c",
            "import pagelab, pagelab._native as n; print(pagelab.__file__); "
            "print(n.ffi.string(n.lib.pl_event_table[0].name).decode())",
        ]
    )
    assert p.returncode == 0, p.stderr
    where, event = p.stdout.split()
    assert Path(where).is_relative_to(fresh.parent) and event


def test_installed_front_ends_are_the_wheels(wheel, fresh):
    """The widget bundle and the lab extension (the kernel panel) are installed byte for byte
    where pagelab and JupyterLab look, with the config that enables the server extension."""
    prefix, installed = fresh.parent, 0
    static = _installed(fresh, "importlib.import_module('pagelab.jupyter.live').BUNDLE.parent")
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            if name.endswith("/"):
                continue  # a folder
            if name.startswith("pagelab/jupyter/static/"):
                target = static / name.removeprefix("pagelab/jupyter/static/")
            elif ".data/data/" in name:
                target = prefix / name.split(".data/data/", 1)[1]
            else:
                continue
            assert target.read_bytes() == z.read(name), name
            installed += 1
    ext = prefix / "share" / "jupyter" / "labextensions" / "pagelab" / "package.json"
    assert json.loads(ext.read_text())["name"] == "pagelab" and installed >= 5
    config = prefix / "etc" / "jupyter" / "jupyter_server_config.d" / "pagelab.json"
    assert json.loads(config.read_text())["ServerApp"]["jpserver_extensions"] == {"pagelab": True}


def test_installed_chapters_and_student_header(fresh, tmp_path):
    """The chapters ship and can show the C; a student program including pagelab_cell.h (what
    %%c includes) compiles with include_dir()."""
    chapters = _installed(fresh, "s.chapters_dir()")
    assert sorted(p.name for p in chapters.glob("*.ipynb")) == CHAPTERS
    include = _installed(fresh, "s.include_dir()")
    assert include.is_relative_to(fresh.parent)
    shown = _installed(fresh, "pagelab.source('perf/counters.c', 'open_one').path")
    assert str(shown) == "perf/counters.c"
    student = tmp_path / "student.c"
    student.write_text(
        '#include "pagelab_cell.h"\nint main(void) { PL_REGION_BEGIN(); PL_REGION_END(); '
        "return 0; }\n"
    )
    p = run(["cc", "-std=gnu11", "-fsyntax-only", "-I", include, student])
    assert p.returncode == 0, p.stderr


def test_installed_doctor_names_a_profile(fresh, tmp_path):
    """`pagelab doctor --json` from the fresh venv names one of the three profiles, in a document
    the shipped JSON Schema accepts."""
    p = run([fresh / "pagelab", "doctor", "--json"], env=_env(tmp_path))
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["profile"] in {"full", "software-only", "blocked"}
    check = (
        "import jsonschema, json, sys, pagelab; "
        "jsonschema.validate(json.load(sys.stdin), pagelab.json_schema())"
    )
    p = run([fresh / "python", "-c", check], input=p.stdout)
    assert p.returncode == 0, p.stderr


def test_installed_experiment_runs_in_workers(fresh, tmp_path):
    """An experiment runs from the fresh venv: its workers start from the installed package."""
    p = run([fresh / "pagelab", "run", "vsyscall", "--json"], env=_env(tmp_path), timeout=300)
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)
    assert doc["experiment"] == "vsyscall" and doc["claims"] and doc["measurements"]


def test_installed_lab_serves_a_copied_chapter(fresh, tmp_path):
    """`pagelab lab --no-browser` copies the chapters to PAGELAB_HOME and serves chapter 00 from
    there (HTTP 200 on the notebook), then stops on SIGTERM."""
    env, port, first = _env(tmp_path), free_port(), CHAPTERS[0]
    proc = subprocess.Popen(
        [
            fresh / "pagelab",
            "lab",
            "--no-browser",
            "--ip=127.0.0.1",
            f"--port={port}",
            "--IdentityProvider.token=",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        start_new_session=True,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline, model, page = time.monotonic() + 120, None, None
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with urllib.request.urlopen(f"{base}/api/contents/{first}", timeout=5) as r:
                    model = json.load(r)
                with urllib.request.urlopen(f"{base}/lab/tree/{first}", timeout=5) as r:
                    page = r.status
                break
            except OSError:
                time.sleep(0.5)
        assert model is not None, f"no HTTP 200 on {first} (exit {proc.poll()})"
        assert page == 200 and model["type"] == "notebook"
    finally:
        out = stop_group(proc)
    copy = Path(env["PAGELAB_HOME"]) / first
    assert copy.read_bytes() == (ROOT / "notebooks" / first).read_bytes()
    assert f"chapters in {env['PAGELAB_HOME']}: added" in out
    said = "pagelab: running as root, so JupyterLab gets --allow-root" in out
    assert said == (os.geteuid() == 0), out  # said aloud exactly when it is added
    assert proc.returncode is not None
