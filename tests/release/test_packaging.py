"""environment.yml, binder/ and the build configuration agree with pyproject.toml."""

import copy
import json
import re

import tomllib
import yaml
from packaging.markers import Marker

from helpers import ROOT


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def environment(path="environment.yml"):
    return yaml.safe_load((ROOT / path).read_text())


def norm(spec):
    """'jupyterlab>=4.1,<5' -> ('jupyterlab', '>=4.1,<5'), whitespace, case and any environment
    marker ignored; a package conda names otherwise gets conda's name."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", spec.split(";")[0])
    name = m.group(1).lower().replace("_", "-")
    return CONDA_NAMES.get(name, name), m.group(2).replace(" ", "")


def applies(spec, python):
    """Whether a requirement's environment marker (if any) holds for that Python version."""
    marker = spec.partition(";")[2].strip()
    return not marker or Marker(marker).evaluate({"python_version": python})


def specs(env):
    """Every package environment.yml lists, conda part and pip part alike, as (name, bound)."""
    out = []
    for dep in env["dependencies"]:
        out += [norm(d) for d in dep.get("pip", [])] if isinstance(dep, dict) else [norm(dep)]
    return out


def conda_specs(env):
    return dict(specs(env))


def wanted(project, extras, groups, python):
    """pyproject.toml's runtime and build requirements, plus the named extras and groups, as
    they apply to that Python version."""
    p = project["project"]
    reqs = [*p["dependencies"], *project["build-system"]["requires"]]
    reqs += [d for extra in extras for d in p["optional-dependencies"][extra]]
    reqs += [d for group in groups for d in project["dependency-groups"][group]]
    return dict(norm(r) for r in reqs if applies(r, python))


def drift(project, env, extras=None, groups=None):
    """Every way an environment file disagrees with pyproject.toml, one line each (empty: in
    step): a listed package missing or with another bound, one listed twice, and one pyproject
    does not ask for (beyond the build tools only conda can give). By default the environment
    gets every extra and every dependency group (a checkout's conda environment)."""
    extras = project["project"]["optional-dependencies"] if extras is None else extras
    groups = project.get("dependency-groups", {}) if groups is None else groups
    listed = specs(env)
    want = wanted(project, extras, groups, dict(listed)["python"].lstrip("="))
    have, names = dict(listed), [n for n, _ in listed]
    problems = [f"lists {n} twice" for n in sorted(set(names)) if names.count(n) > 1]
    for name, bound in want.items():
        if name not in have:
            problems.append(f"lacks {name}{bound}")
        elif have[name] != bound:
            problems.append(
                f"{name}: pyproject.toml says {bound!r}, the environment {have[name]!r}"
            )
    extra = sorted(have.keys() - want.keys() - CONDA_ONLY)
    return problems + [f"lists {n}, which pyproject.toml does not" for n in extra]


# pyproject.toml's names that conda-forge spells otherwise.
CONDA_NAMES = {"build": "python-build"}
# What only conda provides: the interpreter, the compiler and Node.js for the build, and the hub's
# single-user server (pinned to the hub's major version, see test_deploy.py).
CONDA_ONLY = {"python", "pip", "c-compiler", "sysroot-linux-64", "nodejs", "jupyterhub-singleuser"}
# The student image: the chapters' runtime and the lab, no benchmark or test tools.
BINDER = {"extras": ["lab"], "groups": []}


def test_environment_yml_is_in_step_with_pyproject():
    """The checkout's conda environment has every runtime, extra, group and build dependency of
    pyproject.toml with the same bounds, and nothing else but the conda-only build tools."""
    assert drift(pyproject(), environment()) == []


def test_binder_environment_is_in_step_with_pyproject():
    """The student image's environment has the runtime, the lab extra and the build
    requirements with pyproject.toml's bounds, and no test or benchmark tools."""
    assert drift(pyproject(), environment("binder/environment.yml"), **BINDER) == []


def test_drift_is_caught():
    """A deliberate drift on each side is reported: a changed bound, a dependency added to an
    extra or a group, a dependency dropped from the conda file, one listed twice, a test tool in
    the student image, and a pip part that disagrees."""
    project, env = pyproject(), environment()
    bumped = copy.deepcopy(project)
    bumped["project"]["dependencies"] = [
        "numpy>=99" if norm(d)[0] == "numpy" else d for d in bumped["project"]["dependencies"]
    ]
    assert drift(bumped, env) == ["numpy: pyproject.toml says '>=99', the environment '>=1.24'"]
    extra = copy.deepcopy(project)
    extra["project"]["optional-dependencies"]["bench"].append("pyperf-extras>=1")
    assert drift(extra, env) == ["lacks pyperf-extras>=1"]
    group = copy.deepcopy(project)
    group["dependency-groups"]["test"].append("pytest-xdist>=3")
    assert drift(group, env) == ["lacks pytest-xdist>=3"]
    dropped = copy.deepcopy(env)
    dropped["dependencies"] = [d for d in env["dependencies"] if not str(d).startswith("cffi")]
    assert drift(project, dropped) == ["lacks cffi>=1.16"]
    twice = copy.deepcopy(env)
    twice["dependencies"].append("numpy>=1.24")
    assert drift(project, twice) == ["lists numpy twice"]
    student = environment("binder/environment.yml")
    student["dependencies"].append("pytest>=8")
    assert drift(project, student, **BINDER) == ["lists pytest, which pyproject.toml does not"]
    piped = copy.deepcopy(env)
    piped["dependencies"] = [d for d in env["dependencies"] if not str(d).startswith("tqdm")]
    piped["dependencies"].append({"pip": ["tqdm>=4"]})
    assert drift(project, piped) == ["tqdm: pyproject.toml says '>=4.66', the environment '>=4'"]


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


def test_sdist_manifest_ships_the_sources():
    """The sdist carries csrc/, the chapters, labext/ (without node_modules) and jupyter-config/,
    or the wheel cannot be rebuilt from it (tests/release/test_wheel.py builds one from an
    sdist)."""
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


def test_changelog_and_release_workflow_carry_the_one_version():
    """CHANGELOG.md's newest release is labext/package.json's version (the one place it is
    written), and the release workflow refuses a tag that is not that version and publishes by
    trusted publishing (an OIDC token, no stored secret)."""
    version = json.loads((ROOT / "labext" / "package.json").read_text())["version"]
    releases = re.findall(r"^## (\d+\.\d+\.\d+\S*) ", (ROOT / "CHANGELOG.md").read_text(), re.M)
    assert releases and releases[0] == version, releases
    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert workflow[True]["push"]["tags"] == ["v*"]  # YAML 1.1 reads the key `on` as True
    steps = " ".join(s.get("run", "") for s in workflow["jobs"]["sdist"]["steps"])
    assert "require('./labext/package.json').version" in steps and "GITHUB_REF_NAME" in steps
    publish = workflow["jobs"]["publish"]
    assert publish["permissions"]["id-token"] == "write"
    assert set(publish["needs"]) == {"sdist", "wheels", "test"}
    assert "secrets." not in yaml.safe_dump(workflow)
    arches = {j["arch"] for j in workflow["jobs"]["wheels"]["strategy"]["matrix"]["include"]}
    assert arches == {"x86_64", "aarch64"}
