"""The front end in labext/: its vitest specs, its version, and the bundle the widget loads."""

import json
import os
import shutil

import pytest

import pagelab
from helpers import ROOT, run

LABEXT = ROOT / "labext"


def test_front_end_version_is_the_python_version():
    """One version across the boundary: labext/package.json agrees with pagelab.__version__."""
    package = json.loads((LABEXT / "package.json").read_text())
    assert package["version"] == pagelab.__version__


def test_only_version_ts_reads_package_json():
    """labext/src/version.ts alone reads package.json (STYLE: widget boundary)."""
    readers = [p.name for p in (LABEXT / "src").glob("*.ts") if "package.json" in p.read_text()]
    assert readers == ["version.ts"]


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
    """The ESM bundle the widget loads exists and carries the package version."""
    bundle = ROOT / "pylib" / "pagelab" / "static" / "livecounters.js"
    assert bundle.exists(), "run `make setup` to build the front end"
    assert f'"{pagelab.__version__}"' in bundle.read_text()


def test_lab_extension_is_prebuilt_with_this_version_and_its_settings():
    """The prebuilt JupyterLab extension (pagelab/labextension) carries the package version,
    its federated entry point and the settings schema, autocount off unless the user turns it
    on."""
    built = ROOT / "pylib" / "pagelab" / "labextension"
    assert (built / "package.json").exists(), "run `make setup` to build the lab extension"
    package = json.loads((built / "package.json").read_text())
    assert package["name"] == "pagelab" and package["version"] == pagelab.__version__
    assert (built / package["jupyterlab"]["_build"]["load"]).is_file()
    schema = json.loads((built / "schemas" / "pagelab" / "plugin.json").read_text())
    assert {"refreshMs", "events", "statusBar", "autocount"} <= set(schema["properties"])
    assert schema["properties"]["autocount"]["default"] is False
