"""`pip wheel .` builds one wheel that works from a fresh venv: compiled module, front end,
chapters, C headers, `pagelab doctor`, an experiment, `pagelab lab` on a copied chapter, and the
metadata the Jupyter ecosystem reads (`jupyter labextension list` naming the Python package).

The wheel is built from a copy of the source tree without anything `make setup` builds (no
widget bundle, no lab extension), so the build itself must make them; only labext/node_modules
is borrowed from the checkout (a link) to spare a 400 MB `npm ci`. The sdist made from that tree
must build a wheel too.

To stay fast the fresh venv gets the wheel with --no-deps and borrows the dependencies from this
test's venv through a .pth file (and JupyterLab's application assets through JUPYTERLAB_DIR);
`pip check` then proves the wheel's declared dependencies are what it needs. Everything pagelab
itself provides comes from the wheel alone.
"""

import email.parser
import json
import os
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

from helpers import ROOT, run, stop_group
from test_lab import free_port
from test_layers import PUBLIC_HEADERS
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


def _pip_wheel(what, cwd, out):
    """Build a wheel with pip (verbose: the build backend's own output and warnings are kept);
    (wheel path, build output)."""
    p = run(
        [sys.executable, "-m", "pip", "wheel", "-v", what, "--no-deps", "-w", out],
        cwd=cwd,
        timeout=900,
    )
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    (built,) = Path(out).glob("pagelab-*.whl")
    print(f"wheel {built.name}: {built.stat().st_size / 1024:.0f} KiB")
    return built, p.stdout + p.stderr


@pytest.fixture(scope="module")
def source(tmp_path_factory):
    """A copy of the source tree as a fresh clone has it, plus labext's node modules."""
    _require("cc")
    _require("npm")
    if not (NODE_MODULES / ".package-lock.json").is_file():
        pytest.skip("labext/node_modules is not installed here (make setup installs it)")
    return source_tree(tmp_path_factory.mktemp("wheel") / "src")


@pytest.fixture(scope="module")
def built(source):
    """(wheel, build output) of `pip wheel .` on that tree (building the front ends as it
    goes)."""
    return _pip_wheel(".", source, source.parent)


@pytest.fixture(scope="module")
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


@pytest.fixture(scope="module")
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
    data = {n.split(".data/data/", 1)[1] for n in names if ".data/data/" in n}
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
    assert {Path(n).name for n in headers} == set(PUBLIC_HEADERS), headers
    assert all(n.startswith("pagelab/native/csrc/include/") for n in headers), headers
    lab, config = _lab_files(names)
    assert "share/jupyter/labextensions/pagelab/package.json" in lab
    assert any(n.endswith("/schemas/pagelab/plugin.json") for n in lab)
    assert any("/static/remoteEntry." in n for n in lab)
    assert "share/jupyter/labextensions/pagelab/static/style.js" in lab
    assert config == {"etc/jupyter/jupyter_server_config.d/pagelab.json"}


def _metadata(wheel):
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


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


def test_sdist_carries_the_sources_and_builds_the_same_wheel(source, wheel, tmp_path):
    """The sdist of the built tree has labext/ (without node_modules), jupyter-config/ and the
    built front ends, and `pip wheel` on it gives a wheel with the same lab extension."""
    build = f"from setuptools import build_meta as b; print(b.build_sdist({str(tmp_path)!r}))"
    p = run([sys.executable, "-c", build], cwd=source, timeout=300)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    sdist = tmp_path / p.stdout.strip().splitlines()[-1]
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for path in (
        "LICENSE",
        "labext/package.json",
        "labext/package-lock.json",
        "labext/install.json",
        "labext/schema/plugin.json",
        "labext/src/labplugin.ts",
        "jupyter-config/jupyter_server_config.d/pagelab.json",
        "pylib/pagelab/jupyter/labextension/package.json",
        "pylib/pagelab/jupyter/static/livecounters.js",
    ):
        assert path in names, f"{path} is not in the sdist"
    assert not any(n.startswith(("labext/node_modules", "labext/lib/")) for n in names)
    rebuilt, _ = _pip_wheel(str(sdist), tmp_path, tmp_path / "out")
    assert _lab_files(zipfile.ZipFile(rebuilt).namelist()) == _lab_files(
        zipfile.ZipFile(wheel).namelist()
    )


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
    assert proc.returncode is not None
