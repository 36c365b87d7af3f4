"""The shipped chapters carry no execution leftovers: `make notebooks` (.ci/normalize_notebooks.py)
strips nbclient's timing and the state of closed or unused widgets, and touches nothing else."""

import copy
import importlib.util
import sys

from helpers import ROOT, run

SCRIPT = ROOT / ".ci" / "normalize_notebooks.py"
spec = importlib.util.spec_from_file_location("normalize_notebooks", SCRIPT)
normalize_notebooks = importlib.util.module_from_spec(spec)
spec.loader.exec_module(normalize_notebooks)


def test_every_shipped_chapter_is_normalized():
    """Every notebook under notebooks/ is as `make notebooks` leaves it (--check changes nothing
    and names any notebook it would change)."""
    notebooks = sorted((ROOT / "notebooks").glob("*.ipynb"))
    assert notebooks
    p = run([sys.executable, SCRIPT, "--check", *notebooks])
    assert p.returncode == 0, p.stdout + p.stderr


def _model(name, **state):
    return {"model_name": name, "state": state}


def _view(model_id):
    view = {"model_id": model_id, "version_major": 2, "version_minor": 0}
    data = {"application/vnd.jupyter.widget-view+json": view, "text/plain": "x"}
    return {"output_type": "display_data", "metadata": {}, "data": data}


def test_normalize_strips_timing_and_closed_widgets_only():
    """Timing metadata and the models of a closed progress bar (layout hidden) and of an
    undisplayed widget go; a shown widget's models, every cell's source, outputs and other
    metadata stay."""
    timing = {"iopub.status.busy": "2026-01-01T00:00:00Z", "shell.execute_reply": "..."}
    state = {
        "bar": _model("HBoxModel", layout="IPY_MODEL_hiddenlayout", children=["IPY_MODEL_barp"]),
        "hiddenlayout": _model("LayoutModel", visibility="hidden"),
        "barp": _model("FloatProgressModel"),
        "box": _model("VBoxModel", layout="IPY_MODEL_boxlayout", children=["IPY_MODEL_s"]),
        "boxlayout": _model("LayoutModel", visibility=None),
        "s": _model("IntSliderModel"),
        "orphan": _model("ButtonModel"),
    }
    widgets = {"application/vnd.jupyter.widget-state+json": {"state": state}}
    nb = {
        "cells": [
            {
                "cell_type": "code",
                "source": "run()",
                "outputs": [_view("bar"), _view("box")],
                "metadata": {"execution": timing, "tags": ["keep"]},
            },
            {"cell_type": "markdown", "source": "# t", "metadata": {}},
        ],
        "metadata": {"widgets": widgets, "kernelspec": {"name": "python3"}},
    }
    before = copy.deepcopy(nb)
    out = normalize_notebooks.normalize(nb)
    assert nb == before  # the argument is left alone
    kept = out["metadata"]["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert sorted(kept) == ["box", "boxlayout", "s"]
    assert out["cells"][0]["metadata"] == {"tags": ["keep"]}
    assert [c["source"] for c in out["cells"]] == ["run()", "# t"]
    assert out["cells"][0]["outputs"] == before["cells"][0]["outputs"]
    assert out["metadata"]["kernelspec"] == {"name": "python3"}
    only_closed = copy.deepcopy(before)
    only_closed["cells"][0]["outputs"] = [_view("bar")]
    assert "widgets" not in normalize_notebooks.normalize(only_closed)["metadata"]
