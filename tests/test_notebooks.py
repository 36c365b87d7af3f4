"""Chapters: every notebook is executed by nbval (or excluded with a reason) and well formed."""

import importlib.util
import json
import re

from helpers import ROOT

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


def excluded():
    spec = importlib.util.spec_from_file_location("nbconf", ROOT / "notebooks" / "conftest.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod.EXCLUDED


def test_every_chapter_is_tested_or_excluded_with_a_reason():
    """nbval collects every chapter unless it is listed in notebooks/conftest.py with a reason."""
    skipped = excluded()
    assert NOTEBOOKS, "no chapters found"
    for name, reason in skipped.items():
        assert (ROOT / "notebooks" / name).exists(), f"excluded chapter {name} does not exist"
        assert reason.strip(), f"{name} is excluded without a reason"


def test_chapters_follow_the_house_shape():
    """NN-verb-phrase names; first cell a title; what you'll do/learn/need; 'On your own' close."""
    for nb in NOTEBOOKS:
        assert re.fullmatch(r"\d\d-[a-z0-9]+(-[a-z0-9]+)*\.ipynb", nb.name), nb.name
        cells = json.loads(nb.read_text())["cells"]
        first = "".join(cells[0]["source"])
        assert first.startswith("# "), f"{nb.name}: first cell is not a title"
        text = "\n".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
        for phrase in ("What you'll do", "What you'll learn", "What you need", "On your own"):
            assert phrase in text, f"{nb.name}: missing '{phrase}'"
        checked = [
            c
            for c in cells
            if c["cell_type"] == "code" and "".join(c["source"]).startswith("# NBVAL_CHECK_OUTPUT")
        ]
        assert checked, f"{nb.name}: no verdict cell is checked by nbval"
        for c in checked:
            assert c["outputs"], f"{nb.name}: a checked cell has no stored output to compare"


def test_chapters_use_only_the_public_api():
    """Chapters import pagelab's public API, never private modules or the cffi lib."""
    for nb in NOTEBOOKS:
        src = "\n".join(
            "".join(c["source"])
            for c in json.loads(nb.read_text())["cells"]
            if c["cell_type"] == "code"
        )
        assert not re.search(r"pagelab\._|from pagelab\.\w*_|_native|\blib\.", src), nb.name
