"""environment.yml, binder/ and the build configuration agree with pyproject.toml."""

import copy
import re

import tomllib
import yaml

from helpers import ROOT


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def environment():
    return yaml.safe_load((ROOT / "environment.yml").read_text())


def norm(spec):
    """'jupyterlab>=4.1,<5' -> ('jupyterlab', '>=4.1,<5'), whitespace and case ignored."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", spec)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def conda_specs(env):
    return dict(norm(d) for d in env["dependencies"] if isinstance(d, str))


def drift(project, env):
    """Every way environment.yml disagrees with pyproject.toml, one line each (empty: in step).

    conda gets the runtime dependencies, every extra (Binder needs the lab, the tests need the
    rest) and the build requirements, with the same bounds."""
    p = project["project"]
    wanted = [*p["dependencies"], *project["build-system"]["requires"]]
    wanted += [d for extra in p["optional-dependencies"].values() for d in extra]
    have = conda_specs(env)
    names = [norm(d)[0] for d in env["dependencies"] if isinstance(d, str)]
    problems = [
        f"environment.yml lists {n} twice" for n in sorted(set(names)) if names.count(n) > 1
    ]
    for name, bound in dict(map(norm, wanted)).items():
        if name not in have:
            problems.append(f"environment.yml lacks {name}{bound}")
        elif have[name] != bound:
            problems.append(
                f"{name}: pyproject.toml says {bound!r}, environment.yml {have[name]!r}"
            )
    return problems


def test_environment_yml_is_in_step_with_pyproject():
    """Every runtime, extra and build dependency of pyproject.toml is in environment.yml."""
    assert drift(pyproject(), environment()) == []


def test_drift_is_caught():
    """A deliberate drift on each side is reported: a changed bound, a dependency added to an
    extra, a dependency dropped from the conda file, one listed twice."""
    project, env = pyproject(), environment()
    bumped = copy.deepcopy(project)
    bumped["project"]["dependencies"] = [
        "numpy>=99" if norm(d)[0] == "numpy" else d for d in bumped["project"]["dependencies"]
    ]
    assert drift(bumped, env) == ["numpy: pyproject.toml says '>=99', environment.yml '>=1.24'"]
    extra = copy.deepcopy(project)
    extra["project"]["optional-dependencies"]["bench"].append("pyperf-extras>=1")
    assert drift(extra, env) == ["environment.yml lacks pyperf-extras>=1"]
    dropped = copy.deepcopy(env)
    dropped["dependencies"] = [d for d in env["dependencies"] if not str(d).startswith("cffi")]
    assert drift(project, dropped) == ["environment.yml lacks cffi>=1.16"]
    twice = copy.deepcopy(env)
    twice["dependencies"].append("numpy>=1.24")
    assert drift(project, twice) == ["environment.yml lists numpy twice"]


def test_environment_yml_can_build_the_extension():
    """conda users (and Binder) compile with conda's C compiler against a pinned sysroot."""
    have = conda_specs(environment())
    assert {"c-compiler", "pip", "nodejs"} <= have.keys()
    assert have["sysroot-linux-64"] == ">=2.28"


def test_python_version_is_supported():
    """The conda Python satisfies requires-python."""
    have = conda_specs(environment())
    version = have["python"].lstrip("=")
    low = pyproject()["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, version.split("."))) >= tuple(map(int, low.split(".")))


def test_binder_uses_the_same_environment_and_installs_pagelab():
    """binder/environment.yml is the top-level file; postBuild (run by repo2docker in a
    non-login shell, where conda's activation scripts have not set CC) names conda's compiler
    itself, then builds and installs pagelab."""
    binder_env = ROOT / "binder" / "environment.yml"
    assert binder_env.resolve() == (ROOT / "environment.yml").resolve()
    post = ROOT / "binder" / "postBuild"
    text = post.read_text()
    assert text.startswith("#!/bin/bash\n") and "set -euo pipefail" in text
    assert "x86_64-conda-linux-gnu-cc" in text and "export CC=" in text
    assert "pip install --no-build-isolation --no-deps ." in text
    assert post.stat().st_mode & 0o111


def test_sdist_manifest_ships_the_sources():
    """The sdist carries csrc/, the chapters, labext/ (without node_modules) and jupyter-config/,
    or the wheel cannot be rebuilt from it (tests/test_wheel.py builds one from an sdist)."""
    manifest = (ROOT / "MANIFEST.in").read_text().splitlines()
    for line in (
        "graft csrc",
        "graft notebooks",
        "graft labext",
        "prune labext/node_modules",
        "graft jupyter-config",
    ):
        assert line in manifest


def test_readme_binder_badge_opens_chapter_00():
    """The README's Binder badge opens chapter 00, a file that exists, in JupyterLab."""
    m = re.search(
        r"\(https://mybinder\.org/v2/gh/[^)]*\?labpath=([^)]+)\)", (ROOT / "README.md").read_text()
    )
    assert m, "README has no Binder badge with a labpath"
    path = m.group(1).replace("%2F", "/")
    assert path.startswith("notebooks/00-") and (ROOT / path).is_file()
