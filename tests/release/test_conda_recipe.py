"""docs/deploy.md's conda recipe (an editable install of a checkout), run as the page writes it.

There is no conda channel here, so a new venv stands in for the activated conda environment
(CONDA_PREFIX set, its bin/ first on PATH), with the commands the recipe calls in its own bin/
and the other packages borrowed from this test run. The block runs with `bash -e` in a copy of
the source tree; its closing `jupyter ... list` lines must show the lab extension from the
pagelab package and the server extension enabled.
"""

import os
import re
import shutil

import pytest

from helpers import ROOT, run
from venvs import (
    JUPYTER_SCRIPTS,
    borrow_packages,
    install_as_here,
    lab_extension_line,
    new_venv,
    plain,
    source_tree,
)

pytestmark = pytest.mark.slow
DEPLOY = ROOT / "docs" / "deploy.md"


def recipe():
    """The shell lines of deploy.md's conda block after `conda activate` (conda itself is not
    here)."""
    text = DEPLOY.read_text()
    section = text[text.index("## conda") :]
    block = re.search(r"```sh\n(.*?)```", section, re.S).group(1)
    lines = block.replace("\\\n", " ").splitlines()
    assert lines[:2] == ["conda env create -f environment.yml", "conda activate pagelab"]
    return "\n".join(lines[2:])


def test_recipe_installs_both_extensions(tmp_path):
    """After the recipe, `jupyter labextension list` shows pagelab enabled OK from the pagelab
    Python package, and `jupyter server extension list` shows it enabled and validated, in the
    environment the recipe installed into."""
    for tool in ("cc", "npm"):
        if shutil.which(tool) is None:
            if os.environ.get("CI") == "true":
                pytest.fail(f"no {tool} on PATH (CI=true: the build tools must be there)")
            pytest.skip(f"no {tool} on PATH: the recipe cannot build pagelab")
    bin_dir = new_venv(tmp_path / "env", pip=True)  # the recipe runs the environment's pip
    # the environment's build tools (a venv's own setuptools is older than the build needs) and
    # the jupyter commands, before borrowing (pip would take the borrowed ones as installed)
    install_as_here(bin_dir, "setuptools", *JUPYTER_SCRIPTS)
    borrow_packages(bin_dir)
    repo = source_tree(tmp_path / "repo")
    env = {
        "HOME": str(tmp_path / "home"),
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "CONDA_PREFIX": str(bin_dir.parent),
    }
    p = run(["bash", "-e", "-c", recipe()], cwd=repo, env=env, timeout=900)
    out = plain(p.stdout + p.stderr)
    assert p.returncode == 0, out[-4000:]
    print(out[-1500:])
    assert re.fullmatch(r"pagelab v\S+ enabled OK \(python, pagelab\)", lab_extension_line(out))
    assert re.search(r"^\s*pagelab enabled$", out, re.M)
    assert re.search(r"^\s*pagelab \S+ OK$", out, re.M)
    link = bin_dir.parent / "share" / "jupyter" / "labextensions" / "pagelab"
    assert (
        link.resolve() == repo / "pylib" / "pagelab" / "jupyter" / "labextension"
    )  # a rebuild shows
