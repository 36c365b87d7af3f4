"""The front end in labext/: its vitest specs, its version, and the bundle the widget loads."""

import importlib.metadata
import json
import os
import re
import shutil
import sys
from pathlib import Path

import pytest
import tomllib
import yaml

import pagelab
from helpers import ROOT, run

LABEXT = ROOT / "labext"


def test_front_end_version_is_the_python_version():
    """One version across the boundary, written once: labext/package.json's is
    pagelab.__version__ and the installed metadata's (setup.py writes pagelab/_version.py from
    it, a file git ignores), and no other Python file or pyproject.toml writes one."""
    version = json.loads((LABEXT / "package.json").read_text())["version"]
    assert pagelab.__version__ == version == importlib.metadata.version("pagelab")
    generated = ROOT / "pylib" / "pagelab" / "_version.py"
    assert "/pylib/pagelab/_version.py" in (ROOT / ".gitignore").read_text().splitlines()
    literal = re.compile(r"""version(__)?\s*=\s*["']\d""")
    sources = [ROOT / "setup.py", *(ROOT / "pylib" / "pagelab").rglob("*.py")]
    assert [p.name for p in sources if literal.search(p.read_text())] == ["_version.py"]
    assert generated.read_text().startswith('"""Written by setup.py from labext/package.json.')
    assert "version" not in tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def test_only_version_ts_reads_package_json():
    """labext/src/version.ts alone reads package.json (STYLE: widget boundary)."""
    readers = [p.name for p in (LABEXT / "src").glob("*.ts") if "package.json" in p.read_text()]
    assert readers == ["version.ts"]


@pytest.mark.slow
def test_front_end_typechecks_and_its_specs_pass():
    """The TypeScript type-checks (tsc --strict) and the front-end unit specs (formatting, rates,
    sparklines, unavailable counters, escaping, throttling, the autocount setting's kernel
    states) pass under vitest."""
    if not (LABEXT / "node_modules" / ".bin" / "vitest").exists() or not shutil.which("node"):
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but labext/node_modules is missing: run `make setup`")
        pytest.skip("labext/node_modules is missing: `make setup` installs it (needs Node)")
    p = run(["npm", "test", "--silent"], cwd=LABEXT, timeout=300)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "passed" in p.stdout


def test_bundle_is_built_with_this_version():
    """The ESM bundle the widget loads exists and carries the package version, and neither it nor
    the lab extension's scripts carry the rest of package.json (version.ts takes only the
    version): no `devDependencies` key."""
    jupyter = ROOT / "pylib" / "pagelab" / "jupyter"
    bundle = jupyter / "static" / "livecounters.js"
    assert bundle.exists(), "run `make setup` to build the front end"
    assert f'"{pagelab.__version__}"' in bundle.read_text()
    scripts = [bundle, *(jupyter / "labextension" / "static").glob("*.js")]
    assert len(scripts) > 1, "run `make setup` to build the lab extension"
    assert [p.name for p in scripts if "devDependencies" in p.read_text()] == []


def test_one_node_minimum():
    """The Node.js minimum is labext/package.json's `engines`, and every "Node.js N+" in
    README.md, docs/ and setup.py's message, and every conda `nodejs>=N`, says the same N."""
    engines = json.loads((LABEXT / "package.json").read_text())["engines"]["node"]
    floor = re.fullmatch(r">=(\d+)", engines).group(1)
    texts = [ROOT / "README.md", ROOT / "setup.py", *(ROOT / "docs").rglob("*.md")]
    conda = [ROOT / "environment.yml", ROOT / "binder" / "environment.yml"]
    said = {(p.name, n) for p in texts for n in re.findall(r"Node\.js (\d+)\+", p.read_text())}
    said |= {(p.name, n) for p in conda for n in re.findall(r"nodejs>=(\d+)", p.read_text())}
    assert len(said) >= 4 and {n for _, n in said} == {floor}, said


def test_lab_extension_is_prebuilt_with_this_version_and_its_settings():
    """The prebuilt JupyterLab extension (pagelab/jupyter/labextension) carries the package version,
    its federated entry point and the settings schema, autocount off unless the user turns it
    on."""
    built = ROOT / "pylib" / "pagelab" / "jupyter" / "labextension"
    assert (built / "package.json").exists(), "run `make setup` to build the lab extension"
    package = json.loads((built / "package.json").read_text())
    assert package["name"] == "pagelab" and package["version"] == pagelab.__version__
    assert (built / package["jupyterlab"]["_build"]["load"]).is_file()
    # what `jupyter labextension list` names as the installer and the uninstall instructions
    install = json.loads((built / "install.json").read_text())
    assert install == json.loads((LABEXT / "install.json").read_text())
    assert install["packageManager"] == "python" and install["packageName"] == "pagelab"
    schema = json.loads((built / "schemas" / "pagelab" / "plugin.json").read_text())
    assert {"refreshMs", "events", "statusBar", "autocount"} <= set(schema["properties"])
    assert schema["properties"]["autocount"]["default"] is False


def test_style_is_the_extensions_declared_style_not_injected():
    """The CSS lives in one file, labext/style/index.css: the lab extension's declared `style`
    (JupyterLab loads it with the extension), copied beside the widget's bundle and passed as
    the widget's anywidget `_css` for other hosts; no front-end code writes a <style>."""
    package = json.loads((LABEXT / "package.json").read_text())
    assert package["style"] == "style/index.css"
    css = (LABEXT / "style" / "index.css").read_text()
    jupyter = ROOT / "pylib" / "pagelab" / "jupyter"
    built = json.loads((jupyter / "labextension" / "package.json").read_text())
    assert built["jupyterlab"]["_build"]["style"] == "./style"
    assert (jupyter / "static" / "livecounters.css").read_text() == css
    widget = pagelab.LiveCounters(start=False)
    try:
        assert widget._css == css
    finally:
        widget.close()
    injecting = [
        p.name
        for p in (LABEXT / "src").glob("*.ts")
        if re.search(r"createElement\(\s*[\"']style|adoptedStyleSheets|insertRule", p.read_text())
    ]
    assert injecting == []


# ---- the JupyterLab floor -----------------------------------------------------------------------

BUILT = ROOT / "pylib" / "pagelab" / "jupyter" / "labextension"
# what a built remoteEntry asks the page for: webpack's consume call with the shared package and
# its required range, compiled to [fixed components, major, minor, patch, ...]
_CONSUME = re.compile(r'"default","(@[\w./-]+)",(?:!0|!1|true|false),\[(\d),(\d+),(\d+),(\d+)\b')


def consumed(remote_entry):
    """{shared package: (fixed components, (major, minor, patch))} the built extension requires
    of the page, as webpack checks them (1 fixed: ^x.y.z, 2: ~x.y.z, 3: =x.y.z)."""
    return {
        m[1]: (int(m[2]), tuple(map(int, m.group(3, 4, 5))))
        for m in _CONSUME.finditer(remote_entry)
    }


def _version(text):
    """'~4.6.4', '^2.3.1-alpha.1', '4.6.4' -> (4, 6, 4)."""
    return tuple(map(int, re.match(r"[~^=]?(\d+)\.(\d+)\.(\d+)", text).groups()))


def _floor(spec):
    """'jupyterlab>=4.6.4,<5' -> (4, 6, 4)."""
    return _version(re.search(r">=\s*([\d.]+)", spec)[1])


def floor_problems(required, core, floor):
    """Why a JupyterLab at ``floor`` could lack what the extension requires, one line each:
    each consumed package's range must hold the version JupyterLab ``core`` (the core.package.json
    the extension was built against) provides, and the floor must be that core or newer (later
    4.x releases only raise their packages' versions)."""
    provided = {name: _version(v) for name, v in core["resolutions"].items()}
    problems = []
    for name, (fixed, low) in sorted(required.items()):
        have = provided.get(name)
        if have is None:
            problems.append(f"{name}: not a package JupyterLab {core['version']} shares")
        elif not (have >= low and have[:fixed] == low[:fixed]):
            problems.append(f"{name}: requires {low} ({fixed} fixed), core provides {have}")
    if floor < _version(core["version"]):
        problems.append(f"floor {floor} is older than the core built against, {core['version']}")
    return problems


def _built_requirements():
    package = json.loads((BUILT / "package.json").read_text())
    return consumed((BUILT / package["jupyterlab"]["_build"]["load"]).read_text())


def _core():
    core = LABEXT / "node_modules" / "@jupyterlab" / "core-meta" / "core.package.json"
    if not core.is_file():
        if os.environ.get("CI") == "true":
            pytest.fail("CI=true but labext/node_modules is missing: run `make setup`")
        pytest.skip("labext/node_modules is missing: `make setup` installs it (needs Node)")
    return json.loads(core.read_text())


def _declared_floors():
    """The JupyterLab floor of the lab extra and of both conda environments."""
    lab = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    floors = {"pyproject.toml [lab]": next(d for d in lab["lab"] if d.startswith("jupyterlab"))}
    for env in ("environment.yml", "binder/environment.yml"):
        deps = yaml.safe_load((ROOT / env).read_text())["dependencies"]
        floors[env] = next(d for d in deps if isinstance(d, str) and d.startswith("jupyterlab"))
    return {where: _floor(spec) for where, spec in floors.items()}


def test_declared_jupyterlab_floor_has_what_the_extension_consumes():
    """The built extension's shared-package requirements (its remoteEntry's requiredVersions)
    are met by the JupyterLab core it is built against, and every declared JupyterLab floor is
    that core or newer, so no supported JupyterLab logs "Unsatisfied version"."""
    required, core = _built_requirements(), _core()
    assert len(required) >= 5 and "@jupyterlab/notebook" in required
    pinned = json.loads((LABEXT / "package.json").read_text())["devDependencies"]
    assert pinned["@jupyterlab/core-meta"] == core["version"]  # an exact pin, not a range
    for where, floor in _declared_floors().items():
        assert floor_problems(required, core, floor) == [], where


def test_installed_jupyterlab_has_what_the_extension_consumes():
    """The JupyterLab these tests run also provides every required version."""
    static = Path(sys.prefix) / "share" / "jupyter" / "lab" / "static" / "package.json"
    app = json.loads(static.read_text())
    assert floor_problems(_built_requirements(), app, _version(app["version"])) == []


def test_floor_problems_are_caught():
    """A requirement newer than the core, a major the core does not have, a package the core
    does not share, and a floor below the core are each reported."""
    core = {"version": "4.6.4", "resolutions": {"@jupyterlab/a": "~4.6.4", "@lumino/w": "^2.3.1"}}
    entry = '"default","@jupyterlab/a",!1,[1,4,6,4]),x=()=>a("default","@lumino/w",!1,[1,2,3,1])'
    required = consumed(entry)
    assert required == {"@jupyterlab/a": (1, (4, 6, 4)), "@lumino/w": (1, (2, 3, 1))}
    assert floor_problems(required, core, (4, 6, 4)) == []
    assert floor_problems(required, core, (4, 1, 0)) == [
        "floor (4, 1, 0) is older than the core built against, 4.6.4"
    ]
    newer = {**required, "@jupyterlab/a": (1, (4, 7, 0)), "@lumino/w": (1, (3, 0, 0))}
    assert floor_problems(newer, core, (4, 6, 4)) == [
        "@jupyterlab/a: requires (4, 7, 0) (1 fixed), core provides (4, 6, 4)",
        "@lumino/w: requires (3, 0, 0) (1 fixed), core provides (2, 3, 1)",
    ]
    assert floor_problems({"@jupyterlab/b": (1, (4, 0, 0))}, core, (4, 6, 4)) == [
        "@jupyterlab/b: not a package JupyterLab 4.6.4 shares"
    ]
