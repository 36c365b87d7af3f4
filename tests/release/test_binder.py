"""binder/: the student image built the way repo2docker builds it, as far as this machine allows
without Docker or a conda channel.

repo2docker installs environment.yml into the environment that runs the Jupyter server (on top of
its own base environment, which ships jupyter-resource-usage), installs apt.txt, then runs
postBuild as the notebook user in the repository. Here: a new venv gets environment.yml's Python
packages from PyPI (conda names mapped to PyPI's) plus jupyter-resource-usage, and postBuild runs
with `bash -e` in a copy of the source tree, with no CC and only the venv's bin/ and /usr/bin on
PATH (Node.js and gcc come from /usr/bin here, from conda and apt.txt there). postBuild's own
checks must pass, and must fail when what they check is missing.
"""

import json
import os
import re
import shutil

import pytest
import yaml

from helpers import ROOT, run
from venvs import jupyter_lists, lab_extension_line, new_venv, pip, source_tree

pytestmark = pytest.mark.slow
BINDER = ROOT / "binder"
# conda package -> PyPI project, where the names differ; None: not a Python package
CONDA_TO_PYPI = {"python": None, "pip": None, "nodejs": None, "jupyterhub-singleuser": "jupyterhub"}
# repo2docker's base environment for Python 3.11 (repo2docker/buildpacks/conda/
# environment.py-3.11.yml) adds this one to whatever environment.yml lists
REPO2DOCKER_BASE = ["jupyter-resource-usage==1.*"]
STATUS_ITEM = "@jupyter-server/resource-usage:status-item"


def python_packages(env):
    """environment.yml's dependencies as pip requirements: the conda ones by their PyPI names
    (`x=1.2` conda pins become `x==1.2.*`), then its pip part as it is."""
    reqs = []
    for dep in env["dependencies"]:
        if isinstance(dep, dict):
            reqs += dep.get("pip", [])
            continue
        m = re.fullmatch(r"([A-Za-z0-9_.-]+)\s*(.*)", dep)
        name, bound = m.group(1), m.group(2)
        name = CONDA_TO_PYPI.get(name, name)
        if name:
            reqs.append(name + (f"=={bound[1:]}.*" if re.fullmatch(r"=[\d.]+", bound) else bound))
    return reqs


def test_python_packages_are_read_the_way_pip_means_them():
    """The conda-to-pip reading keeps bounds, renames the hub's package, drops non-Python ones
    and passes a pip part through."""
    env = {
        "dependencies": [
            "python=3.11",
            "nodejs>=20",
            "numpy>=1.24",
            "jupyterhub-singleuser>=5,<6",
            "pyyaml=6.0",
            {"pip": ["tqdm>=4.66"]},
        ]
    }
    assert python_packages(env) == [
        "numpy>=1.24",
        "jupyterhub>=5,<6",
        "pyyaml==6.0.*",
        "tqdm>=4.66",
    ]


@pytest.fixture(scope="module")
def image(tmp_path_factory):
    """(bin dir, environment, postBuild's output) of the image built as described above."""
    for tool in ("cc", "npm"):
        if shutil.which(tool) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"no {tool} on PATH (CI=true: the build tools must be there)")
            pytest.skip(f"no {tool} on PATH: postBuild cannot build pagelab")
    base = tmp_path_factory.mktemp("binder")
    bin_dir = new_venv(base / "env", pip=True)  # postBuild runs the environment's pip
    env = yaml.safe_load((BINDER / "environment.yml").read_text())
    p = pip(bin_dir, "install", "-q", *python_packages(env), *REPO2DOCKER_BASE, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    repo = source_tree(base / "repo")
    bare = {"HOME": str(base / "home"), "PATH": f"{bin_dir}:/usr/bin:/bin"}
    p = run(["bash", "-e", repo / "binder" / "postBuild"], cwd=repo, env=bare, timeout=900)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    return bin_dir, bare, p.stdout + p.stderr


def test_post_build_installs_and_checks_the_extensions(image):
    """postBuild's own checks pass: pip check, the lab extension from the pagelab package, the
    server extension enabled and validated; and the image's jupyter says the same."""
    bin_dir, env, out = image
    assert "No broken requirements found." in out
    labext, serverext = jupyter_lists(bin_dir, env)
    print(labext)
    assert re.fullmatch(r"pagelab v\S+ enabled OK \(python, pagelab\)", lab_extension_line(labext))
    assert re.search(r"^\s*pagelab enabled$", serverext, re.M)
    assert re.search(r"^\s*pagelab \S+ OK$", serverext, re.M)


def test_post_build_hides_the_second_memory_read_out(image):
    """jupyter-resource-usage's status-bar item is disabled in the environment's lab config,
    and only that plugin of it."""
    bin_dir, env, _ = image
    prefix = bin_dir.parent
    config = json.loads((prefix / "etc/jupyter/labconfig/page_config.json").read_text())
    assert config["disabledExtensions"] == {STATUS_ITEM: True}
    labext, _ = jupyter_lists(bin_dir, env)
    assert re.search(rf"^\s*{re.escape(STATUS_ITEM)}\s*$", labext.split("Disabled")[1], re.M)


def test_post_build_made_a_working_pagelab(image):
    """The built module answers from the image's environment: `pagelab doctor` names a
    profile."""
    bin_dir, env, _ = image
    p = run([bin_dir / "pagelab", "doctor", "--json"], env=env)
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["profile"] in {"full", "software-only", "blocked"}


def _checks():
    """postBuild's closing checks alone (everything after its "The checks" comment)."""
    text = (BINDER / "postBuild").read_text()
    return text[text.index("# The checks") :]


def test_post_build_checks_fail_without_the_extensions(image, tmp_path):
    """postBuild's checks stop the build, naming what is missing, when the lab extension or the
    server extension's config is not there."""
    bin_dir, env, _ = image
    prefix = bin_dir.parent
    cases = {
        "lab extension": prefix / "share/jupyter/labextensions/pagelab",
        "server extension": prefix / "etc/jupyter/jupyter_server_config.d/pagelab.json",
    }
    for what, path in cases.items():
        moved = tmp_path / path.name
        shutil.move(path, moved)
        try:
            p = run(["bash", "-e", "-c", _checks()], env=env)
        finally:
            shutil.move(moved, path)
        assert p.returncode == 1, (what, p.stdout, p.stderr)
        assert f"postBuild: the pagelab {what} is not" in p.stderr


def test_apt_txt_brings_what_the_chapters_call():
    """Every program a chapter runs (strace, valgrind, cc for programs, clang for %%c cells,
    whose two builds vectorise alike only with it) is in apt.txt, and postBuild and the docs no
    longer claim the image has no compiler."""
    apt = {l.partition("#")[0].strip() for l in (BINDER / "apt.txt").read_text().splitlines()} - {
        ""
    }
    called = set()
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        for cell in json.loads(nb.read_text())["cells"]:
            if cell["cell_type"] == "code":
                source = "".join(cell["source"])
                called |= set(re.findall(r"""which\(["'](\w+)["']\)""", source))
                called |= {"cc"} if re.search(r"^%%c\b|\"cc\"", source, re.M) else set()
                called |= {"clang"} if re.search(r"^%%c\b", source, re.M) else set()
    assert {"strace", "valgrind", "cc", "clang"} <= called, called
    debian = {"cc": "gcc"}
    assert {debian.get(tool, tool) for tool in called} | {"libc6-dev"} <= apt
    for doc in (BINDER / "README.md", BINDER / "postBuild", ROOT / "docs" / "deploy.md"):
        assert "no system compiler" not in " ".join(doc.read_text().split()), doc


def test_student_image_has_no_test_tools():
    """The image installs what the chapters need, none of the test toolchain."""
    env = yaml.safe_load((BINDER / "environment.yml").read_text())
    names = {re.match(r"[\w.-]+", r).group(0).lower() for r in python_packages(env)}
    assert not names & {"pytest", "nbval", "playwright", "ruff", "clang-format", "hypothesis"}
    assert {"jupyterlab", "ipykernel", "numpy", "jupyterhub"} <= names
