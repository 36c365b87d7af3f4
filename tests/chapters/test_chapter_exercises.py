"""Chapters with exercises: predictions ship empty, solutions are collapsible, stored outputs
carry no stderr, and every stored figure renders outside a live kernel (issue 10's rules)."""

import json
import re

import pytest

from helpers import ROOT

PREDICTION = re.compile(r"^(my_\w+\s*=.*(#.*)?\n?)+$")  # only assignments to my_* names


def _chapters():
    out = []
    for nb in sorted((ROOT / "notebooks").glob("*.ipynb")):
        cells = json.loads(nb.read_text())["cells"]
        if any(_is_prediction(c) for c in cells):
            out.append(pytest.param(cells, id=nb.name))
    return out


def _is_prediction(cell):
    return cell["cell_type"] == "code" and bool(PREDICTION.match("".join(cell["source"]).strip()))


CHAPTERS = _chapters()


def _outputs(cells):
    return [o for c in cells if c["cell_type"] == "code" for o in c.get("outputs", [])]


@pytest.mark.parametrize("cells", CHAPTERS)
def test_predictions_ship_empty_and_are_checked(cells):
    """A prediction cell has no stored output, and a later cell reads its variable."""
    for i, cell in enumerate(cells):
        if not _is_prediction(cell):
            continue
        assert not cell.get("outputs"), "".join(cell["source"])
        name = "".join(cell["source"]).split("=")[0].strip()
        later = "".join("".join(c["source"]) for c in cells[i + 1 :] if c["cell_type"] == "code")
        assert re.search(rf"\b{name}\b", later), f"nothing checks {name}"


@pytest.mark.parametrize("cells", CHAPTERS)
def test_solutions_are_collapsible(cells):
    """Hints and solutions sit in <details> blocks."""
    text = "".join("".join(c["source"]) for c in cells if c["cell_type"] == "markdown")
    assert "<details><summary>" in text and "</details>" in text


@pytest.mark.parametrize("cells", CHAPTERS)
def test_no_stderr_and_figures_render_anywhere(cells):
    """No stderr stream is stored, and every plotly figure is stored with HTML beside its JSON
    (nbconvert and code hosts ignore the plotly mimetype)."""
    outputs = _outputs(cells)
    assert not [o for o in outputs if o.get("name") == "stderr"]
    figures = [o for o in outputs if "application/vnd.plotly.v1+json" in o.get("data", {})]
    assert all("text/html" in o["data"] for o in figures)
