"""Every chapter with recorded outputs says where they came from in one line of one form (kernel,
profile, machine, date), written by `make notebooks` from the facts .ci/record_chapters.py stored
when it recorded them; the outputs that need a kernel this machine lacks come from that kernel."""

import datetime
import fnmatch
import importlib.util
import json
import os

import kernels
from helpers import ROOT


def _load(name):
    spec = importlib.util.spec_from_file_location(name, ROOT / ".ci" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


normalize_notebooks = _load("normalize_notebooks")
record_chapters = _load("record_chapters")

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def _lines(cells):
    """The cells' markdown lines in the provenance form."""
    text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    return [m[0] for m in normalize_notebooks.PROVENANCE.finditer(text)]


def test_every_recorded_chapter_says_once_where_it_was_recorded():
    """A chapter with stored outputs has exactly one provenance line, right after its title,
    and it is the line made from the facts stored with the recording."""
    for nb in NOTEBOOKS:
        doc = json.loads(nb.read_text())
        if not any(c.get("outputs") for c in doc["cells"]):
            continue
        recorded = doc["metadata"].get("pagelab", {}).get("recorded")
        assert recorded, f"{nb.name}: outputs without the facts of their recording"
        line = normalize_notebooks.provenance_line(recorded)
        assert _lines(doc["cells"]) == [line], nb.name
        assert "".join(doc["cells"][1]["source"]) == line, nb.name


def test_chapters_that_need_guest_a_were_recorded_there():
    """Outputs that need swap, a delegated memory cgroup or vsyscall=emulate (the chapters guest
    (a) records) were recorded on guest (a)'s kernel, which has them (no host here does)."""
    guest = kernels.CONFIGS[0]
    assert guest.zram_mb and guest.delegate_memory and "vsyscall=emulate" in guest.append
    assert guest.records
    for number in guest.records:
        (nb,) = (ROOT / "notebooks").glob(f"{number}-*.ipynb")
        kernel = json.loads(nb.read_text())["metadata"]["pagelab"]["recorded"]["kernel"]
        assert fnmatch.fnmatch(f"vmlinuz-{kernel}", guest.kernel), nb.name


def test_normalize_writes_the_line_from_the_facts():
    """`make notebooks` puts one provenance line after the title, replaces a stale one, and
    removes it from a chapter with no recorded facts."""
    facts = {
        "kernel": "6.1.0-56-amd64",
        "profile": "full",
        "machine": "Xeon",
        "date": "2026-01-02",
    }
    title = {"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# T"]}
    stale = {"cell_type": "markdown", "id": "provenance", "metadata": {}, "source": ["old"]}
    nb = {"cells": [title, stale], "metadata": {"pagelab": {"recorded": facts}}}
    out = normalize_notebooks.normalize(nb)
    assert [c["id"] for c in out["cells"]] == ["t", "provenance"]
    expected = (
        "**Outputs recorded** on kernel 6.1.0-56-amd64; profile full; machine Xeon; 2026-01-02."
    )
    assert _lines(out["cells"]) == [expected]
    del nb["metadata"]["pagelab"]
    assert normalize_notebooks.normalize(nb)["cells"] == [title]


def test_recording_runs_the_chapter_and_stores_this_machines_facts(tmp_path):
    """.ci/record_chapters.py executes a chapter in a fresh kernel and writes it with its
    outputs, the facts of this machine (kernel release, a profile, today's date) and the line."""
    title = {"cell_type": "markdown", "id": "t", "metadata": {}, "source": ["# T"]}
    cell = {"cell_type": "code", "id": "c", "metadata": {}, "outputs": [], "source": ["6 * 7"]}
    cell["execution_count"] = None
    nb = {"cells": [title, cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    (tmp_path / "in").mkdir()
    chapter = tmp_path / "in" / "01-t.ipynb"
    chapter.write_text(json.dumps(nb))
    record_chapters.record(chapter, tmp_path)
    done = json.loads((tmp_path / "01-t.ipynb").read_text())
    facts = done["metadata"]["pagelab"]["recorded"]
    assert facts["kernel"] == os.uname().release
    assert facts["profile"] in ("full", "software-only", "blocked") and facts["machine"]
    assert facts["date"] == datetime.datetime.now(datetime.UTC).date().isoformat()
    assert _lines(done["cells"]) == [normalize_notebooks.provenance_line(facts)]
    assert "".join(done["cells"][2]["outputs"][0]["data"]["text/plain"]) == "42"
