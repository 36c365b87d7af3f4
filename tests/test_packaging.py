"""environment.yml, binder/ and the build configuration agree with pyproject.toml."""

import re

import tomllib
import yaml

from helpers import ROOT


def pyproject():
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def norm(spec):
    """'jupyterlab>=4.1,<5' -> ('jupyterlab', '>=4.1,<5'), whitespace and case ignored."""
    m = re.fullmatch(r"\s*([A-Za-z0-9_.-]+)\s*(.*)", spec)
    return m.group(1).lower().replace("_", "-"), m.group(2).replace(" ", "")


def conda_specs(path):
    deps = yaml.safe_load(path.read_text())["dependencies"]
    return dict(norm(d) for d in deps if isinstance(d, str))


def test_environment_yml_carries_every_python_dependency():
    """Every runtime and test dependency of pyproject.toml is in environment.yml, same bounds."""
    p = pyproject()["project"]
    wanted = dict(norm(d) for d in p["dependencies"] + p["optional-dependencies"]["test"])
    have = conda_specs(ROOT / "environment.yml")
    for name, bound in wanted.items():
        assert name in have, f"environment.yml lacks {name}"
        assert have[name] == bound, (
            f"{name}: pyproject says {bound!r}, environment.yml {have[name]!r}"
        )


def test_environment_yml_can_build_the_extension():
    """conda users need a C compiler and the build requirements to compile the cffi module."""
    have = conda_specs(ROOT / "environment.yml")
    assert "c-compiler" in have and "pip" in have
    for req in pyproject()["build-system"]["requires"]:
        name, bound = norm(req)
        assert have.get(name) == bound, f"build requirement {req} missing from environment.yml"


def test_python_version_is_supported():
    """The conda Python satisfies requires-python."""
    have = conda_specs(ROOT / "environment.yml")
    version = have["python"].lstrip("=")
    low = pyproject()["project"]["requires-python"].removeprefix(">=")
    assert tuple(map(int, version.split("."))) >= tuple(map(int, low.split(".")))


def test_binder_uses_the_same_environment_and_installs_pagelab():
    """binder/environment.yml is the top-level file; postBuild compiles and installs pagelab."""
    binder_env = ROOT / "binder" / "environment.yml"
    assert binder_env.resolve() == (ROOT / "environment.yml").resolve()
    post = (ROOT / "binder" / "postBuild").read_text()
    assert post.startswith("#!") and "pip install" in post and "set -e" in post
    assert (ROOT / "binder" / "postBuild").stat().st_mode & 0o111


def test_sdist_manifest_ships_the_c_sources():
    """The sdist must carry csrc/ or the extension cannot be rebuilt from it."""
    assert "graft csrc" in (ROOT / "MANIFEST.in").read_text()
